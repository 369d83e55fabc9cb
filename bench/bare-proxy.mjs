// A bare node:http reverse proxy: the floor any Node gateway starts from.
import { Agent, createServer, request } from 'node:http';

const target = Number(process.env.TARGET_PORT);
const agent = new Agent({ keepAlive: true, maxSockets: 256 });
const server = createServer((req, res) => {
  const upstream = request(
    { agent, host: '127.0.0.1', port: target, method: req.method, path: req.url, headers: req.headers },
    (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    },
  );
  upstream.on('error', () => res.writeHead(502).end());
  req.pipe(upstream);
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`));
process.on('SIGTERM', () => process.exit(0));

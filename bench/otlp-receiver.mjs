// A local OTLP/HTTP traces receiver for the benchmark, in its own process: accepts
// `POST /v1/traces` (OTLP/JSON or protobuf), counts requests and bytes, answers 200 as a collector
// does. `GET /stats` reports the counts.
import { createServer } from 'node:http';

let exports = 0;
let bytes = 0;
const server = createServer((req, res) => {
  let size = 0;
  req.on('data', (c) => (size += c.length));
  req.on('end', () => {
    if (req.method === 'POST' && (req.url ?? '').startsWith('/v1/traces')) {
      exports++;
      bytes += size;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"partialSuccess":{}}');
    } else if (req.method === 'GET' && req.url === '/stats') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ exports, bytes }));
    } else {
      res.writeHead(404).end();
    }
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`));
process.on('SIGTERM', () => process.exit(0));

// The model routes of the gateway alone on node:http, for the PDF memory rows: the full gateway's
// embedded catalog database leaves hundreds of MB of freed memory in the process, which a request
// reuses, so its peak over idle would say little. `UPSTREAM_PORT`: the mock provider. `POST /gc`
// runs a full garbage collection when started with --expose-gc.
import { createServer } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const { createModelRoutes } = await import(
  pathToFileURL(join(here, '..', 'packages', 'model-router', 'dist', 'index.js')).href
);
const routes = createModelRoutes({
  providers: [
    {
      slug: 'bench',
      provider: 'anthropic',
      apiKey: 'sk-bench',
      baseUrl: `http://127.0.0.1:${process.env.UPSTREAM_PORT}`,
    },
  ],
});
const server = createServer((req, res) => {
  const path = (req.url ?? '/').split('?')[0];
  // The bench collects garbage before it reads the idle memory (the process runs with --expose-gc).
  if (path === '/gc' && typeof globalThis.gc === 'function') {
    globalThis.gc();
    return void res.end();
  }
  const handler = path.startsWith('/v1/') ? routes.match(req.method, path.slice(3)) : undefined;
  if (handler) return void handler(req, res);
  res.writeHead(404).end();
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`));

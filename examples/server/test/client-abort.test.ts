import { once, EventEmitter } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { loadSigningKey } from '@gw/jwks';
import { createGateway } from '../src/app';
import { parseConfig } from '../src/config/load';
import { createLogger } from '../src/observability/logger';

// A client that gives up while the gateway waits for an upstream is a client abort (status 499
// in the request line), never an error-level "unhandled error".

const GATEWAY_KEY = 'gw-client-abort-key-01';
const servers: Server[] = [];
const lines: Record<string, unknown>[] = [];
const logged = new EventEmitter();
const waiting = new EventEmitter();
const upstreamClosed = new EventEmitter();
let base: string;

async function serve(listener: Parameters<typeof createServer>[1]): Promise<string> {
  const server = createServer(listener!);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Never answers: tells the test it has the request, and when its connection closes. */
const silent = (req: IncomingMessage) => {
  req.resume();
  req.once('end', () => waiting.emit('request'));
  req.socket.once('close', () => upstreamClosed.emit('close'));
};

beforeAll(async () => {
  const anthropic = await serve(silent);
  const mcp = await serve(silent);
  const config = parseConfig(
    {
      auth: { apiKeys: [{ key: GATEWAY_KEY, user: { user_id: 'u1' } }] },
      mcpServers: [{ slug: 'tools', url: `${mcp}/mcp`, user_identity_forwarding: { method: 'claims_header' } }],
      providers: [{ slug: 'claude', provider: 'anthropic', apiKey: 'sk-ant-abort', baseUrl: anthropic }],
    },
    {},
  );
  const keys = loadSigningKey({ production: false, jwtHeaderInUse: false });
  const gateway = createGateway({
    config,
    signingKey: keys.key,
    jwks: keys.jwks,
    logger: createLogger(
      'info',
      new Writable({
        write: (chunk: Buffer, _e, done) => {
          const line = JSON.parse(String(chunk)) as Record<string, unknown>;
          lines.push(line);
          logged.emit('line', line);
          done();
        },
      }),
    ),
  });
  base = await serve(gateway.listener);
});

afterAll(() => {
  for (const server of servers) {
    server.closeAllConnections();
    server.close();
  }
});

it.each([
  [
    '/v1/chat/completions',
    '{"model":"@claude/claude-sonnet-4-5","max_tokens":5,"messages":[{"role":"user","content":"x"}]}',
  ],
  ['/v1/messages', '{"model":"@claude/claude-sonnet-4-5","max_tokens":5,"messages":[{"role":"user","content":"x"}]}'],
  ['/mcp/tools', '{"jsonrpc":"2.0","id":1,"method":"ping"}'],
])('logs a client that leaves %s while the gateway waits as a 499, with no error line', async (path, body) => {
  const before = lines.length;
  const controller = new AbortController();
  const requested = once(waiting, 'request');
  const answer = fetch(`${base}${path}`, {
    method: 'POST',
    headers: {
      'x-gateway-api-key': GATEWAY_KEY,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body,
    signal: controller.signal,
  }).catch((error: unknown) => error);
  await requested;
  const closed = once(upstreamClosed, 'close');
  const requestLine = (async () => {
    for (;;) {
      const [line] = (await once(logged, 'line')) as [Record<string, unknown>];
      if (line.msg === 'request' && line.path === path) return line;
    }
  })();
  controller.abort();
  await answer;
  await closed;
  expect(await requestLine).toMatchObject({ status: 499, completed: false });
  // A later request's line: everything the aborted one logged is written by then.
  const healthLine = (async () => {
    for (;;) {
      const [line] = (await once(logged, 'line')) as [Record<string, unknown>];
      if (line.msg === 'request' && line.path === '/healthz') return line;
    }
  })();
  await (await fetch(`${base}/healthz`)).text();
  await healthLine;
  const errors = lines.slice(before).filter((line) => Number(line.level) >= 50 || line.msg === 'unhandled error');
  expect(errors).toEqual([]);
});

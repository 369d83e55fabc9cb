import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { DEFAULT_MAX_JSON_DEPTH, createModelRoutes, modelRouter } from '../src';
import { GATEWAY_KEY, mockAnthropic } from './support';

// JSON nested thousands deep in fields the router forwards (tool parameters, native message
// bodies) is the client's fault: it is refused as 400 json_too_deep right after parsing, before
// any conversion or serialisation could overflow the stack, and the server keeps answering.

let mock: Awaited<ReturnType<typeof mockAnthropic>>;
const servers: Server[] = [];
let direct: string;
let viaExpress: string;

async function serve(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  mock = await mockAnthropic();
  const providers = [{ slug: 'p', provider: 'anthropic' as const, apiKey: 'sk-ant-json-depth', baseUrl: mock.url }];
  const routes = createModelRoutes({ providers });
  direct = await serve(
    createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0] as string;
      if (path === '/healthz') return void res.writeHead(200).end('ok');
      const handler = path.startsWith('/v1/') ? routes.match(req.method, path.slice(3)) : undefined;
      if (handler) return void handler(req, res);
      res.writeHead(404).end();
    }),
  );
  // A host that parses JSON itself (express.json) hands the router an already parsed body.
  const app = express();
  app.use(express.json({ limit: '10mb' }));
  app.use('/v1', modelRouter({ providers }));
  viaExpress = await serve(createServer(app));
});

afterAll(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  await mock.close();
});

/** `{"a":{"a":…{}…}}` nested `depth` objects deep (built as text: no recursion here either). */
const deepObject = (depth: number) => `${'{"a":'.repeat(depth)}{}${'}'.repeat(depth)}`;
const deepArray = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

const BODIES: [string, string, (deep: string) => string][] = [
  [
    'chat completion tool parameters',
    '/v1/chat/completions',
    (deep) =>
      `{"model":"@p/claude-sonnet-4-5","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"t","parameters":${deep}}}]}`,
  ],
  [
    'native messages metadata',
    '/v1/messages',
    (deep) =>
      `{"model":"claude-sonnet-4-5","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"t","input_schema":${deep}}]}`,
  ],
  [
    'native count_tokens',
    '/v1/messages/count_tokens',
    (deep) => `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":[${deep}]}]}`,
  ],
];

async function post(base: string, path: string, body: string) {
  const response = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-provider': '@p',
      'x-gateway-provider': '@p',
      'x-gateway-api-key': GATEWAY_KEY,
    },
    body,
  });
  const json = (await response.json()) as { code?: string; error?: { code?: string; message?: string } };
  // OpenAI shape: error.code; Anthropic shape: code beside error.
  return { status: response.status, code: json.error?.code ?? json.code, message: json.error?.message };
}

describe('JSON nesting depth', () => {
  it.each(BODIES)(
    '%s 10,000 deep is 400 json_too_deep, and the server answers meanwhile',
    async (_name, path, body) => {
      for (const base of [direct, viaExpress]) {
        for (const deep of [deepObject(10_000), deepArray(10_000)]) {
          const before = mock.requests.length;
          const [answer, health] = await Promise.all([
            post(base, path, body(deep)),
            fetch(`${direct}/healthz`).then((r) => r.status),
          ]);
          expect([base === direct ? 'direct' : 'express', path, answer.status, answer.code]).toEqual([
            base === direct ? 'direct' : 'express',
            path,
            400,
            'json_too_deep',
          ]);
          expect(answer.message).toContain(String(DEFAULT_MAX_JSON_DEPTH));
          expect(health).toBe(200);
          expect(mock.requests.length).toBe(before);
        }
      }
    },
  );

  it('accepts a body nested up to the limit, and refuses one level more', async () => {
    // The tool parameters sit 5 levels below the top (body, tools, tool, function, parameters).
    const [, path, body] = BODIES[0] as (typeof BODIES)[number];
    const fits = await post(direct, path, body(deepObject(DEFAULT_MAX_JSON_DEPTH - 5)));
    expect(fits.status).toBe(200);
    const over = await post(direct, path, body(deepObject(DEFAULT_MAX_JSON_DEPTH - 4)));
    expect([over.status, over.code]).toEqual([400, 'json_too_deep']);
  });

  it('maxJsonDepth is validated when the routes are built', () => {
    expect(() => createModelRoutes({ maxJsonDepth: 0 })).toThrow(/maxJsonDepth must be a whole number/);
    expect(() => createModelRoutes({ maxJsonDepth: 1.5 })).toThrow(TypeError);
  });
});

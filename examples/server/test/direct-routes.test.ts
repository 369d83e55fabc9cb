import { once, EventEmitter } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import OpenAI from 'openai';
import { loadSigningKey } from '@gw/jwks';
import { createGateway, type Gateway } from '../src/app';
import { directRouteGroups } from '../src/http/direct-listener';
import type { RouteGroup, RouteTable } from '../src/http/route-table';
import { parseConfig } from '../src/config/load';
import { createLogger } from '../src/observability/logger';

// The gateway's routes are declared once, in its route table; the listener (which serves the
// table's route groups, /v1 and /mcp, without the Express router) and the Express app are both
// derived from it. These tests send the same requests to the listener and to the Express app built
// from the same config, for a sample of requests and for every entry of the table, and require the
// same answers, the same log lines and the same metrics.

jest.setTimeout(30_000);

const GATEWAY_KEY = 'gw-direct-routes-key-01';
const PROVIDER_KEY = 'sk-ant-direct-routes-02';
const AWS_SECRET = 'aws/direct+routes/secret-03';
let bedrockUrl: string;
const received: { url: string; headers: IncomingMessage['headers']; body: string }[] = [];
const servers: Server[] = [];
const logs = { listener: [] as string[], app: [] as string[] };
const logged = new EventEmitter();
let listenerBase: string;
let gateway: Gateway;
let appBase: string;

const MESSAGE = {
  id: 'msg_direct',
  type: 'message',
  role: 'assistant',
  model: 'claude-sonnet-4-5',
  content: [{ type: 'text', text: 'hello directly' }],
  stop_reason: 'end_turn',
  stop_sequence: null,
  usage: { input_tokens: 3, output_tokens: 2, cache_creation_input_tokens: 0, cache_read_input_tokens: 1 },
};
const STREAM = [
  ['message_start', { type: 'message_start', message: { ...MESSAGE, content: [], stop_reason: null } }],
  ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
  ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'hel' } }],
  ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'lo' } }],
  ['content_block_stop', { type: 'content_block_stop', index: 0 }],
  ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 2 } }],
  ['message_stop', { type: 'message_stop' }],
]
  .map(([event, data]) => `event: ${event as string}\ndata: ${JSON.stringify(data)}\n\n`)
  .join('');

async function serve(listener: Parameters<typeof createServer>[1]): Promise<string> {
  const server = createServer(listener!);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  const anthropic = await serve((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk));
    req.on('end', () => {
      received.push({ url: req.url ?? '', headers: req.headers, body });
      if (body.includes('please-rate-limit')) {
        res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '7' });
        res.end('{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}');
      } else if (req.url?.startsWith('/v1/messages/count_tokens')) {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"input_tokens":12}');
      } else if (body.includes('"stream":true')) {
        res.writeHead(200, { 'content-type': 'text/event-stream' }).end(STREAM);
      } else {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(MESSAGE));
      }
    });
  });
  const mcp = await serve((req, res) => {
    req.resume();
    req.on('end', () => {
      const claims = req.headers['x-user-claims'];
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { url: req.url, claims } }));
    });
  });
  const bedrock = await serve((req, res) => {
    req.resume();
    req.on('end', () => {
      const signed = String(req.headers.authorization ?? '').startsWith('AWS4-HMAC-SHA256 ');
      res.writeHead(signed ? 200 : 403, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ retrievalResults: [{ content: { text: `at ${req.url}` } }] }));
    });
  });
  bedrockUrl = bedrock;
  const config = parseConfig(
    {
      auth: { apiKeys: [{ key: GATEWAY_KEY, user: { user_id: 'u1' } }] },
      mcpServers: [{ slug: 'tools', url: `${mcp}/mcp`, user_identity_forwarding: { method: 'claims_header' } }],
      providers: [
        { slug: 'claude', provider: 'anthropic', apiKey: PROVIDER_KEY, baseUrl: anthropic },
        {
          slug: 'kb',
          provider: 'bedrock',
          accessKeyId: 'AKIADIRECTROUTES',
          secretAccessKey: AWS_SECRET,
          region: 'us-east-1',
          allowedHosts: [bedrock],
        },
      ],
      prompts: [
        {
          id: 'greet',
          provider: '@claude',
          model: 'claude-sonnet-4-5',
          max_tokens: 10,
          messages: [{ role: 'user', content: 'Greet {{name}}' }],
        },
      ],
    },
    {},
  );
  const keys = loadSigningKey({ production: false, jwtHeaderInUse: false });
  const build = (sink: string[]) =>
    createGateway({
      config,
      signingKey: keys.key,
      jwks: keys.jwks,
      logger: createLogger(
        'info',
        new Writable({
          write: (chunk: Buffer, _e, done) => {
            sink.push(String(chunk));
            logged.emit('line', String(chunk));
            done();
          },
        }),
      ),
    });
  gateway = build(logs.listener);
  listenerBase = await serve(gateway.listener);
  appBase = await serve(build(logs.app).app);
});

afterAll(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

interface Call {
  path: string;
  method?: string;
  body?: string | Buffer;
  headers?: Record<string, string>;
}

const auth = { 'x-gateway-api-key': GATEWAY_KEY, 'content-type': 'application/json' };
const chat = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    model: '@claude/claude-sonnet-4-5',
    max_tokens: 5,
    messages: [{ role: 'user', content: 'hi' }],
    ...extra,
  });

/** Bedrock calls name the AWS integration and, but for the one that tests its absence, the mock host. */
function bedrockHeaders(name: string, headers: Record<string, string> | undefined) {
  if (!name.includes('Bedrock')) return headers;
  const bedrock: Record<string, string> = { ...auth, 'x-gateway-provider': '@kb' };
  if (!name.includes('without a custom host')) bedrock['x-gateway-custom-host'] = bedrockUrl;
  if (name.includes('without credentials')) delete bedrock['x-gateway-api-key'];
  return { ...bedrock, ...headers };
}

async function call(base: string, c: Call) {
  const response = await fetch(`${base}${c.path}`, {
    method: c.method ?? 'POST',
    headers: c.headers ?? auth,
    body: c.body,
  });
  const text = await response.text();
  return {
    status: response.status,
    contentType: response.headers.get('content-type'),
    retryAfter: response.headers.get('retry-after'),
    challenge: response.headers.get('www-authenticate'),
    hasRequestId: /^[0-9a-f-]{36}$/.test(response.headers.get('x-gateway-request-id') ?? ''),
    // Chat completions carry the time they were made.
    body: text.replace(/"created":\d+/g, '"created":0'),
  };
}

const CALLS: [string, Call, number][] = [
  ['a chat completion', { path: '/v1/chat/completions', body: chat() }, 200],
  ['a streamed chat completion', { path: '/v1/chat/completions', body: chat({ stream: true }) }, 200],
  ['native messages with the query kept', { path: '/v1/messages?beta=true', body: chat() }, 200],
  ['count_tokens', { path: '/v1/messages/count_tokens', body: chat() }, 200],
  ['the model list', { path: '/v1/models', method: 'GET', headers: auth }, 200],
  ['a prompt completion', { path: '/v1/prompts/greet/completions', body: '{"variables":{"name":"Ada"}}' }, 200],
  ['no credentials', { path: '/v1/chat/completions', body: chat(), headers: {} }, 401],
  [
    'an unknown key on messages',
    { path: '/v1/messages', body: chat(), headers: { ...auth, 'x-gateway-api-key': 'gw-not-a-known-key' } },
    401,
  ],
  ['malformed JSON on chat', { path: '/v1/chat/completions', body: '{"model":' }, 400],
  ['malformed JSON on messages', { path: '/v1/messages', body: '{"model":' }, 400],
  ['an unknown provider', { path: '/v1/chat/completions', body: chat({ model: '@nobody/claude-sonnet-4-5' }) }, 400],
  ['a missing max_tokens', { path: '/v1/messages', body: '{"model":"@claude/claude-sonnet-4-5","messages":[]}' }, 400],
  ['an unknown prompt', { path: '/v1/prompts/nope/completions', body: '{}' }, 404],
  ['a missing prompt variable', { path: '/v1/prompts/greet/completions', body: '{}' }, 400],
  [
    'an upstream 429',
    { path: '/v1/chat/completions', body: chat({ messages: [{ role: 'user', content: 'please-rate-limit' }] }) },
    429,
  ],
  ['an MCP call', { path: '/mcp/tools/sub?x=1', body: '{"jsonrpc":"2.0","id":1,"method":"ping"}' }, 200],
  ['an MCP call without credentials', { path: '/mcp/tools', body: '{}', headers: {} }, 401],
  [
    'an MCP call with a spoofed identity header',
    { path: '/mcp/tools', body: '{}', headers: { ...auth, 'x-user-claims': '{"user_id":"admin"}' } },
    200,
  ],
  ['an unknown MCP server', { path: '/mcp/nowhere', body: '{}' }, 404],
  ['a signed Bedrock retrieve', { path: '/v1/knowledgebases/KB1/retrieve', body: '{}', headers: {} }, 200],
  ['a Bedrock call without a custom host', { path: '/v1/knowledgebases/KB1/retrieve', body: '{}', headers: {} }, 400],
  [
    'a Bedrock call to a host not allowed',
    {
      path: '/v1/knowledgebases/KB1/retrieve',
      body: '{}',
      headers: { 'x-gateway-custom-host': 'https://example.com' },
    },
    400,
  ],
  ['a Bedrock call without credentials', { path: '/v1/knowledgebases/KB1/retrieve', body: '{}', headers: {} }, 401],
  ['a /v1 path no route has', { path: '/v1/nothing/here', body: '{}' }, 404],
  ['a method no model route has', { path: '/v1/chat/completions', method: 'GET', headers: auth }, 404],
  // Paths the listener leaves to the Express app, which matches without regard to case or a trailing slash.
  ['the key set below /mcp', { path: '/mcp/.well-known/jwks.json', method: 'GET', headers: {} }, 200],
  ['the key set below /mcp in upper case', { path: '/MCP/.WELL-KNOWN/JWKS.JSON', method: 'GET', headers: {} }, 200],
  [
    'the key set below /mcp, part in upper case',
    { path: '/mcp/.Well-Known/jwks.json', method: 'GET', headers: {} },
    200,
  ],
  [
    'the key set below /mcp with a trailing slash',
    { path: '/mcp/.well-known/jwks.json/', method: 'GET', headers: {} },
    200,
  ],
  ['a POST to the key set below /mcp', { path: '/mcp/.well-known/jwks.json', body: '{}' }, 404],
  ['another well-known path below /mcp', { path: '/mcp/.well-known/other', body: '{}' }, 404],
  ['/v1 alone', { path: '/v1', body: '{}' }, 404],
  ['/v1/ alone', { path: '/v1/', body: '{}' }, 404],
  ['/v1 with a query holding a slash', { path: '/v1?next=/models', method: 'GET', headers: auth }, 404],
  ['/V1 in upper case', { path: '/V1/models', method: 'GET', headers: auth }, 200],
  ['/mcp alone', { path: '/mcp', body: '{}' }, 404],
  ['a path below no route group', { path: '/v2/models', method: 'GET', headers: auth }, 404],
];

describe('the listener and the Express app answer /v1 and MCP calls alike', () => {
  it.each(CALLS)('%s', async (name, given, status) => {
    const c = { ...given, headers: bedrockHeaders(name, given.headers) };
    const [direct, express] = [await call(listenerBase, c), await call(appBase, c)];
    expect(direct.status).toBe(status);
    expect(direct.hasRequestId).toBe(true);
    expect(direct).toEqual(express);
  });

  it('forwards MCP calls below the server URL with the caller claims, not the spoofed ones', async () => {
    const answer = await call(listenerBase, {
      path: '/mcp/tools/sub?x=1',
      body: '{}',
      headers: { ...auth, 'x-user-claims': '{"user_id":"admin"}' },
    });
    const result = JSON.parse(answer.body).result as { url: string; claims: string };
    expect(result.url).toBe('/mcp/sub?x=1');
    expect(JSON.parse(result.claims)).toMatchObject({ user_id: 'u1' });
  });

  it('keeps the query string and sends the catalog key, never the gateway key', async () => {
    received.length = 0;
    await call(listenerBase, { path: '/v1/messages?beta=true', body: chat() });
    expect(received[0]?.url).toBe('/v1/messages?beta=true');
    expect(received[0]?.headers['x-api-key']).toBe(PROVIDER_KEY);
    expect(JSON.stringify(received[0]?.headers)).not.toContain(GATEWAY_KEY);
    expect(JSON.parse(received[0]?.body ?? '{}').model).toBe('claude-sonnet-4-5');
  });

  it('serves the openai SDK, streaming and not', async () => {
    const client = new OpenAI({ apiKey: GATEWAY_KEY, baseURL: `${listenerBase}/v1`, maxRetries: 0 });
    const params = {
      model: '@claude/claude-sonnet-4-5',
      max_tokens: 5,
      messages: [{ role: 'user' as const, content: 'hi' }],
    };
    expect((await client.chat.completions.create(params)).choices[0]?.message.content).toBe('hello directly');
    let text = '';
    for await (const chunk of await client.chat.completions.create({ ...params, stream: true }))
      text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('hello');
  });

  it('inflates gzip bodies and refuses unknown content encodings with 415', async () => {
    const gzip = await call(listenerBase, {
      path: '/v1/chat/completions',
      body: gzipSync(chat()),
      headers: { ...auth, 'content-encoding': 'gzip' },
    });
    expect(gzip.status).toBe(200);
    const zstd = await call(listenerBase, {
      path: '/v1/chat/completions',
      body: chat(),
      headers: { ...auth, 'content-encoding': 'zstd' },
    });
    expect(zstd.status).toBe(415);
    expect(JSON.parse(zstd.body).error.code).toBe('unsupported_content_encoding');
  });

  it('writes one log line per request with the target and upstream status, and counts it in metrics', async () => {
    const before = logs.listener.length;
    const metric = async () =>
      Number(
        /gateway_requests_total\{route="chat",status="200"\} (\d+)/.exec(
          await (await fetch(`${listenerBase}/metrics`)).text(),
        )?.[1] ?? 0,
      );
    const counted = await metric();
    const requestLogged = (async () => {
      for (;;) {
        const [text] = (await once(logged, 'line')) as [string];
        if (text.includes('"path":"/v1/chat/completions"') && text.includes('"status":200')) return text;
      }
    })();
    await call(listenerBase, { path: '/v1/chat/completions?x=1', body: chat() });
    const line = JSON.parse(await requestLogged) as Record<string, unknown>;
    expect(logs.listener.length).toBeGreaterThan(before);
    expect(line).toMatchObject({ route: 'chat', status: 200, target: 'claude', upstreamStatus: 200, completed: true });
    expect(await metric()).toBe(counted + 1);
    expect(logs.listener.join('')).not.toContain(PROVIDER_KEY);
    expect(logs.listener.join('')).not.toContain(GATEWAY_KEY);
    expect(logs.listener.join('')).not.toContain(AWS_SECRET);
  });
});

/** A request path for an Express path of the table: its `:name` parameters become `tools`. */
const samplePath = (path: string) => path.replace(/:[A-Za-z]+/g, 'tools');

/** Requests for a route group: without credentials, then with them to a path no handler answers and to each model route. */
function groupCalls(group: RouteGroup): Call[] {
  return [
    { path: `${group.prefix}/table-probe`, body: '{}', headers: {} },
    { path: `${group.prefix}/table-probe?q=1`, body: '{}' },
    { path: `${group.prefix}/models`, method: 'GET', headers: auth },
    { path: `${group.prefix}/messages`, body: '{"model":' },
  ];
}

describe('the listener and the Express app are derived from one route table', () => {
  it('declares each route group once, with the /mcp key set left to the Express app', () => {
    const groups = directRouteGroups(gateway.routes);
    expect([...groups.keys()]).toEqual(['/mcp', '/v1']);
    expect(groups.get('/mcp')?.leftToApp).toEqual(['/mcp/.well-known/jwks.json']);
    expect(groups.get('/v1')?.leftToApp).toEqual([]);
  });

  it('answers every entry of the table alike through the listener and the Express app', async () => {
    const calls: Call[] = gateway.routes.flatMap((entry) =>
      entry.kind === 'group'
        ? groupCalls(entry)
        : entry.kind === 'gate'
          ? [{ path: `${entry.prefix}/v1/gated`, method: 'GET', headers: {} }]
          : entry.paths.map((path) => ({ path: samplePath(path), method: 'GET', headers: {} })),
    );
    expect(calls.length).toBeGreaterThan(8);
    for (const c of calls) {
      const [direct, express] = [await call(listenerBase, c), await call(appBase, c)];
      // Each server counts its own requests.
      if (c.path === '/metrics') {
        expect({ path: c.path, status: direct.status }).toEqual({ path: c.path, status: 200 });
        expect(direct.contentType).toBe(express.contentType);
        continue;
      }
      expect({ path: c.path, ...direct }).toEqual({ path: c.path, ...express });
    }
  });

  it('refuses a route group prefix that is not one segment, or one declared twice', () => {
    const group = gateway.routes.find((entry): entry is RouteGroup => entry.kind === 'group')!;
    const table = (...prefixes: string[]): RouteTable => prefixes.map((prefix) => ({ ...group, prefix }));
    expect(() => directRouteGroups(table('/v1/messages'))).toThrow(/one path segment/);
    expect(() => directRouteGroups(table('v1'))).toThrow(/one path segment/);
    expect(() => directRouteGroups(table('/v1', '/v1'))).toThrow(/declared twice/);
  });

  it('leaves a whole route group to the Express app when an Express-only route claims its prefix', () => {
    const group = gateway.routes.find((entry): entry is RouteGroup => entry.kind === 'group')!;
    const claim = { kind: 'app', method: 'ALL', paths: ['/V1'], handler: () => undefined } as const;
    const groups = directRouteGroups([claim, { ...group, prefix: '/v1' }]);
    expect(groups.get('/v1')?.leftToApp).toEqual(['/v1']);
  });
});

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import fc from 'fast-check';
import { loadSigningKey } from '@gw/jwks';
import { createGateway } from '../src/app';
import { parseConfig } from '../src/config/load';
import { createLogger } from '../src/observability/logger';
import { startGateway, type RunningGateway } from './support';

// Every string a client sends that selects something (a content coding, a content type, a
// provider, a model, a config key, a prompt, a template variable, an MCP server, an AWS host) is
// looked up without ever reaching Object.prototype. Names of its properties, in every such place,
// on both entry points: each answer is a 4xx with a code, /healthz answers throughout, and nothing
// is left rejected or thrown.

jest.setTimeout(120_000);

const KEY = 'gw-prototype-names-key-01';
const PROTOTYPE_NAMES = [
  ...new Set([
    ...Object.getOwnPropertyNames(Object.prototype),
    '__proto__',
    'constructor.prototype',
    'prototype',
    '__proto__.polluted',
  ]),
];

const servers: Server[] = [];
let listenerBase: string;
let appBase: string;
const escaped: unknown[] = [];
const record = (error: unknown) => escaped.push(error);

async function serve(listener: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const server = createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  process.on('unhandledRejection', record);
  process.on('uncaughtException', record);
  const upstream = await serve((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  const config = parseConfig(
    {
      auth: { apiKeys: [{ key: KEY, user: { user_id: 'u1' } }] },
      mcpServers: [{ slug: 'tools', url: `${upstream}/mcp`, user_identity_forwarding: { method: 'claims_header' } }],
      providers: [
        {
          slug: 'limited',
          provider: 'anthropic',
          apiKey: 'sk-ant-prototype-names',
          baseUrl: upstream,
          models: { mode: 'custom', models: ['claude-sonnet-4-5'] },
        },
        {
          slug: 'kb',
          provider: 'bedrock',
          accessKeyId: 'AKIAPROTOTYPE',
          secretAccessKey: 'prototype/names/secret',
          region: 'us-east-1',
          allowedHosts: [upstream],
        },
      ],
      // One template per name, whose only placeholder is that name.
      prompts: PROTOTYPE_NAMES.map((name) => ({
        id: `t-${name}`,
        provider: '@limited',
        model: 'claude-sonnet-4-5',
        max_tokens: 5,
        messages: [{ role: 'user', content: `{{${name}}}` }],
      })),
    },
    {},
  );
  const keys = loadSigningKey({ production: false, jwtHeaderInUse: false });
  const build = () =>
    createGateway({
      config,
      signingKey: keys.key,
      jwks: keys.jwks,
      logger: createLogger('info', new Writable({ write: (_c, _e, done) => done() })),
    });
  listenerBase = await serve(build().listener);
  appBase = await serve(build().app);
});

afterAll(async () => {
  process.off('unhandledRejection', record);
  process.off('uncaughtException', record);
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

interface Probe {
  path: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
}

const json = { 'x-gateway-api-key': KEY, 'content-type': 'application/json' };
const chat = (model: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ model, max_tokens: 5, messages: [{ role: 'user', content: 'hi' }], ...extra });

/** Each place a client's string selects something, with the name put there. */
const PLACES: [string, (name: string) => Probe][] = [
  [
    'content-encoding',
    (n) => ({ path: '/v1/chat/completions', headers: { ...json, 'content-encoding': n }, body: '{}' }),
  ],
  ['content-type', (n) => ({ path: '/v1/messages', headers: { ...json, 'content-type': n }, body: '{}' })],
  [
    'x-gateway-provider',
    (n) => ({ path: '/v1/chat/completions', headers: { ...json, 'x-gateway-provider': n }, body: chat('m') }),
  ],
  [
    'x-portkey-provider',
    (n) => ({ path: '/v1/messages', headers: { ...json, 'x-portkey-provider': n }, body: chat('m') }),
  ],
  [
    'config provider',
    (n) => ({
      path: '/v1/chat/completions',
      headers: { ...json, 'x-gateway-config': JSON.stringify({ provider: n }) },
      body: chat('m'),
    }),
  ],
  [
    'config key',
    (n) => ({
      path: '/v1/chat/completions',
      headers: { ...json, 'x-gateway-config': JSON.stringify({ [n]: { attempts: 1 } }) },
      body: chat('m'),
    }),
  ],
  [
    'config retry key',
    (n) => ({
      path: '/v1/messages',
      headers: { ...json, 'x-gateway-config': JSON.stringify({ retry: { [n]: 1 } }) },
      body: chat('@limited/claude-sonnet-4-5'),
    }),
  ],
  ['model slug', (n) => ({ path: '/v1/chat/completions', body: chat(`@${n}/claude-sonnet-4-5`) })],
  ['model id', (n) => ({ path: '/v1/messages', body: chat(`@limited/${n}`) })],
  ['model without slug', (n) => ({ path: '/v1/messages/count_tokens', body: chat(n) })],
  ['models provider', (n) => ({ path: '/v1/models', method: 'GET', headers: { ...json, 'x-gateway-provider': n } })],
  ['prompt id', (n) => ({ path: `/v1/prompts/${encodeURIComponent(n)}/completions`, body: '{"variables":{}}' })],
  [
    'template variable',
    (n) => ({ path: `/v1/prompts/${encodeURIComponent(`t-${n}`)}/completions`, body: '{"variables":{}}' }),
  ],
  ['mcp slug', (n) => ({ path: `/mcp/${encodeURIComponent(n)}`, body: '{"jsonrpc":"2.0","id":1,"method":"ping"}' })],
  [
    'aws provider',
    (n) => ({ path: '/v1/knowledgebases/KB1/retrieve', headers: { ...json, 'x-gateway-provider': n }, body: '{}' }),
  ],
  [
    'aws custom host',
    (n) => ({
      path: '/v1/knowledgebases/KB1/retrieve',
      headers: { ...json, 'x-gateway-provider': '@kb', 'x-gateway-custom-host': n },
      body: '{}',
    }),
  ],
  ['header name', (n) => ({ path: '/v1/chat/completions', headers: { ...json, [n]: 'x' }, body: chat('@nope/x') })],
];

async function send(base: string, probe: Probe) {
  const response = await fetch(`${base}${probe.path}`, {
    method: probe.method ?? 'POST',
    headers: probe.headers ?? json,
    body: probe.body,
  });
  const text = await response.text();
  let code: unknown;
  try {
    const parsed = JSON.parse(text) as { code?: unknown; error?: { code?: unknown } };
    code = parsed.error?.code ?? parsed.code;
  } catch {
    code = undefined;
  }
  return { status: response.status, code };
}

it('answers every prototype property name, in every place that selects something, with a 4xx and a code', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(...PROTOTYPE_NAMES),
      fc.constantFrom(...PLACES),
      fc.constantFrom('listener', 'app'),
      async (name, [place, probe], via) => {
        const base = via === 'listener' ? listenerBase : appBase;
        const [answer, health] = await Promise.all([send(base, probe(name)), fetch(`${base}/healthz`)]);
        expect({ name, place, via, health: health.status }).toEqual({ name, place, via, health: 200 });
        expect({
          name,
          place,
          via,
          status: answer.status >= 400 && answer.status < 500,
          code: typeof answer.code,
        }).toEqual({ name, place, via, status: true, code: 'string' });
        expect(escaped).toEqual([]);
      },
    ),
    // Every pair at least once on average, with both entry points.
    { numRuns: PROTOTYPE_NAMES.length * PLACES.length * 2 },
  );
  expect(({} as Record<string, unknown>).polluted).toBeUndefined();
});

describe('the gateway process', () => {
  let gateway: RunningGateway;
  beforeAll(async () => {
    gateway = await startGateway({});
  });
  afterAll(async () => {
    await gateway.stop();
  });

  it('keeps serving after content codings named like built-in properties', async () => {
    for (const coding of ['constructor', '__proto__', 'toString', 'valueOf', 'hasOwnProperty']) {
      const answer = await fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: {
          'x-gateway-api-key': 'gw-demo-key-not-a-secret',
          'content-type': 'application/json',
          'content-encoding': coding,
        },
        body: '{}',
      });
      expect(answer.status).toBe(415);
      expect(((await answer.json()) as { error: { code: string } }).error.code).toBe('unsupported_content_encoding');
    }
    expect((await fetch(`${gateway.url}/healthz`)).status).toBe(200);
    expect(gateway.child.exitCode).toBeNull();
  });
});

import { once } from 'node:events';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import OpenAI from 'openai';
import { loadSigningKey } from '@gw/jwks';
import { providerUserId } from '@gw/model-router';
import { createGateway } from '../src/app';
import { parseConfig } from '../src/config/load';
import { embeddedDefault } from '../src/demo/embedded-default';
import { createLogger } from '../src/observability/logger';

// What a code review of the request path found, each shown against the gateway's two entry
// points: the node:http listener the server runs, and the Express app built from the same config.

jest.setTimeout(30_000);

const KEY_BOB = 'gw-safety-key-bob-0001';
const KEY_ALICE = 'gw-safety-key-alice-0002';
const PROVIDER_KEY = 'sk-ant-safety-provider-0003';
const AWS_SECRET = 'aws/safety+secret/0004';
const servers: Server[] = [];

async function serve(listener: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const server = createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const MESSAGE = {
  id: 'msg_safety',
  type: 'message',
  role: 'assistant',
  model: 'claude-sonnet-4-5',
  content: [{ type: 'text', text: 'safe' }],
  stop_reason: 'end_turn',
  stop_sequence: null,
  usage: { input_tokens: 3, output_tokens: 2 },
};
const frame = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

/** What the mock provider did for the last request. */
const provider = { bodies: [] as Record<string, unknown>[], streamedBytes: 0, streamClosed: false };
const mcpSeen: IncomingMessage['headers'][] = [];
const bedrockSeen: string[] = [];
let releaseQuietStream: () => void = () => undefined;

let listenerBase: string;
let gatewayListener: (req: IncomingMessage, res: ServerResponse) => void;
let appBase: string;
let trustingBase: string;
let bedrockUrl: string;

beforeAll(async () => {
  const anthropic = await serve((req, res) => {
    if (req.method === 'GET' && req.url?.startsWith('/v1/models')) {
      // The provider's own model list, as Anthropic answers it.
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ data: [], has_more: false, first_id: null, last_id: null }));
      return;
    }
    let text = '';
    req.on('data', (c: Buffer) => (text += c));
    req.on('end', () => {
      const body = JSON.parse(text) as Record<string, unknown>;
      provider.bodies.push(body);
      const marker = JSON.stringify(body.messages);
      if (marker.includes('endless-stream')) {
        // A fast provider: writes as long as the gateway reads, for up to 100 MB.
        provider.streamedBytes = 0;
        provider.streamClosed = false;
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(frame('message_start', { type: 'message_start', message: { ...MESSAGE, content: [] } }));
        res.write(
          frame('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text' } }),
        );
        const delta = frame('content_block_delta', {
          type: 'content_block_delta',
          index: 0,
          delta: { type: 'text_delta', text: 'x'.repeat(8000) },
        });
        const pump = () => {
          while (provider.streamedBytes < 100 * 1024 * 1024) {
            provider.streamedBytes += delta.length;
            if (!res.write(delta)) return void res.once('drain', pump);
          }
          res.end();
        };
        res.once('close', () => (provider.streamClosed = true));
        pump();
      } else if (marker.includes('line-without-end')) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(frame('message_start', { type: 'message_start', message: { ...MESSAGE, content: [] } }));
        res.write(`data: ${'y'.repeat(2 * 1024 * 1024)}`);
      } else if (marker.includes('huge-error')) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(`{"error":{"message":"${'z'.repeat(2 * 1024 * 1024)}"}}`);
      } else if (marker.includes('not-json')) {
        res.writeHead(200, { 'content-type': 'text/html' }).end('<html>upstream secret page</html>');
      } else {
        res.writeHead(200, {
          'content-type': 'application/json',
          'request-id': 'req_provider_1',
          'anthropic-ratelimit-requests-remaining': '41',
          'anthropic-organization-id': 'org-operator-private',
          'x-gateway-request-id': 'provider-chosen-id',
          'x-gateway-trace-id': 'provider-chosen-trace',
          'set-cookie': 'provider=1',
        });
        res.end(JSON.stringify(MESSAGE));
      }
    });
  });
  const mcp = await serve((req, res) => {
    mcpSeen.push(req.headers);
    if (req.method === 'GET') {
      // A quiet event stream: headers now, the first event only when the test says so.
      res.writeHead(200, { 'content-type': 'text/event-stream' }).flushHeaders();
      releaseQuietStream = () => res.end('event: message\ndata: {}\n\n');
      return;
    }
    req.resume();
    req.on('end', () =>
      res
        .writeHead(200, {
          'content-type': 'application/json',
          'x-gateway-request-id': 'mcp-chosen-id',
          'x-gateway-trace-id': 'mcp-chosen-trace',
        })
        .end('{"jsonrpc":"2.0","id":1}'),
    );
  });
  bedrockUrl = await serve((req, res) => {
    bedrockSeen.push(`${req.method} ${req.url}`);
    req.resume();
    req.on('end', () => {
      res.writeHead(200, {
        'content-type': 'application/json',
        'x-amzn-requestid': 'aws-request-1',
        'x-gateway-trace-id': 'aws-chosen-trace',
        'set-cookie': 'aws=1',
      });
      res.end('{"retrievalResults":[]}');
    });
  });
  const demo = embeddedDefault('http://127.0.0.1:1/unused', {});
  const config = parseConfig(
    {
      auth: {
        apiKeys: [
          { key: KEY_BOB, user: { user_id: 'bob' } },
          { key: KEY_ALICE, user: { user_id: 'alice' } },
        ],
        jwt_validation: { jwksUri: 'http://127.0.0.1/unused', issuer: 'https://idp.test/' },
      },
      mcpServers: [
        // One backend behind three slugs; one of them names its own identity header.
        {
          slug: 'custom',
          url: `${mcp}/mcp`,
          user_identity_forwarding: { method: 'claims_header', header_name: 'X-Identity' },
        },
        { slug: 'signed', url: `${mcp}/mcp`, user_identity_forwarding: { method: 'claims_header' } },
        { slug: 'plain', url: `${mcp}/mcp` },
      ],
      providers: [
        { slug: 'claude', provider: 'anthropic', apiKey: PROVIDER_KEY, baseUrl: anthropic },
        {
          slug: 'kb',
          provider: 'bedrock',
          accessKeyId: 'AKIASAFETY',
          secretAccessKey: AWS_SECRET,
          region: 'us-east-1',
          allowedHosts: [bedrockUrl],
        },
      ],
    },
    {},
  );
  const keys = loadSigningKey({ production: false, jwtHeaderInUse: false });
  const quiet = new Writable({ write: (_c, _e, done) => done() });
  const build = (trustedProxies?: string[]) =>
    createGateway({
      config,
      signingKey: keys.key,
      jwks: keys.jwks,
      logger: createLogger('info', quiet),
      identityProviderKeys: demo.demoIdentityProviderKeys,
      trustedProxies,
    });
  gatewayListener = build().listener;
  listenerBase = await serve(gatewayListener);
  appBase = await serve(build().app);
  trustingBase = await serve(build(['127.0.0.1']).listener);
});

afterAll(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

const VIA = () =>
  [
    ['the listener', listenerBase],
    ['the Express app', appBase],
  ] as const;

const json = (key = KEY_BOB) => ({ 'x-gateway-api-key': key, 'content-type': 'application/json' });
const chat = (content: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    model: '@claude/claude-sonnet-4-5',
    max_tokens: 5,
    messages: [{ role: 'user', content }],
    ...extra,
  });

async function post(base: string, path: string, body: string, headers: Record<string, string> = json()) {
  const response = await fetch(`${base}${path}`, { method: 'POST', headers, body });
  const text = await response.text();
  let parsed: { error?: { code?: string }; code?: string } = {};
  try {
    parsed = JSON.parse(text) as typeof parsed;
  } catch {
    // not JSON
  }
  return { status: response.status, headers: response.headers, text, code: parsed.error?.code ?? parsed.code };
}

/** Sends a raw request and resolves with the status line and headers the gateway answered. */
function raw(base: string, text: string): Promise<string> {
  const { port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1', () => socket.write(text));
    let answer = '';
    socket.on('data', (c: Buffer) => {
      answer += c;
      if (answer.includes('\r\n\r\n')) {
        socket.destroy();
        resolve(answer);
      }
    });
    socket.on('error', reject);
  });
}

describe('1. a content coding named like a built-in property', () => {
  it.each(['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf'])(
    '"%s" is 415 unsupported_content_encoding on every JSON route of both entry points',
    async (coding) => {
      for (const [, base] of VIA()) {
        for (const path of ['/v1/chat/completions', '/v1/messages', '/v1/messages/count_tokens']) {
          const answer = await post(base, path, '{}', { ...json(), 'content-encoding': coding });
          expect([path, answer.status, answer.code]).toEqual([path, 415, 'unsupported_content_encoding']);
        }
      }
      expect((await fetch(`${listenerBase}/healthz`)).status).toBe(200);
    },
  );
});

describe('2. identity headers of sibling MCP servers', () => {
  it.each(['signed', 'plain', 'custom'])(
    'a client cannot send any configured identity header to /mcp/%s',
    async (slug) => {
      for (const [, base] of VIA()) {
        mcpSeen.length = 0;
        const answer = await post(base, `/mcp/${slug}`, '{"jsonrpc":"2.0","id":1,"method":"ping"}', {
          ...json(),
          accept: 'application/json, text/event-stream',
          'X-Identity': '{"sub":"alice"}',
          'X-User-Claims': '{"sub":"alice"}',
          'X-User-JWT': 'forged',
        });
        expect(answer.status).toBe(200);
        const seen = mcpSeen[0] as IncomingMessage['headers'];
        // Only the gateway's own identity header for this slug, with bob's claims.
        if (slug === 'custom') expect(JSON.parse(String(seen['x-identity']))).toEqual({ sub: 'bob', user_id: 'bob' });
        else expect(seen['x-identity']).toBeUndefined();
        if (slug === 'signed') expect(JSON.parse(String(seen['x-user-claims'])).sub).toBe('bob');
        else expect(seen['x-user-claims']).toBeUndefined();
        expect(seen['x-user-jwt']).toBeUndefined();
      }
    },
  );
});

describe('3. a converted stream to a client that stops reading', () => {
  it('holds the provider back instead of buffering its stream', async () => {
    const { port } = new URL(listenerBase);
    const socket = connect(Number(port), '127.0.0.1');
    socket.pause(); // the client reads nothing
    const body = chat('endless-stream', { stream: true });
    socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nx-gateway-api-key: ${KEY_BOB}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    // Wait until the provider is blocked too: its count stops growing.
    let last = -1;
    while (provider.streamedBytes !== last) {
      last = provider.streamedBytes;
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    // Socket buffers on both sides hold a few MB at most; without backpressure all 100 MB pass.
    expect(provider.streamedBytes).toBeGreaterThan(0);
    expect(provider.streamedBytes).toBeLessThan(20 * 1024 * 1024);
    socket.destroy();
    while (!provider.streamClosed) await new Promise((resolve) => setTimeout(resolve, 20));
  });
});

describe('4. upstream response headers', () => {
  it.each([0, 1])('native messages pass an allow-list; the ids are the gateway’s (%#)', async (i) => {
    const base = (VIA()[i] as readonly [string, string])[1];
    const answer = await post(base, '/v1/messages', chat('hello'));
    expect(answer.status).toBe(200);
    expect(answer.headers.get('request-id')).toBe('req_provider_1');
    expect(answer.headers.get('anthropic-ratelimit-requests-remaining')).toBe('41');
    expect(answer.headers.get('anthropic-organization-id')).toBeNull();
    expect(answer.headers.get('set-cookie')).toBeNull();
    expect(answer.headers.get('x-gateway-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(answer.headers.get('x-gateway-trace-id')).not.toBe('provider-chosen-trace');
  });

  it.each([0, 1])('MCP answers keep the gateway’s ids (%#)', async (i) => {
    const base = (VIA()[i] as readonly [string, string])[1];
    const answer = await post(base, '/mcp/plain', '{"jsonrpc":"2.0","id":1,"method":"ping"}', {
      ...json(),
      accept: 'application/json, text/event-stream',
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('x-gateway-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(answer.headers.get('x-gateway-trace-id')).not.toBe('mcp-chosen-trace');
  });

  it.each([0, 1])('SigV4 answers pass an allow-list; the ids are the gateway’s (%#)', async (i) => {
    const base = (VIA()[i] as readonly [string, string])[1];
    const answer = await post(base, '/v1/knowledgebases/KB1/retrieve', '{}', {
      ...json(),
      'x-gateway-provider': '@kb',
      'x-gateway-custom-host': bedrockUrl,
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('x-amzn-requestid')).toBe('aws-request-1');
    expect(answer.headers.get('set-cookie')).toBeNull();
    expect(answer.headers.get('x-gateway-trace-id')).not.toBe('aws-chosen-trace');
  });
});

describe('5. request targets that are not origin-form', () => {
  it.each([0, 1])('are refused with 400 before any upstream call (%#)', async (i) => {
    const base = (VIA()[i] as readonly [string, string])[1];
    const before = bedrockSeen.length;
    const absolute = await raw(
      base,
      `POST http://other.host/v1/knowledgebases/KB1/retrieve HTTP/1.1\r\nHost: other.host\r\nx-gateway-api-key: ${KEY_BOB}\r\nx-gateway-provider: @kb\r\nx-gateway-custom-host: ${bedrockUrl}\r\ncontent-length: 2\r\n\r\n{}`,
    );
    expect(absolute).toMatch(/^HTTP\/1\.1 400 /);
    const asterisk = await raw(base, 'OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    expect(asterisk).toMatch(/^HTTP\/1\.1 400 /);
    const schemeRelative = await raw(
      base,
      `GET //other.host/v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nx-gateway-api-key: ${KEY_BOB}\r\n\r\n`,
    );
    expect(schemeRelative).toMatch(/^HTTP\/1\.1 400 /);
    expect(bedrockSeen.length).toBe(before);
  });
});

describe('7. the RFC 9728 metadata URL in challenges', () => {
  it.each([0, 1])('names only configured slugs, built from configuration (%#)', async (i) => {
    const base = (VIA()[i] as readonly [string, string])[1];
    const challenge = async (path: string, host?: string) => {
      const answer = await raw(
        base,
        `POST ${path} HTTP/1.1\r\nHost: ${host ?? '127.0.0.1'}\r\ncontent-length: 0\r\n\r\n`,
      );
      return { status: Number(answer.slice(9, 12)), header: /www-authenticate: (.*)\r\n/i.exec(answer)?.[1] };
    };
    const known = await challenge('/mcp/signed');
    expect(known.status).toBe(401);
    expect(known.header).toBe(
      'Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource/mcp/signed"',
    );
    const injected = await challenge('/mcp/x",scope="admin');
    expect(injected.header).toBe('Bearer');
    const unknown = await challenge('/mcp/unknown');
    expect(unknown.header).toBe('Bearer');
    const forgedHost = await challenge('/mcp/signed', 'a", error="injected');
    expect(forgedHost.status).toBe(400);
    expect(forgedHost.header).toBeUndefined();
  });
});

describe('9. retry statuses', () => {
  it.each([0, 1])('only 408, 409, 429 and 5xx may be retried (%#)', async (i) => {
    const base = (VIA()[i] as readonly [string, string])[1];
    const tooMany = Array.from({ length: 33 }, () => 503);
    for (const statuses of [[200], [404], [429, 201], [600], tooMany]) {
      const config = JSON.stringify({ retry: { attempts: 2, on_status_codes: statuses } });
      const answer = await post(base, '/v1/chat/completions', chat('hello'), {
        ...json(),
        'x-gateway-config': config,
      });
      expect([statuses, answer.status, answer.code]).toEqual([statuses, 400, 'invalid_config']);
    }
    const config = JSON.stringify({ retry: { attempts: 1, on_status_codes: [408, 409, 429, 500, 503, 529] } });
    const answer = await post(base, '/v1/chat/completions', chat('hello'), { ...json(), 'x-gateway-config': config });
    expect(answer.status).toBe(200);
  });
});

describe('10. where a request came from', () => {
  const claims = {
    'x-forwarded-for': '6.6.6.6',
    forwarded: 'for=6.6.6.6',
    'x-real-ip': '6.6.6.6',
    accept: 'application/json, text/event-stream',
  };

  it.each([0, 1])('MCP servers see the peer the gateway saw, never the client’s claim (%#)', async (i) => {
    const base = (VIA()[i] as readonly [string, string])[1];
    mcpSeen.length = 0;
    await post(base, '/mcp/plain', '{"jsonrpc":"2.0","id":1,"method":"ping"}', { ...json(), ...claims });
    const seen = mcpSeen[0] as IncomingMessage['headers'];
    expect(seen['x-forwarded-for']).toBe('127.0.0.1');
    expect(seen.forwarded).toBeUndefined();
    expect(seen['x-real-ip']).toBeUndefined();
  });

  it('behind a trusted proxy, its list is kept and the peer appended', async () => {
    mcpSeen.length = 0;
    await post(trustingBase, '/mcp/plain', '{"jsonrpc":"2.0","id":1,"method":"ping"}', { ...json(), ...claims });
    expect((mcpSeen[0] as IncomingMessage['headers'])['x-forwarded-for']).toBe('6.6.6.6, 127.0.0.1');
  });
});

describe('11. who the provider is told the user is, and what a JSON route accepts', () => {
  it.each([0, 1])('user_id is scoped to the authenticated caller (%#)', async (i) => {
    const base = (VIA()[i] as readonly [string, string])[1];
    await post(base, '/v1/chat/completions', chat('hello', { user: 'alice' }), json(KEY_BOB));
    const asBob = (provider.bodies.at(-1)?.metadata as { user_id: string }).user_id;
    await post(base, '/v1/chat/completions', chat('hello', { user: 'alice' }), json(KEY_ALICE));
    const asAlice = (provider.bodies.at(-1)?.metadata as { user_id: string }).user_id;
    expect(asBob).not.toBe('alice');
    expect(asBob).not.toBe(asAlice);
    expect(asBob).toBe(providerUserId('key:0', 'alice'));
    // Native messages: the caller's own metadata.user_id is scoped the same way.
    await post(base, '/v1/messages', chat('hello', { metadata: { user_id: 'alice' } }), json(KEY_BOB));
    expect(provider.bodies.at(-1)?.metadata).toEqual({ user_id: asBob });
  });

  it.each([0, 1])('a body that is not sent as JSON is 415 unsupported_media_type (%#)', async (i) => {
    const base = (VIA()[i] as readonly [string, string])[1];
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
      const answer = await post(base, '/v1/chat/completions', chat('hello'), {
        'x-gateway-api-key': KEY_BOB,
        'content-type': type,
      });
      expect([type, answer.status, answer.code]).toEqual([type, 415, 'unsupported_media_type']);
    }
    const vendor = await post(base, '/v1/chat/completions', chat('hello'), {
      'x-gateway-api-key': KEY_BOB,
      'content-type': 'application/vnd.api+json; charset=utf-8',
    });
    expect(vendor.status).toBe(200);
  });
});

describe('12. what the gateway reads from a provider', () => {
  it.each([0, 1])('an error body past 1 MiB, or a success that is not JSON, is 502 (%#)', async (i) => {
    const base = (VIA()[i] as readonly [string, string])[1];
    const huge = await post(base, '/v1/chat/completions', chat('huge-error'));
    expect([huge.status, huge.code]).toEqual([502, 'upstream_invalid_response']);
    const html = await post(base, '/v1/chat/completions', chat('not-json'));
    expect([html.status, html.code]).toEqual([502, 'upstream_invalid_response']);
    expect(html.text).not.toContain('secret page');
  });

  it('a stream line with no end ends the stream with an error the SDK raises', async () => {
    const client = new OpenAI({ apiKey: KEY_BOB, baseURL: `${listenerBase}/v1`, maxRetries: 0 });
    const stream = await client.chat.completions.create({
      model: '@claude/claude-sonnet-4-5',
      max_tokens: 5,
      stream: true,
      messages: [{ role: 'user', content: 'line-without-end' }],
    });
    await expect(
      (async () => {
        for await (const chunk of stream) void chunk;
      })(),
    ).rejects.toThrow(/larger than the gateway reads/);
  });
});

describe('13. a quiet MCP event stream', () => {
  it.each([0, 1])('sends its headers before its first event (%#)', async (i) => {
    const base = new URL((VIA()[i] as readonly [string, string])[1]);
    const headersArrived = new Promise<IncomingMessage>((resolve, reject) => {
      const req = request(
        {
          host: base.hostname,
          port: base.port,
          path: '/mcp/plain',
          headers: { 'x-gateway-api-key': KEY_BOB, accept: 'text/event-stream' },
        },
        resolve,
      );
      req.on('error', reject);
      req.end();
    });
    const timeout = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), 3000).unref());
    const first = await Promise.race([headersArrived, timeout]);
    // The upstream has sent nothing after its headers until now.
    releaseQuietStream();
    expect(first).not.toBe('timeout');
    const response = first as IncomingMessage;
    expect(response.headers['content-type']).toBe('text/event-stream');
    response.resume();
    await once(response, 'end');
  });
});

/** Sends a raw request with `connection: close` and resolves with everything the gateway answered. */
function rawExchange(base: string, text: string): Promise<string> {
  const { port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1', () => socket.write(text));
    let answer = '';
    socket.on('data', (c: Buffer) => (answer += c));
    socket.on('end', () => resolve(answer));
    socket.on('error', reject);
  });
}

describe('14. credentials past the header-count limit', () => {
  // Node's parser keeps only so many headers (1,000 while server.maxHeadersCount is unset, else
  // that many): a second Authorization behind enough short fillers would be dropped, and the first
  // would win without the ambiguity check seeing it.
  const smuggled = (path: string, fillers: number) =>
    `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nAuthorization: Bearer ${KEY_BOB}\r\n` +
    'a:1\r\n'.repeat(fillers) +
    `Authorization: Bearer ${KEY_ALICE}\r\n\r\n`;
  const plenty = (fillers: number) =>
    `GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nAuthorization: Bearer ${KEY_BOB}\r\n` +
    'a:1\r\n'.repeat(fillers) +
    '\r\n';

  it.each([0, 1])('a request whose header count reached the limit is 431 too_many_headers (%#)', async (i) => {
    const base = (VIA()[i] as readonly [string, string])[1];
    for (const path of ['/v1/models', '/mcp/plain', '/healthz']) {
      const answer = await rawExchange(base, smuggled(path, 2000));
      expect([path, answer.split('\r\n')[0]]).toEqual([path, 'HTTP/1.1 431 Request Header Fields Too Large']);
      expect(answer).toContain('"too_many_headers"');
    }
    // Below the limit nothing changes.
    expect((await rawExchange(base, plenty(900))).split('\r\n')[0]).toBe('HTTP/1.1 200 OK');
  });

  it("follows the server's own maxHeadersCount (2000, as the gateway sets it)", async () => {
    const server = createServer(gatewayListener);
    server.maxHeadersCount = 2000;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    servers.push(server);
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    expect((await rawExchange(base, plenty(1900))).split('\r\n')[0]).toBe('HTTP/1.1 200 OK');
    const answer = await rawExchange(base, smuggled('/v1/models', 2100));
    expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 431 Request Header Fields Too Large');
    expect(answer).toContain('"too_many_headers"');
  });
});

describe('15. JSON nested thousands deep', () => {
  const deep = `${'{"a":'.repeat(10_000)}{}${'}'.repeat(10_000)}`;
  it.each([0, 1])(
    'is 400 json_too_deep on both JSON route families, and /healthz answers meanwhile (%#)',
    async (i) => {
      const base = (VIA()[i] as readonly [string, string])[1];
      const before = provider.bodies.length;
      const tools = [{ type: 'function', function: { name: 't', parameters: {} } }];
      const chatBody = chat('deep', { tools }).replace('"parameters":{}', `"parameters":${deep}`);
      const messagesBody = `{"model":"claude-sonnet-4-5","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"metadata":${deep}}`;
      const [completion, native, health] = await Promise.all([
        post(base, '/v1/chat/completions', chatBody),
        post(base, '/v1/messages', messagesBody, { ...json(), 'x-gateway-provider': '@claude' }),
        fetch(`${base}/healthz`),
      ]);
      expect([completion.status, completion.code, native.status, native.code]).toEqual([
        400,
        'json_too_deep',
        400,
        'json_too_deep',
      ]);
      expect(completion.text).toContain('128');
      expect(health.status).toBe(200);
      expect(provider.bodies.length).toBe(before);
    },
  );
});

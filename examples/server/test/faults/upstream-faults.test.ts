import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import OpenAI from 'openai';
import { loadSigningKey } from '@gw/jwks';
import { createGateway } from '../../src/app';
import { parseConfig } from '../../src/config/load';
import { createLogger } from '../../src/observability/logger';

// Upstreams that misbehave on cue, and clients that leave: every fault ends in a clear answer
// (a code, or an error frame the SDK raises), never a hang, a 500 or a crash, and the gateway
// keeps serving others. No log line carries an upstream's body.

jest.setTimeout(30_000);

const KEY = 'gw-faults-key-0001';
const servers: Server[] = [];
const logLines: string[] = [];
let base: string;
let mcpDownUrl: string;

/** What the misbehaving provider does next, by the marker in the request's first message. */
type Fault =
  | 'reset-before-headers'
  | 'hang-before-headers'
  | 'close-mid-stream'
  | 'invalid-sse'
  | 'non-json-success'
  | 'html-5xx'
  | 'redirect'
  | 'slow-stream';

const provider = {
  redirectTargetHits: 0,
  /** Sockets of requests still open, so a test can see the gateway close them. */
  open: new Set<Socket>(),
  closed: [] as string[],
};

const frame = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
const START = frame('message_start', {
  type: 'message_start',
  message: { id: 'msg_f', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [], usage: {} },
});
const TEXT = (text: string, index = 0) =>
  frame('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text } });

async function serve(listener: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const server = createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function misbehave(fault: Fault, req: IncomingMessage, res: ServerResponse, marker: string): void {
  provider.open.add(req.socket);
  res.once('close', () => {
    provider.open.delete(req.socket);
    provider.closed.push(marker);
  });
  switch (fault) {
    case 'reset-before-headers':
      req.socket.destroy();
      return;
    case 'hang-before-headers':
      return;
    case 'close-mid-stream':
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(START + TEXT('half'));
      setImmediate(() => req.socket.destroy());
      return;
    case 'invalid-sse':
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(`${START}event: content_block_delta\ndata: {not json\n\nretry: x\n\n: comment\n\ndata: [DONE]\n\n`);
      return;
    case 'non-json-success':
      res.writeHead(200, { 'content-type': 'application/json' }).end('<!doctype html><p>upstream-body-text</p>');
      return;
    case 'html-5xx':
      res.writeHead(503, { 'content-type': 'text/html' }).end('<html>upstream-body-text: maintenance</html>');
      return;
    case 'redirect':
      res.writeHead(307, { location: `${base}/redirect-target` }).end();
      return;
    case 'slow-stream':
      // One event now, the rest only if the client is still there.
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(START + TEXT('first'));
      return;
  }
}

beforeAll(async () => {
  const anthropic = await serve((req, res) => {
    if (req.url === '/redirect-target') {
      provider.redirectTargetHits++;
      return void res.end('{}');
    }
    let text = '';
    req.on('data', (c: Buffer) => (text += c));
    req.on('end', () => {
      const marker = /"content":"([a-z0-9-]+)"/.exec(text)?.[1] ?? '';
      misbehave(marker.replace(/-\d+$/, '') as Fault, req, res, marker);
    });
  });
  // An MCP server that resets every connection, one that never answers, and an address nobody listens on.
  const mcpReset = await serve((req) => req.socket.destroy());
  const mcpHang = await serve((req) => provider.open.add(req.socket));
  const unused = createServer();
  await new Promise<void>((resolve) => unused.listen(0, '127.0.0.1', resolve));
  mcpDownUrl = `http://127.0.0.1:${(unused.address() as AddressInfo).port}/mcp`;
  await new Promise((resolve) => unused.close(resolve));
  const config = parseConfig(
    {
      auth: { apiKeys: [{ key: KEY, user: { user_id: 'faults' } }] },
      mcpServers: [
        { slug: 'down', url: mcpDownUrl },
        { slug: 'reset', url: `${mcpReset}/mcp` },
        { slug: 'hang', url: `${mcpHang}/mcp` },
      ],
      providers: [{ slug: 'claude', provider: 'anthropic', apiKey: 'sk-ant-faults-provider', baseUrl: anthropic }],
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
          logLines.push(String(chunk));
          done();
        },
      }),
    ),
  });
  base = await serve(gateway.listener);
});

afterAll(async () => {
  for (const socket of provider.open) socket.destroy();
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  expect(logLines.join('')).not.toContain('upstream-body-text');
});

let counter = 0;
const marker = (fault: Fault) => `${fault}-${++counter}`;
const client = () => new OpenAI({ apiKey: KEY, baseURL: `${base}/v1`, maxRetries: 0 });
const request = (content: string, extra: Record<string, unknown> = {}) => ({
  model: '@claude/claude-sonnet-4-5',
  max_tokens: 5,
  messages: [{ role: 'user' as const, content }],
  ...extra,
});

async function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'x-gateway-api-key': KEY, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  let code: unknown;
  try {
    const parsed = JSON.parse(text) as { code?: string; error?: { code?: string } };
    code = parsed.error?.code ?? parsed.code;
  } catch {
    code = undefined;
  }
  return { status: response.status, code, text };
}

async function healthy(): Promise<void> {
  expect((await fetch(`${base}/healthz`)).status).toBe(200);
}

describe('a model provider that misbehaves', () => {
  it('resets the connection before its headers: 502 upstream_unreachable', async () => {
    for (const path of ['/v1/chat/completions', '/v1/messages']) {
      const answer = await post(path, request(marker('reset-before-headers')));
      expect([path, answer.status, answer.code]).toEqual([path, 502, 'upstream_unreachable']);
    }
    await healthy();
  });

  it('hangs before its headers: 504 upstream_timeout at request_timeout, and its connection is closed', async () => {
    const config = JSON.stringify({ request_timeout: 300 });
    for (const path of ['/v1/chat/completions', '/v1/messages']) {
      const name = marker('hang-before-headers');
      const answer = await post(path, request(name), { 'x-gateway-config': config });
      expect([path, answer.status, answer.code]).toEqual([path, 504, 'upstream_timeout']);
      while (!provider.closed.includes(name)) await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await healthy();
  });

  it('closes the connection mid-stream: the SDK raises instead of returning half an answer', async () => {
    const stream = await client().chat.completions.create({ ...request(marker('close-mid-stream')), stream: true });
    const received: string[] = [];
    await expect(
      (async () => {
        for await (const chunk of stream) received.push(chunk.choices[0]?.delta.content ?? '');
      })(),
    ).rejects.toThrow(/ended the stream early/);
    expect(received.join('')).toBe('half');
    await healthy();
  });

  it('sends an event stream that is not valid: the stream ends with an error, never a 500', async () => {
    const stream = await client().chat.completions.create({ ...request(marker('invalid-sse')), stream: true });
    await expect(
      (async () => {
        for await (const chunk of stream) void chunk;
      })(),
    ).rejects.toThrow();
    await healthy();
  });

  it('answers 200 with a body that is not JSON: 502 upstream_invalid_response, no body text logged', async () => {
    const answer = await post('/v1/chat/completions', request(marker('non-json-success')));
    expect([answer.status, answer.code]).toEqual([502, 'upstream_invalid_response']);
    expect(answer.text).not.toContain('upstream-body-text');
  });

  it('answers 5xx with an HTML page: the status is kept, in the route family’s error shape', async () => {
    const chat = await post('/v1/chat/completions', request(marker('html-5xx')));
    expect(chat.status).toBe(503);
    expect(chat.code).toBe('upstream_503');
    const native = await post('/v1/messages', request(marker('html-5xx')));
    expect(native.status).toBe(503);
  });

  it('redirects: the gateway does not follow, and the redirect target is never called', async () => {
    const chat = await post('/v1/chat/completions', request(marker('redirect')));
    expect([chat.status, chat.code]).toEqual([502, 'upstream_invalid_response']);
    const native = await post('/v1/messages', request(marker('redirect')));
    expect(native.status).toBe(307);
    expect(provider.redirectTargetHits).toBe(0);
  });
});

describe('an MCP server that misbehaves', () => {
  const mcp = (slug: string) =>
    post(`/mcp/${slug}`, { jsonrpc: '2.0', id: 1, method: 'ping' }, { accept: 'application/json, text/event-stream' });

  it('is down: 502 upstream_unreachable', async () => {
    expect(await mcp('down')).toMatchObject({ status: 502, code: 'upstream_unreachable' });
  });

  it('resets the connection: 502 upstream_unreachable', async () => {
    expect(await mcp('reset')).toMatchObject({ status: 502, code: 'upstream_unreachable' });
    await healthy();
  });
});

describe('a client that leaves', () => {
  it('in the middle of its request body: nothing reaches the provider, the gateway serves on', async () => {
    const before = provider.closed.length + provider.open.size;
    const { port } = new URL(base);
    const socket = connect(Number(port), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nx-gateway-api-key: ${KEY}\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"model":`,
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    socket.destroy();
    await healthy();
    expect(provider.closed.length + provider.open.size).toBe(before);
  });

  it('in the middle of a stream: the gateway closes its upstream request', async () => {
    const name = marker('slow-stream');
    const controller = new AbortController();
    const response = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'x-gateway-api-key': KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ ...request(name), stream: true }),
      signal: controller.signal,
    });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toContain('chat.completion.chunk');
    expect(provider.closed).not.toContain(name);
    controller.abort();
    while (!provider.closed.includes(name)) await new Promise((resolve) => setTimeout(resolve, 10));
    await healthy();
  });

  it('while the gateway waits for the provider’s headers: the upstream request is closed too', async () => {
    const name = marker('hang-before-headers');
    const controller = new AbortController();
    const pending = fetch(`${base}/v1/messages`, {
      method: 'POST',
      headers: { 'x-gateway-api-key': KEY, 'content-type': 'application/json' },
      body: JSON.stringify(request(name)),
      signal: controller.signal,
    }).catch(() => 'aborted');
    while (![...provider.open].length) await new Promise((resolve) => setTimeout(resolve, 10));
    controller.abort();
    expect(await pending).toBe('aborted');
    while (!provider.closed.includes(name)) await new Promise((resolve) => setTimeout(resolve, 10));
    await healthy();
  });
});

import type { IncomingMessage, ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { alice, listen, recordingUpstream, setup } from './support';
import { hasDotSegment, identityForwarding, upstreamQuery } from '../src';

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** Resolves when the gateway closes the connection. */
  closed: Promise<void>;
}

/** One raw HTTP/1.1 exchange: the request bytes exactly as written, the answer once it is complete. */
function raw(url: string, lines: string[]): Promise<RawAnswer> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1');
    const closed = new Promise<void>((done) => socket.once('close', () => done()));
    let text = '';
    const parse = (ended: boolean) => {
      const split = text.indexOf('\r\n\r\n');
      if (split === -1) return ended ? reject(new Error('no answer')) : undefined;
      const [statusLine, ...headerLines] = text.slice(0, split).split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of headerLines) {
        const colon = line.indexOf(':');
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      let body = text.slice(split + 4);
      if (headers['transfer-encoding'] === 'chunked') {
        if (!ended && !body.endsWith('0\r\n\r\n')) return;
        let decoded = '';
        for (let at = 0; ;) {
          const end = body.indexOf('\r\n', at);
          const size = parseInt(body.slice(at, end), 16);
          if (!(size > 0)) break;
          decoded += body.slice(end + 2, end + 2 + size);
          at = end + 2 + size + 2;
        }
        body = decoded;
      } else if (
        !ended &&
        !lines[0]?.startsWith('HEAD ') &&
        Buffer.byteLength(body, 'latin1') < Number(headers['content-length'] ?? Infinity)
      ) {
        return;
      }
      socket.removeAllListeners('data');
      resolve({ status: Number(statusLine?.split(' ')[1]), headers, body, closed });
    };
    socket.on('data', (c: Buffer) => {
      text += c.toString('latin1');
      parse(false);
    });
    socket.once('end', () => parse(true));
    socket.on('error', reject);
    socket.write(`${lines.join('\r\n')}\r\n\r\n`);
  });
}

const get = (target: string, extra: string[] = []) => [
  `GET ${target} HTTP/1.1`,
  'Host: 127.0.0.1',
  `x-gateway-api-key: ${alice.key as string}`,
  'Connection: close',
  ...extra,
];

describe('MCP paths stay below the configured server URL', () => {
  let upstream: Awaited<ReturnType<typeof recordingUpstream>>;
  let gateway: Awaited<ReturnType<typeof setup>>;

  beforeAll(async () => {
    upstream = await recordingUpstream();
    gateway = await setup({
      apiKeys: [alice],
      mcpServers: [
        { slug: 'tenant', url: `${upstream.url}/tenants/a/mcp?tenant=a&region=eu` },
        { slug: 'plain', url: `${upstream.url}/mcp` },
      ],
    });
  });

  afterAll(async () => {
    await gateway.close();
    await upstream.close();
  });

  it.each([
    '/mcp/tenant/../../other',
    '/mcp/tenant/..',
    '/mcp/tenant/.',
    '/mcp/tenant/./x',
    '/mcp/tenant/%2e%2e/%2e%2e/other',
    '/mcp/tenant/%2E%2E/other',
    '/mcp/tenant/.%2e/other',
    '/mcp/tenant/%2e./other',
    '/mcp/tenant/x/..%2f..%2fother',
    '/mcp/tenant/x%2f..%2Fother',
    '/mcp/tenant/x%5c..%5cother',
    '/mcp/tenant/x\\..\\other',
    '/mcp/tenant/%252e%252e/other',
    '/mcp/tenant/..;x/other',
    '/mcp/tenant/../../other?tenant=b',
  ])('refuses %s with 400 invalid_mcp_path and sends nothing upstream', async (target) => {
    const before = upstream.requests.length;
    const answer = await raw(gateway.url, get(target));
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toMatchObject({ error: { code: 'invalid_mcp_path' } });
    expect(upstream.requests.length).toBe(before);
  });

  it('forwards names that only contain dots, and keeps the path below the server URL', async () => {
    const answer = await raw(gateway.url, get('/mcp/plain/a/..b/.c/x..'));
    expect(answer.status).toBe(200);
    expect(upstream.requests.at(-1)?.url).toBe('/mcp/a/..b/.c/x..');
  });

  it('keeps the configured query and drops client parameters of the same names', async () => {
    await raw(gateway.url, get('/mcp/tenant/sub?tenant=b&page=2&Region=us&ten%61nt=c&x=1;tenant=d&y=%20z'));
    expect(upstream.requests.at(-1)?.url).toBe('/tenants/a/mcp/sub?tenant=a&region=eu&page=2&y=%20z');
    await raw(gateway.url, get('/mcp/tenant?tenant=b'));
    expect(upstream.requests.at(-1)?.url).toBe('/tenants/a/mcp?tenant=a&region=eu');
    await raw(gateway.url, get('/mcp/tenant'));
    expect(upstream.requests.at(-1)?.url).toBe('/tenants/a/mcp?tenant=a&region=eu');
    await raw(gateway.url, get('/mcp/plain?cursor=a+b'));
    expect(upstream.requests.at(-1)?.url).toBe('/mcp?cursor=a+b');
  });

  it('decides dot segments and queries with exported helpers', () => {
    expect(hasDotSegment('/a/b')).toBe(false);
    expect(hasDotSegment('/a/%2E')).toBe(true);
    expect(upstreamQuery('?k=1', new Set(['k']), 'K=2&j=3')).toBe('?k=1&j=3');
    expect(upstreamQuery('', new Set(), 'j=3')).toBe('?j=3');
  });

  it.each(['TRACE', 'PUT', 'PATCH', 'OPTIONS', 'HEAD'])(
    'refuses %s with 405 method_not_allowed and Allow: GET, POST, DELETE',
    async (method) => {
      const before = upstream.requests.length;
      const answer = await raw(gateway.url, [
        `${method} /mcp/plain HTTP/1.1`,
        'Host: 127.0.0.1',
        `x-gateway-api-key: ${alice.key as string}`,
        'Connection: close',
        'Content-Length: 0',
      ]);
      expect(answer.status).toBe(405);
      expect(answer.headers.allow).toBe('GET, POST, DELETE');
      if (method !== 'HEAD') expect(JSON.parse(answer.body)).toMatchObject({ error: { code: 'method_not_allowed' } });
      expect(upstream.requests.length).toBe(before);
    },
  );
});

describe('hop-by-hop headers do not cross the MCP proxy', () => {
  it('closes the client socket after the answer when the client sent Connection: close, and drops the upstream hop headers', async () => {
    const received: IncomingMessage['rawHeaders'][] = [];
    const upstream = await listen((req: IncomingMessage, res: ServerResponse) => {
      received.push(req.rawHeaders);
      req.resume();
      req.on('end', () => {
        res.writeHead(200, {
          'content-type': 'application/json',
          connection: 'keep-alive, x-upstream-hop',
          'keep-alive': 'timeout=60',
          'proxy-connection': 'keep-alive',
          upgrade: 'h2c',
          trailer: 'x-checksum',
          'x-upstream-hop': 'connection-scoped',
          'x-end-to-end': 'kept',
        });
        res.end('{"ok":true}');
      });
    });
    const gateway = await setup({ apiKeys: [alice], mcpServers: [{ slug: 'hop', url: `${upstream.url}/mcp` }] });
    const answer = await raw(gateway.url, [
      'POST /mcp/hop HTTP/1.1',
      'Host: 127.0.0.1',
      `x-gateway-api-key: ${alice.key as string}`,
      'Connection: close, x-client-hop',
      'Keep-Alive: timeout=300',
      'Proxy-Connection: keep-alive',
      'TE: trailers',
      'Trailer: x-sum',
      'Upgrade: h2c',
      'x-client-hop: connection-scoped',
      'content-type: application/json',
      'Content-Length: 2',
      '',
      '{}',
    ]);
    expect(answer.status).toBe(200);
    expect(answer.body).toBe('{"ok":true}');
    expect(answer.headers.connection).toBe('close');
    // The gateway closes the connection after its answer, as the client asked.
    await answer.closed;
    expect(answer.headers['x-end-to-end']).toBe('kept');
    for (const name of ['keep-alive', 'proxy-connection', 'upgrade', 'trailer', 'x-upstream-hop']) {
      expect(answer.headers[name]).toBeUndefined();
    }
    const upstreamNames = (received[0] ?? []).filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());
    for (const name of ['keep-alive', 'proxy-connection', 'te', 'trailer', 'upgrade', 'x-client-hop']) {
      expect(upstreamNames).not.toContain(name);
    }
    await gateway.close();
    await upstream.close();
  });
});

describe('the idle timeout of MCP response streams', () => {
  it('is validated at the factory', () => {
    for (const bad of [0, -1, Number.NaN, Infinity]) {
      expect(() => identityForwarding({ mcpServers: [], streamIdleTimeoutMs: bad })).toThrow(
        /streamIdleTimeoutMs must be a positive number/,
      );
    }
  });

  it.each([
    ['sends stream headers, then nothing', []],
    ['stops mid-stream', ['first']],
  ])('closes a stream whose server %s, and the upstream request with it', async (_name, events) => {
    let upstreamClosed!: () => void;
    const closed = new Promise<void>((resolve) => (upstreamClosed = resolve));
    const upstream = await listen((req: IncomingMessage, res: ServerResponse) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders();
      for (const data of events) res.write(`data: ${data}\n\n`);
      req.socket.on('close', upstreamClosed);
    });
    const gateway = await setup({
      apiKeys: [alice],
      mcpServers: [{ slug: 'quiet', url: `${upstream.url}/mcp` }],
      forwarding: { streamIdleTimeoutMs: 150 },
    });
    const response = await fetch(`${gateway.url}/mcp/quiet`, {
      headers: { 'x-gateway-api-key': alice.key as string, accept: 'text/event-stream' },
    });
    expect(response.status).toBe(200);
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    for (const data of events) expect(decoder.decode((await reader.read()).value)).toBe(`data: ${data}\n\n`);
    // The next read ends with the connection the gateway closed.
    await expect(reader.read()).rejects.toThrow();
    await closed;
    await gateway.close();
    await upstream.close();
  });
});

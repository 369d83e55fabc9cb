import { request } from 'node:http';
import express, { type ErrorRequestHandler } from 'express';
import { identityForwarding } from '@gw/mcp-gateway';
import { authenticate, mcpOriginGuard, type McpOriginGuardOptions } from '../src';
import { alice, listen, recordingUpstream, type Listening } from './support';

let upstream: Awaited<ReturnType<typeof recordingUpstream>>;
const gateways: Listening[] = [];

beforeAll(async () => {
  upstream = await recordingUpstream();
});
afterAll(async () => {
  await Promise.all(gateways.map((g) => g.close()));
  await upstream.close();
});

/** A gateway whose /mcp routes are guarded as `options` say, in front of `authenticate` and the proxy. */
async function gateway(options?: McpOriginGuardOptions): Promise<{ port: number }> {
  const guard = mcpOriginGuard(options);
  const app = express();
  app.use(
    '/mcp',
    authenticate({ apiKeys: [alice] }),
    (req, res, next) => guard(req, res, next),
    identityForwarding({
      mcpServers: [
        { slug: 'tools', url: `${upstream.url}/mcp`, user_identity_forwarding: { method: 'claims_header' } },
      ],
    }),
  );
  const render: ErrorRequestHandler = (
    error: { status?: number; code?: string; message: string },
    _req,
    res,
    _next,
  ) => {
    res.status(error.status ?? 500).json({ error: { message: error.message, code: error.code } });
  };
  app.use(render);
  const listening = await listen(app);
  gateways.push(listening);
  return { port: Number(new URL(listening.url).port) };
}

/** Sends a POST with exactly the raw headers given (Host included, or none). */
function send(port: number, rawHeaders: string[]): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/mcp/tools',
      setHost: false,
      headers: ['x-gateway-api-key', alice.key as string, 'content-type', 'application/json', ...rawHeaders],
    });
    req.once('response', (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c));
      res.once('end', () => resolve({ status: res.statusCode as number, body }));
    });
    req.once('error', reject);
    req.end('{"jsonrpc":"2.0","id":1,"method":"ping"}');
  });
}

async function expectRefused(port: number, rawHeaders: string[]): Promise<void> {
  const before = upstream.requests.length;
  const { status, body } = await send(port, rawHeaders);
  expect({ status, code: (JSON.parse(body) as { error: { code: string } }).error.code }).toEqual({
    status: 403,
    code: 'origin_not_allowed',
  });
  expect(upstream.requests.length).toBe(before);
}

async function expectForwarded(port: number, rawHeaders: string[]): Promise<void> {
  const before = upstream.requests.length;
  expect((await send(port, rawHeaders)).status).toBe(200);
  expect(upstream.requests.length).toBe(before + 1);
}

describe('MCP origin guard without a public origin (the gateway listens on loopback)', () => {
  let port: number;
  beforeAll(async () => {
    ({ port } = await gateway({ allowedOrigins: ['https://App.Example.com:443', 'http://localhost:3000'] }));
  });

  it.each([
    ['127.0.0.1 with its port', () => `127.0.0.1:${port}`],
    ['localhost with another port', () => 'localhost:9999'],
    ['LOCALHOST without a port', () => 'LOCALHOST'],
    ['another 127/8 address', () => '127.0.0.2:80'],
    ['[::1]', () => `[::1]:${port}`],
    ['[0:0:0:0:0:0:0:1]', () => '[0:0:0:0:0:0:0:1]'],
  ])('forwards a loopback Host: %s', async (_what, host) => {
    await expectForwarded(port, ['Host', host()]);
  });

  it.each([
    ['a public name', 'evil.example.com'],
    ['a look-alike of 127.0.0.1', '127.0.0.1.evil.com'],
    ['a look-alike of localhost', 'localhost.evil'],
    ['localhost with a trailing dot', 'localhost.'],
    ['a private address', '192.168.1.10:8787'],
    ['the unspecified address', '0.0.0.0:8787'],
    ['an IPv6 address that is not loopback', '[::2]'],
    ['an IPv4-mapped loopback in IPv6', '[::ffff:127.0.0.1]'],
    ['user information before the host', 'evil.com@127.0.0.1'],
    ['a path', '127.0.0.1/x'],
    ['an empty value', ''],
  ])('refuses a Host that is not the gateway: %s', async (_what, host) => {
    await expectRefused(port, ['Host', host]);
  });

  it('refuses a request with two Host headers, and never forwards one without Host', async () => {
    await expectRefused(port, ['Host', 'localhost', 'Host', 'evil.example.com']);
    await expectRefused(port, ['Host', 'evil.example.com', 'Host', 'localhost']);
    const before = upstream.requests.length;
    // node:http answers an HTTP/1.1 request without Host itself (400); the guard refuses it too.
    expect([400, 403]).toContain((await send(port, [])).status);
    expect(upstream.requests.length).toBe(before);
  });

  it.each([
    ['its own origin', () => `http://127.0.0.1:${port}`, () => `127.0.0.1:${port}`],
    ['its own origin, default port written', () => 'http://localhost:80', () => 'localhost'],
    ['its own origin in capitals', () => `HTTP://LocalHost:${port}`, () => `localhost:${port}`],
    ['a listed origin', () => 'http://localhost:3000', () => `127.0.0.1:${port}`],
    ['a listed origin, normalised', () => 'https://app.example.com', () => `127.0.0.1:${port}`],
  ])('forwards an Origin that is %s', async (_what, origin, host) => {
    await expectForwarded(port, ['Host', host(), 'Origin', origin()]);
  });

  it.each([
    ['a page of the attacker', 'http://evil.example.com'],
    ['a look-alike of the gateway', 'http://127.0.0.1.evil.com'],
    ['the gateway on another scheme', 'https://127.0.0.1:PORT'],
    ['the gateway on another port', 'http://127.0.0.1:1'],
    ['another loopback name than Host', 'http://localhost:PORT'],
    ['a listed origin on another scheme', 'http://app.example.com'],
    ['a listed origin on another port', 'https://app.example.com:8443'],
    ['a file page', 'file://'],
    ['a websocket scheme', 'ws://127.0.0.1:PORT'],
    ['an opaque origin', 'null'],
    ['an origin with a path', 'http://127.0.0.1:PORT/'],
  ])('refuses an Origin that is %s', async (_what, origin) => {
    await expectRefused(port, ['Host', `127.0.0.1:${port}`, 'Origin', origin.replace('PORT', String(port))]);
  });

  it('refuses two Origin headers even when each would pass', async () => {
    const own = `http://127.0.0.1:${port}`;
    await expectRefused(port, ['Host', `127.0.0.1:${port}`, 'Origin', own, 'Origin', own]);
  });
});

describe('MCP origin guard with a public origin', () => {
  let port: number;
  beforeAll(async () => {
    ({ port } = await gateway({ publicOrigin: 'https://gateway.example.com' }));
  });

  it.each(['gateway.example.com', 'Gateway.Example.COM:443'])('forwards Host %s', async (host) => {
    await expectForwarded(port, ['Host', host, 'Origin', 'https://gateway.example.com']);
  });

  it.each([
    ['a loopback address', () => `127.0.0.1:${port}`],
    ['localhost', () => 'localhost'],
    ['the public name on another port', () => 'gateway.example.com:8443'],
    ['the public name on port 80', () => 'gateway.example.com:80'],
    ['a sub-domain', () => 'a.gateway.example.com'],
    ['a suffix look-alike', () => 'gateway.example.com.evil.com'],
  ])('refuses Host %s', async (_what, host) => {
    await expectRefused(port, ['Host', host()]);
  });

  it('refuses the public origin over http', async () => {
    await expectRefused(port, ['Host', 'gateway.example.com', 'Origin', 'http://gateway.example.com']);
  });
});

import { request } from 'node:http';
import { failedStart, startGateway, writeConfig, type RunningGateway } from './support';
import { newAdminKey, newEncryptionKey } from './catalog/catalog-support';
import { requestMeta } from './mcp-2026/client';
import { listen2026Server, type Mcp2026Server } from './mcp-2026/server';

jest.setTimeout(60_000);

const KEY = 'gw-origin-test-key-000001';

let mcp: Mcp2026Server;
beforeAll(async () => {
  mcp = await listen2026Server();
});
afterAll(async () => {
  await mcp.close();
});

function config(): string {
  return writeConfig({
    auth: { apiKeys: [{ key: KEY, user: { user_id: 'u_origin' } }] },
    mcpServers: [{ slug: 'tools', url: mcp.url, user_identity_forwarding: { method: 'claims_header' } }],
  });
}

/** A 2026-07-28 `server/discover` sent to the gateway with the Host and Origin given. */
function discover(gateway: RunningGateway, host: string, origin?: string): Promise<{ status: number; body: string }> {
  const url = new URL(gateway.url);
  return new Promise((resolve, reject) => {
    const req = request({
      host: url.hostname,
      port: url.port,
      method: 'POST',
      path: '/mcp/tools',
      headers: {
        host,
        ...(origin === undefined ? {} : { origin }),
        'x-gateway-api-key': KEY,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'server/discover',
      },
    });
    req.once('response', (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c));
      res.once('end', () => resolve({ status: res.statusCode as number, body }));
    });
    req.once('error', reject);
    req.end(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: requestMeta() } }));
  });
}

function code(body: string): string | undefined {
  return (JSON.parse(body) as { error?: { code?: string } }).error?.code;
}

describe('DNS rebinding protection of the full gateway', () => {
  it('on loopback without PUBLIC_BASE_URL: loopback Hosts pass, other Hosts and Origins are 403 and not forwarded', async () => {
    const gateway = await startGateway({ GATEWAY_CONFIG: config(), GATEWAY_ALLOWED_ORIGINS: 'http://localhost:3000' });
    try {
      const port = new URL(gateway.url).port;
      const before = mcp.received.length;
      expect((await discover(gateway, `127.0.0.1:${port}`)).status).toBe(200);
      expect((await discover(gateway, 'localhost:1', 'http://localhost:1')).status).toBe(200);
      expect((await discover(gateway, `[::1]:${port}`, 'http://localhost:3000')).status).toBe(200);
      expect(mcp.received.length).toBe(before + 3);
      for (const [host, origin] of [
        ['evil.example.com', undefined],
        ['127.0.0.1.evil.com', undefined],
        ['localhost.evil', undefined],
        [`127.0.0.1:${port}`, 'http://evil.example.com'],
        [`127.0.0.1:${port}`, `https://127.0.0.1:${port}`],
        [`127.0.0.1:${port}`, 'http://localhost:3001'],
      ] as const) {
        const answer = await discover(gateway, host, origin);
        expect({ host, origin, status: answer.status, code: code(answer.body) }).toEqual({
          host,
          origin,
          status: 403,
          code: 'origin_not_allowed',
        });
      }
      expect(mcp.received.length).toBe(before + 3);
    } finally {
      await gateway.stop();
    }
  });

  it("with PUBLIC_BASE_URL, on any address: only its host passes, and the console's test button still works", async () => {
    const adminKey = newAdminKey();
    const gateway = await startGateway({
      GATEWAY_CONFIG: config(),
      HOST: '0.0.0.0',
      PUBLIC_BASE_URL: 'https://gateway.example.com',
      GATEWAY_ADMIN_KEY: adminKey,
      GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
    });
    try {
      const before = mcp.received.length;
      expect((await discover(gateway, 'gateway.example.com', 'https://gateway.example.com')).status).toBe(200);
      const loopback = await discover(gateway, `127.0.0.1:${new URL(gateway.url).port}`);
      expect([loopback.status, code(loopback.body)]).toEqual([403, 'origin_not_allowed']);
      expect(mcp.received.length).toBe(before + 1);
      // The console tests a server through the gateway's own listen address, with its in-process key.
      const signIn = await fetch(`${gateway.url}/console/session`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ credential: adminKey }),
      });
      const { csrfToken } = (await signIn.json()) as { csrfToken: string };
      const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0] as string;
      const test = await fetch(`${gateway.url}/console/api/test/mcp-servers/tools`, {
        method: 'POST',
        headers: { cookie, 'x-csrf-token': csrfToken },
      });
      expect(await test.json()).toMatchObject({ ok: true, status: 200 });
      expect(mcp.received.at(-1)?.body?.method).toBe('initialize');
    } finally {
      await gateway.stop();
    }
  });
});

describe('start-up checks of MCP security', () => {
  it('off loopback without PUBLIC_BASE_URL: starts with a warning, and MCP requests need a loopback Host', async () => {
    const gateway = await startGateway({ GATEWAY_CONFIG: config(), HOST: '0.0.0.0' });
    try {
      const port = new URL(gateway.url).port;
      expect(gateway.logs.join('\n')).toContain('PUBLIC_BASE_URL is unset');
      const before = mcp.received.length;
      const named = await discover(gateway, `gateway.example.com:${port}`);
      expect([named.status, code(named.body)]).toEqual([403, 'origin_not_allowed']);
      expect(JSON.stringify(named.body)).toContain('PUBLIC_BASE_URL');
      expect((await discover(gateway, `127.0.0.1:${port}`)).status).toBe(200);
      expect(mcp.received.length).toBe(before + 1);
    } finally {
      await gateway.stop();
    }
  });

  it.each([
    [
      'a GATEWAY_ALLOWED_ORIGINS entry that is not an origin',
      { GATEWAY_ALLOWED_ORIGINS: 'https://app.example.com,app.example.com' },
      'gateway: GATEWAY_ALLOWED_ORIGINS must be comma-separated origins such as "https://app.example.com,http://localhost:3000" (got "app.example.com").',
    ],
  ])('stops with one line for %s', async (_what, env, message) => {
    const { code: exit, stderr } = await failedStart(env);
    expect(exit).toBe(1);
    expect(stderr.trim()).toBe(message);
  });

  const withValidation = (audience?: string) =>
    writeConfig({
      auth: {
        apiKeys: [{ key: KEY, user: { user_id: 'u' } }],
        jwt_validation: { jwksUri: 'http://127.0.0.1:9/jwks', issuer: 'https://idp.example.com/', audience },
      },
    });

  it('stops in production when jwt_validation has no audience, naming the field', async () => {
    const { code: exit, stderr } = await failedStart({ GATEWAY_CONFIG: withValidation(), NODE_ENV: 'production' });
    expect(exit).toBe(1);
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toContain('auth.jwt_validation.audience is required in production');
  });

  it('starts in production with an audience, and without one outside production', async () => {
    const env = { JWT_PRIVATE_KEY: undefined, GATEWAY_ENCRYPTION_KEY: Buffer.alloc(32, 1).toString('base64') };
    const production = await startGateway({
      ...env,
      GATEWAY_CONFIG: withValidation('gateway'),
      NODE_ENV: 'production',
    });
    await production.stop();
    const development = await startGateway({ GATEWAY_CONFIG: withValidation() });
    await development.stop();
  });
});

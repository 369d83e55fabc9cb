import { request, type IncomingMessage } from 'node:http';
import { alice, identityProvider, listen, recordingUpstream, setup } from './support';
import { identityForwarding } from '@gw/mcp-gateway';

let upstream: Awaited<ReturnType<typeof recordingUpstream>>;
let idp: Awaited<ReturnType<typeof identityProvider>>;
let silent: Awaited<ReturnType<typeof listen>>;
let gateway: Awaited<ReturnType<typeof setup>>;
const pending: (() => void)[] = [];

beforeAll(async () => {
  upstream = await recordingUpstream();
  idp = await identityProvider();
  silent = await listen((req: IncomingMessage) => {
    // Never answers; remembers how to observe the gateway giving up.
    pending.push(() => req.destroy());
  });
  const closed = await listen(() => undefined);
  const closedUrl = `${closed.url}/mcp`;
  await closed.close();
  gateway = await setup({
    apiKeys: [alice],
    jwtValidation: { jwksUri: idp.jwksUri, issuer: idp.issuer },
    forwarding: { timeoutMs: 200 },
    mcpServers: [
      {
        slug: 'bearer',
        url: `${upstream.url}/mcp`,
        user_identity_forwarding: { method: 'bearer' },
        bearer_audience: 'tools-api',
      },
      { slug: 'down', url: closedUrl, user_identity_forwarding: { method: 'claims_header' } },
      { slug: 'slow', url: `${silent.url}/mcp`, user_identity_forwarding: { method: 'claims_header' } },
    ],
  });
});

afterAll(async () => {
  pending.forEach((release) => release());
  await gateway.close();
  await upstream.close();
  await silent.close();
  await idp.close();
});

async function post(slug: string, headers: Record<string, string>) {
  const response = await fetch(`${gateway.url}/mcp/${slug}`, { method: 'POST', headers });
  return {
    status: response.status,
    body: (await response.json()) as { error: { code: string; message: string } },
    headers: response.headers,
  };
}

function rawPost(headers: string[]): Promise<{ status: number; body: string }> {
  const { port } = new URL(gateway.url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/mcp/bearer',
        headers: ['host', `127.0.0.1:${port}`, 'content-length', '0', ...headers],
      },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode as number, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('errors of the MCP gateway', () => {
  it('refuses two Authorization headers with 400 ambiguous_credentials', async () => {
    const token = await idp.mint({ aud: 'tools-api' });
    const result = await rawPost(['authorization', `Bearer ${token}`, 'authorization', `Bearer ${alice.key}`]);
    expect(result.status).toBe(400);
    expect(JSON.parse(result.body).error.code).toBe('ambiguous_credentials');
  });

  it('refuses credentials in several places that disagree', async () => {
    const result = await post('bearer', { 'x-api-key': alice.key as string, authorization: 'Bearer gw-other-key-123' });
    expect(result.status).toBe(400);
    expect(result.body.error.code).toBe('ambiguous_credentials');
  });

  it('answers 401 missing_credentials with a Bearer challenge, and invalid_credentials for an unknown key', async () => {
    const missing = await post('bearer', {});
    expect(missing.status).toBe(401);
    expect(missing.body.error.code).toBe('missing_credentials');
    expect(missing.headers.get('www-authenticate')).toMatch(
      /^Bearer resource_metadata="http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource\/mcp\/bearer"$/,
    );
    const unknown = await post('bearer', { 'x-gateway-api-key': 'gw-unknown-key-123' });
    expect(unknown.status).toBe(401);
    expect(unknown.body.error.code).toBe('invalid_credentials');
    expect(JSON.stringify(unknown.body)).not.toContain('gw-unknown-key-123');
  });

  it('answers 401 identity_token_required when an API-key caller reaches a bearer server', async () => {
    const result = await post('bearer', { 'x-gateway-api-key': alice.key as string });
    expect(result.status).toBe(401);
    expect(result.body.error.code).toBe('identity_token_required');
    expect(upstream.requests).toHaveLength(0);
  });

  it('answers 403 token_audience_mismatch for a token not meant for the bearer server', async () => {
    const result = await post('bearer', { authorization: `Bearer ${await idp.mint({ aud: 'other-api' })}` });
    expect(result.status).toBe(403);
    expect(result.body.error.code).toBe('token_audience_mismatch');
    const ok = await post('bearer', { authorization: `Bearer ${await idp.mint({ aud: ['x', 'tools-api'] })}` });
    expect(ok.status).toBe(200);
  });

  it('answers 404 mcp_server_not_found for an unknown slug', async () => {
    const result = await post('nope', { 'x-gateway-api-key': alice.key as string });
    expect(result.status).toBe(404);
    expect(result.body.error.code).toBe('mcp_server_not_found');
  });

  it('answers 502 upstream_unreachable when the server refuses connections', async () => {
    const result = await post('down', { 'x-gateway-api-key': alice.key as string });
    expect(result.status).toBe(502);
    expect(result.body.error.code).toBe('upstream_unreachable');
  });

  it('answers 504 upstream_timeout when the server does not answer in time', async () => {
    const result = await post('slow', { 'x-gateway-api-key': alice.key as string });
    expect(result.status).toBe(504);
    expect(result.body.error.code).toBe('upstream_timeout');
  });
});

describe('configuration is checked when the factory is called', () => {
  const url = 'http://127.0.0.1:9000/mcp';
  it.each([
    [
      { slug: 'a', url, user_identity_forwarding: { method: 'jwt' } },
      'mcpServers[a].user_identity_forwarding.method must be one of claims_header, bearer, jwt_header (got "jwt").',
    ],
    [
      { slug: 'a', url, user_identity_forwarding: { method: 'claims_header', jwt_expiry_seconds: 60 } },
      'jwt_expiry_seconds applies only to the jwt_header method.',
    ],
    [
      { slug: 'a', url, user_identity_forwarding: { method: 'jwt_header', expiry: 60 } },
      'has an unknown field "expiry"',
    ],
    [
      { slug: 'a', url, user_identity_forwarding: { method: 'jwt_header', includeClaims: ['sub'] } },
      'did you mean "include_claims"?',
    ],
    [{ slug: 'a', url, forward_headers: { mode: 'except' } }, 'forward_headers.mode must be "all-except" or "only"'],
    [{ slug: 'a', url: 'not a url' }, 'mcpServers[a].url must be an absolute http(s) URL'],
    [
      { slug: 'a', url, user_identity_forwarding: { method: 'jwt_header' } },
      'no signing key is configured (set JWT_PRIVATE_KEY)',
    ],
    [{ slug: 'a', url, user_identity_forwarding: { method: 'bearer' } }, 'needs auth.jwt_validation'],
  ])('refuses %j', (server, message) => {
    expect(() => identityForwarding({ mcpServers: [server as never] })).toThrow(message);
  });

  it('refuses duplicate slugs and explains a factory mounted without being called', () => {
    expect(() =>
      identityForwarding({
        mcpServers: [
          { slug: 'a', url },
          { slug: 'a', url },
        ],
      }),
    ).toThrow('two servers with the slug "a"');
    expect(() => identityForwarding({ method: 'GET', socket: {} } as never)).toThrow(
      'app.use(identityForwarding({ ... }))',
    );
  });
});

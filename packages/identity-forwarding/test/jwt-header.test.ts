import * as jose from 'jose';
import { alice, recordingUpstream, setup } from './support';

let upstream: Awaited<ReturnType<typeof recordingUpstream>>;
let gateway: Awaited<ReturnType<typeof setup>>;

beforeAll(async () => {
  upstream = await recordingUpstream();
  gateway = await setup({
    apiKeys: [alice],
    mcpServers: [
      { slug: 'default', url: `${upstream.url}/mcp`, user_identity_forwarding: { method: 'jwt_header' } },
      {
        slug: 'custom',
        url: `${upstream.url}/tools/mcp?tenant=a`,
        jwt_audience: 'urn:tools',
        user_identity_forwarding: {
          method: 'jwt_header',
          include_claims: ['sub', 'email', 'groups'],
          header_name: 'X-Identity',
          jwt_expiry_seconds: 60,
        },
      },
    ],
  });
});

afterAll(async () => {
  await gateway.close();
  await upstream.close();
});

async function call(slug: string, path = ''): Promise<void> {
  const response = await fetch(`${gateway.url}/mcp/${slug}${path}`, {
    method: 'POST',
    headers: { 'x-gateway-api-key': alice.key as string, 'content-type': 'application/json' },
    body: '{}',
  });
  expect(response.status).toBe(200);
}

describe('jwt_header tokens', () => {
  it('carry iss, aud = the server url, the kid of the published key and a 300 s lifetime by default', async () => {
    await call('default');
    const token = upstream.requests.at(-1)?.headers['x-user-jwt'] as string;
    const { payload, protectedHeader } = await jose.jwtVerify(
      token,
      jose.createRemoteJWKSet(new URL(gateway.jwksUri)),
      {
        issuer: 'gateway-mcp-gateway',
        audience: `${upstream.url}/mcp`,
      },
    );
    expect(protectedHeader).toEqual({ alg: 'RS256', typ: 'JWT', kid: gateway.signingKey.kid });
    expect(payload.exp! - payload.iat!).toBe(300);
    expect(Object.keys(payload).sort()).toEqual(
      ['aud', 'email', 'exp', 'iat', 'iss', 'organisation_id', 'sub', 'user_id', 'username', 'workspace_id'].sort(),
    );
  });

  it('honour jwt_audience, include_claims (other claim names too), header_name and jwt_expiry_seconds', async () => {
    await call('custom', '/extra?x=1');
    const request = upstream.requests.at(-1)!;
    // The configured query stays; the client's parameters follow it.
    expect(request.url).toBe('/tools/mcp/extra?tenant=a&x=1');
    expect(request.headers['x-user-jwt']).toBeUndefined();
    const { payload } = await jose.jwtVerify(
      request.headers['x-identity'] as string,
      jose.createRemoteJWKSet(new URL(gateway.jwksUri)),
      { issuer: 'gateway-mcp-gateway', audience: 'urn:tools' },
    );
    expect(payload).toMatchObject({ sub: 'u_alice', email: 'alice@example.com', groups: ['eng'] });
    expect(payload.username).toBeUndefined();
    expect(payload.exp! - payload.iat!).toBe(60);
  });

  it("keeps the server url's own query when the client sends none", async () => {
    await call('custom');
    expect(upstream.requests.at(-1)?.url).toBe('/tools/mcp?tenant=a');
  });
});

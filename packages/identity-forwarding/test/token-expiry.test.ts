import * as jose from 'jose';
import { identityProvider, recordingUpstream, setup } from './support';

// A token the gateway signs from an identity-provider token never outlives that token.

let upstream: Awaited<ReturnType<typeof recordingUpstream>>;
let idp: Awaited<ReturnType<typeof identityProvider>>;
let gateway: Awaited<ReturnType<typeof setup>>;

beforeAll(async () => {
  upstream = await recordingUpstream();
  idp = await identityProvider();
  gateway = await setup({
    mcpServers: [{ slug: 'signed', url: `${upstream.url}/mcp`, user_identity_forwarding: { method: 'jwt_header' } }],
    jwtValidation: { jwksUri: idp.jwksUri, issuer: idp.issuer, audience: 'gateway', clockToleranceSeconds: 30 },
  });
});

afterAll(async () => {
  await gateway.close();
  await upstream.close();
  await idp.close();
});

const call = (token: string) =>
  fetch(`${gateway.url}/mcp/signed`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: '{}',
  });

describe('jwt_header tokens minted from identity-provider tokens', () => {
  it('expire no later than the token they were minted from', async () => {
    const exp = Math.floor(Date.now() / 1000) + 20;
    const response = await call(await idp.mint({ sub: 'short-lived', exp }));
    expect(response.status).toBe(200);
    const forwarded = upstream.requests.at(-1)?.headers['x-user-jwt'] as string;
    const { payload } = await jose.jwtVerify(forwarded, jose.createRemoteJWKSet(new URL(gateway.jwksUri)));
    expect(payload.exp).toBe(exp);
    expect(payload.exp! - payload.iat!).toBeLessThanOrEqual(20);
  });

  it('keep their full lifetime when the identity-provider token lives longer', async () => {
    const response = await call(await idp.mint({ sub: 'long-lived', exp: Math.floor(Date.now() / 1000) + 3600 }));
    expect(response.status).toBe(200);
    const forwarded = upstream.requests.at(-1)?.headers['x-user-jwt'] as string;
    const payload = jose.decodeJwt(forwarded);
    expect(payload.exp! - payload.iat!).toBe(300);
  });

  it('are never minted from a token that expired within the clock tolerance', async () => {
    const before = upstream.requests.length;
    const response = await call(await idp.mint({ sub: 'just-expired', exp: Math.floor(Date.now() / 1000) - 5 }));
    expect(response.status).toBe(401);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('invalid_credentials');
    expect(upstream.requests.length).toBe(before);
  });
});

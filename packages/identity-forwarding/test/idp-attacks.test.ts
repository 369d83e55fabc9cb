import { createHmac, createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { identityProvider, recordingUpstream, setup } from './support';

let upstream: Awaited<ReturnType<typeof recordingUpstream>>;
let idp: Awaited<ReturnType<typeof identityProvider>>;
let gateway: Awaited<ReturnType<typeof setup>>;
let clock = 1_000_000_000;

beforeAll(async () => {
  upstream = await recordingUpstream();
  idp = await identityProvider();
  gateway = await setup({
    jwtValidation: {
      jwksUri: idp.jwksUri,
      issuer: idp.issuer,
      audience: 'gateway',
      requiredClaims: ['sub', 'email'],
      keySet: { now: () => clock },
    },
    mcpServers: [{ slug: 'tools', url: `${upstream.url}/mcp`, user_identity_forwarding: { method: 'claims_header' } }],
  });
});

afterAll(async () => {
  await gateway.close();
  await upstream.close();
  await idp.close();
});

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

async function call(token: string): Promise<{ status: number; code?: string; challenge: string | null }> {
  const response = await fetch(`${gateway.url}/mcp/tools`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
  });
  const body = (await response.json()) as { error?: { code: string } };
  return { status: response.status, code: body.error?.code, challenge: response.headers.get('www-authenticate') };
}

describe('identity-provider tokens through the gateway', () => {
  it('accepts a valid token and forwards its claims', async () => {
    const result = await call(
      await idp.mint({ email: 'e@example.com', preferred_username: 'eve', azp: 'app-1', groups: ['a'] }),
    );
    expect(result.status).toBe(200);
    const claims = JSON.parse(upstream.requests.at(-1)?.headers['x-user-claims'] as string);
    expect(claims).toEqual({ sub: 'idp-user', email: 'e@example.com', username: 'eve', client_id: 'app-1' });
  });

  it.each([
    [
      'alg none',
      async () =>
        `${b64({ alg: 'none', kid: idp.keys[0]?.kid })}.${b64({ sub: 'x', email: 'x', iss: idp.issuer, aud: 'gateway', exp: 9e9 })}.`,
    ],
    [
      'HS256 signed with the public key',
      async () => {
        const input = `${b64({ alg: 'HS256', kid: idp.keys[0]?.kid })}.${b64({ sub: 'x', email: 'x', iss: idp.issuer, aud: 'gateway', exp: 9e9 })}`;
        const publicPem = JSON.stringify(idp.keys[0]?.jwk);
        return `${input}.${createHmac('sha256', publicPem).update(input).digest('base64url')}`;
      },
    ],
    ['an unknown kid', () => idp.mint({ email: 'x' }, { kid: 'not-published' })],
    [
      'a foreign key under a published kid',
      () =>
        idp.mint(
          { email: 'x' },
          {
            key: createPrivateKey(
              generateKeyPairSync('rsa', {
                modulusLength: 2048,
                privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
                publicKeyEncoding: { type: 'spki', format: 'pem' },
              }).privateKey,
            ),
          },
        ),
    ],
    ['an expired token', () => idp.mint({ email: 'x', exp: Math.floor(Date.now() / 1000) - 120 })],
    ['a wrong issuer', () => idp.mint({ email: 'x', iss: 'https://evil.test/' })],
    ['a wrong audience', () => idp.mint({ email: 'x', aud: 'someone-else' })],
  ])('refuses %s with 401 invalid_credentials', async (_name, make) => {
    const result = await call(await make());
    expect(result).toEqual({
      status: 401,
      code: 'invalid_credentials',
      challenge: expect.stringContaining('error="invalid_token"'),
    });
  });

  it('refuses a token without a required claim with 401 missing_required_claim', async () => {
    expect(await call(await idp.mint({}))).toMatchObject({ status: 401, code: 'missing_required_claim' });
  });

  it('picks up a key added at the identity provider', async () => {
    const fetchesBefore = idp.fetches();
    const added = idp.addKey();
    const token = await idp.mint({ email: 'new@example.com' }, { kid: added.kid, key: added.privateKey });
    clock += 30_000; // one refetch per 30 s cooldown: earlier tests asked for unknown kids
    expect((await call(token)).status).toBe(200);
    expect(idp.fetches()).toBe(fetchesBefore + 1);
  });
});

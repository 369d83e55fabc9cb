import { identityProvider, recordingUpstream, setup } from './support';

// An identity provider that is down is not the caller's fault: tokens the gateway cannot check
// get 503 identity_provider_unavailable with retry-after, and once the provider is back the
// gateway picks its keys up within a second or two (retries back off from 1 s), not 30 s later.

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
      keySet: { now: () => clock, cooldownMs: 30_000 },
    },
    mcpServers: [{ slug: 'tools', url: `${upstream.url}/mcp`, user_identity_forwarding: { method: 'claims_header' } }],
  });
});

afterAll(async () => {
  await gateway.close();
  await upstream.close();
  await idp.close();
});

async function call(token: string) {
  const response = await fetch(`${gateway.url}/mcp/tools`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
  });
  const body = (await response.json()) as { error?: { code: string } };
  return { status: response.status, code: body.error?.code, retryAfter: response.headers.get('retry-after') };
}

describe('an identity-provider outage', () => {
  it('is 503 identity_provider_unavailable with retry-after, and recovery takes seconds, not 30', async () => {
    const token = await idp.mint();
    idp.outage.down = true;
    // Never fetched yet, the provider is down.
    expect(await call(token)).toEqual({ status: 503, code: 'identity_provider_unavailable', retryAfter: '1' });
    const fetchesAfterFirst = idp.fetches();
    // Within the first second no new fetch is tried; the answer stays 503.
    clock += 500;
    expect(await call(token)).toEqual({ status: 503, code: 'identity_provider_unavailable', retryAfter: '1' });
    expect(idp.fetches()).toBe(fetchesAfterFirst);
    // After 1 s one more try, still down: the next wait doubles.
    clock += 500;
    expect(await call(token)).toEqual({ status: 503, code: 'identity_provider_unavailable', retryAfter: '2' });
    expect(idp.fetches()).toBe(fetchesAfterFirst + 1);
    // The provider is back: within 2 s the token is accepted.
    idp.outage.down = false;
    clock += 2_000;
    expect((await call(token)).status).toBe(200);
  });

  it('keeps accepting known keys during an outage, and a key the provider added is 503 until it is back', async () => {
    const known = await idp.mint();
    expect((await call(known)).status).toBe(200);
    const added = idp.addKey();
    const rotated = await idp.mint({}, { kid: added.kid, key: added.privateKey });
    idp.outage.down = true;
    clock += 30_000; // past the cooldown of the last successful fetch
    expect(await call(rotated)).toEqual({ status: 503, code: 'identity_provider_unavailable', retryAfter: '1' });
    expect((await call(known)).status).toBe(200);
    // A successful fetch reset the back-off: the first retry is 1 s again.
    idp.outage.down = false;
    clock += 1_000;
    expect((await call(rotated)).status).toBe(200);
    // A kid the provider does not publish, with the provider up, is still 401.
    const stranger = await idp.mint({}, { kid: 'not-published' });
    expect((await call(stranger)).status).toBe(401);
  });
});

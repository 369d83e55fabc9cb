import { createPrivateKey } from 'node:crypto';
import * as jose from 'jose';
import {
  IdentityProviderUnavailableError,
  RemoteKeySet,
  UnknownKeyError,
  parsePublicKeyBundle,
  verifyToken,
} from '../src';
import { listen, rsaPem } from './helpers';

const first = rsaPem();
const second = rsaPem();
const firstJwk = parsePublicKeyBundle(first.publicKey)[0]!;
const secondJwk = parsePublicKeyBundle(second.publicKey)[0]!;

/** An identity provider whose answer the test controls and whose fetches it counts. */
async function identityProvider() {
  const state = {
    fetches: 0,
    body: JSON.stringify({ keys: [firstJwk] }) as string,
    status: 200,
    hang: false,
    release: [] as (() => void)[],
  };
  const idp = await listen((_req, res) => {
    state.fetches++;
    const answer = () => res.writeHead(state.status, { 'content-type': 'application/json' }).end(state.body);
    if (state.hang) state.release.push(answer);
    else answer();
  });
  return { ...idp, state, jwksUri: `${idp.url}/jwks` };
}

function clock(start = 1_000_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

describe('RemoteKeySet', () => {
  it('fetches once and serves later lookups from its cache', async () => {
    const idp = await identityProvider();
    const keys = new RemoteKeySet({ jwksUri: idp.jwksUri });
    await keys.getKey(firstJwk.kid);
    await keys.getKey(firstJwk.kid);
    expect(idp.state.fetches).toBe(1);
    expect(keys.fetchCount).toBe(1);
    await idp.close();
  });

  it('refetches for an unknown kid at most once per cooldown, and picks up a key added at the provider', async () => {
    const idp = await identityProvider();
    const time = clock();
    const keys = new RemoteKeySet({ jwksUri: idp.jwksUri, now: time.now, cooldownMs: 30_000 });
    await keys.getKey(firstJwk.kid);
    time.advance(30_000);
    idp.state.body = JSON.stringify({ keys: [firstJwk, secondJwk] });
    await expect(keys.getKey(secondJwk.kid)).resolves.toBeDefined();
    expect(idp.state.fetches).toBe(2);
    await expect(keys.getKey('unknown')).rejects.toBeInstanceOf(UnknownKeyError);
    await expect(keys.getKey('unknown')).rejects.toBeInstanceOf(UnknownKeyError);
    expect(idp.state.fetches).toBe(2);
    time.advance(30_000);
    await expect(keys.getKey('unknown')).rejects.toBeInstanceOf(UnknownKeyError);
    expect(idp.state.fetches).toBe(3);
    await idp.close();
  });

  it('shares one fetch among concurrent lookups', async () => {
    const idp = await identityProvider();
    idp.state.hang = true;
    const keys = new RemoteKeySet({ jwksUri: idp.jwksUri });
    const lookups = Array.from({ length: 20 }, () => keys.getKey(firstJwk.kid));
    await new Promise<void>((resolve) => idp.server.once('request', () => setImmediate(resolve)));
    idp.state.release.forEach((answer) => answer());
    await Promise.all(lookups);
    expect(idp.state.fetches).toBe(1);
    await idp.close();
  });

  it('gives up on a provider that does not answer within the timeout', async () => {
    const idp = await identityProvider();
    idp.state.hang = true;
    const outcomes: string[] = [];
    const keys = new RemoteKeySet({ jwksUri: idp.jwksUri, timeoutMs: 50, onFetch: (o) => outcomes.push(o) });
    await expect(keys.getKey(firstJwk.kid)).rejects.toBeInstanceOf(IdentityProviderUnavailableError);
    expect(outcomes).toEqual(['error']);
    await idp.close();
  });

  it.each([
    ['an HTML page', '<html>maintenance</html>', 200],
    ['an empty object', '{}', 200],
    ['keys with a bad kty', JSON.stringify({ keys: [{ ...secondJwk, kty: 'EC' }] }), 200],
    ['keys with a broken modulus', JSON.stringify({ keys: [{ ...secondJwk, n: '!!' }] }), 200],
    ['keys with no exponent', JSON.stringify({ keys: [{ ...secondJwk, e: undefined }] }), 200],
    ['encryption keys only', JSON.stringify({ keys: [{ ...secondJwk, use: 'enc' }] }), 200],
    ['a server error', JSON.stringify({ keys: [secondJwk] }), 500],
  ])('keeps the last good keys when the provider answers %s', async (_what, body, status) => {
    const idp = await identityProvider();
    const time = clock();
    const keys = new RemoteKeySet({ jwksUri: idp.jwksUri, now: time.now });
    const good = await keys.getKey(firstJwk.kid);
    idp.state.body = body;
    idp.state.status = status;
    time.advance(11 * 60_000);
    await expect(keys.getKey(firstJwk.kid)).resolves.toBe(good);
    expect(idp.state.fetches).toBe(2);
    await idp.close();
  });

  it('refuses a key set larger than the response limit', async () => {
    const idp = await identityProvider();
    idp.state.body = JSON.stringify({ keys: [firstJwk], padding: 'x'.repeat(4096) });
    const keys = new RemoteKeySet({ jwksUri: idp.jwksUri, maxResponseBytes: 1024 });
    await expect(keys.getKey(firstJwk.kid)).rejects.toBeInstanceOf(IdentityProviderUnavailableError);
    await idp.close();
  });

  it('verifies identity-provider tokens end to end through verifyToken', async () => {
    const idp = await identityProvider();
    const keys = new RemoteKeySet({ jwksUri: idp.jwksUri });
    const jwt = await new jose.SignJWT({ sub: 'u1' })
      .setProtectedHeader({ alg: 'RS256', kid: firstJwk.kid })
      .setExpirationTime('5m')
      .sign(createPrivateKey(first.privateKey));
    await expect(verifyToken(jwt, { keys })).resolves.toMatchObject({ payload: { sub: 'u1' } });
    await idp.close();
  });

  it('while the provider is down, backs off from 1 s (doubling, capped at the cooldown) and says when to retry', async () => {
    const idp = await identityProvider();
    idp.state.status = 503;
    const time = clock();
    const keys = new RemoteKeySet({ jwksUri: idp.jwksUri, now: time.now, cooldownMs: 5_000 });
    const retryAfter = async (kid = firstJwk.kid) => {
      const error = (await keys.getKey(kid).catch((e: unknown) => e)) as IdentityProviderUnavailableError;
      expect(error).toBeInstanceOf(IdentityProviderUnavailableError);
      expect([error.status, error.code]).toEqual([503, 'identity_provider_unavailable']);
      return error.retryAfterSeconds;
    };
    expect(await retryAfter()).toBe(1);
    expect(idp.state.fetches).toBe(1);
    // The waits between tries: 1 s, 2 s, 4 s, then the 5 s cooldown.
    for (const [wait, next] of [
      [1_000, 2],
      [2_000, 4],
      [4_000, 5],
      [5_000, 5],
    ] as const) {
      time.advance(wait - 1);
      expect(await retryAfter()).toBe(1);
      const fetches = idp.state.fetches;
      time.advance(1);
      expect(await retryAfter()).toBe(next);
      expect(idp.state.fetches).toBe(fetches + 1);
    }
    // Back: the next try after the wait succeeds, and a success resets the back-off.
    idp.state.status = 200;
    time.advance(5_000);
    await expect(keys.getKey(firstJwk.kid)).resolves.toBeDefined();
    // A kid the cached set lacks makes it try again: down again, the wait starts at 1 s.
    idp.state.status = 503;
    time.advance(5_000);
    expect(await retryAfter('rotated')).toBe(1);
    await idp.close();
  });

  it('answers an unknown kid with unknown_key when the provider is up, and identity_provider_unavailable when not', async () => {
    const idp = await identityProvider();
    const time = clock();
    const keys = new RemoteKeySet({ jwksUri: idp.jwksUri, now: time.now });
    await keys.getKey(firstJwk.kid);
    time.advance(30_000);
    await expect(keys.getKey('unknown')).rejects.toBeInstanceOf(UnknownKeyError);
    idp.state.status = 500;
    time.advance(30_000);
    await expect(keys.getKey('unknown')).rejects.toBeInstanceOf(IdentityProviderUnavailableError);
    // A known key still verifies during the outage.
    await expect(keys.getKey(firstJwk.kid)).resolves.toBeDefined();
    await idp.close();
  });

  it('shares one fetch among concurrent lookups while retrying after an outage', async () => {
    const idp = await identityProvider();
    idp.state.status = 503;
    const time = clock();
    const keys = new RemoteKeySet({ jwksUri: idp.jwksUri, now: time.now });
    await expect(keys.getKey(firstJwk.kid)).rejects.toBeInstanceOf(IdentityProviderUnavailableError);
    idp.state.status = 200;
    idp.state.hang = true;
    time.advance(1_000);
    const lookups = Array.from({ length: 20 }, () => keys.getKey(firstJwk.kid));
    await new Promise<void>((resolve) => idp.server.once('request', () => setImmediate(resolve)));
    idp.state.release.forEach((answer) => answer());
    await Promise.all(lookups);
    expect(idp.state.fetches).toBe(2);
    await idp.close();
  });

  it('validates firstRetryMs', () => {
    expect(() => new RemoteKeySet({ jwksUri: 'https://idp.test/jwks', firstRetryMs: 0 })).toThrow(/firstRetryMs/);
  });
});

import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { MAX_TOKEN_BYTES, verifyToken, type VerifyTokenOptions } from '../../src/core/verify';
import type { KeyResolver } from '../../src/core/key-sets';
import { rsaKey, segment, token } from './keys';

const NOW = 1_700_000_000;
const key = () => rsaKey().publicKey;
const kids: (string | undefined)[] = [];
const keys = (k: () => KeyObject = key): KeyResolver => ({
  getKey: async (kid) => {
    kids.push(kid);
    return k();
  },
});
const options = (extra: Partial<VerifyTokenOptions> = {}): VerifyTokenOptions => ({
  keys: keys(),
  now: () => NOW,
  ...extra,
});
const header = { alg: 'RS256', kid: 'k1' };
const claims = (extra: Record<string, unknown> = {}) => ({ sub: 'alice', exp: NOW + 60, ...extra });

async function refused(promise: Promise<unknown>, code: string, message?: string | RegExp) {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e as { code?: string; message: string },
  );
  expect(error).toBeDefined();
  expect(error?.code).toBe(code);
  if (message !== undefined)
    expect(error?.message).toEqual(typeof message === 'string' ? message : expect.stringMatching(message));
}

beforeEach(() => (kids.length = 0));

describe('verifyToken: algorithms option', () => {
  it('refuses a list with anything but RS256, RS384, RS512, naming it', async () => {
    await expect(
      verifyToken(token(header, claims()), options({ algorithms: ['RS256', 'HS256' as never] })),
    ).rejects.toThrow(new TypeError('algorithms may only contain RS256, RS384 or RS512, not "HS256".'));
  });
  it('accepts RS256 alone by default and refuses RS384 then', async () => {
    await expect(verifyToken(token(header, claims()), options())).resolves.toBeDefined();
    await refused(
      verifyToken(token({ alg: 'RS384' }, claims()), options()),
      'algorithm_not_allowed',
      'The token algorithm "RS384" is not allowed.',
    );
  });
  it('verifies RS384 and RS512 with their own hash when allowed', async () => {
    const all = { algorithms: ['RS256', 'RS384', 'RS512'] as ('RS256' | 'RS384' | 'RS512')[] };
    for (const alg of ['RS384', 'RS512']) {
      const result = await verifyToken(token({ alg }, claims()), options(all));
      expect(result.header).toEqual({ alg });
    }
    // an RS384 header over an RS256 signature does not verify
    const t = token(header, claims()).split('.');
    const forged = `${segment({ alg: 'RS384' })}.${t[1]}.${t[2]}`;
    await refused(verifyToken(forged, options(all)), 'invalid_signature');
  });
  it('shortens a long refused alg to 16 characters in the message', async () => {
    await refused(
      verifyToken(token({ alg: 'ABCDEFGHIJKLMNOPQRSTUVWXYZ' }, claims()), options()),
      'algorithm_not_allowed',
      'The token algorithm "ABCDEFGHIJKLMNOP" is not allowed.',
    );
    await refused(verifyToken(token({ alg: 'none' }, claims()), options()), 'algorithm_not_allowed');
  });
});

describe('verifyToken: shape', () => {
  it('refuses an empty or non-string token', async () => {
    await refused(verifyToken('', options()), 'malformed_token', 'The token is empty.');
    await refused(verifyToken(42 as unknown as string, options()), 'malformed_token', 'The token is empty.');
  });
  it('refuses more than MAX_TOKEN_BYTES characters, and parses exactly that many', async () => {
    expect(MAX_TOKEN_BYTES).toBe(16384);
    const at = 'a'.repeat(MAX_TOKEN_BYTES);
    await refused(verifyToken(at, options()), 'malformed_token', 'The token does not have three segments.');
    await refused(verifyToken(`${at}a`, options()), 'token_too_large', 'The token is longer than 16384 bytes.');
  });
  it('needs exactly three segments', async () => {
    for (const t of ['a.b', 'a.b.c.d', 'abc'])
      await refused(verifyToken(t, options()), 'malformed_token', 'The token does not have three segments.');
  });
  it('refuses a header or payload that is not base64url, JSON or an object', async () => {
    const p = segment(claims());
    const h = segment(header);
    await refused(verifyToken(`.${p}.sig`, options()), 'malformed_token', "The token's header is not base64url.");
    await refused(verifyToken(`a+b.${p}.sig`, options()), 'malformed_token', "The token's header is not base64url.");
    await refused(
      verifyToken(`${segment('{x')}.${p}.sig`, options()),
      'malformed_token',
      "The token's header is not JSON.",
    );
    for (const v of ['[]', 'null', '1', '"s"'])
      await refused(
        verifyToken(`${segment(v)}.${p}.sig`, options()),
        'malformed_token',
        "The token's header is not a JSON object.",
      );
    await refused(verifyToken(`${h}..sig`, options()), 'malformed_token', "The token's payload is not base64url.");
    await refused(
      verifyToken(`${h}.${segment('[1]')}.sig`, options()),
      'malformed_token',
      "The token's payload is not a JSON object.",
    );
  });
  it('refuses a header without a string alg, with a non-string kid, or with crit', async () => {
    await refused(
      verifyToken(token({ typ: 'JWT' }, claims()), options()),
      'malformed_token',
      'The token header has no "alg".',
    );
    await refused(
      verifyToken(token({ alg: 7 }, claims()), options()),
      'malformed_token',
      'The token header has no "alg".',
    );
    await refused(
      verifyToken(token({ alg: 'RS256', kid: 5 }, claims()), options()),
      'malformed_token',
      'The token header "kid" is not a string.',
    );
    await refused(
      verifyToken(token({ alg: 'RS256', crit: ['exp'] }, claims()), options()),
      'malformed_token',
      'The token header has unsupported "crit" extensions.',
    );
    expect(kids).toEqual([]);
  });
  it('refuses an empty or non-base64url signature before resolving a key', async () => {
    const [h, p] = token(header, claims()).split('.');
    await refused(verifyToken(`${h}.${p}.`, options()), 'malformed_token', "The token's signature is not base64url.");
    await refused(
      verifyToken(`${h}.${p}.ab/c`, options()),
      'malformed_token',
      "The token's signature is not base64url.",
    );
    expect(kids).toEqual([]);
  });
});

describe('verifyToken: key and signature', () => {
  it('resolves the key by kid, or with no kid', async () => {
    await verifyToken(token(header, claims()), options());
    await verifyToken(token({ alg: 'RS256' }, claims()), options());
    expect(kids).toEqual(['k1', undefined]);
  });
  it('refuses a key that is not RSA', async () => {
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey;
    await refused(
      verifyToken(token(header, claims()), options({ keys: keys(() => ec) })),
      'invalid_signature',
      'The key does not fit the token algorithm.',
    );
  });
  it('refuses a signature made with another key', async () => {
    await refused(
      verifyToken(token(header, claims(), rsaKey('b').privateKey), options()),
      'invalid_signature',
      'The token signature does not verify.',
    );
  });
  it('returns the header and payload', async () => {
    const payload = claims({ scope: 'x' });
    await expect(verifyToken(token(header, payload), options())).resolves.toEqual({ header, payload });
  });
});

describe('verifyToken: claims', () => {
  const check = (payload: Record<string, unknown>, extra: Partial<VerifyTokenOptions> = {}) =>
    verifyToken(token(header, payload), options(extra));

  it('needs a finite numeric exp', async () => {
    for (const exp of [undefined, '9999999999'])
      await refused(check(claims({ exp })), 'token_expired', 'The token has no numeric "exp".');
    const t = token(header, '{"exp":1e400}');
    await refused(verifyToken(t, options()), 'token_expired', 'The token has no numeric "exp".');
  });
  it('expires at exp + tolerance (30 s by default)', async () => {
    await expect(check(claims({ exp: NOW - 29 }))).resolves.toBeDefined();
    await refused(check(claims({ exp: NOW - 30 })), 'token_expired', 'The token has expired.');
    await expect(check(claims({ exp: NOW + 1 }), { clockToleranceSeconds: 0 })).resolves.toBeDefined();
    await refused(check(claims({ exp: NOW }), { clockToleranceSeconds: 0 }), 'token_expired');
  });
  it('uses the system clock without `now`', async () => {
    const now = Math.floor(Date.now() / 1000);
    const opts = { keys: keys(), clockToleranceSeconds: 0 };
    await expect(verifyToken(token(header, { exp: now + 100 }), opts)).resolves.toBeDefined();
    await refused(verifyToken(token(header, { exp: now - 100 }), opts), 'token_expired');
    await refused(verifyToken(token(header, { exp: now + 100, nbf: now + 50 }), opts), 'token_not_yet_valid');
  });
  it('checks nbf and iat against now + tolerance', async () => {
    await expect(check(claims({ nbf: NOW + 30, iat: NOW + 30 }))).resolves.toBeDefined();
    await refused(check(claims({ nbf: NOW + 31 })), 'token_not_yet_valid', 'The token is not valid yet ("nbf").');
    await refused(check(claims({ nbf: String(NOW) })), 'token_not_yet_valid', 'The token is not valid yet ("nbf").');
    await refused(
      check(claims({ iat: NOW + 31 })),
      'token_not_yet_valid',
      'The token was issued in the future ("iat").',
    );
    await refused(
      check(claims({ iat: String(NOW) })),
      'token_not_yet_valid',
      'The token was issued in the future ("iat").',
    );
    await refused(check(claims({ nbf: NOW + 1 }), { clockToleranceSeconds: 0 }), 'token_not_yet_valid');
    await expect(check(claims({ nbf: NOW, iat: NOW }), { clockToleranceSeconds: 0 })).resolves.toBeDefined();
  });
  it('checks iss against one issuer or a list', async () => {
    await expect(check(claims({ iss: 'a' }), { issuer: 'a' })).resolves.toBeDefined();
    await expect(check(claims({ iss: 'b' }), { issuer: ['a', 'b'] })).resolves.toBeDefined();
    await expect(check(claims({ iss: 'zzz' }))).resolves.toBeDefined();
    await refused(
      check(claims({ iss: 'c' }), { issuer: ['a', 'b'] }),
      'issuer_mismatch',
      'The token was issued by another issuer.',
    );
    await refused(check(claims({ iss: 'ab' }), { issuer: 'a' }), 'issuer_mismatch');
    await refused(check(claims({ iss: ['a'] }), { issuer: 'a' }), 'issuer_mismatch');
    await refused(check(claims(), { issuer: 'a' }), 'issuer_mismatch');
  });
  it('checks aud (a string or a list) against one audience or a list', async () => {
    await expect(check(claims({ aud: 'x' }), { audience: 'x' })).resolves.toBeDefined();
    await expect(check(claims({ aud: ['y', 'x'] }), { audience: 'x' })).resolves.toBeDefined();
    await expect(check(claims({ aud: 'y' }), { audience: ['x', 'y'] })).resolves.toBeDefined();
    await expect(check(claims({ aud: 'nobody' }))).resolves.toBeDefined();
    await refused(
      check(claims({ aud: 'z' }), { audience: 'x' }),
      'audience_mismatch',
      'The token is meant for another audience.',
    );
    await refused(check(claims({ aud: ['y'] }), { audience: 'x' }), 'audience_mismatch');
    await refused(check(claims({ aud: { x: 1 } }), { audience: 'x' }), 'audience_mismatch');
    await refused(check(claims(), { audience: 'x' }), 'audience_mismatch');
  });
  it('needs each required claim to be neither absent nor null', async () => {
    await expect(check(claims({ a: 0, b: false, c: '' }), { requiredClaims: ['a', 'b', 'c'] })).resolves.toBeDefined();
    await refused(
      check(claims({ a: null }), { requiredClaims: ['a'] }),
      'missing_required_claim',
      'The token has no "a" claim, which is required.',
    );
    await refused(
      check(claims({ a: 1 }), { requiredClaims: ['a', 'b'] }),
      'missing_required_claim',
      'The token has no "b" claim, which is required.',
    );
  });
});

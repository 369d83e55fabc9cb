import { createPrivateKey, generateKeyPairSync } from 'node:crypto';
import * as jose from 'jose';
import { LocalKeySet, MAX_TOKEN_BYTES, SigningKey, buildJwks, verifyToken, type VerifyTokenOptions } from '../src';
import { rsaPem } from './helpers';

// Each refusal is pinned to its error code AND message: the message reaches the client (401 body),
// and which check fired tells a malformed token from a forged one.

const pem = rsaPem();
const signingKey = SigningKey.fromPem(pem.privateKey);
const joseKey = createPrivateKey(pem.privateKey);
const keys = new LocalKeySet(buildJwks(signingKey, []));
const now = 1_800_000_000;
const options: VerifyTokenOptions = { keys, now: () => now };

const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');
const header = b64({ alg: 'RS256', kid: signingKey.kid });
const payload = b64({ exp: now + 300 });

async function sign(claims: jose.JWTPayload, protectedHeader: Partial<jose.JWTHeaderParameters> = {}): Promise<string> {
  return new jose.SignJWT({ exp: now + 300, ...claims })
    .setProtectedHeader({ alg: 'RS256', kid: signingKey.kid, ...protectedHeader })
    .sign(joseKey);
}

async function refusal(token: unknown, overrides: Partial<VerifyTokenOptions> = {}) {
  try {
    await verifyToken(token as string, { ...options, ...overrides });
  } catch (error) {
    const { code, message } = error as { code: string; message: string };
    return { code, message };
  }
  return { code: 'accepted' };
}

const malformed = (message: string) => ({ code: 'malformed_token', message });

describe('verifyToken refusals, by check', () => {
  it('refuses an empty or non-string token as empty', async () => {
    expect(await refusal('')).toEqual(malformed('The token is empty.'));
    expect(await refusal(undefined)).toEqual(malformed('The token is empty.'));
    expect(await refusal(42)).toEqual(malformed('The token is empty.'));
  });

  it('measures the size limit at the character: 16 KiB is parsed, one more is too large', async () => {
    expect(MAX_TOKEN_BYTES).toBe(16 * 1024);
    expect(await refusal('x'.repeat(MAX_TOKEN_BYTES))).toEqual(malformed('The token does not have three segments.'));
    expect(await refusal('x'.repeat(MAX_TOKEN_BYTES + 1))).toEqual({
      code: 'token_too_large',
      message: 'The token is longer than 16384 bytes.',
    });
  });

  it('names the segment that is not base64url, not JSON, or not a JSON object', async () => {
    expect(await refusal(`.${payload}.sig`)).toEqual(malformed("The token's header is not base64url."));
    expect(await refusal(`a+b.${payload}.sig`)).toEqual(malformed("The token's header is not base64url."));
    expect(await refusal(`${b64('x').slice(0, -1)}x.${payload}.sig`)).toEqual(
      malformed("The token's header is not JSON."),
    );
    for (const value of [null, 5, 'text', [{ alg: 'RS256' }]]) {
      expect(await refusal(`${b64(value)}.${payload}.sig`)).toEqual(
        malformed("The token's header is not a JSON object."),
      );
    }
    expect(await refusal(`${header}..sig`)).toEqual(malformed("The token's payload is not base64url."));
    expect(await refusal(`${header}.${b64([1])}.sig`)).toEqual(malformed("The token's payload is not a JSON object."));
  });

  it('refuses a signature segment that is empty or not base64url before any key is looked up', async () => {
    const resolver = { getKey: jest.fn(keys.getKey.bind(keys)) };
    expect(await refusal(`${header}.${payload}.`, { keys: resolver })).toEqual(
      malformed("The token's signature is not base64url."),
    );
    expect(await refusal(`${header}.${payload}.ab+c/d=`, { keys: resolver })).toEqual(
      malformed("The token's signature is not base64url."),
    );
    expect(resolver.getKey).not.toHaveBeenCalled();
  });

  it('explains a missing alg, a refused alg (truncated to 16 characters), a bad kid and crit', async () => {
    expect(await refusal(`${b64({ kid: 'k' })}.${payload}.sig`)).toEqual(malformed('The token header has no "alg".'));
    expect(await refusal(`${b64({ alg: 'RS384' + 'x'.repeat(40) })}.${payload}.sig`)).toEqual({
      code: 'algorithm_not_allowed',
      message: 'The token algorithm "RS384xxxxxxxxxxx" is not allowed.',
    });
    expect(await refusal(`${b64({ alg: 'RS256', kid: 7 })}.${payload}.sig`)).toEqual(
      malformed('The token header "kid" is not a string.'),
    );
    expect(await refusal(`${b64({ alg: 'RS256', crit: ['exp'] })}.${payload}.sig`)).toEqual(
      malformed('The token header has unsupported "crit" extensions.'),
    );
  });

  it('accepts a token without kid when the key set has one key', async () => {
    const token = await sign({ sub: 'u1' }, { kid: undefined });
    expect(JSON.parse(Buffer.from(token.split('.')[0] as string, 'base64url').toString())).not.toHaveProperty('kid');
    await expect(verifyToken(token, options)).resolves.toMatchObject({ payload: { sub: 'u1' } });
  });

  it('refuses a key that is not RSA, and a signature that does not verify, each with its own message', async () => {
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey;
    const token = await sign({ sub: 'u1' });
    expect(await refusal(token, { keys: { getKey: async () => ec } })).toEqual({
      code: 'invalid_signature',
      message: 'The key does not fit the token algorithm.',
    });
    const [h, p] = token.split('.') as [string, string];
    const other = await new jose.SignJWT({ exp: now + 300 })
      .setProtectedHeader({ alg: 'RS256', kid: signingKey.kid })
      .sign(createPrivateKey(rsaPem().privateKey));
    expect(await refusal(`${h}.${p}.${other.split('.')[2] as string}`)).toEqual({
      code: 'invalid_signature',
      message: 'The token signature does not verify.',
    });
  });

  it('explains a missing or past exp', async () => {
    expect(await refusal(await sign({ exp: undefined }))).toEqual({
      code: 'token_expired',
      message: 'The token has no numeric "exp".',
    });
    expect(await refusal(await sign({ exp: now - 30 }))).toEqual({
      code: 'token_expired',
      message: 'The token has expired.',
    });
  });

  it('accepts nbf and iat exactly at the clock tolerance and refuses one second beyond', async () => {
    expect(await refusal(await sign({ nbf: now + 30 }))).toEqual({ code: 'accepted' });
    expect(await refusal(await sign({ nbf: now + 31 }))).toEqual({
      code: 'token_not_yet_valid',
      message: 'The token is not valid yet ("nbf").',
    });
    expect(await refusal(await sign({ iat: now + 30 }))).toEqual({ code: 'accepted' });
    expect(await refusal(await sign({ iat: now + 31 }))).toEqual({
      code: 'token_not_yet_valid',
      message: 'The token was issued in the future ("iat").',
    });
  });

  it('refuses another audience with its message, also when aud holds non-strings', async () => {
    const token = await sign({ aud: [7, 'other'] as unknown as string[] });
    expect(await refusal(token, { audience: 'gateway' })).toEqual({
      code: 'audience_mismatch',
      message: 'The token is meant for another audience.',
    });
  });

  it('refuses a required claim that is absent, not only one that is null', async () => {
    expect(await refusal(await sign({}), { requiredClaims: ['sub'] })).toMatchObject({
      code: 'missing_required_claim',
    });
    expect(
      await refusal(await sign({ sub: null } as unknown as jose.JWTPayload), { requiredClaims: ['sub'] }),
    ).toMatchObject({
      code: 'missing_required_claim',
    });
  });

  it('rejects an algorithms option outside RS256, RS384 and RS512 with a message naming it', async () => {
    await expect(verifyToken(await sign({}), { ...options, algorithms: ['HS256' as never] })).rejects.toThrow(
      new TypeError('algorithms may only contain RS256, RS384 or RS512, not "HS256".'),
    );
  });
});

import { createHmac, createPrivateKey, createPublicKey } from 'node:crypto';
import * as jose from 'jose';
import {
  LocalKeySet,
  SigningKey,
  buildJwks,
  createIdentityTokenSigner,
  parsePublicKeyBundle,
  verifyToken,
  type VerifyTokenOptions,
} from '../src';
import { rsaPem } from './helpers';

const pem = rsaPem();
const signingKey = SigningKey.fromPem(pem.privateKey);
const joseKey = createPrivateKey(pem.privateKey);
const kid = signingKey.kid;
const keys = new LocalKeySet(buildJwks(signingKey, []));
const now = Math.floor(Date.now() / 1000);
const options: VerifyTokenOptions = { keys, issuer: 'https://idp.test/', audience: 'gateway', requiredClaims: ['sub'] };

const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

async function token(claims: jose.JWTPayload = {}, header: Partial<jose.JWTHeaderParameters> = {}): Promise<string> {
  return new jose.SignJWT({ sub: 'u1', iss: 'https://idp.test/', aud: 'gateway', iat: now, exp: now + 300, ...claims })
    .setProtectedHeader({ alg: 'RS256', kid, ...header })
    .sign(joseKey);
}

async function refusalCode(jwt: string, overrides: Partial<VerifyTokenOptions> = {}): Promise<string> {
  try {
    await verifyToken(jwt, { ...options, ...overrides });
  } catch (error) {
    return (error as { code: string }).code;
  }
  throw new Error('the token was accepted');
}

describe('verifyToken', () => {
  it('accepts a valid RS256 token made by jose', async () => {
    const { payload, header } = await verifyToken(await token({ email: 'a@example.com' }), options);
    expect(payload).toMatchObject({ sub: 'u1', email: 'a@example.com' });
    expect(header.kid).toBe(kid);
  });

  it.each(['none', 'None', 'NONE', 'nOnE'])('refuses alg %s', async (alg) => {
    const unsigned = `${b64({ alg, kid })}.${b64({ sub: 'u1', exp: now + 300 })}.`;
    expect(await refusalCode(unsigned)).toBe('algorithm_not_allowed');
    expect(await refusalCode(`${unsigned}c2ln`)).toBe('algorithm_not_allowed');
  });

  it('refuses HS256 signed with the RSA public key as the secret', async () => {
    const input = `${b64({ alg: 'HS256', kid })}.${b64({ sub: 'u1', iss: 'https://idp.test/', aud: 'gateway', exp: now + 300 })}`;
    for (const secret of [pem.publicKey, createPublicKey(pem.publicKey).export({ type: 'pkcs1', format: 'pem' })]) {
      const forged = `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;
      expect(await refusalCode(forged)).toBe('algorithm_not_allowed');
    }
  });

  it('refuses an RS384 token when only RS256 is allowed', async () => {
    const rs384 = await new jose.SignJWT({ sub: 'u1', exp: now + 60 })
      .setProtectedHeader({ alg: 'RS384', kid })
      .sign(joseKey);
    expect(await refusalCode(rs384)).toBe('algorithm_not_allowed');
  });

  it('refuses an unknown kid', async () => {
    expect(await refusalCode(await token({}, { kid: 'someone-else' }))).toBe('unknown_key');
  });

  it('refuses a token signed by another key under our kid', async () => {
    const other = createPrivateKey(rsaPem().privateKey);
    const forged = await new jose.SignJWT({ sub: 'u1', exp: now + 60 })
      .setProtectedHeader({ alg: 'RS256', kid })
      .sign(other);
    expect(await refusalCode(forged)).toBe('invalid_signature');
  });

  it('refuses a token whose payload was changed after signing', async () => {
    const [h, , s] = (await token()).split('.');
    expect(await refusalCode(`${h}.${b64({ sub: 'admin', exp: now + 300 })}.${s}`)).toBe('invalid_signature');
  });

  it('refuses expired tokens beyond the clock tolerance, and tokens with no exp', async () => {
    expect(await refusalCode(await token({ exp: now - 31 }))).toBe('token_expired');
    expect(await refusalCode(await token({ exp: undefined }))).toBe('token_expired');
    await expect(verifyToken(await token({ exp: now - 10 }), options)).resolves.toBeDefined();
  });

  it('refuses nbf and iat in the future beyond the tolerance', async () => {
    expect(await refusalCode(await token({ nbf: now + 120 }))).toBe('token_not_yet_valid');
    expect(await refusalCode(await token({ iat: now + 120 }))).toBe('token_not_yet_valid');
    await expect(verifyToken(await token({ nbf: now + 10 }), options)).resolves.toBeDefined();
  });

  it('refuses a wrong issuer or audience, and accepts an audience array containing ours', async () => {
    expect(await refusalCode(await token({ iss: 'https://evil.test/' }))).toBe('issuer_mismatch');
    expect(await refusalCode(await token({ aud: 'other' }))).toBe('audience_mismatch');
    await expect(verifyToken(await token({ aud: ['other', 'gateway'] }), options)).resolves.toBeDefined();
  });

  it('refuses a token without a required claim, naming it', async () => {
    await expect(verifyToken(await token({ sub: undefined }), options)).rejects.toMatchObject({
      code: 'missing_required_claim',
      claim: 'sub',
    });
  });

  it('refuses malformed tokens', async () => {
    const valid = await token();
    const [h, p, s] = valid.split('.');
    for (const malformed of [
      `${h}.${p}`,
      `${valid}.extra`,
      `${h}.${p}.${s}.x.y`,
      `!!!.${p}.${s}`,
      `${b64('just a string')}.${p}.${s}`,
      `${Buffer.from('{not json').toString('base64url')}.${p}.${s}`,
      `${b64({ alg: 'RS256', kid: 42 })}.${p}.${s}`,
      `${b64({ alg: 'RS256', kid, crit: ['exp'] })}.${p}.${s}`,
      '',
    ]) {
      expect(await refusalCode(malformed)).toBe('malformed_token');
    }
  });

  it('refuses tokens over 16 KiB before parsing them', async () => {
    expect(await refusalCode(await token({ padding: 'x'.repeat(16 * 1024) }))).toBe('token_too_large');
    expect(await refusalCode('a'.repeat(16 * 1024 + 1))).toBe('token_too_large');
  });

  it('never follows jku, x5u, jwk or x5c: keys come only from the key set', async () => {
    const attacker = rsaPem();
    const attackerJwk = parsePublicKeyBundle(attacker.publicKey)[0];
    const forged = await new jose.SignJWT({ sub: 'u1', iss: 'https://idp.test/', aud: 'gateway', exp: now + 60 })
      .setProtectedHeader({
        alg: 'RS256',
        kid: attackerJwk?.kid,
        jku: 'http://127.0.0.1:9/jwks',
        jwk: attackerJwk as jose.JWK,
      })
      .sign(createPrivateKey(attacker.privateKey));
    expect(await refusalCode(forged)).toBe('unknown_key');
  });

  it('verifies tokens from the gateway signer, with iss, aud, iat and exp it cannot lose to claims', async () => {
    const signer = createIdentityTokenSigner(signingKey);
    const jwt = signer.signIdentityToken(
      { sub: 'u1', iss: 'spoofed', aud: 'spoofed', exp: 1 },
      { audience: 'http://mcp.test/mcp', expiresInSeconds: 120, issuedAt: now },
    );
    const { payload } = await verifyToken(jwt, {
      keys,
      issuer: 'gateway-mcp-gateway',
      audience: 'http://mcp.test/mcp',
    });
    expect(payload).toEqual({
      sub: 'u1',
      iss: 'gateway-mcp-gateway',
      aud: 'http://mcp.test/mcp',
      iat: now,
      exp: now + 120,
    });
    expect(jose.decodeProtectedHeader(jwt)).toEqual({ alg: 'RS256', typ: 'JWT', kid });
  });

  it('rejects a configuration that allows non-RSA algorithms', async () => {
    await expect(verifyToken(await token(), { ...options, algorithms: ['HS256' as never] })).rejects.toThrow(TypeError);
  });
});

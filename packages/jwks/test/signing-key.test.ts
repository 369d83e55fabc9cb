import { createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { inspect } from 'node:util';
import * as jose from 'jose';
import {
  InvalidSigningKeyError,
  MissingSigningKeyError,
  SigningKey,
  buildJwks,
  loadSigningKey,
  parsePublicKeyBundle,
} from '../src';
import { rsaPem } from './helpers';

const pkcs8 = rsaPem(2048, 'pkcs8');
const pkcs1Pem = createPrivateKey(pkcs8.privateKey).export({ type: 'pkcs1', format: 'pem' }).toString();

function refusal(pem: string): InvalidSigningKeyError {
  try {
    SigningKey.fromPem(pem);
  } catch (error) {
    return error as InvalidSigningKeyError;
  }
  throw new Error('the key was accepted');
}

describe('SigningKey', () => {
  it('accepts PKCS#8 and PKCS#1 PEM and derives the same RFC 7638 kid from both', async () => {
    const a = SigningKey.fromPem(pkcs8.privateKey);
    const b = SigningKey.fromPem(pkcs1Pem);
    expect(a.kid).toBe(b.kid);
    expect(a.kid).toBe(await jose.calculateJwkThumbprint(a.publicJwk));
    expect(a.publicJwk).toEqual({ kty: 'RSA', n: expect.any(String), e: 'AQAB', kid: a.kid, use: 'sig', alg: 'RS256' });
  });

  it('refuses a 1024-bit RSA key, saying how many bits are needed', () => {
    const error = refusal(rsaPem(1024).privateKey);
    expect(error).toBeInstanceOf(InvalidSigningKeyError);
    expect(error.code).toBe('invalid_signing_key');
    expect(error.message).toBe('The signing key has 1024 bits; at least 2048 are required.');
  });

  it('refuses an EC key, saying an RSA key is required', () => {
    const ec = generateKeyPairSync('ec', {
      namedCurve: 'P-256',
      publicKeyEncoding: { type: 'spki', format: 'pem' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    });
    expect(refusal(ec.privateKey).message).toBe('The signing key is an EC key; an RSA key is required.');
  });

  it('refuses a public key, garbage and a truncated PEM with one-line messages free of key material', () => {
    const truncated = pkcs8.privateKey.slice(0, 200) + '\n-----END PRIVATE KEY-----\n';
    for (const [pem, expected] of [
      [pkcs8.publicKey, /is a public key/],
      ['not a key', /is not a PEM private key/],
      [truncated, /could not be parsed/],
    ] as const) {
      const error = refusal(pem);
      expect(error.message).toMatch(expected);
      expect(error.message).not.toContain('\n');
      expect(error.message).not.toMatch(/MII/);
    }
  });

  it('never prints its private key', () => {
    const key = SigningKey.fromPem(pkcs8.privateKey);
    const body = pkcs8.privateKey.split('\n')[1] as string;
    for (const printed of [String(key), JSON.stringify(key), inspect(key)]) {
      expect(printed).not.toContain(body);
      expect(printed).toContain('[redacted]');
    }
  });

  it('generates RSA-2048 keys that round-trip through PKCS#8 PEM', () => {
    const key = SigningKey.generate();
    expect(key.privateKey.asymmetricKeyDetails?.modulusLength).toBe(2048);
    expect(SigningKey.fromPem(key.toPkcs8Pem()).kid).toBe(key.kid);
  });
});

describe('published keys', () => {
  it('puts the current key first and de-duplicates previous keys by kid', () => {
    const current = SigningKey.fromPem(pkcs8.privateKey);
    const retired = rsaPem();
    const previous = parsePublicKeyBundle(`${retired.publicKey}\n${pkcs8.publicKey}`);
    const jwks = buildJwks(current, previous);
    expect(jwks.keys.map((k) => k.kid)).toEqual([current.kid, previous[0]?.kid]);
  });

  it('refuses a previous public key under 2048 bits', () => {
    expect(() => parsePublicKeyBundle(rsaPem(1024).publicKey)).toThrow('Previous public key #1 has 1024 bits');
  });
});

describe('loadSigningKey', () => {
  it('fails closed in production when jwt_header is in use and no key is set', () => {
    expect(() => loadSigningKey({ production: true, jwtHeaderInUse: true })).toThrow(MissingSigningKeyError);
  });

  it('generates an ephemeral key in development', () => {
    const loaded = loadSigningKey({ production: false, jwtHeaderInUse: true });
    expect(loaded.ephemeral).toBe(true);
    expect(loaded.jwks.keys[0]?.kid).toBe(loaded.key?.kid);
  });

  it('uses the configured key and publishes previous keys after it', () => {
    const retired = rsaPem();
    const loaded = loadSigningKey({
      privateKeyPem: pkcs8.privateKey,
      previousPublicKeysPem: retired.publicKey,
      production: true,
      jwtHeaderInUse: true,
    });
    expect(loaded.ephemeral).toBe(false);
    expect(loaded.jwks.keys).toHaveLength(2);
    expect(loaded.jwks.keys[0]?.kid).toBe(SigningKey.fromPem(pkcs8.privateKey).kid);
  });
});

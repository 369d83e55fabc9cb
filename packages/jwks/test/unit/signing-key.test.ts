import { createPrivateKey, createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import { inspect } from 'node:util';
import {
  MIN_RSA_BITS,
  SigningKey,
  buildJwks,
  loadSigningKey,
  parsePublicKeyBundle,
  rsaThumbprint,
  type PublicJwk,
} from '../../src/core/signing-key';
import { GATEWAY_TOKEN_ISSUER, createIdentityTokenSigner, type SignIdentityTokenOptions } from '../../src/core/signer';
import { rsaKey } from './keys';

const a = rsaKey('a');
const b = rsaKey('b');
const small = rsaKey('small', 1024);
const ecPem = generateKeyPairSync('ec', {
  namedCurve: 'P-256',
  publicKeyEncoding: { type: 'spki', format: 'pem' },
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
});
const pkcs1Public = createPublicKey(a.publicPem).export({ type: 'pkcs1', format: 'pem' }).toString();

function thrown(fn: () => unknown): { code?: string; message: string; name?: string } {
  try {
    fn();
  } catch (error) {
    return error as { code?: string; message: string };
  }
  throw new Error('nothing was thrown');
}

describe('rsaThumbprint', () => {
  it('is the RFC 7638 example thumbprint', () => {
    const n =
      '0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw';
    expect(rsaThumbprint(n, 'AQAB')).toBe('NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs');
  });
});

describe('SigningKey.fromPem', () => {
  it('parses PKCS#8 and PKCS#1 to the same key, kid and published JWK', () => {
    const key = SigningKey.fromPem(a.privatePem);
    const pkcs1 = createPrivateKey(a.privatePem).export({ type: 'pkcs1', format: 'pem' }).toString();
    expect(SigningKey.fromPem(pkcs1).kid).toBe(key.kid);
    const { n, e } = createPublicKey(a.publicPem).export({ format: 'jwk' });
    expect(key.publicJwk).toEqual({
      kty: 'RSA',
      n,
      e,
      kid: rsaThumbprint(n as string, e as string),
      use: 'sig',
      alg: 'RS256',
    });
    expect(key.kid).toBe(key.publicJwk.kid);
    expect(key.publicKey.export({ type: 'spki', format: 'pem' })).toBe(a.publicPem);
    expect(key.privateKey.type).toBe('private');
    expect(key.publicKey.type).toBe('public');
  });
  it.each([
    [42, 'The signing key is not a PEM private key (expected "-----BEGIN PRIVATE KEY-----").'],
    ['MIIEvQIBADANBg', 'The signing key is not a PEM private key (expected "-----BEGIN PRIVATE KEY-----").'],
    [a.publicPem, 'The signing key is a public key; an RSA private key is required.'],
    [pkcs1Public, 'The signing key is a public key; an RSA private key is required.'],
    [
      '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n',
      'The signing key could not be parsed as an unencrypted PEM private key (PKCS#1 or PKCS#8).',
    ],
    [ecPem.privateKey, 'The signing key is an EC key; an RSA key is required.'],
    [small.privatePem, 'The signing key has 1024 bits; at least 2048 are required.'],
  ])('refuses %#', (pem, message) => {
    const error = thrown(() => SigningKey.fromPem(pem as string));
    expect(error).toMatchObject({ code: 'invalid_signing_key', message });
  });
  it('requires 2048 bits', () => expect(MIN_RSA_BITS).toBe(2048));
  it('never prints the key', () => {
    const key = SigningKey.fromPem(a.privatePem);
    const text = `SigningKey(kid=${key.kid}, private key [redacted])`;
    expect(String(key)).toBe(text);
    expect(inspect(key)).toBe(text);
    expect(JSON.parse(JSON.stringify(key))).toEqual({ kid: key.kid, privateKey: '[redacted]' });
  });
  it('exports the private key as PKCS#8 PEM', () => {
    const key = SigningKey.fromPem(a.privatePem);
    expect(key.toPkcs8Pem()).toBe(a.privatePem);
  });
});

describe('SigningKey.generate', () => {
  it('makes a fresh 2048-bit RSA key', () => {
    const key = SigningKey.generate();
    expect(key.privateKey.asymmetricKeyDetails?.modulusLength).toBe(2048);
    expect(key.toPkcs8Pem()).toMatch(/^-----BEGIN PRIVATE KEY-----/);
  });
});

describe('parsePublicKeyBundle', () => {
  it('is empty for an empty or blank bundle', () => {
    expect(parsePublicKeyBundle('')).toEqual([]);
    expect(parsePublicKeyBundle(' \n')).toEqual([]);
  });
  it('parses SPKI and PKCS#1 public keys, in order', () => {
    const keys = parsePublicKeyBundle(`${b.publicPem}\n${pkcs1Public}`);
    expect(keys.map((k) => k.kid)).toEqual([
      SigningKey.fromPem(b.privatePem).kid,
      SigningKey.fromPem(a.privatePem).kid,
    ]);
  });
  it.each([
    ['junk', 'The previous public keys are not PEM public keys.'],
    [`${a.publicPem}${a.privatePem}`, 'Previous public key #2 is not a public key.'],
    ['-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----', 'Previous public key #1 could not be parsed.'],
    [ecPem.publicKey, 'Previous public key #1 is an EC key; an RSA key is required.'],
    [small.publicPem, 'Previous public key #1 has 1024 bits; at least 2048 are required.'],
  ])('refuses %#', (bundle, message) => {
    expect(thrown(() => parsePublicKeyBundle(bundle))).toMatchObject({ code: 'invalid_signing_key', message });
  });
  it('needs BEGIN and END to name the same block', () => {
    const body = a.publicPem.split('\n').slice(1, -2).join('\n');
    expect(() => parsePublicKeyBundle(`-----BEGIN PUBLIC KEY-----\n${body}\n-----END PRIVATE KEY-----`)).toThrow(
      'The previous public keys are not PEM public keys.',
    );
  });
});

describe('buildJwks', () => {
  const jwkA = () => SigningKey.fromPem(a.privatePem).publicJwk;
  const jwkB = () => SigningKey.fromPem(b.privatePem).publicJwk;
  it('puts the current key first and drops repeated kids, copying each', () => {
    const current = SigningKey.fromPem(a.privatePem);
    const previous: PublicJwk[] = [jwkB(), jwkA(), jwkB()];
    const { keys } = buildJwks(current, previous);
    expect(keys).toEqual([jwkA(), jwkB()]);
    expect(keys[0]).not.toBe(current.publicJwk);
    expect(keys[1]).not.toBe(previous[0]);
  });
  it('publishes only the previous keys without a current one', () => {
    expect(buildJwks(undefined, [jwkB()])).toEqual({ keys: [jwkB()] });
    expect(buildJwks(undefined, [])).toEqual({ keys: [] });
  });
});

describe('loadSigningKey', () => {
  it('parses the configured key and the previous keys', () => {
    const loaded = loadSigningKey({
      privateKeyPem: a.privatePem,
      previousPublicKeysPem: b.publicPem,
      production: true,
      jwtHeaderInUse: true,
    });
    expect(loaded.ephemeral).toBe(false);
    expect(loaded.key?.kid).toBe(SigningKey.fromPem(a.privatePem).kid);
    expect(loaded.jwks.keys.map((k) => k.kid)).toEqual([loaded.key?.kid, SigningKey.fromPem(b.privatePem).kid]);
  });
  it('refuses a bad configured key', () => {
    expect(() => loadSigningKey({ privateKeyPem: 'x', production: false, jwtHeaderInUse: false })).toThrow(
      'The signing key is not a PEM private key',
    );
  });
  it('fails closed in production with jwt_header and no key (a blank key is none)', () => {
    for (const privateKeyPem of [undefined, '', '  \n'])
      expect(thrown(() => loadSigningKey({ privateKeyPem, production: true, jwtHeaderInUse: true }))).toMatchObject({
        code: 'signing_key_required',
        message:
          'JWT_PRIVATE_KEY is not set: in production, jwt_header forwarding needs an RSA private key of at least 2048 bits (PEM).',
      });
  });
  it('generates an ephemeral key otherwise, still publishing the previous keys', () => {
    for (const [production, jwtHeaderInUse] of [
      [true, false],
      [false, true],
    ] as const) {
      const loaded = loadSigningKey({ previousPublicKeysPem: b.publicPem, production, jwtHeaderInUse });
      expect(loaded.ephemeral).toBe(true);
      expect(loaded.jwks.keys.map((k) => k.kid)).toEqual([loaded.key?.kid, SigningKey.fromPem(b.privatePem).kid]);
    }
  });
});

describe('loadSigningKey option checks', () => {
  it('needs an options object', () => {
    for (const options of [undefined, null, 'production', true])
      expect(() => loadSigningKey(options as never)).toThrow(
        new TypeError('loadSigningKey needs { production, jwtHeaderInUse, privateKeyPem? }.'),
      );
  });
  it('refuses an unknown option, naming the spelling to write or the options', () => {
    expect(() => loadSigningKey({ production: false, jwtHeaderInUse: false, private_key_pem: 'x' } as never)).toThrow(
      new TypeError('loadSigningKey has an unknown option "private_key_pem"; did you mean "privateKeyPem"?'),
    );
    expect(() => loadSigningKey({ production: false, jwtHeaderInUse: false, kid: 'x' } as never)).toThrow(
      new TypeError(
        'loadSigningKey has an unknown option "kid"; the options are privateKeyPem, previousPublicKeysPem, production, jwtHeaderInUse.',
      ),
    );
  });
  it.each(['production', 'jwtHeaderInUse'])('needs %s to be true or false', (name) => {
    for (const value of [undefined, 'true', 1, 0, null])
      expect(() => loadSigningKey({ production: false, jwtHeaderInUse: false, [name]: value } as never)).toThrow(
        new TypeError(`loadSigningKey ${name} must be true or false.`),
      );
  });
  it.each(['privateKeyPem', 'previousPublicKeysPem'])('needs %s to be a PEM string when given', (name) => {
    for (const value of [5, null, { pem: 'x' }, ['x']])
      expect(() => loadSigningKey({ production: false, jwtHeaderInUse: false, [name]: value } as never)).toThrow(
        new TypeError(`loadSigningKey ${name} must be a PEM string.`),
      );
  });
  it('publishes only the current key without previous keys (an empty bundle is none)', () => {
    for (const previousPublicKeysPem of [undefined, '']) {
      const loaded = loadSigningKey({
        privateKeyPem: a.privatePem,
        previousPublicKeysPem,
        production: true,
        jwtHeaderInUse: true,
      });
      expect(loaded.jwks).toEqual({ keys: [loaded.key?.publicJwk] });
      const ephemeral = loadSigningKey({ previousPublicKeysPem, production: false, jwtHeaderInUse: false });
      expect(ephemeral.jwks).toEqual({ keys: [ephemeral.key?.publicJwk] });
    }
  });
});

describe('createIdentityTokenSigner', () => {
  // Made in the tests, not when the file loads: mutation runs load the file once for all mutants.
  let key: SigningKey;
  let signer: ReturnType<typeof createIdentityTokenSigner>;
  beforeEach(() => {
    key = SigningKey.fromPem(a.privatePem);
    signer = createIdentityTokenSigner(key);
  });
  const decode = (s: string) => JSON.parse(Buffer.from(s, 'base64url').toString('utf8'));
  const sign = (options: unknown, claims: Record<string, unknown> = { sub: 'u' }) =>
    signer.signIdentityToken(claims, options as SignIdentityTokenOptions);

  it('signs RS256 with the kid, the claims and iss/aud/iat/exp that claims cannot override', () => {
    const token = sign(
      { audience: 'https://mcp', expiresInSeconds: 300, issuedAt: 1000 },
      { sub: 'u', iss: 'x', aud: 'y', exp: 1, iat: 2 },
    );
    const [h, p, s] = token.split('.') as [string, string, string];
    expect(signer.kid).toBe(key.kid);
    expect(decode(h)).toEqual({ alg: 'RS256', typ: 'JWT', kid: key.kid });
    expect(decode(p)).toEqual({ sub: 'u', iss: GATEWAY_TOKEN_ISSUER, aud: 'https://mcp', iat: 1000, exp: 1300 });
    expect(GATEWAY_TOKEN_ISSUER).toBe('gateway-mcp-gateway');
    expect(verify('sha256', Buffer.from(`${h}.${p}`), key.publicKey, Buffer.from(s, 'base64url'))).toBe(true);
  });
  it('issues at the current second by default; issuedAt 0 is allowed', () => {
    const before = Math.floor(Date.now() / 1000);
    const payload = decode(sign({ audience: 'a', expiresInSeconds: 1 }).split('.')[1] as string);
    const after = Math.floor(Date.now() / 1000);
    expect(payload.iat).toBeGreaterThanOrEqual(before);
    expect(payload.iat).toBeLessThanOrEqual(after);
    expect(payload.exp).toBe(payload.iat + 1);
    expect(decode(sign({ audience: 'a', expiresInSeconds: 1, issuedAt: 0 }).split('.')[1] as string).iat).toBe(0);
  });
  it.each([
    [undefined, 'signIdentityToken needs options: { audience: "https://mcp.example.com", expiresInSeconds: 300 }.'],
    [null, 'signIdentityToken needs options: { audience: "https://mcp.example.com", expiresInSeconds: 300 }.'],
    ['x', 'signIdentityToken needs options: { audience: "https://mcp.example.com", expiresInSeconds: 300 }.'],
    [
      { expiresInSeconds: 1 },
      'signIdentityToken: audience must be a non-empty string, such as "https://mcp.example.com".',
    ],
    [
      { audience: '', expiresInSeconds: 1 },
      'signIdentityToken: audience must be a non-empty string, such as "https://mcp.example.com".',
    ],
    [
      { audience: 'a', expiresInSeconds: 0 },
      'signIdentityToken: expiresInSeconds must be a whole number of seconds of at least 1, such as 300.',
    ],
    [
      { audience: 'a', expiresInSeconds: 1.5 },
      'signIdentityToken: expiresInSeconds must be a whole number of seconds of at least 1, such as 300.',
    ],
    [
      { audience: 'a', expiresInSeconds: 1, issuedAt: -1 },
      'signIdentityToken: issuedAt must be whole seconds since the epoch, or left out for now.',
    ],
    [
      { audience: 'a', expiresInSeconds: 1, issuedAt: 1.5 },
      'signIdentityToken: issuedAt must be whole seconds since the epoch, or left out for now.',
    ],
  ])('refuses options %j', (options, message) => {
    expect(() => sign(options)).toThrow(new TypeError(message));
  });
});

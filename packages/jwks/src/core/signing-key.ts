import { rejectUnknownOptions } from '@gw/options';
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { inspect } from 'node:util';
import { InvalidSigningKeyError, MissingSigningKeyError } from './errors';

/** Smallest RSA modulus the gateway accepts, in bits. */
export const MIN_RSA_BITS = 2048;

/** An RS256 public key as published: `kid` is its RFC 7638 thumbprint. */
export interface PublicJwk {
  kty: 'RSA';
  n: string;
  e: string;
  kid: string;
  use: 'sig';
  alg: 'RS256';
}

/** The published key set: `{ keys: [...] }`, current key first. */
export interface JsonWebKeySet {
  keys: PublicJwk[];
}

/** RFC 7638 thumbprint of an RSA key: SHA-256 over `{"e","kty","n"}` in that order, base64url. */
export function rsaThumbprint(n: string, e: string): string {
  return createHash('sha256').update(`{"e":"${e}","kty":"RSA","n":"${n}"}`).digest('base64url');
}

function describeKeyProblem(key: KeyObject): string | undefined {
  if (key.asymmetricKeyType !== 'rsa') {
    // Stryker disable next-line StringLiteral: parsed private and public keys always have an asymmetricKeyType.
    const type = String(key.asymmetricKeyType ?? 'unknown');
    return `is an ${type.toUpperCase()} key; an RSA key is required`;
  }
  // Stryker disable next-line OptionalChaining: a parsed RSA key always has asymmetricKeyDetails.
  const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
  if (bits < MIN_RSA_BITS) return `has ${bits} bits; at least ${MIN_RSA_BITS} are required`;
  return undefined;
}

/** Exports a parsed (never freshly generated) public key as a published JWK. */
function toPublicJwk(publicKey: KeyObject): PublicJwk {
  const { n, e } = publicKey.export({ format: 'jwk' });
  // Stryker disable next-line ConditionalExpression,LogicalOperator: only RSA keys get here (describeKeyProblem), and their JWK always has n and e.
  if (typeof n !== 'string' || typeof e !== 'string')
    // Stryker disable next-line StringLiteral: unreachable, as the line above says.
    throw new InvalidSigningKeyError('The key has no RSA modulus.');
  return { kty: 'RSA', n, e, kid: rsaThumbprint(n, e), use: 'sig', alg: 'RS256' };
}

/**
 * The gateway's RS256 signing key, parsed once into `KeyObject`s. Its `kid` is the RFC 7638
 * thumbprint of the public key. Printing it (string, JSON, `util.inspect`) never shows the key.
 */
export class SigningKey {
  /** RFC 7638 thumbprint of the public key. */
  readonly kid: string;
  /** The parsed private key. */
  readonly privateKey: KeyObject;
  /** The matching public key. */
  readonly publicKey: KeyObject;
  /** The public key as published in the JWKS. */
  readonly publicJwk: PublicJwk;

  private constructor(privateKey: KeyObject) {
    this.privateKey = privateKey;
    // Re-import the public half from PEM: exporting a freshly derived key object as a JWK has
    // deadlocked Node 20 during garbage collection.
    this.publicKey = createPublicKey(createPublicKey(privateKey).export({ type: 'spki', format: 'pem' }));
    this.publicJwk = toPublicJwk(this.publicKey);
    this.kid = this.publicJwk.kid;
  }

  /**
   * Parses a PEM RSA private key (PKCS#1 `RSA PRIVATE KEY` or PKCS#8 `PRIVATE KEY`) of at least
   * 2048 bits. Anything else throws {@link InvalidSigningKeyError} with a one-line reason.
   */
  static fromPem(pem: string): SigningKey {
    if (typeof pem !== 'string' || !pem.includes('-----BEGIN')) {
      throw new InvalidSigningKeyError(
        'The signing key is not a PEM private key (expected "-----BEGIN PRIVATE KEY-----").',
      );
    }
    if (/-----BEGIN (RSA )?PUBLIC KEY-----/.test(pem)) {
      throw new InvalidSigningKeyError('The signing key is a public key; an RSA private key is required.');
    }
    let privateKey: KeyObject;
    try {
      privateKey = createPrivateKey({ key: pem, format: 'pem' });
    } catch {
      throw new InvalidSigningKeyError(
        'The signing key could not be parsed as an unencrypted PEM private key (PKCS#1 or PKCS#8).',
      );
    }
    const problem = describeKeyProblem(privateKey);
    if (problem) throw new InvalidSigningKeyError(`The signing key ${problem}.`);
    return new SigningKey(privateKey);
  }

  /** Generates a fresh RSA-2048 key (as PEM, then parsed: see the constructor's note). */
  static generate(): SigningKey {
    const { privateKey } = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      publicKeyEncoding: { type: 'spki', format: 'pem' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    });
    return SigningKey.fromPem(privateKey);
  }

  /** The private key as PKCS#8 PEM, for writing it to a file. Handle the result as a secret. */
  toPkcs8Pem(): string {
    return this.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  }

  /** Never prints key material. */
  toString(): string {
    return `SigningKey(kid=${this.kid}, private key [redacted])`;
  }

  /** Never serialises key material: only the public JWK. */
  toJSON(): { kid: string; privateKey: '[redacted]' } {
    return { kid: this.kid, privateKey: '[redacted]' };
  }

  [inspect.custom](): string {
    return this.toString();
  }
}

const PEM_BLOCK = /-----BEGIN ([A-Z ]+)-----[\s\S]*?-----END \1-----/g;

/**
 * Parses a bundle of PEM public keys (SPKI `PUBLIC KEY` or PKCS#1 `RSA PUBLIC KEY`), such as
 * `JWT_PREVIOUS_PUBLIC_KEYS`, into published JWKs. Each key must be RSA of at least 2048 bits.
 */
export function parsePublicKeyBundle(pemBundle: string): PublicJwk[] {
  const blocks = pemBundle.match(PEM_BLOCK) ?? [];
  if (blocks.length === 0 && pemBundle.trim() !== '') {
    throw new InvalidSigningKeyError('The previous public keys are not PEM public keys.');
  }
  return blocks.map((block, index) => {
    if (!/-----BEGIN (RSA )?PUBLIC KEY-----/.test(block)) {
      throw new InvalidSigningKeyError(`Previous public key #${index + 1} is not a public key.`);
    }
    let key: KeyObject;
    try {
      key = createPublicKey({ key: block, format: 'pem' });
    } catch {
      throw new InvalidSigningKeyError(`Previous public key #${index + 1} could not be parsed.`);
    }
    const problem = describeKeyProblem(key);
    if (problem) throw new InvalidSigningKeyError(`Previous public key #${index + 1} ${problem}.`);
    return toPublicJwk(key);
  });
}

/** Builds the published key set: the current key first, then previous keys, de-duplicated by `kid`. */
export function buildJwks(current: SigningKey | undefined, previous: readonly PublicJwk[]): JsonWebKeySet {
  const keys: PublicJwk[] = [];
  const seen = new Set<string>();
  for (const jwk of current ? [current.publicJwk, ...previous] : previous) {
    if (seen.has(jwk.kid)) continue;
    seen.add(jwk.kid);
    keys.push({ ...jwk });
  }
  return { keys };
}

/** What decides the gateway's signing key at start-up. */
export interface LoadSigningKeyOptions {
  /** PEM private key, usually `JWT_PRIVATE_KEY`. Default: none. */
  privateKeyPem?: string;
  /** PEM bundle of retired public keys, usually `JWT_PREVIOUS_PUBLIC_KEYS`. Default: none. */
  previousPublicKeysPem?: string;
  /** Whether the gateway runs in production (`NODE_ENV=production`). Required. */
  production: boolean;
  /** Whether any MCP server uses `jwt_header` forwarding. Required. */
  jwtHeaderInUse: boolean;
}

/** The outcome of {@link loadSigningKey}. */
export interface LoadedSigningKey {
  /** The key to sign with; `undefined` never happens today but callers must fail closed on it. */
  key: SigningKey | undefined;
  /** True when the key was generated for this process only (development). */
  ephemeral: boolean;
  /** The key set to publish. */
  jwks: JsonWebKeySet;
}

/**
 * Applies the start-up rules of the signing key: a configured PEM is parsed (errors thrown);
 * with none, production with `jwt_header` in use fails closed ({@link MissingSigningKeyError});
 * otherwise an ephemeral key is generated (`ephemeral: true`: the caller warns loudly).
 */
export function loadSigningKey(options: LoadSigningKeyOptions): LoadedSigningKey {
  if (typeof options !== 'object' || options === null)
    throw new TypeError('loadSigningKey needs { production, jwtHeaderInUse, privateKeyPem? }.');
  rejectUnknownOptions(
    options,
    ['privateKeyPem', 'previousPublicKeysPem', 'production', 'jwtHeaderInUse'],
    'loadSigningKey',
  );
  for (const name of ['production', 'jwtHeaderInUse'] as const) {
    if (typeof options[name] !== 'boolean') throw new TypeError(`loadSigningKey ${name} must be true or false.`);
  }
  for (const name of ['privateKeyPem', 'previousPublicKeysPem'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'string')
      throw new TypeError(`loadSigningKey ${name} must be a PEM string.`);
  }
  const previous = options.previousPublicKeysPem ? parsePublicKeyBundle(options.previousPublicKeysPem) : [];
  const pem = options.privateKeyPem?.trim() ? options.privateKeyPem : undefined;
  if (pem) {
    const key = SigningKey.fromPem(pem);
    return { key, ephemeral: false, jwks: buildJwks(key, previous) };
  }
  if (options.production && options.jwtHeaderInUse) {
    throw new MissingSigningKeyError(
      'JWT_PRIVATE_KEY is not set: in production, jwt_header forwarding needs an RSA private key of at least 2048 bits (PEM).',
    );
  }
  const key = SigningKey.generate();
  return { key, ephemeral: true, jwks: buildJwks(key, previous) };
}

import { verify as verifySignature } from 'node:crypto';
import {
  AlgorithmNotAllowedError,
  AudienceMismatchError,
  InvalidSignatureError,
  IssuerMismatchError,
  MalformedTokenError,
  MissingRequiredClaimError,
  TokenExpiredError,
  TokenNotYetValidError,
  TokenTooLargeError,
} from './errors';
import type { KeyResolver } from './key-sets';

/** Tokens longer than this many characters are refused before they are parsed. */
export const MAX_TOKEN_BYTES = 16 * 1024;

const HASH_OF: ReadonlyMap<string, string> = new Map([
  ['RS256', 'sha256'],
  ['RS384', 'sha384'],
  ['RS512', 'sha512'],
]);
const BASE64URL = /^[A-Za-z0-9_-]*$/;

/** The token algorithms the gateway verifies: RSA signatures with SHA-256, SHA-384 or SHA-512. */
export type RsaAlgorithm = 'RS256' | 'RS384' | 'RS512';

/** Options of {@link verifyToken}. */
export interface VerifyTokenOptions {
  /** Where verification keys come from (a {@link RemoteKeySet} or {@link LocalKeySet}). */
  keys: KeyResolver;
  /** Accepted `iss` value(s). Default: not checked. */
  issuer?: string | readonly string[];
  /** Accepted `aud` value(s); the token's `aud` (string or array) must contain one. Default: not checked. */
  audience?: string | readonly string[];
  /** Accepted `alg` values, among RS256, RS384 and RS512. Default `["RS256"]`. */
  algorithms?: readonly RsaAlgorithm[];
  /** Claims the token must carry. Default `[]`. */
  requiredClaims?: readonly string[];
  /** Allowed clock skew for `exp`, `nbf` and `iat`, in seconds. Default 30. */
  clockToleranceSeconds?: number;
  /** Seconds clock, for tests. Default: now. */
  now?: () => number;
}

/** A token whose signature and claims were verified. */
export interface VerifiedToken {
  /** The JOSE header. */
  header: Record<string, unknown>;
  /** The claims. */
  payload: Record<string, unknown>;
}

function decodeJsonObject(segment: string, what: string): Record<string, unknown> {
  if (segment === '' || !BASE64URL.test(segment))
    throw new MalformedTokenError(`The token's ${what} is not base64url.`);
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
  } catch {
    throw new MalformedTokenError(`The token's ${what} is not JSON.`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new MalformedTokenError(`The token's ${what} is not a JSON object.`);
  }
  return value as Record<string, unknown>;
}

function asList(value: string | readonly string[] | undefined): readonly string[] | undefined {
  // Stryker disable next-line ConditionalExpression: without the first test, undefined still falls through to the `: value` branch and is returned.
  return value === undefined ? undefined : typeof value === 'string' ? [value] : value;
}

function checkAlgorithms(algorithms: readonly string[]): void {
  for (const alg of algorithms) {
    if (!HASH_OF.has(alg)) throw new TypeError(`algorithms may only contain RS256, RS384 or RS512, not "${alg}".`);
  }
}

/**
 * Verifies a JWS compact token: size (before parsing), shape, `alg` (never `none`, only the
 * allowed RSA algorithms, so an HMAC made with the public key as its secret is refused), the
 * signature with the key named by `kid`, then `exp` (required), `nbf`, `iat`, `iss`, `aud` and
 * the required claims. Keys come only from `options.keys`: `jku`, `x5u`, `jwk` and `x5c` in the
 * header are never followed. Throws a {@link TokenVerificationError} subclass on failure.
 */
export async function verifyToken(token: string, options: VerifyTokenOptions): Promise<VerifiedToken> {
  const algorithms = options.algorithms ?? ['RS256'];
  checkAlgorithms(algorithms);
  if (typeof token !== 'string' || token.length === 0) throw new MalformedTokenError('The token is empty.');
  if (token.length > MAX_TOKEN_BYTES)
    throw new TokenTooLargeError(`The token is longer than ${MAX_TOKEN_BYTES} bytes.`);
  const segments = token.split('.');
  if (segments.length !== 3) throw new MalformedTokenError('The token does not have three segments.');
  const [encodedHeader, encodedPayload, encodedSignature] = segments as [string, string, string];

  const header = decodeJsonObject(encodedHeader, 'header');
  const alg = header.alg;
  if (typeof alg !== 'string') throw new MalformedTokenError('The token header has no "alg".');
  // Stryker disable next-line ConditionalExpression,MethodExpression,StringLiteral: checkAlgorithms admits only RS256/RS384/RS512, so `none` in any case already fails `includes`; kept as an explicit guard.
  if (alg.toLowerCase() === 'none' || !algorithms.includes(alg as RsaAlgorithm)) {
    throw new AlgorithmNotAllowedError(`The token algorithm "${alg.slice(0, 16)}" is not allowed.`);
  }
  if (header.kid !== undefined && typeof header.kid !== 'string') {
    throw new MalformedTokenError('The token header "kid" is not a string.');
  }
  if (header.crit !== undefined) throw new MalformedTokenError('The token header has unsupported "crit" extensions.');
  const payload = decodeJsonObject(encodedPayload, 'payload');
  if (encodedSignature === '' || !BASE64URL.test(encodedSignature)) {
    throw new MalformedTokenError("The token's signature is not base64url.");
  }

  const key = await options.keys.getKey(header.kid as string | undefined);
  if (key.asymmetricKeyType !== 'rsa') throw new InvalidSignatureError('The key does not fit the token algorithm.');
  const signed = verifySignature(
    HASH_OF.get(alg) as string,
    Buffer.from(`${encodedHeader}.${encodedPayload}`),
    key,
    Buffer.from(encodedSignature, 'base64url'),
  );
  if (!signed) throw new InvalidSignatureError('The token signature does not verify.');

  checkClaims(payload, options);
  return { header, payload };
}

function checkClaims(payload: Record<string, unknown>, options: VerifyTokenOptions): void {
  const now = options.now ? options.now() : Math.floor(Date.now() / 1000);
  const tolerance = options.clockToleranceSeconds ?? 30;
  const { exp, nbf, iat } = payload;
  if (typeof exp !== 'number' || !Number.isFinite(exp)) throw new TokenExpiredError('The token has no numeric "exp".');
  if (now - tolerance >= exp) throw new TokenExpiredError('The token has expired.');
  if (nbf !== undefined && (typeof nbf !== 'number' || nbf > now + tolerance)) {
    throw new TokenNotYetValidError('The token is not valid yet ("nbf").');
  }
  if (iat !== undefined && (typeof iat !== 'number' || iat > now + tolerance)) {
    throw new TokenNotYetValidError('The token was issued in the future ("iat").');
  }
  const issuers = asList(options.issuer);
  if (issuers && !(typeof payload.iss === 'string' && issuers.includes(payload.iss))) {
    throw new IssuerMismatchError('The token was issued by another issuer.');
  }
  const audiences = asList(options.audience);
  if (audiences) {
    const aud = payload.aud;
    const tokenAudiences = typeof aud === 'string' ? [aud] : Array.isArray(aud) ? aud : [];
    // Stryker disable next-line ConditionalExpression: a non-string `a` is never in `audiences` (strings only), so the typeof test changes no outcome.
    if (!tokenAudiences.some((a) => typeof a === 'string' && audiences.includes(a))) {
      throw new AudienceMismatchError('The token is meant for another audience.');
    }
  }
  for (const claim of options.requiredClaims ?? []) {
    if (payload[claim] === undefined || payload[claim] === null) throw new MissingRequiredClaimError(claim);
  }
}

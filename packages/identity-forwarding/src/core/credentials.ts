import { AmbiguousCredentialsError } from './errors';

/** Credentials found on a request. */
export type PresentedCredential =
  | { kind: 'api_key'; value: string }
  | { kind: 'token'; value: string }
  /** An `Authorization` header with a scheme other than Bearer. */
  | { kind: 'unsupported_scheme' };

/** Headers that may carry a gateway API key (`x-gateway-` and its `x-portkey-` alias, and the Anthropic SDK's). */
const API_KEY_HEADERS: ReadonlySet<string> = new Set(['x-gateway-api-key', 'x-portkey-api-key', 'x-api-key']);
const BEARER = /^bearer +([^\s]+)$/i;
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/** True when a bearer value has the shape of a JWS compact token (three dot-separated segments). */
export function looksLikeJwt(value: string): boolean {
  return JWT_SHAPE.test(value);
}

/**
 * Reads the caller's credentials from the raw header list (Node keeps only the first
 * `Authorization` in `req.headers`, so duplicates are only visible here). Two `Authorization`
 * headers, or credentials in several places that disagree, throw {@link AmbiguousCredentialsError}.
 * A Bearer value shaped like a JWT is an identity-provider token; anything else is an API key.
 */
export function readCredential(rawHeaders: readonly string[]): PresentedCredential | undefined {
  let authorization: string | undefined;
  let value: string | undefined;
  let fromBearer = false;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = (rawHeaders[i] as string).toLowerCase();
    const isAuthorization = name === 'authorization';
    if (!isAuthorization && !API_KEY_HEADERS.has(name)) continue;
    const raw = (rawHeaders[i + 1] as string).trim();
    let candidate: string;
    if (isAuthorization) {
      if (authorization !== undefined)
        throw new AmbiguousCredentialsError('The request has two Authorization headers.');
      authorization = raw;
      const match = BEARER.exec(raw);
      if (!match) continue;
      candidate = match[1] as string;
      fromBearer = true;
    } else {
      if (raw === '') continue;
      candidate = raw;
    }
    if (value !== undefined && value !== candidate) {
      throw new AmbiguousCredentialsError('The request carries different credentials in several headers; send one.');
    }
    value = candidate;
  }
  if (value === undefined) return authorization !== undefined ? { kind: 'unsupported_scheme' } : undefined;
  return fromBearer && looksLikeJwt(value) ? { kind: 'token', value } : { kind: 'api_key', value };
}

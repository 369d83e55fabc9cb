import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** The SHA-256 of a token or code, hex: the only form in which the database holds one. */
export function digest(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

/** A fresh random token (256 bits, base64url). */
export function randomToken(): string {
  return randomBytes(32).toString('base64url');
}

/** Longest sealed value accepted (a page's hidden field or a cookie): larger input is refused unread. */
const MAX_SEALED_CHARS = 16 * 1024;

/**
 * Signs small JSON values for the browser to carry between pages (the pending authorization
 * request, the signed-in user): `base64url(JSON).base64url(HMAC-SHA256)` with an expiry inside.
 * Every instance sharing the secret opens what another sealed. The value is signed, not
 * encrypted: it never holds a secret.
 */
export class Sealer {
  constructor(private readonly key: Buffer) {
    if (!Buffer.isBuffer(key) || key.length < 32)
      throw new TypeError('The OAuth page secret must be at least 32 bytes.');
  }

  /** Seals `value` for `purpose`, valid for `ttlSeconds`. */
  seal(purpose: string, value: object, ttlSeconds: number, now = Date.now()): string {
    const body = Buffer.from(
      JSON.stringify({ p: purpose, exp: Math.floor(now / 1000) + ttlSeconds, v: value }),
    ).toString('base64url');
    return `${body}.${this.mac(body)}`;
  }

  /** Opens a value sealed for `purpose`; undefined when it is altered, expired or for another purpose. */
  open<T>(purpose: string, sealed: unknown, now = Date.now()): T | undefined {
    if (typeof sealed !== 'string' || sealed.length > MAX_SEALED_CHARS) return undefined;
    const dot = sealed.indexOf('.');
    if (dot <= 0) return undefined;
    const body = sealed.slice(0, dot);
    const given = Buffer.from(sealed.slice(dot + 1), 'base64url');
    const expected = Buffer.from(this.mac(body), 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    let parsed: { p?: unknown; exp?: unknown; v?: unknown };
    try {
      parsed = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as typeof parsed;
    } catch {
      return undefined;
    }
    if (parsed.p !== purpose || typeof parsed.exp !== 'number' || parsed.exp * 1000 <= now) return undefined;
    return parsed.v as T;
  }

  /** An HMAC of `parts` (a CSRF token bound to them). */
  mac(...parts: string[]): string {
    return createHmac('sha256', this.key).update(parts.join('\n')).digest('base64url');
  }

  /** Whether `given` is the HMAC of `parts`, compared in constant time. */
  checkMac(given: unknown, ...parts: string[]): boolean {
    if (typeof given !== 'string' || given.length > 100) return false;
    const a = Buffer.from(given);
    const b = Buffer.from(this.mac(...parts));
    return a.length === b.length && timingSafeEqual(a, b);
  }
}

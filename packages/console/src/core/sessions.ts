import { rejectUnknownOptions } from '@gw/options';
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** A signed-in console session, as its cookie carries it. */
export interface ConsoleSession {
  /** Who signed in, as the audit log names them (`console:admin-key`, `console:token:<sub>`). */
  actor: string;
  /** When the session ends, in ms since the epoch. */
  expiresAt: number;
  /** A random value naming this session (its CSRF token is derived from it). */
  nonce: string;
}

/** Options of {@link ConsoleSessions}. */
export interface ConsoleSessionOptions {
  /** The key that signs session cookies, 32 bytes; the same on every instance. Required. */
  secret: Buffer;
  /** How long a session lasts, in ms. Default 28800000 (8 hours). */
  lifetimeMs?: number;
  /** Millisecond clock. Default `Date.now`. */
  now?: () => number;
}

/** Most signed-out sessions remembered until they expire. */
const MAX_REVOKED = 10_000;

/**
 * Console sessions as signed cookies (HMAC-SHA256): no server-side store, so every instance that
 * shares the secret accepts them. The CSRF token of a session is an HMAC of its nonce, sent by the
 * page in a header on every state-changing request. Signing out remembers the nonce until the
 * session would have expired.
 */
export class ConsoleSessions {
  private readonly secret: Buffer;
  private readonly lifetimeMs: number;
  private readonly now: () => number;
  private readonly revoked = new Map<string, number>();

  constructor(options: ConsoleSessionOptions) {
    if (typeof options === 'object' && options !== null)
      rejectUnknownOptions(options, ['secret', 'lifetimeMs', 'now'], 'ConsoleSessions');
    if (options?.now !== undefined && typeof options.now !== 'function')
      throw new TypeError('ConsoleSessions now must be a function () => milliseconds since the epoch.');
    if (!Buffer.isBuffer(options?.secret) || options.secret.length < 32) {
      throw new TypeError(
        'ConsoleSessions needs { secret }: at least 32 bytes (derive it from GATEWAY_ENCRYPTION_KEY).',
      );
    }
    this.secret = options.secret;
    this.lifetimeMs = options.lifetimeMs ?? 8 * 60 * 60 * 1000;
    if (!Number.isInteger(this.lifetimeMs) || this.lifetimeMs <= 0)
      throw new TypeError('lifetimeMs must be a positive whole number of milliseconds, for example 28800000.');
    this.now = options.now ?? Date.now;
  }

  /** How long a session lasts, in seconds (the cookie's Max-Age). */
  get lifetimeSeconds(): number {
    return Math.floor(this.lifetimeMs / 1000);
  }

  /** A new session for `actor`, and the cookie value that carries it. */
  create(actor: string): { session: ConsoleSession; cookie: string } {
    const session = { actor, expiresAt: this.now() + this.lifetimeMs, nonce: randomBytes(16).toString('base64url') };
    const payload = Buffer.from(JSON.stringify([session.actor, session.expiresAt, session.nonce])).toString(
      'base64url',
    );
    return { session, cookie: `${payload}.${this.mac(`session:${payload}`)}` };
  }

  /** The session a cookie value carries, or undefined when it is forged, expired or signed out. */
  read(cookie: string | undefined): ConsoleSession | undefined {
    if (!cookie || cookie.length > 1024) return undefined;
    const dot = cookie.indexOf('.');
    if (dot === -1) return undefined;
    const payload = cookie.slice(0, dot);
    if (!this.equal(cookie.slice(dot + 1), this.mac(`session:${payload}`))) return undefined;
    let fields: unknown;
    try {
      fields = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      return undefined;
    }
    if (!Array.isArray(fields) || fields.length !== 3) return undefined;
    const [actor, expiresAt, nonce] = fields as [unknown, unknown, unknown];
    if (typeof actor !== 'string' || typeof expiresAt !== 'number' || typeof nonce !== 'string') return undefined;
    if (expiresAt <= this.now() || this.revoked.has(nonce)) return undefined;
    return { actor, expiresAt, nonce };
  }

  /** The CSRF token of a session. */
  csrfToken(session: ConsoleSession): string {
    return this.mac(`csrf:${session.nonce}`);
  }

  /** Whether `token` is the session's CSRF token (constant time). */
  checkCsrf(session: ConsoleSession, token: string | undefined): boolean {
    return typeof token === 'string' && this.equal(token, this.csrfToken(session));
  }

  /** Signs a session out: its cookie is refused from now on, on this instance. */
  revoke(session: ConsoleSession): void {
    const now = this.now();
    for (const [nonce, expiresAt] of this.revoked) if (expiresAt <= now) this.revoked.delete(nonce);
    if (this.revoked.size >= MAX_REVOKED) this.revoked.delete(this.revoked.keys().next().value as string);
    this.revoked.set(session.nonce, session.expiresAt);
  }

  private mac(text: string): string {
    return createHmac('sha256', this.secret).update(text).digest('base64url');
  }

  private equal(a: string, b: string): boolean {
    const left = Buffer.from(a);
    const right = Buffer.from(b);
    return left.length === right.length && timingSafeEqual(left, right);
  }
}

import { rejectUnknownOptions } from '@gw/options';
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import {
  ADMIN_ROLES,
  MemoryConsoleSessionStore,
  type AdminAccess,
  type AdminPrincipal,
  type AdminRole,
  type ConsoleSessionRow,
  type ConsoleSessionStore,
} from '@gw/catalog';

/** A signed-in console session, as a request sees it. */
export interface ConsoleSession {
  /** Who signed in, as the audit log names them (`console:admin-key:1a2b3c4d`, `console:token:<iss>#<sub>`). */
  actor: string;
  /** When the session ends at the latest (its lifetime, or its token's `exp`), in ms since the epoch. */
  expiresAt: number;
  /** When the session ends unless it is used before, in ms since the epoch. */
  idleExpiresAt: number;
  /** The random session id the cookie carries (its CSRF token is derived from it). Never stored. */
  id: string;
  /** What its admin may do. */
  role: AdminRole;
}

/** Options of {@link ConsoleSessions}. */
export interface ConsoleSessionOptions {
  /** The key that signs session cookies and CSRF tokens, 32 bytes; the same on every instance. Required. */
  secret: Buffer;
  /** How long a session lasts at most, in ms. Default 28800000 (8 hours). */
  lifetimeMs?: number;
  /** How long a session lasts without being used, in ms. Default 1800000 (30 minutes). */
  idleTimeoutMs?: number;
  /**
   * Where sessions live: a `DatabaseConsoleSessionStore` of `@gw/catalog` shares them (and their
   * sign-out) with every instance on the same database. Default: a `MemoryConsoleSessionStore`
   * (this process only).
   */
  store?: ConsoleSessionStore;
  /**
   * How long a session row read from the store is reused before it is read again, in ms (0 to
   * 1000): a sign-out on another instance is refused here within this time. Default 1000.
   */
  cacheMs?: number;
  /** Millisecond clock. Default `Date.now`. */
  now?: () => number;
}

/** Most session rows kept in the read cache. */
const MAX_CACHED = 1_000;
/** The longest wait before `last_seen_at` is written again, in ms (the idle lifetime is counted to within it). */
const MAX_TOUCH_INTERVAL_MS = 60_000;

const positiveWhole = (value: unknown): value is number =>
  typeof value === 'number' && Number.isInteger(value) && value > 0;

/**
 * Console sessions kept on the server: the cookie carries a random session id (with an HMAC, so a
 * forged cookie is refused without a look-up), the store keeps only the id's SHA-256 with the actor,
 * an HMAC of the fingerprint of the credential it signed in with, a token's `iss`/`sub`/`exp`,
 * the times, and whether it was signed out. Every read checks the row (reused for at most `cacheMs`),
 * the absolute and idle lifetimes, the token's `exp`, and that the credential still holds on this
 * instance (the same admin key, the same admin claim rule). The CSRF token of a session is an HMAC of
 * its id, sent by the page in a header on every state-changing request.
 */
export class ConsoleSessions {
  private readonly secret: Buffer;
  private readonly lifetimeMs: number;
  private readonly idleTimeoutMs: number;
  private readonly cacheMs: number;
  private readonly store: ConsoleSessionStore;
  private readonly now: () => number;
  private readonly cache = new Map<string, { row: ConsoleSessionRow; readAt: number }>();

  constructor(options: ConsoleSessionOptions) {
    if (typeof options === 'object' && options !== null)
      rejectUnknownOptions(
        options,
        ['secret', 'lifetimeMs', 'idleTimeoutMs', 'store', 'cacheMs', 'now'],
        'ConsoleSessions',
      );
    if (options?.now !== undefined && typeof options.now !== 'function')
      throw new TypeError('ConsoleSessions now must be a function () => milliseconds since the epoch.');
    if (!Buffer.isBuffer(options?.secret) || options.secret.length < 32) {
      throw new TypeError(
        'ConsoleSessions needs { secret }: at least 32 bytes (derive it from GATEWAY_ENCRYPTION_KEY).',
      );
    }
    this.secret = options.secret;
    this.lifetimeMs = options.lifetimeMs ?? 8 * 60 * 60 * 1000;
    if (!positiveWhole(this.lifetimeMs))
      throw new TypeError('lifetimeMs must be a positive whole number of milliseconds, for example 28800000.');
    this.idleTimeoutMs = options.idleTimeoutMs ?? 30 * 60 * 1000;
    if (!positiveWhole(this.idleTimeoutMs))
      throw new TypeError('idleTimeoutMs must be a positive whole number of milliseconds, for example 1800000.');
    this.cacheMs = options.cacheMs ?? 1_000;
    if (typeof this.cacheMs !== 'number' || !Number.isInteger(this.cacheMs) || this.cacheMs < 0 || this.cacheMs > 1_000)
      throw new TypeError('ConsoleSessions cacheMs must be a whole number of milliseconds from 0 to 1000.');
    const store = options.store;
    if (
      store !== undefined &&
      (typeof store !== 'object' ||
        store === null ||
        !['create', 'find', 'touch', 'revoke', 'recordSignIn'].every(
          (m) => typeof (store as unknown as Record<string, unknown>)[m] === 'function',
        ))
    )
      throw new TypeError(
        'ConsoleSessions store must be a ConsoleSessionStore, such as new DatabaseConsoleSessionStore(db) of @gw/catalog.',
      );
    this.store = store ?? new MemoryConsoleSessionStore();
    this.now = options.now ?? Date.now;
  }

  /** How long a session lasts at most, in seconds (the cookie's Max-Age). */
  get lifetimeSeconds(): number {
    return Math.floor(this.lifetimeMs / 1000);
  }

  /** Where the sessions live (sign-in events are written there too). */
  get sessionStore(): ConsoleSessionStore {
    return this.store;
  }

  /**
   * A new session for `principal` (who signed in, with the credential it used) from `address`,
   * stored (with its sign-in in the audit log), and the cookie value that carries it.
   */
  async create(principal: AdminPrincipal, address: string): Promise<{ session: ConsoleSession; cookie: string }> {
    const credential = principal.credential;
    if (!credential) throw new TypeError('A console session needs the credential its admin signed in with.');
    const now = this.now();
    const id = randomBytes(32).toString('base64url');
    const token = credential.kind === 'token' || credential.kind === 'oidc' ? credential : undefined;
    const expiresAt = Math.min(now + this.lifetimeMs, token?.expiresAt ?? Number.POSITIVE_INFINITY);
    const actor = `console:${principal.actor}`;
    const row: ConsoleSessionRow = {
      idHash: hashId(id),
      actor,
      credential: this.mac(`credential:${credential.fingerprint}`),
      tokenIssuer: token?.issuer ?? null,
      tokenSubject: token?.subject ?? null,
      tokenExpiresAt: token?.expiresAt ?? null,
      createdAt: now,
      lastSeenAt: now,
      expiresAt,
      revoked: false,
      role: principal.role ?? 'admin',
      credentialKind: credential.kind,
    };
    await this.store.create(row, { action: 'sign_in', via: 'console', actor, address });
    return { session: this.sessionOf(row, id, now), cookie: `${id}.${this.mac(`session:${id}`)}` };
  }

  /**
   * The session a cookie value carries, or undefined when it is forged, unknown, signed out, past
   * its absolute or idle lifetime or its token's `exp`, or when the credential it signed in with no
   * longer holds under `access` (another admin key, no admin key, another admin claim rule).
   */
  async read(cookie: string | undefined, access: AdminAccess): Promise<ConsoleSession | undefined> {
    if (!cookie || cookie.length > 256) return undefined;
    const dot = cookie.indexOf('.');
    if (dot === -1) return undefined;
    const id = cookie.slice(0, dot);
    if (!this.equal(cookie.slice(dot + 1), this.mac(`session:${id}`))) return undefined;
    const idHash = hashId(id);
    const now = this.now();
    let cached = this.cache.get(idHash);
    if (!cached || now - cached.readAt >= this.cacheMs || now < cached.readAt) {
      this.cache.delete(idHash);
      const row = await this.store.find(idHash);
      if (!row) return undefined;
      cached = { row, readAt: now };
      if (this.cacheMs > 0) {
        this.cache.set(idHash, cached);
        while (this.cache.size > MAX_CACHED) this.cache.delete(this.cache.keys().next().value as string);
      }
    }
    const { row } = cached;
    const ended = this.ended(row, access, now);
    if (ended !== undefined) {
      this.cache.delete(idHash);
      // A session whose credential changed or went away ends for good, on every instance: going
      // back to the old key later does not bring it back.
      if (ended === 'credential') await this.store.revoke(idHash);
      return undefined;
    }
    // Used now: written back at most every minute (or tenth of the idle lifetime), so the idle
    // lifetime seen by other instances is the local one to within that.
    if (now - row.lastSeenAt >= Math.min(MAX_TOUCH_INTERVAL_MS, Math.ceil(this.idleTimeoutMs / 10))) {
      await this.store.touch(idHash, now);
    }
    row.lastSeenAt = Math.max(row.lastSeenAt, now);
    return this.sessionOf(row, id, now);
  }

  /** The CSRF token of a session. */
  csrfToken(session: ConsoleSession): string {
    return this.mac(`csrf:${session.id}`);
  }

  /** Whether `token` is the session's CSRF token (constant time). */
  checkCsrf(session: ConsoleSession, token: string | undefined): boolean {
    return typeof token === 'string' && this.equal(token, this.csrfToken(session));
  }

  /** Signs a session out: every instance sharing the store refuses its cookie from now on (within `cacheMs`). */
  async revoke(session: ConsoleSession, address: string): Promise<void> {
    const idHash = hashId(session.id);
    this.cache.delete(idHash);
    await this.store.revoke(idHash, { action: 'sign_out', via: 'console', actor: session.actor, address });
  }

  /** Why the session has ended (`time`: signed out or past a lifetime; `credential`: its credential no longer holds), or undefined. */
  private ended(row: ConsoleSessionRow, access: AdminAccess, now: number): 'time' | 'credential' | undefined {
    if (row.revoked) return 'time';
    if (now >= row.expiresAt || now >= row.createdAt + this.lifetimeMs) return 'time';
    if (now >= row.lastSeenAt + this.idleTimeoutMs) return 'time';
    if (row.tokenExpiresAt !== null && now >= row.tokenExpiresAt) return 'time';
    const kind =
      row.credentialKind === 'oidc' || row.credentialKind === 'token' || row.credentialKind === 'admin-key'
        ? row.credentialKind
        : row.tokenIssuer === null
          ? 'admin-key'
          : 'token';
    const current = access.credentialFingerprint(kind);
    if (!access.enabled || current === undefined) return 'credential';
    return this.equal(row.credential, this.mac(`credential:${current}`)) ? undefined : 'credential';
  }

  private sessionOf(row: ConsoleSessionRow, id: string, now: number): ConsoleSession {
    return {
      actor: row.actor,
      expiresAt: Math.min(row.expiresAt, row.createdAt + this.lifetimeMs),
      idleExpiresAt: Math.max(row.lastSeenAt, now) + this.idleTimeoutMs,
      id,
      // A role the gateway does not know fails closed: read only.
      role:
        row.role === null || row.role === undefined
          ? 'admin'
          : ADMIN_ROLES.includes(row.role as AdminRole)
            ? (row.role as AdminRole)
            : 'viewer',
    };
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

function hashId(id: string): string {
  return createHash('sha256').update(id).digest('hex');
}

/**
 * Sessions of virtual MCP servers (CONTRACT sections 12 and 16) with no shared store: the
 * `Mcp-Session-Id` a session-based client (2025-03-26, 2025-06-18, 2025-11-25) gets at `initialize`
 * is itself an authenticated token, HMAC-SHA256 under a key every instance of the deployment derives
 * from `GATEWAY_ENCRYPTION_KEY`, carrying the virtual server's slug, the negotiated protocol
 * version, the client's capabilities, a keyed hash of the caller's credential (never the
 * credential) and an expiry. Any instance checks it with no lookup; a session id presented by
 * another caller, for another virtual server, altered, expired or ended is not a session (404).
 *
 * Ending one (`DELETE`) adds it to a revocation list of each instance, told by the catalog
 * database's `NOTIFY` ({@link VirtualSessionEvents}), kept until the session's expiry.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { CatalogDatabase } from '@gw/catalog';

/** How long a virtual server's session lives from its `initialize`: 24 hours. */
export const VIRTUAL_SESSION_TTL_MS = 24 * 60 * 60 * 1000;

/** The most ended sessions an instance remembers (each until its expiry): 100,000, the nearest expiry dropped first beyond. */
export const VIRTUAL_SESSIONS_REVOKED_MAX = 100_000;

/** The longest session id read: 4,096 characters (a longer one is no session). */
export const VIRTUAL_SESSION_ID_MAX_CHARS = 4096;

/** The most bytes of the client's capabilities a session id carries; larger ones are left out (`{}`): 2,048. */
export const SESSION_CAPABILITIES_MAX_BYTES = 2048;

/** The request headers that carry a caller's credential: what a session is bound to. */
export const CREDENTIAL_HEADERS = ['authorization', 'x-api-key', 'x-gateway-api-key', 'x-portkey-api-key'] as const;

/** The version prefix of a session id, so a later form can be told apart. */
const FORM = 'v1';

/** One session, as its id says once checked. */
export interface VirtualSession {
  /** A random id of the session (16 bytes, base64url): what a revocation names. */
  id: string;
  /** The virtual server it belongs to. */
  slug: string;
  /** The protocol revision negotiated at `initialize`. */
  protocolVersion: string;
  /** The client's capabilities of its `initialize` (`{}` when they were over {@link SESSION_CAPABILITIES_MAX_BYTES}). */
  clientCapabilities: Record<string, unknown>;
  /** Its end, in ms since the epoch. */
  expiresAt: number;
}

/** What a session id holds (short names: it travels in every request's header). */
interface Payload {
  i: string;
  s: string;
  v: string;
  c: Record<string, unknown>;
  /** The keyed hash of the caller's credential. */
  b: string;
  /** Expiry, ms since the epoch. */
  e: number;
}

/**
 * Where the end of a session is told to every instance (and heard from them). Default: none, the
 * instance that ends a session is the only one that knows (one instance, no catalog database).
 */
export interface VirtualSessionEvents {
  /** Tells every instance that session `id` ended; it expires at `expiresAt` anyway. */
  publish(id: string, expiresAt: number): Promise<void>;
  /** Calls `onEnded` for each session another instance (or this one) ended; resolves with a function that stops. */
  subscribe(onEnded: (id: string, expiresAt: number) => void): Promise<() => Promise<void>>;
}

/** Options of {@link VirtualSessionTokens}. */
export interface VirtualSessionTokensOptions {
  /** The MAC key, 32 bytes, the same on every instance (derived from `GATEWAY_ENCRYPTION_KEY`). Required. */
  key: Buffer;
  /** How long a session lives. Default {@link VIRTUAL_SESSION_TTL_MS}. */
  ttlMs?: number;
  /** The most ended sessions remembered. Default {@link VIRTUAL_SESSIONS_REVOKED_MAX}. */
  maxRevoked?: number;
  /** The clock, ms since the epoch. Default `Date.now`. */
  now?: () => number;
}

/** Issues and checks the session ids of virtual servers; remembers the ones ended until they expire. */
export class VirtualSessionTokens {
  private readonly key: Buffer;
  private readonly ttlMs: number;
  private readonly maxRevoked: number;
  private readonly now: () => number;
  /** Ended sessions: id → expiry (ms). */
  private readonly revoked = new Map<string, number>();

  constructor(options: VirtualSessionTokensOptions) {
    if (!Buffer.isBuffer(options.key) || options.key.length < 32)
      throw new TypeError('VirtualSessionTokens: key must be a Buffer of at least 32 bytes.');
    this.key = options.key;
    this.ttlMs = options.ttlMs ?? VIRTUAL_SESSION_TTL_MS;
    this.maxRevoked = options.maxRevoked ?? VIRTUAL_SESSIONS_REVOKED_MAX;
    this.now = options.now ?? Date.now;
  }

  /**
   * The caller a session is bound to: an HMAC (under the session key) of the credential headers'
   * values, so the id never holds a credential nor a hash of one anybody could test guesses against.
   */
  binding(headers: Readonly<Record<string, string | string[] | undefined>>): string {
    const mac = createHmac('sha256', this.key).update('gw-virtual-session-caller');
    for (const name of CREDENTIAL_HEADERS) {
      const value = headers[name];
      mac.update(`\0${name}\0${Array.isArray(value) ? value.join('\n') : (value ?? '')}`);
    }
    return mac.digest('base64url');
  }

  /** A new session id for the caller with credential `headers`, at `initialize` of virtual server `slug`. */
  issue(
    slug: string,
    protocolVersion: string,
    clientCapabilities: Record<string, unknown>,
    headers: Readonly<Record<string, string | string[] | undefined>>,
  ): { sessionId: string; session: VirtualSession } {
    const capabilities =
      Buffer.byteLength(JSON.stringify(clientCapabilities)) <= SESSION_CAPABILITIES_MAX_BYTES ? clientCapabilities : {};
    const payload: Payload = {
      i: randomBytes(16).toString('base64url'),
      s: slug,
      v: protocolVersion,
      c: capabilities,
      b: this.binding(headers),
      e: this.now() + this.ttlMs,
    };
    const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
    return { sessionId: `${FORM}.${body}.${this.mac(body)}`, session: sessionOf(payload) };
  }

  /**
   * The session `sessionId` names, if it is one of virtual server `slug`'s, issued to the caller
   * with credential `headers`, unaltered, unexpired and not ended; otherwise undefined (answer 404).
   */
  verify(
    sessionId: string,
    slug: string,
    headers: Readonly<Record<string, string | string[] | undefined>>,
  ): VirtualSession | undefined {
    if (sessionId.length > VIRTUAL_SESSION_ID_MAX_CHARS) return undefined;
    const [form, body, mac, extra] = sessionId.split('.');
    if (form !== FORM || body === undefined || mac === undefined || extra !== undefined) return undefined;
    if (!sameText(mac, this.mac(body))) return undefined;
    let payload: Payload;
    try {
      payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Payload;
    } catch {
      return undefined;
    }
    if (!isPayload(payload) || payload.s !== slug || payload.e <= this.now()) return undefined;
    if (!sameText(payload.b, this.binding(headers))) return undefined;
    if (this.revoked.has(payload.i)) return undefined;
    return sessionOf(payload);
  }

  /**
   * Remembers that session `id` ended, until `expiresAt`. Beyond the bound, the ended session that
   * expires first is forgotten (it could be used again by its own caller until it expires).
   */
  revoke(id: string, expiresAt: number): void {
    if (expiresAt <= this.now()) return;
    this.revoked.set(id, expiresAt);
    if (this.revoked.size > this.maxRevoked) this.sweep();
    while (this.revoked.size > this.maxRevoked) {
      let first: [string, number] | undefined;
      for (const entry of this.revoked) if (first === undefined || entry[1] < first[1]) first = entry;
      if (first === undefined) break;
      this.revoked.delete(first[0]);
    }
  }

  /** How many ended sessions are remembered now. */
  get revokedCount(): number {
    return this.revoked.size;
  }

  /** Forgets the ended sessions that have expired anyway. */
  sweep(): void {
    const now = this.now();
    for (const [id, expiresAt] of this.revoked) if (expiresAt <= now) this.revoked.delete(id);
  }

  private mac(body: string): string {
    return createHmac('sha256', this.key).update(`gw-virtual-session-${FORM}\0${body}`).digest('base64url');
  }
}

function sessionOf(payload: Payload): VirtualSession {
  return {
    id: payload.i,
    slug: payload.s,
    protocolVersion: payload.v,
    clientCapabilities: payload.c,
    expiresAt: payload.e,
  };
}

function isPayload(value: unknown): value is Payload {
  const p = value as Partial<Payload> | null;
  return (
    typeof p === 'object' &&
    p !== null &&
    typeof p.i === 'string' &&
    typeof p.s === 'string' &&
    typeof p.v === 'string' &&
    typeof p.b === 'string' &&
    typeof p.e === 'number' &&
    typeof p.c === 'object' &&
    p.c !== null &&
    !Array.isArray(p.c)
  );
}

/** Compares two strings in time that does not depend on where they differ. */
function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The NOTIFY channel an ended session is told on (payload: `<id> <expiresAt ms>`; the id alone opens nothing). */
export const VIRTUAL_SESSION_ENDED_CHANNEL = 'gw_virtual_session_ended';

/**
 * {@link VirtualSessionEvents} over the catalog database's `NOTIFY`/`LISTEN`: every instance on the
 * same PostgreSQL hears an end within the notification's round trip. An instance that was not
 * listening then (starting, or its listening connection broken) never hears it, and serves that
 * session until it expires: the session lets its caller do nothing their credential does not.
 */
export function virtualSessionEvents(db: Pick<CatalogDatabase, 'query' | 'listen'>): VirtualSessionEvents {
  return {
    publish: async (id, expiresAt) => {
      await db.query('SELECT pg_notify($1, $2)', [VIRTUAL_SESSION_ENDED_CHANNEL, `${id} ${expiresAt}`]);
    },
    subscribe: (onEnded) =>
      db.listen(VIRTUAL_SESSION_ENDED_CHANNEL, (payload) => {
        const [id, expiresAt] = payload.split(' ');
        const until = Number(expiresAt);
        if (id !== undefined && id !== '' && Number.isFinite(until)) onEnded(id, until);
      }),
  };
}

import type { CatalogDatabase } from './database';

/** One signed-in console session as stored: never the session id (only its hash), never the credential. */
export interface ConsoleSessionRow {
  /** SHA-256 (hex) of the session id the cookie carries. */
  idHash: string;
  /** Who signed in, as the audit log names them (`console:admin-key:1a2b3c4d`, `console:token:<iss>#<sub>`). */
  actor: string;
  /** An HMAC (under the console's session secret) of the fingerprint of the credential it signed in with. */
  credential: string;
  /** For a token session: the token's `iss`, `sub` and `exp` (ms since the epoch). Otherwise null. */
  tokenIssuer: string | null;
  tokenSubject: string | null;
  tokenExpiresAt: number | null;
  /** When it was created and last used, in ms since the epoch. */
  createdAt: number;
  lastSeenAt: number;
  /** Its absolute end (the earlier of its lifetime and a token's `exp`), in ms since the epoch. */
  expiresAt: number;
  /** Whether it was signed out. */
  revoked: boolean;
  /** What its admin may do (`admin`, `operator`, `viewer`). Default (absent or null): `admin`. */
  role?: string | null;
  /** The kind of credential it signed in with (`admin-key`, `token`, `oidc`). Default: `token` when it has a token issuer, else `admin-key`. */
  credentialKind?: string | null;
}

/** A sign-in, a refused sign-in or a sign-out, for the audit log (never the credential). */
export interface SignInAuditEvent {
  action: 'sign_in' | 'sign_in_failed' | 'sign_out';
  /** Where: the console's sign-in form, or a bearer credential of the admin API. */
  via: 'console' | 'admin-api';
  /** Who: the actor, or `anonymous` for a refused credential. */
  actor: string;
  /** The client's address. */
  address: string;
  /** For a refused sign-in: the error code answered. */
  code?: string;
}

/**
 * Where console sessions live. {@link DatabaseConsoleSessionStore} shares them with every instance
 * on the same database; {@link MemoryConsoleSessionStore} keeps them in one process.
 */
export interface ConsoleSessionStore {
  /** Stores a new session, and writes its sign-in to the audit log. */
  create(row: ConsoleSessionRow, event: SignInAuditEvent): Promise<void>;
  /** The session whose id hashes to `idHash`, revoked or not; undefined when there is none. */
  find(idHash: string): Promise<ConsoleSessionRow | undefined>;
  /** Records that the session was used at `lastSeenAt` (ms since the epoch). */
  touch(idHash: string, lastSeenAt: number): Promise<void>;
  /** Ends the session for good; a sign-out (`event`) is written to the audit log. */
  revoke(idHash: string, event?: SignInAuditEvent): Promise<void>;
  /** Writes a sign-in event (a refused one, say) to the audit log. */
  recordSignIn(event: SignInAuditEvent): Promise<void>;
}

/** How long a session row is kept after its end (for the record), in ms: one day. */
const KEEP_ENDED_MS = 24 * 60 * 60 * 1000;

interface StoredRow {
  id_hash: string;
  actor: string;
  credential: string;
  token_issuer: string | null;
  token_subject: string | null;
  token_expires_at: Date | string | null;
  created_at: Date | string;
  last_seen_at: Date | string;
  expires_at: Date | string;
  revoked_at: Date | string | null;
  role?: string | null;
  credential_kind?: string | null;
}

const ms = (value: Date | string) => (value instanceof Date ? value : new Date(value)).getTime();

/**
 * Console sessions in the catalog's database (`gw_console_sessions`, migration 4), on PGlite or
 * PostgreSQL: a sign-out on one instance is seen by every instance at its next read of the row.
 * Sign-ins, refused sign-ins and sign-outs go to the audit log (`gw_audit`, kind `console` or
 * `admin-api`, the client's address in place of a slug). Rows ended more than a day ago are
 * deleted when a session is created.
 */
export class DatabaseConsoleSessionStore implements ConsoleSessionStore {
  constructor(private readonly db: CatalogDatabase) {
    if (typeof db?.query !== 'function' || typeof db.transaction !== 'function')
      throw new TypeError(
        'DatabaseConsoleSessionStore needs the catalog database (openEmbeddedDatabase or openPostgres).',
      );
  }

  async create(row: ConsoleSessionRow, event: SignInAuditEvent): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.query('DELETE FROM gw_console_sessions WHERE expires_at < $1', [
        new Date(row.createdAt - KEEP_ENDED_MS),
      ]);
      await tx.query(
        `INSERT INTO gw_console_sessions (id_hash, actor, credential, token_issuer, token_subject, token_expires_at,
           created_at, last_seen_at, expires_at, revoked_at, role, credential_kind)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, NULL, $10, $11)`,
        [
          row.idHash,
          row.actor,
          row.credential,
          row.tokenIssuer,
          row.tokenSubject,
          row.tokenExpiresAt === null ? null : new Date(row.tokenExpiresAt),
          new Date(row.createdAt),
          new Date(row.lastSeenAt),
          new Date(row.expiresAt),
          row.role ?? null,
          row.credentialKind ?? null,
        ],
      );
      await audit(tx, event);
    });
  }

  async find(idHash: string): Promise<ConsoleSessionRow | undefined> {
    const [row] = await this.db.query<StoredRow>('SELECT * FROM gw_console_sessions WHERE id_hash = $1', [idHash]);
    if (!row) return undefined;
    return {
      idHash: row.id_hash,
      actor: row.actor,
      credential: row.credential,
      tokenIssuer: row.token_issuer,
      tokenSubject: row.token_subject,
      tokenExpiresAt: row.token_expires_at === null ? null : ms(row.token_expires_at),
      createdAt: ms(row.created_at),
      lastSeenAt: ms(row.last_seen_at),
      expiresAt: ms(row.expires_at),
      revoked: row.revoked_at !== null,
      ...(row.role ? { role: row.role } : {}),
      ...(row.credential_kind ? { credentialKind: row.credential_kind } : {}),
    };
  }

  async touch(idHash: string, lastSeenAt: number): Promise<void> {
    await this.db.query(
      'UPDATE gw_console_sessions SET last_seen_at = $2 WHERE id_hash = $1 AND last_seen_at < $2 AND revoked_at IS NULL',
      [idHash, new Date(lastSeenAt)],
    );
  }

  async revoke(idHash: string, event?: SignInAuditEvent): Promise<void> {
    await this.db.transaction(async (tx) => {
      const revoked = await tx.query(
        'UPDATE gw_console_sessions SET revoked_at = now() WHERE id_hash = $1 AND revoked_at IS NULL RETURNING id_hash',
        [idHash],
      );
      if (revoked.length > 0 && event) await audit(tx, event);
    });
  }

  async recordSignIn(event: SignInAuditEvent): Promise<void> {
    await audit(this.db, event);
  }
}

async function audit(db: Pick<CatalogDatabase, 'query'>, event: SignInAuditEvent): Promise<void> {
  await db.query('INSERT INTO gw_audit (actor, action, kind, slug, fields) VALUES ($1, $2, $3, $4, $5)', [
    event.actor.slice(0, 300),
    event.action,
    event.via,
    event.address.slice(0, 64) || 'unknown',
    JSON.stringify(event.code === undefined ? [] : [event.code]),
  ]);
}

/**
 * Console sessions in this process only (a sign-out is not seen by other instances, and a restart
 * ends every session): the default of the console package alone. At most `maxSessions` sessions
 * are kept; the oldest goes first. Audit events go to `onEvent`.
 */
export class MemoryConsoleSessionStore implements ConsoleSessionStore {
  private readonly rows = new Map<string, ConsoleSessionRow>();

  constructor(
    private readonly onEvent: (event: SignInAuditEvent) => void = () => undefined,
    private readonly maxSessions = 10_000,
  ) {}

  async create(row: ConsoleSessionRow, event: SignInAuditEvent): Promise<void> {
    for (const [id, stored] of this.rows) if (stored.expiresAt < row.createdAt) this.rows.delete(id);
    while (this.rows.size >= this.maxSessions) this.rows.delete(this.rows.keys().next().value as string);
    this.rows.set(row.idHash, { ...row });
    this.onEvent(event);
  }

  async find(idHash: string): Promise<ConsoleSessionRow | undefined> {
    const row = this.rows.get(idHash);
    return row && { ...row };
  }

  async touch(idHash: string, lastSeenAt: number): Promise<void> {
    const row = this.rows.get(idHash);
    if (row && !row.revoked && row.lastSeenAt < lastSeenAt) row.lastSeenAt = lastSeenAt;
  }

  async revoke(idHash: string, event?: SignInAuditEvent): Promise<void> {
    const row = this.rows.get(idHash);
    if (!row || row.revoked) return;
    row.revoked = true;
    if (event) this.onEvent(event);
  }

  async recordSignIn(event: SignInAuditEvent): Promise<void> {
    this.onEvent(event);
  }
}

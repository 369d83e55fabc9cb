import { randomUUID } from 'node:crypto';
import type { CatalogDatabase, SqlExecutor } from '@gw/catalog';

/** A client registered through `/oauth/register` (RFC 7591 metadata, public clients only). */
/**
 * A client as `GET /admin/v1/oauth/clients` lists it: a registered client (its registration), or a
 * client known by its metadata document (`metadata_document: true`; its `client_id` is the
 * document's URL, listed once it has a grant, since its document is fetched, not stored).
 */
export type ListedClient = Partial<StoredClient> & {
  client_id: string;
  redirect_uris: string[];
  metadata_document: boolean;
  /** When it registered, or when its first grant was made. */
  created_at: string;
};

export interface StoredClient {
  client_id: string;
  client_name?: string;
  redirect_uris: string[];
  client_uri?: string;
  logo_uri?: string;
  token_endpoint_auth_method: 'none';
  grant_types: string[];
  response_types: string[];
  client_id_issued_at: number;
  [field: string]: unknown;
}

/** One authorization of a client by a user: the family of tokens that came from one consented code. */
export interface Grant {
  id: string;
  clientId: string;
  /** The user's id (`sub`). */
  userId: string;
  /** How the user signed in, with the id: `api_key:<key id>` or `oidc:<sub>`. */
  subject: string;
  /** The user's claims at sign-in (section 5), or at the last renewal at the OpenID Provider; copied into each access token. */
  claims: Record<string, unknown>;
  /**
   * The OpenID Provider's tokens of the sign-in (refresh token, access token and its expiry; see
   * `provider-tokens.ts`), encrypted (never in clear), renewed on each refresh of the grant and
   * when the access token is needed and expiring; null for API-key sign-ins and providers that
   * gave none.
   */
  loginTokens: string | null;
  resource: string;
  scopes: string[];
  createdAt: Date;
  lastUsedAt: Date | null;
  expiresAt: Date;
  revokedAt: Date | null;
  revokedReason: string | null;
}

/** An authorization code as stored: its digest and what the token request must match. */
export interface StoredCode {
  grantId: string;
  clientId: string;
  redirectUri: string;
  codeChallenge: string;
  expiresAt: Date;
  usedAt: Date | null;
}

interface GrantRow {
  id: string;
  client_id: string;
  user_id: string;
  subject: string;
  claims: Record<string, unknown>;
  login_tokens?: string | null;
  resource: string;
  scopes: string[];
  created_at: Date | string;
  last_used_at: Date | string | null;
  expires_at: Date | string;
  revoked_at: Date | string | null;
  revoked_reason: string | null;
}

const date = (value: Date | string): Date => (value instanceof Date ? value : new Date(value));
const maybeDate = (value: Date | string | null): Date | null => (value === null ? null : date(value));

function grantOf(row: GrantRow): Grant {
  return {
    id: row.id,
    clientId: row.client_id,
    userId: row.user_id,
    subject: row.subject,
    claims: row.claims,
    loginTokens: row.login_tokens ?? null,
    resource: row.resource,
    scopes: row.scopes,
    createdAt: date(row.created_at),
    lastUsedAt: maybeDate(row.last_used_at),
    expiresAt: date(row.expires_at),
    revokedAt: maybeDate(row.revoked_at),
    revokedReason: row.revoked_reason,
  };
}

/** An entry of the catalog's audit log about OAuth (never a token or code). */
export interface OAuthAuditEntry {
  /** Who: `user:<id>`, `client:<client_id>`, `admin-key`, `token:<sub>`. */
  actor: string;
  /** `oauth.sign_in`, `oauth.consent`, `oauth.token_issued`, `oauth.refresh_reuse`, `oauth.revoke`, `oauth.register`. */
  action: string;
  /** `oauth-grants` or `oauth-clients`. */
  kind: 'oauth-grants' | 'oauth-clients';
  /** The grant id or the client id. */
  slug: string;
  /** `name=value` pairs of non-secret values (client id, resource, scopes, reason), as the audit log lists fields. */
  fields: string[];
}

/**
 * The authorization server's state in the catalog's database (migration 6): clients, grants,
 * consents, codes and refresh tokens. Codes and refresh tokens are stored only as SHA-256 digests,
 * so a copy of the database gives no usable credential; every instance sharing the database
 * accepts and revokes them alike.
 */
export class OAuthStore {
  constructor(private readonly db: CatalogDatabase) {}

  async registerClient(client: StoredClient): Promise<void> {
    await this.db.query('INSERT INTO gw_oauth_clients (client_id, metadata) VALUES ($1, $2)', [
      client.client_id,
      JSON.stringify(client),
    ]);
  }

  async getClient(clientId: string): Promise<StoredClient | undefined> {
    const [row] = await this.db.query<{ metadata: StoredClient }>(
      'SELECT metadata FROM gw_oauth_clients WHERE client_id = $1',
      [clientId],
    );
    return row?.metadata;
  }

  /** Registered clients, newest first (at most `limit`). */
  async listClients(limit = 500): Promise<ListedClient[]> {
    const rows = await this.db.query<{ metadata: StoredClient; created_at: Date | string }>(
      'SELECT metadata, created_at FROM gw_oauth_clients ORDER BY created_at DESC LIMIT $1',
      [limit],
    );
    const registered: ListedClient[] = rows.map((row) => ({
      ...row.metadata,
      metadata_document: false,
      created_at: date(row.created_at).toISOString(),
    }));
    // Clients known by a metadata document are never registered: they are the ones with grants.
    const documents = await this.db.query<{ client_id: string; first: Date | string }>(
      `SELECT client_id, min(created_at) AS first FROM gw_oauth_grants
       WHERE client_id LIKE 'http%' AND client_id NOT IN (SELECT client_id FROM gw_oauth_clients)
       GROUP BY client_id ORDER BY first DESC LIMIT $1`,
      [limit],
    );
    return [
      ...registered,
      ...documents.map((row) => ({
        client_id: row.client_id,
        redirect_uris: [],
        metadata_document: true,
        created_at: date(row.first).toISOString(),
      })),
    ];
  }

  /** Whether the user has consented to `client` for every one of `scopes` and for `resource`. */
  async hasConsent(userId: string, clientId: string, scopes: readonly string[], resource: string): Promise<boolean> {
    const [row] = await this.db.query<{ scopes: string[]; resources: string[] }>(
      'SELECT scopes, resources FROM gw_oauth_consents WHERE subject = $1 AND client_id = $2',
      [userId, clientId],
    );
    return row !== undefined && scopes.every((s) => row.scopes.includes(s)) && row.resources.includes(resource);
  }

  /** Records the user's consent, adding `scopes` and `resource` to what was consented before. */
  async addConsent(userId: string, clientId: string, scopes: readonly string[], resource: string): Promise<void> {
    await this.db.query(
      `INSERT INTO gw_oauth_consents (subject, client_id, scopes, resources, updated_at) VALUES ($1, $2, $3, $4, now())
       ON CONFLICT (subject, client_id) DO UPDATE SET
         scopes = ARRAY(SELECT DISTINCT unnest(gw_oauth_consents.scopes || EXCLUDED.scopes)),
         resources = ARRAY(SELECT DISTINCT unnest(gw_oauth_consents.resources || EXCLUDED.resources)),
         updated_at = now()`,
      [userId, clientId, [...scopes], [resource]],
    );
  }

  /** Creates a grant and its authorization code (stored as `codeDigest`) in one transaction. */
  async createGrantWithCode(
    grant: Omit<Grant, 'id' | 'createdAt' | 'lastUsedAt' | 'revokedAt' | 'revokedReason' | 'loginTokens'> & {
      loginTokens?: string | null;
    },
    code: { digest: string; redirectUri: string; codeChallenge: string; expiresAt: Date },
  ): Promise<string> {
    const id = randomUUID();
    await this.db.transaction(async (tx) => {
      await tx.query(
        `INSERT INTO gw_oauth_grants (id, client_id, user_id, subject, claims, resource, scopes, created_at, expires_at, login_tokens)
         VALUES ($1, $2, $3, $4, $5, $6, $7, now(), $8, $9)`,
        [
          id,
          grant.clientId,
          grant.userId,
          grant.subject,
          JSON.stringify(grant.claims),
          grant.resource,
          grant.scopes,
          grant.expiresAt,
          grant.loginTokens ?? null,
        ],
      );
      await tx.query(
        'INSERT INTO gw_oauth_codes (digest, grant_id, client_id, redirect_uri, code_challenge, expires_at) VALUES ($1, $2, $3, $4, $5, $6)',
        [code.digest, id, grant.clientId, code.redirectUri, code.codeChallenge, code.expiresAt],
      );
    });
    return id;
  }

  /** The code with this digest, without using it. */
  async findCode(codeDigest: string): Promise<StoredCode | undefined> {
    const [row] = await this.db.query<{
      grant_id: string;
      client_id: string;
      redirect_uri: string;
      code_challenge: string;
      expires_at: Date | string;
      used_at: Date | string | null;
    }>('SELECT * FROM gw_oauth_codes WHERE digest = $1', [codeDigest]);
    if (!row) return undefined;
    return {
      grantId: row.grant_id,
      clientId: row.client_id,
      redirectUri: row.redirect_uri,
      codeChallenge: row.code_challenge,
      expiresAt: date(row.expires_at),
      usedAt: maybeDate(row.used_at),
    };
  }

  /** Marks the code used; true only for the one request that used it first (atomic on every instance). */
  async useCode(codeDigest: string): Promise<boolean> {
    const rows = await this.db.query(
      'UPDATE gw_oauth_codes SET used_at = now() WHERE digest = $1 AND used_at IS NULL RETURNING digest',
      [codeDigest],
    );
    return rows.length === 1;
  }

  async getGrant(id: string): Promise<Grant | undefined> {
    const [row] = await this.db.query<GrantRow>('SELECT * FROM gw_oauth_grants WHERE id = $1', [id]);
    return row ? grantOf(row) : undefined;
  }

  /** A user's grants, newest first (revoked ones included, at most `limit`). */
  async listGrants(userId: string | undefined, limit = 500): Promise<Grant[]> {
    const rows = await this.db.query<GrantRow>(
      userId === undefined
        ? 'SELECT * FROM gw_oauth_grants ORDER BY created_at DESC LIMIT $1'
        : 'SELECT * FROM gw_oauth_grants WHERE user_id = $2 ORDER BY created_at DESC LIMIT $1',
      userId === undefined ? [limit] : [limit, userId],
    );
    return rows.map(grantOf);
  }

  /**
   * Stores a new refresh token of `grantId` and marks the grant used; extends the grant's expiry to
   * the later of the refresh token's and `accessTokenExpiresAt` (default: the refresh token's), so a
   * grant lasts until every token issued from it has expired.
   */
  async addRefreshToken(
    grantId: string,
    tokenDigest: string,
    expiresAt: Date,
    executor: SqlExecutor = this.db,
    accessTokenExpiresAt: Date = expiresAt,
  ): Promise<void> {
    await executor.query('INSERT INTO gw_oauth_refresh_tokens (digest, grant_id, expires_at) VALUES ($1, $2, $3)', [
      tokenDigest,
      grantId,
      expiresAt,
    ]);
    await executor.query(
      'UPDATE gw_oauth_grants SET last_used_at = now(), expires_at = GREATEST(expires_at, $2, $3) WHERE id = $1',
      [grantId, expiresAt, accessTokenExpiresAt],
    );
  }

  /**
   * Uses a refresh token: `used` for the one request that used it first, `reused` when it had been
   * used before (the caller revokes its family), `unknown` when no such token exists.
   */
  async useRefreshToken(
    tokenDigest: string,
  ): Promise<{ state: 'used' | 'reused'; grantId: string; expiresAt: Date } | { state: 'unknown' }> {
    const [used] = await this.db.query<{ grant_id: string; expires_at: Date | string }>(
      'UPDATE gw_oauth_refresh_tokens SET used_at = now() WHERE digest = $1 AND used_at IS NULL RETURNING grant_id, expires_at',
      [tokenDigest],
    );
    if (used) return { state: 'used', grantId: used.grant_id, expiresAt: date(used.expires_at) };
    const [seen] = await this.db.query<{ grant_id: string; expires_at: Date | string }>(
      'SELECT grant_id, expires_at FROM gw_oauth_refresh_tokens WHERE digest = $1',
      [tokenDigest],
    );
    return seen ? { state: 'reused', grantId: seen.grant_id, expiresAt: date(seen.expires_at) } : { state: 'unknown' };
  }

  /**
   * Stores the claims and the (encrypted) provider tokens of a sign-in renewed at the OpenID
   * Provider; inside {@link OAuthStore.withLockedGrant}, pass its executor.
   */
  async renewSignIn(
    grantId: string,
    claims: Record<string, unknown>,
    loginTokens: string,
    executor: SqlExecutor = this.db,
  ): Promise<void> {
    await executor.query('UPDATE gw_oauth_grants SET claims = $2, login_tokens = $3 WHERE id = $1', [
      grantId,
      JSON.stringify(claims),
      loginTokens,
    ]);
  }

  /**
   * Runs `work` in one transaction holding the grant's row lock (`SELECT … FOR UPDATE`), with the
   * grant as it is once the lock is held (undefined when there is no such grant). Every instance
   * sharing the database waits for the lock (at most `lockTimeoutMs`, default 15000, then the
   * database's error is thrown): whoever renews the sign-in at the OpenID Provider under it is the
   * only one presenting the provider's refresh token, and the next one reads what it stored.
   * On the embedded database (one instance, one connection, where an open transaction holds up
   * every other query) no transaction is held: the caller runs one `work` per grant at a time.
   */
  async withLockedGrant<T>(
    grantId: string,
    work: (grant: Grant | undefined, tx: SqlExecutor) => Promise<T>,
    lockTimeoutMs = 15_000,
  ): Promise<T> {
    if (this.db.kind === 'embedded') return work(await this.getGrant(grantId), this.db);
    return this.db.transaction(async (tx) => {
      await tx.query(`SET LOCAL lock_timeout = ${Math.max(1, Math.floor(lockTimeoutMs))}`);
      const [row] = await tx.query<GrantRow>('SELECT * FROM gw_oauth_grants WHERE id = $1 FOR UPDATE', [grantId]);
      return work(row ? grantOf(row) : undefined, tx);
    });
  }

  /** The grant id of a refresh token (used or not), for revocation. */
  async grantOfRefreshToken(tokenDigest: string): Promise<string | undefined> {
    const [row] = await this.db.query<{ grant_id: string }>(
      'SELECT grant_id FROM gw_oauth_refresh_tokens WHERE digest = $1',
      [tokenDigest],
    );
    return row?.grant_id;
  }

  /** Revokes a grant (its whole token family); true when it was not revoked before. */
  async revokeGrant(id: string, reason: string): Promise<boolean> {
    const rows = await this.db.query(
      'UPDATE gw_oauth_grants SET revoked_at = now(), revoked_reason = $2 WHERE id = $1 AND revoked_at IS NULL RETURNING id',
      [id, reason],
    );
    return rows.length === 1;
  }

  /**
   * Ids of revoked grants an access token still alive may name: those whose tokens have not all
   * expired more than `marginSeconds` ago (a grant's `expires_at` is the latest expiry of any token
   * issued from it, whatever the lifetime setting is now), and, for grants stored before that was
   * so, those revoked within the last `withinSeconds`.
   */
  async recentlyRevoked(withinSeconds: number, marginSeconds = 120): Promise<string[]> {
    const rows = await this.db.query<{ id: string }>(
      `SELECT id FROM gw_oauth_grants WHERE revoked_at IS NOT NULL
         AND (expires_at > now() - make_interval(secs => $2) OR revoked_at > now() - make_interval(secs => $1))`,
      [withinSeconds, marginSeconds],
    );
    return rows.map((row) => row.id);
  }

  /**
   * Deletes codes and refresh tokens expired for more than a day (a refresh token's reuse is
   * detected until then; after it, the token is unknown and refused all the same).
   */
  async purgeExpired(): Promise<void> {
    await this.db.query("DELETE FROM gw_oauth_codes WHERE expires_at < now() - interval '1 day'");
    await this.db.query("DELETE FROM gw_oauth_refresh_tokens WHERE expires_at < now() - interval '1 day'");
  }

  /** Writes an entry of the audit log. */
  async audit(entry: OAuthAuditEntry): Promise<void> {
    await this.db.query('INSERT INTO gw_audit (actor, action, kind, slug, fields) VALUES ($1, $2, $3, $4, $5)', [
      entry.actor.slice(0, 200),
      entry.action,
      entry.kind,
      entry.slug.slice(0, 300),
      JSON.stringify(entry.fields.map((field) => field.slice(0, 300))),
    ]);
  }
}

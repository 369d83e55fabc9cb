import { createHash } from 'node:crypto';
import type {
  ConnectRequestUse,
  ConnectionSummary,
  PendingAuthorization,
  RefreshDecision,
  RegisteredClient,
  StoredConnection,
  UpstreamConnectionStore,
} from '@gw/upstream-auth';
import type { CatalogDatabase, SqlExecutor } from './database';
import type { SecretBox } from './secret-box';

/** The NOTIFY channel a saved or deleted upstream connection is announced on (payload: `[userId, server]` as JSON). */
export const UPSTREAM_CONNECTIONS_CHANNEL = 'gw_upstream_connections';

/** Most expired connect requests or pending authorizations one write deletes on its way (the rest go with the next writes). */
export const UPSTREAM_PRUNE_BATCH = 100;

/** How long a connect request is kept after it expires (so a late use reads `expired`, not `unknown`), in ms: 1 hour. */
const CONNECT_REQUEST_KEPT_MS = 3_600_000;

/** The SQL of migration 12: upstream connections and what making one needs, every secret sealed. */
export const UPSTREAM_CONNECTIONS_MIGRATION_SQL = `
  CREATE TABLE gw_upstream_connections (
    user_id text NOT NULL,
    server text NOT NULL,
    issuer text NOT NULL,
    client_id text NOT NULL,
    scopes jsonb NOT NULL DEFAULT '[]'::jsonb,
    sealed_tokens text NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz,
    last_refreshed_at timestamptz,
    PRIMARY KEY (user_id, server)
  );
  CREATE INDEX gw_upstream_connections_server ON gw_upstream_connections (server, created_at, user_id);
  CREATE TABLE gw_upstream_connect_requests (
    id_sha256 text PRIMARY KEY,
    user_id text NOT NULL,
    server text NOT NULL,
    expires_at timestamptz NOT NULL,
    used_at timestamptz
  );
  CREATE INDEX gw_upstream_connect_requests_expires ON gw_upstream_connect_requests (expires_at);
  CREATE TABLE gw_upstream_pending (
    state_sha256 text PRIMARY KEY,
    sealed_verifier text NOT NULL,
    user_id text NOT NULL,
    server text NOT NULL,
    issuer text NOT NULL,
    client_id text NOT NULL,
    expires_at timestamptz NOT NULL
  );
  CREATE INDEX gw_upstream_pending_expires ON gw_upstream_pending (expires_at);
  CREATE TABLE gw_upstream_clients (
    server text NOT NULL,
    issuer text NOT NULL,
    client_id text NOT NULL,
    sealed_secret text,
    token_endpoint_auth_method text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (server, issuer)
  );
`;

interface ConnectionRow {
  user_id: string;
  server: string;
  issuer: string;
  client_id: string;
  scopes: string[];
  sealed_tokens: string;
  created_at: Date | string;
  expires_at: Date | string | null;
  last_refreshed_at: Date | string | null;
}

/** The tokens of a connection, as sealed together in `sealed_tokens`. */
interface SealedTokens {
  accessToken: string;
  refreshToken?: string;
}

/**
 * The additional data a connection's tokens are sealed with: the user, the server, the issuer and
 * the client id of the row, so tokens copied to another user's or server's row (or a row whose
 * issuer or client was changed) do not open.
 */
function connectionContext(userId: string, server: string, issuer: string, clientId: string): string {
  return JSON.stringify(['gw-upstream-connection-v1', userId, server, issuer, clientId]);
}

/** The additional data of a pending authorization's code verifier: its state's digest, user, server, issuer and client. */
function pendingContext(stateSha256: string, pending: Omit<PendingAuthorization, 'state' | 'codeVerifier'>): string {
  return JSON.stringify([
    'gw-upstream-pending-v1',
    stateSha256,
    pending.userId,
    pending.server,
    pending.issuer,
    pending.clientId,
  ]);
}

/** The additional data of a registered client's secret: the server, the issuer and the client id. */
function clientContext(server: string, issuer: string, clientId: string): string {
  return JSON.stringify(['gw-upstream-client-v1', server, issuer, clientId]);
}

/** What is stored in place of a connect request id or a `state`: its SHA-256 (a database reader cannot use them). */
function digest(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

const ms = (value: Date | string): number => (value instanceof Date ? value : new Date(value)).getTime();
const msOrUndefined = (value: Date | string | null): number | undefined => (value === null ? undefined : ms(value));
const dateOrNull = (value: number | undefined): Date | null => (value === undefined ? null : new Date(value));

function summaryOf(row: ConnectionRow): ConnectionSummary {
  const summary: ConnectionSummary = {
    userId: row.user_id,
    server: row.server,
    issuer: row.issuer,
    clientId: row.client_id,
    scopes: Array.isArray(row.scopes) ? row.scopes.map(String) : [],
    createdAt: ms(row.created_at),
  };
  const expiresAt = msOrUndefined(row.expires_at);
  if (expiresAt !== undefined) summary.expiresAt = expiresAt;
  const lastRefreshedAt = msOrUndefined(row.last_refreshed_at);
  if (lastRefreshedAt !== undefined) summary.lastRefreshedAt = lastRefreshedAt;
  return summary;
}

/** Runs `work` after every earlier call with the same key finished (an in-process queue per key). */
class KeyedQueue {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const before = this.tails.get(key) ?? Promise.resolve();
    const result = before.then(work, work);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }
}

/**
 * The upstream connections of `@gw/upstream-auth` in the catalog's database (migration 12), on the
 * embedded database and on PostgreSQL:
 *
 * - `gw_upstream_connections`: per (user id, server), the access and refresh tokens sealed together
 *   with the catalog's {@link SecretBox} (AES-256-GCM), the user, server, issuer and client id bound
 *   into the additional data; in clear only what lists show (issuer, client id, scopes, times).
 * - `gw_upstream_connect_requests`: the SHA-256 of each connect link's id, its user, server, expiry
 *   and use; `useConnectRequest` uses it up in one conditional `UPDATE … RETURNING`.
 * - `gw_upstream_pending`: the SHA-256 of each `state`, the PKCE verifier sealed; taken with one
 *   `DELETE … RETURNING`.
 * - `gw_upstream_clients`: RFC 7591 registrations, the client secret sealed.
 *
 * `withRefreshLock` queues calls of one instance in process, then (on PostgreSQL) holds a
 * transaction-scoped advisory lock of (user id, server) and the row's `FOR UPDATE` lock while the
 * work runs, so two instances never run the refresh of one connection at once; the second sees the
 * first one's result. The work must not write that connection itself (it returns its decision):
 * the row is locked until it ends. A waiter gives up after the database's query timeout
 * (`openPostgres`'s `timeoutMs`, default 5 s) and rejects. Saves and deletes `NOTIFY` {@link UPSTREAM_CONNECTIONS_CHANNEL}. Expired
 * pending authorizations and connect requests (an hour after expiry) are deleted by the writes of
 * new ones, at most {@link UPSTREAM_PRUNE_BATCH} a write.
 */
export function createUpstreamConnectionStore(
  database: CatalogDatabase,
  secretBox: SecretBox,
): UpstreamConnectionStore {
  if (typeof database !== 'object' || database === null || typeof database.query !== 'function')
    throw new TypeError(
      'createUpstreamConnectionStore needs the catalog database (openPostgres(url) or openEmbeddedDatabase(dir)), migrated.',
    );
  if (typeof secretBox !== 'object' || secretBox === null || typeof secretBox.seal !== 'function')
    throw new TypeError('createUpstreamConnectionStore needs the catalog SecretBox that seals secrets.');
  const db = database;
  const box = secretBox;
  const queue = new KeyedQueue();

  const open = (row: ConnectionRow): StoredConnection => {
    const tokens = JSON.parse(
      box.open(
        row.sealed_tokens,
        connectionContext(row.user_id, row.server, row.issuer, row.client_id),
        `upstream connection of ${row.user_id.slice(0, 64)} to ${row.server.slice(0, 64)}`,
      ),
    ) as SealedTokens;
    const connection: StoredConnection = { ...summaryOf(row), accessToken: tokens.accessToken };
    if (tokens.refreshToken !== undefined) connection.refreshToken = tokens.refreshToken;
    return connection;
  };

  const notify = async (sql: SqlExecutor, userId: string, server: string) => {
    await sql.query('SELECT pg_notify($1, $2)', [UPSTREAM_CONNECTIONS_CHANNEL, JSON.stringify([userId, server])]);
  };

  const write = async (sql: SqlExecutor, connection: StoredConnection) => {
    const tokens: SealedTokens = { accessToken: connection.accessToken };
    if (connection.refreshToken !== undefined) tokens.refreshToken = connection.refreshToken;
    const sealed = box.seal(
      JSON.stringify(tokens),
      connectionContext(connection.userId, connection.server, connection.issuer, connection.clientId),
    );
    await sql.query(
      `INSERT INTO gw_upstream_connections
         (user_id, server, issuer, client_id, scopes, sealed_tokens, created_at, expires_at, last_refreshed_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
       ON CONFLICT (user_id, server) DO UPDATE SET issuer = EXCLUDED.issuer, client_id = EXCLUDED.client_id,
         scopes = EXCLUDED.scopes, sealed_tokens = EXCLUDED.sealed_tokens, created_at = EXCLUDED.created_at,
         expires_at = EXCLUDED.expires_at, last_refreshed_at = EXCLUDED.last_refreshed_at`,
      [
        connection.userId,
        connection.server,
        connection.issuer,
        connection.clientId,
        JSON.stringify(connection.scopes),
        sealed,
        new Date(connection.createdAt),
        dateOrNull(connection.expiresAt),
        dateOrNull(connection.lastRefreshedAt),
      ],
    );
    await notify(sql, connection.userId, connection.server);
  };

  const remove = async (sql: SqlExecutor, userId: string, server: string): Promise<ConnectionRow | undefined> => {
    const [row] = await sql.query<ConnectionRow>(
      'DELETE FROM gw_upstream_connections WHERE user_id = $1 AND server = $2 RETURNING *',
      [userId, server],
    );
    if (row !== undefined) await notify(sql, userId, server);
    return row;
  };

  const checkSameConnection = (userId: string, server: string, save: StoredConnection) => {
    if (save.userId !== userId || save.server !== server)
      throw new TypeError('withRefreshLock: the connection saved must be of the same user and server as the lock.');
  };

  return {
    async getConnection(userId, server) {
      const [row] = await db.query<ConnectionRow>(
        'SELECT * FROM gw_upstream_connections WHERE user_id = $1 AND server = $2',
        [userId, server],
      );
      return row === undefined ? undefined : open(row);
    },

    async saveConnection(connection) {
      await db.transaction((tx) => write(tx, connection));
    },

    withRefreshLock(userId, server, work) {
      type Result = Awaited<ReturnType<typeof work>>['result'];
      const apply = async (sql: SqlExecutor, decision: RefreshDecision<Result>): Promise<Result> => {
        if (decision.remove === true) await remove(sql, userId, server);
        else if (decision.save !== undefined) {
          checkSameConnection(userId, server, decision.save);
          await write(sql, decision.save);
        }
        return decision.result;
      };
      return queue.run(JSON.stringify([userId, server]), async () => {
        if (db.kind !== 'postgres') {
          // One instance per embedded database: the in-process queue is the lock. The work runs
          // outside a transaction, which would hold the embedded database's only connection.
          const [row] = await db.query<ConnectionRow>(
            'SELECT * FROM gw_upstream_connections WHERE user_id = $1 AND server = $2',
            [userId, server],
          );
          const decision = await work(row === undefined ? undefined : open(row));
          return db.transaction((tx) => apply(tx, decision));
        }
        return db.transaction(async (tx) => {
          // Held until the transaction ends; a connection not yet stored (no row to lock) is covered too.
          await tx.query('SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))', [`gw-upstream:${userId}`, server]);
          const [row] = await tx.query<ConnectionRow>(
            'SELECT * FROM gw_upstream_connections WHERE user_id = $1 AND server = $2 FOR UPDATE',
            [userId, server],
          );
          return apply(tx, await work(row === undefined ? undefined : open(row)));
        });
      });
    },

    async deleteConnection(userId, server) {
      const row = await db.transaction((tx) => remove(tx, userId, server));
      return row === undefined ? undefined : open(row);
    },

    async deleteUserConnections(userId) {
      const rows = await db.transaction(async (tx) => {
        const deleted = await tx.query<ConnectionRow>(
          'DELETE FROM gw_upstream_connections WHERE user_id = $1 RETURNING *',
          [userId],
        );
        for (const row of deleted) await notify(tx, row.user_id, row.server);
        return deleted;
      });
      return rows.map(open);
    },

    async listConnections(server, page) {
      const limit = Math.max(0, Math.min(1000, Math.trunc(page.limit)));
      const rows = await db.query<ConnectionRow>(
        page.after === undefined
          ? `SELECT * FROM gw_upstream_connections WHERE server = $1 ORDER BY created_at, user_id LIMIT $2`
          : `SELECT c.* FROM gw_upstream_connections c,
               (SELECT created_at, user_id FROM gw_upstream_connections WHERE server = $1 AND user_id = $3) AS cursor
             WHERE c.server = $1 AND (c.created_at, c.user_id) > (cursor.created_at, cursor.user_id)
             ORDER BY c.created_at, c.user_id LIMIT $2`,
        page.after === undefined ? [server, limit] : [server, limit, page.after],
      );
      return rows.map(summaryOf);
    },

    async listUserConnections(userId) {
      const rows = await db.query<ConnectionRow>(
        'SELECT * FROM gw_upstream_connections WHERE user_id = $1 ORDER BY server',
        [userId],
      );
      return rows.map(summaryOf);
    },

    async createConnectRequest(request) {
      await db.query(
        `DELETE FROM gw_upstream_connect_requests WHERE id_sha256 IN (
           SELECT id_sha256 FROM gw_upstream_connect_requests WHERE expires_at < $1 LIMIT ${UPSTREAM_PRUNE_BATCH})`,
        [new Date(Date.now() - CONNECT_REQUEST_KEPT_MS)],
      );
      await db.query(
        'INSERT INTO gw_upstream_connect_requests (id_sha256, user_id, server, expires_at) VALUES ($1, $2, $3, $4)',
        [digest(request.id), request.userId, request.server, new Date(request.expiresAt)],
      );
    },

    async useConnectRequest(id, userId, now): Promise<ConnectRequestUse> {
      const idSha256 = digest(id);
      const at = new Date(now);
      const [used] = await db.query<{ user_id: string; server: string; expires_at: Date | string }>(
        `UPDATE gw_upstream_connect_requests SET used_at = $3
         WHERE id_sha256 = $1 AND user_id = $2 AND used_at IS NULL AND expires_at > $3
         RETURNING user_id, server, expires_at`,
        [idSha256, userId, at],
      );
      if (used !== undefined)
        return {
          outcome: 'used_now',
          request: { id, userId: used.user_id, server: used.server, expiresAt: ms(used.expires_at) },
        };
      const [row] = await db.query<{ user_id: string; expires_at: Date | string; used_at: Date | string | null }>(
        'SELECT user_id, expires_at, used_at FROM gw_upstream_connect_requests WHERE id_sha256 = $1',
        [idSha256],
      );
      if (row === undefined) return { outcome: 'unknown' };
      if (row.used_at !== null) return { outcome: 'already_used' };
      if (ms(row.expires_at) <= now) return { outcome: 'expired' };
      return { outcome: 'user_mismatch' };
    },

    async savePendingAuthorization(pending) {
      await db.query(
        `DELETE FROM gw_upstream_pending WHERE state_sha256 IN (
           SELECT state_sha256 FROM gw_upstream_pending WHERE expires_at < $1 LIMIT ${UPSTREAM_PRUNE_BATCH})`,
        [new Date()],
      );
      const stateSha256 = digest(pending.state);
      await db.query(
        `INSERT INTO gw_upstream_pending (state_sha256, sealed_verifier, user_id, server, issuer, client_id, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        [
          stateSha256,
          box.seal(pending.codeVerifier, pendingContext(stateSha256, pending)),
          pending.userId,
          pending.server,
          pending.issuer,
          pending.clientId,
          new Date(pending.expiresAt),
        ],
      );
    },

    async takePendingAuthorization(state, now) {
      const stateSha256 = digest(state);
      const [row] = await db.query<{
        sealed_verifier: string;
        user_id: string;
        server: string;
        issuer: string;
        client_id: string;
        expires_at: Date | string;
      }>('DELETE FROM gw_upstream_pending WHERE state_sha256 = $1 RETURNING *', [stateSha256]);
      if (row === undefined || ms(row.expires_at) <= now) return undefined;
      const pending = {
        userId: row.user_id,
        server: row.server,
        issuer: row.issuer,
        clientId: row.client_id,
        expiresAt: ms(row.expires_at),
      };
      const codeVerifier = box.open(
        row.sealed_verifier,
        pendingContext(stateSha256, pending),
        'a pending upstream authorization',
      );
      return { state, codeVerifier, ...pending };
    },

    async getRegisteredClient(server, issuer) {
      const [row] = await db.query<{
        client_id: string;
        sealed_secret: string | null;
        token_endpoint_auth_method: string;
      }>(
        'SELECT client_id, sealed_secret, token_endpoint_auth_method FROM gw_upstream_clients WHERE server = $1 AND issuer = $2',
        [server, issuer],
      );
      if (row === undefined) return undefined;
      const client: RegisteredClient = {
        server,
        issuer,
        clientId: row.client_id,
        tokenEndpointAuthMethod: row.token_endpoint_auth_method,
      };
      if (row.sealed_secret !== null)
        client.clientSecret = box.open(
          row.sealed_secret,
          clientContext(server, issuer, row.client_id),
          `the client registered for ${server.slice(0, 64)}`,
        );
      return client;
    },

    async saveRegisteredClient(client) {
      await db.query(
        `INSERT INTO gw_upstream_clients (server, issuer, client_id, sealed_secret, token_endpoint_auth_method)
         VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (server, issuer) DO UPDATE SET client_id = EXCLUDED.client_id,
           sealed_secret = EXCLUDED.sealed_secret, token_endpoint_auth_method = EXCLUDED.token_endpoint_auth_method,
           created_at = now()`,
        [
          client.server,
          client.issuer,
          client.clientId,
          client.clientSecret === undefined
            ? null
            : box.seal(client.clientSecret, clientContext(client.server, client.issuer, client.clientId)),
          client.tokenEndpointAuthMethod,
        ],
      );
    },

    async onConnectionChange(listener) {
      return db.listen(UPSTREAM_CONNECTIONS_CHANNEL, (payload) => {
        let parsed: unknown;
        try {
          parsed = JSON.parse(payload);
        } catch {
          return;
        }
        if (Array.isArray(parsed) && typeof parsed[0] === 'string' && typeof parsed[1] === 'string')
          listener(parsed[0], parsed[1]);
      });
    },
  };
}

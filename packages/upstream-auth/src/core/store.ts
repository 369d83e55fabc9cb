/**
 * What the upstream-credential core keeps between requests and across instances, as an interface:
 * the catalog's database implements it (`@gw/catalog`, `createUpstreamConnectionStore`), sealing
 * every token with the user and the server bound into the additional data; tests use
 * {@link MemoryConnectionStore}. Nothing here is ever in an answer, a log line or a record.
 */

/** One user's tokens for one MCP server (the gateway is that user's OAuth client of the server). */
export interface StoredConnection {
  /** The gateway user id (an API key's `user`, or the identity-provider token's `sub`). */
  userId: string;
  /** The MCP server's slug. */
  server: string;
  /** The authorization server's issuer the tokens come from. */
  issuer: string;
  /** The client id the tokens were issued to (a refresh must present the same one). */
  clientId: string;
  /** The access token. Secret. */
  accessToken: string;
  /** The refresh token, when the server gave one. Secret. */
  refreshToken?: string;
  /** When the access token expires (ms since the epoch); undefined: the server did not say. */
  expiresAt?: number;
  /** Scopes granted (the token answer's `scope`, else the ones asked). */
  scopes: string[];
  /** When the connection was made (ms since the epoch). */
  createdAt: number;
  /** When the tokens were last refreshed (ms since the epoch); undefined: never. */
  lastRefreshedAt?: number;
}

/** A connection as operators and users see it: never a token. */
export type ConnectionSummary = Omit<StoredConnection, 'accessToken' | 'refreshToken'>;

/**
 * A connect link handed to a caller in a `-32042` answer: single use, 10 minutes, and only for
 * the user who got it.
 */
export interface ConnectRequest {
  /** The random id in the link (`/connect/<slug>?request=<id>`). */
  id: string;
  /** The caller who got the error: only this user may complete the link. */
  userId: string;
  /** The MCP server's slug. */
  server: string;
  /** When the link stops working (ms since the epoch). */
  expiresAt: number;
}

/** What {@link UpstreamConnectionStore.useConnectRequest} found. */
export type ConnectRequestUse =
  | { outcome: 'used_now'; request: ConnectRequest }
  /** Signed-in user is not the caller: nothing changed, the id still works for its user. */
  | { outcome: 'user_mismatch' }
  | { outcome: 'already_used' }
  | { outcome: 'expired' }
  | { outcome: 'unknown' };

/**
 * An authorization started in a browser, waiting for the server's redirect to
 * `PUBLIC_BASE_URL/oauth/upstream/callback`: found by its `state`, used once, on any instance.
 */
export interface PendingAuthorization {
  /** The `state` sent to the authorization server. */
  state: string;
  /** The PKCE code verifier. Secret. */
  codeVerifier: string;
  /** The user the tokens will belong to. */
  userId: string;
  /** The MCP server's slug. */
  server: string;
  /** The issuer the authorization was sent to (the `iss` of the answer must be it). */
  issuer: string;
  /** The client id used. */
  clientId: string;
  /** When it stops being accepted (ms since the epoch). */
  expiresAt: number;
}

/** A client registration the gateway obtained with RFC 7591 at an authorization server. */
export interface RegisteredClient {
  /** The MCP server's slug. */
  server: string;
  /** The authorization server's issuer. */
  issuer: string;
  clientId: string;
  /** Secret, when the server issued one. */
  clientSecret?: string;
  /** The `token_endpoint_auth_method` registered. */
  tokenEndpointAuthMethod: string;
}

/** What the work given to {@link UpstreamConnectionStore.withRefreshLock} decides. */
export interface RefreshDecision<T> {
  /** Stored in place of the connection (same user and server). */
  save?: StoredConnection;
  /** The connection is deleted (a refused refresh ends it). */
  remove?: boolean;
  /** What `withRefreshLock` resolves with. */
  result: T;
}

/** Where the upstream-credential core keeps its state. Every method may reject (database down). */
export interface UpstreamConnectionStore {
  /** The connection of `userId` to `server`, unsealed, or undefined. */
  getConnection(userId: string, server: string): Promise<StoredConnection | undefined>;
  /** Inserts or replaces the connection of `(userId, server)`. */
  saveConnection(connection: StoredConnection): Promise<void>;
  /**
   * Runs `work` while holding the refresh lock of `(userId, server)` (every instance on the same
   * database waits for it), with the connection as it is once the lock is held; applies its
   * decision before releasing the lock. A waiting instance then sees the refreshed connection, so
   * a refresh token is presented at most once.
   */
  withRefreshLock<T>(
    userId: string,
    server: string,
    work: (current: StoredConnection | undefined) => Promise<RefreshDecision<T>>,
  ): Promise<T>;
  /** Deletes the connection; resolves with it (for the revocation at the server), or undefined. */
  deleteConnection(userId: string, server: string): Promise<StoredConnection | undefined>;
  /** Deletes every connection of `userId` (their API key or grant was revoked); resolves with them. */
  deleteUserConnections(userId: string): Promise<StoredConnection[]>;
  /** Connections to `server`, oldest first: at most `limit` after the cursor `after` (a user id). */
  listConnections(server: string, page: { limit: number; after?: string }): Promise<ConnectionSummary[]>;
  /** Every connection of `userId`. */
  listUserConnections(userId: string): Promise<ConnectionSummary[]>;
  /** Stores a connect link's request. */
  createConnectRequest(request: ConnectRequest): Promise<void>;
  /**
   * Uses the connect request `id` for the signed-in `userId` at `now`: `used_now` only once, only
   * for its user and before it expires. A mismatch does not use it up.
   */
  useConnectRequest(id: string, userId: string, now: number): Promise<ConnectRequestUse>;
  /** Stores an authorization waiting for its callback. */
  savePendingAuthorization(pending: PendingAuthorization): Promise<void>;
  /** Takes (finds and deletes, at once) the pending authorization of `state`; undefined when none or expired. */
  takePendingAuthorization(state: string, now: number): Promise<PendingAuthorization | undefined>;
  /** The client registered at `issuer` for `server`, if any. */
  getRegisteredClient(server: string, issuer: string): Promise<RegisteredClient | undefined>;
  /** Stores a client registration. */
  saveRegisteredClient(client: RegisteredClient): Promise<void>;
  /**
   * Calls `listener` when a connection changes or goes on any instance (within about a second):
   * caches drop what they hold for it. Resolves with a function that stops listening.
   */
  onConnectionChange(listener: (userId: string, server: string) => void): Promise<() => Promise<void>>;
}

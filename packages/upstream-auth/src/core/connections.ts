/**
 * Each user's connection to each `oauth` MCP server, as the proxy uses it per request: the
 * stored access token from a bounded in-memory cache, refreshed before it expires under the
 * store's refresh lock (a refresh token is presented at most once across instances), one refresh
 * after an upstream 401, disconnection with revocation. Never a token in an event.
 */
import { UpstreamAuthUnavailableError, UpstreamAuthorizationFailedError, UpstreamRefreshRefusedError } from './errors';
import type { UpstreamOAuth, UpstreamOAuthServer } from './oauth-client';
import type { StoredConnection, UpstreamConnectionStore } from './store';

/** What happened to a connection, for audit and metrics. */
export type UpstreamConnectionOutcome =
  'connected' | 'refreshed' | 'refresh_refused' | 'refresh_failed' | 'disconnected';

/** An event of {@link UpstreamConnectionsOptions.onEvent}: never a token. */
export interface UpstreamConnectionEvent {
  outcome: UpstreamConnectionOutcome;
  userId: string;
  /** The MCP server's slug. */
  server: string;
  /** When (ms since the epoch). */
  at: number;
  /** Who disconnected (`disconnected`), when the host said. */
  by?: string;
  /**
   * The authorization server's `error` code (`refresh_refused`), the failure's reason
   * (`refresh_failed`), or `unauthorized` for a refresh after the server refused the token (`refreshed`).
   */
  reason?: string;
}

/** Outcome of one refresh attempt, for `gateway_upstream_token_refresh_total{server,outcome}`. */
export type RefreshOutcome = 'refreshed' | 'refused' | 'failed' | 'reused';

/** Options of {@link UpstreamConnections}. */
export interface UpstreamConnectionsOptions {
  /** The OAuth client. Required. */
  oauth: UpstreamOAuth;
  /** Where connections are kept. Required. */
  store: UpstreamConnectionStore;
  /** The `oauth` server of a slug (for the callback), or undefined when there is none. Required. */
  servers: (slug: string) => UpstreamOAuthServer | undefined | Promise<UpstreamOAuthServer | undefined>;
  /** Most connections held in memory (the least recently used goes first). Default 10000. */
  maxCachedConnections?: number;
  /** Most ms a revocation at disconnection may take (it is best-effort). Default 5000. */
  revokeTimeoutMs?: number;
  /** Called with every event (audit). Default none. Must not throw. */
  onEvent?: (event: UpstreamConnectionEvent) => void;
  /** Called after every refresh attempt (metrics). Default none. Must not throw. */
  onRefreshOutcome?: (server: string, outcome: RefreshOutcome) => void;
  /** The clock, in ms since the epoch. Default `Date.now`. */
  now?: () => number;
}

/** Whether `connection` is to be refreshed at `now`: less than min(60 s, half its lifetime) left. */
export function needsRefresh(connection: StoredConnection, now: number): boolean {
  if (connection.expiresAt === undefined) return false;
  const lifetime = connection.expiresAt - (connection.lastRefreshedAt ?? connection.createdAt);
  return connection.expiresAt - now < Math.min(60_000, lifetime / 2);
}

/** The connections (see the module). */
export class UpstreamConnections {
  readonly #oauth: UpstreamOAuth;
  readonly #store: UpstreamConnectionStore;
  readonly #servers: UpstreamConnectionsOptions['servers'];
  readonly #max: number;
  readonly #revokeTimeoutMs: number;
  readonly #onEvent: (event: UpstreamConnectionEvent) => void;
  readonly #onRefreshOutcome: (server: string, outcome: RefreshOutcome) => void;
  readonly #now: () => number;
  readonly #cache = new Map<string, StoredConnection>();
  readonly #refreshing = new Map<string, Promise<StoredConnection | undefined>>();
  #stopListening: (() => Promise<void>) | undefined;

  constructor(options: UpstreamConnectionsOptions) {
    if (typeof options !== 'object' || options === null || !options.oauth || !options.store)
      throw new TypeError('UpstreamConnections: pass { oauth, store, servers }.');
    if (typeof options.servers !== 'function')
      throw new TypeError('UpstreamConnections: `servers` must be a function (slug) => the oauth server or undefined.');
    this.#oauth = options.oauth;
    this.#store = options.store;
    this.#servers = options.servers;
    this.#max = options.maxCachedConnections ?? 10_000;
    if (!Number.isInteger(this.#max) || this.#max < 1)
      throw new TypeError(
        'UpstreamConnections: `maxCachedConnections` must be a whole number of at least 1 (default 10000).',
      );
    this.#revokeTimeoutMs = options.revokeTimeoutMs ?? 5000;
    this.#onEvent = options.onEvent ?? (() => undefined);
    this.#onRefreshOutcome = options.onRefreshOutcome ?? (() => undefined);
    this.#now = options.now ?? Date.now;
  }

  /** Listens to the store's connection changes (on every instance), dropping what the cache holds for them. */
  async start(): Promise<void> {
    if (this.#stopListening) return;
    this.#stopListening = await this.#store.onConnectionChange((userId, server) => this.evict(userId, server));
  }

  /** Stops listening; the cache is emptied. */
  async close(): Promise<void> {
    const stop = this.#stopListening;
    this.#stopListening = undefined;
    this.#cache.clear();
    if (stop) await stop();
  }

  /** Drops the cached connection of `(userId, server)`. */
  evict(userId: string, server: string): void {
    this.#cache.delete(`${userId}\n${server}`);
  }

  /** How many connections the cache holds. */
  get cachedConnections(): number {
    return this.#cache.size;
  }

  #remember(connection: StoredConnection): void {
    const key = `${connection.userId}\n${connection.server}`;
    this.#cache.delete(key);
    while (this.#cache.size >= this.#max) this.#cache.delete(this.#cache.keys().next().value!);
    this.#cache.set(key, connection);
  }

  #event(event: Omit<UpstreamConnectionEvent, 'at'>): void {
    this.#onEvent({ ...event, at: this.#now() });
  }

  /**
   * The access token held in memory for `(userId, server)` when it needs no refresh yet, else
   * undefined (then {@link accessToken}): never waits, so a call with a good token costs no promise.
   */
  cachedAccessToken(userId: string, server: string): string | undefined {
    const connection = this.#cache.get(`${userId}\n${server}`);
    return connection !== undefined && !needsRefresh(connection, this.#now()) ? connection.accessToken : undefined;
  }

  /**
   * The access token to send to `server` for `userId`, refreshed first when less than
   * min(60 s, half its lifetime) is left; undefined when there is no usable connection (the
   * caller is to connect: `connection_required`). Throws {@link UpstreamAuthUnavailableError}
   * when the token has expired and the authorization server cannot refresh it just now.
   */
  async accessToken(userId: string, server: UpstreamOAuthServer): Promise<string | undefined> {
    const key = `${userId}\n${server.slug}`;
    let connection = this.#cache.get(key);
    if (connection) this.#remember(connection);
    else {
      connection = await this.#store.getConnection(userId, server.slug);
      if (!connection) return undefined;
      this.#remember(connection);
    }
    const now = this.#now();
    if (!needsRefresh(connection, now)) return connection.accessToken;
    // Without a refresh token the token is used until it expires; then the connection ends.
    if (connection.refreshToken === undefined && connection.expiresAt! > now) return connection.accessToken;
    try {
      return (await this.#refresh(userId, server, connection.accessToken, false))?.accessToken;
    } catch (error) {
      // Not refreshed now (server down): the token is still sent while it has not expired.
      if (connection.expiresAt !== undefined && connection.expiresAt > now) return connection.accessToken;
      throw error;
    }
  }

  /**
   * After `server` answered 401 to `rejectedToken`: one refresh (unless another refresh already
   * replaced that token: then the new one) and its access token, or undefined when the
   * connection is over (refused refresh, or none: deleted).
   */
  async afterUnauthorized(
    userId: string,
    server: UpstreamOAuthServer,
    rejectedToken: string,
  ): Promise<string | undefined> {
    return (await this.#refresh(userId, server, rejectedToken, true))?.accessToken;
  }

  /** One refresh of `(userId, server)` at a time in this process; under the store's lock across instances. */
  #refresh(
    userId: string,
    server: UpstreamOAuthServer,
    staleToken: string,
    force: boolean,
  ): Promise<StoredConnection | undefined> {
    const key = `${userId}\n${server.slug}\n${staleToken}`;
    const running = this.#refreshing.get(key);
    if (running) return running;
    const refreshing = this.#refreshLocked(userId, server, staleToken, force).finally(() =>
      this.#refreshing.delete(key),
    );
    this.#refreshing.set(key, refreshing);
    return refreshing;
  }

  async #refreshLocked(
    userId: string,
    server: UpstreamOAuthServer,
    staleToken: string,
    force: boolean,
  ): Promise<StoredConnection | undefined> {
    type Result = { connection?: StoredConnection; outcome: RefreshOutcome; reason?: string };
    let result: Result;
    try {
      result = await this.#store.withRefreshLock<Result>(userId, server.slug, async (current) => {
        if (!current) return { result: { outcome: 'reused' } };
        // Another instance (or request) refreshed it while this one waited: use its result.
        if (current.accessToken !== staleToken && (force || !needsRefresh(current, this.#now())))
          return { result: { connection: current, outcome: 'reused' } };
        try {
          const next = await this.#oauth.refresh(current, server);
          return { save: next, result: { connection: next, outcome: 'refreshed' } };
        } catch (error) {
          if (error instanceof UpstreamRefreshRefusedError)
            return { remove: true, result: { outcome: 'refused', reason: error.providerError } };
          throw error;
        }
      });
    } catch (error) {
      const reason = error instanceof UpstreamAuthUnavailableError ? error.reason : 'store_failed';
      this.#onRefreshOutcome(server.slug, 'failed');
      this.#event({ outcome: 'refresh_failed', userId, server: server.slug, reason });
      throw error;
    }
    // No connection any more (deleted meanwhile): nothing was attempted, nothing to count.
    if (result.connection || result.outcome !== 'reused') this.#onRefreshOutcome(server.slug, result.outcome);
    if (result.connection) this.#remember(result.connection);
    else this.evict(userId, server.slug);
    // A refresh after the server refused a token is told apart (audited: "refreshed after a failure").
    if (result.outcome === 'refreshed')
      this.#event({ outcome: 'refreshed', userId, server: server.slug, ...(force ? { reason: 'unauthorized' } : {}) });
    if (result.outcome === 'refused')
      this.#event({ outcome: 'refresh_refused', userId, server: server.slug, reason: result.reason });
    return result.connection;
  }

  /**
   * Starts a connection of `userId` to `server`: saves the pending authorization and resolves
   * with the authorization server's URL to open in the user's browser.
   */
  async connect(userId: string, server: UpstreamOAuthServer): Promise<string> {
    const started = await this.#oauth.startAuthorization(userId, server);
    await this.#store.savePendingAuthorization(started.pending);
    return started.authorizationUrl;
  }

  /**
   * Completes the authorization whose redirect reached `callbackUrl`: takes its pending
   * authorization by `state` (once: a replay is refused), exchanges the code, saves and
   * resolves with the connection (without its tokens). Throws
   * {@link UpstreamAuthorizationFailedError} or {@link UpstreamAuthUnavailableError}.
   */
  async complete(callbackUrl: string | URL): Promise<Omit<StoredConnection, 'accessToken' | 'refreshToken'>> {
    const state = new URL(String(callbackUrl)).searchParams.get('state');
    const pending = state === null ? undefined : await this.#store.takePendingAuthorization(state, this.#now());
    if (!pending)
      throw new UpstreamAuthorizationFailedError(
        'state_mismatch',
        'The authorization answer is unknown, used or expired (state).',
      );
    const server = await this.#servers(pending.server);
    if (!server)
      throw new UpstreamAuthorizationFailedError(
        'state_mismatch',
        'The server of this authorization no longer uses oauth.',
      );
    const connection = await this.#oauth.finishAuthorization(pending, callbackUrl, server);
    await this.#store.saveConnection(connection);
    this.#remember(connection);
    this.#event({ outcome: 'connected', userId: connection.userId, server: connection.server });
    const { accessToken: _a, refreshToken: _r, ...summary } = connection;
    return summary;
  }

  /**
   * Ends the connection of `userId` to `server`: deletes it, then revokes its refresh token
   * (else access token) at the authorization server, best-effort within `revokeTimeoutMs`.
   * Resolves true when there was a connection.
   */
  async disconnect(userId: string, server: UpstreamOAuthServer, by?: string): Promise<boolean> {
    const removed = await this.#store.deleteConnection(userId, server.slug);
    this.evict(userId, server.slug);
    if (!removed) return false;
    this.#event({ outcome: 'disconnected', userId, server: server.slug, ...(by !== undefined ? { by } : {}) });
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.#oauth.revoke(removed, server).catch(() => false),
      new Promise((resolve) => {
        timer = setTimeout(resolve, this.#revokeTimeoutMs);
        timer.unref();
      }),
    ]);
    clearTimeout(timer);
    return true;
  }
}

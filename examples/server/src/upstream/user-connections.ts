/**
 * Each user's OAuth connections to the MCP servers with `upstream_auth.type: "oauth"` (CONTRACT
 * section 15), as the proxy and the connections pages use them: the access token of a call, read
 * from memory while it is good; refreshed before it expires (when less than min(60 s, half its
 * lifetime) is left) and after a server's `401`, at most once across instances (under the
 * store's refresh lock, the others use its result); the connect flow; disconnection, revoked at
 * the server. The protocol work (discovery, authorization, token requests) is `protocol`'s.
 */
import type {
  ConnectRequestUse,
  ConnectionSummary,
  OAuthUpstreamAuth,
  PendingAuthorization,
  StoredConnection,
  UpstreamConnectionStore,
} from '@gw/upstream-auth';
import type { ConnectFlows } from './connect-routes';
import type { UserConnections } from './upstream-credentials';

/** Tokens from a token endpoint. */
export interface UpstreamTokens {
  accessToken: string;
  refreshToken?: string;
  /** Seconds the access token lasts, when the server said. */
  expiresIn?: number;
  scopes?: string[];
}

/** The OAuth protocol with one server's authorization server, as the connections use it. */
export interface UpstreamOAuthProtocol {
  /** The authorization URL for `userId` (PKCE, `state`, `resource`, `scope`), and what to keep until the callback. */
  start(
    server: string,
    config: OAuthUpstreamAuth,
    userId: string,
  ): Promise<{ url: string; pending: PendingAuthorization }>;
  /** The tokens of the callback at `callbackUrl` for `pending` (`state` and `iss` checked, code exchanged with its verifier). */
  finish(
    server: string,
    config: OAuthUpstreamAuth,
    pending: PendingAuthorization,
    callbackUrl: URL,
  ): Promise<UpstreamTokens>;
  /** New tokens for `connection`'s refresh token; rejects with `refused: true` when the server refuses it. */
  refresh(server: string, config: OAuthUpstreamAuth, connection: StoredConnection): Promise<UpstreamTokens>;
  /** Revokes `connection`'s refresh token (or access token) at the server when it offers revocation. */
  revoke(server: string, config: OAuthUpstreamAuth, connection: StoredConnection): Promise<void>;
  /** The gateway's Client ID Metadata Document for `server`. */
  clientMetadataDocument(server: string): Record<string, unknown>;
}

/** What happened to a connection: audited and counted by the host (never a token). */
export interface ConnectionEvent {
  type: 'connected' | 'refreshed' | 'refreshed_after_failure' | 'refresh_refused' | 'refresh_failed' | 'disconnected';
  userId: string;
  server: string;
  /** Who ended it (`disconnected`): `admin:<name>`, `user:<id>`, `gateway`. */
  actor?: string;
}

/** A refusal of the connections pages (rendered as a gateway page with its status and code). */
export class ConnectFlowError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ConnectFlowError';
  }
}

/** What {@link createUserConnections} is built from. */
export interface UserConnectionsOptions {
  store: UpstreamConnectionStore;
  protocol: UpstreamOAuthProtocol;
  /** The `oauth` servers' configs now, by slug. */
  servers: () => ReadonlyMap<string, { type: string }>;
  onEvent?: (event: ConnectionEvent) => void;
  /** Most tokens held in memory. Default 10000. */
  maxCached?: number;
  /** Millisecond clock. Default `Date.now`. */
  now?: () => number;
}

/** One token held in memory. */
interface CachedToken {
  accessToken: string;
  /** From when it must be refreshed (ms); Infinity when the server gave no expiry. */
  refreshAt: number;
}

/** When a connection's access token is due for refresh: less than min(60 s, half its lifetime) left. */
export function refreshDueAt(
  connection: Pick<StoredConnection, 'expiresAt' | 'createdAt' | 'lastRefreshedAt'>,
): number {
  if (connection.expiresAt === undefined) return Number.POSITIVE_INFINITY;
  const issuedAt = connection.lastRefreshedAt ?? connection.createdAt;
  const lifetime = Math.max(0, connection.expiresAt - issuedAt);
  return connection.expiresAt - Math.min(60_000, lifetime / 2);
}

/** The connections, their cache and their flows. */
export interface UserConnectionsService extends UserConnections, ConnectFlows {
  /** Drops what the cache holds for `(userId, server)` (the store said it changed). */
  forget(userId: string, server: string): void;
  /** Ends every connection of `userId` (their API key or grant was revoked). */
  endUserConnections(userId: string, actor: string): Promise<void>;
}

/** Builds the connections over `store` and `protocol`. */
export function createUserConnections(options: UserConnectionsOptions): UserConnectionsService {
  const now = options.now ?? Date.now;
  const maxCached = options.maxCached ?? 10_000;
  const cache = new Map<string, CachedToken>();
  /** Refreshes under way on this instance, by key: concurrent calls wait for the same one. */
  const refreshing = new Map<string, Promise<string | undefined>>();
  const key = (userId: string, server: string) => `${userId}\n${server}`;
  const emit = (event: ConnectionEvent) => {
    try {
      options.onEvent?.(event);
    } catch {
      // An observer's failure is not the connection's.
    }
  };
  const remember = (connection: StoredConnection): string => {
    const k = key(connection.userId, connection.server);
    cache.delete(k);
    if (cache.size >= maxCached) cache.delete(cache.keys().next().value as string);
    cache.set(k, { accessToken: connection.accessToken, refreshAt: refreshDueAt(connection) });
    return connection.accessToken;
  };
  const configOf = (server: string): OAuthUpstreamAuth => {
    const config = options.servers().get(server);
    if (config?.type !== 'oauth')
      throw new ConnectFlowError(
        404,
        'mcp_server_not_found',
        `No MCP server "${server.slice(0, 64)}" needs a connection.`,
      );
    return config as OAuthUpstreamAuth;
  };

  /**
   * Refreshes `(userId, server)` under the store's lock: `due` when its time came, `rejected` after
   * the server refused that token. Another instance's (or call's) refresh in between is used as is.
   */
  const refresh = (userId: string, server: string, rejected: string | undefined): Promise<string | undefined> => {
    const k = key(userId, server);
    const running = refreshing.get(k);
    if (running !== undefined) return running;
    const work = options.store
      .withRefreshLock(userId, server, async (current) => {
        if (current === undefined) return { result: undefined as StoredConnection | undefined };
        const replaced = rejected !== undefined ? current.accessToken !== rejected : now() < refreshDueAt(current);
        if (replaced) return { result: current };
        if (current.refreshToken === undefined) {
          // Nothing to refresh with: a refused or expired token ends the connection.
          if (rejected === undefined && current.expiresAt !== undefined && now() < current.expiresAt)
            return { result: current };
          emit({ type: 'refresh_refused', userId, server });
          return { remove: true, result: undefined };
        }
        let tokens: UpstreamTokens;
        try {
          tokens = await options.protocol.refresh(server, configOf(server), current);
        } catch (error) {
          if ((error as { refused?: unknown })?.refused === true) {
            emit({ type: 'refresh_refused', userId, server });
            return { remove: true, result: undefined };
          }
          emit({ type: 'refresh_failed', userId, server });
          // The server's authorization server is down: the token still good is used meanwhile.
          if (rejected === undefined && current.expiresAt !== undefined && now() < current.expiresAt)
            return { result: current };
          throw error;
        }
        const at = now();
        const next: StoredConnection = {
          ...current,
          accessToken: tokens.accessToken,
          refreshToken: tokens.refreshToken ?? current.refreshToken,
          expiresAt: tokens.expiresIn === undefined ? undefined : at + tokens.expiresIn * 1000,
          scopes: tokens.scopes ?? current.scopes,
          lastRefreshedAt: at,
        };
        emit({ type: rejected === undefined ? 'refreshed' : 'refreshed_after_failure', userId, server });
        return { save: next, result: next };
      })
      .then((connection) => {
        if (connection === undefined) {
          cache.delete(k);
          return undefined;
        }
        return remember(connection);
      })
      .finally(() => refreshing.delete(k));
    refreshing.set(k, work);
    return work;
  };

  const service: UserConnectionsService = {
    cachedAccessToken(userId, server) {
      const held = cache.get(key(userId, server));
      return held !== undefined && now() < held.refreshAt ? held.accessToken : undefined;
    },
    async accessToken(userId, server) {
      const held = service.cachedAccessToken(userId, server);
      if (held !== undefined) return held;
      const stored = await options.store.getConnection(userId, server);
      if (stored === undefined) {
        cache.delete(key(userId, server));
        return undefined;
      }
      if (now() < refreshDueAt(stored)) return remember(stored);
      return refresh(userId, server, undefined);
    },
    async afterUnauthorized(userId, server, rejectedToken, final) {
      if (!final) return refresh(userId, server, rejectedToken);
      // The retry was refused too: the connection ends.
      cache.delete(key(userId, server));
      const ended = await options.store.deleteConnection(userId, server);
      if (ended !== undefined) emit({ type: 'refresh_refused', userId, server });
      return undefined;
    },
    createConnectRequest: (request) => options.store.createConnectRequest(request),
    useConnectRequest: (id, userId, at): Promise<ConnectRequestUse> => options.store.useConnectRequest(id, userId, at),
    async start(userId, server) {
      const { url, pending } = await options.protocol.start(server, configOf(server), userId);
      await options.store.savePendingAuthorization(pending);
      return { url, state: pending.state };
    },
    async finish(callbackUrl, state) {
      const pending = await options.store.takePendingAuthorization(state, now());
      if (pending === undefined)
        throw new ConnectFlowError(
          400,
          'connect_state_invalid',
          'This authorization was used already or took too long (10 minutes): start the connection again.',
        );
      const error = callbackUrl.searchParams.get('error');
      if (error !== null)
        throw new ConnectFlowError(
          403,
          'connection_refused',
          `The MCP server's authorization server did not connect it (${/^[\x21-\x7e]{1,64}$/.test(error) ? error : 'error'}).`,
        );
      const tokens = await options.protocol.finish(pending.server, configOf(pending.server), pending, callbackUrl);
      const at = now();
      const connection: StoredConnection = {
        userId: pending.userId,
        server: pending.server,
        issuer: pending.issuer,
        clientId: pending.clientId,
        accessToken: tokens.accessToken,
        scopes: tokens.scopes ?? [],
        createdAt: at,
      };
      if (tokens.refreshToken !== undefined) connection.refreshToken = tokens.refreshToken;
      if (tokens.expiresIn !== undefined) connection.expiresAt = at + tokens.expiresIn * 1000;
      await options.store.saveConnection(connection);
      remember(connection);
      emit({ type: 'connected', userId: pending.userId, server: pending.server });
      return { userId: pending.userId, server: pending.server };
    },
    listUserConnections: (userId): Promise<ConnectionSummary[]> => options.store.listUserConnections(userId),
    async disconnect(userId, server, actor) {
      cache.delete(key(userId, server));
      const ended = await options.store.deleteConnection(userId, server);
      if (ended === undefined) return false;
      emit({ type: 'disconnected', userId, server, actor });
      const config = options.servers().get(server);
      if (config?.type === 'oauth')
        await options.protocol.revoke(server, config as OAuthUpstreamAuth, ended).catch(() => undefined);
      return true;
    },
    clientMetadataDocument(server) {
      const config = options.servers().get(server);
      if (config?.type !== 'oauth' || (config as OAuthUpstreamAuth).client !== undefined) return undefined;
      return options.protocol.clientMetadataDocument(server);
    },
    forget(userId, server) {
      cache.delete(key(userId, server));
    },
    async endUserConnections(userId, actor) {
      for (const k of cache.keys()) if (k.startsWith(`${userId}\n`)) cache.delete(k);
      const ended = await options.store.deleteUserConnections(userId);
      for (const connection of ended) {
        emit({ type: 'disconnected', userId, server: connection.server, actor });
        const config = options.servers().get(connection.server);
        if (config?.type === 'oauth')
          await options.protocol
            .revoke(connection.server, config as OAuthUpstreamAuth, connection)
            .catch(() => undefined);
      }
    },
  };
  return service;
}

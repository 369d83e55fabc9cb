/**
 * Each user's OAuth connections to the MCP servers with `upstream_auth.type: "oauth"` (CONTRACT
 * section 15), as the proxy and the connections pages use them: `@gw/upstream-auth`'s
 * {@link UpstreamConnections} (tokens held in memory, refreshed once across instances) over the
 * catalog's store, with the servers of the catalog's snapshot.
 */
import type {
  ConnectRequestUse,
  ConnectionSummary,
  OAuthUpstreamAuth,
  UpstreamAuthConfig,
  UpstreamConnectionStore,
  UpstreamConnections,
  UpstreamOAuth,
  UpstreamOAuthServer,
} from '@gw/upstream-auth';
import type { ConnectFlows } from './connect-routes';
import type { UserConnections } from './upstream-credentials';

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

/** What {@link userConnections} is built from. */
export interface UserConnectionsOptions {
  connections: UpstreamConnections;
  oauth: UpstreamOAuth;
  store: UpstreamConnectionStore;
  /** The servers' `upstream_auth` now, by slug. */
  servers: () => ReadonlyMap<string, UpstreamAuthConfig>;
  /** The servers' URLs now, by slug. */
  urls: () => ReadonlyMap<string, string>;
}

/** The connections as the proxy ({@link UserConnections}) and the pages ({@link ConnectFlows}) use them. */
export interface UserConnectionsService extends UserConnections, ConnectFlows {
  /** Ends every connection of `userId` (their API key or grant was revoked), revoked at the servers. */
  endUserConnections(userId: string, actor: string): Promise<void>;
}

/** The `oauth` server `slug` of the snapshot, or undefined. */
function oauthServer(options: UserConnectionsOptions, slug: string): UpstreamOAuthServer | undefined {
  const auth = options.servers().get(slug);
  const url = options.urls().get(slug);
  return auth?.type === 'oauth' && url !== undefined ? { slug, url, auth: auth as OAuthUpstreamAuth } : undefined;
}

/** Builds the service over the package's connections. */
export function userConnections(options: UserConnectionsOptions): UserConnectionsService {
  const { connections, store } = options;
  const serverOf = (slug: string): UpstreamOAuthServer => {
    const server = oauthServer(options, slug);
    if (server === undefined)
      throw new ConnectFlowError(
        404,
        'mcp_server_not_found',
        `No MCP server "${slug.slice(0, 64)}" needs a connection.`,
      );
    return server;
  };
  return {
    cachedAccessToken: (userId, slug) => connections.cachedAccessToken(userId, slug),
    async accessToken(userId, slug) {
      const server = oauthServer(options, slug);
      return server === undefined ? undefined : connections.accessToken(userId, server);
    },
    async afterUnauthorized(userId, slug, rejected, final) {
      const server = oauthServer(options, slug);
      if (server === undefined) return undefined;
      if (!final) return connections.afterUnauthorized(userId, server, rejected);
      // The retry was refused too: the connection ends (audited as ended by the gateway).
      await connections.disconnect(userId, server, 'gateway:retry_refused');
      return undefined;
    },
    createConnectRequest: (request) => store.createConnectRequest(request),
    useConnectRequest: (id, userId, at): Promise<ConnectRequestUse> => store.useConnectRequest(id, userId, at),
    async start(userId, slug) {
      const url = await connections.connect(userId, serverOf(slug));
      const state = new URL(url).searchParams.get('state');
      if (state === null) throw new Error('The authorization URL has no state.');
      return { url, state };
    },
    async finish(callbackUrl) {
      const made = await connections.complete(callbackUrl);
      return { userId: made.userId, server: made.server };
    },
    listUserConnections: (userId): Promise<ConnectionSummary[]> => store.listUserConnections(userId),
    async disconnect(userId, slug, actor) {
      const server = oauthServer(options, slug);
      if (server !== undefined) return connections.disconnect(userId, server, actor);
      return (await store.deleteConnection(userId, slug)) !== undefined;
    },
    clientMetadataDocument(slug) {
      const server = oauthServer(options, slug);
      return server === undefined || server.auth.client !== undefined
        ? undefined
        : options.oauth.clientMetadataDocument(slug);
    },
    async endUserConnections(userId, actor) {
      for (const connection of await store.listUserConnections(userId)) {
        const server = oauthServer(options, connection.server);
        if (server !== undefined) await connections.disconnect(userId, server, actor);
        else await store.deleteConnection(userId, connection.server);
      }
    },
  };
}

/**
 * The servers' own credentials (CONTRACT section 15), assembled for the gateway: the credential
 * source the MCP proxy asks, each user's OAuth connections over the catalog's database, the
 * connections pages, and their audit entries and metrics.
 */
import type { Logger } from 'pino';
import type { UpstreamCredentialSource } from '@gw/mcp-gateway';
import type { AuthorizationServer } from '@gw/oauth';
import {
  AuthorizationServerDiscovery,
  TokenExchanger,
  UpstreamConnections,
  UpstreamOAuth,
  createGuardedFetch,
  type ConnectionSummary,
  type UpstreamAuthConfig,
  type UpstreamConnectionEvent,
  type UpstreamConnectionStore,
} from '@gw/upstream-auth';
import type { GatewayCatalog } from '../catalog/open-catalog';
import type { GatewayMetrics } from '../observability/metrics';
import { connectRoutes, type ConnectRouters } from './connect-routes';
import { createUpstreamCredentials } from './upstream-credentials';
import { userConnections, type UserConnectionsService } from './user-connections';

/** What {@link createUpstreamAccess} is built from. */
export interface UpstreamAccessOptions {
  /** `PUBLIC_BASE_URL` (connect links, the callback, the client metadata documents). */
  publicBaseUrl: string | undefined;
  /** The servers' `upstream_auth` now, by slug (the catalog's snapshot). */
  servers: () => ReadonlyMap<string, UpstreamAuthConfig>;
  /** The servers' URLs now, by slug. */
  urls: () => ReadonlyMap<string, string>;
  /** The catalog (its database keeps the connections); without it, `oauth` servers are refused. */
  catalog: GatewayCatalog | undefined;
  /** The store of the connections, over the catalog's database. */
  store: UpstreamConnectionStore | undefined;
  /** The `jwt_validation` issuer: where tokens are exchanged when a server names no other. */
  identityProviderIssuer: string | undefined;
  /** Section 11's authorization server now (its sign-in serves the connections pages). */
  authorizationServer: () => AuthorizationServer | undefined;
  metrics: GatewayMetrics;
  logger: Logger;
}

/** The pieces the gateway mounts. */
export interface UpstreamAccess {
  credentials: UpstreamCredentialSource;
  /** The connections pages and the callback; undefined without a catalog and `PUBLIC_BASE_URL`. */
  routes: ConnectRouters | undefined;
  connections: UserConnectionsService | undefined;
  /** The admin API's view of the connections (`GET`/`DELETE /admin/v1/mcp-servers/<slug>/connections`); undefined without a catalog. */
  admin:
    | {
        list(server: string, page: { limit: number; after?: string }): Promise<ConnectionSummary[]>;
        disconnect(userId: string, server: string, actor: string): Promise<boolean>;
      }
    | undefined;
  /** Stops following the store's changes. */
  close(): Promise<void>;
}

/** The audit action of a connection event, or undefined (refreshes are counted, and audited only after a refusal). */
function auditAction(
  event: UpstreamConnectionEvent,
):
  | 'upstream_connected'
  | 'upstream_refreshed_after_failure'
  | 'upstream_refresh_refused'
  | 'upstream_disconnected'
  | undefined {
  switch (event.outcome) {
    case 'connected':
      return 'upstream_connected';
    case 'refreshed':
      return event.reason === 'unauthorized' ? 'upstream_refreshed_after_failure' : undefined;
    case 'refresh_refused':
      return 'upstream_refresh_refused';
    case 'disconnected':
      return 'upstream_disconnected';
    default:
      return undefined;
  }
}

/** Builds the servers' credentials and the connections pages; starts following the store's changes. */
export function createUpstreamAccess(options: UpstreamAccessOptions): UpstreamAccess {
  const { catalog, store, metrics, logger, publicBaseUrl } = options;
  // One guarded fetch (no redirects, 5 s, 64 KiB, never link-local or metadata addresses) for every
  // request to an authorization server or identity provider.
  const discovery = new AuthorizationServerDiscovery({ fetch: createGuardedFetch() });
  let service: UserConnectionsService | undefined;
  /** Disconnections the admin API is making (it writes their audit entry itself). */
  const adminDisconnects = new Set<string>();
  let connections: UpstreamConnections | undefined;
  if (catalog !== undefined && store !== undefined && publicBaseUrl !== undefined) {
    const audit = (event: UpstreamConnectionEvent) => {
      const action = auditAction(event);
      const key = `${event.userId}\n${event.server}`;
      // The admin API audits its own disconnections, with the administrator.
      if (event.outcome === 'disconnected' && adminDisconnects.delete(key)) return;
      if (action === undefined) return;
      const actor = event.by ?? (event.outcome === 'connected' ? `user:${event.userId}` : 'gateway');
      catalog.store
        .auditUpstreamConnection(actor, action, event.server, event.userId)
        .catch((error: unknown) =>
          logger.warn(
            { err: { message: (error as Error).message } },
            'audit entry of an upstream connection not written',
          ),
        );
    };
    const oauth = new UpstreamOAuth({ publicBaseUrl, store, discovery });
    connections = new UpstreamConnections({
      oauth,
      store,
      servers: (slug) => {
        const auth = options.servers().get(slug);
        const url = options.urls().get(slug);
        return auth?.type === 'oauth' && url !== undefined ? { slug, url, auth } : undefined;
      },
      onEvent: audit,
      onRefreshOutcome: (server, outcome) => metrics.recordUpstreamTokenRefresh(server, outcome),
    });
    service = userConnections({ connections, oauth, store, servers: options.servers, urls: options.urls });
  }
  const started = connections?.start().catch((error: unknown) => {
    logger.error(
      { err: { message: (error as Error).message } },
      'upstream connections: changes made by other instances are not followed',
    );
  });
  const exchanger = new TokenExchanger({ discovery, defaultIssuer: options.identityProviderIssuer });
  const credentials = createUpstreamCredentials({
    publicBaseUrl: publicBaseUrl ?? '',
    servers: options.servers,
    connections: service,
    // A gateway OAuth token of an OpenID sign-in: the provider's access token kept with its grant.
    providerAccessToken: async (identity) => {
      const grantId = identity.claims.gid;
      const server = options.authorizationServer();
      return typeof grantId === 'string' && server !== undefined ? server.providerAccessToken(grantId) : undefined;
    },
    exchanges: {
      exchange: (slug, auth, subjectToken, subjectTokenType) =>
        exchanger.exchange({ slug, url: options.urls().get(slug) ?? '', auth }, subjectToken, subjectTokenType),
    },
  });
  const routes =
    service === undefined
      ? undefined
      : connectRoutes({ authorizationServer: options.authorizationServer, servers: options.servers, flows: service });
  const adminHook =
    service === undefined || store === undefined
      ? undefined
      : {
          list: (server: string, page: { limit: number; after?: string }) => store.listConnections(server, page),
          disconnect: async (userId: string, server: string, actor: string) => {
            const key = `${userId}\n${server}`;
            adminDisconnects.add(key);
            try {
              return await (service as UserConnectionsService).disconnect(userId, server, actor);
            } finally {
              adminDisconnects.delete(key);
            }
          },
        };
  return {
    credentials,
    routes,
    admin: adminHook,
    connections: service,
    close: async () => {
      await started;
      await connections?.close();
    },
  };
}

/**
 * The servers' own credentials (CONTRACT section 15), assembled for the gateway: the credential
 * source the MCP proxy asks, each user's OAuth connections over the catalog's database, the
 * connections pages, and their audit entries and metrics.
 */
import type { Logger } from 'pino';
import type { UpstreamCredentialSource } from '@gw/identity-forwarding';
import type { AuthorizationServer } from '@gw/oauth';
import type { UpstreamAuthConfig, UpstreamConnectionStore } from '@gw/upstream-auth';
import type { GatewayCatalog } from '../catalog/open-catalog';
import type { GatewayMetrics } from '../observability/metrics';
import { connectRoutes, type ConnectRouters } from './connect-routes';
import { createUpstreamCredentials, type TokenExchanges } from './upstream-credentials';
import {
  createUserConnections,
  type ConnectionEvent,
  type UpstreamOAuthProtocol,
  type UserConnectionsService,
} from './user-connections';

/** What {@link createUpstreamAccess} is built from. */
export interface UpstreamAccessOptions {
  /** `PUBLIC_BASE_URL` (connect links, the callback, the client metadata documents). */
  publicBaseUrl: string | undefined;
  /** The servers' `upstream_auth` now, by slug (the catalog's snapshot). */
  servers: () => ReadonlyMap<string, UpstreamAuthConfig>;
  /** The catalog (its database keeps the connections); without it, `oauth` servers are refused. */
  catalog: GatewayCatalog | undefined;
  /** The store of the connections, over the catalog's database. */
  store: UpstreamConnectionStore | undefined;
  /** The OAuth protocol with the servers' authorization servers. */
  protocol: UpstreamOAuthProtocol | undefined;
  /** Token exchange at the identity provider. */
  exchanges: TokenExchanges | undefined;
  /** Section 11's authorization server now (its sign-in serves the connections pages). */
  authorizationServer: () => AuthorizationServer | undefined;
  metrics: GatewayMetrics;
  logger: Logger;
}

/** The pieces the gateway mounts. */
export interface UpstreamAccess {
  credentials: UpstreamCredentialSource;
  /** The connections pages and the callback; undefined without a catalog. */
  routes: ConnectRouters | undefined;
  connections: UserConnectionsService | undefined;
  /** Stops following the store's changes. */
  close(): Promise<void>;
}

const AUDIT_ACTIONS: Record<ConnectionEvent['type'], string | undefined> = {
  connected: 'upstream.connected',
  refreshed: undefined,
  refreshed_after_failure: 'upstream.refreshed_after_failure',
  refresh_refused: 'upstream.refresh_refused',
  refresh_failed: undefined,
  disconnected: 'upstream.disconnected',
};

/** Builds the servers' credentials and the connections pages; starts following the store's changes. */
export function createUpstreamAccess(options: UpstreamAccessOptions): UpstreamAccess {
  const { catalog, store, protocol, metrics, logger } = options;
  let connections: UserConnectionsService | undefined;
  let listening: Promise<(() => Promise<void>) | undefined> = Promise.resolve(undefined);
  if (catalog !== undefined && store !== undefined && protocol !== undefined) {
    const audit = (event: ConnectionEvent) => {
      const action = AUDIT_ACTIONS[event.type];
      if (action === undefined) return;
      const actor = event.actor ?? (event.type === 'connected' ? `user:${event.userId}` : 'gateway');
      catalog.db
        .query('INSERT INTO gw_audit (actor, action, kind, slug, fields) VALUES ($1, $2, $3, $4, $5)', [
          actor.slice(0, 200),
          action,
          'mcp-servers',
          event.server.slice(0, 300),
          JSON.stringify([`user=${event.userId.slice(0, 200)}`]),
        ])
        .catch((error: unknown) =>
          logger.warn(
            { err: { message: (error as Error).message } },
            'audit entry of an upstream connection not written',
          ),
        );
    };
    connections = createUserConnections({
      store,
      protocol,
      servers: options.servers,
      onEvent: (event) => {
        if (event.type.startsWith('refresh')) metrics.recordUpstreamTokenRefresh(event.server, event.type);
        audit(event);
      },
    });
    const service = connections;
    // Another instance refreshed, connected or disconnected: what this one holds is dropped.
    listening = store
      .onConnectionChange((userId, server) => service.forget(userId, server))
      .catch((error: unknown) => {
        logger.error(
          { err: { message: (error as Error).message } },
          'upstream connections: changes made by other instances are not followed',
        );
        return undefined;
      });
  }
  const credentials = createUpstreamCredentials({
    publicBaseUrl: options.publicBaseUrl ?? '',
    servers: options.servers,
    connections,
    exchanges: options.exchanges,
  });
  const routes =
    connections === undefined
      ? undefined
      : connectRoutes({
          authorizationServer: options.authorizationServer,
          servers: options.servers,
          flows: connections,
        });
  return {
    credentials,
    routes,
    connections,
    close: async () => {
      await (
        await listening
      )?.();
    },
  };
}

import type { RequestListener } from 'node:http';
import type { Logger } from 'pino';
import type { GatewayMetrics } from '../observability/metrics';
import { renderError, requestTargetRefusal, routeNotFoundError } from './errors';
import { trackRequest, type RequestRecordSink } from './request-context';
import { serveRouteGroup, type RouteGroup, type RouteTable } from './route-table';

export type { NodeMiddleware } from './route-table';

/** What the listener is built from: the route table the Express app is mounted from, and that app. */
export interface DirectListenerOptions {
  logger: Logger;
  metrics: GatewayMetrics;
  /** The gateway's route table: its route groups are served here, everything else by `app`. */
  routes: RouteTable;
  /** The Express app mounted from `routes` (`mountRouteTable`): every request the listener leaves. */
  app: RequestListener;
  /** Where request records go besides the log. Default: the log only. */
  recordSink?: RequestRecordSink;
}

/** A route group as the listener dispatches to it. */
export interface DirectRouteGroup {
  group: RouteGroup;
  /**
   * Lower-cased paths below the prefix that an Express-only route of the table claims (such as
   * `/mcp/.well-known/jwks.json`): a request whose path starts with one goes to the Express app,
   * which matches paths without regard to case or a trailing slash.
   */
  leftToApp: readonly string[];
}

/** A path as an Express-only route claims it: lower-cased, cut before its first parameter. */
function claimedPathPrefix(path: string): string {
  const parameter = path.search(/[:*]/);
  return (parameter === -1 ? path : path.slice(0, parameter)).toLowerCase();
}

/**
 * The table's route groups by prefix, each with the paths below it that Express-only routes
 * claim. Throws when a prefix is not one path segment or is declared twice.
 */
export function directRouteGroups(routes: RouteTable): Map<string, DirectRouteGroup> {
  const groups = new Map<string, DirectRouteGroup>();
  const claimed = routes.flatMap((entry) => (entry.kind === 'app' ? entry.paths.map(claimedPathPrefix) : []));
  for (const entry of routes) {
    if (entry.kind !== 'group') continue;
    if (!/^\/[^/?#]+$/.test(entry.prefix)) {
      throw new TypeError(`A route group's prefix must be one path segment, such as /v1, not ${entry.prefix}.`);
    }
    if (groups.has(entry.prefix)) throw new TypeError(`The route group ${entry.prefix} is declared twice.`);
    const below = `${entry.prefix.toLowerCase()}/`;
    // An Express-only route at the prefix itself (or above it) would take the whole group.
    const leftToApp = claimed.filter((path) => path.startsWith(below) || below.startsWith(path));
    groups.set(entry.prefix, { group: entry, leftToApp });
  }
  return groups;
}

/** True when an Express-only route claims `path`. */
function isLeftToApp(direct: DirectRouteGroup, path: string): boolean {
  if (direct.leftToApp.length === 0) return false;
  const lower = path.toLowerCase();
  return direct.leftToApp.some((claimed) => lower.startsWith(claimed));
}

/**
 * The gateway's node:http listener, derived from its route table. A request below a route
 * group's prefix (`/v1/…`, `/mcp/<slug>…`) goes straight to {@link serveRouteGroup} with the same
 * request context, authentication and error rendering as the Express app, which serves the rest
 * (health, metrics, key sets, metadata, the admin API, and any path the Express router would
 * match differently: `/V1/…`, `/v1` alone). Skipping the Express router more than halves the
 * gateway's CPU per request on these routes (`docs/decisions.md`).
 */
export function createDirectListener(options: DirectListenerOptions): RequestListener {
  const { logger, metrics, app, recordSink } = options;
  const groups = directRouteGroups(options.routes);

  return function gatewayListener(req, res) {
    const refusal = requestTargetRefusal(req);
    if (refusal) {
      trackRequest(logger, metrics, req, res, '/', recordSink);
      return renderError(logger, res, '/', refusal);
    }
    const url = req.url ?? '/';
    const prefixEnd = url.indexOf('/', 1);
    const direct = prefixEnd === -1 ? undefined : groups.get(url.slice(0, prefixEnd));
    if (direct === undefined) return app(req, res);
    const query = url.indexOf('?');
    const path = query === -1 ? url : url.slice(0, query);
    if (isLeftToApp(direct, path)) return app(req, res);
    trackRequest(logger, metrics, req, res, path, recordSink);
    // Below the mount point, as the handlers (and Express) expect.
    req.url = url.slice(prefixEnd);
    const method = req.method;
    serveRouteGroup(direct.group, req, res, path.slice(prefixEnd), (error) =>
      renderError(logger, res, path, error ?? routeNotFoundError(method, path)),
    );
  };
}

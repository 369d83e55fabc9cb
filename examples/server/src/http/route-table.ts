import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Express, RequestHandler } from 'express';
import type { Authenticator, GatewayIdentity } from '@gw/identity-forwarding';
import type { ModelRoutes } from '@gw/model-router';
import { SpanKind, SpanStatusCode, requestTraceContext, startSpan } from '@gw/tracing';
import type { RouteLimits } from '../limits/limit-step';
import { readMetadata } from '../observability/metadata';
import { requestState, TRACER_NAME } from './request-context';

/** An Express-style middleware called with plain node:http objects. */
export type NodeMiddleware = (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void) => void;

/** Called when a route group is done with a request: with the error to render, or with none when no handler answered. */
export type RouteGroupDone = (error?: unknown) => void;

/**
 * One handler of a {@link RouteGroup}, tried in order: `routes` answers every request its
 * `match` finds (and none other); `middleware` answers or calls `next()` to pass on.
 */
export type RouteGroupHandler =
  | { readonly kind: 'routes'; readonly routes: ModelRoutes }
  | { readonly kind: 'middleware'; readonly middleware: NodeMiddleware };

/**
 * Authenticated routes below one path prefix (`/v1`, `/mcp`). The server's listener serves them
 * without the Express router (`createDirectListener`); the Express app mounts the same group at
 * `prefix` ({@link mountRouteTable}). Both run {@link serveRouteGroup}, so they answer alike.
 */
export interface RouteGroup {
  readonly kind: 'group';
  /** The mount point: one path segment, such as `/v1`. Handlers see the path below it. */
  readonly prefix: string;
  /** Who is calling: every request of the group is authenticated before any handler runs. */
  readonly authenticator: Authenticator;
  /**
   * The RFC 9728 metadata URL that 401 challenges name (`resource_metadata`), from the request
   * with its path below `prefix`. Default: none.
   */
  readonly resourceMetadataUrl?: (req: IncomingMessage) => string | undefined;
  /**
   * The protected resource a request is for (`<PUBLIC_BASE_URL>/mcp/<slug>`, `<PUBLIC_BASE_URL>/v1`),
   * from the request with its path below `prefix`: a gateway OAuth access token must be for it.
   * Default: none (such tokens are refused).
   */
  readonly resource?: (req: IncomingMessage) => string | undefined;
  /** The handlers, in order; a request none answers is `404 route_not_found`. */
  readonly handlers: readonly RouteGroupHandler[];
  /**
   * Limits, budgets and cost (CONTRACT section 14), around every request of the group: the model
   * routes reserve through it before the provider, and the request's record step sets `costUsd`
   * and settles the reservation once. Default: none (no cost, no limits).
   */
  readonly limits?: RouteLimits;
}

/**
 * Routes only the Express app serves (health, metrics, key sets, metadata, the admin API): `GET`
 * routes at exact paths (`app.get`, HEAD included), or `ALL` methods at and below each path
 * (`app.use`). The listener leaves every request below one of `paths` to the Express app.
 */
export interface AppRoute {
  readonly kind: 'app';
  readonly method: 'GET' | 'ALL';
  /** Express paths; a `:name` parameter matches one segment. */
  readonly paths: readonly string[];
  readonly handler: RequestHandler;
}

/**
 * The one authentication of every route at and below `prefix` (`/admin`): {@link mountRouteTable}
 * mounts `authenticate` there before the routes, and refuses a table with a route below
 * {@link ADMIN_PREFIX} that no gate mounted earlier covers, so an admin route cannot be added
 * without it. `authenticate` answers (or passes an error to `next`) when the caller is refused.
 */
export interface AuthenticationGate {
  readonly kind: 'gate';
  /** The mount point, such as `/admin`. */
  readonly prefix: string;
  readonly authenticate: NodeMiddleware;
}

/** The paths every route below must sit behind an {@link AuthenticationGate}: the admin API's. */
export const ADMIN_PREFIX = '/admin';

/** A route table entry: served by both the listener and the Express app, or by the Express app alone. */
export type RouteTableEntry = RouteGroup | AppRoute | AuthenticationGate;

/**
 * Every route of the gateway, each declared once, in the order the Express app mounts them. The
 * Express app ({@link mountRouteTable}) and the listener (`createDirectListener`) are both
 * derived from it.
 */
export type RouteTable = readonly RouteTableEntry[];

/**
 * Serves one request of `group`: authenticates the caller (a failure goes to `done` with its
 * challenge), sets `req.callerIdentity`, then tries the handlers in order. `pathBelow` is the
 * request path below the prefix, without its query string, and `req.url` is already below the
 * prefix. Whatever a handler throws or rejects with goes to `done`, so no request can end the
 * process.
 */
export function serveRouteGroup(
  group: RouteGroup,
  req: IncomingMessage,
  res: ServerResponse,
  pathBelow: string,
  done: RouteGroupDone,
): void {
  const challenge =
    group.resourceMetadataUrl || group.resource
      ? { resourceMetadataUrl: group.resourceMetadataUrl?.(req), resource: group.resource?.(req) }
      : undefined;
  // Every record of the group gets its cost (0 for a refused caller), so the step is set first.
  if (group.limits) requestState(req).limits = group.limits;
  const { span } = startSpan(TRACER_NAME, 'gateway.authenticate', requestTraceContext(req), SpanKind.INTERNAL);
  group.authenticator
    .authenticate(req.rawHeaders, challenge)
    .then(
      (identity) => {
        span.setAttribute('gateway.auth.method', identity.method);
        span.end();
        (req as IncomingMessage & { callerIdentity?: GatewayIdentity }).callerIdentity = identity;
        const state = requestState(req);
        state.identity = identity;
        if (identity.method === 'api_key') state.keyHint = apiKeyHint(req);
        // Metadata is read once the caller is known: a stranger learns nothing from its checks.
        state.metadata = readMetadata(req.headers);
        runHandlers(group.handlers, 0, req, res, pathBelow, done);
      },
      (error: unknown) => {
        span.setStatus({ code: SpanStatusCode.ERROR });
        span.setAttribute('error.type', String((error as { code?: unknown })?.code ?? 'error').slice(0, 64));
        span.end();
        done(error);
      },
    )
    .catch(done);
}

/** The last four characters of the API key a request carries (`…7f3a`), as the admin API shows key hints. */
function apiKeyHint(req: IncomingMessage): string | undefined {
  const headers = req.headers;
  let key = headers['x-gateway-api-key'] ?? headers['x-portkey-api-key'] ?? headers['x-api-key'];
  if (key === undefined) {
    const authorization = headers.authorization;
    if (typeof authorization === 'string' && /^bearer /i.test(authorization)) key = authorization.slice(7).trim();
  }
  return typeof key === 'string' && key.length >= 8 ? `…${key.slice(-4)}` : undefined;
}

/** Runs `handlers` from index `from` on until one answers; `done()` when none does. */
function runHandlers(
  handlers: readonly RouteGroupHandler[],
  from: number,
  req: IncomingMessage,
  res: ServerResponse,
  pathBelow: string,
  done: RouteGroupDone,
): void {
  for (let index = from; index < handlers.length; index++) {
    const handler = handlers[index]!;
    if (handler.kind === 'routes') {
      const route = handler.routes.match(req.method, pathBelow);
      if (route === undefined) continue;
      // A matched route takes no `next`: it answers the request, or rejects.
      route(req, res).catch(done);
      return;
    }
    const passOn = (error?: unknown) =>
      error ? done(error) : runHandlers(handlers, index + 1, req, res, pathBelow, done);
    const result: unknown = handler.middleware(req, res, passOn);
    if (result instanceof Promise) result.catch(done);
    return;
  }
  done();
}

/**
 * Mounts `table` on `app` in order: each {@link RouteGroup} at its prefix (running
 * {@link serveRouteGroup}, as the listener does), each {@link AppRoute} at its paths. A host that
 * embeds the app in its own Express server gets every route.
 */
export function mountRouteTable(app: Express, table: RouteTable): void {
  const gated: string[] = [];
  const below = (path: string, prefix: string) => path === prefix || path.startsWith(`${prefix}/`);
  for (const entry of table) {
    const paths = entry.kind === 'gate' ? [] : entry.kind === 'group' ? [entry.prefix] : entry.paths;
    for (const path of paths)
      if (below(path, ADMIN_PREFIX) && !gated.some((prefix) => below(path, prefix)))
        throw new TypeError(`The route ${path} is below ${ADMIN_PREFIX} but no authentication gate covers it.`);
    if (entry.kind === 'gate') {
      gated.push(entry.prefix);
      app.use(entry.prefix, entry.authenticate);
    } else if (entry.kind === 'group') {
      const group = entry;
      app.use(group.prefix, function routeGroup(req, res, next) {
        serveRouteGroup(group, req, res, req.path, next);
      });
    } else if (entry.method === 'GET') {
      app.get([...entry.paths], entry.handler);
    } else {
      app.use([...entry.paths], entry.handler);
    }
  }
}

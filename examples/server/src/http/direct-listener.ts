import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Authenticator, Challenge } from '@gw/identity-forwarding';
import type { ModelRoutes } from '@gw/model-router';
import type { Logger } from 'pino';
import type { GatewayMetrics } from '../observability/metrics';
import { renderError, requestTargetRefusal, routeNotFoundError } from './errors';
import { trackRequest } from './request-context';

/** An Express-style middleware called with plain node:http objects. */
export type NodeMiddleware = (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void) => void;

/** What the direct path is built from: the very instances the Express app mounts. */
export interface DirectListenerOptions {
  logger: Logger;
  metrics: GatewayMetrics;
  /** Everything the direct path does not serve. */
  app: RequestListener;
  /** The authenticator of `/v1`. */
  v1Authenticator: Authenticator;
  /** The model routes, matched below `/v1`. */
  modelRoutes: ModelRoutes;
  /** The SigV4 proxy: every other `/v1/…` request. */
  bedrock: NodeMiddleware;
  /** The authenticator of `/mcp`, and the RFC 9728 metadata URL its challenges name. */
  mcpAuthenticator: Authenticator;
  mcpMetadataUrl: (req: IncomingMessage) => string | undefined;
  /** The identity-forwarding MCP proxy, below `/mcp`. */
  mcp: NodeMiddleware;
}

/**
 * The gateway's node:http listener. `/v1/…` (the model routes, then the SigV4 proxy, then `404
 * route_not_found`) and MCP calls (`/mcp/<slug>…`) go straight to their handlers with the same
 * request context, authentication and error rendering as the Express app, which serves the rest
 * (health, metrics, key sets, metadata). Skipping the Express router more than halves the
 * gateway's CPU per request on these routes (`docs/decisions.md`).
 */
export function createDirectListener(options: DirectListenerOptions): RequestListener {
  const { logger, metrics, app, modelRoutes, v1Authenticator, mcpAuthenticator, mcpMetadataUrl } = options;

  /** Authenticates, then calls `middleware`; failures render in the shape of the path's family. */
  function serveMounted(
    req: IncomingMessage,
    res: ServerResponse,
    path: string,
    authenticator: Authenticator,
    middleware: NodeMiddleware,
    challenge?: Challenge,
  ): void {
    trackRequest(logger, metrics, req, res, path);
    const method = req.method;
    const next = (error?: unknown) => renderError(logger, res, path, error ?? routeNotFoundError(method, path));
    authenticator
      .authenticate(req.rawHeaders, challenge)
      .then((identity) => {
        (req as IncomingMessage & { callerIdentity?: unknown }).callerIdentity = identity;
        // Whatever a handler throws or rejects with is answered (500 internal_error, or a cut-off
        // stream) and logged: no request can end the process.
        const result: unknown = middleware(req, res, next);
        if (result instanceof Promise) result.catch(next);
      }, next)
      .catch(next);
  }

  return function gatewayListener(req, res) {
    const refusal = requestTargetRefusal(req);
    if (refusal) {
      trackRequest(logger, metrics, req, res, '/');
      return renderError(logger, res, '/', refusal);
    }
    const url = req.url ?? '/';
    const v1 = url.startsWith('/v1/');
    if (!v1 && (!url.startsWith('/mcp/') || url.startsWith('/mcp/.well-known/'))) return app(req, res);
    const query = url.indexOf('?');
    const path = query === -1 ? url : url.slice(0, query);
    // Below the mount point, as the handlers (and Express) expect.
    req.url = url.slice(v1 ? '/v1'.length : '/mcp'.length);
    if (!v1) {
      const challenge = { resourceMetadataUrl: mcpMetadataUrl(req) };
      return serveMounted(req, res, path, mcpAuthenticator, options.mcp, challenge);
    }
    const route = modelRoutes.match(req.method, path.slice(3));
    // A model route takes no `next`: it answers every request it matches.
    serveMounted(req, res, path, v1Authenticator, route ?? options.bedrock);
  };
}

import type { IncomingMessage, ServerResponse } from 'node:http';
import { isValidHostHeader } from '@gw/identity-forwarding';
import type { ErrorRequestHandler, RequestHandler } from 'express';
import type { Logger } from 'pino';
import { sendError, type ErrorShape } from '@gw/model-router';
import { routeFamily } from './route-family';

/** The error shape of the route family of `path` (CONTRACT section 7). */
export function errorShape(path: string): ErrorShape {
  switch (routeFamily(path)) {
    case 'chat':
    case 'models':
    case 'prompts':
    case 'responses':
      return 'openai';
    case 'messages':
      return 'anthropic';
    default:
      return 'generic';
  }
}

/**
 * Renders any error in the shape of the route family of `path`, keeping `WWW-Authenticate` and
 * `retry-after`, and logs failures that are not the gateway's own (500 `internal_error`). A
 * response already under way is cut off instead.
 */
export function renderError(logger: Logger, res: ServerResponse, path: string, error: unknown): void {
  const rendered = sendError(res, error, errorShape(path));
  if (rendered.status >= 500 && rendered.code === 'internal_error') logUnhandled(logger, error);
}

/** Logs a failure that is not one of the gateway's own errors: its name and message only. */
export function logUnhandled(logger: Logger, error: unknown): void {
  logger.error({ err: { name: (error as Error)?.name, message: (error as Error)?.message } }, 'unhandled error');
}

/** {@link renderError} as the Express app's error handler. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return function gatewayErrorHandler(error, req, res, _next) {
    renderError(logger, res, req.path, error);
  };
}

/** The error of a request no route serves: `404 route_not_found`. */
export function routeNotFoundError(method: string | undefined, path: string) {
  return { status: 404, code: 'route_not_found', type: 'not_found_error', message: `No route for ${method} ${path}.` };
}

/**
 * How many entries of `req.rawHeaders` (two per header) the server's parser keeps at most: twice
 * the server's `maxHeadersCount`, or 2000 (1,000 headers) while it is unset (`null`, Node's
 * default), whatever Node's documentation says. `0` is no limit.
 */
function rawHeaderEntriesLimit(req: IncomingMessage): number {
  const server = (req.socket as { server?: { maxHeadersCount?: unknown } } | null)?.server;
  const count = server?.maxHeadersCount;
  return typeof count === 'number' ? count * 2 : 2000;
}

/**
 * Why a request is refused before routing, or undefined: a request whose header count reached the
 * limit of the server's parser (its `maxHeadersCount`, past which Node drops headers unseen) is
 * `431 too_many_headers`, so no credential check is made on a truncated list (a second
 * `Authorization` dropped behind 2,000 fillers); a request target that is not origin-form
 * (`GET http://other.host/… HTTP/1.1`, `OPTIONS *`) is `400 invalid_request_target`, so no client
 * can choose the host a proxied request line names; a `Host` that is not a plain `host[:port]` is
 * `400 invalid_host`, so nothing (challenges, metadata) is built from it.
 */
export function requestTargetRefusal(req: IncomingMessage) {
  const rawLimit = rawHeaderEntriesLimit(req);
  if (rawLimit > 0 && req.rawHeaders.length >= rawLimit) {
    return {
      status: 431,
      code: 'too_many_headers',
      type: 'invalid_request_error',
      message: `The request has ${rawLimit / 2} or more headers, the most the gateway reads; send fewer.`,
    };
  }
  if (!req.url?.startsWith('/') || req.url.startsWith('//')) {
    return {
      status: 400,
      code: 'invalid_request_target',
      type: 'invalid_request_error',
      message: 'The request target must be a path (origin-form), such as /v1/chat/completions.',
    };
  }
  const host = req.headers.host;
  if (host !== undefined && !isValidHostHeader(host)) {
    return {
      status: 400,
      code: 'invalid_host',
      type: 'invalid_request_error',
      message: 'The Host header must be a host name or address with an optional port.',
    };
  }
  return undefined;
}

/** {@link requestTargetRefusal} as the Express app's first check. */
export const refuseBadRequestTarget: RequestHandler = function refuseBadRequestTarget(req, _res, next) {
  next(requestTargetRefusal(req));
};

/** Unknown routes: `404 route_not_found` in the family's shape. */
export const routeNotFound: RequestHandler = function routeNotFound(req, _res, next) {
  next(routeNotFoundError(req.method, req.path));
};

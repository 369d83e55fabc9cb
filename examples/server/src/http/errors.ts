import type { ServerResponse } from 'node:http';
import type { ErrorRequestHandler, RequestHandler } from 'express';
import type { Logger } from 'pino';
import { anthropicErrorBody, openAiErrorBody, sendJson, toRenderable, type RenderableError } from '@gw/model-router';
import { routeFamily } from './route-family';

/** The body of an error in the shape of the route family of `path` (CONTRACT section 7). */
export function errorBody(path: string, error: RenderableError): unknown {
  switch (routeFamily(path)) {
    case 'chat':
    case 'models':
    case 'prompts':
      return openAiErrorBody(error);
    case 'messages':
      return anthropicErrorBody(error);
    default:
      return { error: { message: error.message, type: error.type, code: error.code } };
  }
}

/**
 * Renders any error in the shape of the route family of `path`, keeping `WWW-Authenticate` and
 * `retry-after`, and logs failures that are not the gateway's own (500 `internal_error`). A
 * response already under way is cut off instead.
 */
export function renderError(logger: Logger, res: ServerResponse, path: string, error: unknown): void {
  const renderable = toRenderable(error);
  if (renderable.status >= 500 && renderable.code === 'internal_error') logUnhandled(logger, error);
  if (res.headersSent) {
    res.destroy();
    return;
  }
  for (const name in renderable.headers) res.setHeader(name, renderable.headers[name] as string);
  sendJson(res, renderable.status, errorBody(path, renderable));
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

/** Unknown routes: `404 route_not_found` in the family's shape. */
export const routeNotFound: RequestHandler = function routeNotFound(req, _res, next) {
  next(routeNotFoundError(req.method, req.path));
};

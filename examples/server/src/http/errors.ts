import type { ErrorRequestHandler, Request, RequestHandler } from 'express';
import type { Logger } from 'pino';
import { anthropicErrorBody, openAiErrorBody, toRenderable, type RenderableError } from '@gw/model-router';
import { routeFamily } from './route-family';

/** The body of an error in the shape of the request's route family (CONTRACT section 7). */
export function errorBody(req: Request, error: RenderableError): unknown {
  switch (routeFamily(req.path)) {
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

/** Renders every error in its route family's shape, keeping `WWW-Authenticate` and `retry-after`. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return function gatewayErrorHandler(error, req, res, _next) {
    const renderable = toRenderable(error);
    if (renderable.status >= 500 && renderable.code === 'internal_error') {
      logger.error({ err: { name: (error as Error)?.name, message: (error as Error)?.message } }, 'unhandled error');
    }
    if (res.headersSent) {
      res.destroy();
      return;
    }
    for (const [name, value] of Object.entries(renderable.headers)) res.setHeader(name, value);
    res.status(renderable.status).json(errorBody(req, renderable));
  };
}

/** Unknown routes: `404 route_not_found` in the family's shape. */
export const routeNotFound: RequestHandler = function routeNotFound(req, _res, next) {
  next({
    status: 404,
    code: 'route_not_found',
    type: 'not_found_error',
    message: `No route for ${req.method} ${req.path}.`,
  });
};

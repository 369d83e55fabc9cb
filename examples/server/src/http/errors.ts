import type { ErrorRequestHandler, Request, RequestHandler } from 'express';
import type { Logger } from 'pino';
import { routeFamily } from './route-family';

interface RenderableError {
  status: number;
  code: string;
  message: string;
  type: string;
  param: string | null;
  headers: Record<string, string>;
}

const TYPE_BY_STATUS: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'invalid_request_error',
  429: 'rate_limit_error',
  502: 'api_error',
  504: 'timeout_error',
};
const ANTHROPIC_TYPES = new Set([
  'invalid_request_error',
  'authentication_error',
  'permission_error',
  'not_found_error',
  'rate_limit_error',
  'api_error',
  'overloaded_error',
  'timeout_error',
]);

/** Makes any thrown value renderable; unknown errors become a 500 with no details. */
export function toRenderable(error: unknown): RenderableError {
  const e = (error ?? {}) as Record<string, unknown>;
  // Express's own body parser errors.
  if (e.type === 'entity.parse.failed') return plain(400, 'invalid_json', 'The request body is not valid JSON.');
  if (e.type === 'entity.too.large') return plain(413, 'body_too_large', 'The request body is too large.');
  const status = e.status;
  const code = e.code;
  if (typeof status !== 'number' || status < 400 || status > 599 || typeof code !== 'string') {
    return plain(500, 'internal_error', 'The gateway failed to handle the request.');
  }
  return {
    status,
    code,
    message: typeof e.message === 'string' ? e.message : 'Request failed.',
    type: typeof e.type === 'string' ? e.type : (TYPE_BY_STATUS[status] ?? 'api_error'),
    param: typeof e.param === 'string' ? e.param : null,
    headers: typeof e.headers === 'object' && e.headers !== null ? (e.headers as Record<string, string>) : {},
  };
}

function plain(status: number, code: string, message: string): RenderableError {
  return { status, code, message, type: TYPE_BY_STATUS[status] ?? 'api_error', param: null, headers: {} };
}

/** The body of an error in the shape of the request's route family (CONTRACT section 7). */
export function errorBody(req: Request, error: RenderableError): unknown {
  switch (routeFamily(req.path)) {
    case 'chat':
    case 'models':
    case 'prompts':
      return { error: { message: error.message, type: error.type, param: error.param, code: error.code } };
    case 'messages':
      return {
        type: 'error',
        error: {
          type: ANTHROPIC_TYPES.has(error.type) ? error.type : (TYPE_BY_STATUS[error.status] ?? 'api_error'),
          message: error.message,
        },
        code: error.code,
      };
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

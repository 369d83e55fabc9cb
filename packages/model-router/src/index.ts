/**
 * @gw/model-router: OpenAI-style chat completions converted to Anthropic Messages and back, the
 * native `/v1/messages` routes, prompt templates and the model catalog.
 */
import type { ErrorRequestHandler, NextFunction, Request, RequestHandler, Response } from 'express';
import { createModelRoutes, type ModelRouterOptions, type ModelRoutes } from './routes/model-routes';
import { sendError } from './routes/respond';

export * from './core/errors';
export * from './core/catalog';
export * from './core/gateway-headers';
export * from './core/routing-config';
export {
  runAcrossTargets,
  type NamedConfigs,
  type ResolvedAttempt,
  type AttemptSteps,
  type AnsweringAttempt,
  type TargetContext,
} from './routes/targets';
export * from './core/known-models';
export * from './core/provider-models';
export * from './core/prompts';
export * from './core/retry';
export { ProviderKey } from './core/secret';
export { defaultCallerId, providerUserId, type CallerIdResolver } from './core/caller';
export { isForwardedResponseHeader } from './routes/messages';
export * from './core/cache/cache-key';
export * from './core/cache/answer';
export * from './core/cache/store';
export { CACHE_STATUS_HEADER, MAX_CACHED_ANSWER_BYTES, type CacheStatus } from './routes/cache-flow';
export { MAX_UPSTREAM_BODY_BYTES, MAX_UPSTREAM_ERROR_BYTES, MAX_UPSTREAM_EVENT_BYTES } from './routes/upstream-call';
export {
  readJsonBody,
  receivedBodyBytes,
  parseBodyLimit,
  parseMaxJsonDepth,
  exceedsJsonDepth,
  DEFAULT_BODY_LIMIT_BYTES,
  DEFAULT_MAX_JSON_DEPTH,
} from './core/json-body';
export { RAW_STRING_MIN_BYTES, type JsonPath, type RawStringPolicy } from './core/json-reader';
export { RawJsonString, type JsonString } from './core/raw-json-string';
export {
  checkPdf,
  PdfCheckBudget,
  MAX_PDF_BYTES,
  MAX_PDF_PAGES,
  MAX_PDF_INFLATED_BYTES,
  MAX_PDF_INFLATE_RATIO,
  MAX_PDF_CHECK_MS,
} from './core/input-checks/pdf';
export { parseDataUrl } from './core/input-checks/data-url';
export { acceptsImages, acceptsPdf } from './core/input-checks/model-capabilities';
export * from './providers/anthropic';
export * from './providers/bedrock';
export { checkServesMessages } from './providers';
export { ReasoningSeal, type ThinkingBlock } from './core/reasoning-seal';
export {
  MemoryResponsesStore,
  responseOwner,
  type MemoryResponsesStoreOptions,
  type ResponsesStore,
  type StoredResponse,
} from './core/responses-store';
export {
  createModelRoutes,
  type ModelRouterOptions,
  type ModelRoutes,
  type ModelRouteHandler,
} from './routes/model-routes';
export {
  sendError,
  sendJson,
  gatewayLocals,
  recordedErrorMessage,
  MAX_RECORDED_ERROR_MESSAGE,
  type ErrorShape,
  type GatewayLocals,
  type GatewayAttempt,
  type GatewayUsage,
} from './routes/respond';
export { openAiErrorBody, anthropicErrorBody, toRenderable, type RenderableError } from './routes/errors';

/** The Express middleware returned by {@link modelRouter}, with its framework-free routes. */
export type ModelRouterMiddleware = RequestHandler & { readonly routes: ModelRoutes };

/**
 * Express middleware for the model routes, mounted at `/v1`: `POST /chat/completions`,
 * `POST /messages`, `POST /messages/count_tokens`, `GET /models`,
 * `POST /prompts/<id>/completions`, `POST /responses`, `GET` and `DELETE /responses/<id>`,
 * `GET /responses/<id>/input_items`. Other paths go to `next()`. Failures are answered in the
 * route family's error shape (CONTRACT section 7). Authentication is the host's (mount it before).
 * A thin adapter over {@link createModelRoutes}, which a node:http server can use directly.
 */
export function modelRouter(options: ModelRouterOptions = {}): ModelRouterMiddleware {
  if (typeof options === 'object' && options !== null && 'method' in options && 'socket' in options) {
    throw new TypeError('modelRouter is a factory: mount it as app.use("/v1", modelRouter({ ... })).');
  }
  const routes = createModelRoutes(options);
  const middleware = function modelRouterMiddleware(req: Request, res: Response, next: NextFunction): void {
    const handler = routes.match(req.method, req.path);
    // A handler renders its own failures; anything that still escapes goes to the host's error handler.
    if (handler) handler(req, res).catch(next);
    else next();
  };
  return Object.assign(middleware, { routes });
}

/** Express error handler that renders any error in the OpenAI shape (chat completions, models, prompts). */
export function openAiErrorHandler(): ErrorRequestHandler {
  return function openAiErrorHandler(error, _req, res, next) {
    if (res.headersSent) return next(error);
    sendError(res, error, 'openai');
  };
}

/** Express error handler that renders any error in the Anthropic shape (native messages routes). */
export function anthropicErrorHandler(): ErrorRequestHandler {
  return function anthropicErrorHandler(error, _req, res, next) {
    if (res.headersSent) return next(error);
    sendError(res, error, 'anthropic');
  };
}

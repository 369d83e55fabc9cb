/**
 * @gw/model-router: OpenAI-style chat completions converted to Anthropic Messages and back, the
 * native `/v1/messages` routes, prompt templates and the model catalog.
 */
import express, { Router, type NextFunction, type Request, type Response } from 'express';
import { createInMemoryCatalog, enabledModels, type Catalog, type ModelProviderConfig } from './core/catalog';
import { gatewayHeader } from './core/gateway-headers';
import { PromptStore, type PromptTemplate } from './core/prompts';
import { createDispatcher } from './core/upstream';
import { MODEL_PROVIDERS } from './providers';
import { runChatCompletion } from './routes/chat-completions';
import { anthropicErrorHandler, openAiErrorHandler } from './routes/errors';
import { messagesHandler } from './routes/messages';
import { UnknownProviderError } from './core/errors';

export * from './core/errors';
export * from './core/catalog';
export * from './core/gateway-headers';
export * from './core/known-models';
export * from './core/prompts';
export * from './core/retry';
export { ProviderKey } from './core/secret';
export { checkPdf, MAX_PDF_BYTES, MAX_PDF_PAGES } from './core/input-checks/pdf';
export { parseDataUrl } from './core/input-checks/data-url';
export { acceptsImages, acceptsPdf } from './core/input-checks/model-capabilities';
export * from './providers/anthropic';
export {
  openAiErrorHandler,
  anthropicErrorHandler,
  openAiErrorBody,
  anthropicErrorBody,
  toRenderable,
  type RenderableError,
} from './routes/errors';

/** Options of {@link modelRouter}. */
export interface ModelRouterOptions {
  /** The config's `providers` (non-model providers such as `bedrock` are skipped). Give this or `catalog`. */
  providers?: readonly ModelProviderConfig[];
  /** A catalog of your own (for example backed by a database). */
  catalog?: Catalog;
  /** Stored prompt templates. Default `[]`. */
  prompts?: readonly PromptTemplate[];
  /** Largest JSON body. Default `"50mb"`, which fits a 32 MB PDF in base64. */
  bodyLimit?: string | number;
  /** Time to wait for a provider's response headers, in ms (`request_timeout` overrides it). Default 600000. */
  timeoutMs?: number;
}

/**
 * An Express router mounted at `/v1`: `POST /chat/completions`, `POST /messages`,
 * `POST /messages/count_tokens`, `GET /models`, `POST /prompts/:promptId/completions`. Other
 * paths go to `next()`. Authentication is the host's (mount it before).
 */
export function modelRouter(options: ModelRouterOptions = {}): Router {
  if (typeof options === 'object' && options !== null && 'method' in options && 'socket' in options) {
    throw new TypeError('modelRouter is a factory: mount it as app.use("/v1", modelRouter({ ... })).');
  }
  const catalog = options.catalog ?? createInMemoryCatalog(options.providers ?? [], MODEL_PROVIDERS);
  const prompts = new PromptStore(options.prompts ?? []);
  const context = { catalog, dispatcher: createDispatcher(), timeoutMs: options.timeoutMs ?? 600_000 };
  const json = express.json({ limit: options.bodyLimit ?? '50mb', type: () => true });
  const openAi = openAiErrorHandler();
  const anthropic = anthropicErrorHandler();
  const router = Router();

  router.post(
    '/chat/completions',
    json,
    (req: Request, res: Response, next: NextFunction) => {
      runChatCompletion(context, req, res, req.body).catch(next);
    },
    openAi,
  );
  router.post(
    '/prompts/:promptId/completions',
    json,
    (req: Request, res: Response, next: NextFunction) => {
      Promise.resolve()
        .then(() =>
          runChatCompletion(
            context,
            req,
            res,
            prompts.render(req.params.promptId as string, (req.body ?? {}) as Record<string, unknown>),
          ),
        )
        .catch(next);
    },
    openAi,
  );
  router.post('/messages', json, messagesHandler(context, 'messages'), anthropic);
  router.post('/messages/count_tokens', json, messagesHandler(context, 'countTokens'), anthropic);
  router.get(
    '/models',
    (req: Request, res: Response, next: NextFunction) => {
      const named = gatewayHeader(req.headers, 'provider');
      if (named !== undefined) {
        const provider = catalog.resolveProvider(named.replace(/^@/, ''));
        if (!provider)
          return next(new UnknownProviderError(`No model provider is configured as "${named.slice(0, 64)}".`));
        res.json({
          object: 'list',
          data: enabledModels(provider).map((id) => ({ id, object: 'model', created: 0, owned_by: provider.slug })),
        });
        return;
      }
      const data = catalog
        .listProviders()
        .flatMap((p) =>
          enabledModels(p).map((id) => ({ id: `@${p.slug}/${id}`, object: 'model', created: 0, owned_by: p.slug })),
        );
      res.json({ object: 'list', data });
    },
    openAi,
  );
  return router;
}

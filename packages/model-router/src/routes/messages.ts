import type { NextFunction, Request, Response } from 'express';
import type { Dispatcher } from 'undici';
import { resolveModel, type Catalog } from '../core/catalog';
import { InvalidRequestError, MaxTokensRequiredError, UnknownProviderError } from '../core/errors';
import { gatewayHeader, readGatewayConfig } from '../core/gateway-headers';
import { anthropicApi } from '../providers/anthropic';
import { callProvider } from './upstream-call';

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'proxy-authenticate',
  'set-cookie',
]);

/**
 * Native `/v1/messages` and `/v1/messages/count_tokens`: the body forwarded with the model's
 * `@slug/` removed, the query string kept, the catalog key sent as `x-api-key`, and the
 * upstream bytes streamed back unchanged.
 */
export function messagesHandler(
  context: { catalog: Catalog; dispatcher: Dispatcher; timeoutMs: number },
  endpoint: 'messages' | 'countTokens',
) {
  return async function nativeMessages(req: Request, res: Response, next: NextFunction): Promise<void> {
    try {
      const body = req.body as Record<string, unknown>;
      if (typeof body !== 'object' || body === null || Array.isArray(body))
        throw new InvalidRequestError('The request body must be a JSON object.');
      const config = readGatewayConfig(req.headers);
      const { provider, model } = resolveModel(
        context.catalog,
        body.model,
        gatewayHeader(req.headers, 'provider') ?? config.provider,
      );
      if (provider.provider !== 'anthropic')
        throw new UnknownProviderError(`@${provider.slug} does not serve messages.`, { param: 'model' });
      if (endpoint === 'messages' && (body.max_tokens === undefined || body.max_tokens === null)) {
        throw new MaxTokensRequiredError('max_tokens is required.', { param: 'max_tokens' });
      }
      const query = req.url.indexOf('?');
      const base = new URL(provider.baseUrl ?? anthropicApi.defaultBaseUrl);
      const accept = typeof req.headers.accept === 'string' ? req.headers.accept : 'application/json';
      const response = await callProvider({
        dispatcher: context.dispatcher,
        origin: base.origin,
        path: `${base.pathname.replace(/\/$/, '')}${anthropicApi.endpoints[endpoint]}${query === -1 ? '' : req.url.slice(query)}`,
        headers: anthropicApi.headers(provider, req.headers, accept),
        body: JSON.stringify({ ...body, model }),
        timeoutMs: config.request_timeout ?? context.timeoutMs,
        config,
        target: provider.slug,
        res,
      });
      res.status(response.statusCode);
      for (const [name, value] of Object.entries(response.headers)) {
        if (value !== undefined && !HOP_BY_HOP.has(name)) res.setHeader(name, value);
      }
      res.flushHeaders();
      response.body.on('error', () => res.destroy());
      response.body.pipe(res);
    } catch (error) {
      next(error);
    }
  };
}

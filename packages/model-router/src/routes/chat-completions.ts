import type { IncomingMessage, ServerResponse } from 'node:http';
import { createParser } from 'eventsource-parser';
import type { Dispatcher } from 'undici';
import { resolveModel, type Catalog } from '../core/catalog';
import { chunkedJson, LARGE_STRING_CHARS } from '../core/streaming-json';
import { UnknownProviderError } from '../core/errors';
import { gatewayHeader, isStrict, readGatewayConfig } from '../core/gateway-headers';
import {
  anthropicApi,
  ChatStreamTranslator,
  toAnthropicRequest,
  toChatCompletion,
  toOpenAiError,
} from '../providers/anthropic';
import { sendJson } from './respond';
import { callProvider, providerBase } from './upstream-call';

/** What the chat completion handler needs. */
export interface ChatContext {
  catalog: Catalog;
  dispatcher: Dispatcher;
  timeoutMs: number;
}

/** Runs one chat completion (also used by prompt templates), streaming or not. */
export async function runChatCompletion(
  context: ChatContext,
  req: IncomingMessage,
  res: ServerResponse,
  body: unknown,
): Promise<void> {
  const config = readGatewayConfig(req.headers);
  const bodyModel = (body as { model?: unknown } | null)?.model;
  const { provider, model } = resolveModel(
    context.catalog,
    bodyModel,
    gatewayHeader(req.headers, 'provider') ?? config.provider,
  );
  if (provider.provider !== 'anthropic')
    throw new UnknownProviderError(`@${provider.slug} does not serve chat completions.`, { param: 'model' });
  const request = toAnthropicRequest(body, { model });
  const strict = isStrict(req.headers, config);
  const stream = request.stream === true;
  const base = providerBase(provider.baseUrl ?? anthropicApi.defaultBaseUrl);
  const response = await callProvider({
    dispatcher: context.dispatcher,
    origin: base.origin,
    path: `${base.path}${anthropicApi.endpoints.messages}`,
    headers: anthropicApi.headers(provider, req.headers, stream ? 'text/event-stream' : 'application/json'),
    // Only bodies that can hold large base64 strings are worth serialising in pieces.
    body:
      Number(req.headers['content-length'] ?? 0) >= LARGE_STRING_CHARS ? chunkedJson(request) : JSON.stringify(request),
    timeoutMs: config.request_timeout ?? context.timeoutMs,
    config,
    target: provider.slug,
    res,
  });
  const clientModel = typeof bodyModel === 'string' ? bodyModel : model;
  if (response.statusCode >= 400) {
    const text = await response.body.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    const retryAfter = response.headers['retry-after'];
    if (typeof retryAfter === 'string') res.setHeader('retry-after', retryAfter);
    sendJson(res, response.statusCode, toOpenAiError(response.statusCode, parsed));
    return;
  }
  if (!stream) {
    const completion = toChatCompletion((await response.body.json()) as Record<string, unknown>, {
      strict,
      model: clientModel,
    });
    sendJson(res, 200, completion);
    return;
  }
  const includeUsage =
    (body as { stream_options?: { include_usage?: unknown } }).stream_options?.include_usage === true;
  const translator = new ChatStreamTranslator({ strict, includeUsage, model: clientModel });
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'x-accel-buffering': 'no',
  });
  res.flushHeaders();
  const parser = createParser({
    onEvent(event) {
      const frame = translator.push(event.event ?? 'message', event.data);
      if (frame) res.write(frame);
    },
  });
  const decoder = new TextDecoder();
  try {
    for await (const chunk of response.body) {
      parser.feed(decoder.decode(chunk as Buffer, { stream: true }));
      if (translator.done) break;
    }
  } catch {
    // The upstream stream broke; the client gets an error frame below.
  }
  if (!translator.done) res.write(translator.abortFrame('The provider ended the stream early.'));
  res.end();
  if (!response.body.destroyed) response.body.destroy();
}

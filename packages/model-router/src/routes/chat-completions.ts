import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import { createParser } from 'eventsource-parser';
import type { Dispatcher } from 'undici';
import { checkModelAccess, resolveModel, type Catalog, type ModelAuthorizer } from '../core/catalog';
import type { CallerIdResolver } from '../core/caller';
import { upstreamJson } from '../core/streaming-json';
import { UnknownProviderError } from '../core/errors';
import { gatewayHeader, isStrict, readGatewayConfig } from '../core/gateway-headers';
import {
  anthropicApi,
  ChatStreamTranslator,
  IGNORED_PARAMS_HEADER,
  toAnthropicConversion,
  toChatCompletion,
  toOpenAiError,
} from '../providers/anthropic';
import { sendJson } from './respond';
import {
  MAX_UPSTREAM_ERROR_BYTES,
  MAX_UPSTREAM_EVENT_BYTES,
  callProvider,
  isBodyTimeout,
  providerBase,
  readUpstreamJson,
  readUpstreamText,
  startStreamSpan,
  type UpstreamLimits,
} from './upstream-call';
import { anthropicUsage, gatewayLocals } from './respond';
import { requestTraceContext } from '@gw/tracing';
import { MessageAssembler, messageEvents } from '../core/cache/answer';
import { MAX_CACHED_ANSWER_BYTES, lookUp, planCache, remember, type CacheContext } from './cache-flow';

/** The `code` of an OpenAI-shaped provider error (else its `type`), for the request's record. */
function upstreamErrorCode(error: unknown): string | undefined {
  const inner = (error as { error?: { code?: unknown; type?: unknown } }).error;
  const code = typeof inner?.code === 'string' ? inner.code : inner?.type;
  return typeof code === 'string' ? code.slice(0, 64) : undefined;
}

/** What the chat completion handler needs. */
export interface ChatContext {
  catalog: Catalog;
  dispatcher: Dispatcher;
  timeoutMs: number;
  limits: UpstreamLimits;
  callerId: CallerIdResolver;
  /** The host's access rule for models. Default: none (every caller may use every enabled model). */
  authorize?: ModelAuthorizer;
  cache: CacheContext;
}

/** Starts a chat completion event stream (headers set one by one so the host can read them back, as it does at shutdown). */
function startEventStream(res: ServerResponse): void {
  res.statusCode = 200;
  res.setHeader('content-type', 'text/event-stream; charset=utf-8');
  res.setHeader('cache-control', 'no-cache');
  res.setHeader('x-accel-buffering', 'no');
  res.flushHeaders();
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
  checkModelAccess(context.authorize, req, { provider: provider.slug, model });
  if (provider.provider !== 'anthropic')
    throw new UnknownProviderError(`@${provider.slug} does not serve chat completions.`, { param: 'model' });
  const { request, ignoredParams, jsonTool } = await toAnthropicConversion(body, {
    model,
    callerId: context.callerId(req),
    defaultMaxTokens: provider.defaultMaxTokens,
  });
  if (ignoredParams.length > 0) res.setHeader(IGNORED_PARAMS_HEADER, ignoredParams.join(', '));
  const strict = isStrict(req.headers, config);
  const stream = request.stream === true;
  const includeUsage =
    (body as { stream_options?: { include_usage?: unknown } }).stream_options?.include_usage === true;
  const plan = planCache(context.cache, req, res, config, { route: 'chat.completions', provider, model, body });
  const cached = plan && (await lookUp(context.cache, plan, res));
  if (cached) {
    if (!stream) {
      sendJson(res, 200, toChatCompletion(cached.message, { strict, model, jsonTool }));
      return;
    }
    const translator = new ChatStreamTranslator({ strict, includeUsage, model, jsonTool });
    let frames = '';
    for (const [event, data] of messageEvents(cached.message)) frames += translator.push(event, JSON.stringify(data));
    startEventStream(res);
    res.end(frames);
    return;
  }
  const base = providerBase(provider.baseUrl ?? anthropicApi.defaultBaseUrl);
  const response = await callProvider({
    dispatcher: context.dispatcher,
    origin: base.origin,
    path: `${base.path}${anthropicApi.endpoints.messages}`,
    headers: anthropicApi.headers(provider, req.headers, stream ? 'text/event-stream' : 'application/json'),
    body: upstreamJson(request, req.headers),
    timeoutMs: config.request_timeout ?? context.timeoutMs,
    limits: context.limits,
    config,
    target: provider.slug,
    res,
    traceContext: requestTraceContext(req),
    operation: 'chat',
    model,
  });
  const locals = gatewayLocals(res);
  if (response.statusCode >= 400) {
    const text = await readUpstreamText(response.body, MAX_UPSTREAM_ERROR_BYTES);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    const retryAfter = response.headers['retry-after'];
    if (typeof retryAfter === 'string') res.setHeader('retry-after', retryAfter);
    const error = toOpenAiError(response.statusCode, parsed);
    locals.errorCode = upstreamErrorCode(error);
    sendJson(res, response.statusCode, error);
    return;
  }
  if (!stream) {
    const message = await readUpstreamJson(response.body);
    locals.usage = anthropicUsage(message.usage);
    if (typeof message.model === 'string') locals.responseModel = message.model.slice(0, 256);
    const completion = toChatCompletion(message, {
      strict,
      model,
      jsonTool,
    });
    sendJson(res, 200, completion);
    remember(context.cache, plan, message);
    return;
  }
  const translator = new ChatStreamTranslator({ strict, includeUsage, model, jsonTool });
  // The answer as one message, to cache it once the stream has ended normally.
  const assembler = plan ? new MessageAssembler(MAX_CACHED_ANSWER_BYTES) : undefined;
  startEventStream(res);
  const streamEvent = startStreamSpan(res);
  // Bytes received since the last complete event: a provider that never ends an event (or a line)
  // cannot make the gateway buffer without bound.
  let pending = 0;
  const parser = createParser({
    onEvent(event) {
      pending = 0;
      streamEvent();
      assembler?.push(event.data);
      const frame = translator.push(event.event ?? 'message', event.data);
      if (frame) {
        locals.firstByteAt ??= performance.now();
        res.write(frame);
      }
    },
  });
  const decoder = new TextDecoder();
  const upstream = response.body;
  let oversized = false;
  let idle = false;
  const resume = () => upstream.resume();
  // Each upstream chunk is converted and its frames written as undici delivers it ('data' events,
  // not an async iterator, which would join chunks that arrived while one was being converted).
  await new Promise<void>((resolve) => {
    const finish = () => {
      upstream.off('data', onData);
      res.off('drain', resume);
      resolve();
    };
    const onData = (chunk: Buffer) => {
      pending += chunk.length;
      // The frames of this chunk leave together, in one write. Cork and uncork stay paired: on
      // Node 22 an uncork without a cork writes the chunked body's terminator mid-stream.
      res.cork();
      parser.feed(decoder.decode(chunk, { stream: true }));
      res.uncork();
      if (translator.done) return finish();
      if (pending > MAX_UPSTREAM_EVENT_BYTES) {
        oversized = true;
        upstream.destroy();
        return finish();
      }
      // A client that reads slower than the provider writes holds the provider back, not memory.
      if (res.writableNeedDrain) {
        upstream.pause();
        res.once('drain', resume);
      }
    };
    upstream.on('data', onData);
    // An upstream stream that breaks ends here too; the client gets an error frame below.
    upstream.once('end', finish);
    upstream.once('error', (error) => {
      // undici's body timeout: the provider sent nothing for streamIdleTimeoutMs.
      idle = isBodyTimeout(error);
      finish();
    });
    upstream.once('close', finish);
  });
  locals.usage = anthropicUsage(translator.reportedUsage);
  locals.responseModel = translator.reportedModel.slice(0, 256);
  if (!translator.done) {
    locals.errorCode = oversized ? 'upstream_invalid_response' : idle ? 'upstream_timeout' : 'upstream_stream_ended';
    if (idle) locals.streamIdleTimeout = true;
    res.write(
      translator.abortFrame(
        oversized
          ? 'The provider sent a stream event larger than the gateway reads.'
          : idle
            ? `The provider sent nothing for ${context.limits.streamIdleTimeoutMs} ms; the stream was ended.`
            : 'The provider ended the stream early.',
      ),
    );
  }
  res.end();
  drainUpstream(upstream);
  if (assembler) remember(context.cache, plan, assembler.result());
}

/** Most bytes, and longest time, an upstream stream may take to close after its last event. */
const DRAIN_LIMIT_BYTES = 64 * 1024;
const DRAIN_LIMIT_MS = 5_000;

/**
 * After `message_stop` the provider only closes its stream. Reading that close (rather than
 * destroying the body) keeps the keep-alive connection for the next request; a provider that
 * sends more than a little, or takes long, has its connection closed instead.
 */
function drainUpstream(upstream: Readable): void {
  if (upstream.destroyed || upstream.readableEnded) return;
  let drained = 0;
  const timer = setTimeout(() => upstream.destroy(), DRAIN_LIMIT_MS);
  timer.unref();
  upstream.once('close', () => clearTimeout(timer));
  upstream.on('error', () => undefined);
  upstream.on('data', (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > DRAIN_LIMIT_BYTES) upstream.destroy();
  });
  upstream.resume();
}

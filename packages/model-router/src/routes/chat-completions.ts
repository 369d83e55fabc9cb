import type { IncomingMessage, ServerResponse } from 'node:http';
import { checkServesMessages } from '../providers';
import type { Dispatcher } from 'undici';
import type { Catalog, ModelAdmission, ModelAuthorizer } from '../core/catalog';
import { receivedBodyBytes } from '../core/json-body';
import type { CallerIdResolver } from '../core/caller';
import { upstreamJson } from '../core/streaming-json';
import type { RawStringPolicy } from '../core/json-reader';
import { isStrict, type GatewayRequestConfig } from '../core/gateway-headers';
import { requestConfig, runAcrossTargets, type NamedConfigs } from './targets';
import {
  anthropicApi,
  ChatStreamTranslator,
  IGNORED_PARAMS_HEADER,
  toAnthropicConversion,
  toChatCompletion,
  toOpenAiError,
} from '../providers/anthropic';
import { sendJson } from './respond';
import { bedrockCall, type BedrockRuntime } from '../providers/bedrock';
import { StreamWriter } from './stream-writer';
import { drainUpstream, pumpUpstreamEvents } from './upstream-events';
import {
  MAX_UPSTREAM_ERROR_BYTES,
  callProvider,
  providerBase,
  readUpstreamJson,
  readUpstreamText,
  startStreamSpan,
  type UpstreamLimits,
} from './upstream-call';
import { anthropicUsage, gatewayLocals, recordedErrorMessage } from './respond';
import { requestTraceContext } from '@gw/tracing';
import { MessageAssembler, messageEvents } from '../core/cache/answer';
import { MAX_CACHED_ANSWER_BYTES, lookUp, planCache, remember, type CacheContext } from './cache-flow';

/**
 * The strings of a chat completion body read raw when large (see `readJsonBody`): a file part's
 * `file.file_data` and an image part's `image_url` (or its `url`), where PDFs and images come as
 * base64. Everything else is read as plain strings.
 */
export const CHAT_RAW_STRINGS: RawStringPolicy = (path) =>
  path[0] === 'messages' &&
  typeof path[1] === 'number' &&
  path[2] === 'content' &&
  typeof path[3] === 'number' &&
  ((path.length === 6 && path[4] === 'file' && path[5] === 'file_data') ||
    (path.length === 6 && path[4] === 'image_url' && path[5] === 'url') ||
    (path.length === 5 && path[4] === 'image_url'));

/** The `code` of an OpenAI-shaped provider error (else its `type`), for the request's record. */
function upstreamErrorCode(error: unknown): string | undefined {
  const inner = (error as { error?: { code?: unknown; type?: unknown } }).error;
  const code = typeof inner?.code === 'string' ? inner.code : inner?.type;
  return typeof code === 'string' ? code.slice(0, 64) : undefined;
}

/**
 * Answers a provider's error (status 400 and above) in the OpenAI shape, keeping its status and
 * `retry-after`; its code goes to the request's record.
 */
export async function answerUpstreamError(
  res: ServerResponse,
  response: Pick<Dispatcher.ResponseData, 'statusCode' | 'headers' | 'body'>,
): Promise<void> {
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
  const locals = gatewayLocals(res);
  locals.errorCode = upstreamErrorCode(error);
  locals.errorMessage = recordedErrorMessage((error as { error?: { message?: unknown } }).error?.message);
  sendJson(res, response.statusCode, error);
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
  /** The host's admission step (limits), before the cache and the provider. Default: none. */
  admit?: ModelAdmission;
  cache: CacheContext;
  /** Named configs for `x-gateway-config: <slug>` and callers' defaults. Default: none. */
  configs?: NamedConfigs;
  /** The load balancer's random numbers in [0, 1). */
  random: () => number;
}

/**
 * Sets a chat completion event stream's headers (one by one so the host can read them back, as it
 * does at shutdown). They are sent by the caller: with the frames of a cached answer, or by the
 * stream's writer (`StreamWriter.open`).
 */
export function startEventStream(res: ServerResponse): void {
  res.statusCode = 200;
  res.setHeader('content-type', 'text/event-stream; charset=utf-8');
  res.setHeader('cache-control', 'no-cache');
  res.setHeader('x-accel-buffering', 'no');
}

/**
 * Sends a converted request to the provider's Anthropic Messages endpoint: the one upstream call of
 * chat completions, prompt templates and the Responses API. A `bedrock` provider's goes to Bedrock
 * Runtime (InvokeModel or InvokeModelWithResponseStream), whose answer comes back as Anthropic's.
 */
export function callAnthropicMessages(
  context: ChatContext,
  req: IncomingMessage,
  res: ServerResponse,
  call: {
    provider: { slug: string; baseUrl?: string; bedrock?: BedrockRuntime } & Parameters<typeof anthropicApi.headers>[0];
    config: GatewayRequestConfig;
    request: Parameters<typeof upstreamJson>[0];
    model: string;
    stream: boolean;
  },
): ReturnType<typeof callProvider> {
  const { provider, config, request, model, stream } = call;
  if (provider.bedrock !== undefined) {
    const bedrock = bedrockCall(
      provider.bedrock,
      model,
      stream ? 'stream' : 'invoke',
      request as Record<string, unknown>,
      req,
    );
    return callProvider({
      dispatcher: context.dispatcher,
      ...bedrock,
      providerName: 'aws.bedrock',
      timeoutMs: config.request_timeout ?? context.timeoutMs,
      limits: context.limits,
      config,
      target: provider.slug,
      res,
      traceContext: requestTraceContext(req),
      operation: 'chat',
      model,
    });
  }
  const base = providerBase(provider.baseUrl ?? anthropicApi.defaultBaseUrl);
  return callProvider({
    dispatcher: context.dispatcher,
    origin: base.origin,
    path: `${base.path}${anthropicApi.endpoints.messages}`,
    headers: anthropicApi.headers(provider, req.headers, stream ? 'text/event-stream' : 'application/json'),
    body: upstreamJson(request, req),
    timeoutMs: config.request_timeout ?? context.timeoutMs,
    limits: context.limits,
    config,
    target: provider.slug,
    res,
    traceContext: requestTraceContext(req),
    operation: 'chat',
    model,
  });
}

/**
 * Runs one chat completion (also used by prompt templates), streaming or not. `renderedBytes`: the
 * size of a prompt template's rendered request, counted by the limits when larger than the body.
 */
export async function runChatCompletion(
  context: ChatContext,
  req: IncomingMessage,
  res: ServerResponse,
  body: unknown,
  renderedBytes = 0,
): Promise<void> {
  const config = requestConfig(context, req);
  const strict = isStrict(req.headers, config);
  const includeUsage =
    (body as { stream_options?: { include_usage?: unknown } }).stream_options?.include_usage === true;
  let plan: ReturnType<typeof planCache>;
  const answering = await runAcrossTargets(context, req, res, body, config, {
    async prepare({ provider, model, body: targetBody }) {
      checkServesMessages(provider, model, 'chat completions');
      const conversion = await toAnthropicConversion(targetBody, {
        model,
        callerId: context.callerId(req),
        defaultMaxTokens: provider.defaultMaxTokens,
      });
      if (conversion.ignoredParams.length > 0)
        res.setHeader(IGNORED_PARAMS_HEADER, conversion.ignoredParams.join(', '));
      return conversion;
    },
    async begin({ request, jsonTool }, { provider, model, body: targetBody, config: targetConfig }) {
      if (context.admit !== undefined)
        await context.admit(req, res, {
          route: 'chat.completions',
          provider: provider.slug,
          model,
          maxTokens: typeof request.max_tokens === 'number' ? request.max_tokens : 0,
          bodyBytes: Math.max(receivedBodyBytes(req), renderedBytes),
        });
      plan = planCache(context.cache, req, res, targetConfig, {
        route: 'chat.completions',
        provider,
        model,
        body: targetBody,
      });
      const cached = plan && (await lookUp(context.cache, plan, res));
      if (!cached) return false;
      if (request.stream !== true) {
        sendJson(res, 200, toChatCompletion(cached.message, { strict, model, jsonTool }));
        return true;
      }
      const translator = new ChatStreamTranslator({ strict, includeUsage, model, jsonTool });
      let frames = '';
      for (const [event, data] of messageEvents(cached.message)) frames += translator.push(event, JSON.stringify(data));
      startEventStream(res);
      res.end(frames);
      return true;
    },
    call: ({ request }, { provider, model, config: targetConfig }) =>
      callAnthropicMessages(context, req, res, {
        provider,
        config: targetConfig,
        request,
        model,
        stream: request.stream === true,
      }),
  });
  if (answering === undefined) return;
  const { response } = answering;
  const { jsonTool } = answering.prepared;
  const stream = answering.prepared.request.stream === true;
  const { model } = answering.attempt;
  const locals = gatewayLocals(res);
  if (response.statusCode >= 400) {
    await answerUpstreamError(res, response);
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
  const upstream = response.body;
  const writer = new StreamWriter(res, upstream, () => (locals.firstByteAt ??= performance.now()));
  writer.open();
  const { oversized, idle } = await pumpUpstreamEvents(upstream, writer, startStreamSpan(res), {
    onEvent(event, data) {
      assembler?.push(data);
      writer.write(translator.push(event, data));
    },
    done: () => translator.done,
  });
  locals.usage = anthropicUsage(translator.reportedUsage);
  locals.responseModel = translator.reportedModel.slice(0, 256);
  if (!translator.done) {
    locals.errorCode = oversized ? 'upstream_invalid_response' : idle ? 'upstream_timeout' : 'upstream_stream_ended';
    if (idle) locals.streamIdleTimeout = true;
    writer.write(
      translator.abortFrame(
        oversized
          ? 'The provider sent a stream event larger than the gateway reads.'
          : idle
            ? `The provider sent nothing for ${context.limits.streamIdleTimeoutMs} ms; the stream was ended.`
            : 'The provider ended the stream early.',
      ),
    );
  }
  writer.end();
  drainUpstream(upstream);
  if (assembler) remember(context.cache, plan, assembler.result());
}

import type { IncomingMessage, ServerResponse } from 'node:http';
import { checkServesMessages } from '../providers';
import type { Dispatcher } from 'undici';
import type { Catalog, ModelAdmission, ModelAuthorizer } from '../core/catalog';
import { receivedBodyBytes } from '../core/json-body';
import { InvalidRequestError, MaxTokensRequiredError } from '../core/errors';
import { requestConfig, runAcrossTargets, type NamedConfigs } from './targets';
import { anthropicApi } from '../providers/anthropic';
import { bedrockCall } from '../providers/bedrock';
import { upstreamJson } from '../core/streaming-json';
import type { RawStringPolicy } from '../core/json-reader';
import { callProvider, isBodyTimeout, providerBase, startStreamSpan, type UpstreamLimits } from './upstream-call';
import { UsageTap } from './usage-tap';
import { requestTraceContext } from '@gw/tracing';
import { MAX_WHOLE_ANSWER_BYTES, holdWhole } from '@gw/upstream';
import { gatewayLocals, recordedErrorMessage, type GatewayLocals } from './respond';
import { providerUserId, type CallerIdResolver } from '../core/caller';
import { createParser } from 'eventsource-parser';
import { MessageAssembler, messageEventStream } from '../core/cache/answer';
import { MAX_CACHED_ANSWER_BYTES, lookUp, planCache, remember, type CacheContext, type CachePlan } from './cache-flow';
import { sendJson } from './respond';
import { StreamWriter } from './stream-writer';
import type { Dispatcher as UndiciDispatcher } from 'undici';

/**
 * The strings of a native messages body read raw when large (see `readJsonBody`): any under
 * `messages` (base64 images and documents, long texts), which the gateway forwards without
 * reading them. The fields it reads (`model`, `max_tokens`, `metadata`, `stream`) stay plain.
 */
export const NATIVE_RAW_STRINGS: RawStringPolicy = (path) => path[0] === 'messages';

/** `metadata` with its `user_id` scoped to the caller (see `providerUserId`); nothing when there is none. */
function scopedMetadata(metadata: unknown, callerId: string | undefined): { metadata?: unknown } {
  if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)) return {};
  const userId = (metadata as Record<string, unknown>).user_id;
  if (typeof userId !== 'string') return {};
  return { metadata: { ...metadata, user_id: providerUserId(callerId, userId) } };
}

/**
 * The provider's response headers a client gets (everything else, such as the provider's
 * organisation id or its own `x-gateway-*` ids, stays in the gateway): the body's type, length and
 * coding, retry advice, the provider's request id and rate-limit headers.
 */
const FORWARDED_RESPONSE_HEADERS: ReadonlySet<string> = new Set([
  'content-type',
  'content-length',
  'content-encoding',
  'retry-after',
  'retry-after-ms',
  'x-should-retry',
  'request-id',
  'x-request-id',
]);
const FORWARDED_RESPONSE_PREFIXES: readonly string[] = ['anthropic-ratelimit-'];

/** Whether a provider response header is passed to the client. */
export function isForwardedResponseHeader(name: string): boolean {
  return FORWARDED_RESPONSE_HEADERS.has(name) || FORWARDED_RESPONSE_PREFIXES.some((p) => name.startsWith(p));
}

/**
 * Native `/v1/messages` and `/v1/messages/count_tokens`: the body forwarded with the model's
 * `@slug/` removed, the query string kept, the catalog key sent as `x-api-key`, and the
 * upstream bytes streamed back unchanged. Throws the router's errors before anything is written.
 */
export async function runNativeMessages(
  context: {
    catalog: Catalog;
    dispatcher: Dispatcher;
    timeoutMs: number;
    limits: UpstreamLimits;
    callerId: CallerIdResolver;
    authorize?: ModelAuthorizer;
    admit?: ModelAdmission;
    cache: CacheContext;
    configs?: NamedConfigs;
    random: () => number;
  },
  endpoint: 'messages' | 'countTokens',
  req: IncomingMessage,
  res: ServerResponse,
  parsed: unknown,
): Promise<void> {
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new InvalidRequestError('The request body must be a JSON object.');
  const config = requestConfig(context, req);
  const url = req.url ?? '';
  const query = url.indexOf('?');
  const accept = typeof req.headers.accept === 'string' ? req.headers.accept : 'application/json';
  let plan: CachePlan | undefined;
  const answering = await runAcrossTargets(context, req, res, parsed, config, {
    prepare({ provider, model, body: targetBody }) {
      checkServesMessages(provider, model, 'messages');
      // A target's override_params made a copy; without them the body is the request's own.
      const body = targetBody as Record<string, unknown>;
      if (endpoint === 'messages' && (body.max_tokens === undefined || body.max_tokens === null)) {
        if (provider.defaultMaxTokens === undefined)
          throw new MaxTokensRequiredError('max_tokens is required.', { param: 'max_tokens' });
        body.max_tokens = provider.defaultMaxTokens;
      }
      // The limits reserve max_tokens: a value they cannot count as the provider will (a numeric
      // string, a fraction) is refused rather than reserved as nothing.
      if (
        endpoint === 'messages' &&
        !(typeof body.max_tokens === 'number' && Number.isSafeInteger(body.max_tokens) && body.max_tokens > 0)
      )
        throw new InvalidRequestError('max_tokens must be a positive whole number (a JSON number, not a string).', {
          param: 'max_tokens',
        });
      const upstreamBody: Record<string, unknown> = {
        ...body,
        model,
        ...scopedMetadata(body.metadata, context.callerId(req)),
      };
      return upstreamBody;
    },
    async begin(upstreamBody, { provider, model, body, config: targetConfig }) {
      if (context.admit !== undefined)
        await context.admit(req, res, {
          route: endpoint === 'messages' ? 'messages' : 'count_tokens',
          provider: provider.slug,
          model,
          maxTokens: endpoint === 'messages' ? (upstreamBody.max_tokens as number) : 0,
          bodyBytes: receivedBodyBytes(req),
        });
      plan =
        endpoint === 'messages'
          ? planCache(context.cache, req, res, targetConfig, {
              route: `messages${query === -1 ? '' : url.slice(query)}`,
              provider,
              model,
              body,
            })
          : undefined;
      const cached = plan && (await lookUp(context.cache, plan, res));
      if (!cached) return false;
      if (upstreamBody.stream !== true) {
        sendJson(res, 200, cached.message);
        return true;
      }
      res.statusCode = 200;
      res.setHeader('content-type', 'text/event-stream; charset=utf-8');
      res.setHeader('cache-control', 'no-cache');
      res.end(messageEventStream(cached.message));
      return true;
    },
    call(upstreamBody, { provider, model, config: targetConfig }) {
      const base = providerBase(provider.baseUrl ?? anthropicApi.defaultBaseUrl);
      return callProvider({
        dispatcher: context.dispatcher,
        // A bedrock provider: the same body to Bedrock Runtime, its answer turned into Anthropic's.
        ...(provider.bedrock !== undefined
          ? {
              ...bedrockCall(
                provider.bedrock,
                model,
                endpoint === 'countTokens' ? 'countTokens' : upstreamBody.stream === true ? 'stream' : 'invoke',
                upstreamBody,
                req,
              ),
              providerName: 'aws.bedrock',
            }
          : {
              origin: base.origin,
              path: `${base.path}${anthropicApi.endpoints[endpoint]}${query === -1 ? '' : url.slice(query)}`,
              headers: anthropicApi.headers(provider, req.headers, accept),
              body: upstreamJson(upstreamBody, req),
            }),
        timeoutMs: targetConfig.request_timeout ?? context.timeoutMs,
        limits: context.limits,
        config: targetConfig,
        target: provider.slug,
        res,
        traceContext: requestTraceContext(req),
        operation: endpoint === 'messages' ? 'chat' : 'count_tokens',
        model,
      });
    },
  });
  if (answering === undefined) return;
  const { response } = answering;
  const locals = gatewayLocals(res);
  res.statusCode = response.statusCode;
  for (const name in response.headers) {
    const value = response.headers[name];
    if (value !== undefined && isForwardedResponseHeader(name)) res.setHeader(name, value);
  }
  // Every answer's headers leave with its first bytes (one write fewer); an event stream's at the
  // latest on the next turn of the event loop (StreamWriter.open).
  const eventStream = String(response.headers['content-type'] ?? '').startsWith('text/event-stream');
  const streamEvent = eventStream ? startStreamSpan(res) : undefined;
  // An event stream leaves through the writer (events that come together leave in one write);
  // other answers are piped.
  const writer = eventStream
    ? new StreamWriter(res, response.body, () => (locals.firstByteAt ??= performance.now()))
    : undefined;
  writer?.open();
  // The model and usage of a successful answer, read as its bytes pass.
  const tap = response.statusCode < 400 ? new UsageTap(locals, eventStream) : undefined;
  // The last bytes passed on (at least 4 when there are): whether they end with a whole event,
  // after which an error event may follow.
  let tail: Buffer = Buffer.from('\n\n');
  response.body.on(
    'data',
    writer
      ? (chunk: Buffer) => {
          streamEvent?.();
          tap?.push(chunk);
          tail = chunk.length >= 4 ? chunk : Buffer.concat([tail.subarray(-4), chunk]);
          writer.write(chunk);
        }
      : (chunk: Buffer) => {
          locals.firstByteAt ??= performance.now();
          tap?.push(chunk);
        },
  );
  if (tap) response.body.once('end', () => tap.end());
  if (response.statusCode >= 400) {
    locals.errorCode = `upstream_${response.statusCode}`;
    const encoded = response.headers['content-encoding'];
    if (encoded === undefined || encoded === 'identity') recordErrorType(response.body, locals);
  }
  response.body.on('error', (error) => {
    if (!isBodyTimeout(error)) return res.destroy();
    locals.streamIdleTimeout = true;
    locals.errorCode = 'upstream_timeout';
    if (!writer || !endsWithBlankLine(tail.subarray(-4).toString('latin1')) || res.destroyed) return res.destroy();
    const message = `The provider sent nothing for ${context.limits.streamIdleTimeoutMs} ms; the stream was ended.`;
    const frame = `event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: 'timeout_error', message } })}\n\n`;
    writer.end(frame);
  });
  const encoded = response.headers['content-encoding'];
  if (plan && response.statusCode === 200 && (encoded === undefined || encoded === 'identity'))
    keepAnswer(context.cache, plan, response.body, eventStream);
  if (writer) {
    response.body.once('end', () => writer.end());
    return;
  }
  const length = Number(response.headers['content-length'] ?? 0);
  if (length <= MAX_WHOLE_ANSWER_BYTES) sendWhole(response.body, res);
  else response.body.pipe(res);
}

/**
 * Sends a provider's non-streamed answer whole once it has arrived: headers and body leave in one
 * write, where piping takes a write per chunk and one more at the end (a JSON answer is of no use
 * to a client before its last byte). An answer without a `content-length` (chunked, as providers
 * behind a CDN send them) that grows past {@link MAX_WHOLE_ANSWER_BYTES} is written as it stands
 * and piped from there. A body that fails midway destroys the response (the body's error
 * handler), as a pipe would.
 */
function sendWhole(body: UndiciDispatcher.ResponseData['body'], res: ServerResponse): void {
  holdWhole(
    body,
    MAX_WHOLE_ANSWER_BYTES,
    (whole) => res.end(whole),
    (held) => {
      for (const part of held) res.write(part);
      body.pipe(res);
    },
  );
}

/** Most bytes of a provider's error body read, as it passes to the client, for its error type: 64 KiB. */
export const MAX_RECORDED_ERROR_BYTES = 64 * 1024;

/**
 * Reads a provider's error body as it passes to the client (its first
 * {@link MAX_RECORDED_ERROR_BYTES}) and, when it is Anthropic's error JSON, records its
 * `error.type` (`rate_limit_error`, `overloaded_error`…) as the request's error code, as chat
 * completions does. Anything else keeps `upstream_<status>`.
 */
function recordErrorType(body: UndiciDispatcher.ResponseData['body'], locals: GatewayLocals): void {
  const chunks: Buffer[] = [];
  let size = 0;
  body.on('data', (chunk: Buffer) => {
    if (size >= MAX_RECORDED_ERROR_BYTES) return;
    const kept = chunk.subarray(0, MAX_RECORDED_ERROR_BYTES - size);
    chunks.push(kept);
    size += kept.length;
  });
  body.once('end', () => {
    let type: unknown;
    try {
      const error = (
        JSON.parse(Buffer.concat(chunks).toString('utf8')) as { error?: { type?: unknown; message?: unknown } }
      )?.error;
      type = error?.type;
      locals.errorMessage = recordedErrorMessage(error?.message);
    } catch {
      return;
    }
    if (typeof type === 'string' && /^[A-Za-z0-9_.:-]{1,64}$/.test(type)) locals.errorCode = type;
  });
}

/**
 * Reads the answer as it passes to the client and caches it once the provider's body has ended
 * normally: a JSON message as is, an event stream assembled into its message. A body cut short,
 * an error event, or more than {@link MAX_CACHED_ANSWER_BYTES} is not stored.
 */
function keepAnswer(
  cache: CacheContext,
  plan: CachePlan,
  body: UndiciDispatcher.ResponseData['body'],
  eventStream: boolean,
): void {
  let onData: (chunk: Buffer) => void;
  let complete: () => unknown;
  if (eventStream) {
    const assembler = new MessageAssembler(MAX_CACHED_ANSWER_BYTES);
    const parser = createParser({ onEvent: (event) => assembler.push(event.data) });
    const decoder = new TextDecoder();
    onData = (chunk) => parser.feed(decoder.decode(chunk, { stream: true }));
    complete = () => assembler.result();
  } else {
    const chunks: Buffer[] = [];
    let size = 0;
    onData = (chunk) => {
      size += chunk.length;
      if (size <= MAX_CACHED_ANSWER_BYTES) chunks.push(chunk);
      else chunks.length = 0;
    };
    complete = () => {
      if (size > MAX_CACHED_ANSWER_BYTES) return undefined;
      try {
        return JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        return undefined;
      }
    };
  }
  body.on('data', onData);
  body.once('end', () => remember(cache, plan, complete()));
}

/** Whether the last bytes of an event stream are the blank line that closes an event. */
function endsWithBlankLine(text: string): boolean {
  return text.endsWith('\n\n') || text.endsWith('\r\n\r\n') || text.endsWith('\r\r');
}

import { Readable } from 'node:stream';
import type { ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import { DEFAULT_RETRY_STATUSES, type GatewayRequestConfig } from '../core/gateway-headers';
import { retryDelay } from '../core/retry';
import type { ChunkedJson } from '../core/streaming-json';
import { mapUpstreamError } from '../core/upstream';
import { ClientAbortError, UpstreamInvalidResponseError, UpstreamTimeoutError } from '../core/errors';
import {
  SpanKind,
  SpanStatusCode,
  injectTraceHeaders,
  setDefinedAttributes,
  startSpan,
  type Context,
  type Span,
} from '@gw/tracing';
import { gatewayLocals, type GatewayLocals } from './respond';
import { UpstreamAbort } from '@gw/upstream';

/** The instrumentation scope of the router's spans. */
export const TRACER_NAME = '@gw/model-router';

/** The operator's limits of every provider call (options of `createModelRoutes`). */
export interface UpstreamLimits {
  /** Longest silence between two chunks of a response body, in ms. */
  streamIdleTimeoutMs: number;
  /** Most retries, whatever the request asks for. */
  maxRetryAttempts: number;
  /** Longest time spent retrying, in ms from the first call. */
  maxRetryTimeMs: number;
}

/** One provider call, with the request's timeout and retry policy. */
export interface ProviderCall {
  dispatcher: Dispatcher;
  origin: string;
  path: string;
  headers: Record<string, string>;
  /** The request body: text, or chunks produced afresh for every attempt. */
  body: string | ChunkedJson;
  timeoutMs: number;
  limits: UpstreamLimits;
  config: GatewayRequestConfig;
  target: string;
  res: ServerResponse;
  /** The request's trace context (`requestTraceContext(req)`): the provider call's span is its child. */
  traceContext: Context;
  /** The GenAI operation (`chat`, or `count_tokens` for token counting). */
  operation: string;
  /** The model asked for, as sent upstream. */
  model: string;
  /** `gen_ai.provider.name` of the call's span. Default `anthropic`. */
  providerName?: string;
  /**
   * Turns the provider's answer into the answer the `anthropic` provider gives (a second
   * transport such as Bedrock Runtime), before its status is judged for a retry. Default: none.
   */
  adapt?: (response: Dispatcher.ResponseData) => Promise<Dispatcher.ResponseData>;
}

/** A provider call's span: ended once, when the response closes or a later attempt replaces it. */
interface ProviderSpan {
  span: Span;
  context: Context;
  ended: boolean;
  /** The `code` of the error the call ended with (unreachable, timed out), when it threw. */
  errorType?: string;
}

const upstreamSpans = new WeakMap<ServerResponse, ProviderSpan>();

/** The provider call's span of a response and its context (for the stream span), when one was started. */
export function upstreamSpan(res: ServerResponse): { span: Span; context: Context } | undefined {
  return upstreamSpans.get(res);
}

/**
 * Ends the span of an attempt that a later target's attempt replaces (routing across targets):
 * it failed, with the provider's status or the error it threw.
 */
function endReplacedSpan(entry: ProviderSpan, locals: GatewayLocals): void {
  if (entry.ended) return;
  entry.ended = true;
  const status = locals.upstreamStatus;
  setDefinedAttributes(entry.span, {
    'http.response.status_code': status,
    'error.type': entry.errorType ?? (status !== undefined && status >= 400 ? String(status) : undefined),
  });
  entry.span.setStatus({ code: SpanStatusCode.ERROR });
  entry.span.end();
}

/** Ends the provider call's span with what the answer reported (GenAI semantic conventions). */
function endUpstreamSpan(entry: ProviderSpan, locals: GatewayLocals, status: number): void {
  if (entry.ended) return;
  entry.ended = true;
  const span = entry.span;
  const usage = locals.usage;
  setDefinedAttributes(span, {
    'gen_ai.response.model': locals.responseModel,
    'gen_ai.usage.input_tokens': usage?.inputTokens,
    'gen_ai.usage.output_tokens': usage?.outputTokens,
    'gen_ai.usage.cache_creation.input_tokens': usage?.cacheCreationInputTokens,
    'gen_ai.usage.cache_read.input_tokens': usage?.cacheReadInputTokens,
    'http.response.status_code': locals.upstreamStatus,
    'error.type': locals.errorCode ?? (status >= 400 ? String(status) : undefined),
  });
  if (locals.errorCode !== undefined || status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}

/** Waits `ms`, or less when the client disconnects meanwhile. */
function sleep(ms: number, abort: UpstreamAbort): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      abort.off('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    abort.once('abort', done);
  });
}

/** A provider base URL split into the origin undici connects to and the path prefix of its endpoints. */
export interface ProviderBase {
  origin: string;
  /** The base URL's path without a trailing slash (`""` for none). */
  path: string;
}

const bases = new Map<string, ProviderBase>();

/** The origin and path prefix of a provider base URL, parsed once per URL. */
export function providerBase(baseUrl: string): ProviderBase {
  let base = bases.get(baseUrl);
  if (!base) {
    const url = new URL(baseUrl);
    base = { origin: url.origin, path: url.pathname.replace(/\/$/, '') };
    // Base URLs come from the catalog; the bound only guards against a host catalog that makes many.
    if (bases.size >= 1024) bases.clear();
    bases.set(baseUrl, base);
  }
  return base;
}

/**
 * Calls the provider, retrying listed statuses with backoff (honouring `retry-after`), at most
 * `limits.maxRetryAttempts` times and within `limits.maxRetryTimeMs` of the first call: a retry
 * whose wait would end after that is not made, and the last answer (or failure) is returned.
 * Nothing has been written to the client while it retries, so a stream is never retried once
 * started. A client that disconnects aborts the upstream request (and any wait).
 */
export async function callProvider(call: ProviderCall): Promise<Dispatcher.ResponseData> {
  const abort = new UpstreamAbort();
  call.res.once('close', () => {
    if (!call.res.writableFinished) abort.abort();
  });
  const locals = gatewayLocals(call.res);
  locals.target = call.target;
  locals.requestModel = call.model;
  // One span for the provider call (its retries included) until the answer is over; the provider
  // gets a traceparent naming it.
  const upstream = startSpan(TRACER_NAME, `${call.operation} ${call.model}`, call.traceContext, SpanKind.CLIENT, {
    'gen_ai.operation.name': call.operation,
    'gen_ai.provider.name': call.providerName ?? 'anthropic',
    'gen_ai.request.model': call.model,
    'gateway.provider.slug': call.target,
    'server.address': safeHost(call.origin),
  });
  // An earlier attempt of the request (another target) failed: its span ends as this one starts.
  const replaced = upstreamSpans.get(call.res);
  if (replaced !== undefined) endReplacedSpan(replaced, locals);
  locals.upstreamStatus = undefined;
  const entry: ProviderSpan = { ...upstream, ended: false };
  upstreamSpans.set(call.res, entry);
  call.res.once('close', () => endUpstreamSpan(entry, locals, call.res.statusCode));
  const headers = { ...call.headers };
  injectTraceHeaders(upstream.context, headers);
  const attempts = Math.min(call.config.retry?.attempts ?? 0, call.limits.maxRetryAttempts);
  const statuses = call.config.retry?.on_status_codes ?? DEFAULT_RETRY_STATUSES;
  const deadline = performance.now() + call.limits.maxRetryTimeMs;
  /**
   * Waits before the next attempt, first discarding the answer that is retried; false when there
   * is none to make (attempts or time are used up, or the client left).
   */
  const wait = async (attempt: number, retryAfter: string | undefined, discard?: () => Promise<void>) => {
    if (attempt >= attempts || abort.aborted) return false;
    const delay = retryDelay(attempt + 1, retryAfter);
    if (performance.now() + delay >= deadline) return false;
    await discard?.();
    await sleep(delay, abort);
    return !abort.aborted;
  };
  for (let attempt = 0; ; attempt++) {
    locals.upstreamAttempts = attempt + 1;
    const started = performance.now();
    let response: Dispatcher.ResponseData;
    try {
      response = await call.dispatcher.request({
        origin: call.origin,
        path: call.path,
        method: 'POST',
        headers:
          typeof call.body === 'string' ? headers : { ...headers, 'content-length': String(call.body.byteLength) },
        body: typeof call.body === 'string' ? call.body : Readable.from(call.body.chunks(), { objectMode: false }),
        headersTimeout: call.timeoutMs,
        // undici refreshes this timer with every chunk and stops it while the client holds the body back.
        bodyTimeout: call.limits.streamIdleTimeoutMs,
        signal: abort,
      });
    } catch (error) {
      if (abort.aborted) throw new ClientAbortError();
      const mapped = mapUpstreamError(error);
      if (statuses.includes((mapped as unknown as { status: number }).status) && (await wait(attempt, undefined))) {
        continue;
      }
      if (abort.aborted) throw new ClientAbortError();
      entry.errorType = (mapped as { code?: string }).code;
      throw mapped;
    }
    if (call.adapt !== undefined) response = await call.adapt(response);
    locals.upstreamStatus = response.statusCode;
    locals.upstreamMs = performance.now() - started;
    const retryAfter = response.headers['retry-after'];
    if (
      statuses.includes(response.statusCode) &&
      (await wait(attempt, typeof retryAfter === 'string' ? retryAfter : undefined, () => response.body.dump()))
    ) {
      continue;
    }
    if (abort.aborted) throw new ClientAbortError();
    return response;
  }
}

/** The host of an origin, for `server.address`. */
function safeHost(origin: string): string | undefined {
  try {
    return new URL(origin).hostname;
  } catch {
    return undefined;
  }
}

/**
 * Starts the span of a streamed answer, child of the provider call's span: it records the time to
 * the first event (`gateway.stream.time_to_first_token_ms` and a `first_token` event) and the
 * events relayed, and ends when the response closes. Returns the function to call for each event.
 */
export function startStreamSpan(res: ServerResponse): () => void {
  const parent = upstreamSpans.get(res);
  if (parent === undefined || !parent.span.isRecording()) return noop;
  const { span } = startSpan(TRACER_NAME, 'gateway.stream', parent.context, SpanKind.INTERNAL);
  const started = performance.now();
  let events = 0;
  res.once('close', () => {
    span.setAttribute('gateway.stream.events', events);
    span.setAttribute('gateway.stream.completed', res.writableFinished);
    span.end();
  });
  return () => {
    if (events++ === 0) {
      span.addEvent('first_token');
      span.setAttribute('gateway.stream.time_to_first_token_ms', Math.round((performance.now() - started) * 100) / 100);
    }
  };
}

const noop = () => undefined;

/** Whether an upstream body failed because the provider sent nothing for the idle timeout. */
export function isBodyTimeout(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'UND_ERR_BODY_TIMEOUT';
}

/** Most bytes of a provider's error body the gateway reads: 1 MiB. */
export const MAX_UPSTREAM_ERROR_BYTES = 1024 * 1024;
/** Most bytes of a provider's non-streamed answer the gateway reads: 32 MiB. */
export const MAX_UPSTREAM_BODY_BYTES = 32 * 1024 * 1024;
/** Most bytes of one server-sent event (or of a line with no end) in a provider's stream: 1 MiB. */
export const MAX_UPSTREAM_EVENT_BYTES = 1024 * 1024;

/**
 * Reads a provider's body as text, at most `limitBytes` of it; a longer one is dropped (its
 * connection closed) and the request fails with `502 upstream_invalid_response`.
 */
export function readUpstreamText(body: Dispatcher.ResponseData['body'], limitBytes: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    body.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limitBytes) {
        body.destroy();
        reject(new UpstreamInvalidResponseError('The provider sent a larger answer than the gateway reads.'));
        return;
      }
      chunks.push(chunk);
    });
    body.once('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    body.once('error', (error: { code?: string }) =>
      reject(
        isBodyTimeout(error)
          ? new UpstreamTimeoutError('The provider stopped sending its answer for longer than the idle timeout.')
          : new UpstreamInvalidResponseError('The provider closed the connection before its answer was complete.'),
      ),
    );
  });
}

/** A provider's successful JSON answer: `502 upstream_invalid_response` when it is not a JSON object or too large. */
export async function readUpstreamJson(body: Dispatcher.ResponseData['body']): Promise<Record<string, unknown>> {
  const text = await readUpstreamText(body, MAX_UPSTREAM_BODY_BYTES);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new UpstreamInvalidResponseError('The provider answered with a body that is not a JSON object.');
  }
  return parsed as Record<string, unknown>;
}

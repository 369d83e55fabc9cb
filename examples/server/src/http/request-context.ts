import { createHash, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import {
  SpanKind,
  SpanStatusCode,
  contextWithParent,
  newSpanId,
  parseTraceparent,
  setDefinedAttributes,
  setRequestTraceContext,
  startSpan,
} from '@gw/tracing';
import type { GatewayIdentity } from '@gw/identity-forwarding';
import type { GatewayLocals } from '@gw/model-router';
import type { RequestAttempt } from '@gw/catalog';
import type { LargestUse, RouteLimits } from '../limits/limit-step';
import { CONSOLE_TEST_SUBJECT, callerUserId } from '../access/access-hooks';
import type { GatewayMetrics } from '../observability/metrics';
import { isoTime } from '../observability/logger';
import { logRequest, type RequestRecord } from '../observability/request-record';
import { takeVirtualServerMarker } from '../mcp/virtual-marker';
import { routeFamily, type RouteFamily } from './route-family';

const TRACE_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const W3C_TRACE_ID = /^(?!0{32})[0-9a-f]{32}$/;

/** The instrumentation scope of the gateway's own spans. */
export const TRACER_NAME = '@gw/example-server';

/** Where finished request records go (the catalog database's writer), besides the log line. */
export type RequestRecordSink = (record: RequestRecord) => void;

/** What the gateway learns about a request while serving it, for its record. */
export interface RequestState {
  /** The caller, once authenticated. */
  identity?: GatewayIdentity;
  /** The last four characters of the caller's API key. */
  keyHint?: string;
  /** The request's `x-gateway-metadata`. */
  metadata?: Record<string, string>;
  /**
   * Why access mode `report` let through a request that `policies` would refuse; or a check made
   * when the request ends (an MCP request's server and tool are known only then) that answers it.
   */
  wouldDeny?: string | ((gateway: GatewayLocals & { mcpMethod?: string; mcpTool?: string }) => string | undefined);

  /** The limits step of the request's route group: sets the record's cost and settles the reservation. */
  limits?: RouteLimits;
  /** The largest use of the request's model call, as the limits step priced it when admitting it. */
  largestUse?: LargestUse;
  /**
   * A call a virtual MCP server handed in process to a member's own endpoint (`virtual-fast-call.ts`):
   * the record is the member request's (`path` `/mcp/<member>`) and names the virtual server.
   */
  virtualMember?: { path: string; virtualServer: string };
}

const STATE = Symbol('gateway.requestState');

/** The request's {@link RequestState}, created when absent. */
export function requestState(req: IncomingMessage): RequestState {
  const holder = req as IncomingMessage & { [STATE]?: RequestState };
  return (holder[STATE] ??= {});
}

/** Route families whose requests are recorded (model, MCP and AWS traffic; not health, metrics or admin). */
const RECORDED: ReadonlySet<RouteFamily> = new Set([
  'chat',
  'models',
  'prompts',
  'messages',
  'responses',
  'mcp',
  'aws',
]);

/**
 * The trace a request belongs to: the caller's `traceparent` (W3C Trace Context) when valid; else
 * a new trace whose id is the caller's `x-gateway-trace-id` when that is 32 hex digits, or derived
 * from it (its SHA-256), so requests sent with one trace id share one trace; else a new random trace.
 */
function incomingTrace(req: IncomingMessage, sent: string | undefined) {
  const remote = parseTraceparent(req.headers.traceparent, req.headers.tracestate);
  if (remote) return remote;
  if (sent === undefined) return undefined;
  const traceId = W3C_TRACE_ID.test(sent) ? sent : createHash('sha256').update(sent).digest('hex').slice(0, 32);
  // A made-up parent: the request span is the trace's first recorded span.
  return { traceId, spanId: newSpanId(), traceFlags: 1, isRemote: true };
}

/** A non-negative whole number of tokens, or null. */
const tokens = (value: number | undefined): number | null => (value === undefined ? null : value);

/**
 * Starts a request's span (continuing the caller's W3C trace, else a new one), gives the response
 * `x-gateway-request-id` and `x-gateway-trace-id` (the caller's `x-gateway-trace-id` or
 * `x-portkey-trace-id` when well-formed, else the trace's id), and when it ends writes one log
 * line with the request's record, the metrics, and the record to `sink` (model, MCP and AWS routes
 * only). `path` is the request path without its query string. Works on any node:http request.
 */
export function trackRequest(
  logger: Logger,
  metrics: GatewayMetrics,
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  sink?: RequestRecordSink,
): void {
  const started = performance.now();
  const startedAt = Date.now();
  const requestId = randomUUID();
  // A member request a virtual MCP server made (its in-process marker, removed here); never a client's claim.
  const virtualServer = takeVirtualServerMarker(req);
  const header = req.headers['x-gateway-trace-id'] ?? req.headers['x-portkey-trace-id'];
  const sent = typeof header === 'string' && TRACE_ID.test(header) ? header : undefined;
  const parent = incomingTrace(req, sent);
  const family = routeFamily(path);
  const method = req.method ?? 'GET';
  const request = startSpan(
    TRACER_NAME,
    `${method} ${family}`,
    parent ? contextWithParent(parent) : NEW_TRACE,
    SpanKind.SERVER,
    { 'http.request.method': method, 'gateway.route': family, 'gateway.request_id': requestId },
  );
  setRequestTraceContext(req, request.context);
  const traceId = sent ?? request.span.spanContext().traceId;
  res.setHeader('x-gateway-request-id', requestId);
  res.setHeader('x-gateway-trace-id', traceId);
  // `on`, not `once`: a response closes once, and `once` wraps the listener and removes it again.
  res.on('close', () => {
    const gateway: GatewayLocals & { mcpMethod?: string; mcpTool?: string } =
      (res as { locals?: { gateway?: GatewayLocals } }).locals?.gateway ?? {};
    const status = res.headersSent ? res.statusCode : 499;
    const ended = performance.now();
    metrics.recordRequest(family, status, gateway.target, gateway.upstreamMs);
    if (gateway.streamIdleTimeout) metrics.recordStreamIdleTimeout(family, gateway.target);
    if (gateway.cacheStatus !== undefined) metrics.recordCache(gateway.cacheStatus, gateway.cacheTokensSaved);
    if (gateway.upstreamAttempts !== undefined && gateway.upstreamAttempts > 1) {
      metrics.recordRetries(family, gateway.target, gateway.upstreamAttempts - 1);
    }
    if (request.span.isRecording())
      setDefinedAttributes(request.span, {
        'http.response.status_code': status,
        'error.type': gateway.errorCode,
      });
    if (status >= 500 || status === 499) request.span.setStatus({ code: SpanStatusCode.ERROR });
    request.span.end();
    const state = requestState(req);
    const usage = gateway.usage;
    const record: RequestRecord = {
      time: isoTime(startedAt),
      requestId,
      traceId,
      route: family,
      method,
      path: state.virtualMember?.path ?? path,
      userId: recordedUserId(state.identity),
      keyHint: state.keyHint ?? null,
      provider: gateway.target ?? null,
      modelRequested: gateway.requestModel ?? null,
      modelAnswered: gateway.responseModel ?? null,
      mcpMethod: gateway.mcpMethod ?? null,
      mcpTool: gateway.mcpTool ?? null,
      status,
      errorCode: gateway.errorCode ?? (status >= 400 ? `http_${status}` : null),
      durationMs: Math.round((ended - started) * 100) / 100,
      ttfbMs: Math.round(((gateway.firstByteAt ?? ended) - started) * 100) / 100,
      inputTokens: tokens(usage?.inputTokens),
      outputTokens: tokens(usage?.outputTokens),
      cacheCreationTokens: tokens(usage?.cacheCreationInputTokens),
      cacheReadTokens: tokens(usage?.cacheReadInputTokens),
      cacheStatus: gateway.cacheStatus ?? null,
      metadata: state.metadata ?? null,
    };
    if (gateway.errorMessage !== undefined && status >= 400) record.errorMessage = gateway.errorMessage;
    if (gateway.attempts !== undefined && gateway.attempts.length > 0) record.attempts = recordedAttempts(gateway);
    const virtualMember = virtualServer ?? state.virtualMember?.virtualServer;
    if (virtualMember !== undefined) record.mcpVirtualServer = virtualMember;
    const wouldDeny = typeof state.wouldDeny === 'function' ? state.wouldDeny(gateway) : state.wouldDeny;
    if (wouldDeny !== undefined) {
      record.access = 'would_deny';
      record.accessReason = wouldDeny.slice(0, 500);
      metrics.recordWouldDeny(family);
      logger.info(
        { requestId, route: family, userId: record.userId, provider: record.provider, reason: record.accessReason },
        'access mode report: policies would refuse this request',
      );
    }

    state.limits?.onRecord(req, record, res.writableFinished);
    // The console's Test buttons: logged (marked `source: "console-test"`), never stored, so they
    // are in no request list and no usage sum (docs/decisions.md, "Console test calls").
    const consoleTest = state.identity?.subject === CONSOLE_TEST_SUBJECT;
    logRequest(logger, record, gateway, res.writableFinished, consoleTest ? 'console-test' : undefined);
    if (sink && RECORDED.has(family) && !consoleTest) sink(record);
  });
}

/**
 * The attempts of a request routed across targets, the answering one marked (`answered: true`):
 * the router's own records, which it no longer changes once the request is over (not copied).
 */
function recordedAttempts(gateway: GatewayLocals): RequestAttempt[] {
  const attempts = gateway.attempts ?? [];
  for (const attempt of attempts) if (attempt.index === gateway.answeredIndex) attempt.answered = true;
  return attempts;
}

/** No parent: the request span starts a new trace (one context for every such request, made once). */
const NEW_TRACE = contextWithParent({
  traceId: '00000000000000000000000000000000',
  spanId: '0000000000000000',
  traceFlags: 0,
});

/** The caller's user id as every check sees it ({@link callerUserId}), at most 256 characters. */
function recordedUserId(identity: GatewayIdentity | undefined): string | null {
  if (identity === undefined) return null;
  return callerUserId(identity)?.slice(0, 256) ?? null;
}

/** {@link trackRequest} as the Express app's first middleware. */
export function requestContext(logger: Logger, metrics: GatewayMetrics, sink?: RequestRecordSink) {
  return function requestContextMiddleware(req: Request, res: Response, next: NextFunction): void {
    trackRequest(logger, metrics, req, res, req.path, sink);
    next();
  };
}

/**
 * @gw/tracing: W3C Trace Context and OpenTelemetry spans as every @gw package makes them. Only
 * `@opentelemetry/api` is used: with a tracer provider registered (the host's or the gateway's
 * SDK), spans are recorded and exported; without one they cost a few allocations, yet every hop
 * still gets a span id of its own, so the `traceparent` sent upstream names the gateway's span.
 */
import { randomFillSync } from 'node:crypto';
import {
  ProxyTracerProvider,
  ROOT_CONTEXT,
  TraceFlags,
  context as otelContext,
  createContextKey,
  createTraceState,
  propagation,
  trace,
  type Attributes,
  type Context,
  type Span,
  type SpanContext,
  type SpanKind,
  type Tracer,
} from '@opentelemetry/api';

export { SpanKind, SpanStatusCode, type Attributes, type Context, type Span } from '@opentelemetry/api';

/** The property of a request that holds its trace context (set by the host, read by every package). */
const TRACE_CONTEXT = Symbol.for('gw.traceContext');

type WithTraceContext = { [TRACE_CONTEXT]?: Context };

/** Gives a request the trace context its spans are children of (the host's request span). */
export function setRequestTraceContext(req: object, context: Context): void {
  (req as WithTraceContext)[TRACE_CONTEXT] = context;
}

/**
 * The trace context of a request: the one the host set with {@link setRequestTraceContext}, else
 * the active OpenTelemetry context (a host app's own instrumentation), else the root.
 */
export function requestTraceContext(req: object): Context {
  return (req as WithTraceContext)[TRACE_CONTEXT] ?? otelContext.active();
}

// Ids come from a pool of random bytes refilled 4 KiB at a time (one system call per 256 spans).
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;

function randomHex(bytes: number): string {
  if (poolOffset + bytes > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const hex = pool.toString('hex', poolOffset, poolOffset + bytes);
  poolOffset += bytes;
  return hex;
}

/** A new random 16-byte trace id, as 32 lower-case hex digits. */
export function newTraceId(): string {
  const id = randomHex(16);
  return id === '00000000000000000000000000000000' ? newTraceId() : id;
}

/** A new random 8-byte span id, as 16 lower-case hex digits. */
export function newSpanId(): string {
  const id = randomHex(8);
  return id === '0000000000000000' ? newSpanId() : id;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/**
 * Parses a W3C `traceparent` (and `tracestate`) header. Undefined for a missing or malformed one,
 * version `ff`, an all-zero id, or a version-00 header with extra fields (W3C Trace Context 1,
 * section 3.2), so the caller starts a new trace.
 */
export function parseTraceparent(
  traceparent: string | string[] | undefined,
  tracestate?: string | string[] | undefined,
): SpanContext | undefined {
  if (typeof traceparent !== 'string' || traceparent.length > 512) return undefined;
  const match = TRACEPARENT.exec(traceparent.trim());
  if (!match) return undefined;
  const [, version, traceId, spanId, flags, rest] = match as unknown as string[];
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (/^0+$/.test(traceId as string) || /^0+$/.test(spanId as string)) return undefined;
  const state = Array.isArray(tracestate) ? tracestate.join(',') : tracestate;
  return {
    traceId: traceId as string,
    spanId: spanId as string,
    traceFlags: parseInt(flags as string, 16) & TraceFlags.SAMPLED,
    isRemote: true,
    // tracestate is bounded to 32 members by the API's parser; longer text is not kept.
    traceState: state && state.length <= 512 ? createTraceState(state) : undefined,
  };
}

/** A context whose span is `parent` (a remote span, or one made up from a trace id). */
export function contextWithParent(parent: SpanContext): Context {
  return trace.setSpanContext(ROOT_CONTEXT, parent);
}

const tracers = new Map<string, Tracer>();

/** The API's tracer of a scope, made once (it follows whichever provider is registered, now or later). */
function tracer(name: string): Tracer {
  let found = tracers.get(name);
  if (found === undefined) {
    found = trace.getTracer(name);
    tracers.set(name, found);
  }
  return found;
}

/**
 * Whether a tracer provider is registered with the OpenTelemetry API (the gateway's SDK when
 * export is on, or a host app's): the API's global provider is its proxy until one is, and the
 * proxy has no delegate then. Read on every span, so a provider registered later is followed.
 */
function tracerProviderRegistered(): boolean {
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegate() !== NO_PROVIDER;
}

/** The API's no-op provider: what a proxy without a delegate hands back. */
const NO_PROVIDER = new ProxyTracerProvider().getDelegate();

/** The API's key of a context's current span (what `trace.setSpan` writes, `trace.getSpan` reads). */
const SPAN_KEY = createContextKey('OpenTelemetry Context Key SPAN');

/**
 * A context that is its parent plus one value, as `setValue` on the API's contexts makes one,
 * without what theirs costs: a copy of every value of the parent into a new Map, and three
 * closures. Used for the spans made without a tracer provider (two a request).
 */
class ChildContext implements Context {
  constructor(
    private readonly parent: Context,
    private readonly key: symbol,
    private readonly value: unknown,
  ) {}

  getValue(key: symbol): unknown {
    return key === this.key ? this.value : this.parent.getValue(key);
  }

  setValue(key: symbol, value: unknown): Context {
    return new ChildContext(this, key, value);
  }

  deleteValue(key: symbol): Context {
    return new ChildContext(this, key, undefined);
  }
}

/** A span and the context whose current span it is (for its children and upstream headers). */
export interface StartedSpan {
  span: Span;
  context: Context;
}

/**
 * Starts a span, child of the span of `parent`. Without a tracer provider the OpenTelemetry API
 * hands back the parent's own span context; the span made here instead has an id of its own (in
 * the parent's trace, or a new trace), so what is sent upstream still names this hop.
 */
export function startSpan(
  tracerName: string,
  name: string,
  parent: Context,
  kind: SpanKind,
  attributes?: Attributes,
): StartedSpan {
  if (!tracerProviderRegistered()) {
    // No provider: the API's tracer would hand back a no-op span with the parent's context, which
    // is replaced below anyway. The span of this hop is made directly.
    const parentSpan = trace.getSpanContext(parent);
    const span = trace.wrapSpanContext({
      traceId: parentSpan && trace.isSpanContextValid(parentSpan) ? parentSpan.traceId : newTraceId(),
      spanId: newSpanId(),
      traceFlags: parentSpan?.traceFlags ?? TraceFlags.SAMPLED,
      traceState: parentSpan?.traceState,
    });
    return { span, context: new ChildContext(parent, SPAN_KEY, span) };
  }
  let span = tracer(tracerName).startSpan(name, { kind, attributes }, parent);
  if (!span.isRecording()) {
    const parentSpan = trace.getSpanContext(parent);
    const own = span.spanContext();
    if (parentSpan === undefined || own.spanId === parentSpan.spanId || !trace.isSpanContextValid(own)) {
      span = trace.wrapSpanContext({
        traceId: parentSpan && trace.isSpanContextValid(parentSpan) ? parentSpan.traceId : newTraceId(),
        spanId: newSpanId(),
        traceFlags: parentSpan?.traceFlags ?? TraceFlags.SAMPLED,
        traceState: parentSpan?.traceState,
      });
    }
  }
  return { span, context: trace.setSpan(parent, span) };
}

/**
 * Writes `traceparent` (and `tracestate`) of the current span of `context` into `headers`, after
 * any propagator the host registered (baggage, B3…): the W3C headers are always the gateway's own,
 * whatever the client sent, and name the span of `context` as the parent.
 */
export function injectTraceHeaders(context: Context, headers: Record<string, unknown>): void {
  const spanContext = trace.getSpanContext(context);
  if (spanContext === undefined || !trace.isSpanContextValid(spanContext)) return;
  propagation.inject(context, headers);
  headers.traceparent = `00-${spanContext.traceId}-${spanContext.spanId}-0${spanContext.traceFlags & TraceFlags.SAMPLED}`;
  const state = spanContext.traceState?.serialize();
  if (state) headers.tracestate = state;
  else delete headers.tracestate;
}

/** Sets the attributes whose value is defined (OpenTelemetry refuses undefined values). */
export function setDefinedAttributes(
  span: Span,
  attributes: Record<string, string | number | boolean | undefined>,
): void {
  if (!span.isRecording()) return;
  for (const key in attributes) {
    const value = attributes[key];
    if (value !== undefined) span.setAttribute(key, value);
  }
}

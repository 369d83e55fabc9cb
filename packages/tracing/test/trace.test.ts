import fc from 'fast-check';
import {
  ROOT_CONTEXT,
  SpanKind,
  createContextKey,
  propagation,
  trace,
  type Context,
  type Span,
  type TracerProvider,
} from '@opentelemetry/api';
import {
  contextWithParent,
  injectTraceHeaders,
  newSpanId,
  newTraceId,
  parseTraceparent,
  requestTraceContext,
  setRequestTraceContext,
  startSpan,
} from '../src';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';

describe('parseTraceparent', () => {
  it('reads a valid header, with its sampled flag and tracestate', () => {
    const parent = parseTraceparent(`00-${TRACE}-${SPAN}-01`, 'vendor=a,other=b');
    expect(parent).toMatchObject({ traceId: TRACE, spanId: SPAN, traceFlags: 1, isRemote: true });
    expect(parent?.traceState?.serialize()).toBe('vendor=a,other=b');
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-00`)?.traceFlags).toBe(0);
    // A later version may carry more fields.
    expect(parseTraceparent(`01-${TRACE}-${SPAN}-01-extra`)?.traceId).toBe(TRACE);
  });

  it.each([
    ['missing', undefined],
    ['an array', [`00-${TRACE}-${SPAN}-01`]],
    ['upper-case hex', `00-${TRACE.toUpperCase()}-${SPAN}-01`],
    ['version ff', `ff-${TRACE}-${SPAN}-01`],
    ['version 00 with extra fields', `00-${TRACE}-${SPAN}-01-extra`],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-${SPAN}-01`],
    ['an all-zero span id', `00-${TRACE}-${'0'.repeat(16)}-01`],
    ['too long', `00-${TRACE}-${SPAN}-01-${'x'.repeat(600)}`],
  ])('refuses %s', (_name, header) => {
    expect(parseTraceparent(header as string | undefined)).toBeUndefined();
  });
});

describe('spans without a tracer provider', () => {
  it("get a span id of their own in the parent's trace, which traceparent names", () => {
    const parent = contextWithParent({ traceId: TRACE, spanId: SPAN, traceFlags: 1, isRemote: true });
    const { span, context } = startSpan('test', 'child', parent, SpanKind.CLIENT);
    expect(span.spanContext().traceId).toBe(TRACE);
    expect(span.spanContext().spanId).not.toBe(SPAN);
    const headers: Record<string, unknown> = { tracestate: 'stale=1' };
    injectTraceHeaders(context, headers);
    expect(headers.traceparent).toBe(`00-${TRACE}-${span.spanContext().spanId}-01`);
    // The client's tracestate is not passed on when the span has none.
    expect(headers.tracestate).toBeUndefined();
  });

  it('start a new sampled trace under an invalid parent', () => {
    const { span } = startSpan(
      'test',
      'root',
      trace.setSpanContext(
        ROOT_CONTEXT,
        trace.wrapSpanContext({ traceId: '0'.repeat(32), spanId: '0'.repeat(16), traceFlags: 0 }).spanContext(),
      ),
      SpanKind.SERVER,
    );
    expect(span.spanContext().traceId).toMatch(/^(?!0{32})[0-9a-f]{32}$/);
    expect(span.spanContext().traceFlags).toBe(0);
  });
});

describe('the context of a span made without a tracer provider', () => {
  it('is read by the API as the span’s, and keeps the parent’s other values (baggage)', () => {
    const baggage = propagation.createBaggage({ tenant: { value: 'a' } });
    const parent = propagation.setBaggage(contextWithParent({ traceId: TRACE, spanId: SPAN, traceFlags: 1 }), baggage);
    const { span, context } = startSpan('test', 'child', parent, SpanKind.CLIENT);
    expect(trace.getSpan(context)).toBe(span);
    expect(trace.getSpanContext(context)?.traceId).toBe(TRACE);
    expect(propagation.getBaggage(context)?.getEntry('tenant')?.value).toBe('a');
    expect(trace.getSpan(trace.deleteSpan(context))).toBeUndefined();
    // The parent is unchanged.
    expect(trace.getSpanContext(parent)?.spanId).toBe(SPAN);
  });

  it('answers every read as the API’s own contexts do, after any sequence of writes (property)', () => {
    const keys = ['a', 'b', 'OpenTelemetry Context Key SPAN'].map((name) => createContextKey(name));
    const op = fc.oneof(
      fc.record({ kind: fc.constant('set' as const), key: fc.nat(2), value: fc.integer() }),
      fc.record({ kind: fc.constant('delete' as const), key: fc.nat(2) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 12 }), fc.nat(2), (ops, at) => {
        // Ours: a span's context (a ChildContext) written on; theirs: the same writes on the API's.
        const { context: ours } = startSpan('test', 'child', ROOT_CONTEXT, SpanKind.INTERNAL);
        let mine: Context = ours;
        let theirs: Context = trace.setSpan(ROOT_CONTEXT, trace.getSpan(ours) as Span);
        for (const step of ops) {
          const key = keys[step.key] as symbol;
          if (step.kind === 'set') {
            mine = mine.setValue(key, step.value);
            theirs = theirs.setValue(key, step.value);
          } else {
            mine = mine.deleteValue(key);
            theirs = theirs.deleteValue(key);
          }
        }
        for (const key of keys) expect(mine.getValue(key)).toBe(theirs.getValue(key));
        expect(ours.getValue(keys[at] as symbol)).toBe(
          trace.setSpan(ROOT_CONTEXT, trace.getSpan(ours) as Span).getValue(keys[at] as symbol),
        );
      }),
    );
  });
});

describe('spans with a tracer provider registered later', () => {
  afterEach(() => trace.disable());

  it('follow the provider from the next span on, and stop when it goes', () => {
    const parent = contextWithParent({ traceId: TRACE, spanId: SPAN, traceFlags: 1, isRemote: true });
    expect(startSpan('test', 'before', parent, SpanKind.SERVER).span.isRecording()).toBe(false);
    const started: string[] = [];
    // A host's provider: its tracer records every span it starts (ids of its own in the parent's trace).
    const provider: TracerProvider = {
      getTracer: () => ({
        startSpan(name, _options, context) {
          started.push(name);
          const span = trace.wrapSpanContext({
            traceId: trace.getSpanContext(context ?? ROOT_CONTEXT)?.traceId ?? newTraceId(),
            spanId: newSpanId(),
            traceFlags: 1,
          });
          return Object.assign(Object.create(span) as Span, { isRecording: () => true });
        },
        startActiveSpan: () => {
          throw new Error('not used');
        },
      }),
    };
    expect(trace.setGlobalTracerProvider(provider)).toBe(true);
    const { span } = startSpan('test', 'during', parent, SpanKind.SERVER);
    expect(started).toEqual(['during']);
    expect(span.isRecording()).toBe(true);
    expect(span.spanContext().traceId).toBe(TRACE);
    trace.disable();
    expect(startSpan('test', 'after', parent, SpanKind.SERVER).span.isRecording()).toBe(false);
    expect(started).toEqual(['during']);
  });
});

describe('ids and the request trace context', () => {
  it('makes distinct, well-formed ids', () => {
    const traces = new Set(Array.from({ length: 500 }, newTraceId));
    const spans = new Set(Array.from({ length: 500 }, newSpanId));
    expect(traces.size).toBe(500);
    expect(spans.size).toBe(500);
    for (const id of traces) expect(id).toMatch(/^[0-9a-f]{32}$/);
    for (const id of spans) expect(id).toMatch(/^[0-9a-f]{16}$/);
  });

  it('carries the context a host set on the request', () => {
    const req = {};
    const context = contextWithParent({ traceId: TRACE, spanId: SPAN, traceFlags: 1 });
    setRequestTraceContext(req, context);
    expect(requestTraceContext(req)).toBe(context);
    expect(trace.getSpanContext(requestTraceContext({}))).toBeUndefined();
  });
});

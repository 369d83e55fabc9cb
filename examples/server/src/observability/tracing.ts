import { trace } from '@opentelemetry/api';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  TracerProvider,
  type ReadableSpan,
  type Span,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace';
import type { Context } from '@opentelemetry/api';

/** What the span pipeline has done, for the metrics. */
export interface TracingStats {
  /** Spans the collector accepted. */
  exported: number;
  /** Spans not exported, by reason: the queue was full, or the export failed or timed out. */
  dropped: { queueFull: number; exportFailed: number };
  /** Spans ended and waiting for (or in) an export. */
  queued: number;
}

/** The OpenTelemetry SDK the gateway started, when it did. */
export interface GatewayTracing {
  readonly stats: TracingStats;
  /** Exports what is queued (within the export timeout), then stops. */
  shutdown(): Promise<void>;
}

/** Reads a positive whole number from the environment (the standard `OTEL_BSP_*` variables). */
function positiveEnv(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const value = env[name]?.trim();
  if (value === undefined || value === '') return fallback;
  if (!/^\d+$/.test(value) || Number(value) < 1) {
    throw new Error(`${name} must be a whole number of at least 1, such as ${fallback} (got "${value.slice(0, 40)}").`);
  }
  return Number(value);
}

/** The OTLP/HTTP traces URL from the environment, or undefined when tracing is off. */
export function tracesEndpoint(env: NodeJS.ProcessEnv): string | undefined {
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (traces) return traces;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (!base) return undefined;
  return `${base.replace(/\/+$/, '')}/v1/traces`;
}

/**
 * Counts what the exporter did with each batch: accepted, or failed (a collector down, refusing,
 * or not answering within the export timeout; the callback is then called once, by the timer).
 */
class CountingExporter implements SpanExporter {
  constructor(
    private readonly inner: SpanExporter,
    private readonly stats: TracingStats,
    private readonly timeoutMs: number,
  ) {}

  export(spans: ReadableSpan[], resultCallback: (result: ExportResult) => void): void {
    let done = false;
    const finish = (result: ExportResult) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      this.stats.queued = Math.max(0, this.stats.queued - spans.length);
      if (result.code === ExportResultCode.SUCCESS) this.stats.exported += spans.length;
      else this.stats.dropped.exportFailed += spans.length;
      resultCallback(result);
    };
    const timer = setTimeout(
      () => finish({ code: ExportResultCode.FAILED, error: new Error('export timed out') }),
      this.timeoutMs,
    );
    timer.unref();
    try {
      this.inner.export(spans, finish);
    } catch (error) {
      finish({ code: ExportResultCode.FAILED, error: error as Error });
    }
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}

/**
 * A bounded queue in front of the batch processor: past `maxQueueSize` spans ended and not yet
 * exported, a span is dropped (counted) at once, and the request that ended it never waits.
 */
class BoundedSpanProcessor implements SpanProcessor {
  constructor(
    private readonly inner: SpanProcessor,
    private readonly stats: TracingStats,
    private readonly maxQueueSize: number,
  ) {}

  onStart(span: Span, parentContext: Context): void {
    this.inner.onStart(span, parentContext);
  }

  onEnd(span: ReadableSpan): void {
    if (!span.spanContext().traceFlags) return;
    if (this.stats.queued >= this.maxQueueSize) {
      this.stats.dropped.queueFull++;
      return;
    }
    this.stats.queued++;
    this.inner.onEnd(span);
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }
}

/**
 * Starts the OpenTelemetry SDK when `OTEL_EXPORTER_OTLP_ENDPOINT` or
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set (CONTRACT section 9): spans of every @gw package
 * go over OTLP/HTTP (JSON) through a bounded batch queue (`OTEL_BSP_MAX_QUEUE_SIZE`, default
 * 2048; `OTEL_BSP_SCHEDULE_DELAY` 5000 ms; `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` 512;
 * `OTEL_BSP_EXPORT_TIMEOUT` 30000 ms; `OTEL_EXPORTER_OTLP_TIMEOUT` 10000 ms), with service name
 * `OTEL_SERVICE_NAME` (default `gateway`). Returns undefined, starting nothing, when neither is set.
 */
export function startTracing(env: NodeJS.ProcessEnv): GatewayTracing | undefined {
  const url = tracesEndpoint(env);
  if (url === undefined) return undefined;
  try {
    const parsed = new URL(url);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error('not http');
  } catch {
    throw new Error(
      `OTEL_EXPORTER_OTLP_ENDPOINT must be an http(s) URL, such as "http://localhost:4318" (got "${url.slice(0, 100)}").`,
    );
  }
  const maxQueueSize = positiveEnv(env, 'OTEL_BSP_MAX_QUEUE_SIZE', 2048);
  const scheduledDelayMillis = positiveEnv(env, 'OTEL_BSP_SCHEDULE_DELAY', 5000);
  const maxExportBatchSize = Math.min(positiveEnv(env, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 512), maxQueueSize);
  const exportTimeoutMillis = positiveEnv(env, 'OTEL_BSP_EXPORT_TIMEOUT', 30_000);
  const timeoutMillis = positiveEnv(env, 'OTEL_EXPORTER_OTLP_TIMEOUT', 10_000);
  const stats: TracingStats = { exported: 0, dropped: { queueFull: 0, exportFailed: 0 }, queued: 0 };
  // Few concurrent exports: a hanging collector holds at most this many batches.
  const exporter = new CountingExporter(
    new OTLPTraceExporter({ url, timeoutMillis, concurrencyLimit: 2 }),
    stats,
    Math.min(exportTimeoutMillis, timeoutMillis) + 1000,
  );
  const batch = new BatchSpanProcessor({
    exporter,
    maxQueueSize,
    scheduledDelayMillis,
    maxExportBatchSize,
    exportTimeoutMillis,
  });
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME?.trim() || 'gateway' }),
    spanProcessors: [new BoundedSpanProcessor(batch, stats, maxQueueSize)],
  });
  // Only the tracer provider is registered. Every span gets its parent explicitly (the request's
  // trace context travels on the request: @gw/tracing), and `injectTraceHeaders` writes the W3C
  // headers itself, so neither a context manager nor a propagator is read. An
  // AsyncLocalStorage context manager, once the exporter first runs inside `context.with`, would
  // make every promise and async resource of the process carry the context: about 7% more CPU
  // per request with export on (docs/decisions.md, "Tracing").
  trace.setGlobalTracerProvider(provider);
  return {
    stats,
    shutdown: async () => {
      await provider.shutdown().catch(() => undefined);
      trace.disable();
    },
  };
}

import { trace, type Context } from '@opentelemetry/api';
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
import type { GatewayTracing, TracingSettings, TracingStats } from './tracing';

/*
 * The OpenTelemetry SDK and its OTLP/HTTP exporter, loaded by `startTracing` (./tracing.ts) only
 * when an OTLP endpoint is set: a gateway without one never loads them (docs/decisions.md,
 * "Memory at start-up in the production shape").
 */

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

/** Starts the SDK with settings `startTracing` read and checked from the environment. */
export function startTracingSdk({
  url,
  serviceName,
  maxQueueSize,
  scheduledDelayMillis,
  maxExportBatchSize,
  exportTimeoutMillis,
  timeoutMillis,
}: TracingSettings): GatewayTracing {
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
    resource: resourceFromAttributes({ 'service.name': serviceName }),
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

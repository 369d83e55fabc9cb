import type * as TracingSdk from './tracing-sdk';

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

/** What {@link startTracing} read from the environment, checked, for the SDK. */
export interface TracingSettings {
  /** The OTLP/HTTP traces URL. */
  url: string;
  /** `OTEL_SERVICE_NAME`. Default `gateway`. */
  serviceName: string;
  /** `OTEL_BSP_MAX_QUEUE_SIZE`. Default 2048. */
  maxQueueSize: number;
  /** `OTEL_BSP_SCHEDULE_DELAY`, ms. Default 5000. */
  scheduledDelayMillis: number;
  /** `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`, at most `maxQueueSize`. Default 512. */
  maxExportBatchSize: number;
  /** `OTEL_BSP_EXPORT_TIMEOUT`, ms. Default 30000. */
  exportTimeoutMillis: number;
  /** `OTEL_EXPORTER_OTLP_TIMEOUT`, ms. Default 10000. */
  timeoutMillis: number;
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
  const settings: TracingSettings = {
    url,
    serviceName: env.OTEL_SERVICE_NAME?.trim() || 'gateway',
    maxQueueSize,
    scheduledDelayMillis,
    maxExportBatchSize,
    exportTimeoutMillis,
    timeoutMillis,
  };
  // The SDK and its exporter (~10 MB resident) are loaded here, once, only when tracing is on.
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded only when configured
  const sdk = require('./tracing-sdk') as typeof TracingSdk;
  return sdk.startTracingSdk(settings);
}

import type { RequestRecord } from '@gw/catalog';
import type { Logger } from 'pino';
import { writeInfoLine } from './logger';
import { redactMetadata } from './metadata';

/** One request's record (CONTRACT section 9), as logged and as stored by `@gw/catalog`. */
export type { RequestRecord } from '@gw/catalog';

/** What the `request` log line adds to the record: how the hop to the upstream went. */
export interface RequestLineExtras {
  target?: string;
  upstreamStatus?: number;
  upstreamMs?: number;
  upstreamAttempts?: number;
  streamIdleTimeout?: boolean;
}

const text = (value: string | null): string => (value === null ? 'null' : JSON.stringify(value));
const number = (value: number | null): string => (value !== null && Number.isFinite(value) ? String(value) : 'null');
/** `,"key":value` for a defined value (pino leaves undefined fields out). */
const optional = (key: string, value: string | number | boolean | undefined): string =>
  value === undefined
    ? ''
    : `,"${key}":${typeof value === 'string' ? JSON.stringify(value) : typeof value === 'number' ? number(value) : value}`;

/**
 * The line's metadata. `readMetadata` redacted it when the header was read, so the stored record
 * keeps the same; the same step again (it changes nothing then) covers a record built elsewhere.
 */
function metadataJson(metadata: Record<string, string> | null): string {
  return metadata === null ? 'null' : JSON.stringify(redactMetadata(metadata));
}

/**
 * Writes the request's `request` log line: the record's fields (its `time` as `startedAt`, since
 * pino writes the line's own `time`, when the request ended), the hop's upstream figures and
 * whether the answer was sent whole; `source: "console-test"` marks a call of the console's Test
 * buttons (never stored as a record).
 *
 * With the gateway's own logger the line is written out by hand (`writeInfoLine`), the same JSON
 * pino writes for the same object: 10 µs of CPU a line where pino's serializer took 19, and the
 * object spread from the record (with `time` overridden) it replaces took 57
 * (docs/decisions.md, "Request records"). Any other logger gets the object.
 */
export function logRequest(
  logger: Logger,
  record: RequestRecord,
  extras: RequestLineExtras,
  completed: boolean,
  source?: 'console-test',
): void {
  if (!logger.isLevelEnabled('info')) return;
  const upstreamMs = extras.upstreamMs === undefined ? undefined : Math.round(extras.upstreamMs * 100) / 100;
  const fields =
    `"startedAt":${text(record.time)},"requestId":${text(record.requestId)},"traceId":${text(record.traceId)}` +
    `,"route":${text(record.route)},"method":${text(record.method)},"path":${text(record.path)}` +
    `,"userId":${text(record.userId)},"keyHint":${text(record.keyHint)},"provider":${text(record.provider)}` +
    `,"modelRequested":${text(record.modelRequested)},"modelAnswered":${text(record.modelAnswered)}` +
    `,"mcpMethod":${text(record.mcpMethod)},"mcpTool":${text(record.mcpTool)},"status":${number(record.status)},"errorCode":${text(record.errorCode)}` +
    `,"durationMs":${number(record.durationMs)},"ttfbMs":${number(record.ttfbMs)}` +
    `,"inputTokens":${number(record.inputTokens)},"outputTokens":${number(record.outputTokens)}` +
    `,"cacheCreationTokens":${number(record.cacheCreationTokens)},"cacheReadTokens":${number(record.cacheReadTokens)}` +
    `,"cacheStatus":${text(record.cacheStatus)},"metadata":${metadataJson(record.metadata)}` +
    `${optional('costUsd', record.costUsd ?? undefined)}` +
    `${optional('target', extras.target)}${optional('upstreamStatus', extras.upstreamStatus)}` +
    `${optional('upstreamMs', upstreamMs)}${optional('upstreamAttempts', extras.upstreamAttempts)}` +
    `${optional('streamIdleTimeout', extras.streamIdleTimeout)}${optional('access', record.access ?? undefined)}` +
    `${optional('accessReason', record.accessReason ?? undefined)}${optional('errorMessage', record.errorMessage ?? undefined)}` +
    `${record.attempts === null || record.attempts === undefined ? '' : `,"attempts":${JSON.stringify(record.attempts)}`}` +
    `${optional('mcpVirtualServer', record.mcpVirtualServer ?? undefined)}` +
    `${optional('source', source)},"completed":${completed}`;
  if (writeInfoLine(logger, fields, 'request')) return;
  logger.info(
    {
      startedAt: record.time,
      requestId: record.requestId,
      traceId: record.traceId,
      route: record.route,
      method: record.method,
      path: record.path,
      userId: record.userId,
      keyHint: record.keyHint,
      provider: record.provider,
      modelRequested: record.modelRequested,
      modelAnswered: record.modelAnswered,
      mcpMethod: record.mcpMethod,
      mcpTool: record.mcpTool,
      status: record.status,
      errorCode: record.errorCode,
      durationMs: record.durationMs,
      ttfbMs: record.ttfbMs,
      inputTokens: record.inputTokens,
      outputTokens: record.outputTokens,
      cacheCreationTokens: record.cacheCreationTokens,
      cacheReadTokens: record.cacheReadTokens,
      cacheStatus: record.cacheStatus,
      metadata: record.metadata === null ? null : redactMetadata(record.metadata),
      costUsd: record.costUsd ?? undefined,
      target: extras.target,
      upstreamStatus: extras.upstreamStatus,
      upstreamMs,
      upstreamAttempts: extras.upstreamAttempts,
      streamIdleTimeout: extras.streamIdleTimeout,
      access: record.access ?? undefined,
      accessReason: record.accessReason ?? undefined,
      errorMessage: record.errorMessage ?? undefined,
      attempts: record.attempts ?? undefined,
      mcpVirtualServer: record.mcpVirtualServer ?? undefined,
      source,
      completed,
    },
    'request',
  );
}

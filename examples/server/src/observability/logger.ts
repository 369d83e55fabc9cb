import pino, { type DestinationStream, type Logger } from 'pino';

/** Field names whose values are never written (compared case-insensitively). */
const SECRET_FIELDS: ReadonlySet<string> = new Set([
  'authorization',
  'x-api-key',
  'x-gateway-api-key',
  'x-portkey-api-key',
  'cookie',
  'apikey',
  'key',
  'secretaccesskey',
  'sessiontoken',
  'token',
  'privatekey',
  'password',
]);

/** A copy of `object` with the values of its secret-named fields replaced. */
export function redactObject(object: Record<string, unknown>): Record<string, unknown> {
  const copy = { ...object };
  for (const name in copy) if (SECRET_FIELDS.has(name.toLowerCase())) copy[name] = '[redacted]';
  return copy;
}

/**
 * Replaces the values of secret-named fields, at the top level and one level down. Returns the
 * object itself when it holds none (the common case: log objects are built field by field).
 */
export function redactSecrets(object: Record<string, unknown>): Record<string, unknown> {
  let copy: Record<string, unknown> | undefined;
  for (const name in object) {
    const value = object[name];
    if (SECRET_FIELDS.has(name.toLowerCase())) {
      (copy ??= { ...object })[name] = '[redacted]';
    } else if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
      const inner = value as Record<string, unknown>;
      if (Object.keys(inner).some((key) => SECRET_FIELDS.has(key.toLowerCase())))
        (copy ??= { ...object })[name] = redactObject(inner);
    }
  }
  return copy ?? object;
}

/** Whether an object has a secret-named field (at the top level), as {@link redactSecrets} reads them. */
export function hasSecretField(object: Record<string, unknown>): boolean {
  for (const name in object) if (SECRET_FIELDS.has(name.toLowerCase())) return true;
  return false;
}

/** Marks the loggers {@link createLogger} made: their line format is known (and no child's). */
const OWN_FORMAT = Symbol('gw.ownLogFormat');

type PinoInternals = Record<symbol, unknown> & { [OWN_FORMAT]?: true };

let isoTimeMs = NaN;
let isoTimeText = '';
/**
 * `new Date(ms).toISOString()`, made once per millisecond: a busy gateway writes several lines and
 * records in one (the `request` line's `time`, a record's start).
 */
export function isoTime(ms: number): string {
  if (ms !== isoTimeMs) {
    isoTimeMs = ms;
    isoTimeText = new Date(ms).toISOString();
  }
  return isoTimeText;
}

/** The line's `,"time":"…"` as the loggers {@link createLogger} makes write it (pino's `isoTime`). */
const lineTime = (): string => `,"time":"${isoTime(Date.now())}"`;

/**
 * Writes an `info` line whose fields are already JSON (`"key":value,…`, no secret among them: no
 * redaction is applied) straight to the destination of a logger {@link createLogger} made, in
 * pino's own format: `{"level":30,"time":…,"service":"gateway",<fields>,"msg":…}`. False, writing
 * nothing, for any other logger (a host's, a child): the caller then logs the fields as an object.
 * The caller checks that `info` is enabled.
 */
export function writeInfoLine(logger: Logger, fields: string, msg: string): boolean {
  if (!Object.prototype.hasOwnProperty.call(logger, OWN_FORMAT)) return false;
  const internals = logger as unknown as PinoInternals;
  const { streamSym, chindingsSym, endSym } = pino.symbols;
  const line = `{"level":${logger.levels.values.info}${lineTime()}${internals[chindingsSym] as string},${fields},"msg":${JSON.stringify(msg)}${internals[endSym] as string}`;
  (internals[streamSym] as DestinationStream).write(line);
  return true;
}

/** Log levels accepted in `LOG_LEVEL`. */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;

/** Writes buffered log lines out now (after start-up messages, at shutdown). */
export function flushLogger(logger: Logger): void {
  logger.flush();
}

/** Pending log bytes that start a write to stdout (below it, lines wait for the flush timer). */
const LOG_BATCH_BYTES = 32 * 1024;
/** Longest a log line waits in a batch, in ms. */
const LOG_FLUSH_MS = 200;
/** Most bytes handed to one write to stdout. */
const LOG_WRITE_MAX_BYTES = 64 * 1024;

/**
 * stdout, written asynchronously in batches of at least {@link LOG_BATCH_BYTES} (pino's
 * sonic-boom), each batch handed over as UTF-8 bytes. A write to stdout is a system call handed to
 * libuv's thread pool, and costs the same for 700 bytes as for 32 KiB: with 4 KiB batches the
 * `request` lines' writes were ~25 µs of CPU a request; 32 KiB batches (about 45 request lines)
 * write a ninth as often. In its default (text) mode sonic-boom measures the UTF-8 length of
 * its whole pending text at every line; once a line holds a character beyond Latin-1 (a request
 * line's key hint `…7f3a`) that pending text is two-byte and the measure costs about 15 µs of CPU
 * a line; in buffer mode it adds lengths.
 *
 * Lines are first joined into one pending text and turned into bytes once per batch (a
 * `Buffer.from` and a sonic-boom write per line cost about 1.5 µs of CPU a line): the text goes to
 * sonic-boom when it reaches {@link LOG_BATCH_BYTES} characters (at least as many bytes), at the
 * flush timer, and at every flush, including pino's own at exit (`flushSync`) and the gateway's
 * at shutdown. The bytes written are the same, in the same order.
 */
function stdoutDestination(): DestinationStream {
  const boom = pino.destination({
    dest: 1,
    sync: false,
    minLength: LOG_BATCH_BYTES,
    maxWrite: LOG_WRITE_MAX_BYTES,
    contentMode: 'buffer',
  });
  // In buffer mode sonic-boom takes Buffers; its typings only know strings.
  const bytes = boom as unknown as {
    write(bytes: Buffer): boolean;
    flush(callback?: (error?: Error) => void): void;
    flushSync(): void;
  };
  let pending = '';
  /** Hands the pending lines to sonic-boom as one Buffer. */
  const handOver = (): boolean => {
    if (pending.length === 0) return true;
    const text = pending;
    pending = '';
    return bytes.write(Buffer.from(text));
  };
  // pino flushes the sonic-boom itself at exit (`flushSync` on `exit`, `flush` on `beforeExit`):
  // the pending lines go first. (On a broken pipe pino replaces these with no-ops: lines stop.)
  const boomFlush = boom.flush.bind(boom);
  const boomFlushSync = boom.flushSync.bind(boom);
  bytes.flush = (callback?: (error?: Error) => void) => {
    handOver();
    boomFlush(callback);
  };
  bytes.flushSync = () => {
    handOver();
    boomFlushSync();
  };
  // Lines below a batch leave at most LOG_FLUSH_MS after they were written. The timer is set by a
  // line, not kept running: an idle gateway is not woken every second (each flush of an empty
  // buffer was still a write to stdout through the thread pool).
  let flushTimer: NodeJS.Timeout | undefined;
  const flushPending = () => {
    flushTimer = undefined;
    bytes.flush();
  };
  return {
    write: (line: string) => {
      pending += line;
      const below = pending.length < LOG_BATCH_BYTES || handOver();
      flushTimer ??= setTimeout(flushPending, LOG_FLUSH_MS).unref();
      return below;
    },
    flush: (callback?: (error?: Error) => void) => bytes.flush(callback),
    flushSync: () => bytes.flushSync(),
  } as DestinationStream;
}

/**
 * The gateway's one logger: JSON lines through pino, with secret-named fields redacted by a
 * formatter. Nothing logs request bodies or whole header objects; redaction is the second line of
 * defence. Without a destination, lines go to stdout asynchronously in batches (flushed at least
 * every second, after start-up and at shutdown).
 */
export function createLogger(level: string = 'info', destination?: DestinationStream): Logger {
  if (!(LOG_LEVELS as readonly string[]).includes(level)) {
    throw new Error(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')} (got "${level}").`);
  }
  const logger = pino(
    {
      level,
      base: { service: 'gateway' },
      formatters: { log: redactSecrets },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination ?? stdoutDestination(),
  );
  Object.defineProperty(logger, OWN_FORMAT, { value: true });
  return logger;
}

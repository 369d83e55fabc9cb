import { rejectUnknownOptions } from '@gw/options';
import type { CatalogDatabase } from './database';
import { InvalidRecordError } from './errors';

/**
 * One request as the gateway records it (CONTRACT section 9): never message content, a secret or
 * a token. Tokens are null when the provider reported none; `cacheStatus` is null while no cache
 * answered the request.
 */
export interface RequestRecord {
  /** When the request arrived (ISO 8601). */
  time: string;
  /** `x-gateway-request-id`. */
  requestId: string;
  /** `x-gateway-trace-id`. */
  traceId: string;
  /** Route family (`chat`, `messages`, `mcp`, `aws`, `models`, `prompts`). */
  route: string;
  method: string;
  /** The request path, without its query string. */
  path: string;
  /** The caller's user id (an API key's `user_id`, a token's `sub`). */
  userId: string | null;
  /** The last four characters of the caller's API key (`…7f3a`). */
  keyHint: string | null;
  /** The provider, integration or MCP server slug the request went to. */
  provider: string | null;
  modelRequested: string | null;
  /** The model the provider reported. */
  modelAnswered: string | null;
  /** The JSON-RPC method of an MCP request. */
  mcpMethod: string | null;
  /** The tool of an MCP `tools/call` (forwarded or refused by the gateway). */
  mcpTool: string | null;
  status: number;
  /** The error's stable `code`, when the answer is an error. */
  errorCode: string | null;
  durationMs: number;
  /** Time to the first byte of the answer's body. */
  ttfbMs: number | null;
  inputTokens: number | null;
  outputTokens: number | null;
  cacheCreationTokens: number | null;
  cacheReadTokens: number | null;
  cacheStatus: string | null;
  /** `x-gateway-metadata`. */
  metadata: Record<string, string> | null;
  /** `would_deny`: access mode `report` let the request through, but `policies` would refuse it. Default null. */
  access?: 'would_deny' | null;
  /** Why `policies` would refuse it (with {@link RequestRecord.access}). Default null. */
  accessReason?: string | null;
  /** The upstream's (or the gateway's) error message, at most 500 characters, redacted of anything credential-like. Default null. */
  errorMessage?: string | null;
  /** The answer's cost in USD at the price table (0 without usage, a cache hit; null when the model's price is unknown). */
  costUsd?: number | null;
  /**
   * Each provider attempt of a model request routed across targets (CONTRACT section 17), in
   * order, the answering one marked `answered`. Default null (a request without targets).
   */
  attempts?: RequestAttempt[] | null;
  /**
   * The virtual MCP server (CONTRACT section 16) a member request was made for, its slug; set only
   * from the gateway's own in-process marker, never from a client's header. Default null.
   */
  mcpVirtualServer?: string | null;
}

/** One provider attempt of a request routed across targets. */
export interface RequestAttempt {
  /** The target's dotted index from the config's top-level `targets` (`"1.0"`). */
  index: string;
  /** The provider slug. */
  provider: string;
  /** The model asked of it. */
  model: string;
  /** The provider's status, or the gateway's (502 unreachable, 504 timed out). */
  status: number;
  /** Time to the provider's response headers (or to the failure), in ms. */
  ms: number;
  /** `upstream_unreachable` or `upstream_timeout` when the provider gave no answer. */
  error?: string;
  /** True on the attempt whose answer the client got. */
  answered?: boolean;
}

/** The schema of the request records (migration 2). */
export const REQUEST_LOG_MIGRATION_SQL = `
  CREATE TABLE gw_requests (
    seq bigserial PRIMARY KEY,
    at timestamptz NOT NULL,
    request_id text NOT NULL,
    trace_id text NOT NULL,
    route text NOT NULL,
    method text NOT NULL,
    path text NOT NULL,
    user_id text,
    key_hint text,
    provider text,
    model_requested text,
    model_answered text,
    mcp_method text,
    status integer NOT NULL,
    error_code text,
    duration_ms double precision NOT NULL,
    ttfb_ms double precision,
    input_tokens bigint,
    output_tokens bigint,
    cache_creation_tokens bigint,
    cache_read_tokens bigint,
    cache_status text,
    metadata jsonb
  );
  CREATE INDEX gw_requests_at ON gw_requests (at DESC, seq DESC);
  CREATE INDEX gw_requests_user ON gw_requests (user_id, at DESC);
  CREATE INDEX gw_requests_metadata ON gw_requests USING gin (metadata jsonb_path_ops);
`;

/**
 * The columns an insert fills, each with the one-letter key of its field in a row's JSON and its
 * type there (the table's own).
 */
const ROW_FIELDS = [
  ['at', 'timestamptz'],
  ['request_id', 'text'],
  ['trace_id', 'text'],
  ['route', 'text'],
  ['method', 'text'],
  ['path', 'text'],
  ['user_id', 'text'],
  ['key_hint', 'text'],
  ['provider', 'text'],
  ['model_requested', 'text'],
  ['model_answered', 'text'],
  ['mcp_method', 'text'],
  ['status', 'integer'],
  ['error_code', 'text'],
  ['duration_ms', 'double precision'],
  ['ttfb_ms', 'double precision'],
  ['input_tokens', 'bigint'],
  ['output_tokens', 'bigint'],
  ['cache_creation_tokens', 'bigint'],
  ['cache_read_tokens', 'bigint'],
  ['cache_status', 'text'],
  ['metadata', 'jsonb'],
  ['mcp_tool', 'text'],
  ['access', 'text'],
  ['access_reason', 'text'],
  ['error_message', 'text'],
  ['cost_usd', 'double precision'],
  ['attempts', 'jsonb'],
  ['mcp_virtual_server', 'text'],
].map(([column, type], i) => ({
  column,
  type,
  // `a` to `z`, then `aa`, `ab`…
  key: i < 26 ? String.fromCharCode(97 + i) : `a${String.fromCharCode(97 + i - 26)}`,
}));

/**
 * The insert of a batch: the rows as one JSON array parameter, expanded by the database
 * (`json_to_recordset`, typed as the table's columns). Each row is an object keyed `a` to `ac`
 * (the columns in order), its null fields left out: about 280 bytes a record where the column
 * names as keys took 520, and the embedded database's CPU per record grows with the bytes it is
 * handed and parses. One parameter instead of 22 per record: no batch can reach PostgreSQL's
 * limit of 65,535 parameters.
 */
const INSERT_SQL = `INSERT INTO gw_requests (${ROW_FIELDS.map((f) => f.column).join(',')}) SELECT ${ROW_FIELDS.map((f) => f.key).join(',')} FROM json_to_recordset($1::json) AS r(${ROW_FIELDS.map((f) => `${f.key} ${f.type}`).join(',')})`;

/**
 * A string PostgreSQL can store: NUL and unpaired surrogates (which a request's model name, a
 * token's claims or a metadata key may hold) become U+FFFD. Either would make the database refuse
 * the whole batch.
 */
function storable(value: string): string {
  const text = value.includes('\u0000') ? value.replaceAll('\u0000', '\uFFFD') : value;
  // String.prototype.toWellFormed (Node 20; not in the ES2023 typings).
  return (text as string & { toWellFormed(): string }).toWellFormed();
}

/** A parsed row with every string, keys included, made {@link storable}. */
function storableValue(value: unknown): unknown {
  if (typeof value === 'string') return storable(value);
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map(storableValue);
  return Object.fromEntries(Object.entries(value).map(([key, inner]) => [storable(key), storableValue(inner)]));
}

/** What `JSON.stringify` writes for a NUL or an unpaired surrogate (or, harmlessly, for a backslash before `u0000`). */
const UNSTORABLE_ESCAPE = /\\u(?:0000|d[89a-f])/i;

/** `,"k":` and the JSON of a string, or nothing for null. */
const text = (key: string, value: string | null): string =>
  value === null || value === undefined ? '' : `,"${key}":${JSON.stringify(value)}`;

/** `,"k":` and a whole number (bigint and integer columns), or nothing: null, or not a safe integer. */
const whole = (key: string, value: number | null): string =>
  Number.isSafeInteger(value) ? `,"${key}":${value as number}` : '';

/** `,"k":` and a finite number, or nothing. */
const real = (key: string, value: number | null): string =>
  Number.isFinite(value) ? `,"${key}":${value as number}` : '';

/**
 * One record as its row of the insert's JSON (see {@link INSERT_SQL}), written field by field:
 * a quarter of the CPU of `JSON.stringify` with a replacer. A row holding a NUL or an unpaired
 * surrogate is written again through {@link storable}.
 */
export function recordRow(r: RequestRecord): string {
  const row =
    `{"a":${JSON.stringify(r.time)}${text('b', r.requestId)}${text('c', r.traceId)}${text('d', r.route)}` +
    `${text('e', r.method)}${text('f', r.path)}${text('g', r.userId)}${text('h', r.keyHint)}` +
    `${text('i', r.provider)}${text('j', r.modelRequested)}${text('k', r.modelAnswered)}` +
    `${text('l', r.mcpMethod)}${whole('m', r.status)}${text('n', r.errorCode)}${real('o', r.durationMs)}` +
    `${real('p', r.ttfbMs)}${whole('q', r.inputTokens)}${whole('r', r.outputTokens)}` +
    `${whole('s', r.cacheCreationTokens)}${whole('t', r.cacheReadTokens)}${text('u', r.cacheStatus)}` +
    `${r.metadata === null || r.metadata === undefined ? '' : `,"v":${JSON.stringify(r.metadata)}`}` +
    `${text('w', r.mcpTool)}${text('x', r.access ?? null)}${text('y', r.accessReason ?? null)}` +
    `${text('z', r.errorMessage ?? null)}${real('aa', r.costUsd ?? null)}` +
    `${r.attempts === null || r.attempts === undefined ? '' : `,"ab":${JSON.stringify(r.attempts)}`}` +
    `${text('ac', r.mcpVirtualServer ?? null)}}`;
  return UNSTORABLE_ESCAPE.test(row) ? JSON.stringify(storableValue(JSON.parse(row))) : row;
}

/** The columns of a {@link recordCopyLine}, in order. */
const COPY_COLUMNS: readonly string[] = ROW_FIELDS.map((f) => f.column as string);

/** A character COPY's text format reads as syntax: escaped with a backslash in a value. */
const COPY_SYNTAX = /[\\\t\n\r]/;
const COPY_SYNTAX_ALL = /[\\\t\n\r]/g;
/** The escape of one {@link COPY_SYNTAX} character. */
const copyEscape = (c: string): string => (c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : '\\r');

/** A value of a COPY line: `\N` for null, else the text with its syntax characters escaped. */
const copyText = (value: string | null | undefined): string =>
  value === null || value === undefined
    ? '\\N'
    : COPY_SYNTAX.test(value)
      ? value.replace(COPY_SYNTAX_ALL, copyEscape)
      : value;

/** A whole number for a bigint or integer column, or `\N`: null, or not a safe integer. */
const copyWhole = (value: number | null | undefined): string => (Number.isSafeInteger(value) ? String(value) : '\\N');

/** A finite number, or `\N`. */
const copyReal = (value: number | null | undefined): string => (Number.isFinite(value) ? String(value) : '\\N');

/** One record as a line of COPY's text format, its fields as written, in {@link COPY_COLUMNS} order. */
function copyLine(r: RequestRecord, metadata: string | null, attempts: string | null): string {
  return (
    `${copyText(r.time)}\t${copyText(r.requestId)}\t${copyText(r.traceId)}\t${copyText(r.route)}\t` +
    `${copyText(r.method)}\t${copyText(r.path)}\t${copyText(r.userId)}\t${copyText(r.keyHint)}\t` +
    `${copyText(r.provider)}\t${copyText(r.modelRequested)}\t${copyText(r.modelAnswered)}\t` +
    `${copyText(r.mcpMethod)}\t${copyWhole(r.status)}\t${copyText(r.errorCode)}\t${copyReal(r.durationMs)}\t` +
    `${copyReal(r.ttfbMs)}\t${copyWhole(r.inputTokens)}\t${copyWhole(r.outputTokens)}\t` +
    `${copyWhole(r.cacheCreationTokens)}\t${copyWhole(r.cacheReadTokens)}\t${copyText(r.cacheStatus)}\t` +
    `${copyText(metadata)}\t${copyText(r.mcpTool)}\t${copyText(r.access)}\t${copyText(r.accessReason)}\t` +
    `${copyText(r.errorMessage)}\t${copyReal(r.costUsd)}\t${copyText(attempts)}\t${copyText(r.mcpVirtualServer)}\n`
  );
}

/**
 * One record as a line of COPY's text format (the embedded database's
 * {@link CatalogDatabase.copyRows}): the same columns and values as {@link recordRow}, null fields
 * as `\N`. A record holding a NUL, or metadata whose JSON escapes a NUL or an unpaired surrogate,
 * is written again with every string made {@link storable}.
 */
export function recordCopyLine(r: RequestRecord): string {
  const metadata = metadataJson(r);
  const attempts = attemptsJson(r);
  const line = copyLine(r, metadata, attempts);
  // An unpaired surrogate in a value needs nothing here: the line's UTF-8 encoding writes U+FFFD for it.
  if (
    !line.includes('\u0000') &&
    (metadata === null || !UNSTORABLE_ESCAPE.test(metadata)) &&
    (attempts === null || !UNSTORABLE_ESCAPE.test(attempts))
  )
    return line;
  const storableRecord = storableValue(r) as RequestRecord;
  return copyLine(storableRecord, metadataJson(storableRecord), attemptsJson(storableRecord));
}

/** A record's attempts as JSON, or null. */
const attemptsJson = (r: RequestRecord): string | null =>
  r.attempts === null || r.attempts === undefined ? null : JSON.stringify(r.attempts);

/** A record's metadata as JSON, or null. */
const metadataJson = (r: RequestRecord): string | null =>
  r.metadata === null || r.metadata === undefined ? null : JSON.stringify(r.metadata);

/** The parameter of {@link INSERT_SQL} for a batch. */
export function insertParameter(batch: readonly RequestRecord[]): string {
  return `[${batch.map(recordRow).join(',')}]`;
}

/** Records in one insert on PostgreSQL, by default. */
const POSTGRES_BATCH_SIZE = 500;
/**
 * Records in one insert on the embedded database, by default: PGlite runs the COPY on the
 * gateway's thread (about 15 µs a record), so a batch is a pause of every request in flight; 250
 * records keep it near 4 ms (docs/decisions.md, "Request records on the embedded database").
 */
const EMBEDDED_BATCH_SIZE = 250;

/** What the writer has done, for the metrics. */
export interface RequestLogStats {
  /** Records inserted. */
  written: number;
  /** Records lost: the queue was full (the database slow or unreachable), or at shutdown. */
  dropped: number;
  /** Records waiting to be inserted. */
  queued: number;
}

/** Options of {@link RequestLogWriter}. */
export interface RequestLogWriterOptions {
  /** The catalog's database (migrated). Required. */
  db: CatalogDatabase;
  /** Most records waiting; past it a record is dropped and counted. Default 10000. */
  maxQueue?: number;
  /**
   * Most records in one insert. Default 500 on PostgreSQL, 250 on the embedded database (whose
   * inserts run on the gateway's own thread: about 4 ms of it for 250 records).
   */
  batchSize?: number;
  /** How often the queue is written, in ms. Default 1000. */
  flushIntervalMs?: number;
  /** Days a record is kept (`GATEWAY_REQUEST_LOG_DAYS`). Default 30. */
  retentionDays?: number;
  /** How often old records are deleted, in ms. Default 3600000 (hourly; also at start). */
  retentionIntervalMs?: number;
  /** Called with a failed insert or deletion (the database unreachable…), for the host's log. Default: none. */
  onError?: (error: unknown) => void;
}

const REQUEST_LOG_WRITER_OPTIONS = [
  'db',
  'maxQueue',
  'batchSize',
  'flushIntervalMs',
  'retentionDays',
  'retentionIntervalMs',
  'onError',
] as const satisfies readonly (keyof RequestLogWriterOptions)[];

/**
 * Writes request records to the database off the request path: {@link RequestLogWriter.push} only
 * appends to a bounded queue (full → the record is dropped and counted; a request never waits),
 * and a timer inserts the queue in batches, one insert at a time. While the database cannot be
 * reached, the queue keeps the records that came first, up to its bound (later ones are dropped and
 * counted), and inserts are retried with a growing delay (at most 30 s). Records older than
 * `retentionDays` are deleted.
 */
export class RequestLogWriter {
  private readonly db: CatalogDatabase;
  private readonly maxQueue: number;
  private readonly batchSize: number;
  private readonly retentionDays: number;
  private readonly onError: ((error: unknown) => void) | undefined;
  /** The records waiting, each as its row of the insert or its COPY line (serialized when pushed: one string a record). */
  private queue: string[] = [];
  /** The embedded database's COPY, when the database has it: records are then written as COPY lines. */
  private readonly copyRows: CatalogDatabase['copyRows'];
  private writing: Promise<void> | undefined;
  private failures = 0;
  private retryAt = 0;
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly counts = { written: 0, dropped: 0 };

  /**
   * Starts the flush and retention timers (unref'd; {@link RequestLogWriter.close} stops them).
   * Throws a `TypeError` naming the option for an unknown option (with the spelling to write), a
   * missing `db`, or an option of the wrong type.
   */
  constructor(options: RequestLogWriterOptions) {
    if (typeof options !== 'object' || options === null)
      throw new TypeError('RequestLogWriter needs { db }, the catalog database.');
    rejectUnknownOptions(options, REQUEST_LOG_WRITER_OPTIONS, 'RequestLogWriter');
    if (typeof options.db?.query !== 'function')
      throw new TypeError(
        'RequestLogWriter needs { db }, the catalog database (openPostgres(url) or openEmbeddedDatabase(dir)).',
      );
    if (options.onError !== undefined && typeof options.onError !== 'function')
      throw new TypeError('RequestLogWriter onError must be a function (error) => void.');
    this.db = options.db;
    this.copyRows = options.db.copyRows?.bind(options.db);
    this.maxQueue = positive(options.maxQueue, 10_000, 'maxQueue');
    this.batchSize = positive(
      options.batchSize,
      options.db.kind === 'embedded' ? EMBEDDED_BATCH_SIZE : POSTGRES_BATCH_SIZE,
      'batchSize',
    );
    this.retentionDays = positive(options.retentionDays, 30, 'retentionDays');
    this.onError = options.onError;
    const flushEvery = positive(options.flushIntervalMs, 1000, 'flushIntervalMs', MAX_TIMER_MS);
    const retentionEvery = positive(options.retentionIntervalMs, 3_600_000, 'retentionIntervalMs', MAX_TIMER_MS);
    this.timers.push(setInterval(() => void this.flush(), flushEvery).unref());
    this.timers.push(setInterval(() => void this.deleteExpired(), retentionEvery).unref());
    void this.deleteExpired();
  }

  /** Counts for the metrics. */
  get stats(): RequestLogStats {
    return { ...this.counts, queued: this.queue.length };
  }

  /** Queues one record; false (and counted as dropped) when the queue is full. Never waits. */
  push(record: RequestRecord): boolean {
    if (this.queue.length >= this.maxQueue) {
      this.counts.dropped++;
      return false;
    }
    this.queue.push(this.copyRows ? recordCopyLine(record) : recordRow(record));
    return true;
  }

  /** Inserts what is queued, a batch at a time; resolves when done or when an insert failed. */
  flush(): Promise<void> {
    this.writing ??= this.writeAll().finally(() => {
      this.writing = undefined;
    });
    return this.writing;
  }

  private async writeAll(): Promise<void> {
    if (performance.now() < this.retryAt) return;
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.batchSize);
      try {
        await this.insert(batch);
        this.counts.written += batch.length;
        this.failures = 0;
        // The next batch after a turn of the event loop: the embedded database's inserts run on
        // this thread and resolve without one, so a long queue would hold requests for all of it.
        if (this.queue.length > 0) await new Promise((resolve) => setImmediate(resolve));
      } catch (error) {
        // Back in front of the queue, as much as fits beside the records that came meanwhile.
        const room = Math.max(0, this.maxQueue - this.queue.length);
        const kept = batch.slice(Math.max(0, batch.length - room));
        this.counts.dropped += batch.length - kept.length;
        this.queue.unshift(...kept);
        this.failures++;
        this.retryAt = performance.now() + Math.min(30_000, 250 * 2 ** Math.min(this.failures, 7));
        this.onError?.(error);
        return;
      }
    }
  }

  private async insert(batch: string[]): Promise<void> {
    if (this.copyRows) await this.copyRows('gw_requests', COPY_COLUMNS, batch.join(''));
    else await this.db.query(INSERT_SQL, [`[${batch.join(',')}]`]);
  }

  /** Deletes records older than the retention. */
  async deleteExpired(): Promise<void> {
    try {
      await this.db.query(`DELETE FROM gw_requests WHERE at < now() - make_interval(days => $1::int)`, [
        this.retentionDays,
      ]);
    } catch (error) {
      this.onError?.(error);
    }
  }

  /** Stops the timers and inserts what is queued, waiting at most `timeoutMs` (default 5000); the rest is dropped. */
  async close(timeoutMs = 5000): Promise<void> {
    for (const timer of this.timers) clearInterval(timer);
    this.retryAt = 0;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.flush().then(() => this.flush()),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, timeoutMs);
      }),
    ]);
    clearTimeout(timer);
    this.counts.dropped += this.queue.length;
    this.queue = [];
  }
}

/** The longest delay a Node.js timer keeps (a longer one fires at once). */
const MAX_TIMER_MS = 2_147_483_647;

/** A whole-number option of at least 1 (and at most `max`), `fallback` when left out. */
function positive(value: number | undefined, fallback: number, name: string, max = Number.MAX_SAFE_INTEGER): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1 || value > max)
    throw new TypeError(
      `RequestLogWriter ${name} must be a whole number of at least 1${max < Number.MAX_SAFE_INTEGER ? ` and at most ${max}` : ''}, for example ${fallback}.`,
    );
  return value;
}

/** Most records one page of `GET /admin/v1/requests` answers. */
export const MAX_REQUESTS_LIMIT = 500;
/** Most `metadata.<key>` filters in one query. */
const MAX_METADATA_FILTERS = 32;

/** A request record as the admin API answers it. */
export interface AdminRequestRecord {
  object: 'request';
  time: string;
  request_id: string;
  trace_id: string;
  route: string;
  method: string;
  path: string;
  user_id: string | null;
  key_hint: string | null;
  provider: string | null;
  model_requested: string | null;
  model_answered: string | null;
  mcp_method: string | null;
  mcp_tool: string | null;
  status: number;
  error_code: string | null;
  duration_ms: number;
  ttfb_ms: number | null;
  usage: {
    input_tokens: number | null;
    output_tokens: number | null;
    cache_creation_input_tokens: number | null;
    cache_read_input_tokens: number | null;
  };
  cache_status: string | null;
  metadata: Record<string, string> | null;
  /** `would_deny` when access mode `report` let through a request `policies` would refuse. */
  access: 'would_deny' | null;
  /** Why `policies` would refuse it. */
  access_reason: string | null;
  /** The upstream's error message (bounded, redacted), for refused and failed requests. */
  error_message: string | null;
  /** The answer's cost in USD (null when the model's price is unknown, or for records stored before costs were kept). */
  cost_usd: number | null;
  /** Each provider attempt of a request routed across targets, the answering one marked `answered`; null without targets. */
  attempts: RequestAttempt[] | null;
  /** The virtual MCP server a member request was made through (its slug); null otherwise. */
  mcp_virtual_server: string | null;
}

const num = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value));
const str = (value: unknown): string | null => (value === null || value === undefined ? null : String(value));

function toAdmin(row: Record<string, unknown>): AdminRequestRecord {
  const at = row.at instanceof Date ? row.at : new Date(String(row.at));
  const metadata = typeof row.metadata === 'string' ? JSON.parse(row.metadata) : row.metadata;
  return {
    object: 'request',
    time: at.toISOString(),
    request_id: String(row.request_id),
    trace_id: String(row.trace_id),
    route: String(row.route),
    method: String(row.method),
    path: String(row.path),
    user_id: str(row.user_id),
    key_hint: str(row.key_hint),
    provider: str(row.provider),
    model_requested: str(row.model_requested),
    model_answered: str(row.model_answered),
    mcp_method: str(row.mcp_method),
    mcp_tool: str(row.mcp_tool),
    status: Number(row.status),
    error_code: str(row.error_code),
    duration_ms: Number(row.duration_ms),
    ttfb_ms: num(row.ttfb_ms),
    usage: {
      input_tokens: num(row.input_tokens),
      output_tokens: num(row.output_tokens),
      cache_creation_input_tokens: num(row.cache_creation_tokens),
      cache_read_input_tokens: num(row.cache_read_tokens),
    },
    cache_status: str(row.cache_status),
    metadata: (metadata as Record<string, string> | null) ?? null,
    access: row.access === 'would_deny' ? 'would_deny' : null,
    access_reason: str(row.access_reason),
    error_message: str(row.error_message),
    cost_usd: num(row.cost_usd),
    attempts:
      ((typeof row.attempts === 'string' ? JSON.parse(row.attempts) : row.attempts) as RequestAttempt[] | null) ?? null,
    mcp_virtual_server: str(row.mcp_virtual_server),
  };
}

/** A time filter: ISO 8601, refused (naming the parameter) otherwise. */
function timeParam(query: URLSearchParams, name: string): string | undefined {
  const value = query.get(name);
  if (value === null) return undefined;
  const time = Date.parse(value);
  if (value.length > 64 || !/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(time)) {
    throw new InvalidRecordError(`${name} must be an ISO 8601 time, such as 2025-01-31T00:00:00Z.`, name);
  }
  return new Date(time).toISOString();
}

function cursorOf(row: Record<string, unknown>): string {
  const at = row.at instanceof Date ? row.at : new Date(String(row.at));
  return Buffer.from(JSON.stringify([at.toISOString(), String(row.seq)])).toString('base64url');
}

function readCursor(value: string): [string, string] {
  try {
    const parsed = JSON.parse(Buffer.from(value, 'base64url').toString('utf8')) as unknown;
    if (
      Array.isArray(parsed) &&
      parsed.length === 2 &&
      typeof parsed[0] === 'string' &&
      !Number.isNaN(Date.parse(parsed[0])) &&
      typeof parsed[1] === 'string' &&
      /^\d{1,19}$/.test(parsed[1])
    ) {
      return [parsed[0], parsed[1]];
    }
  } catch {
    // Answered below.
  }
  throw new InvalidRecordError("cursor must be a previous page's next_cursor.", 'cursor');
}

/**
 * `GET /admin/v1/requests`: request records, newest first, filtered by `user`, `provider`,
 * `model` (asked or answered), `status`, `access` (`would_deny`), `metadata.<key>=<value>` (all must match), `from`
 * (inclusive) and `to` (exclusive); `limit` 1–500 (default 50) and the `cursor` of the previous
 * page's `next_cursor` (null on the last page). Pages follow (time, insertion order), so paging
 * loses and repeats nothing.
 */
export async function queryRequestRecords(
  db: CatalogDatabase,
  query: URLSearchParams,
): Promise<{ object: 'list'; data: AdminRequestRecord[]; next_cursor: string | null }> {
  const where: string[] = [];
  const params: unknown[] = [];
  const add = (sql: (n: string) => string, value: unknown) => {
    params.push(value);
    where.push(sql(`$${params.length}`));
  };
  for (const name of ['user', 'provider', 'model'] as const) {
    const value = query.get(name);
    if (value === null) continue;
    if (value.length === 0 || value.length > 256) {
      throw new InvalidRecordError(`${name} must be 1 to 256 characters.`, name);
    }
    if (name === 'user') add((n) => `user_id = ${n}`, value);
    else if (name === 'provider') add((n) => `provider = ${n}`, value);
    else add((n) => `(model_requested = ${n} OR model_answered = ${n})`, value);
  }
  const status = query.get('status');
  if (status !== null) {
    if (!/^[1-5]\d\d$/.test(status))
      throw new InvalidRecordError('status must be an HTTP status, such as 429.', 'status');
    add((n) => `status = ${n}`, Number(status));
  }
  const access = query.get('access');
  if (access !== null) {
    if (access !== 'would_deny') throw new InvalidRecordError('access must be "would_deny".', 'access');
    add((n) => `access = ${n}`, access);
  }
  const metadata: Record<string, string> = {};
  let metadataFilters = 0;
  for (const [key, value] of query) {
    if (!key.startsWith('metadata.')) continue;
    const name = key.slice('metadata.'.length);
    if (++metadataFilters > MAX_METADATA_FILTERS || name.length === 0 || name.length > 64 || value.length > 512) {
      throw new InvalidRecordError(
        'metadata.<key>=<value> filters: at most 32, key 1–64 and value ≤ 512 characters.',
        key,
      );
    }
    metadata[name] = value;
  }
  if (metadataFilters > 0) add((n) => `metadata @> ${n}::jsonb`, JSON.stringify(metadata));
  const from = timeParam(query, 'from');
  if (from !== undefined) add((n) => `at >= ${n}::timestamptz`, from);
  const to = timeParam(query, 'to');
  if (to !== undefined) add((n) => `at < ${n}::timestamptz`, to);
  const limitParam = query.get('limit');
  const limit = limitParam === null ? 50 : Number(limitParam);
  if (!/^\d{1,3}$/.test(limitParam ?? '50') || !Number.isInteger(limit) || limit < 1 || limit > MAX_REQUESTS_LIMIT) {
    throw new InvalidRecordError(`limit must be a whole number from 1 to ${MAX_REQUESTS_LIMIT}.`, 'limit');
  }
  const cursor = query.get('cursor');
  if (cursor !== null) {
    const [at, seq] = readCursor(cursor);
    params.push(at, seq);
    where.push(`(at, seq) < ($${params.length - 1}::timestamptz, $${params.length}::bigint)`);
  }
  params.push(limit + 1);
  const rows = await db.query<Record<string, unknown>>(
    `SELECT * FROM gw_requests ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY at DESC, seq DESC LIMIT $${params.length}`,
    params,
  );
  const page = rows.slice(0, limit);
  return {
    object: 'list',
    data: page.map(toAdmin),
    next_cursor: rows.length > limit ? cursorOf(page[page.length - 1] as Record<string, unknown>) : null,
  };
}

/** The groupings of `GET /admin/v1/usage`. */
/** The groups of `GET /admin/v1/usage`: `key` is the API key's hint (`…7f3a`, as the key list shows it). */
export const USAGE_GROUPS = ['user', 'key', 'provider', 'model', 'day'] as const;

const GROUP_SQL: ReadonlyMap<string, string> = new Map([
  ['user', 'user_id'],
  ['key', 'key_hint'],
  ['provider', 'provider'],
  ['model', 'COALESCE(model_answered, model_requested)'],
  ['day', `to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD')`],
]);

/** One group of `GET /admin/v1/usage`. */
export interface UsageGroup {
  key: string | null;
  requests: number;
  errors: number;
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  /** The sum of the records' `cost_usd` (records of unknown price count 0). */
  cost_usd: number;
}

/**
 * `GET /admin/v1/usage`: requests, errors (status ≥ 400) and token sums by `group_by`
 * (`user`, `provider`, `model`, or `day` in UTC; default `day`) over `from` (inclusive) and
 * `to` (exclusive), largest first (by day: oldest first).
 */
export async function usageSummary(
  db: CatalogDatabase,
  query: URLSearchParams,
): Promise<{ object: 'list'; group_by: string; data: UsageGroup[] }> {
  const groupBy = query.get('group_by') ?? 'day';
  if (!(USAGE_GROUPS as readonly string[]).includes(groupBy)) {
    throw new InvalidRecordError(`group_by must be one of ${USAGE_GROUPS.join(', ')}.`, 'group_by');
  }
  const key = GROUP_SQL.get(groupBy) as string;
  const where: string[] = [];
  const params: unknown[] = [];
  const from = timeParam(query, 'from');
  if (from !== undefined) {
    params.push(from);
    where.push(`at >= $${params.length}::timestamptz`);
  }
  const to = timeParam(query, 'to');
  if (to !== undefined) {
    params.push(to);
    where.push(`at < $${params.length}::timestamptz`);
  }
  const rows = await db.query<Record<string, unknown>>(
    `SELECT ${key} AS key, count(*) AS requests, count(*) FILTER (WHERE status >= 400) AS errors,
       COALESCE(sum(input_tokens), 0) AS input_tokens, COALESCE(sum(output_tokens), 0) AS output_tokens,
       COALESCE(sum(cache_creation_tokens), 0) AS cache_creation, COALESCE(sum(cache_read_tokens), 0) AS cache_read,
       COALESCE(sum(cost_usd), 0) AS cost_usd
     FROM gw_requests ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
     GROUP BY 1 ORDER BY ${groupBy === 'day' ? '1 ASC' : '2 DESC, 1 ASC'} LIMIT 10000`,
    params,
  );
  return {
    object: 'list',
    group_by: groupBy,
    data: rows.map((row) => ({
      key: str(row.key),
      requests: Number(row.requests),
      errors: Number(row.errors),
      input_tokens: Number(row.input_tokens),
      output_tokens: Number(row.output_tokens),
      cache_creation_input_tokens: Number(row.cache_creation),
      cache_read_input_tokens: Number(row.cache_read),
      cost_usd: Math.round(Number(row.cost_usd) * 1e9) / 1e9,
    })),
  };
}

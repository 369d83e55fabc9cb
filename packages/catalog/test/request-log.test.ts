import fc from 'fast-check';
import {
  RequestLogWriter,
  insertParameter,
  migrate,
  openEmbeddedDatabase,
  openPostgres,
  queryRequestRecords,
  recordCopyLine,
  recordRow,
  type CatalogDatabase,
  type RequestRecord,
} from '../src';
import { catalogEngines } from './engines';

jest.setTimeout(120_000);

const record = (over: Partial<RequestRecord> = {}): RequestRecord => ({
  time: '2025-06-02T10:00:00.000Z',
  requestId: 'req-1',
  traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
  route: 'messages',
  method: 'POST',
  path: '/v1/messages',
  userId: 'u_alice',
  keyHint: '…7f3a',
  provider: 'claude',
  modelRequested: 'claude-haiku-4-5',
  modelAnswered: null,
  mcpMethod: null,
  mcpTool: null,
  status: 200,
  errorCode: null,
  durationMs: 12.34,
  ttfbMs: 3.5,
  inputTokens: 25,
  outputTokens: 12,
  cacheCreationTokens: null,
  cacheReadTokens: 0,
  cacheStatus: null,
  metadata: null,
  ...over,
});

describe('a request record as a row of the insert', () => {
  it('keys its fields a to v in column order and leaves null fields out', () => {
    expect(JSON.parse(recordRow(record()))).toEqual({
      a: '2025-06-02T10:00:00.000Z',
      b: 'req-1',
      c: '4bf92f3577b34da6a3ce929d0e0e4736',
      d: 'messages',
      e: 'POST',
      f: '/v1/messages',
      g: 'u_alice',
      h: '…7f3a',
      i: 'claude',
      j: 'claude-haiku-4-5',
      m: 200,
      o: 12.34,
      p: 3.5,
      q: 25,
      r: 12,
      t: 0,
    });
    // The cost in USD is the last column (`aa`), left out when unknown.
    expect(JSON.parse(recordRow(record({ costUsd: 0.000061 }))).aa).toBe(0.000061);
    expect(JSON.parse(recordRow(record({ costUsd: null }))).aa).toBeUndefined();
    expect(JSON.parse(recordRow(record({ metadata: { team: 'red' }, errorCode: 'x' })))).toMatchObject({
      n: 'x',
      v: { team: 'red' },
    });
    expect(JSON.parse(insertParameter([record(), record({ requestId: 'req-2' })]))).toHaveLength(2);
  });

  it('turns NUL and unpaired surrogates into U+FFFD, in values and metadata keys alike', () => {
    const row = JSON.parse(
      recordRow(record({ modelRequested: 'a\u0000b\ud800c', metadata: { 'k\udfff': 'v\u0000', ok: '\ud83d\ude00' } })),
    ) as Record<string, unknown>;
    expect(row.j).toBe('a\uFFFDb\uFFFDc');
    expect(row.v).toEqual({ 'k\uFFFD': 'v\uFFFD', ok: '\ud83d\ude00' });
    // A backslash before "u0000" is text, kept as it is.
    expect(JSON.parse(recordRow(record({ path: '/v1/\\u0000' }))).f).toBe('/v1/\\u0000');
  });

  it('leaves out numbers its column cannot hold: tokens that are not whole, times that are not finite', () => {
    const row = JSON.parse(
      recordRow(record({ inputTokens: 1.5, outputTokens: Number.NaN, durationMs: Number.POSITIVE_INFINITY })),
    ) as Record<string, unknown>;
    expect(row).not.toHaveProperty('q');
    expect(row).not.toHaveProperty('r');
    expect(row).not.toHaveProperty('o');
  });
});

/**
 * The file's one embedded database, migrated, for every suite on it: each new folder is a copy of
 * the prepared 39 MB data directory, started by PGlite and migrated. Each suite empties
 * gw_requests before it writes. Closed before `catalogEngines` removes its folder (jest runs
 * `afterAll` hooks in the order they are declared).
 */
let embedded: Promise<CatalogDatabase> | undefined;
afterAll(async () => {
  await (await embedded)?.close();
});
const { engines, embeddedFolder } = catalogEngines('gw-request-log-', async (postgres) =>
  openPostgres(await postgres.createDatabase()),
);
const openEmbedded = () =>
  (embedded ??= openEmbeddedDatabase(embeddedFolder()).then(async (db) => {
    await migrate(db);
    return db;
  }));
const ENGINES = engines.map(([name, open]): [string, () => Promise<CatalogDatabase>] => [
  name,
  name === 'the embedded database' ? openEmbedded : open,
]);

describe.each(ENGINES)('request records written to %s', (_name, open) => {
  let db: CatalogDatabase;

  beforeAll(async () => {
    db = await open();
    await migrate(db);
    await db.exec('TRUNCATE gw_requests');
  });

  afterAll(async () => {
    if (open !== openEmbedded) await db.close();
  });

  it('reads back every field as pushed, odd strings made storable, in one batch', async () => {
    const writer = new RequestLogWriter({ db, flushIntervalMs: 60_000 });
    const odd = record({
      requestId: 'req-odd',
      time: '2025-06-02T10:00:01.000Z',
      userId: "u_'quoted' $gw$ \\ \"",
      modelRequested: 'claude-\ud800\u0000-odd',
      modelAnswered: 'claude-haiku-4-5-20251001',
      mcpMethod: 'tools/call',
      mcpTool: 'search_tickets',
      status: 429,
      errorCode: 'rate_limit_error',
      ttfbMs: null,
      inputTokens: null,
      cacheCreationTokens: 7,
      cacheStatus: 'MISS',
      metadata: { team: 'red', 'k\udfff': 'v' },
      access: 'would_deny',
      accessReason: 'no policy naming this caller allows @claude/claude-haiku-4-5',
      errorMessage: 'Number of requests has exceeded your rate limit',
      costUsd: 0.000061,
      attempts: [
        {
          index: '0',
          provider: 'primary',
          model: 'claude-haiku-4-5',
          status: 502,
          ms: 1.5,
          error: 'upstream_unreachable',
        },
        { index: '1', provider: 'claude', model: 'claude-haiku-4-5', status: 429, ms: 30.25, answered: true },
      ],
      mcpVirtualServer: 'workbench',
    });
    for (const r of [record(), odd]) expect(writer.push(r)).toBe(true);
    await writer.close();
    expect(writer.stats).toEqual({ written: 2, dropped: 0, queued: 0 });
    const page = await queryRequestRecords(db, new URLSearchParams('metadata.team=red'));
    expect(page.data).toEqual([
      {
        object: 'request',
        time: '2025-06-02T10:00:01.000Z',
        request_id: 'req-odd',
        trace_id: '4bf92f3577b34da6a3ce929d0e0e4736',
        route: 'messages',
        method: 'POST',
        path: '/v1/messages',
        user_id: "u_'quoted' $gw$ \\ \"",
        key_hint: '…7f3a',
        provider: 'claude',
        model_requested: 'claude-\uFFFD\uFFFD-odd',
        model_answered: 'claude-haiku-4-5-20251001',
        mcp_method: 'tools/call',
        mcp_tool: 'search_tickets',
        status: 429,
        error_code: 'rate_limit_error',
        duration_ms: 12.34,
        ttfb_ms: null,
        usage: { input_tokens: null, output_tokens: 12, cache_creation_input_tokens: 7, cache_read_input_tokens: 0 },
        cache_status: 'MISS',
        metadata: { team: 'red', 'k\uFFFD': 'v' },
        access: 'would_deny',
        access_reason: 'no policy naming this caller allows @claude/claude-haiku-4-5',
        error_message: 'Number of requests has exceeded your rate limit',
        cost_usd: 0.000061,
        attempts: [
          {
            index: '0',
            provider: 'primary',
            model: 'claude-haiku-4-5',
            status: 502,
            ms: 1.5,
            error: 'upstream_unreachable',
          },
          { index: '1', provider: 'claude', model: 'claude-haiku-4-5', status: 429, ms: 30.25, answered: true },
        ],
        mcp_virtual_server: 'workbench',
      },
    ]);
    const reported = await queryRequestRecords(db, new URLSearchParams('access=would_deny'));
    expect(reported.data.map((r) => r.request_id)).toEqual(['req-odd']);
    const all = await queryRequestRecords(db, new URLSearchParams('user=u_alice'));
    expect(all.data.map((r) => [r.request_id, r.metadata, r.model_answered])).toEqual([['req-1', null, null]]);
  });

  it('writes a long queue in batches (250 records on the embedded database, 500 on PostgreSQL), letting requests run between them', async () => {
    const inserts: number[] = [];
    const counting: CatalogDatabase = Object.create(db, {
      query: {
        value: async (sql: string, params?: unknown[]) => {
          if (sql.startsWith('INSERT INTO gw_requests'))
            inserts.push((JSON.parse(String(params?.[0])) as unknown[]).length);
          return db.query(sql, params);
        },
      },
      ...(db.copyRows && {
        copyRows: {
          value: async (table: string, columns: readonly string[], lines: string) => {
            inserts.push(lines.split('\n').length - 1);
            return db.copyRows?.(table, columns, lines);
          },
        },
      }),
    }) as CatalogDatabase;
    const writer = new RequestLogWriter({ db: counting, flushIntervalMs: 60_000 });
    for (let i = 0; i < 1_050; i++) writer.push(record({ requestId: `req-batch-${i}`, userId: 'u_batches' }));
    // Turns of the event loop while the queue is written: a request arriving meanwhile is served
    // between two inserts, not after the last one.
    let turns = 0;
    let countTurns = true;
    const tick = () => {
      turns++;
      if (countTurns) setImmediate(tick);
    };
    setImmediate(tick);
    await writer.flush();
    countTurns = false;
    const size = db.kind === 'embedded' ? 250 : 500;
    const expected = Array.from({ length: Math.ceil(1_050 / size) }, (_, i) => Math.min(size, 1_050 - i * size));
    expect(inserts).toEqual(expected);
    expect(turns).toBeGreaterThanOrEqual(expected.length - 1);
    expect(writer.stats).toMatchObject({ written: 1_050, queued: 0 });
    await writer.close();
  });
});

/** Text with what COPY's text format and PostgreSQL read as syntax or refuse, often. */
const oddText = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.constantFrom('\\', '\t', '\n', '\r', '\\N', '\\.', '\u0000', '\ud800', '\udfff', '"', "'", '\\u0000', ''),
  fc.string({
    unit: fc.constantFrom('\\', '\t', '\n', '\r', 'N', '.', 'a', '\u0000', '\ud83d', '\ude00', 'u', '0'),
    maxLength: 10,
  }),
);
/** Mostly plain text, odd one time in four: a record with one odd field takes paths that one with many never does. */
const someText = fc.oneof({ arbitrary: fc.string({ maxLength: 12 }), weight: 3 }, { arbitrary: oddText, weight: 1 });
const orNull = <T>(value: fc.Arbitrary<T>) => fc.option(value, { nil: null });
/** Numbers a column may be handed: whole, fractional, huge, not finite. */
const anyNumber = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.constantFrom(0, -0, 1.5, Number.MAX_SAFE_INTEGER, 2 ** 53, -1, Number.NaN, Number.POSITIVE_INFINITY, 5e-324),
);
const anyRecord: fc.Arbitrary<RequestRecord> = fc.record({
  time: fc
    .date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2099-12-31T00:00:00Z'), noInvalidDate: true })
    .map((d) => d.toISOString()),
  requestId: someText,
  traceId: someText,
  route: someText,
  method: someText,
  path: someText,
  userId: orNull(someText),
  keyHint: orNull(someText),
  provider: orNull(someText),
  modelRequested: orNull(someText),
  modelAnswered: orNull(someText),
  mcpMethod: orNull(someText),
  mcpTool: orNull(someText),
  status: fc.oneof(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), fc.constantFrom(200, 429)),
  errorCode: orNull(someText),
  durationMs: fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constantFrom(0, 12.34)),
  ttfbMs: orNull(anyNumber),
  inputTokens: orNull(anyNumber),
  outputTokens: orNull(anyNumber),
  cacheCreationTokens: orNull(anyNumber),
  cacheReadTokens: orNull(anyNumber),
  cacheStatus: orNull(someText),
  metadata: orNull(fc.dictionary(someText, someText, { maxKeys: 3 })),
  access: orNull(fc.constant('would_deny' as const)),
  accessReason: orNull(someText),
  errorMessage: orNull(someText),
  costUsd: orNull(anyNumber),
  attempts: orNull(
    fc.array(
      fc.record({
        index: someText,
        provider: someText,
        model: someText,
        status: fc.integer({ min: 100, max: 599 }),
        ms: fc.double({ min: 0, max: 1e6, noNaN: true }),
      }),
      { maxLength: 3 },
    ),
  ),
  mcpVirtualServer: orNull(someText),
});

describe('request records written with COPY on the embedded database', () => {
  let db: CatalogDatabase;

  beforeAll(async () => {
    db = await openEmbedded();
  });

  /** Writes `records` with a writer on `on` and reads back every stored row (all columns but seq), in a stable order. */
  async function storeAndRead(on: CatalogDatabase, records: RequestRecord[]) {
    await db.exec('TRUNCATE gw_requests');
    const writer = new RequestLogWriter({ db: on, flushIntervalMs: 60_000, retentionDays: 100_000 });
    for (const r of records) writer.push(r);
    await writer.close();
    const rows = await db.query<{ row: string }>(`SELECT (to_jsonb(r) - 'seq')::text AS row FROM gw_requests r`);
    return { stats: writer.stats, rows: rows.map((r) => r.row).sort() };
  }

  it('writes each record as its COPY line: tab-separated columns, \\N for null, syntax escaped', () => {
    const line = recordCopyLine(record({ path: 'a\tb\\c\nd\re', userId: null, metadata: { team: 'r\td' } }));
    expect(line.endsWith('\n')).toBe(true);
    const fields = line.slice(0, -1).split('\t');
    expect(fields).toHaveLength(29);
    expect(fields[28]).toBe('\\N');
    expect(fields[5]).toBe('a\\tb\\\\c\\nd\\re');
    expect(fields[6]).toBe('\\N');
    expect(fields[21]).toBe('{"team":"r\\\\td"}');
  });

  it('writes COPY statements only for plain lower-case table and column names', async () => {
    await expect(db.copyRows?.('gw_requests; DROP TABLE gw_requests', ['at'], '')).rejects.toThrow(TypeError);
    await expect(db.copyRows?.('gw_requests', ['at) FROM PROGRAM (x'], '')).rejects.toThrow(TypeError);
    await expect(db.copyRows?.('gw_requests', [], '')).rejects.toThrow(TypeError);
  });

  it('stores a record whose metadata holds a NUL or an unpaired surrogate, made storable', async () => {
    const stored = await storeAndRead(db, [record({ metadata: { 'k\u0000': '\ud800', team: 'red' } })]);
    expect(stored.stats).toEqual({ written: 1, dropped: 0, queued: 0 });
    expect(JSON.parse(stored.rows[0] as string)).toMatchObject({ metadata: { 'k\uFFFD': '\uFFFD', team: 'red' } });
  });

  it('stores every record exactly as the INSERT from JSON on PostgreSQL stores it (property, read back by PostgreSQL)', async () => {
    // The same database without COPY: the writer falls back to the INSERT that PostgreSQL servers get.
    const withoutCopy: CatalogDatabase = { ...db, copyRows: undefined };
    await fc.assert(
      fc.asyncProperty(fc.array(anyRecord, { minLength: 1, maxLength: 6 }), async (records) => {
        const inserted = await storeAndRead(withoutCopy, records);
        const copied = await storeAndRead(db, records);
        expect(inserted.stats).toEqual({ written: records.length, dropped: 0, queued: 0 });
        expect(copied).toEqual(inserted);
      }),
      { numRuns: 60 },
    );
  });
});

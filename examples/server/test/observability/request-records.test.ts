import { Portkey } from 'portkey-ai';
import { startPostgres, type RunningPostgres } from '../../../../packages/catalog/test/postgres';
import { adminClient, newAdminKey, newEncryptionKey } from '../catalog/catalog-support';
import { failedStart, freshDataDir, startGateway, writeConfig, type RunningGateway } from '../support';
import { ANSWERED_MODEL, eventually, metric, startProviderDouble, type ProviderDouble } from './otel-support';

jest.setTimeout(240_000);

const KEY_A = 'gw-records-key-A-0123456789abcdefAAAA';
const KEY_B = 'gw-records-key-B-0123456789abcdefBBBB';
const ADMIN_KEY = newAdminKey();
/** Answers from the cache, looked up first; kept ten minutes. */
const CACHE = JSON.stringify({ cache: { mode: 'simple', max_age: 600 } });

/** One gateway on one database engine, with a provider double of its own (so its usage sums are its own). */
interface Engine {
  provider: ProviderDouble;
  gateway: RunningGateway;
  admin: ReturnType<typeof adminClient>;
}

let postgres: RunningPostgres;
const engines: Record<string, Engine> = {};
const ENGINES = ['the embedded database', 'PostgreSQL'] as const;

async function startEngine(database: Record<string, string>, extra: Record<string, string> = {}): Promise<Engine> {
  const provider = await startProviderDouble();
  const gateway = await startGateway({
    GATEWAY_CONFIG: writeConfig({
      auth: {
        apiKeys: [
          { key: KEY_A, user: { user_id: 'u_alice' } },
          { key: KEY_B, user: { user_id: 'u_bob' } },
        ],
      },
      providers: [
        { slug: 'claude', provider: 'anthropic', apiKey: 'sk-ant-records-secret', baseUrl: provider.url },
        {
          slug: 'nocache',
          provider: 'anthropic',
          apiKey: 'sk-ant-records-secret',
          baseUrl: provider.url,
          cache: { enabled: false },
        },
      ],
    }),
    GATEWAY_ADMIN_KEY: ADMIN_KEY,
    GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
    ...database,
    ...extra,
  });
  return { provider, gateway, admin: adminClient(gateway.url, ADMIN_KEY) };
}

beforeAll(async () => {
  postgres = await startPostgres();
  // Both engines start together: their start-ups overlap.
  const [embedded, onPostgres] = await Promise.all([
    startEngine({ GATEWAY_DATA_DIR: freshDataDir('gw-records-') }),
    postgres.createDatabase().then((url) => startEngine({ DATABASE_URL: url })),
  ]);
  engines[ENGINES[0]] = embedded;
  engines[ENGINES[1]] = onPostgres;
});

afterAll(async () => {
  await Promise.all(
    Object.values(engines).map(async ({ gateway, provider }) => {
      await gateway.stop();
      await provider.close();
    }),
  );
  await postgres?.destroy();
});

interface ChatOptions {
  stream?: boolean;
  fail?: boolean;
  metadata?: string;
  /** Sent with `x-gateway-config` cache. */
  cache?: boolean;
  forceRefresh?: boolean;
  provider?: string;
  content?: string;
}

function chat(base: string, key: string, options: ChatOptions) {
  return fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      ...(options.metadata === undefined ? {} : { 'x-gateway-metadata': options.metadata }),
      ...(options.cache ? { 'x-gateway-config': CACHE } : {}),
      ...(options.forceRefresh ? { 'x-gateway-cache-force-refresh': 'true' } : {}),
    },
    body: JSON.stringify({
      model: `@${options.provider ?? 'claude'}/claude-haiku-4-5`,
      max_tokens: 16,
      stream: options.stream === true,
      ...(options.stream ? { stream_options: { include_usage: true } } : {}),
      messages: [{ role: 'user', content: options.content ?? (options.fail ? 'please fail' : 'hello') }],
    }),
  });
}

/** One request of the mixed set, as sent and as answered. */
interface Sent {
  id: string;
  user: string;
  status: number;
  team: string | undefined;
  /** `x-gateway-cache-status`, or null when no cache was asked. */
  cacheStatus: string | null;
}

/**
 * The ~1,000 mixed requests, sent once to every engine's gateway at the same time (the same plan,
 * batch by batch): users, streams, provider errors, metadata, and a tenth through the response
 * cache (simple lookups that miss then hit, force refreshes, a provider with the cache turned off).
 */
let traffic: Promise<Record<string, { since: string; reportedBefore: number; sent: Sent[] }>> | undefined;

function sendMixedRequests() {
  traffic ??= (async () => {
    const started: Record<string, { since: string; reportedBefore: number; sent: Sent[] }> = {};
    for (const name of ENGINES) {
      const { gateway, provider } = engines[name] as Engine;
      await eventually(10_000, async () => (await metric(gateway.url, 'gateway_request_records_queued')) === 0);
      started[name] = { since: new Date().toISOString(), reportedBefore: provider.reported.length, sent: [] };
    }
    const plan = Array.from({ length: 1000 }, (_, i) => {
      const cached = i % 10 === 3;
      return {
        key: i % 3 === 0 ? KEY_B : KEY_A,
        user: i % 3 === 0 ? 'u_bob' : 'u_alice',
        stream: i % 4 === 1,
        fail: i % 10 === 7,
        team: i % 5 === 0 ? 'red' : i % 5 === 1 ? 'blue' : undefined,
        cache: cached,
        forceRefresh: cached && i % 40 === 3,
        provider: cached && i % 40 === 13 ? 'nocache' : 'claude',
        // Three questions per user, asked ~33 times each: the first answer is stored, later ones hit.
        content: cached ? `cached question ${i % 7}` : undefined,
      };
    });
    for (let start = 0; start < plan.length; start += 25) {
      await Promise.all(
        ENGINES.flatMap((name) =>
          plan.slice(start, start + 25).map(async (p) => {
            const res = await chat((engines[name] as Engine).gateway.url, p.key, {
              ...p,
              metadata: p.team ? JSON.stringify({ team: p.team }) : undefined,
            });
            await res.arrayBuffer();
            started[name]?.sent.push({
              id: res.headers.get('x-gateway-request-id') as string,
              user: p.user,
              status: res.status,
              team: p.team,
              cacheStatus: res.headers.get('x-gateway-cache-status'),
            });
          }),
        ),
      );
    }
    return started;
  })();
  return traffic;
}

describe('x-gateway-metadata', () => {
  const embedded = () => engines[ENGINES[0]] as Engine;
  it.each([
    ['not JSON', '{team:'],
    ['not an object', '["a"]'],
    ['a value that is not a string', '{"n":1}'],
    ['too many keys', JSON.stringify(Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, 'v'])))],
    ['a key too long', JSON.stringify({ ['k'.repeat(65)]: 'v' })],
    ['a value too long', JSON.stringify({ k: 'v'.repeat(513) })],
  ])('refuses %s with 400 invalid_metadata naming the header', async (_name, metadata) => {
    const res = await chat(embedded().gateway.url, KEY_A, { metadata });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; param: string } };
    expect(body.error).toMatchObject({ code: 'invalid_metadata', param: 'x-gateway-metadata' });
  });

  it('accepts the limits exactly: 32 keys, 64-character keys, 512-character values', async () => {
    // Within Node's 16 KiB of request headers: one value of 512 characters, the others shorter.
    const metadata = Object.fromEntries(
      Array.from({ length: 32 }, (_, i) => [`${i}`.padStart(64, 'k'), 'v'.repeat(i === 0 ? 512 : 200)]),
    );
    expect((await chat(embedded().gateway.url, KEY_A, { metadata: JSON.stringify(metadata) })).status).toBe(200);
  });

  it("takes the portkey-ai SDK's metadata option, and refuses a non-string value from it", async () => {
    const { gateway, admin } = embedded();
    const portkey = new Portkey({
      apiKey: KEY_B,
      baseURL: `${gateway.url}/v1`,
      provider: '@claude',
      metadata: { _user: 'someone-else', source: 'portkey-sdk' },
    });
    const data = await portkey.chat.completions.create({
      model: 'claude-haiku-4-5',
      max_tokens: 16,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(data.choices?.[0]?.message?.content).toBe('SECRET-ANSWER');
    await eventually(10_000, async () => {
      const page = await admin('GET', '/requests?metadata.source=portkey-sdk');
      return page.body.data.length === 1;
    });
    const page = await admin('GET', '/requests?metadata.source=portkey-sdk');
    // `_user` is a label: the record's user is the API key's.
    expect(page.body.data[0]).toMatchObject({ user_id: 'u_bob', metadata: { _user: 'someone-else' } });

    const bad = new Portkey({
      apiKey: KEY_B,
      baseURL: `${gateway.url}/v1`,
      provider: '@claude',
      metadata: { n: 1 } as never,
    });
    await expect(
      bad.chat.completions.create({
        model: 'claude-haiku-4-5',
        max_tokens: 16,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    ).rejects.toMatchObject({ status: 400 });
  });
});

describe.each(ENGINES)('request records on %s', (name) => {
  const engine = () => engines[name] as Engine;

  it('records ~1,000 mixed requests exactly: filters, pagination, cache status, usage sums', async () => {
    const { since, reportedBefore, sent } = (await sendMixedRequests())[name] as Awaited<
      ReturnType<typeof sendMixedRequests>
    >[string];
    const { gateway, provider, admin } = engine();
    expect(sent).toHaveLength(1000);
    expect(sent.filter((s) => s.status === 429)).toHaveLength(100);
    const statuses = (value: string | null) => sent.filter((s) => s.cacheStatus === value).length;
    expect(statuses(null)).toBe(900);
    expect(statuses('REFRESH')).toBe(25);
    expect(statuses('DISABLED')).toBe(25);
    // Seven questions for each of two users: each stored by its first MISS (or REFRESH), then HIT.
    expect(statuses('MISS')).toBeGreaterThan(0);
    expect(statuses('MISS')).toBeLessThanOrEqual(14);
    expect(statuses('HIT')).toBeGreaterThan(0);
    expect(statuses('MISS') + statuses('HIT')).toBe(50);
    await eventually(30_000, async () => (await metric(gateway.url, 'gateway_request_records_queued')) === 0);

    /** Every page of a query, following next_cursor; fails on a repeated record. */
    const all = async (query: string) => {
      const records: { request_id: string; [k: string]: unknown }[] = [];
      let cursor: string | null = null;
      do {
        const page = await admin(
          'GET',
          `/requests?from=${encodeURIComponent(since)}&limit=97&${query}${cursor ? `&cursor=${cursor}` : ''}`,
        );
        expect(page.status).toBe(200);
        records.push(...page.body.data);
        cursor = page.body.next_cursor;
      } while (cursor);
      expect(new Set(records.map((r) => r.request_id)).size).toBe(records.length);
      return records;
    };
    const ids = (list: { id: string }[]) => list.map((s) => s.id).sort();
    const alice = await all('user=u_alice');
    expect(alice.map((r) => r.request_id).sort()).toEqual(ids(sent.filter((s) => s.user === 'u_alice')));
    const redOk = await all('metadata.team=red&status=200');
    expect(redOk.map((r) => r.request_id).sort()).toEqual(
      ids(sent.filter((s) => s.team === 'red' && s.status === 200)),
    );
    const failed = await all('status=429&user=u_bob');
    expect(failed.map((r) => r.request_id).sort()).toEqual(
      ids(sent.filter((s) => s.status === 429 && s.user === 'u_bob')),
    );
    expect(failed[0]).toMatchObject({ error_code: expect.any(String), provider: 'claude' });
    const everything = await all('');
    expect(everything).toHaveLength(1000);
    // Newest first.
    const times = everything.map((r) => Date.parse(r.time as string));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    const ok = everything.find((r) => r.status === 200) as Record<string, unknown>;
    expect(ok).toMatchObject({
      model_requested: 'claude-haiku-4-5',
      model_answered: ANSWERED_MODEL,
      key_hint: expect.stringMatching(/^…/),
    });

    // Each record's cache status is its answer's x-gateway-cache-status (null when no cache was asked).
    const byId = new Map(everything.map((r) => [r.request_id, r]));
    for (const s of sent) expect([s.id, byId.get(s.id)?.cache_status]).toEqual([s.id, s.cacheStatus]);
    // A HIT names the model that wrote the answer and reports no tokens: the provider was not called.
    const hits = everything.filter((r) => r.cache_status === 'HIT');
    expect(hits.length).toBe(statuses('HIT'));
    for (const hit of hits) {
      expect(hit).toMatchObject({
        status: 200,
        model_answered: ANSWERED_MODEL,
        usage: {
          input_tokens: null,
          output_tokens: null,
          cache_creation_input_tokens: null,
          cache_read_input_tokens: null,
        },
      });
    }
    for (const other of everything.filter((r) => r.status === 200 && r.cache_status !== 'HIT')) {
      expect((other.usage as { input_tokens: number | null }).input_tokens).toEqual(expect.any(Number));
    }

    // Usage sums what the provider reported: every call that reached it, no HIT.
    const reported = provider.reported.slice(reportedBefore);
    expect(reported).toHaveLength(900 - statuses('HIT'));
    const usage = await admin('GET', `/usage?group_by=user&from=${encodeURIComponent(since)}`);
    const sum = (field: string) =>
      usage.body.data.reduce((t: number, g: Record<string, number>) => t + (g[field] as number), 0);
    expect(sum('requests')).toBe(1000);
    expect(sum('errors')).toBe(100);
    expect(sum('input_tokens')).toBe(reported.reduce((t, [i]) => t + i, 0));
    expect(sum('output_tokens')).toBe(reported.reduce((t, [, o]) => t + o, 0));
    expect(sum('cache_read_input_tokens')).toBe(reported.length);
    const byDay = await admin('GET', `/usage?group_by=day&from=${encodeURIComponent(since)}`);
    expect(byDay.body.data.reduce((t: number, g: { requests: number }) => t + g.requests, 0)).toBe(1000);
    // No message content in any record.
    expect(JSON.stringify(everything)).not.toContain('SECRET-ANSWER');
    expect(JSON.stringify(everything)).not.toContain('cached question');
    expect(JSON.stringify(everything)).not.toContain(KEY_A);
  });

  it("records a native /v1/messages provider error by the error type in the provider's body", async () => {
    const { gateway, admin } = engine();
    const send = (content: string) =>
      fetch(`${gateway.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': KEY_A, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
        body: JSON.stringify({
          model: '@claude/claude-haiku-4-5',
          max_tokens: 16,
          messages: [{ role: 'user', content }],
        }),
      });
    const limited = await send('please fail');
    // The provider's answer reaches the client unchanged.
    expect([limited.status, ((await limited.json()) as { error: { type: string } }).error.type]).toEqual([
      429,
      'rate_limit_error',
    ]);
    const plain = await send('fail plainly');
    expect([plain.status, await plain.text()]).toEqual([503, 'upstream connect error']);
    const recorded = async (res: Response) => {
      const id = res.headers.get('x-gateway-request-id') as string;
      let record: Record<string, unknown> | undefined;
      await eventually(10_000, async () => {
        const page = await admin('GET', '/requests?user=u_alice&limit=20');
        record = page.body.data.find((r: { request_id: string }) => r.request_id === id);
        return record !== undefined;
      });
      return record;
    };
    expect(await recorded(limited)).toMatchObject({ route: 'messages', status: 429, error_code: 'rate_limit_error' });
    // A body that is not the provider's error JSON: the status stands in.
    expect(await recorded(plain)).toMatchObject({ route: 'messages', status: 503, error_code: 'upstream_503' });
  });

  it('stores a record whose model name holds NUL or an unpaired surrogate (as U+FFFD), and the records inserted beside it', async () => {
    const { gateway, admin } = engine();
    const send = (model: string) =>
      fetch(`${gateway.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': KEY_B, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
        body: JSON.stringify({ model, max_tokens: 16, messages: [{ role: 'user', content: 'hello' }] }),
      });
    // Sent together: one insert batch holds both.
    const [odd, plain] = await Promise.all([send('@claude/claude-\ud800\u0000-odd'), send('@claude/claude-haiku-4-5')]);
    const ids = [odd, plain].map((res) => res.headers.get('x-gateway-request-id') as string);
    let records: { request_id: string; model_requested: string }[] = [];
    await eventually(10_000, async () => {
      const page = await admin('GET', '/requests?user=u_bob&limit=50');
      records = page.body.data.filter((r: { request_id: string }) => ids.includes(r.request_id));
      return records.length === 2;
    });
    expect(records.map((r) => [r.request_id, r.model_requested]).sort()).toEqual(
      [
        [ids[0], 'claude-\uFFFD\uFFFD-odd'],
        [ids[1], 'claude-haiku-4-5'],
      ].sort(),
    );
  });

  it('refuses a bad filter, limit or cursor with 400 naming the parameter', async () => {
    const { admin } = engine();
    for (const [query, param] of [
      ['limit=501', 'limit'],
      ['cursor=nope', 'cursor'],
      ['from=yesterday', 'from'],
      ['status=abc', 'status'],
    ]) {
      const res = await admin('GET', `/requests?${query}`);
      expect(res.status).toBe(400);
      expect(res.body.error.param).toBe(param);
    }
    expect((await admin('GET', '/usage?group_by=team')).body.error.param).toBe('group_by');
  });
});

describe('request records while PostgreSQL is down', () => {
  it('answers every request promptly, drops and counts the records past the queue bound, writes the queued ones once it is back', async () => {
    // A queue of 50 records (GATEWAY_REQUEST_LOG_QUEUE), on a database of its own on the same server.
    const engine = await startEngine(
      { DATABASE_URL: await postgres.createDatabase() },
      { GATEWAY_REQUEST_LOG_QUEUE: '50' },
    );
    engines.outage = engine;
    const { gateway, admin } = engine;
    const send = async () => {
      const started = performance.now();
      const res = await chat(gateway.url, KEY_A, { metadata: JSON.stringify({ phase: 'outage' }) });
      await res.arrayBuffer();
      return {
        id: res.headers.get('x-gateway-request-id') as string,
        status: res.status,
        ms: performance.now() - started,
      };
    };
    expect((await send()).status).toBe(200);
    await eventually(10_000, async () => (await metric(gateway.url, 'gateway_request_records_queued')) === 0);
    const droppedBefore = await metric(gateway.url, 'gateway_request_records_dropped_total');
    const writtenBefore = await metric(gateway.url, 'gateway_request_records_written_total');

    await postgres.stop();
    const answers: Awaited<ReturnType<typeof send>>[] = [];
    try {
      for (let batch = 0; batch < 10; batch++) {
        answers.push(...(await Promise.all(Array.from({ length: 20 }, send))));
        // Never more than the bound waiting, also between the writer's retries.
        expect(await metric(gateway.url, 'gateway_request_records_queued')).toBeLessThanOrEqual(50);
      }
      // Every request answered, none waiting on the database.
      expect(answers.filter((a) => a.status !== 200)).toEqual([]);
      expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(2000);
      // The queue holds 50 records; the other 150 are dropped and counted.
      await eventually(10_000, async () => {
        const dropped = (await metric(gateway.url, 'gateway_request_records_dropped_total')) - droppedBefore;
        return dropped === 150 && (await metric(gateway.url, 'gateway_request_records_queued')) === 50;
      });
      expect(await metric(gateway.url, 'gateway_request_records_written_total')).toBe(writtenBefore);
    } finally {
      await postgres.start();
    }

    // Back: the queued records are written (after the writer's back-off), and nothing more is dropped.
    // (A batch leaves the queue when its insert starts and counts as written when it ends.)
    await eventually(
      60_000,
      async () =>
        (await metric(gateway.url, 'gateway_request_records_queued')) === 0 &&
        (await metric(gateway.url, 'gateway_request_records_written_total')) >= writtenBefore + 50,
    );
    expect(await metric(gateway.url, 'gateway_request_records_written_total')).toBe(writtenBefore + 50);
    expect(await metric(gateway.url, 'gateway_request_records_dropped_total')).toBe(droppedBefore + 150);
    let listed: { request_id: string; metadata: unknown }[] = [];
    await eventually(30_000, async () => {
      const page = await admin('GET', '/requests?metadata.phase=outage&limit=500');
      listed = page.status === 200 ? page.body.data : [];
      return listed.length === 51;
    });
    const sentDuringOutage = new Set(answers.map((a) => a.id));
    expect(listed.filter((r) => sentDuringOutage.has(r.request_id))).toHaveLength(50);
  });
});

describe('GATEWAY_REQUEST_LOG_DAYS=0', () => {
  it('logs each request but stores no record; the records stored before stay readable', async () => {
    const url = await postgres.createDatabase();
    const storing = await startEngine({ DATABASE_URL: url });
    const first = await chat(storing.gateway.url, KEY_A, { metadata: JSON.stringify({ phase: 'stored' }) });
    await first.arrayBuffer();
    const storedId = first.headers.get('x-gateway-request-id');
    await eventually(
      10_000,
      async () => (await metric(storing.gateway.url, 'gateway_request_records_written_total')) === 1,
    );
    await storing.gateway.stop();
    await storing.provider.close();

    const engine = await startEngine({ DATABASE_URL: url }, { GATEWAY_REQUEST_LOG_DAYS: '0' });
    engines.notStored = engine;
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await chat(engine.gateway.url, KEY_B, { metadata: JSON.stringify({ phase: 'logged' }) });
      await res.arrayBuffer();
      expect(res.status).toBe(200);
      ids.push(res.headers.get('x-gateway-request-id') as string);
    }
    // Every request has its log line, with the record's fields.
    await eventually(5_000, async () => ids.every((id) => engine.gateway.logs.some((line) => line.includes(id))));
    const line = JSON.parse(engine.gateway.logs.find((l) => l.includes(ids[0] as string)) as string);
    expect(line).toMatchObject({ msg: 'request', requestId: ids[0], userId: 'u_bob', status: 200 });
    // No record queued or written (the writer flushes every second).
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(await metric(engine.gateway.url, 'gateway_request_records_written_total')).toBe(0);
    expect(await metric(engine.gateway.url, 'gateway_request_records_queued')).toBe(0);
    const page = await engine.admin('GET', '/requests?limit=500');
    expect(page.status).toBe(200);
    expect(page.body.data.map((r: { request_id: string }) => r.request_id)).toEqual([storedId]);
  });

  it('refuses a negative or fractional number of days at start-up', async () => {
    for (const days of ['-1', '1.5']) {
      const { code, stderr } = await failedStart({ GATEWAY_CONFIG: writeConfig({}), GATEWAY_REQUEST_LOG_DAYS: days });
      expect(code).not.toBe(0);
      expect(stderr).toContain('GATEWAY_REQUEST_LOG_DAYS must be a whole number of at least 0, such as 30');
    }
  });
});

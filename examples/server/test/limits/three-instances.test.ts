import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startPostgres, type RunningPostgres } from '../../../../packages/catalog/test/postgres';
import { startRedis, type RunningRedis } from '../cache/cache-support';
import { adminClient, newAdminKey, newEncryptionKey, within } from '../catalog/catalog-support';
import { startGateway, writeConfig, type RunningGateway } from '../support';

jest.setTimeout(180_000);

/** An Anthropic double that answers after 30 ms with 10 input tokens and `max_tokens` output tokens (every request its worst case). */
async function startWorstCaseAnthropic(): Promise<{ url: string; calls: () => number; close(): Promise<void> }> {
  let calls = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      calls++;
      const body = JSON.parse(Buffer.concat(chunks).toString() || '{}') as { model?: string; max_tokens?: number };
      setTimeout(() => {
        res.setHeader('content-type', 'application/json');
        res.end(
          JSON.stringify({
            id: 'msg_worst',
            type: 'message',
            role: 'assistant',
            model: body.model,
            content: [{ type: 'text', text: 'ok' }],
            stop_reason: 'max_tokens',
            stop_sequence: null,
            usage: { input_tokens: 10, output_tokens: body.max_tokens ?? 0 },
          }),
        );
      }, 30);
    });
  });
  const url = await new Promise<string>((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)),
  );
  return {
    url,
    calls: () => calls,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

const MAX_TOKENS = 1000;
const BODY = JSON.stringify({
  model: '@worst/claude-haiku-4-5',
  max_tokens: MAX_TOKENS,
  messages: [{ role: 'user', content: 'Count the stars, briefly.' }],
});
/** The request's largest cost at $1 per million tokens of every kind: (input estimate + max_tokens) tokens. */
const WORST_CASE_USD = (Math.ceil(Buffer.byteLength(BODY) / 4) + MAX_TOKENS) / 1e6;
/** What each request really costs: 10 input tokens and max_tokens output tokens. */
const REAL_USD = (10 + MAX_TOKENS) / 1e6;
const BUDGET_USD = Math.round(10 * WORST_CASE_USD * 1e9) / 1e9;

interface Answer {
  status: number;
  headers: Headers;
  code?: string;
}

async function chat(base: string, key: string): Promise<Answer> {
  const res = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: BODY,
    signal: AbortSignal.timeout(15_000),
  });
  const body = (await res.json()) as { error?: { code?: string } };
  return { status: res.status, headers: res.headers, code: body.error?.code };
}

/**
 * Three gateway processes on one PostgreSQL and one Redis, as behind a load balancer: the limits of
 * CONTRACT section 14 hold across them whatever the concurrency, and when Redis goes away each
 * instance does what GATEWAY_LIMITS_ON_STORE_UNAVAILABLE says, without hanging.
 */
describe('limits across three gateway instances sharing Redis', () => {
  let postgres: RunningPostgres;
  let redis: RunningRedis;
  let anthropic: Awaited<ReturnType<typeof startWorstCaseAnthropic>>;
  let gateways: RunningGateway[] = [];
  let adminKey: string;

  beforeAll(async () => {
    [postgres, redis, anthropic] = await Promise.all([startPostgres(), startRedis(), startWorstCaseAnthropic()]);
    adminKey = newAdminKey();
    const one = { input: 1, output: 1, cacheWrite: 1, cacheRead: 1 };
    const config = {
      auth: {
        apiKeys: [
          { key: 'gw-rpm-0000000001', user: { user_id: 'u-rpm' } },
          { key: 'gw-budget-0000001', user: { user_id: 'u-budget', groups: ['finance'] } },
          { key: 'gw-redis-00000001', user: { user_id: 'u-redis' } },
          { key: 'gw-free-000000001', user: { user_id: 'u-free' } },
        ],
      },
      providers: [
        {
          slug: 'worst',
          provider: 'anthropic',
          apiKey: 'sk-ant-worst-0001',
          baseUrl: anthropic.url,
          pricing: { 'claude-haiku-4-5': one },
        },
      ],
      limits: [
        { slug: 'twenty-rpm', subjects: { users: ['u-rpm'] }, per: 'shared', requests_per_minute: 20 },
        { slug: 'finance-daily', subjects: { groups: ['finance'] }, per: 'each', cost_usd_per_day: BUDGET_USD },
        { slug: 'redis-rpm', subjects: { users: ['u-redis'] }, requests_per_minute: 100000 },
      ],
    };
    const env = {
      DATABASE_URL: await postgres.createDatabase(),
      REDIS_URL: redis.url,
      GATEWAY_CONFIG: writeConfig(config),
      GATEWAY_ADMIN_KEY: adminKey,
      GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
      JWT_PRIVATE_KEY: undefined,
      // A loaded test machine can take more than the default 100 ms per script: the rounds test
      // atomicity, not the timeout (a killed Redis refuses at once, whatever the timeout).
      GATEWAY_LIMITS_REDIS_TIMEOUT_MS: '1000',
    };
    // Two instances deny when Redis is unreachable (the default), the third allows.
    gateways = await Promise.all([
      startGateway(env),
      startGateway(env),
      startGateway({ ...env, GATEWAY_LIMITS_ON_STORE_UNAVAILABLE: 'allow' }),
    ]);
  });

  afterAll(async () => {
    await Promise.all(gateways.map((g) => g.stop()));
    await Promise.all([postgres?.destroy(), redis?.stop(), anthropic?.close()]);
  });

  it('lets exactly 20 of 60 concurrent requests through a limit of 20 per minute', async () => {
    const answers = await Promise.all(
      Array.from({ length: 60 }, (_, i) => chat((gateways[i % 3] as RunningGateway).url, 'gw-rpm-0000000001')),
    );
    const passed = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status === 429);
    expect(passed).toHaveLength(20);
    expect(refused).toHaveLength(40);
    for (const answer of refused) {
      expect(answer.code).toBe('rate_limited');
      expect(Number(answer.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(answer.headers.get('x-ratelimit-limit-requests')).toBe('20');
      expect(answer.headers.get('x-ratelimit-remaining-requests')).toBe('0');
      expect(answer.headers.get('x-ratelimit-reset-requests')).toMatch(/^\d+(ms|s|m\d+s)$/);
    }
    expect(passed.map((a) => a.headers.get('x-ratelimit-remaining-requests')).sort()).toEqual(
      Array.from({ length: 20 }, (_, i) => String(i)).sort(),
    );
    const admin = adminClient(gateways[1]!.url, adminKey);
    const status = await admin('GET', '/limits/twenty-rpm/status');
    expect(status.body).toMatchObject({
      counter: 'shared',
      requests_per_minute: { limit: 20, used: 20, remaining: 0 },
    });
  });

  it('keeps the settled spend of 30 concurrent requests within a budget that fits 10 worst cases', async () => {
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) => chat((gateways[i % 3] as RunningGateway).url, 'gw-budget-0000001')),
    );
    const passed = answers.filter((a) => a.status === 200).length;
    expect(passed).toBeGreaterThanOrEqual(8);
    for (const answer of answers.filter((a) => a.status !== 200)) {
      expect([answer.status, answer.code]).toEqual([429, 'budget_exceeded']);
      expect(Number(answer.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    }
    const admin = adminClient(gateways[0]!.url, adminKey);
    // Every request settles when its answer ends: the counters hold only real costs.
    const spent = async () =>
      (await admin('GET', '/limits/finance-daily/status?user=u-budget')).body.cost_usd_per_day.spent;
    await within(5_000, async () => Math.abs((await spent()) - passed * REAL_USD) < 1e-9);
    // Never more than the budget plus one request's estimation error (here none: each used at most its estimate).
    expect(await spent()).toBeLessThanOrEqual(BUDGET_USD + 1e-12);
    // The records carry cost_usd, and the usage sums it beside the tokens (records are written within ~1 s).
    await within(10_000, async () => {
      const usage = await admin('GET', '/usage?group_by=user');
      const row = (usage.body.data as { key: string; cost_usd: number; requests: number }[]).find(
        (r) => r.key === 'u-budget',
      );
      return row !== undefined && row.requests === 30 && Math.abs(row.cost_usd - passed * REAL_USD) < 1e-9;
    });
    const audit = await admin('GET', '/audit?record=limits/finance-daily');
    expect(audit.body.data[0]).toMatchObject({
      actor: 'gateway',
      action: 'budget_exhausted',
      record: 'limits/finance-daily',
    });
    expect(audit.body.data[0].fields).toContain('cap=cost_per_day');
  });

  it('when Redis is killed mid-run: instances set to deny answer 503 limits_unavailable, the one set to allow serves and counts it, nothing hangs', async () => {
    const started = Date.now();
    const batch = Promise.all(
      Array.from({ length: 30 }, async (_, i) => {
        await new Promise((r) => setTimeout(r, i * 5));
        return chat((gateways[i % 3] as RunningGateway).url, 'gw-redis-00000001');
      }),
    );
    await new Promise((r) => setTimeout(r, 40));
    await redis.stop();
    const answers = await batch;
    // Every request was answered, within the bound of a Redis call and the provider's delay.
    expect(Date.now() - started).toBeLessThan(10_000);
    for (const [i, answer] of answers.entries()) {
      if (i % 3 === 2) expect(answer.status).toBe(200);
      else expect([200, 503]).toContain(answer.status);
      if (answer.status === 503) expect(answer.code).toBe('limits_unavailable');
    }
    // With Redis down: deny on the first two, allow on the third; callers without limits are served.
    expect(await chat(gateways[0]!.url, 'gw-redis-00000001')).toMatchObject({
      status: 503,
      code: 'limits_unavailable',
    });
    expect((await chat(gateways[2]!.url, 'gw-redis-00000001')).status).toBe(200);
    expect((await chat(gateways[1]!.url, 'gw-free-000000001')).status).toBe(200);
    // The counters cannot be read either: 503, worth a retry, not a fault of the gateway.
    const status = await fetch(`${gateways[0]!.url}/admin/v1/limits/redis-rpm/status?user=u-redis`, {
      headers: { authorization: `Bearer ${adminKey}` },
      signal: AbortSignal.timeout(5_000),
    });
    expect(status.status).toBe(503);
    expect(((await status.json()) as { error: { code: string } }).error.code).toBe('limits_unavailable');
    const metrics = await (await fetch(`${gateways[2]!.url}/metrics`)).text();
    expect(metrics).toMatch(/gateway_limits_store_unavailable_total\{outcome="allowed"\} [1-9]/);
    // Redis back: limited requests pass again.
    await redis.start();
    await within(10_000, async () => (await chat(gateways[0]!.url, 'gw-redis-00000001')).status === 200);
  });
});

import { randomBytes } from 'node:crypto';
import OpenAI from 'openai';
import { Redis } from 'ioredis';
import { startGateway, writeConfig, type RunningGateway } from '../support';
import { within } from '../catalog/catalog-support';
import { startCountingAnthropic, startRedis, type RunningRedis } from './cache-support';

jest.setTimeout(60_000);

const ALICE = 'gw-cache-test-alice-key-1';
const BOB = 'gw-cache-test-bob-key-22';
const CACHE = { 'x-gateway-config': JSON.stringify({ cache: { mode: 'simple', max_age: 600 } }) };

let upstream: Awaited<ReturnType<typeof startCountingAnthropic>>;
let config: string;
const running: RunningGateway[] = [];

beforeAll(async () => {
  upstream = await startCountingAnthropic();
  config = writeConfig({
    auth: {
      apiKeys: [
        { key: ALICE, user: { user_id: 'alice' } },
        { key: BOB, user: { user_id: 'bob' } },
      ],
    },
    providers: [{ slug: 'anthropic', provider: 'anthropic', apiKey: 'sk-ant-cache-test', baseUrl: upstream.url }],
  });
});

afterAll(async () => {
  await Promise.all(running.map((g) => g.stop()));
  await upstream.close();
});

async function gateway(env: Record<string, string> = {}): Promise<RunningGateway> {
  const started = await startGateway({ GATEWAY_CONFIG: config, ...env });
  running.push(started);
  return started;
}

let question = 0;
const ask = (size = '') => ({
  model: '@anthropic/claude-sonnet-4-5',
  max_tokens: 32,
  messages: [{ role: 'user' as const, content: `cache question ${++question} ${size}` }],
});

async function complete(base: string, body: ReturnType<typeof ask>, key = ALICE) {
  const client = new OpenAI({ apiKey: key, baseURL: `${base}/v1`, maxRetries: 0, defaultHeaders: CACHE });
  const started = performance.now();
  const { data, response } = await client.chat.completions.create(body).withResponse();
  return {
    text: data.choices[0]?.message.content,
    status: response.headers.get('x-gateway-cache-status'),
    ms: performance.now() - started,
  };
}

const metric = async (base: string, name: string) => {
  const text = await (await fetch(`${base}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(name));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
};

describe('the response cache in memory', () => {
  it('hits per user, counts hits, saved tokens, entries and bytes in the metrics', async () => {
    const g = await gateway({ GATEWAY_CACHE_MAX_MB: '1' });
    const body = ask();
    const calls = upstream.calls();
    expect((await complete(g.url, body)).status).toBe('MISS');
    const hit = await complete(g.url, body);
    expect(hit.status).toBe('HIT');
    expect((await complete(g.url, body, BOB)).status).toBe('MISS');
    expect(upstream.calls()).toBe(calls + 2);
    expect(await metric(g.url, 'gateway_cache_requests_total{status="HIT"}')).toBe(1);
    expect(await metric(g.url, 'gateway_cache_requests_total{status="MISS"}')).toBe(2);
    expect(await metric(g.url, 'gateway_cache_tokens_saved_total{kind="input"}')).toBe(11);
    expect(await metric(g.url, 'gateway_cache_tokens_saved_total{kind="output"}')).toBe(7);
    expect(await metric(g.url, 'gateway_cache_entries')).toBe(2);
    expect(await metric(g.url, 'gateway_cache_bytes')).toBeGreaterThan(2 * 5000);
    // 1 MiB holds about 38 answers of 27 KB: older ones are evicted, the total stays bounded.
    for (let i = 0; i < 50; i++) await complete(g.url, ask('big'));
    expect(await metric(g.url, 'gateway_cache_bytes')).toBeLessThanOrEqual(1024 * 1024);
    expect((await complete(g.url, body)).status).toBe('MISS');
    await within(2_000, async () => g.logs.some((l) => l.includes('"cacheStatus":"HIT"')));
  });

  it('refuses a bad GATEWAY_CACHE_MAX_MB or REDIS_URL at start-up', async () => {
    await expect(startGateway({ GATEWAY_CONFIG: config, GATEWAY_CACHE_MAX_MB: 'lots' })).rejects.toThrow(
      /GATEWAY_CACHE_MAX_MB must be a whole number/,
    );
    await expect(startGateway({ GATEWAY_CONFIG: config, REDIS_URL: 'http://127.0.0.1:1' })).rejects.toThrow(
      /REDIS_URL must be a redis:\/\//,
    );
  });
});

describe('the response cache in a shared Redis', () => {
  let redis: RunningRedis;
  /** The test's own view of Redis: closed whatever the test's outcome. */
  let inspect: Redis | undefined;

  beforeAll(async () => {
    redis = await startRedis();
  });

  afterAll(async () => {
    if (inspect && inspect.status !== 'end') inspect.disconnect();
    await redis.stop();
  });

  it('is shared by two gateway processes, survives Redis going away and resumes when it is back', async () => {
    // A bound above this machine's worst scheduling delay while other suites run: the test is about
    // sharing and outages, not the 50 ms default (an unreachable Redis fails at once, whatever it is).
    // One encryption key for both: the entries' MAC key is derived from it.
    const env = {
      REDIS_URL: redis.url,
      GATEWAY_CACHE_REDIS_TIMEOUT_MS: '500',
      GATEWAY_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    };
    const [a, b] = await Promise.all([gateway(env), gateway(env)]);
    const a1 = a as RunningGateway;
    const b1 = b as RunningGateway;
    const body = ask();
    const calls = upstream.calls();
    expect((await complete(a1.url, body)).status).toBe('MISS');
    // The store is written after the answer (it never delays it): wait until Redis holds it, then
    // the other instance answers from it without calling the provider.
    const view = (inspect = new Redis(redis.url));
    await within(5_000, async () => (await view.keys('gw:cache:v2:*')).length === 1);
    const shared = await complete(b1.url, body);
    expect(shared.status).toBe('HIT');
    expect(upstream.calls()).toBe(calls + 1);
    expect((await complete(b1.url, body, BOB)).status).toBe('MISS');

    // The entry is one key with a TTL of max_age, compressed (the answer is over 4 KB).
    await within(5_000, async () => (await view.keys('gw:cache:v2:*')).length === 2);
    const keys = await view.keys('gw:cache:v2:*');
    const ttl = await view.ttl(keys[0] as string);
    expect(ttl).toBeGreaterThan(590);
    expect(ttl).toBeLessThanOrEqual(600);
    const raw = (await view.getBuffer(keys[0] as string)) as Buffer;
    // Form 2 (authenticated), gzip.
    expect([raw[0], raw[1]]).toEqual([2, 1]);
    expect(raw.length).toBeLessThan(2000);
    view.disconnect();

    await redis.stop();
    for (let i = 0; i < 3; i++) {
      const answer = await complete(a1.url, body);
      expect(answer.status).toBe('MISS');
      expect(answer.text).toContain('answer');
      // Within the bound (50 ms) plus the provider's time: nowhere near a connect timeout.
      expect(answer.ms).toBeLessThan(1_000);
    }
    // Log lines reach the test asynchronously.
    await within(2_000, async () => a1.logs.some((l) => l.includes('Redis unreachable')));
    expect(a1.logs.filter((l) => l.includes('Redis unreachable'))).toHaveLength(1);
    expect(await metric(a1.url, 'gateway_cache_redis_errors_total{operation="get"}')).toBeGreaterThanOrEqual(3);

    await redis.start();
    // The instance reconnects within its retry delay (at most 2 s); the first answer is stored again.
    let resumed: Awaited<ReturnType<typeof complete>> | undefined;
    const started = Date.now();
    while (resumed?.status !== 'HIT' && Date.now() - started < 10_000) {
      resumed = await complete(a1.url, body);
      if (resumed.status !== 'HIT') await new Promise((r) => setTimeout(r, 100));
    }
    expect(resumed?.status).toBe('HIT');
    await within(2_000, async () => a1.logs.some((l) => l.includes('Redis reachable again')));
  });
});

import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import {
  LIMIT_SCRIPTS,
  LimitSet,
  Limiter,
  LimitsUnavailableError,
  RedisCounterStore,
  type AppliedLimit,
  type CounterStatus,
} from '@gw/access';
import { redisScriptRunner, type RedisScriptRunnerHandle } from '../../src/limits/redis-runner';
import { startRedis, type RunningRedis } from '../cache/cache-support';

jest.setTimeout(60_000);

let redis: RunningRedis;
/** Reads the counters at once (nothing held), on its own connection. */
let observer: RedisScriptRunnerHandle;
/** A plain client: commands and statistics of the server. */
let admin: Redis;
const opened: RedisScriptRunnerHandle[] = [];

beforeAll(async () => {
  redis = await startRedis();
  observer = redisScriptRunner({ url: redis.url, timeoutMs: 1000, batchDelayMs: 0 });
  admin = new Redis(redis.url, { maxRetriesPerRequest: 0 });
  await observer.ready();
  // The server knows every script: no EVALSHA answered NOSCRIPT (and sent again as EVAL) in the counts.
  for (const script of Object.values(LIMIT_SCRIPTS)) await admin.script('LOAD', script.lua);
});

afterEach(async () => {
  await Promise.all(opened.splice(0).map((runner) => runner.close()));
});

afterAll(async () => {
  await observer?.close();
  admin?.disconnect();
  await redis?.stop();
  // A client closed while its server was paused or gone keeps ioredis's 2 s disconnect timer.
  await new Promise((r) => setTimeout(r, 2_100));
});

async function openRunner(options: { batchDelayMs: number; batchSize?: number; timeoutMs?: number }) {
  const runner = redisScriptRunner({ url: redis.url, timeoutMs: options.timeoutMs ?? 1000, ...options });
  opened.push(runner);
  expect(await runner.ready()).toBe(true);
  return runner;
}

/** A limit of every kind for user `u-1`, on counters of its own. */
function limitOfEveryKind(): readonly AppliedLimit[] {
  return new LimitSet([
    {
      slug: `batch-${randomUUID()}`,
      subjects: { users: ['u-1'] },
      requests_per_minute: 1000,
      tokens_per_minute: 1_000_000,
      cost_usd_per_day: 100,
      cost_usd_per_month: 1000,
    },
  ]).applicable({ user: 'u-1' });
}

function statusOf(limits: readonly AppliedLimit[]): Promise<CounterStatus> {
  const counter = { ...limits[0]!.limit, counterId: limits[0]!.counterId };
  return new RedisCounterStore({ run: observer.run }).status(counter, Date.now());
}

/** How many scripts the server has run since its statistics were last reset. */
async function scriptsRun(): Promise<number> {
  const stats = await admin.info('commandstats');
  const calls = (name: string) => Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
  return calls('evalsha') + calls('eval');
}

/** Admits `count` requests reserving 1000 tokens and 100 nano-dollars each: their tickets. */
async function admitMany(limiter: Limiter, limits: readonly AppliedLimit[], count: number) {
  const tickets = [];
  for (let i = 0; i < count; i++)
    tickets.push(await limiter.admit(limits, { countsRequest: true, tokens: 1000, nanos: 100 }));
  return tickets;
}

describe('settlements sent in batches', () => {
  it('hold settlements for the next reservation, which carries them all in one write, each applied once', async () => {
    const runner = await openRunner({ batchDelayMs: 1000 });
    const limiter = new Limiter({ store: new RedisCounterStore({ run: runner.run }) });
    const limits = limitOfEveryKind();
    const tickets = await admitMany(limiter, limits, 5);
    await admin.config('RESETSTAT');
    // Real use above the reservation: a settlement applied twice would count its difference twice.
    const settled = tickets.map((ticket) => ticket.settle({ tokens: 10, nanos: 150 }));
    await new Promise((r) => setTimeout(r, 150));
    // Held: nothing reached the server yet.
    expect(await scriptsRun()).toBe(0);
    expect(await statusOf(limits)).toMatchObject({ tokensLastMinute: 5000, nanosToday: 500 });
    await admin.config('RESETSTAT');
    // The next reservation sends them, before itself, in the same write.
    await limiter.admit(limits, { countsRequest: true, tokens: 1000, nanos: 100 });
    await Promise.all(settled);
    // Five settlements and the reservation, each once.
    expect(await scriptsRun()).toBe(6);
    expect(await statusOf(limits)).toEqual({
      requestsLastMinute: 6,
      tokensLastMinute: 5 * 10 + 1000,
      nanosToday: 5 * 150 + 100,
      nanosThisMonth: 5 * 150 + 100,
    });
  });

  it('send held settlements after batchDelayMs when no reservation comes', async () => {
    const runner = await openRunner({ batchDelayMs: 30 });
    const limiter = new Limiter({ store: new RedisCounterStore({ run: runner.run }) });
    const limits = limitOfEveryKind();
    const tickets = await admitMany(limiter, limits, 3);
    const started = Date.now();
    await Promise.all(tickets.map((ticket) => ticket.settle({ tokens: 1, nanos: 1 })));
    expect(Date.now() - started).toBeGreaterThanOrEqual(25);
    expect(await statusOf(limits)).toMatchObject({ requestsLastMinute: 3, tokensLastMinute: 3, nanosToday: 3 });
  });

  it('send a full batch at once', async () => {
    const runner = await openRunner({ batchDelayMs: 1000, batchSize: 4 });
    const limiter = new Limiter({ store: new RedisCounterStore({ run: runner.run }) });
    const limits = limitOfEveryKind();
    const tickets = await admitMany(limiter, limits, 9);
    const started = Date.now();
    await Promise.all(tickets.slice(0, 8).map((ticket) => ticket.settle({ tokens: 1, nanos: 1 })));
    expect(Date.now() - started).toBeLessThan(900);
    void tickets[8]!.settle({ tokens: 1, nanos: 1 });
    await new Promise((r) => setTimeout(r, 100));
    // Eight landed in two full batches; the ninth is still held.
    expect(await statusOf(limits)).toMatchObject({ tokensLastMinute: 8 + 1000, nanosToday: 8 + 100 });
  });

  it('send every held settlement when the gateway shuts down, and wait for their answers', async () => {
    const runner = await openRunner({ batchDelayMs: 1000 });
    const errors: unknown[] = [];
    const limiter = new Limiter({
      store: new RedisCounterStore({ run: runner.run }),
      onSettleError: (error) => errors.push(error),
    });
    const limits = limitOfEveryKind();
    const tickets = await admitMany(limiter, limits, 4);
    const settled = Promise.all(tickets.map((ticket) => ticket.settle({ tokens: 7, nanos: 3 })));
    await runner.close();
    await settled;
    expect(errors).toEqual([]);
    expect(await statusOf(limits)).toMatchObject({ requestsLastMinute: 4, tokensLastMinute: 28, nanosToday: 12 });
    // After closing, a deferrable call fails at once instead of being held.
    const late = Date.now();
    await expect(
      runner.run(LIMIT_SCRIPTS.status, ['k1', 'k2', 'k3', 'k4', 'k5', 'k6'], [late], { deferrable: true }),
    ).rejects.toThrow();
    expect(Date.now() - late).toBeLessThan(500);
  });

  it('report every settlement of a batch whose answers are lost as failed, once each, within the timeout', async () => {
    const runner = await openRunner({ batchDelayMs: 1000, timeoutMs: 100 });
    const errors: unknown[] = [];
    const limiter = new Limiter({
      store: new RedisCounterStore({ run: runner.run }),
      onSettleError: (error) => errors.push(error),
    });
    const limits = limitOfEveryKind();
    const tickets = await admitMany(limiter, limits, 5);
    const settled = Promise.all(tickets.map((ticket) => ticket.settle({ tokens: 1, nanos: 1 })));
    // The server stops answering scripts for 600 ms: the batch goes out, its answers do not come back in time.
    await admin.call('CLIENT', 'PAUSE', '600', 'WRITE');
    try {
      const started = Date.now();
      await runner.close();
      await settled;
      expect(Date.now() - started).toBeLessThan(500);
      expect(errors).toHaveLength(5);
      expect(errors.every((e) => /timed out/i.test(String((e as Error).message)))).toBe(true);
    } finally {
      await admin.call('CLIENT', 'UNPAUSE');
    }
  });

  it('report held settlements as failed, once each and at once, when Redis is gone', async () => {
    const own = await startRedis();
    try {
      const runner = redisScriptRunner({ url: own.url, timeoutMs: 100, batchDelayMs: 1000 });
      opened.push(runner);
      await runner.ready();
      const errors: unknown[] = [];
      const limiter = new Limiter({
        store: new RedisCounterStore({ run: runner.run }),
        onSettleError: (error) => errors.push(error),
      });
      // Admitted while Redis is up. The runner's 100 ms timeout is for the shutdown below; a loaded
      // machine can take longer than that to answer an admission, which is then tried again (at
      // most 5 times: what it reserved does not matter here).
      const tickets = [];
      for (let i = 0; i < 3; i++) {
        for (let attempt = 1; ; attempt++) {
          try {
            tickets.push(await limiter.admit(limitOfEveryKind(), { countsRequest: true, tokens: 1000, nanos: 100 }));
            break;
          } catch (error) {
            if (!(error instanceof LimitsUnavailableError) || attempt === 5) throw error;
          }
        }
      }
      const settled = Promise.all(tickets.map((ticket) => ticket.settle({ tokens: 1, nanos: 1 })));
      await own.stop();
      await new Promise((r) => setTimeout(r, 50));
      const started = Date.now();
      await runner.close();
      await settled;
      expect(Date.now() - started).toBeLessThan(500);
      expect(errors).toHaveLength(3);
    } finally {
      await own.stop();
    }
  });
});

describe('redisScriptRunner options', () => {
  it('refuse batch settings that are not whole numbers in range, saying what to write', () => {
    expect(() => redisScriptRunner({ url: redis.url, batchDelayMs: -1 })).toThrow(
      'batchDelayMs must be a whole number from 0 to 1000, such as 5.',
    );
    expect(() => redisScriptRunner({ url: redis.url, batchSize: 0 })).toThrow(
      'batchSize must be a whole number from 1 to 10000, such as 128.',
    );
    expect(() => redisScriptRunner({ url: '' })).toThrow('redisScriptRunner needs { url }');
  });

  it('send every call at once with batchDelayMs 0', async () => {
    const runner = await openRunner({ batchDelayMs: 0 });
    const limiter = new Limiter({ store: new RedisCounterStore({ run: runner.run }) });
    const limits = limitOfEveryKind();
    const [ticket] = await admitMany(limiter, limits, 1);
    const started = Date.now();
    await ticket!.settle({ tokens: 2, nanos: 2 });
    expect(Date.now() - started).toBeLessThan(200);
    expect(await statusOf(limits)).toMatchObject({ tokensLastMinute: 2, nanosToday: 2 });
  });
});

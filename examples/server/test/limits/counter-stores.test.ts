import { randomUUID } from 'node:crypto';
import {
  LimitSet,
  Limiter,
  LimitsUnavailableError,
  MemoryCounterStore,
  RedisCounterStore,
  type CounterAsk,
  type LimitCounterStore,
} from '@gw/access';
import { checkInterleavings } from '../../../../packages/access/test/limits-interleavings';
import { redisScriptRunner, type RedisScriptRunnerHandle } from '../../src/limits/redis-runner';
import { startRedis, type RunningRedis } from '../cache/cache-support';

jest.setTimeout(60_000);

let redis: RunningRedis;
let runner: RedisScriptRunnerHandle;

beforeAll(async () => {
  redis = await startRedis();
  runner = redisScriptRunner({ url: redis.url, timeoutMs: 500 });
  await runner.ready();
});

afterAll(async () => {
  await runner?.close();
  await redis?.stop();
});

const ask = (counterId: string, caps: Partial<CounterAsk> = {}): CounterAsk => ({
  counterId,
  requestsPerMinute: undefined,
  tokensPerMinute: undefined,
  nanosPerDay: undefined,
  nanosPerMonth: undefined,
  ...caps,
});

const stores: [string, () => LimitCounterStore][] = [
  ['memory', () => new MemoryCounterStore()],
  ['Redis', () => new RedisCounterStore({ run: runner.run })],
];

describe.each(stores)('%s counters', (_name, makeStore) => {
  const T = Date.UTC(2026, 5, 30, 23, 59, 0);
  const reserve = (store: LimitCounterStore, counters: CounterAsk[], now: number, tokens = 0, nanos = 0) =>
    store.reserve({ id: randomUUID(), now, counters, countsRequest: true, tokens, nanos });

  it('count exactly requests_per_minute in any 60 s, and say when the oldest leaves', async () => {
    const store = makeStore();
    const c = ask(`rpm-${randomUUID()}`, { requestsPerMinute: 2 });
    expect((await reserve(store, [c], T)).granted).toBe(true);
    expect(await reserve(store, [c], T + 20_000)).toMatchObject({
      granted: true,
      figures: { requests: { limit: 2, remaining: 0, resetMs: 40_000 } },
    });
    expect(await reserve(store, [c], T + 30_000)).toMatchObject({
      granted: false,
      kind: 'requests',
      retryAfterMs: 30_000,
    });
    // The first request leaves the window at T + 60 s.
    expect((await reserve(store, [c], T + 60_000)).granted).toBe(true);
    expect((await store.status(c, T + 60_000)).requestsLastMinute).toBe(2);
  });

  it('count a reservation of several requests (a batch of tools/call) as that many, all or none', async () => {
    const store = makeStore();
    const c = ask(`many-${randomUUID()}`, { requestsPerMinute: 5 });
    const many = (requests: number, now: number) =>
      store.reserve({ id: randomUUID(), now, counters: [c], countsRequest: true, requests, tokens: 0, nanos: 0 });
    expect(await many(3, T)).toMatchObject({ granted: true, figures: { requests: { limit: 5, remaining: 2 } } });
    // Three more would pass the cap: refused whole, nothing counted.
    expect(await many(3, T + 1)).toMatchObject({ granted: false, kind: 'requests' });
    expect((await store.status(c, T + 2)).requestsLastMinute).toBe(3);
    expect((await many(2, T + 3)).granted).toBe(true);
    expect((await store.status(c, T + 4)).requestsLastMinute).toBe(5);
    // Not counting requests at all, whatever `requests` says.
    expect(
      (
        await store.reserve({
          id: randomUUID(),
          now: T + 5,
          counters: [c],
          countsRequest: false,
          requests: 9,
          tokens: 0,
          nanos: 0,
        })
      ).granted,
    ).toBe(true);
    expect((await store.status(c, T + 6)).requestsLastMinute).toBe(5);
  });

  it('count on every applicable set only when all allow it', async () => {
    const store = makeStore();
    const wide = ask(`wide-${randomUUID()}`, { requestsPerMinute: 10 });
    const narrow = ask(`narrow-${randomUUID()}`, { requestsPerMinute: 1 });
    expect((await reserve(store, [wide, narrow], T)).granted).toBe(true);
    expect(await reserve(store, [wide, narrow], T + 1)).toMatchObject({ granted: false, counterId: narrow.counterId });
    // The refused request was not counted on the set that allowed it.
    expect((await store.status(wide, T + 2)).requestsLastMinute).toBe(1);
  });

  it('reserve tokens and cost, settle them to the real figures, and keep calendar budgets per UTC day and month', async () => {
    const store = makeStore();
    const c = ask(`cost-${randomUUID()}`, { tokensPerMinute: 1000, nanosPerDay: 100, nanosPerMonth: 150 });
    const first = await reserve(store, [c], T, 600, 80);
    expect(first).toMatchObject({ granted: true, figures: { tokens: { limit: 1000, remaining: 400 } } });
    expect(await reserve(store, [c], T + 1, 600, 10)).toMatchObject({ granted: false, kind: 'tokens' });
    expect(await reserve(store, [c], T + 1, 10, 30)).toMatchObject({
      granted: false,
      kind: 'cost_per_day',
      retryAfterMs: 60_000 - 1,
    });
    if (!first.granted) throw new Error('not granted');
    await store.settle(first.reservation, { tokens: 100, nanos: 20 });
    expect(await store.status(c, T + 2)).toEqual({
      requestsLastMinute: 0,
      tokensLastMinute: 100,
      nanosToday: 20,
      nanosThisMonth: 20,
    });
    // The next UTC day (and month) starts afresh, but the month's budget is only reset on July 1st... which it is.
    const nextDay = T + 60_000;
    expect((await reserve(store, [c], nextDay, 10, 100)).granted).toBe(true);
    expect(await store.status(c, nextDay)).toMatchObject({ nanosToday: 100, nanosThisMonth: 100 });
  });

  it('never let a settlement take a counter below zero', async () => {
    const store = makeStore();
    const c = ask(`floor-${randomUUID()}`, { tokensPerMinute: 1000, nanosPerDay: 1000 });
    const granted = await reserve(store, [c], T, 10, 10);
    if (!granted.granted) throw new Error('not granted');
    await store.settle({ ...granted.reservation, nanos: 500 }, { tokens: 0, nanos: 0 });
    expect(await store.status(c, T)).toMatchObject({ tokensLastMinute: 0, nanosToday: 0 });
  });

  it('hold over random interleavings of reserve and settle (never negative, no leak, equal to the records)', async () => {
    const store = makeStore();
    await checkInterleavings(() => store, 25);
  });
});

describe('Redis counters under concurrency', () => {
  it('let exactly the cap through among 200 concurrent reservations', async () => {
    const store = new RedisCounterStore({ run: runner.run });
    const c = ask(`race-${randomUUID()}`, { requestsPerMinute: 37 });
    const now = Date.now();
    const outcomes = await Promise.all(
      Array.from({ length: 200 }, () =>
        store.reserve({ id: randomUUID(), now, counters: [c], countsRequest: true, tokens: 0, nanos: 0 }),
      ),
    );
    expect(outcomes.filter((o) => o.granted)).toHaveLength(37);
  });
});

describe('Redis counters when an answer is lost', () => {
  it('take back a reservation the script applied but whose answer timed out: the request refused leaves nothing counted', async () => {
    // The script runs on the server; its answer is lost on the way back (as a timeout is).
    const losing = new RedisCounterStore({
      run: async (script, keys, args) => {
        const answer = await runner.run(script, keys, args);
        if (script.name === 'gwLimitReserve') throw new Error('no answer from Redis within 100 ms');
        return answer;
      },
    });
    const limits = new LimitSet([
      {
        slug: `lost-${randomUUID()}`,
        subjects: { users: ['u-1'] },
        requests_per_minute: 5,
        tokens_per_minute: 1000,
        cost_usd_per_day: 1,
        cost_usd_per_month: 1,
      },
    ]).applicable({ user: 'u-1' });
    const limiter = new Limiter({ store: losing });
    await expect(limiter.admit(limits, { countsRequest: true, tokens: 100, nanos: 5000 })).rejects.toBeInstanceOf(
      LimitsUnavailableError,
    );
    const counter = { ...limits[0]!.limit, counterId: limits[0]!.counterId };
    const store = new RedisCounterStore({ run: runner.run });
    await within(async () => {
      const status = await store.status(counter, Date.now());
      return status.requestsLastMinute === 0 && status.tokensLastMinute === 0 && status.nanosToday === 0;
    });
    expect(await store.status(counter, Date.now())).toEqual({
      requestsLastMinute: 0,
      tokensLastMinute: 0,
      nanosToday: 0,
      nanosThisMonth: 0,
    });
  });

  it('take back every request of a reservation of several', async () => {
    const store = new RedisCounterStore({ run: runner.run });
    const c = ask(`release-many-${randomUUID()}`, { requestsPerMinute: 10 });
    const now = Date.now();
    const request = { id: randomUUID(), now, counters: [c], countsRequest: true, requests: 4, tokens: 0, nanos: 0 };
    await store.reserve(request);
    expect((await store.status(c, now)).requestsLastMinute).toBe(4);
    await store.release(request);
    expect((await store.status(c, now)).requestsLastMinute).toBe(0);
  });

  it('take a reservation back once, and never one that was not made or was settled', async () => {
    const store = new RedisCounterStore({ run: runner.run });
    const c = ask(`release-${randomUUID()}`, { requestsPerMinute: 5, tokensPerMinute: 1000, nanosPerDay: 1000 });
    const now = Date.now();
    const request = { id: randomUUID(), now, counters: [c], countsRequest: true, tokens: 100, nanos: 50 };
    const kept = await store.reserve({ ...request, id: randomUUID() });
    await store.reserve(request);
    await store.release(request);
    await store.release(request);
    await store.release({ ...request, id: randomUUID() });
    expect(await store.status(c, now)).toMatchObject({ requestsLastMinute: 1, tokensLastMinute: 100, nanosToday: 50 });
    if (!kept.granted) throw new Error('not granted');
    await store.settle(kept.reservation, { tokens: 10, nanos: 5 });
    await store.release({ ...request, id: kept.reservation.id });
    expect(await store.status(c, now)).toMatchObject({ requestsLastMinute: 1, tokensLastMinute: 10, nanosToday: 5 });
  });
});

async function within(check: () => Promise<boolean>, ms = 2000): Promise<void> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > ms) throw new Error(`not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

import {
  ANTHROPIC_PRICES_TAKEN_ON,
  BudgetExceededError,
  LimitSet,
  Limiter,
  LimitsUnavailableError,
  MemoryCounterStore,
  RateLimitedError,
  costNanos,
  estimateInputTokens,
  priceOf,
  rateLimitHeaders,
  requestCostUsd,
  resetDuration,
  worstCaseNanos,
  type AppliedLimit,
  type LimitCounterStore,
} from '../src';
import { checkInterleavings } from './limits-interleavings';

describe('prices', () => {
  it('are bundled for Anthropic models with the date they were taken, dated ids finding their base id', () => {
    expect(ANTHROPIC_PRICES_TAKEN_ON).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(priceOf('claude-sonnet-4-5-20250929')).toEqual({ input: 3, output: 15, cacheWrite: 3.75, cacheRead: 0.3 });
    expect(priceOf('claude-3-5-haiku-latest')?.input).toBe(0.8);
    expect(priceOf('gpt-4o')).toBeUndefined();
  });

  it("take a provider's pricing before the bundled table", () => {
    const pricing = { 'claude-sonnet-4-5': { input: 1, output: 2 } };
    expect(priceOf('claude-sonnet-4-5-20250929', pricing)).toEqual({ input: 1, output: 2 });
    expect(priceOf('claude-haiku-4-5', pricing)?.output).toBe(5);
    // An inherited name is not a price.
    expect(priceOf('constructor', {})).toBeUndefined();
  });

  it('cost each kind of token at its price, in whole nano-dollars', () => {
    const price = { input: 3, output: 15, cacheWrite: 3.75, cacheRead: 0.3 };
    // 1000 input at $3/M = $0.003; 100 output at $15/M = $0.0015; 200 written = $0.00075; 1000 read = $0.0003.
    expect(
      costNanos({ inputTokens: 1000, outputTokens: 100, cacheCreationTokens: 200, cacheReadTokens: 1000 }, price),
    ).toBe(3_000_000 + 1_500_000 + 750_000 + 300_000);
    expect(requestCostUsd({ inputTokens: 1000, outputTokens: 100 }, 'claude-sonnet-4-5')).toBeCloseTo(0.0045, 12);
    expect(requestCostUsd(undefined, 'claude-sonnet-4-5')).toBe(0);
    expect(requestCostUsd({ inputTokens: 5 }, 'unknown-model')).toBeNull();
  });

  it('reserve max_tokens at the output price plus the input at the highest input price', () => {
    expect(worstCaseNanos(1000, 100, priceOf('claude-sonnet-4-5'))).toBe(3_750_000 + 1_500_000);
    // Unknown price: the most expensive bundled model.
    expect(worstCaseNanos(0, 1000, undefined)).toBe(75_000_000);
    expect(estimateInputTokens(4001)).toBe(1001);
    expect(estimateInputTokens(1e12)).toBe(1_000_000);
  });
});

describe('limit records', () => {
  it('match callers by user, group and API key exactly, as policies do', () => {
    const set = new LimitSet([
      { slug: 'team', subjects: { groups: ['support'] }, per: 'shared', requests_per_minute: 5 },
      { slug: 'each', subjects: { users: ['u-1'], apiKeys: ['key-9'] }, tokens_per_minute: 10 },
    ]);
    expect(set.applicable({ user: 'u-1', groups: ['support'] }).map((a) => a.counterId)).toEqual([
      'team',
      'each:user:u-1',
    ]);
    expect(set.applicable({ apiKey: 'key-9' }).map((a) => a.counterId)).toEqual(['each:key:key-9']);
    expect(set.applicable({ user: 'u-*', groups: ['Support'] })).toEqual([]);
  });

  it('refuse a field that is not valid, naming it', () => {
    expect(() => new LimitSet([{ slug: 'a', subjects: {}, requests_per_minute: 1.5 }])).toThrow(
      /limits\[a\]\.requests_per_minute/,
    );
    expect(() => new LimitSet([{ slug: 'a', subjects: {}, per: 'all' as 'each' }])).toThrow(
      /per must be "each" or "shared"/,
    );
    expect(() => new LimitSet([{ slug: 'a', subjects: { teams: [] } as never }])).toThrow(/teams/);
    expect(() => new LimitSet([{ slug: 'a', subjects: {}, cost_usd_per_day: -1 }])).toThrow(/cost_usd_per_day/);
    expect(
      () =>
        new LimitSet([
          { slug: 'a', subjects: {} },
          { slug: 'a', subjects: {} },
        ]),
    ).toThrow(/two limits/);
  });
});

function applied(rules: ConstructorParameters<typeof LimitSet>[0]): readonly AppliedLimit[] {
  return new LimitSet(rules).applicable({ user: 'u-1' });
}

describe('Limiter', () => {
  it('lets exactly requests_per_minute requests through in a minute, with OpenAI rate headers', async () => {
    let now = Date.UTC(2026, 0, 1, 12, 0, 30);
    const limiter = new Limiter({ store: new MemoryCounterStore(), now: () => now });
    const limits = applied([{ slug: 'rpm', subjects: { users: ['u-1'] }, requests_per_minute: 3 }]);
    const first = await limiter.admit(limits, { countsRequest: true, tokens: 0, nanos: 0 });
    expect(first.headers).toEqual({
      'x-ratelimit-limit-requests': '3',
      'x-ratelimit-remaining-requests': '2',
      'x-ratelimit-reset-requests': '0s',
    });
    now += 10_000;
    await limiter.admit(limits, { countsRequest: true, tokens: 0, nanos: 0 });
    await limiter.admit(limits, { countsRequest: true, tokens: 0, nanos: 0 });
    const refusal = await limiter.admit(limits, { countsRequest: true, tokens: 0, nanos: 0 }).catch((e: unknown) => e);
    expect(refusal).toBeInstanceOf(RateLimitedError);
    expect(refusal).toMatchObject({ status: 429, code: 'rate_limited' });
    // The first request leaves the window 50 s from now.
    expect((refusal as RateLimitedError).headers).toMatchObject({
      'retry-after': '50',
      'x-ratelimit-remaining-requests': '0',
      'x-ratelimit-reset-requests': '50s',
    });
    now += 50_000;
    await expect(limiter.admit(limits, { countsRequest: true, tokens: 0, nanos: 0 })).resolves.toBeDefined();
  });

  it('refuses a request whose largest cost would pass the budget, and audits the exhaustion', async () => {
    const exhausted: string[] = [];
    const limiter = new Limiter({
      store: new MemoryCounterStore(),
      onBudgetExhausted: (e) => exhausted.push(`${e.counterId} ${e.kind}`),
    });
    const limits = applied([{ slug: 'budget', subjects: { users: ['u-1'] }, cost_usd_per_day: 0.01 }]);
    const ticket = await limiter.admit(limits, { countsRequest: true, tokens: 10, nanos: 6_000_000 });
    const refusal = await limiter
      .admit(limits, { countsRequest: true, tokens: 10, nanos: 6_000_000 })
      .catch((e: unknown) => e);
    expect(refusal).toBeInstanceOf(BudgetExceededError);
    expect(refusal).toMatchObject({ status: 429, code: 'budget_exceeded' });
    expect(Number((refusal as BudgetExceededError).headers['retry-after'])).toBeGreaterThan(0);
    expect(exhausted).toEqual(['budget:user:u-1 cost_per_day']);
    // Settled to its real cost, the first request leaves room for the second.
    await ticket.settle({ tokens: 5, nanos: 1_000_000 });
    await expect(limiter.admit(limits, { countsRequest: true, tokens: 10, nanos: 6_000_000 })).resolves.toBeDefined();
  });

  it('denies (503 limits_unavailable) or allows, as configured, when the store fails', async () => {
    const failing: LimitCounterStore = {
      reserve: () => Promise.reject(new Error('down')),
      settle: () => Promise.reject(new Error('down')),
      status: () => Promise.reject(new Error('down')),
    };
    const limits = applied([{ slug: 'x', subjects: { users: ['u-1'] }, requests_per_minute: 1 }]);
    await expect(
      new Limiter({ store: failing }).admit(limits, { countsRequest: true, tokens: 0, nanos: 0 }),
    ).rejects.toBeInstanceOf(LimitsUnavailableError);
    let allowed = 0;
    const open = new Limiter({ store: failing, onStoreUnavailable: 'allow', onAllowedUnavailable: () => allowed++ });
    await expect(open.admit(limits, { countsRequest: true, tokens: 0, nanos: 0 })).resolves.toBeDefined();
    expect(allowed).toBe(1);
    expect(() => new Limiter({ store: failing, onStoreUnavailable: 'open' as 'allow' })).toThrow(/"deny" or "allow"/);
  });

  it('writes reset durations as OpenAI does', () => {
    expect(resetDuration(0)).toBe('0s');
    expect(resetDuration(20)).toBe('20ms');
    expect(resetDuration(6_000)).toBe('6s');
    expect(resetDuration(360_000)).toBe('6m0s');
    expect(rateLimitHeaders({ tokens: { limit: 10, remaining: -3, resetMs: 1500 } })).toEqual({
      'x-ratelimit-limit-tokens': '10',
      'x-ratelimit-remaining-tokens': '0',
      'x-ratelimit-reset-tokens': '2s',
    });
  });
});

describe('reserve and settle over random interleavings (memory counters)', () => {
  it('never go negative, never leak a reservation, and equal the sum of the records', async () => {
    const store = new MemoryCounterStore();
    await checkInterleavings(() => store, 200);
  });
});

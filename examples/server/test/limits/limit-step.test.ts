import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import {
  LimitSet,
  Limiter,
  MemoryCounterStore,
  priceOf,
  type LimitRule,
  type PricingTable,
  type ReserveOutcome,
  type ReserveRequest,
} from '@gw/access';
import { limitStep, priceMemo, type LimitsView } from '../../src/limits/limit-step';
import type { RequestRecord } from '../../src/observability/request-record';

/** A request and its response, as node:http makes them (nothing is sent: the step only reads and sets headers). */
function exchange(): { req: IncomingMessage; res: ServerResponse } {
  const req = new IncomingMessage(new Socket());
  return { req, res: new ServerResponse(req) };
}

/** A finished request's record: `claude-haiku-4-5` at `bench`, 10 input and 20 output tokens. */
function record(overrides: Partial<RequestRecord> = {}): RequestRecord {
  return {
    time: new Date().toISOString(),
    requestId: 'r',
    traceId: 't',
    route: 'messages',
    method: 'POST',
    path: '/v1/messages',
    userId: 'u1',
    keyHint: null,
    provider: 'bench',
    modelRequested: 'claude-haiku-4-5',
    modelAnswered: 'claude-haiku-4-5-20251001',
    mcpMethod: null,
    mcpTool: null,
    status: 200,
    errorCode: null,
    durationMs: 1,
    ttfbMs: 1,
    inputTokens: 10,
    outputTokens: 20,
    cacheCreationTokens: null,
    cacheReadTokens: null,
    cacheStatus: null,
    metadata: null,
    ...overrides,
  };
}

const CALL = {
  route: 'messages',
  provider: 'bench',
  model: 'claude-haiku-4-5',
  maxTokens: 100,
  bodyBytes: 400,
} as const;
/** The call's largest use: 100 input tokens (400 bytes / 4) and max_tokens. */
const LARGEST_TOKENS = 200;

/** A counter store in memory whose reservations wait until `letReservationsThrough` is called. */
class HeldStore extends MemoryCounterStore {
  private waiting: (() => void)[] = [];
  override async reserve(request: ReserveRequest): Promise<ReserveOutcome> {
    await new Promise<void>((resolve) => this.waiting.push(resolve));
    return super.reserve(request);
  }
  letReservationsThrough(): void {
    for (const resolve of this.waiting.splice(0)) resolve();
  }
}

function view(rules: LimitRule[], pricing: Record<string, PricingTable> = {}): LimitsView {
  return { limits: new LimitSet(rules), pricing: new Map(Object.entries(pricing)) };
}

const TOKENS_LIMIT: LimitRule = { slug: 'tpm', subjects: { users: ['u1'] }, tokens_per_minute: 1_000_000 };

describe('the limits step', () => {
  it('without any limit, still sets cost_usd from the bundled prices, the provider pricing, or the largest use of an answer cut short', async () => {
    const store = new MemoryCounterStore();
    let current = view([]);
    const step = limitStep({ view: () => current, limiter: new Limiter({ store }), callerOf: () => ({ user: 'u1' }) });
    // Bundled price of claude-haiku-4-5: $1 input, $5 output per million tokens.
    const whole = exchange();
    await step.admitModelCall(whole.req, whole.res, CALL);
    const done = record();
    step.onRecord(whole.req, done, true);
    expect(done.costUsd).toBeCloseTo((10 * 1 + 20 * 5) / 1e6, 15);
    // An answer not sent whole counts at its largest use (fail closed), limits or not.
    const cut = exchange();
    await step.admitModelCall(cut.req, cut.res, CALL);
    const abandoned = record({ inputTokens: null, outputTokens: null });
    step.onRecord(cut.req, abandoned, false);
    expect(abandoned.costUsd).toBeCloseTo((100 * 1.25 + 100 * 5) / 1e6, 15);
    // A provider's own pricing replaces the bundled price (exact id, then base id), for every view.
    current = view([], { bench: { 'claude-haiku-4-5': { input: 2, output: 2 } } });
    const priced = exchange();
    await step.admitModelCall(priced.req, priced.res, CALL);
    const own = record();
    step.onRecord(priced.req, own, true);
    expect(own.costUsd).toBeCloseTo(60 / 1e6, 15);
    // A model of unknown price: recorded as null.
    const unknown = record({ modelRequested: 'mystery', modelAnswered: null });
    step.onRecord(exchange().req, unknown, true);
    expect(unknown.costUsd).toBeNull();
  });

  it('settles a reservation to the record, once', async () => {
    const store = new MemoryCounterStore();
    const current = view([TOKENS_LIMIT]);
    const step = limitStep({ view: () => current, limiter: new Limiter({ store }), callerOf: () => ({ user: 'u1' }) });
    const { req, res } = exchange();
    await step.admitModelCall(req, res, CALL);
    const { limit, counterId } = current.limits.applicable({ user: 'u1' })[0]!;
    const used = async () => (await store.status({ ...limit, counterId }, Date.now())).tokensLastMinute;
    expect(await used()).toBe(LARGEST_TOKENS);
    step.onRecord(req, record(), true);
    await new Promise((resolve) => setImmediate(resolve));
    expect(await used()).toBe(30);
    // Once: a second record (there is none) changes nothing.
    step.onRecord(req, record({ outputTokens: 1000 }), true);
    await new Promise((resolve) => setImmediate(resolve));
    expect(await used()).toBe(30);
  });

  it('settles at once a reservation granted after the record was made (the client went away meanwhile)', async () => {
    const store = new HeldStore();
    const current = view([TOKENS_LIMIT]);
    const step = limitStep({ view: () => current, limiter: new Limiter({ store }), callerOf: () => ({ user: 'u1' }) });
    const { limit, counterId } = current.limits.applicable({ user: 'u1' })[0]!;
    const used = async () => (await store.status({ ...limit, counterId }, Date.now())).tokensLastMinute;
    const { req, res } = exchange();
    const admitted = step.admitModelCall(req, res, CALL);
    await new Promise((resolve) => setImmediate(resolve));
    // The record is made while the reservation is under way: 30 tokens used.
    step.onRecord(req, record(), true);
    store.letReservationsThrough();
    await admitted;
    await new Promise((resolve) => setImmediate(resolve));
    expect(await used()).toBe(30);
    // Headers of a reservation settled at once are not set.
    expect(res.getHeader('x-ratelimit-limit-tokens')).toBeUndefined();
  });
});

describe('the prices the limits step remembers', () => {
  it('answers as priceOf does, remembers at most 256 ids a table and no id longer than 256 characters', () => {
    const price = priceMemo();
    const table = { 'house-model': { input: 1, output: 2 } } as PricingTable;
    for (const model of ['claude-sonnet-4-5', 'house-model', 'no-such-model']) {
      expect(price(model, undefined)).toEqual(priceOf(model, undefined));
      expect(price(model, table)).toEqual(priceOf(model, table));
      expect(price(model, table)).toEqual(priceOf(model, table));
    }
    expect(price.remembered(table)).toBe(3);
    price(`claude-${'x'.repeat(300)}`, table);
    expect(price.remembered(table)).toBe(3);
    for (let i = 0; i < 300; i++) price(`caller-model-${i}`, table);
    expect(price.remembered(table)).toBeLessThanOrEqual(256);
    expect(price.remembered(table)).toBeGreaterThan(0);
    // Each table remembers its own answers.
    expect(price.remembered(undefined)).toBe(3);
  });
});

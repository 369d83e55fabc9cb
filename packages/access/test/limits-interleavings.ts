import fc from 'fast-check';
import {
  LimitSet,
  Limiter,
  NANOS_PER_USD,
  costNanos,
  priceOf,
  worstCaseNanos,
  type LimitCounterStore,
  type LimitTicket,
} from '../src';

/** How one request ends, as the gateway meets it. */
export type Ending =
  'completed' | 'stream_ended_early' | 'client_aborted' | 'cache_hit' | 'retried' | 'refused_upstream';

/** One request of a run: its `max_tokens`, its input estimate, and how it ends. */
export interface Step {
  maxTokens: number;
  inputTokens: number;
  ending: Ending;
  /** When its ending happens, relative to the other requests: requests settle in this order. */
  settleOrder: number;
}

export const steps = fc.array(
  fc.record({
    maxTokens: fc.integer({ min: 1, max: 4000 }),
    inputTokens: fc.integer({ min: 0, max: 3000 }),
    ending: fc.constantFrom<Ending>(
      'completed',
      'stream_ended_early',
      'client_aborted',
      'cache_hit',
      'retried',
      'refused_upstream',
    ),
    settleOrder: fc.nat(1000),
  }),
  { minLength: 1, maxLength: 40 },
);

const MODEL = 'claude-sonnet-4-5';
const PRICE = priceOf(MODEL);

/** The usage a request reports for its ending (never more output than `max_tokens`). */
function usageOf(step: Step) {
  switch (step.ending) {
    case 'completed':
    case 'retried':
      return { inputTokens: step.inputTokens, outputTokens: step.maxTokens, cacheReadTokens: 3 };
    case 'stream_ended_early':
      return { inputTokens: step.inputTokens, outputTokens: Math.floor(step.maxTokens / 3) };
    default:
      return undefined;
  }
}

/**
 * Runs `runs` random interleavings of reservations and settlements (requests admitted together,
 * then ended in a random order: completed, streams ended early, clients aborting, cache hits,
 * retries that settle twice, upstream refusals) on a fresh counter set of `store` each, and
 * checks after every step that no counter is negative, and at the end that the day's spend equals
 * the sum of the records' `cost_usd` exactly (no reservation leaked, none settled twice) and that
 * the minute's tokens equal the records' tokens.
 */
export async function checkInterleavings(store: () => LimitCounterStore, runs: number): Promise<void> {
  let run = 0;
  await fc.assert(
    fc.asyncProperty(steps, async (requests) => {
      const counters = store();
      const slug = `prop-${process.pid}-${run++}-${Date.now()}`;
      const limits = new LimitSet([
        { slug, subjects: { users: ['u-1'] }, per: 'each', cost_usd_per_day: 1_000, tokens_per_minute: 100_000_000 },
      ]);
      const applied = limits.applicable({ user: 'u-1' });
      const limiter = new Limiter({ store: counters });
      const now = Date.now();
      const counter = {
        ...(applied[0] as (typeof applied)[number]).limit,
        counterId: (applied[0] as (typeof applied)[number]).counterId,
      };
      const assertNotNegative = async () => {
        const status = await counters.status(counter, now);
        if (status.nanosToday < 0 || status.tokensLastMinute < 0 || status.requestsLastMinute < 0)
          throw new Error(`a counter went negative: ${JSON.stringify(status)}`);
      };
      const tickets: { step: Step; ticket: LimitTicket }[] = [];
      for (const step of requests) {
        const ticket = await limiter.admit(applied, {
          countsRequest: true,
          tokens: step.inputTokens + step.maxTokens,
          nanos: worstCaseNanos(step.inputTokens, step.maxTokens, PRICE),
        });
        tickets.push({ step, ticket });
        await assertNotNegative();
      }
      let recordsNanos = 0;
      let recordsTokens = 0;
      const order = [...tickets].sort((a, b) => a.step.settleOrder - b.step.settleOrder);
      for (const { step, ticket } of order) {
        const usage = usageOf(step);
        const nanos = usage === undefined ? 0 : costNanos(usage, PRICE!);
        const tokens =
          usage === undefined ? 0 : (usage.inputTokens ?? 0) + (usage.outputTokens ?? 0) + (usage.cacheReadTokens ?? 0);
        // The record's cost_usd, as the gateway writes it.
        recordsNanos += Math.round((nanos / NANOS_PER_USD) * NANOS_PER_USD);
        recordsTokens += tokens;
        await ticket.settle({ tokens, nanos });
        // A retry, or a client that goes away after the end: a second settlement changes nothing.
        if (step.ending === 'retried' || step.ending === 'client_aborted')
          await ticket.settle({ tokens: tokens + 7, nanos: nanos + 7 });
        await assertNotNegative();
      }
      const status = await counters.status(counter, now);
      if (status.nanosToday !== recordsNanos)
        throw new Error(`the day's spend is ${status.nanosToday} nano-USD, the records sum to ${recordsNanos}`);
      if (status.tokensLastMinute !== recordsTokens)
        throw new Error(`the minute's tokens are ${status.tokensLastMinute}, the records sum to ${recordsTokens}`);
      if (status.requestsLastMinute !== 0 && status.requestsLastMinute !== requests.length)
        throw new Error('requests were counted partly');
    }),
    { numRuns: runs },
  );
}

import { randomUUID } from 'node:crypto';
import type { AppliedLimit } from './limit-rules';
import type { CounterAsk, LimitCounterStore, LimitKind, RateFigures, Reservation } from './counter-store';

/** A refusal of the limits: `status`, a stable `code`, and the headers of the answer (`retry-after`, `x-ratelimit-*`). */
export class LimitError extends Error {
  readonly status: number;
  readonly code: string;
  readonly type: string;
  readonly headers: Record<string, string>;
  constructor(status: number, code: string, type: string, message: string, headers: Record<string, string>) {
    super(message);
    this.name = new.target.name;
    this.status = status;
    this.code = code;
    this.type = type;
    this.headers = headers;
  }
}

/** `429 rate_limited`: a requests or tokens per minute cap is reached. */
export class RateLimitedError extends LimitError {
  constructor(message: string, headers: Record<string, string>) {
    super(429, 'rate_limited', 'rate_limit_error', message, headers);
  }
}

/** `429 budget_exceeded`: a cost per day or per month budget would be passed. */
export class BudgetExceededError extends LimitError {
  constructor(message: string, headers: Record<string, string>) {
    super(429, 'budget_exceeded', 'rate_limit_error', message, headers);
  }
}

/** `503 limits_unavailable`: the shared counters cannot be reached and the gateway is set to deny. */
export class LimitsUnavailableError extends LimitError {
  constructor(message: string) {
    super(503, 'limits_unavailable', 'api_error', message, { 'retry-after': '1' });
  }
}

/** What the store does when it cannot be reached: `deny` (`503 limits_unavailable`) or `allow` (uncounted). */
export type OnStoreUnavailable = 'deny' | 'allow';

/** Options of {@link Limiter}. */
export interface LimiterOptions {
  /** Where counters live. Required. */
  store: LimitCounterStore;
  /** When the store fails or times out. Default `deny`. */
  onStoreUnavailable?: OnStoreUnavailable;
  /** Called when a request passes uncounted because the store was unavailable (`allow`). Default: none. */
  onAllowedUnavailable?: () => void;
  /** Called when a cost budget refuses a request (once per request). Default: none. */
  onBudgetExhausted?: (event: { counterId: string; kind: LimitKind }) => void;
  /** Called with the cap of every refusal (rate or budget). Default: none. */
  onRefused?: (kind: LimitKind) => void;
  /** Called when a request is refused because the store was unavailable (`deny`). Default: none. */
  onDenied?: () => void;
  /** Called when a settlement fails (its reservation then stays counted at the worst case). Default: none. */
  onSettleError?: (error: unknown) => void;
  /** Milliseconds since the epoch. Default `Date.now`. */
  now?: () => number;
}

/** What one request asks of the limits. */
export interface AdmissionAsk {
  /** Whether it counts as a request (model routes, MCP `tools/call`). */
  countsRequest: boolean;
  /** How many requests it counts as (a JSON-RPC batch counts each of its MCP `tools/call`s). Default 1. */
  requests?: number;
  /** Tokens it may use at most (input estimate + `max_tokens`). */
  tokens: number;
  /** Its largest possible cost, in nano-dollars. */
  nanos: number;
}

/**
 * A granted request's hold on its limits: settled exactly once with the real tokens and cost (a
 * second call does nothing). Settling with zeros releases the tokens and cost (the request stays
 * counted).
 */
export class LimitTicket {
  private settled = false;
  constructor(
    private readonly store: LimitCounterStore | undefined,
    private readonly reservation: Reservation | undefined,
    /** The `x-ratelimit-*` headers of the answer. */
    readonly headers: Readonly<Record<string, string>>,
    private readonly onError?: (error: unknown) => void,
  ) {}

  /** Whether {@link settle} was called. */
  get isSettled(): boolean {
    return this.settled;
  }

  /** Replaces the reservation with the real figures; only the first call counts. Never rejects. */
  settle(actual: { tokens: number; nanos: number }): Promise<void> {
    if (this.settled) return Promise.resolve();
    this.settled = true;
    if (this.store === undefined || this.reservation === undefined) return Promise.resolve();
    const tokens = Math.max(0, Math.round(actual.tokens));
    const nanos = Math.max(0, Math.round(actual.nanos));
    return this.store.settle(this.reservation, { tokens, nanos }).catch((error: unknown) => this.onError?.(error));
  }
}

/** A ticket with nothing to settle: no limit applies. */
export const NO_LIMITS_TICKET = new LimitTicket(undefined, undefined, {});

/** OpenAI's duration format for reset headers: `1s`, `6m0s`, `20ms`. */
export function resetDuration(ms: number): string {
  if (ms <= 0) return '0s';
  if (ms < 1000) return `${Math.ceil(ms)}ms`;
  const seconds = Math.ceil(ms / 1000);
  return seconds < 60 ? `${seconds}s` : `${Math.floor(seconds / 60)}m${seconds % 60}s`;
}

/** The `x-ratelimit-{limit,remaining,reset}-{requests,tokens}` headers of `figures`. */
export function rateLimitHeaders(figures: RateFigures): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const kind of ['requests', 'tokens'] as const) {
    const figure = figures[kind];
    if (figure === undefined) continue;
    headers[`x-ratelimit-limit-${kind}`] = String(figure.limit);
    headers[`x-ratelimit-remaining-${kind}`] = String(Math.max(0, figure.remaining));
    headers[`x-ratelimit-reset-${kind}`] = resetDuration(figure.resetMs);
  }
  return headers;
}

function counterAsk(applied: AppliedLimit): CounterAsk {
  const { limit } = applied;
  return {
    counterId: applied.counterId,
    requestsPerMinute: limit.requestsPerMinute,
    tokensPerMinute: limit.tokensPerMinute,
    nanosPerDay: limit.nanosPerDay,
    nanosPerMonth: limit.nanosPerMonth,
  };
}

/**
 * Reserves a request's largest possible use against every limit that applies to it before the
 * provider is called, and hands back a {@link LimitTicket} to settle to the real use after. The
 * store does the check and the count in one atomic step.
 */
export class Limiter {
  private readonly store: LimitCounterStore;
  private readonly onStoreUnavailable: OnStoreUnavailable;
  private readonly options: LimiterOptions;
  private readonly now: () => number;

  constructor(options: LimiterOptions) {
    const store = options?.store;
    if (typeof store?.reserve !== 'function' || typeof store.settle !== 'function')
      throw new TypeError('Limiter needs { store }: a LimitCounterStore such as new MemoryCounterStore().');
    if (
      options.onStoreUnavailable !== undefined &&
      options.onStoreUnavailable !== 'deny' &&
      options.onStoreUnavailable !== 'allow'
    )
      throw new TypeError('onStoreUnavailable must be "deny" or "allow".');
    this.store = store;
    this.options = options;
    this.onStoreUnavailable = options.onStoreUnavailable ?? 'deny';
    this.now = options.now ?? Date.now;
  }

  /** The counter store. */
  get counters(): LimitCounterStore {
    return this.store;
  }

  /**
   * Reserves `ask` against `limits`: a ticket when every limit allows it; throws
   * {@link RateLimitedError}, {@link BudgetExceededError} or (store unreachable, `deny`)
   * {@link LimitsUnavailableError} otherwise.
   */
  async admit(limits: readonly AppliedLimit[], ask: AdmissionAsk): Promise<LimitTicket> {
    if (limits.length === 0) return NO_LIMITS_TICKET;
    const request = {
      id: randomUUID(),
      now: this.now(),
      counters: limits.map(counterAsk),
      countsRequest: ask.countsRequest,
      requests: ask.requests ?? 1,
      tokens: Math.max(0, Math.round(ask.tokens)),
      nanos: Math.max(0, Math.round(ask.nanos)),
    };
    let outcome;
    try {
      outcome = await this.store.reserve(request);
    } catch {
      // The store may have applied the reservation before its answer was lost: take it back, so
      // a request refused (or let through uncounted) leaves nothing counted.
      this.store.release?.(request).catch((error: unknown) => this.options.onSettleError?.(error));
      if (this.onStoreUnavailable === 'allow') {
        this.options.onAllowedUnavailable?.();
        return NO_LIMITS_TICKET;
      }
      this.options.onDenied?.();
      throw new LimitsUnavailableError('The gateway cannot reach its limit counters just now; retry shortly.');
    }
    const headers = rateLimitHeaders(outcome.figures);
    if (outcome.granted) return new LimitTicket(this.store, outcome.reservation, headers, this.options.onSettleError);
    headers['retry-after'] = String(Math.max(1, Math.ceil(outcome.retryAfterMs / 1000)));
    this.options.onRefused?.(outcome.kind);
    const slug = outcome.counterId.split(':')[0] ?? '';
    if (outcome.kind === 'requests' || outcome.kind === 'tokens') {
      throw new RateLimitedError(
        `The ${outcome.kind} per minute of limit "${slug.slice(0, 64)}" are used up; retry after ${headers['retry-after']} s.`,
        headers,
      );
    }
    this.options.onBudgetExhausted?.({ counterId: outcome.counterId, kind: outcome.kind });
    const period = outcome.kind === 'cost_per_day' ? 'day' : 'month';
    throw new BudgetExceededError(
      `The ${period}'s budget of limit "${slug.slice(0, 64)}" would be passed by this request.`,
      headers,
    );
  }
}

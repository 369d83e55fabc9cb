/** The sliding window of per-minute caps, in ms. */
export const MINUTE_MS = 60_000;

/** One set of counters a reservation checks and counts on, with the caps of its limit (`undefined`: not capped). */
export interface CounterAsk {
  /** `<slug>` or `<slug>:<caller>`: whose counters. */
  readonly counterId: string;
  readonly requestsPerMinute: number | undefined;
  readonly tokensPerMinute: number | undefined;
  readonly nanosPerDay: number | undefined;
  readonly nanosPerMonth: number | undefined;
}

/** What a request asks to reserve against every limit that applies to it. */
export interface ReserveRequest {
  /** Unique per reservation (a UUID). */
  readonly id: string;
  /** Now, in ms since the epoch: the windows are read at this time. */
  readonly now: number;
  readonly counters: readonly CounterAsk[];
  /** Whether the request counts as one request (model routes and MCP `tools/call` do). */
  readonly countsRequest: boolean;
  /**
   * How many requests it counts as when `countsRequest` (a JSON-RPC batch counts each of its MCP
   * `tools/call`s), at least 1. Default 1.
   */
  readonly requests?: number;
  /** The tokens reserved: the input estimate plus `max_tokens`. */
  readonly tokens: number;
  /** The cost reserved, in nano-dollars: the request's largest possible cost. */
  readonly nanos: number;
}

/** How many requests `request` counts as: 0 when it does not count, else `requests` (whole, at least 1). */
export function requestsCounted(request: Pick<ReserveRequest, 'countsRequest' | 'requests'>): number {
  if (!request.countsRequest) return 0;
  const requests = request.requests ?? 1;
  return Number.isSafeInteger(requests) && requests > 1 ? requests : 1;
}

/** Which cap refused a request. */
export type LimitKind = 'requests' | 'tokens' | 'cost_per_day' | 'cost_per_month';

/** The figures of OpenAI's `x-ratelimit-*` headers, for the tightest limit of each kind (undefined: none applies). */
export interface RateFigures {
  requests?: { limit: number; remaining: number; resetMs: number };
  tokens?: { limit: number; remaining: number; resetMs: number };
}

/** A granted reservation: what must be settled, exactly once, when the request ends. */
export interface Reservation {
  readonly id: string;
  readonly counters: readonly CounterAsk[];
  /** The UTC day and month the cost was reserved on (`2025-06-30`, `2025-06`): settled on the same. */
  readonly day: string;
  readonly month: string;
  readonly tokens: number;
  readonly nanos: number;
}

/** How a store answered a reservation. */
export type ReserveOutcome =
  | { granted: true; reservation: Reservation; figures: RateFigures }
  | { granted: false; kind: LimitKind; counterId: string; retryAfterMs: number; figures: RateFigures };

/** The counters of one set, as `GET /admin/v1/limits/<slug>/status` shows them. */
export interface CounterStatus {
  /** Requests in the last 60 s. */
  requestsLastMinute: number;
  /** Tokens reserved or used in the last 60 s. */
  tokensLastMinute: number;
  /** Nano-dollars reserved or spent this UTC day and month. */
  nanosToday: number;
  nanosThisMonth: number;
}

/**
 * Where limit counters live: checked and reserved in one atomic step ({@link reserve}), settled to
 * the real figures once ({@link settle}). A memory implementation (one instance) and a Redis one
 * (shared by every instance) answer alike; one contract suite tests both.
 */
export interface LimitCounterStore {
  /** Checks every counter's caps and, only when all allow it, counts the request on all of them. */
  reserve(request: ReserveRequest): Promise<ReserveOutcome>;
  /** Replaces a reservation's tokens and cost with the real figures (the request stays counted). */
  settle(reservation: Reservation, actual: { tokens: number; nanos: number }): Promise<void>;
  /** The counters of `counter` at `now`. */
  status(counter: CounterAsk, now: number): Promise<CounterStatus>;
  /**
   * Takes back `request`'s reservation when {@link reserve} failed on the way back (a timeout, a
   * broken connection) though the store may have applied it; does nothing when it was not applied,
   * or was already taken back. Default: none (a store whose reservations cannot half-fail).
   */
  release?(request: ReserveRequest): Promise<void>;
}

/** `2025-06-30` and `2025-06` of `now` (UTC). */
export function calendarKeys(now: number): { day: string; month: string } {
  const iso = new Date(now).toISOString();
  return { day: iso.slice(0, 10), month: iso.slice(0, 7) };
}

/** Milliseconds from `now` to the next UTC midnight, and to the first of the next UTC month. */
export function calendarResets(now: number): { dayMs: number; monthMs: number } {
  const date = new Date(now);
  const nextDay = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate() + 1);
  const nextMonth = Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1);
  return { dayMs: nextDay - now, monthMs: nextMonth - now };
}

interface Entry {
  id: string;
  time: number;
  amount: number;
}

interface CounterSet {
  requests: Entry[];
  tokens: Entry[];
  tokenIndex: Map<string, Entry>;
  tokenSum: number;
  days: Map<string, number>;
  months: Map<string, number>;
}

/** Most counter sets one {@link MemoryCounterStore} keeps; the least recently used idle set goes first. */
const MAX_COUNTER_SETS = 100_000;

/**
 * Counters in this process: per instance (each gateway instance counts only its own requests).
 * Reserve and settle run without awaiting in between, so they are atomic within the process.
 */
export class MemoryCounterStore implements LimitCounterStore {
  private readonly sets = new Map<string, CounterSet>();

  reserve(request: ReserveRequest): Promise<ReserveOutcome> {
    const { now } = request;
    const { day, month } = calendarKeys(now);
    const resets = calendarResets(now);
    const figures: RateFigures = {};
    const sets = request.counters.map((ask) => this.counterSet(ask.counterId, now));
    const counted = requestsCounted(request);
    for (const [index, ask] of request.counters.entries()) {
      const set = sets[index] as CounterSet;
      if (ask.requestsPerMinute !== undefined && counted > 0) {
        const used = set.requests.length;
        const resetMs = set.requests[0] ? set.requests[0].time + MINUTE_MS - now : 0;
        const remaining = ask.requestsPerMinute - used - counted;
        if (remaining < 0)
          return refused(
            'requests',
            ask.counterId,
            resetMs || MINUTE_MS,
            figures,
            'requests',
            ask.requestsPerMinute,
            0,
            resetMs,
          );
        tighter(figures, 'requests', ask.requestsPerMinute, remaining, resetMs);
      }
      if (ask.tokensPerMinute !== undefined) {
        const resetMs = set.tokens[0] ? set.tokens[0].time + MINUTE_MS - now : 0;
        const remaining = ask.tokensPerMinute - set.tokenSum - request.tokens;
        if (remaining < 0)
          return refused(
            'tokens',
            ask.counterId,
            resetMs || MINUTE_MS,
            figures,
            'tokens',
            ask.tokensPerMinute,
            Math.max(0, ask.tokensPerMinute - set.tokenSum),
            resetMs,
          );
        tighter(figures, 'tokens', ask.tokensPerMinute, remaining, resetMs);
      }
      if (ask.nanosPerDay !== undefined && (set.days.get(day) ?? 0) + request.nanos > ask.nanosPerDay)
        return Promise.resolve({
          granted: false,
          kind: 'cost_per_day',
          counterId: ask.counterId,
          retryAfterMs: resets.dayMs,
          figures,
        });
      if (ask.nanosPerMonth !== undefined && (set.months.get(month) ?? 0) + request.nanos > ask.nanosPerMonth)
        return Promise.resolve({
          granted: false,
          kind: 'cost_per_month',
          counterId: ask.counterId,
          retryAfterMs: resets.monthMs,
          figures,
        });
    }
    for (const [index, ask] of request.counters.entries()) {
      const set = sets[index] as CounterSet;
      if (ask.requestsPerMinute !== undefined)
        for (let n = 0; n < counted; n++) set.requests.push({ id: request.id, time: now, amount: 1 });
      if (ask.tokensPerMinute !== undefined) {
        const entry = { id: request.id, time: now, amount: request.tokens };
        set.tokens.push(entry);
        set.tokenIndex.set(entry.id, entry);
        set.tokenSum += request.tokens;
      }
      if (ask.nanosPerDay !== undefined) set.days.set(day, (set.days.get(day) ?? 0) + request.nanos);
      if (ask.nanosPerMonth !== undefined) set.months.set(month, (set.months.get(month) ?? 0) + request.nanos);
    }
    const reservation: Reservation = {
      id: request.id,
      counters: request.counters,
      day,
      month,
      tokens: request.tokens,
      nanos: request.nanos,
    };
    return Promise.resolve({ granted: true, reservation, figures });
  }

  settle(reservation: Reservation, actual: { tokens: number; nanos: number }): Promise<void> {
    for (const ask of reservation.counters) {
      const set = this.sets.get(ask.counterId);
      if (set === undefined) continue;
      const entry = set.tokenIndex.get(reservation.id);
      if (entry !== undefined) {
        set.tokenSum = Math.max(0, set.tokenSum + actual.tokens - entry.amount);
        entry.amount = actual.tokens;
      }
      const delta = actual.nanos - reservation.nanos;
      if (ask.nanosPerDay !== undefined)
        set.days.set(reservation.day, Math.max(0, (set.days.get(reservation.day) ?? 0) + delta));
      if (ask.nanosPerMonth !== undefined)
        set.months.set(reservation.month, Math.max(0, (set.months.get(reservation.month) ?? 0) + delta));
    }
    return Promise.resolve();
  }

  status(counter: CounterAsk, now: number): Promise<CounterStatus> {
    const set = this.counterSet(counter.counterId, now);
    const { day, month } = calendarKeys(now);
    return Promise.resolve({
      requestsLastMinute: set.requests.length,
      tokensLastMinute: set.tokenSum,
      nanosToday: set.days.get(day) ?? 0,
      nanosThisMonth: set.months.get(month) ?? 0,
    });
  }

  /** The counter set `id`, its minute windows moved to `now` and its past days and months dropped. */
  private counterSet(id: string, now: number): CounterSet {
    let set = this.sets.get(id);
    if (set === undefined) {
      if (this.sets.size >= MAX_COUNTER_SETS) this.evictIdle(now);
      set = { requests: [], tokens: [], tokenIndex: new Map(), tokenSum: 0, days: new Map(), months: new Map() };
    } else this.sets.delete(id);
    this.sets.set(id, set);
    const since = now - MINUTE_MS;
    let drop = 0;
    while (drop < set.requests.length && (set.requests[drop] as Entry).time <= since) drop++;
    if (drop > 0) set.requests.splice(0, drop);
    drop = 0;
    while (drop < set.tokens.length && (set.tokens[drop] as Entry).time <= since) {
      const entry = set.tokens[drop] as Entry;
      set.tokenSum = Math.max(0, set.tokenSum - entry.amount);
      set.tokenIndex.delete(entry.id);
      drop++;
    }
    if (drop > 0) set.tokens.splice(0, drop);
    const { day, month } = calendarKeys(now);
    for (const key of set.days.keys()) if (key < day) set.days.delete(key);
    for (const key of set.months.keys()) if (key < month) set.months.delete(key);
    return set;
  }

  /** Forgets the least recently used set whose windows are empty and that holds no spend of today or this month. */
  private evictIdle(now: number): void {
    const { day, month } = calendarKeys(now);
    for (const [id, set] of this.sets) {
      const idle =
        (set.requests.at(-1)?.time ?? 0) <= now - MINUTE_MS &&
        (set.tokens.at(-1)?.time ?? 0) <= now - MINUTE_MS &&
        !set.days.get(day) &&
        !set.months.get(month);
      if (idle) {
        this.sets.delete(id);
        return;
      }
    }
  }
}

function tighter(
  figures: RateFigures,
  kind: 'requests' | 'tokens',
  limit: number,
  remaining: number,
  resetMs: number,
): void {
  const current = figures[kind];
  if (current === undefined || remaining < current.remaining) figures[kind] = { limit, remaining, resetMs };
}

function refused(
  kind: LimitKind,
  counterId: string,
  retryAfterMs: number,
  figures: RateFigures,
  figure: 'requests' | 'tokens',
  limit: number,
  remaining: number,
  resetMs: number,
): Promise<ReserveOutcome> {
  figures[figure] = { limit, remaining, resetMs };
  return Promise.resolve({ granted: false, kind, counterId, retryAfterMs: Math.max(1, retryAfterMs), figures });
}

import {
  MINUTE_MS,
  calendarKeys,
  calendarResets,
  requestsCounted,
  type CounterAsk,
  type CounterStatus,
  type LimitCounterStore,
  type LimitKind,
  type RateFigures,
  type Reservation,
  type ReserveOutcome,
  type ReserveRequest,
} from './counter-store';

/** How a {@link RedisScriptRunner} may send one call. */
export interface RedisScriptCallOptions {
  /**
   * The call is off the request's path (a settlement): the runner may hold it for a few
   * milliseconds and send it in one write with other calls (the next call that is not deferrable,
   * or a batch), instead of at once. It is still sent exactly once, its wait is still bounded, and
   * its promise still settles with its own answer or error. A runner may ignore it. Default `false`.
   */
  deferrable?: boolean;
}

/**
 * Runs a Lua script on the Redis server (`EVALSHA`, falling back to `EVAL`), with a short timeout;
 * rejects when the server cannot be reached or does not answer in time. The host wraps its Redis
 * client in one (ioredis: `defineCommand`, or `evalsha`/`eval`).
 */
export type RedisScriptRunner = (
  script: { name: string; lua: string },
  keys: readonly string[],
  args: readonly (string | number)[],
  options?: RedisScriptCallOptions,
) => Promise<unknown>;

/** Keys of one counter set: request log, token log, token amounts, token sum, day spend, month spend. */
const KEYS_PER_SET = 6;
/**
 * How long a reservation's marker (its cost, by id) is kept: a reservation whose answer was lost
 * can be taken back within it; settling removes it.
 */
const MARKER_TTL_MS = 10 * 60_000;

/** Lua helpers shared by the scripts: the window move of one counter set. */
const EXPIRE_WINDOWS = `
local function expire(base, since)
  redis.call('ZREMRANGEBYSCORE', KEYS[base + 1], '-inf', since)
  local old = redis.call('ZRANGEBYSCORE', KEYS[base + 2], '-inf', since, 'LIMIT', 0, 1000)
  if #old > 0 then
    local amounts = redis.call('HMGET', KEYS[base + 3], unpack(old))
    local freed = 0
    for j = 1, #amounts do freed = freed + (tonumber(amounts[j]) or 0) end
    redis.call('HDEL', KEYS[base + 3], unpack(old))
    redis.call('ZREM', KEYS[base + 2], unpack(old))
    local sum = (tonumber(redis.call('GET', KEYS[base + 4])) or 0) - freed
    if sum < 0 then sum = 0 end
    redis.call('SET', KEYS[base + 4], string.format('%.0f', sum), 'PX', ${MINUTE_MS * 2})
  end
end
local function num(value) return tonumber(value) or 0 end
local function fmt(value) return string.format('%.0f', value) end
`;

/**
 * Checks every counter set's caps and, only when all allow, counts the request on all of them, in
 * one step (a script runs alone on the server: no other instance reads between the check and the
 * count). ARGV: now, id, tokens, nanos, requests counted (0: none), sets, day ttl ms, month ttl ms, day reset
 * ms, month reset ms, then per set: rpm, tpm, nanos/day, nanos/month (-1: no cap). Answers
 * {granted (1/0), kind, set index, retry ms, req limit, req remaining, req reset, tok limit, tok
 * remaining, tok reset} (-1: no figure).
 */
const RESERVE_LUA = `${EXPIRE_WINDOWS}
local now = tonumber(ARGV[1]); local id = ARGV[2]; local tokens = tonumber(ARGV[3]); local nanos = tonumber(ARGV[4])
local requests = tonumber(ARGV[5]); local countsRequest = requests > 0; local sets = tonumber(ARGV[6])
local dayTtl = tonumber(ARGV[7]); local monthTtl = tonumber(ARGV[8]); local dayReset = tonumber(ARGV[9]); local monthReset = tonumber(ARGV[10])
local since = now - ${MINUTE_MS}
local f = {-1, -1, -1, -1, -1, -1}
local function refuse(kind, i, retry) return {0, kind, i, math.max(1, retry), f[1], f[2], f[3], f[4], f[5], f[6]} end
for i = 1, sets do
  local base = (i - 1) * ${KEYS_PER_SET}; local a = 10 + (i - 1) * 4
  local rpm = tonumber(ARGV[a + 1]); local tpm = tonumber(ARGV[a + 2]); local perDay = tonumber(ARGV[a + 3]); local perMonth = tonumber(ARGV[a + 4])
  expire(base, since)
  if rpm >= 0 and countsRequest then
    local used = redis.call('ZCARD', KEYS[base + 1])
    local oldest = redis.call('ZRANGE', KEYS[base + 1], 0, 0, 'WITHSCORES')
    local reset = 0
    if #oldest > 0 then reset = tonumber(oldest[2]) + ${MINUTE_MS} - now end
    local remaining = rpm - used - requests
    if remaining < 0 then
      f[1] = rpm; f[2] = 0; f[3] = reset
      if reset <= 0 then reset = ${MINUTE_MS} end
      return refuse(1, i, reset)
    end
    if f[2] < 0 or remaining < f[2] then f[1] = rpm; f[2] = remaining; f[3] = reset end
  end
  if tpm >= 0 then
    local sum = num(redis.call('GET', KEYS[base + 4]))
    local oldest = redis.call('ZRANGE', KEYS[base + 2], 0, 0, 'WITHSCORES')
    local reset = 0
    if #oldest > 0 then reset = tonumber(oldest[2]) + ${MINUTE_MS} - now end
    local remaining = tpm - sum - tokens
    if remaining < 0 then
      local left = tpm - sum
      if left < 0 then left = 0 end
      f[4] = tpm; f[5] = left; f[6] = reset
      if reset <= 0 then reset = ${MINUTE_MS} end
      return refuse(2, i, reset)
    end
    if f[5] < 0 or remaining < f[5] then f[4] = tpm; f[5] = remaining; f[6] = reset end
  end
  if perDay >= 0 and num(redis.call('GET', KEYS[base + 5])) + nanos > perDay then return refuse(3, i, dayReset) end
  if perMonth >= 0 and num(redis.call('GET', KEYS[base + 6])) + nanos > perMonth then return refuse(4, i, monthReset) end
end
for i = 1, sets do
  local base = (i - 1) * ${KEYS_PER_SET}; local a = 10 + (i - 1) * 4
  if tonumber(ARGV[a + 1]) >= 0 and countsRequest then
    redis.call('ZADD', KEYS[base + 1], now, id)
    for n = 2, requests do redis.call('ZADD', KEYS[base + 1], now, id .. '#' .. n) end
    redis.call('PEXPIRE', KEYS[base + 1], ${MINUTE_MS * 2})
  end
  if tonumber(ARGV[a + 2]) >= 0 then
    redis.call('ZADD', KEYS[base + 2], now, id)
    redis.call('HSET', KEYS[base + 3], id, fmt(tokens))
    local sum = num(redis.call('GET', KEYS[base + 4])) + tokens
    redis.call('SET', KEYS[base + 4], fmt(sum), 'PX', ${MINUTE_MS * 2})
    redis.call('PEXPIRE', KEYS[base + 2], ${MINUTE_MS * 2})
    redis.call('PEXPIRE', KEYS[base + 3], ${MINUTE_MS * 2})
  end
  if tonumber(ARGV[a + 3]) >= 0 then
    redis.call('SET', KEYS[base + 5], fmt(num(redis.call('GET', KEYS[base + 5])) + nanos), 'PX', dayTtl)
  end
  if tonumber(ARGV[a + 4]) >= 0 then
    redis.call('SET', KEYS[base + 6], fmt(num(redis.call('GET', KEYS[base + 6])) + nanos), 'PX', monthTtl)
  end
end
redis.call('SET', KEYS[sets * ${KEYS_PER_SET} + 1], fmt(nanos), 'PX', ${MARKER_TTL_MS})
return {1, 0, 0, 0, f[1], f[2], f[3], f[4], f[5], f[6]}
`;

/**
 * Replaces a reservation's tokens and cost with the real figures on every set it counted on (never
 * below zero). ARGV: id, actual tokens, nanos delta, sets, then per set: has tpm, has day cap, has
 * month cap (1/0). A token entry already out of the window is left alone (it no longer counts).
 */
const SETTLE_LUA = `${EXPIRE_WINDOWS}
local id = ARGV[1]; local tokens = tonumber(ARGV[2]); local delta = tonumber(ARGV[3]); local sets = tonumber(ARGV[4])
redis.call('DEL', KEYS[sets * ${KEYS_PER_SET} + 1])
for i = 1, sets do
  local base = (i - 1) * ${KEYS_PER_SET}; local a = 4 + (i - 1) * 3
  if ARGV[a + 1] == '1' then
    local reserved = redis.call('HGET', KEYS[base + 3], id)
    if reserved then
      redis.call('HSET', KEYS[base + 3], id, fmt(tokens))
      local sum = num(redis.call('GET', KEYS[base + 4])) + tokens - tonumber(reserved)
      if sum < 0 then sum = 0 end
      redis.call('SET', KEYS[base + 4], fmt(sum), 'KEEPTTL')
    end
  end
  for k = 2, 3 do
    if ARGV[a + k] == '1' and delta ~= 0 then
      local key = KEYS[base + 3 + k]
      local value = num(redis.call('GET', key)) + delta
      if value < 0 then value = 0 end
      redis.call('SET', key, fmt(value), 'KEEPTTL')
    end
  end
end
return 1
`;

/**
 * Takes back a reservation whose answer the host never received (the call timed out, the
 * connection broke): only when its marker shows the reservation script ran, and once (the marker
 * goes). A server runs one connection's commands in order, so a reservation sent before is
 * applied before this. ARGV: id, sets, then per set: requests counted on its rpm (0: none), has tpm, has day cap, has month cap.
 */
const RELEASE_LUA = `${EXPIRE_WINDOWS}
local id = ARGV[1]; local sets = tonumber(ARGV[2])
local marker = KEYS[sets * ${KEYS_PER_SET} + 1]
local nanos = tonumber(redis.call('GET', marker))
if not nanos then return 0 end
redis.call('DEL', marker)
for i = 1, sets do
  local base = (i - 1) * ${KEYS_PER_SET}; local a = 2 + (i - 1) * 4
  local requests = tonumber(ARGV[a + 1])
  if requests > 0 then
    redis.call('ZREM', KEYS[base + 1], id)
    for n = 2, requests do redis.call('ZREM', KEYS[base + 1], id .. '#' .. n) end
  end
  if ARGV[a + 2] == '1' then
    local reserved = redis.call('HGET', KEYS[base + 3], id)
    if reserved then
      redis.call('HDEL', KEYS[base + 3], id)
      redis.call('ZREM', KEYS[base + 2], id)
      local sum = num(redis.call('GET', KEYS[base + 4])) - tonumber(reserved)
      if sum < 0 then sum = 0 end
      redis.call('SET', KEYS[base + 4], fmt(sum), 'KEEPTTL')
    end
  end
  for k = 3, 4 do
    if ARGV[a + k] == '1' and nanos ~= 0 then
      local key = KEYS[base + 2 + k]
      local value = num(redis.call('GET', key)) - nanos
      if value < 0 then value = 0 end
      redis.call('SET', key, fmt(value), 'KEEPTTL')
    end
  end
end
return 1
`;

/** Reads one set's counters after moving its windows. ARGV: now. */
const STATUS_LUA = `${EXPIRE_WINDOWS}
expire(0, tonumber(ARGV[1]) - ${MINUTE_MS})
return {redis.call('ZCARD', KEYS[1]), num(redis.call('GET', KEYS[4])), num(redis.call('GET', KEYS[5])), num(redis.call('GET', KEYS[6]))}
`;

/** The scripts, by name (the host's runner may register them once). */
export const LIMIT_SCRIPTS = Object.freeze({
  reserve: { name: 'gwLimitReserve', lua: RESERVE_LUA },
  settle: { name: 'gwLimitSettle', lua: SETTLE_LUA },
  release: { name: 'gwLimitRelease', lua: RELEASE_LUA },
  status: { name: 'gwLimitStatus', lua: STATUS_LUA },
});

/** Settlements may wait to go out with other calls (see {@link RedisScriptCallOptions.deferrable}). */
const SETTLE_CALL: RedisScriptCallOptions = Object.freeze({ deferrable: true });

const KINDS: readonly LimitKind[] = ['requests', 'tokens', 'cost_per_day', 'cost_per_month'];

/** Options of {@link RedisCounterStore}. */
export interface RedisCounterStoreOptions {
  /** Runs the scripts on the shared Redis server. Required. */
  run: RedisScriptRunner;
  /**
   * Prefix of every key. Default `gw:limits:{v1}:` (one hash tag: a reservation's keys are in one
   * slot, so a script may touch them all).
   */
  keyPrefix?: string;
}

/**
 * Counters in a Redis (or Valkey) server shared by every instance: each reservation is one Lua
 * script that checks every cap and counts the request only when all allow it, so no number of
 * instances or concurrent requests can pass a cap between a read and a write.
 */
export class RedisCounterStore implements LimitCounterStore {
  private readonly run: RedisScriptRunner;
  private readonly prefix: string;

  constructor(options: RedisCounterStoreOptions) {
    if (typeof options?.run !== 'function')
      throw new TypeError('RedisCounterStore needs { run }: a function that runs a Lua script.');
    if (options.keyPrefix !== undefined && (typeof options.keyPrefix !== 'string' || options.keyPrefix === ''))
      throw new TypeError('keyPrefix must be a non-empty string such as "gw:limits:{v1}:".');
    this.run = options.run;
    this.prefix = options.keyPrefix ?? 'gw:limits:{v1}:';
  }

  private keys(counterId: string, day: string, month: string): string[] {
    const base = `${this.prefix}${counterId}:`;
    return [`${base}rq`, `${base}tk`, `${base}tka`, `${base}tks`, `${base}d:${day}`, `${base}m:${month}`];
  }

  async reserve(request: ReserveRequest): Promise<ReserveOutcome> {
    const { day, month } = calendarKeys(request.now);
    const resets = calendarResets(request.now);
    const keys = [...request.counters.flatMap((c) => this.keys(c.counterId, day, month)), this.marker(request.id)];
    const cap = (value: number | undefined) => (value === undefined ? -1 : value);
    const args: (string | number)[] = [
      request.now,
      request.id,
      request.tokens,
      request.nanos,
      requestsCounted(request),
      request.counters.length,
      resets.dayMs + 86_400_000,
      resets.monthMs + 86_400_000,
      resets.dayMs,
      resets.monthMs,
    ];
    for (const c of request.counters)
      args.push(cap(c.requestsPerMinute), cap(c.tokensPerMinute), cap(c.nanosPerDay), cap(c.nanosPerMonth));
    const answer = (await this.run(LIMIT_SCRIPTS.reserve, keys, args)) as number[];
    if (!Array.isArray(answer) || answer.length !== 10) throw new Error('the limit script answered in an unknown form');
    const [granted, kind, index, retry, rl, rr, rs, tl, tr, ts] = answer.map(Number) as number[];
    const figures: RateFigures = {};
    if ((rl as number) >= 0)
      figures.requests = { limit: rl as number, remaining: rr as number, resetMs: Math.max(0, rs as number) };
    if ((tl as number) >= 0)
      figures.tokens = { limit: tl as number, remaining: tr as number, resetMs: Math.max(0, ts as number) };
    if (granted === 1) {
      const reservation: Reservation = {
        id: request.id,
        counters: request.counters,
        day,
        month,
        tokens: request.tokens,
        nanos: request.nanos,
      };
      return { granted: true, reservation, figures };
    }
    return {
      granted: false,
      kind: KINDS[(kind as number) - 1] ?? 'requests',
      counterId: request.counters[(index as number) - 1]?.counterId ?? '',
      retryAfterMs: retry as number,
      figures,
    };
  }

  async settle(reservation: Reservation, actual: { tokens: number; nanos: number }): Promise<void> {
    const keys = [
      ...reservation.counters.flatMap((c) => this.keys(c.counterId, reservation.day, reservation.month)),
      this.marker(reservation.id),
    ];
    const args: (string | number)[] = [
      reservation.id,
      actual.tokens,
      actual.nanos - reservation.nanos,
      reservation.counters.length,
    ];
    for (const c of reservation.counters)
      args.push(
        c.tokensPerMinute === undefined ? '0' : '1',
        c.nanosPerDay === undefined ? '0' : '1',
        c.nanosPerMonth === undefined ? '0' : '1',
      );
    // Off the request's path: the runner may send it with the next reservation or a batch.
    await this.run(LIMIT_SCRIPTS.settle, keys, args, SETTLE_CALL);
  }

  /** Takes back a reservation whose answer was lost, if it was made (see the release script). */
  async release(request: ReserveRequest): Promise<void> {
    const { day, month } = calendarKeys(request.now);
    const keys = [...request.counters.flatMap((c) => this.keys(c.counterId, day, month)), this.marker(request.id)];
    const args: (string | number)[] = [request.id, request.counters.length];
    const flag = (value: number | undefined) => (value === undefined ? '0' : '1');
    for (const c of request.counters)
      args.push(
        c.requestsPerMinute === undefined ? 0 : requestsCounted(request),
        flag(c.tokensPerMinute),
        flag(c.nanosPerDay),
        flag(c.nanosPerMonth),
      );
    await this.run(LIMIT_SCRIPTS.release, keys, args);
  }

  private marker(id: string): string {
    return `${this.prefix}r:${id}`;
  }

  async status(counter: CounterAsk, now: number): Promise<CounterStatus> {
    const { day, month } = calendarKeys(now);
    const answer = (await this.run(LIMIT_SCRIPTS.status, this.keys(counter.counterId, day, month), [now])) as number[];
    const [requests, tokens, today, thisMonth] = (Array.isArray(answer) ? answer : []).map(Number);
    return {
      requestsLastMinute: requests ?? 0,
      tokensLastMinute: tokens ?? 0,
      nanosToday: today ?? 0,
      nanosThisMonth: thisMonth ?? 0,
    };
  }
}

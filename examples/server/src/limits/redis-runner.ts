import { createHash } from 'node:crypto';
import { loadRedis } from '../redis-client';
import type { RedisScriptRunner } from '@gw/access';
import { InFlightList } from '../in-flight-list';

/** Options of {@link redisScriptRunner}. */
export interface RedisScriptRunnerOptions {
  /** `redis://` or `rediss://` URL (`REDIS_URL`). Required. */
  url: string;
  /** Longest wait for one script, in ms; then the call fails (the limits' store is unavailable). Default 100. */
  timeoutMs?: number;
  /**
   * Longest a deferrable call (a settlement) is held, in ms, waiting to go out in one write with
   * the next call that is not deferrable (a reservation) or with other held calls; `0` sends every
   * call at once. Default 5.
   */
  batchDelayMs?: number;
  /** Most deferrable calls held at once: the one that fills the batch sends them all. Default 128. */
  batchSize?: number;
}

/** A {@link RedisScriptRunner} on ioredis, with its client (closed by `close`). */
export interface RedisScriptRunnerHandle {
  run: RedisScriptRunner;
  /** Resolves once connected, or after `timeoutMs` (default 2000) whatever the state: true when connected. */
  ready(timeoutMs?: number): Promise<boolean>;
  /** Sends the held calls, waits for their answers (each within `timeoutMs`), then disconnects. */
  close(): Promise<void>;
}

/** A deferrable call waiting for company. */
interface HeldCall {
  script: { name: string; lua: string };
  keys: readonly string[];
  args: readonly (string | number)[];
  resolve: (answer: unknown) => void;
  reject: (error: unknown) => void;
}

function wholeNumber(value: number | undefined, name: string, fallback: number, min: number, max: number): number {
  const chosen = value ?? fallback;
  if (!Number.isInteger(chosen) || chosen < min || chosen > max)
    throw new TypeError(`${name} must be a whole number from ${min} to ${max}, such as ${fallback}.`);
  return chosen;
}

/**
 * Runs the limits' Lua scripts on a Redis shared by every instance: `EVALSHA`, then `EVAL` when
 * the server does not know the script yet. No offline queue and no retries: a call made while the
 * server is unreachable fails at once, and every command fails after `timeoutMs` (ioredis's
 * `commandTimeout`, armed on every command it sends). Deferrable calls (settlements) are held up to
 * `batchDelayMs` and written in one go with the next reservation, or with each other: one socket
 * write and one read instead of one each per call.
 */
export function redisScriptRunner(options: RedisScriptRunnerOptions): RedisScriptRunnerHandle {
  if (typeof options?.url !== 'string' || options.url === '')
    throw new TypeError('redisScriptRunner needs { url }: a redis:// or rediss:// URL.');
  const timeoutMs = options.timeoutMs ?? 100;
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1)
    throw new TypeError('timeoutMs must be a whole number of milliseconds, such as 100.');
  const batchDelayMs = wholeNumber(options.batchDelayMs, 'batchDelayMs', 5, 0, 1_000);
  const batchSize = wholeNumber(options.batchSize, 'batchSize', 128, 1, 10_000);
  const client = new (loadRedis())(options.url, {
    lazyConnect: false,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: timeoutMs,
    connectTimeout: 2_000,
    retryStrategy: (times) => Math.min(times * 100, 2_000),
  });
  // Connection errors surface as failed calls; the client keeps reconnecting.
  client.on('error', () => undefined);
  const shas = new Map<string, string>();
  let held: HeldCall[] = [];
  let heldTimer: NodeJS.Timeout | undefined;
  /** Held calls sent and not answered yet (each within `timeoutMs`), awaited by `close`. */
  // A list, not a Set: a Set each command joins and leaves keeps it alive until a full collection (InFlightList).
  const answering = new InFlightList<Promise<void>>();
  let closing = false;

  const send = (script: HeldCall['script'], keys: HeldCall['keys'], args: HeldCall['args']): Promise<unknown> => {
    let sha = shas.get(script.name);
    if (sha === undefined) {
      sha = createHash('sha1').update(script.lua).digest('hex');
      shas.set(script.name, sha);
    }
    return client.evalsha(sha, keys.length, ...keys, ...args).catch((error: unknown) => {
      if (!/NOSCRIPT/.test(String((error as Error)?.message))) throw error;
      return client.eval(script.lua, keys.length, ...keys, ...args);
    });
  };
  /** Sends every held call (exactly once: the list is emptied first). */
  const sendHeld = (): void => {
    if (heldTimer !== undefined) clearTimeout(heldTimer);
    heldTimer = undefined;
    const calls = held;
    held = [];
    for (const call of calls) {
      const answered = send(call.script, call.keys, call.args).then(call.resolve, call.reject);
      const entry = answering.add(answered);
      void answered.finally(() => answering.remove(entry));
    }
  };
  /** Runs `work` with the socket corked: the commands it sends leave in one write. */
  const inOneWrite = (work: () => void): void => {
    const stream = client.status === 'ready' ? client.stream : undefined;
    stream?.cork();
    try {
      work();
    } finally {
      stream?.uncork();
    }
  };

  const run: RedisScriptRunner = (script, keys, args, callOptions) => {
    if (callOptions?.deferrable === true && batchDelayMs > 0 && !closing)
      return new Promise<unknown>((resolve, reject) => {
        held.push({ script, keys, args, resolve, reject });
        if (held.length >= batchSize) inOneWrite(sendHeld);
        else heldTimer ??= setTimeout(() => inOneWrite(sendHeld), batchDelayMs);
      });
    if (held.length === 0) return send(script, keys, args);
    // The held settlements ride along, before this call (its script then reads settled counters).
    let answer: Promise<unknown> | undefined;
    inOneWrite(() => {
      sendHeld();
      answer = send(script, keys, args);
    });
    return answer as Promise<unknown>;
  };
  return {
    run,
    ready: (wait = 2_000) =>
      new Promise<boolean>((resolve) => {
        if (client.status === 'ready') return resolve(true);
        const timer = setTimeout(() => resolve(false), wait);
        client.once('ready', () => {
          clearTimeout(timer);
          resolve(true);
        });
      }),
    close: async () => {
      closing = true;
      inOneWrite(sendHeld);
      await Promise.allSettled([...answering]);
      client.disconnect();
    },
  };
}

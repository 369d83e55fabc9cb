import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import type { RedisScriptRunner } from '@gw/access';

/** Options of {@link redisScriptRunner}. */
export interface RedisScriptRunnerOptions {
  /** `redis://` or `rediss://` URL (`REDIS_URL`). Required. */
  url: string;
  /** Longest wait for one script, in ms; then the call fails (the limits' store is unavailable). Default 100. */
  timeoutMs?: number;
}

/** A {@link RedisScriptRunner} on ioredis, with its client (closed by `close`). */
export interface RedisScriptRunnerHandle {
  run: RedisScriptRunner;
  /** Resolves once connected, or after `timeoutMs` (default 2000) whatever the state: true when connected. */
  ready(timeoutMs?: number): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * Runs the limits' Lua scripts on a Redis shared by every instance: `EVALSHA`, then `EVAL` when
 * the server does not know the script yet. No offline queue and no retries: a call made while the
 * server is unreachable fails at once, and every call fails after `timeoutMs`.
 */
export function redisScriptRunner(options: RedisScriptRunnerOptions): RedisScriptRunnerHandle {
  const timeoutMs = options.timeoutMs ?? 100;
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1)
    throw new TypeError('timeoutMs must be a whole number of milliseconds, such as 100.');
  const client = new Redis(options.url, {
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
  const bounded = <T>(call: Promise<T>): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no answer from Redis within ${timeoutMs} ms`)), timeoutMs);
      call.then(
        (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        (error: unknown) => {
          clearTimeout(timer);
          reject(error instanceof Error ? error : new Error(String(error)));
        },
      );
    });
  const run: RedisScriptRunner = async (script, keys, args) => {
    let sha = shas.get(script.name);
    if (sha === undefined) {
      sha = createHash('sha1').update(script.lua).digest('hex');
      shas.set(script.name, sha);
    }
    try {
      return await bounded(client.evalsha(sha, keys.length, ...keys, ...args));
    } catch (error) {
      if (!/NOSCRIPT/.test(String((error as Error)?.message))) throw error;
      return bounded(client.eval(script.lua, keys.length, ...keys, ...args));
    }
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
      client.disconnect();
    },
  };
}

import { RedisCounterStore, type LimitCounterStore, type OnStoreUnavailable } from '@gw/access';
import { redisScriptRunner } from './redis-runner';

/** The limit counters the environment asks for, and how to close and await them. */
export interface LimitCountersFromEnv {
  /** A Redis store with `REDIS_URL`; none: per-instance memory. */
  store?: LimitCounterStore;
  onStoreUnavailable: OnStoreUnavailable;
  ready?: () => Promise<boolean>;
  close?: () => Promise<void>;
}

/**
 * `REDIS_URL` (counters shared by every instance), `GATEWAY_LIMITS_ON_STORE_UNAVAILABLE` (`deny`,
 * the default, or `allow`) and `GATEWAY_LIMITS_REDIS_TIMEOUT_MS` (each script's longest wait,
 * default 100); a bad value stops start-up with what to write.
 */
export function limitCountersFromEnv(env: NodeJS.ProcessEnv): LimitCountersFromEnv {
  const mode = (env.GATEWAY_LIMITS_ON_STORE_UNAVAILABLE ?? '').trim() || 'deny';
  if (mode !== 'deny' && mode !== 'allow')
    throw new Error(`GATEWAY_LIMITS_ON_STORE_UNAVAILABLE must be "deny" or "allow" (got "${mode.slice(0, 40)}").`);
  const rawTimeout = (env.GATEWAY_LIMITS_REDIS_TIMEOUT_MS ?? '').trim();
  const timeoutMs = rawTimeout === '' ? 100 : Number(rawTimeout);
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > 10_000)
    throw new Error(
      'GATEWAY_LIMITS_REDIS_TIMEOUT_MS must be a whole number of milliseconds from 1 to 10000, such as 100.',
    );
  const url = env.REDIS_URL?.trim();
  // REDIS_URL's form is checked with the response cache's settings.
  if (!url) return { onStoreUnavailable: mode };
  const runner = redisScriptRunner({ url, timeoutMs });
  return {
    store: new RedisCounterStore({ run: runner.run }),
    onStoreUnavailable: mode,
    ready: () => runner.ready(),
    close: () => runner.close(),
  };
}

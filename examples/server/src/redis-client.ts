import type * as IORedis from 'ioredis';
import type { Redis } from 'ioredis';

let RedisClass: typeof Redis | undefined;

/**
 * ioredis's `Redis` class, loaded when the gateway first connects to Redis (the response cache or
 * the limits with `REDIS_URL`): a gateway without Redis never loads it (about 30 ms at start-up).
 */
export function loadRedis(): typeof Redis {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded only with REDIS_URL
  RedisClass ??= (require('ioredis') as typeof IORedis).Redis;
  return RedisClass;
}

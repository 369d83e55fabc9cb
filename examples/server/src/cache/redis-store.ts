import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { CachedAnswer, ResponseCacheStore } from '@gw/model-router';

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

/** Options of {@link RedisCacheStore}. */
export interface RedisCacheStoreOptions {
  /** `redis://` or `rediss://` URL of the Redis (or Valkey) server (`REDIS_URL`). */
  url: string;
  /** Longest wait for one Redis call, in ms; then the lookup is a miss. Default 50. */
  timeoutMs?: number;
  /** Answers larger than this many bytes are stored gzip-compressed. Default 4096. */
  compressAboveBytes?: number;
  /** Prefix of every key the gateway writes. Default `gw:cache:v1:`. */
  keyPrefix?: string;
  logger: Logger;
  /** Called with every failed or timed-out call, for the metrics. Default: none. */
  onError?: (operation: 'get' | 'set') => void;
}

/** First byte of a stored value: how the rest is written. */
const PLAIN = 0x00;
const GZIP = 0x01;

/**
 * Cached answers in a Redis server shared by every instance: one key per entry with the entry's
 * TTL, values gzip-compressed above a few KB. Every call is bounded ({@link RedisCacheStoreOptions.timeoutMs});
 * an unreachable or slow Redis makes lookups misses and stores no-ops, never an error or a longer
 * wait, and is logged once per outage.
 */
export class RedisCacheStore implements ResponseCacheStore {
  private readonly client: Redis;
  private readonly timeoutMs: number;
  private readonly compressAbove: number;
  private readonly prefix: string;
  private readonly logger: Logger;
  private readonly onError?: (operation: 'get' | 'set') => void;
  /** Why the store is in an outage now: the connection is gone, or Redis answers too slowly. */
  private down: 'connection' | 'slow' | undefined;

  constructor(options: RedisCacheStoreOptions) {
    this.timeoutMs = options.timeoutMs ?? 50;
    this.compressAbove = options.compressAboveBytes ?? 4096;
    this.prefix = options.keyPrefix ?? 'gw:cache:v1:';
    this.logger = options.logger;
    this.onError = options.onError;
    this.client = new Redis(options.url, {
      // A command while disconnected fails at once instead of waiting in a queue.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: this.timeoutMs,
      connectTimeout: 2_000,
      // Reconnect forever, at most every 2 s.
      retryStrategy: (times) => Math.min(times * 100, 2_000),
    });
    // Without a listener an 'error' event would crash the process.
    this.client.on('error', (error: Error) => this.outage(error));
    this.client.on('ready', () => this.recovered());
  }

  private outage(error: unknown): void {
    if (this.down) return;
    this.down = this.client.status === 'ready' ? 'slow' : 'connection';
    this.logger.warn(
      { err: { message: error instanceof Error ? error.message.slice(0, 200) : 'timed out' } },
      'response cache: Redis unreachable or slow; requests go to the provider (MISS) until it answers again',
    );
  }

  /** The end of an outage: a new connection, or (when Redis was only slow) a call answered in time. */
  private recovered(): void {
    if (!this.down) return;
    this.down = undefined;
    this.logger.info({}, 'response cache: Redis reachable again');
  }

  /** Runs one Redis call within the bound: its result, or undefined when it failed or took too long. */
  private bounded<T>(operation: 'get' | 'set', call: () => Promise<T>): Promise<T | undefined> {
    return new Promise<T | undefined>((resolve) => {
      let settled = false;
      const fail = (error: unknown) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.onError?.(operation);
        this.outage(error);
        resolve(undefined);
      };
      const timer = setTimeout(() => fail(new Error(`no answer within ${this.timeoutMs} ms`)), this.timeoutMs);
      let pending: Promise<T>;
      try {
        pending = call();
      } catch (error) {
        fail(error);
        return;
      }
      pending.then((value) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (this.down === 'slow') this.recovered();
        resolve(value);
      }, fail);
    });
  }

  async get(key: string): Promise<CachedAnswer | undefined> {
    const raw = await this.bounded('get', () => this.client.getBuffer(this.prefix + key));
    if (!raw || raw.length < 2) return undefined;
    try {
      const body = raw[0] === GZIP ? await gunzipAsync(raw.subarray(1)) : raw.subarray(1);
      return JSON.parse(body.toString('utf8')) as CachedAnswer;
    } catch {
      return undefined;
    }
  }

  async set(key: string, answer: CachedAnswer, ttlSeconds: number): Promise<void> {
    const json = Buffer.from(JSON.stringify(answer), 'utf8');
    const value =
      json.length > this.compressAbove
        ? Buffer.concat([Buffer.of(GZIP), await gzipAsync(json)])
        : Buffer.concat([Buffer.of(PLAIN), json]);
    await this.bounded('set', () => this.client.set(this.prefix + key, value, 'EX', ttlSeconds));
  }

  /**
   * Resolves once the connection is ready, or after `timeoutMs` (default 2000) whatever its state:
   * the gateway waits for it before listening, so its first requests can already share answers.
   * A Redis that is down never holds start-up longer than that; the store then answers MISS until
   * it connects.
   */
  ready(timeoutMs = 2_000): Promise<boolean> {
    if (this.client.status === 'ready') return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (value: boolean) => {
        clearTimeout(timer);
        this.client.off('ready', onReady);
        resolve(value);
      };
      const onReady = () => done(true);
      const timer = setTimeout(() => done(false), timeoutMs);
      this.client.on('ready', onReady);
    });
  }

  /** Closes the connection. */
  async close(): Promise<void> {
    this.client.disconnect();
  }
}

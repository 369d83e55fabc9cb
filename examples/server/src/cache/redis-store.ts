import { createHmac, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import { gunzip, gzip, type ZlibOptions } from 'node:zlib';
import type { Redis } from 'ioredis';
import { loadRedis } from '../redis-client';
import type { Logger } from 'pino';
import { MAX_CACHED_ANSWER_BYTES, type CachedAnswer, type ResponseCacheStore } from '@gw/model-router';

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip) as (buffer: Buffer, options: ZlibOptions) => Promise<Buffer>;

/**
 * Largest entry (its JSON text) stored or read back, in bytes: twice the largest answer the
 * gateway caches (JSON escaping can double a text), so no entry is inflated past it. 16 MiB.
 */
export const DEFAULT_MAX_ENTRY_BYTES = 2 * MAX_CACHED_ANSWER_BYTES;

/** Why a stored entry was refused (a MISS): its MAC does not verify, it is too large, or it is not of this form. */
export type RejectedEntry = 'mac' | 'size' | 'format';

/** Options of {@link RedisCacheStore}. */
export interface RedisCacheStoreOptions {
  /** `redis://` or `rediss://` URL of the Redis (or Valkey) server (`REDIS_URL`). */
  url: string;
  /** Longest wait for one Redis call, in ms; then the lookup is a miss. Default 50. */
  timeoutMs?: number;
  /** Answers larger than this many bytes are stored gzip-compressed. Default 4096. */
  compressAboveBytes?: number;
  /** Prefix of every key the gateway writes. Default `gw:cache:v2:`. */
  keyPrefix?: string;
  /**
   * The key entries are authenticated with (HMAC-SHA256), at least 32 bytes: the gateway derives it
   * from `GATEWAY_ENCRYPTION_KEY` (HKDF, `gw-response-cache-mac`), so every instance has the same.
   * Required.
   */
  macKey: Buffer;
  /** Largest entry stored or inflated, in bytes (its JSON text). Default {@link DEFAULT_MAX_ENTRY_BYTES}. */
  maxEntryBytes?: number;
  logger: Logger;
  /** Called with every failed or timed-out call, for the metrics. Default: none. */
  onError?: (operation: 'get' | 'set') => void;
  /** Called with every entry refused on reading (served as a MISS), for the metrics. Default: none. */
  onRejected?: (reason: RejectedEntry) => void;
}

/** First byte of a stored value: the form of the rest (this one: flags byte, MAC, payload). */
const FORM = 0x02;
/** Second byte: how the payload is written. */
const PLAIN = 0x00;
const GZIP = 0x01;
/** Bytes of the MAC. */
const MAC_BYTES = 32;
/** Bytes before the payload. */
const HEADER_BYTES = 2 + MAC_BYTES;

/**
 * The MAC of one entry: HMAC-SHA256 over the Redis key, the payload's encoding and the payload, so
 * an entry is refused when changed, or when copied under another key (another caller's).
 */
export function entryMac(macKey: Buffer, redisKey: string, encoding: number, payload: Buffer): Buffer {
  const keyBytes = Buffer.from(redisKey, 'utf8');
  const length = Buffer.alloc(4);
  length.writeUInt32BE(keyBytes.length);
  return createHmac('sha256', macKey)
    .update(length)
    .update(keyBytes)
    .update(Buffer.of(FORM, encoding))
    .update(payload)
    .digest();
}

/** A stored value: form byte, encoding byte, the MAC, the payload (JSON text, or gzip of it). */
export function encodeEntry(macKey: Buffer, redisKey: string, encoding: number, payload: Buffer): Buffer {
  return Buffer.concat([Buffer.of(FORM, encoding), entryMac(macKey, redisKey, encoding, payload), payload]);
}

/**
 * Cached answers in a Redis server shared by every instance: one key per entry with the entry's
 * TTL, values gzip-compressed above a few KB, each authenticated with an HMAC under a key derived
 * from the encryption key ({@link entryMac}). An entry whose MAC does not verify, or that would
 * inflate past {@link RedisCacheStoreOptions.maxEntryBytes}, is a MISS, counted and logged: whoever
 * can write to Redis cannot serve an answer, nor exhaust the gateway's memory. Every call is bounded ({@link RedisCacheStoreOptions.timeoutMs});
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
  private readonly onRejected?: (reason: RejectedEntry) => void;
  private readonly macKey: Buffer;
  private readonly maxEntryBytes: number;
  /** When a refused entry was last logged (one line a minute at most). */
  private rejectedLoggedAt = 0;
  /** Why the store is in an outage now: the connection is gone, or Redis answers too slowly. */
  private down: 'connection' | 'slow' | undefined;

  /** Throws a `TypeError` saying what to pass for a missing or too short `macKey` or a bad `maxEntryBytes`. */
  constructor(options: RedisCacheStoreOptions) {
    if (!Buffer.isBuffer(options.macKey) || options.macKey.length < 32)
      throw new TypeError(
        'RedisCacheStore macKey must be a Buffer of at least 32 bytes (the gateway derives it from GATEWAY_ENCRYPTION_KEY).',
      );
    const maxEntryBytes = options.maxEntryBytes ?? DEFAULT_MAX_ENTRY_BYTES;
    if (!Number.isInteger(maxEntryBytes) || maxEntryBytes < 1)
      throw new TypeError(
        `RedisCacheStore maxEntryBytes must be a positive whole number of bytes, for example ${DEFAULT_MAX_ENTRY_BYTES}.`,
      );
    this.macKey = Buffer.from(options.macKey);
    this.maxEntryBytes = maxEntryBytes;
    this.onRejected = options.onRejected;
    this.timeoutMs = options.timeoutMs ?? 50;
    this.compressAbove = options.compressAboveBytes ?? 4096;
    this.prefix = options.keyPrefix ?? 'gw:cache:v2:';
    this.logger = options.logger;
    this.onError = options.onError;
    this.client = new (loadRedis())(options.url, {
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

  /** The answer under `key`: undefined (a MISS) when there is none, Redis fails, or the entry is refused. */
  async get(key: string): Promise<CachedAnswer | undefined> {
    const redisKey = this.prefix + key;
    const raw = await this.bounded('get', () => this.client.getBuffer(redisKey));
    if (!raw) return undefined;
    if (raw.length <= HEADER_BYTES || raw[0] !== FORM || (raw[1] !== PLAIN && raw[1] !== GZIP))
      return this.rejected('format');
    // The stored form is never larger than its text; anything larger was not written by a gateway.
    if (raw.length > HEADER_BYTES + this.maxEntryBytes) return this.rejected('size');
    const encoding = raw[1] as number;
    const payload = raw.subarray(HEADER_BYTES);
    const expected = entryMac(this.macKey, redisKey, encoding, payload);
    if (!timingSafeEqual(expected, raw.subarray(2, HEADER_BYTES))) return this.rejected('mac');
    let body: Buffer;
    try {
      // Inflated at most to the entry limit: a small entry that inflates to gigabytes stops there.
      body = encoding === GZIP ? await gunzipAsync(payload, { maxOutputLength: this.maxEntryBytes }) : payload;
    } catch (error) {
      return this.rejected((error as { code?: unknown }).code === 'ERR_BUFFER_TOO_LARGE' ? 'size' : 'format');
    }
    try {
      return JSON.parse(body.toString('utf8')) as CachedAnswer;
    } catch {
      return this.rejected('format');
    }
  }

  /** Stores `answer` (not when its text is larger than `maxEntryBytes`), authenticated. */
  async set(key: string, answer: CachedAnswer, ttlSeconds: number): Promise<void> {
    const json = Buffer.from(JSON.stringify(answer), 'utf8');
    if (json.length > this.maxEntryBytes) return;
    const redisKey = this.prefix + key;
    const value =
      json.length > this.compressAbove
        ? encodeEntry(this.macKey, redisKey, GZIP, await gzipAsync(json))
        : encodeEntry(this.macKey, redisKey, PLAIN, json);
    await this.bounded('set', () => this.client.set(redisKey, value, 'EX', ttlSeconds));
  }

  /** Counts a refused entry, logs it (once a minute at most) and answers a MISS. */
  private rejected(reason: RejectedEntry): undefined {
    this.onRejected?.(reason);
    const now = Date.now();
    if (now - this.rejectedLoggedAt >= 60_000) {
      this.rejectedLoggedAt = now;
      this.logger.warn(
        { reason },
        'response cache: refused an entry read from Redis (not written by this gateway, changed, or too large); served as a MISS',
      );
    }
    return undefined;
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

import { LRUCache } from 'lru-cache';
import type { CachedAnswer } from './answer';

/**
 * Where cached answers live: this process's memory ({@link MemoryCacheStore}) or a server shared
 * by every instance (the gateway's Redis store). A store never throws at its caller's request
 * path: a failure is a miss (`get` resolves undefined) or an answer not kept (`set` resolves).
 */
export interface ResponseCacheStore {
  /** The answer stored under `key`, or undefined. */
  get(key: string): Promise<CachedAnswer | undefined>;
  /** Stores `answer` under `key` for `ttlSeconds`. */
  set(key: string, answer: CachedAnswer, ttlSeconds: number): Promise<void>;
  /** Entries and bytes held now, when the store can tell without waiting. */
  stats?(): { entries: number; bytes: number };
}

/** Options of {@link MemoryCacheStore}. */
export interface MemoryCacheStoreOptions {
  /** Most bytes of answers held (their JSON text); the least recently used go first. Default 256 MiB. */
  maxBytes?: number;
}

/** The default bound of the in-memory store: 256 MiB. */
export const DEFAULT_CACHE_MAX_BYTES = 256 * 1024 * 1024;

/**
 * Answers in this process's memory, as JSON text (so a hit can never hand out an object another
 * request changed), bounded by their size with least-recently-used eviction; each entry expires
 * after its TTL.
 */
export class MemoryCacheStore implements ResponseCacheStore {
  private readonly entries: LRUCache<string, string>;

  constructor(options: MemoryCacheStoreOptions = {}) {
    const maxBytes = options.maxBytes ?? DEFAULT_CACHE_MAX_BYTES;
    if (!(Number.isInteger(maxBytes) && maxBytes > 0)) {
      throw new TypeError(
        `maxBytes must be a positive whole number of bytes, for example 268435456 (got ${String(maxBytes)}).`,
      );
    }
    this.entries = new LRUCache<string, string>({
      maxSize: maxBytes,
      sizeCalculation: (value, key) => sizeOf(key, value),
    });
  }

  async get(key: string): Promise<CachedAnswer | undefined> {
    const text = this.entries.get(key);
    return text === undefined ? undefined : (JSON.parse(text) as CachedAnswer);
  }

  async set(key: string, answer: CachedAnswer, ttlSeconds: number): Promise<void> {
    const text = JSON.stringify(answer);
    // An answer larger than the whole store is not kept (lru-cache refuses it).
    if (sizeOf(key, text) > this.entries.maxSize) return;
    this.entries.set(key, text, { ttl: ttlSeconds * 1000 });
  }

  stats(): { entries: number; bytes: number } {
    // Expired entries count until they are next touched or evicted.
    return { entries: this.entries.size, bytes: this.entries.calculatedSize };
  }
}

/** An entry's size: the bytes of its key and of its JSON text (UTF-16 code units, an upper bound for ASCII). */
function sizeOf(key: string, value: string): number {
  return key.length + value.length;
}

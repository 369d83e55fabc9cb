import { rejectUnknownOptions } from '@gw/options';
import { LRUCache } from 'lru-cache';

/** Options of {@link IdentityTokenCache}. */
export interface IdentityTokenCacheOptions {
  /** Most tokens kept; the least recently used is evicted beyond. Default 10000. */
  maxSize?: number;
  /** Millisecond clock, for tests. Default `Date.now`. */
  now?: () => number;
}

/** Counters of an {@link IdentityTokenCache}, for metrics. */
export interface IdentityTokenCacheStats {
  hits: number;
  misses: number;
  size: number;
}

interface Entry {
  token: string;
  refreshAt: number;
}

/** Seconds before expiry at which a cached token is re-signed: 10% of its lifetime, at most 30 s. */
export function refreshMargin(lifetimeSeconds: number): number {
  return Math.min(30, Math.floor(lifetimeSeconds / 10));
}

/**
 * Signed identity tokens, least-recently-used, keyed by caller + included claims + audience.
 * A token is re-signed once it is within {@link refreshMargin} of its expiry, so a forwarded
 * token always has most of its lifetime left. Signing is synchronous: of several concurrent
 * requests for one key, the first signs and the rest find its token.
 */
export class IdentityTokenCache {
  private readonly entries: LRUCache<string, Entry>;
  private readonly now: () => number;
  private hits = 0;
  private misses = 0;

  /**
   * Throws a `TypeError` naming the option for an unknown option (with the spelling to write), a
   * `maxSize` that is not a positive whole number, or a `now` that is not a function.
   */
  constructor(options: IdentityTokenCacheOptions = {}) {
    if (typeof options !== 'object' || options === null)
      throw new TypeError('IdentityTokenCache options must be an object such as { maxSize: 10000 }.');
    rejectUnknownOptions(options, ['maxSize', 'now'], 'IdentityTokenCache');
    const maxSize = options.maxSize === undefined ? 10_000 : options.maxSize;
    if (!Number.isInteger(maxSize) || maxSize < 1)
      throw new TypeError('IdentityTokenCache maxSize must be a positive whole number, for example 10000.');
    if (options.now !== undefined && typeof options.now !== 'function')
      throw new TypeError('IdentityTokenCache now must be a function () => milliseconds since the epoch.');
    this.entries = new LRUCache<string, Entry>({ max: maxSize });
    this.now = options.now ?? Date.now;
  }

  /**
   * Returns the cached token for `key`, or signs one with `sign(issuedAtSeconds, lifetimeSeconds)`
   * and caches it. With `notAfter` (seconds since the epoch) the lifetime is cut so the token
   * expires no later than that; when `notAfter` has passed, nothing is signed and the result is
   * undefined.
   */
  getOrSign(
    key: string,
    lifetimeSeconds: number,
    sign: (issuedAt: number, lifetimeSeconds: number) => string,
    notAfter?: number,
  ): string | undefined {
    const now = this.now();
    const entry = this.entries.get(key);
    if (entry !== undefined && now < entry.refreshAt) {
      this.hits++;
      return entry.token;
    }
    const issuedAt = Math.floor(now / 1000);
    const lifetime =
      notAfter === undefined ? lifetimeSeconds : Math.min(lifetimeSeconds, Math.floor(notAfter) - issuedAt);
    if (lifetime <= 0) return undefined;
    this.misses++;
    const token = sign(issuedAt, lifetime);
    this.entries.set(key, { token, refreshAt: (issuedAt + lifetime - refreshMargin(lifetime)) * 1000 });
    return token;
  }

  /** Hits, misses and current size. */
  get stats(): IdentityTokenCacheStats {
    return { hits: this.hits, misses: this.misses, size: this.entries.size };
  }
}

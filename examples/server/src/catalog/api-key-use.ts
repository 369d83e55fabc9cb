import type { CatalogStore } from '@gw/catalog';
import type { Logger } from 'pino';

/** A key's last use is written back at most this often (per key and instance). */
export const KEY_USE_INTERVAL_MS = 60_000;
/** How often the uses noted are written. */
const FLUSH_INTERVAL_MS = 5_000;
/** Most keys remembered; past it the memory of the oldest is dropped (at worst one more write). */
const MAX_KEYS = 100_000;

/**
 * The last use of API keys (`lastUsedAt` of `GET /admin/v1/api-keys`): {@link ApiKeyUse.used} is
 * a map look-up on the request path and never waits; a timer writes the uses noted, each key at
 * most once a minute. A write that fails is logged and dropped (the next use notes it again).
 */
export class ApiKeyUse {
  private readonly notedAt = new Map<string, number>();
  private pending = new Map<string, Date>();
  private readonly timer: NodeJS.Timeout;
  private writing: Promise<void> | undefined;

  constructor(
    private readonly store: Pick<CatalogStore, 'recordApiKeyUse'>,
    private readonly logger: Logger,
  ) {
    this.timer = setInterval(() => void this.flush(), FLUSH_INTERVAL_MS).unref();
  }

  /** Notes a use of key `id` now. */
  used(id: string): void {
    const now = Date.now();
    const last = this.notedAt.get(id);
    if (last !== undefined && now - last < KEY_USE_INTERVAL_MS) return;
    if (this.notedAt.size >= MAX_KEYS) this.notedAt.delete(this.notedAt.keys().next().value as string);
    this.notedAt.set(id, now);
    this.pending.set(id, new Date(now));
  }

  /** Writes the uses noted so far. */
  flush(): Promise<void> {
    if (this.pending.size === 0) return this.writing ?? Promise.resolve();
    const batch = this.pending;
    this.pending = new Map();
    const previous = this.writing ?? Promise.resolve();
    const write = previous
      .then(() => this.store.recordApiKeyUse(batch))
      .catch((error: unknown) =>
        this.logger.warn(
          { err: { message: String((error as Error)?.message ?? error).slice(0, 200) } },
          'API key last use not written to the catalog database',
        ),
      )
      .finally(() => {
        if (this.writing === write) this.writing = undefined;
      });
    this.writing = write;
    return write;
  }

  /** Stops the timer and writes what is noted (at most 2 s). */
  async close(): Promise<void> {
    clearInterval(this.timer);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.flush(), new Promise<void>((resolve) => (timer = setTimeout(resolve, 2_000)))]);
    clearTimeout(timer);
  }
}

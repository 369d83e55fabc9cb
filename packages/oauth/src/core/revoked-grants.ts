import type { OAuthStore } from './store';

/**
 * The revoked grants the request path checks, in memory: reloaded from the database every
 * `refreshMs` (so a grant revoked on any instance is refused here within that time plus one
 * query), and updated at once for revocations made on this instance. A revoked grant is kept
 * until every token issued from it has expired (its stored `expires_at`, plus 120 s), whatever
 * the access token lifetime is set to now; `windowSeconds` (the current lifetime plus a margin)
 * only keeps grants stored before that expiry covered their access tokens. While the database
 * cannot be read, the last snapshot stays in force.
 */
export class RevokedGrants {
  private revoked = new Set<string>();
  /** Revocations made here, with when, kept across reloads for a minute (a reload may have started before them). */
  private readonly local = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private loading: Promise<void> | undefined;
  private failures = 0;

  constructor(
    private readonly store: OAuthStore,
    private readonly options: { refreshMs: number; windowSeconds: number; onError?: (error: unknown) => void },
  ) {}

  private loaded = false;

  /**
   * Whether `grantId` is revoked, as far as this instance knows. Until the first load has
   * succeeded, every grant counts as revoked (fail closed).
   */
  has(grantId: string): boolean {
    return !this.loaded || this.revoked.has(grantId);
  }

  /** Adds a grant revoked on this instance, before the next reload. */
  add(grantId: string): void {
    this.revoked.add(grantId);
    this.local.set(grantId, Date.now());
  }

  /** Number of consecutive failed reloads (0 when the last one worked). */
  get failedReloads(): number {
    return this.failures;
  }

  /** Loads the snapshot once, then keeps reloading it every `refreshMs`. */
  async start(): Promise<void> {
    await this.reload();
    this.timer = setInterval(() => void this.reload(), this.options.refreshMs);
    this.timer.unref();
  }

  /** Stops reloading. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.loading;
  }

  /** Reads the revoked grants now (one query; a reload already running is joined). */
  reload(): Promise<void> {
    this.loading ??= this.store
      .recentlyRevoked(this.options.windowSeconds)
      .then(
        (ids) => {
          const next = new Set(ids);
          // A revocation made here while the query ran is kept until a later reload has seen it.
          const keepSince = Date.now() - 60_000;
          for (const [id, at] of this.local) {
            if (at < keepSince) this.local.delete(id);
            else next.add(id);
          }
          this.revoked = next;
          this.loaded = true;
          this.failures = 0;
        },
        (error: unknown) => {
          this.failures += 1;
          this.options.onError?.(error);
        },
      )
      .finally(() => {
        this.loading = undefined;
      });
    return this.loading;
  }
}

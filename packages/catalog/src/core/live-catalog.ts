import { rejectUnknownOptions } from '@gw/options';
import type { CatalogDatabase } from './database';
import { CATALOG_CHANNEL, type CatalogStore, type OpenedRecord } from './store';
import type { RecordKind } from './records';

/** The catalog as the request path reads it: plain, immutable maps, replaced whole on every change. */
export interface CatalogSnapshot {
  /** Records by slug (or prompt id, or API key id), per kind. */
  readonly records: ReadonlyMap<RecordKind, ReadonlyMap<string, OpenedRecord>>;
  /** When this snapshot was read from the database. */
  readonly loadedAt: Date;
}

/** Whether the snapshot follows the database. */
export interface LiveCatalogStatus {
  /** `ok`, or `degraded` while the database cannot be read (the last snapshot is still served). */
  state: 'ok' | 'degraded';
  /** When the current snapshot was read. */
  loadedAt: Date;
  /** Why the last reload failed, while degraded (no secret, no connection string). */
  reason?: string;
}

/** Options of {@link LiveCatalog}. */
export interface LiveCatalogOptions {
  /** A full reload this often, whatever notifications say, in ms (the safety net). Default 30000. */
  reloadIntervalMs?: number;
  /**
   * While the database cannot be read, or notifications are not arriving (the listening
   * connection broke), a reload is tried this often, in ms, so the instance catches up soon after
   * the database returns. Default 1000.
   */
  retryIntervalMs?: number;
  /**
   * How a reload finds what changed: `versions` reads every record's version (right with any
   * number of writers), `audit` reads the audit lines since the last reload (cheapest; right only
   * when writes commit in audit order, as with the embedded database's one connection). Default
   * `versions`.
   */
  changeTracking?: 'versions' | 'audit';
  /** Called for each record whose secrets no configured key opens; the record is left out of the snapshot. Default: none. */
  onUnreadable?: (kind: RecordKind, slug: string) => void;
  /** How long a burst of notifications is gathered into one reload, in ms. Default 20. */
  debounceMs?: number;
  /** Called after every snapshot swap and every failed reload. Default: none. */
  onChange?: (status: LiveCatalogStatus) => void;
}

/** The longest delay a Node.js timer keeps (a longer one fires at once). */
const MAX_TIMER_MS = 2_147_483_647;

/** A duration option: `fallback` when left out, else a number of ms above 0 (or at least 0), timer-sized. */
function milliseconds(value: number | undefined, fallback: number, name: string, zero = false): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !(value >= (zero ? 0 : Number.MIN_VALUE)) || value > MAX_TIMER_MS)
    throw new TypeError(
      `LiveCatalog ${name} must be a ${zero ? 'non-negative' : 'positive'} number of milliseconds up to ${MAX_TIMER_MS}, for example ${fallback}.`,
    );
  return value;
}

const EMPTY: CatalogSnapshot = { records: new Map(), loadedAt: new Date(0) };

/**
 * Keeps an in-memory snapshot of the catalog, swapped atomically when the database changes:
 * LISTEN for every instance's writes, a periodic full reload as the safety net. The request path
 * reads {@link LiveCatalog.snapshot} and never waits on the database; when the database goes away
 * the last snapshot is kept, the status says `degraded`, and the next successful reload catches up.
 */
export class LiveCatalog {
  private current: CatalogSnapshot = EMPTY;
  private state: LiveCatalogStatus = { state: 'ok', loadedAt: EMPTY.loadedAt };
  private timer: NodeJS.Timeout | undefined;
  private debounce: NodeJS.Timeout | undefined;
  private unlisten: (() => Promise<void>) | undefined;
  private reloading: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private byId = new Map<string, OpenedRecord>();
  private auditId = 0;
  private readonly listeners = new Set<(snapshot: CatalogSnapshot) => void>();
  private readonly reloadIntervalMs: number;
  private readonly retryIntervalMs: number;
  private readonly debounceMs: number;

  /**
   * Nothing is read until {@link LiveCatalog.start}. Throws a `TypeError` naming the option for an
   * unknown option (with the spelling to write) or one of the wrong type.
   */
  constructor(
    private readonly db: CatalogDatabase,
    private readonly store: CatalogStore,
    private readonly options: LiveCatalogOptions = {},
  ) {
    if (typeof options !== 'object' || options === null)
      throw new TypeError('LiveCatalog options must be an object such as { reloadIntervalMs: 30000 }.');
    rejectUnknownOptions(
      options,
      ['reloadIntervalMs', 'retryIntervalMs', 'changeTracking', 'onUnreadable', 'debounceMs', 'onChange'],
      'LiveCatalog',
    );
    this.reloadIntervalMs = milliseconds(options.reloadIntervalMs, 30_000, 'reloadIntervalMs');
    this.retryIntervalMs = milliseconds(options.retryIntervalMs, 1_000, 'retryIntervalMs');
    this.debounceMs = milliseconds(options.debounceMs, 20, 'debounceMs', true);
    const tracking = options.changeTracking;
    if (tracking !== undefined && tracking !== 'versions' && tracking !== 'audit')
      throw new TypeError('LiveCatalog changeTracking must be "versions" or "audit".');
    for (const name of ['onUnreadable', 'onChange'] as const) {
      if (options[name] !== undefined && typeof options[name] !== 'function')
        throw new TypeError(`LiveCatalog ${name} must be a function.`);
    }
  }

  /** The current snapshot. Never waits. */
  get snapshot(): CatalogSnapshot {
    return this.current;
  }

  /** Whether the snapshot follows the database. */
  get status(): LiveCatalogStatus {
    return this.state;
  }

  /**
   * Calls `listener` with every new snapshot (only when a record changed, not on every periodic
   * reload); returns a function that stops it. A listener that throws does not stop the others.
   */
  onSnapshot(listener: (snapshot: CatalogSnapshot) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Reads the first snapshot (throws when the database cannot be read), then follows changes. */
  async start(): Promise<void> {
    await this.load();
    await this.subscribe();
    const tick = Math.min(this.retryIntervalMs, this.reloadIntervalMs);
    this.timer = setInterval(() => {
      const behind = this.state.state === 'degraded' || this.unlisten === undefined;
      if (behind || Date.now() - this.current.loadedAt.getTime() >= this.reloadIntervalMs) void this.reload();
    }, tick);
    this.timer.unref();
  }

  /** Reloads now (coalescing concurrent calls); failures are reported in the status, never thrown. */
  reload(): Promise<void> {
    if (this.reloading) {
      this.again = true;
      return this.reloading;
    }
    this.reloading = (async () => {
      do {
        this.again = false;
        try {
          await this.load();
          if (!this.unlisten && !this.stopped) await this.subscribe();
        } catch (error) {
          this.state = { state: 'degraded', loadedAt: this.current.loadedAt, reason: describe(error) };
          this.options.onChange?.(this.state);
        }
      } while (this.again && !this.stopped);
    })().finally(() => {
      this.reloading = undefined;
    });
    return this.reloading;
  }

  /** Stops following the database. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    clearTimeout(this.debounce);
    await this.reloading;
    await this.unlisten?.().catch(() => undefined);
    this.unlisten = undefined;
  }

  private async load(): Promise<void> {
    // Versions first: only new or changed records are read and opened again, so a reload costs
    // little more than one small query when little changed, however large the catalog.
    let byId: Map<string, OpenedRecord>;
    let changed: boolean;
    if (this.options.changeTracking === 'audit' && this.current !== EMPTY) {
      const { lastId, ids } = await this.store.changesSince(this.auditId);
      const fresh = new Map((await this.store.loadByIds(ids, this.options.onUnreadable)).map((r) => [r.id, r]));
      byId = new Map(this.byId);
      for (const id of ids) {
        const record = fresh.get(id);
        if (record) byId.set(id, record);
        else byId.delete(id);
      }
      this.auditId = lastId;
      changed = ids.length > 0;
    } else {
      // Read before the versions: a write in between is applied now and seen again next time.
      const auditId = this.options.changeTracking === 'audit' ? await this.store.lastAuditId() : 0;
      const versions = await this.store.versions();
      const stale = versions.filter((v) => this.byId.get(v.id)?.version !== v.version).map((v) => v.id);
      const fresh = new Map((await this.store.loadByIds(stale, this.options.onUnreadable)).map((r) => [r.id, r]));
      byId = new Map<string, OpenedRecord>();
      for (const v of versions) {
        const record =
          fresh.get(v.id) ?? (this.byId.get(v.id)?.version === v.version ? this.byId.get(v.id) : undefined);
        if (record) byId.set(v.id, record);
      }
      this.auditId = auditId;
      changed = this.current === EMPTY || fresh.size > 0 || byId.size !== this.byId.size;
    }
    const loadedAt = new Date();
    if (changed) {
      const records = new Map<RecordKind, Map<string, OpenedRecord>>();
      for (const record of [...byId.values()].sort((a, b) => (a.slug < b.slug ? -1 : a.slug > b.slug ? 1 : 0))) {
        let byKind = records.get(record.kind);
        if (!byKind) records.set(record.kind, (byKind = new Map()));
        byKind.set(record.slug, record);
      }
      this.byId = byId;
      // One assignment: a request sees the old catalog or the new one, never a mixture.
      this.current = { records, loadedAt };
    } else {
      this.current = { records: this.current.records, loadedAt };
    }
    this.state = { state: 'ok', loadedAt };
    this.options.onChange?.(this.state);
    if (changed) {
      for (const listener of this.listeners) {
        try {
          listener(this.current);
        } catch {
          // A listener's failure is its own; the snapshot is swapped regardless.
        }
      }
    }
  }

  private async subscribe(): Promise<void> {
    try {
      this.unlisten = await this.db.listen(CATALOG_CHANNEL, () => {
        clearTimeout(this.debounce);
        this.debounce = setTimeout(() => void this.reload(), this.debounceMs);
      });
    } catch {
      // Notifications come back with the database; the periodic reload covers the gap.
      this.unlisten = undefined;
    }
  }

  /** Called by the host when the listening connection broke (the database went away). */
  connectionLost(): void {
    this.unlisten = undefined;
  }
}

function describe(error: unknown): string {
  const code = (error as { code?: unknown })?.code;
  return typeof code === 'string' ? `database unavailable (${code})` : 'database unavailable';
}

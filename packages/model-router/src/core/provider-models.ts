import { createHash } from 'node:crypto';
import { providerBase, readUpstreamText } from '../routes/upstream-call';
import { KNOWN_ANTHROPIC_MODELS } from './known-models';
import { KNOWN_BEDROCK_ANTHROPIC_MODELS } from '../providers/bedrock/model-ids';
import { ProviderKey } from './secret';
import { createDispatcher, type Dispatcher } from './upstream';

/** One model of a provider's `GET /v1/models` (Anthropic's fields; others are dropped). */
export interface ProviderModel {
  id: string;
  display_name?: string;
  created_at?: string;
}

/** A provider as {@link ProviderModelLists} needs it (a catalog's `ProviderEntry` fits). */
export interface ModelListProvider {
  slug: string;
  apiKey: string | ProviderKey;
  /** Base URL of the provider's API. Default `https://api.anthropic.com`. */
  baseUrl?: string;
  /** The provider kind: a `bedrock` provider's list is the bundled one, never fetched. Default `anthropic`. */
  provider?: string;
}

/** The models of one provider, and where they come from. */
export interface ProviderModelList {
  models: readonly ProviderModel[];
  /** `provider`: its own `GET /v1/models`; `bundled`: the gateway's {@link KNOWN_ANTHROPIC_MODELS}. */
  source: 'provider' | 'bundled';
  /** When the provider's list was fetched (the `now` clock, ms); undefined for the bundled list. */
  fetchedAt?: number;
}

/** Options of {@link ProviderModelLists}. */
export interface ProviderModelListsOptions {
  /** Age in ms after which a fetched list is refreshed (in the background, by `list`). Default 3600000 (an hour). */
  refreshIntervalMs?: number;
  /** Longest time one refresh may take, every page included, in ms. Default 10000. */
  timeoutMs?: number;
  /** Most pages of `GET /v1/models` (1000 models each) one refresh reads. Default 10. */
  maxPages?: number;
  /** The clock, in ms. Default `Date.now`. */
  now?: () => number;
  /** Called after every fetch with the provider's slug and whether it worked (never the key or the error). Default: none. */
  onRefresh?: (slug: string, outcome: 'ok' | 'error') => void;
  /** The undici dispatcher of the provider calls. Default: a keep-alive `Agent` of its own, closed by `stop()`. */
  dispatcher?: Dispatcher;
}

/** Anthropic's API, for the list of models. */
const DEFAULT_BASE_URL = 'https://api.anthropic.com';
const ANTHROPIC_VERSION = '2023-06-01';
/** Models per page: Anthropic's largest `limit`. */
const PAGE_LIMIT = 1000;
/** Most bytes of one page the gateway reads: 4 MiB (a page of 1000 models is about 100 KiB). */
const MAX_PAGE_BYTES = 4 * 1024 * 1024;
/** Most cached lists (one per slug, base URL and key); the oldest is dropped first. */
const MAX_ENTRIES = 10_000;
/**
 * Most background refreshes `list` runs at once, across providers: 8. A `GET /v1/models` over
 * 1,000 providers starts 8 fetches, not 1,000; later `list` calls start the others as these end.
 */
export const MAX_BACKGROUND_REFRESHES = 8;
/** Shortest wait before a failed fetch is tried again by `list`, in ms (or `refreshIntervalMs` when smaller). */
const RETRY_AFTER_FAILURE_MS = 60_000;

/** The bundled list: {@link KNOWN_ANTHROPIC_MODELS} as models. */
const BUNDLED: ProviderModelList = Object.freeze({
  models: Object.freeze(KNOWN_ANTHROPIC_MODELS.map((id) => Object.freeze({ id }))),
  source: 'bundled' as const,
});

/** A `bedrock` provider's list: {@link KNOWN_BEDROCK_ANTHROPIC_MODELS} as models. */
const BUNDLED_BEDROCK: ProviderModelList = Object.freeze({
  models: Object.freeze(KNOWN_BEDROCK_ANTHROPIC_MODELS.map((id) => Object.freeze({ id }))),
  source: 'bundled' as const,
});

interface Entry {
  /** The provider's last good list, if any. */
  list?: ProviderModelList;
  /** No background fetch before this time (after a failure). */
  retryAt: number;
}

/** Digests of ProviderKey objects, so a catalog's keys are hashed once. */
const keyDigests = new WeakMap<ProviderKey, string>();

function keyDigest(apiKey: string | ProviderKey): string {
  if (apiKey instanceof ProviderKey) {
    let digest = keyDigests.get(apiKey);
    if (digest === undefined) {
      digest = createHash('sha256').update(apiKey.reveal()).digest('hex');
      keyDigests.set(apiKey, digest);
    }
    return digest;
  }
  return createHash('sha256').update(String(apiKey)).digest('hex');
}

function revealKey(apiKey: string | ProviderKey): string {
  return apiKey instanceof ProviderKey ? apiKey.reveal() : String(apiKey);
}

/** The models of one page's `data`: entries without a string `id` are skipped, unknown fields dropped. */
function pageModels(data: unknown[]): ProviderModel[] {
  const models: ProviderModel[] = [];
  for (const item of data) {
    if (typeof item !== 'object' || item === null) continue;
    const { id, display_name, created_at } = item as Record<string, unknown>;
    if (typeof id !== 'string' || id === '') continue;
    const model: ProviderModel = { id };
    if (typeof display_name === 'string') model.display_name = display_name;
    if (typeof created_at === 'string') model.created_at = created_at;
    models.push(Object.freeze(model));
  }
  return models;
}

/**
 * The models each provider really serves, from its own `GET /v1/models`, cached per provider
 * slug, base URL and API key (a rotated key fetches anew). {@link ProviderModelLists.list} never
 * waits: it answers from the cache, or with the bundled {@link KNOWN_ANTHROPIC_MODELS} until a
 * fetch has worked, and refreshes a missing or stale list in the background. Nothing it reports
 * holds the API key.
 */
export class ProviderModelLists {
  readonly #refreshIntervalMs: number;
  readonly #timeoutMs: number;
  readonly #maxPages: number;
  readonly #retryAfterFailureMs: number;
  readonly #now: () => number;
  readonly #onRefresh: ((slug: string, outcome: 'ok' | 'error') => void) | undefined;
  readonly #dispatcher: Dispatcher;
  readonly #ownDispatcher: boolean;
  readonly #entries = new Map<string, Entry>();
  readonly #inFlight = new Map<string, Promise<ProviderModelList>>();
  readonly #aborts = new Set<AbortController>();
  #stopped = false;

  constructor(options: ProviderModelListsOptions = {}) {
    if (typeof options !== 'object' || options === null) {
      throw new TypeError('ProviderModelLists takes an options object, for example { refreshIntervalMs: 3600000 }.');
    }
    const positive = (name: string, value: number | undefined, example: number) => {
      if (value !== undefined && !(typeof value === 'number' && Number.isFinite(value) && value > 0)) {
        throw new TypeError(
          `${name} must be a positive number of milliseconds, for example ${example} (got ${String(value)}).`,
        );
      }
    };
    positive('refreshIntervalMs', options.refreshIntervalMs, 3_600_000);
    positive('timeoutMs', options.timeoutMs, 10_000);
    const maxPages = options.maxPages;
    if (maxPages !== undefined && !(Number.isInteger(maxPages) && maxPages >= 1 && maxPages <= 1000)) {
      throw new TypeError(`maxPages must be a whole number from 1 to 1000, for example 10 (got ${String(maxPages)}).`);
    }
    if (options.now !== undefined && typeof options.now !== 'function') {
      throw new TypeError('now must be a function () => number of milliseconds, such as Date.now.');
    }
    if (options.onRefresh !== undefined && typeof options.onRefresh !== 'function') {
      throw new TypeError("onRefresh must be a function (slug, outcome: 'ok' | 'error') => void.");
    }
    const dispatcher = options.dispatcher;
    if (
      dispatcher !== undefined &&
      (typeof dispatcher !== 'object' ||
        dispatcher === null ||
        typeof (dispatcher as { request?: unknown }).request !== 'function')
    ) {
      throw new TypeError("dispatcher must be an undici Dispatcher, such as new Agent() from 'undici'.");
    }
    this.#refreshIntervalMs = options.refreshIntervalMs ?? 3_600_000;
    this.#timeoutMs = options.timeoutMs ?? 10_000;
    this.#maxPages = maxPages ?? 10;
    this.#retryAfterFailureMs = Math.min(RETRY_AFTER_FAILURE_MS, this.#refreshIntervalMs);
    this.#now = options.now ?? Date.now;
    this.#onRefresh = options.onRefresh;
    this.#ownDispatcher = dispatcher === undefined;
    this.#dispatcher = dispatcher ?? createDispatcher();
  }

  /**
   * The provider's models, at once: its cached `GET /v1/models`, or the bundled list (source
   * `bundled`) while none has been fetched or every fetch failed. A missing or stale list (older
   * than `refreshIntervalMs`) starts one background refresh, at most one at a time per provider
   * and key and {@link MAX_BACKGROUND_REFRESHES} in all, and after a failure none sooner than a
   * minute later (or `refreshIntervalMs`). Never throws.
   */
  list(provider: ModelListProvider): ProviderModelList {
    if (provider.provider === 'bedrock') return BUNDLED_BEDROCK;
    try {
      const key = this.#cacheKey(provider);
      const entry = this.#entries.get(key);
      const now = this.#now();
      const stale = entry?.list?.fetchedAt === undefined || now - entry.list.fetchedAt >= this.#refreshIntervalMs;
      if (
        stale &&
        !this.#stopped &&
        !this.#inFlight.has(key) &&
        this.#inFlight.size < MAX_BACKGROUND_REFRESHES &&
        now >= (entry?.retryAt ?? -Infinity)
      ) {
        void this.#fetch(key, provider);
      }
      return entry?.list ?? BUNDLED;
    } catch {
      return BUNDLED;
    }
  }

  /**
   * Fetches the provider's models now (or joins the fetch under way) and caches them. On any
   * failure (network, a status other than 2xx, a body that is not a list of models, the
   * `timeoutMs`) it resolves with the previous list, or the bundled one. Never rejects.
   */
  refresh(provider: ModelListProvider): Promise<ProviderModelList> {
    if (provider.provider === 'bedrock') return Promise.resolve(BUNDLED_BEDROCK);
    try {
      const key = this.#cacheKey(provider);
      if (this.#stopped) return Promise.resolve(this.#entries.get(key)?.list ?? BUNDLED);
      return this.#inFlight.get(key) ?? this.#fetch(key, provider);
    } catch {
      return Promise.resolve(BUNDLED);
    }
  }

  /**
   * Whether `model` is new, for a custom selection with `autoEnableNew`: it is not in
   * `knownAtSave` (the models known when the selection was saved), or, without it, not in the
   * bundled {@link KNOWN_ANTHROPIC_MODELS}.
   */
  isNewModel(provider: ModelListProvider, model: string, knownAtSave?: readonly string[]): boolean {
    const bundled = provider.provider === 'bedrock' ? KNOWN_BEDROCK_ANTHROPIC_MODELS : KNOWN_ANTHROPIC_MODELS;
    return !(knownAtSave ?? bundled).includes(model);
  }

  /** Aborts the fetches under way (clearing their timers), starts no more, and closes its own dispatcher. */
  stop(): void {
    this.#stopped = true;
    for (const abort of this.#aborts) abort.abort();
    this.#aborts.clear();
    if (this.#ownDispatcher) this.#dispatcher.close().catch(() => undefined);
  }

  #cacheKey(provider: ModelListProvider): string {
    return JSON.stringify([provider.slug, provider.baseUrl ?? DEFAULT_BASE_URL, keyDigest(provider.apiKey)]);
  }

  #fetch(key: string, provider: ModelListProvider): Promise<ProviderModelList> {
    const slug = String(provider.slug);
    let outcome: 'ok' | 'error' = 'error';
    const settled: Promise<ProviderModelList> = this.#fetchPages(provider)
      .then(
        (models) => {
          const list: ProviderModelList = Object.freeze({
            models: Object.freeze(models),
            source: 'provider' as const,
            fetchedAt: this.#now(),
          });
          this.#store(key, { list, retryAt: -Infinity });
          outcome = 'ok';
          return list;
        },
        () => {
          const previous = this.#entries.get(key)?.list;
          this.#store(key, { list: previous, retryAt: this.#now() + this.#retryAfterFailureMs });
          return previous ?? BUNDLED;
        },
      )
      .catch(() => this.#entries.get(key)?.list ?? BUNDLED)
      .then((list) => {
        // Settled before the host hears of it, so its onRefresh sees the new state.
        if (this.#inFlight.get(key) === settled) this.#inFlight.delete(key);
        this.#report(slug, outcome);
        return list;
      });
    this.#inFlight.set(key, settled);
    return settled;
  }

  /** Reads every page, within `timeoutMs` in all. Rejects with errors that never hold the key. */
  async #fetchPages(provider: ModelListProvider): Promise<ProviderModel[]> {
    const abort = new AbortController();
    this.#aborts.add(abort);
    const timer = setTimeout(() => abort.abort(), this.#timeoutMs);
    timer.unref();
    try {
      const base = providerBase(provider.baseUrl ?? DEFAULT_BASE_URL);
      const headers = {
        accept: 'application/json',
        'anthropic-version': ANTHROPIC_VERSION,
        'x-api-key': revealKey(provider.apiKey),
      };
      const models: ProviderModel[] = [];
      const seen = new Set<string>();
      let cursor: string | undefined;
      for (let page = 0; page < this.#maxPages; page++) {
        const query = new URLSearchParams({ limit: String(PAGE_LIMIT) });
        if (cursor !== undefined) query.set('after_id', cursor);
        const response = await this.#dispatcher.request({
          origin: base.origin,
          path: `${base.path}/v1/models?${query.toString()}`,
          method: 'GET',
          headers,
          headersTimeout: this.#timeoutMs,
          bodyTimeout: this.#timeoutMs,
          signal: abort.signal,
        });
        if (response.statusCode < 200 || response.statusCode > 299) {
          await response.body.dump().catch(() => undefined);
          throw new Error(`GET /v1/models answered ${response.statusCode}.`);
        }
        let body: unknown;
        try {
          body = JSON.parse(await readUpstreamText(response.body, MAX_PAGE_BYTES));
        } catch {
          body = undefined;
        }
        const data = (body as { data?: unknown } | null | undefined)?.data;
        if (!Array.isArray(data)) throw new Error('GET /v1/models answered with no list of models.');
        const pageList = pageModels(data);
        for (const model of pageList) {
          if (seen.has(model.id)) continue;
          seen.add(model.id);
          models.push(model);
        }
        if ((body as { has_more?: unknown }).has_more !== true) break;
        const lastId = (body as { last_id?: unknown }).last_id;
        const next = typeof lastId === 'string' && lastId !== '' ? lastId : pageList.at(-1)?.id;
        // A page that does not move the cursor on would be asked for again and again.
        if (next === undefined || next === cursor) break;
        cursor = next;
      }
      return models;
    } finally {
      clearTimeout(timer);
      this.#aborts.delete(abort);
    }
  }

  /** Caches an entry as the newest, dropping the oldest beyond {@link MAX_ENTRIES}. */
  #store(key: string, entry: Entry): void {
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    while (this.#entries.size > MAX_ENTRIES) {
      const oldest = this.#entries.keys().next();
      if (oldest.done) break;
      this.#entries.delete(oldest.value);
    }
  }

  #report(slug: string, outcome: 'ok' | 'error'): void {
    try {
      this.#onRefresh?.(slug, outcome);
    } catch {
      // The host's callback must not turn a refresh into a rejection.
    }
  }
}

import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** Reads the signed-token cache's counters when Prometheus scrapes. */
export type TokenCacheStatsSource = () => { hits: number; misses: number; size: number } | undefined;

/** What the catalog's metrics read when Prometheus scrapes. */
export interface CatalogMetricsSources {
  /** Whether the snapshot follows the database, and when it was read. Default: no catalog database. */
  catalogStatus?: () => { state: 'ok' | 'degraded'; loadedAt: Date };
  /** Records served, by kind. */
  catalogCounts?: () => ReadonlyMap<string, number>;
  /** The request record writer's counts. Default: no writer (no catalog database). */
  requestLog?: () => { written: number; dropped: number; queued: number } | undefined;
  /** The span pipeline's counts. Default: no OpenTelemetry SDK started. */
  tracing?: () =>
    { exported: number; dropped: { queueFull: number; exportFailed: number }; queued: number } | undefined;
  /** Entries and bytes the response cache holds in this process (the in-memory store). Default: none. */
  responseCache?: () => { entries: number; bytes: number } | undefined;
}

/** A counter that reads a running total from `read` when scraped. */
function totalCounter(name: string, help: string, registers: Registry[], read: () => number | undefined): void {
  let seen = 0;
  new Counter({
    name,
    help,
    registers,
    collect() {
      const now = read() ?? 0;
      if (now > seen) this.inc(now - seen);
      seen = Math.max(seen, now);
    },
  });
}

/** The gateway's Prometheus metrics, in a registry of its own. */
export class GatewayMetrics {
  readonly registry = new Registry();
  private readonly requests: Counter<'route' | 'status'>;
  private readonly virtualMemberUnavailable: Counter<'server'>;
  private readonly upstream: Histogram<'route' | 'target'>;
  private readonly keySetFetches: Counter<'outcome'>;
  private readonly upstreamTokenRefreshes: Counter<'server' | 'outcome'>;
  private readonly idleTimeouts: Counter<'route' | 'target'>;
  private readonly retries: Counter<'route' | 'target'>;
  private readonly wouldDeny: Counter<'route'>;
  private readonly cacheRequests: Counter<'status'>;
  private readonly cacheTokensSaved: Counter<'kind'>;
  private readonly cacheRedisErrors: Counter<'operation'>;
  /**
   * Requests finished since the last scrape, by route family and status: counted here with one
   * map lookup, and added to `gateway_requests_total` when Prometheus scrapes (prom-client's `inc`
   * hashes its label object on every call). Bounded: route families and HTTP statuses are few.
   */
  private readonly pendingRequests = new Map<
    string,
    Map<number, { labels: { route: string; status: string }; count: number }>
  >();

  constructor(tokenCache?: TokenCacheStatsSource, catalog: CatalogMetricsSources = {}) {
    const registers = [this.registry];
    const pendingRequests = this.pendingRequests;
    this.requests = new Counter({
      name: 'gateway_requests_total',
      help: 'Requests by route family and status.',
      labelNames: ['route', 'status'],
      registers,
      collect() {
        for (const byStatus of pendingRequests.values())
          for (const pending of byStatus.values())
            if (pending.count > 0) {
              this.inc(pending.labels, pending.count);
              pending.count = 0;
            }
      },
    });
    this.upstream = new Histogram({
      name: 'gateway_upstream_duration_seconds',
      help: 'Time from sending a request upstream to its response headers.',
      labelNames: ['route', 'target'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.virtualMemberUnavailable = new Counter({
      name: 'gateway_virtual_member_unavailable_total',
      help: 'Members of virtual MCP servers left out of a merged list (no answer within timeout_ms, or a failure), by server.',
      labelNames: ['server'],
      registers,
    });
    this.keySetFetches = new Counter({
      name: 'gateway_idp_jwks_fetches_total',
      help: "Fetches of the identity provider's key set, by outcome.",
      labelNames: ['outcome'],
      registers,
    });
    this.upstreamTokenRefreshes = new Counter({
      name: 'gateway_upstream_token_refresh_total',
      help: "Refreshes of users' upstream OAuth tokens (CONTRACT section 15), by MCP server and outcome: refreshed, refreshed_after_failure, refresh_refused, refresh_failed.",
      labelNames: ['server', 'outcome'],
      registers,
    });
    this.idleTimeouts = new Counter({
      name: 'gateway_stream_idle_timeouts_total',
      help: 'Responses cut off because the upstream sent nothing for its idle timeout.',
      labelNames: ['route', 'target'],
      registers,
    });
    this.wouldDeny = new Counter({
      name: 'gateway_access_would_deny_total',
      help: 'Requests access mode "report" let through that "policies" would refuse, by route family.',
      labelNames: ['route'],
      registers,
    });
    this.retries = new Counter({
      name: 'gateway_upstream_retries_total',
      help: 'Upstream calls repeated by retries (x-gateway-config retry, within the gateway limits).',
      labelNames: ['route', 'target'],
      registers,
    });
    this.cacheRequests = new Counter({
      name: 'gateway_cache_requests_total',
      help: 'Requests that asked for the response cache, by x-gateway-cache-status (HIT, MISS, REFRESH, DISABLED).',
      labelNames: ['status'],
      registers,
    });
    this.cacheTokensSaved = new Counter({
      name: 'gateway_cache_tokens_saved_total',
      help: 'Tokens of the answers served from the response cache (their usage), by kind (input, output).',
      labelNames: ['kind'],
      registers,
    });
    this.cacheRedisErrors = new Counter({
      name: 'gateway_cache_redis_errors_total',
      help: 'Redis calls of the response cache that failed or took longer than their bound, by operation.',
      labelNames: ['operation'],
      registers,
    });
    new Gauge({
      name: 'gateway_cache_entries',
      help: "Answers the response cache holds in this process's memory (0 with Redis).",
      registers,
      collect() {
        this.set(catalog.responseCache?.()?.entries ?? 0);
      },
    });
    new Gauge({
      name: 'gateway_cache_bytes',
      help: "Bytes of answers the response cache holds in this process's memory (0 with Redis).",
      registers,
      collect() {
        this.set(catalog.responseCache?.()?.bytes ?? 0);
      },
    });
    let hits = 0;
    let misses = 0;
    new Counter({
      name: 'gateway_token_cache_hits_total',
      help: 'Signed identity tokens served from the cache.',
      registers,
      collect() {
        const now = tokenCache?.()?.hits ?? 0;
        this.inc(now - hits);
        hits = now;
      },
    });
    new Counter({
      name: 'gateway_token_cache_misses_total',
      help: 'Signed identity tokens that had to be signed.',
      registers,
      collect() {
        const now = tokenCache?.()?.misses ?? 0;
        this.inc(now - misses);
        misses = now;
      },
    });
    new Gauge({
      name: 'gateway_token_cache_size',
      help: 'Signed identity tokens in the cache.',
      registers,
      collect() {
        this.set(tokenCache?.()?.size ?? 0);
      },
    });
    new Gauge({
      name: 'gateway_catalog_degraded',
      help: '1 while the catalog database cannot be read and the last snapshot is served, else 0.',
      registers,
      collect() {
        this.set(catalog.catalogStatus?.().state === 'degraded' ? 1 : 0);
      },
    });
    new Gauge({
      name: 'gateway_catalog_snapshot_timestamp_seconds',
      help: 'When the catalog snapshot being served was read from the database (0: no catalog database).',
      registers,
      collect() {
        this.set((catalog.catalogStatus?.().loadedAt.getTime() ?? 0) / 1000);
      },
    });
    totalCounter(
      'gateway_request_records_written_total',
      'Request records inserted into the catalog database.',
      registers,
      () => catalog.requestLog?.()?.written,
    );
    totalCounter(
      'gateway_request_records_dropped_total',
      'Request records lost because the queue was full (the database slow or unreachable) or at shutdown.',
      registers,
      () => catalog.requestLog?.()?.dropped,
    );
    new Gauge({
      name: 'gateway_request_records_queued',
      help: 'Request records waiting to be inserted.',
      registers,
      collect() {
        this.set(catalog.requestLog?.()?.queued ?? 0);
      },
    });
    totalCounter(
      'gateway_trace_spans_exported_total',
      'Spans the OTLP collector accepted.',
      registers,
      () => catalog.tracing?.()?.exported,
    );
    const spansDropped = new Counter({
      name: 'gateway_trace_spans_dropped_total',
      help: 'Spans not exported: the queue was full (queue_full), or the export failed or timed out (export_failed).',
      labelNames: ['reason'],
      registers,
      collect() {
        const dropped = catalog.tracing?.()?.dropped;
        for (const [reason, now] of [
          ['queue_full', dropped?.queueFull ?? 0],
          ['export_failed', dropped?.exportFailed ?? 0],
        ] as const) {
          const before = droppedSeen.get(reason) ?? 0;
          if (now > before) spansDropped.inc({ reason }, now - before);
          droppedSeen.set(reason, Math.max(before, now));
        }
      },
    });
    const droppedSeen = new Map<string, number>();
    new Gauge({
      name: 'gateway_trace_spans_queued',
      help: 'Spans ended and waiting for (or in) an export.',
      registers,
      collect() {
        this.set(catalog.tracing?.()?.queued ?? 0);
      },
    });
    new Gauge({
      name: 'gateway_catalog_records',
      help: 'Catalog records served, from the config file and the database, by kind.',
      labelNames: ['kind'],
      registers,
      collect() {
        for (const [kind, count] of catalog.catalogCounts?.() ?? []) this.set({ kind }, count);
      },
    });
  }

  /** Records one finished request. */
  recordRequest(route: string, status: number, target: string | undefined, upstreamMs: number | undefined): void {
    let byStatus = this.pendingRequests.get(route);
    if (byStatus === undefined) {
      byStatus = new Map();
      this.pendingRequests.set(route, byStatus);
    }
    const pending = byStatus.get(status);
    if (pending === undefined) byStatus.set(status, { labels: { route, status: String(status) }, count: 1 });
    else pending.count += 1;
    if (upstreamMs !== undefined) this.upstream.observe({ route, target: target ?? 'none' }, upstreamMs / 1000);
  }

  /** Records one response cut off by an upstream idle timeout. */
  recordStreamIdleTimeout(route: string, target: string | undefined): void {
    this.idleTimeouts.inc({ route, target: target ?? 'none' });
  }

  /** Counts a request access mode `report` let through that `policies` would refuse. */
  recordWouldDeny(route: string): void {
    this.wouldDeny.inc({ route });
  }

  /** Records the retries of one request. */
  recordRetries(route: string, target: string | undefined, retries: number): void {
    this.retries.inc({ route, target: target ?? 'none' }, retries);
  }

  /** Records how the response cache answered one request, and the tokens a hit saved. */
  recordCache(status: string, tokensSaved?: { input: number; output: number }): void {
    this.cacheRequests.inc({ status });
    if (tokensSaved) {
      if (tokensSaved.input > 0) this.cacheTokensSaved.inc({ kind: 'input' }, tokensSaved.input);
      if (tokensSaved.output > 0) this.cacheTokensSaved.inc({ kind: 'output' }, tokensSaved.output);
    }
  }

  /** Records one Redis call of the response cache that failed or timed out. */
  recordCacheRedisError(operation: string): void {
    this.cacheRedisErrors.inc({ operation });
  }

  /** Records one refresh of a user's upstream OAuth token for MCP server `server`. */
  recordUpstreamTokenRefresh(server: string, outcome: string): void {
    this.upstreamTokenRefreshes.inc({ server, outcome });
  }

  /** Counts a member of a virtual MCP server left out of a merged list (`gateway_virtual_member_unavailable_total{server}`). */
  recordVirtualMemberUnavailable(server: string): void {
    this.virtualMemberUnavailable.inc({ server });
  }

  /** Records one fetch of an identity provider's key set. */
  recordKeySetFetch(outcome: 'ok' | 'error'): void {
    this.keySetFetches.inc({ outcome });
  }
}

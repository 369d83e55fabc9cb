import { embeddedDatabaseFootprint, startupFinished } from './start-footprint';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { IdentityTokenSigner } from '@gw/jwks';
import {
  KNOWN_ANTHROPIC_MODELS,
  MemoryCacheStore,
  ProviderModelLists,
  type ResponseCacheStore,
} from '@gw/model-router';
import type { Logger } from 'pino';
import { createGateway, type Gateway } from './app';
import { deferredSigner, signingKeyAtStart, type StartSigningKey } from './deferred-signing-key';
import { RedisCacheStore } from './cache/redis-store';
import { limitCountersFromEnv } from './limits/limit-env';
import { dataDirectory, openGatewayCatalog } from './catalog/open-catalog';
import { catalogRecordChecks } from './catalog/record-checks';
import { publicBaseUrlWarning } from './config/mcp-security';
import type { GatewayConfig } from './config/schema';
import { configStartRules, type CheckedConfig } from './config/start-rules';
import type * as DemoMcpServer from './demo/demo-mcp-server';
import { DEMO_API_KEY, embeddedDefault } from './demo/embedded-default';
import { flushLogger } from './observability/logger';
import { startTracing } from './observability/tracing';
import { InFlightList } from './in-flight-list';
import { responseCacheSettings, type StartSettings } from './start-settings';

/*
 * The gateway's start once the environment and the config file passed their checks (main.ts runs
 * those first, with few modules): the catalog, the signing key, the caches, the app and its server.
 */

/**
 * Closes every connection past `max` open ones from the same peer address, as soon as it is
 * accepted (before any byte is read), so one client cannot take every connection.
 */
function capConnectionsPerIp(server: Server, max: number): void {
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    const count = open.get(address) ?? 0;
    if (count >= max) {
      socket.destroy();
      return;
    }
    open.set(address, count + 1);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left === 0) open.delete(address);
      else open.set(address, left);
    });
  });
}

/**
 * The frame that ends an event stream still open when the shutdown grace is over, in the shape of
 * its route family, so SDKs raise instead of returning a truncated answer; undefined for streams
 * that have no error frame (MCP), which are closed.
 */
export function shutdownFrame(path: string): string | undefined {
  const message = 'The gateway is shutting down; retry the request.';
  if (path.startsWith('/v1/chat/completions') || path.startsWith('/v1/prompts/')) {
    return `data: ${JSON.stringify({ error: { message, type: 'api_error', param: null, code: 'gateway_shutting_down' } })}\n\n`;
  }
  if (path.startsWith('/v1/messages')) {
    return `event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: 'api_error', message } })}\n\n`;
  }
  return undefined;
}

/** A response in flight and the path it was asked at (before the listener rewrites `req.url`). */
interface OpenResponse {
  path: string;
  res: ServerResponse;
}

/** Keeps the responses in flight, so the shutdown can end the streams that outlast its grace. */
function trackOpenResponses(server: Server): InFlightList<OpenResponse> {
  // A list, not a Set: a Set that each request joins and leaves keeps the request's objects alive
  // until the next full garbage collection (InFlightList).
  const open = new InFlightList<OpenResponse>();
  // Before the gateway's listener, which rewrites `req.url` below its mount point.
  server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
    const entry = open.add({ path: req.url ?? '/', res });
    res.once('close', () => open.remove(entry));
  });
  return open;
}

/** Ends every event stream still open with its family's error frame; the rest are cut off. */
function endOpenStreams(open: Iterable<OpenResponse>): void {
  for (const { path, res } of open) {
    if (res.writableEnded || !res.headersSent) continue;
    if (!String(res.getHeader('content-type') ?? '').startsWith('text/event-stream')) continue;
    const frame = shutdownFrame(path);
    if (frame === undefined) continue;
    // The route may still try to write before it sees the close: nothing of that may throw.
    res.on('error', () => undefined);
    res.end(frame);
  }
}

/**
 * The response cache's store from the environment: a Redis shared by every instance when
 * `REDIS_URL` is set (each call bounded by `GATEWAY_CACHE_REDIS_TIMEOUT_MS`, default 50), else
 * this process's memory bounded by `GATEWAY_CACHE_MAX_MB` (default 256).
 */
export function responseCacheStore(
  env: NodeJS.ProcessEnv,
  logger: Logger,
  onRedisError: (operation: 'get' | 'set' | 'verify') => void,
  macKey: Buffer,
): { store: ResponseCacheStore; close?: () => Promise<void>; ready?: () => Promise<boolean> } {
  const { maxMb, timeoutMs, url } = responseCacheSettings(env);
  if (!url) return { store: new MemoryCacheStore({ maxBytes: maxMb * 1024 * 1024 }) };
  // An entry refused on reading (its MAC, its size) counts as operation "verify".
  const store = new RedisCacheStore({
    url,
    timeoutMs,
    logger,
    macKey,
    onError: onRedisError,
    onRejected: () => onRedisError('verify'),
  });
  return { store, close: () => store.close(), ready: () => store.ready() };
}

/**
 * The origin of the OAuth authorization server when the config has `oauth`: `PUBLIC_BASE_URL`,
 * required with a config file; the development default (no config file) without it uses
 * `http://127.0.0.1:<PORT>`, or leaves OAuth off when the port is chosen at start (`PORT=0`).
 */
function oauthPublicBaseUrl(
  config: GatewayConfig,
  env: NodeJS.ProcessEnv,
  publicBaseUrl: string | undefined,
  logger: Logger,
): string | undefined {
  if (!config.oauth || publicBaseUrl) return publicBaseUrl;
  if (env.GATEWAY_CONFIG) {
    throw new Error(
      'config oauth needs PUBLIC_BASE_URL: set it to the address MCP clients use, such as "https://gateway.example.com".',
    );
  }
  const port = Number(env.PORT ?? 8787);
  const host = env.HOST ?? '127.0.0.1';
  if (port === 0 || !/^(127\.0\.0\.1|localhost)$/.test(host)) {
    delete config.oauth;
    logger.info({}, 'development default: OAuth sign-in is off (set PUBLIC_BASE_URL to turn it on)');
    return undefined;
  }
  return `http://${host}:${port}`;
}

/**
 * The start-up banner of the development default for a terminal: the console's address and the
 * generated admin key (and the demo API key) in a few readable lines.
 */
export function developmentBanner(details: {
  consoleUrl: string;
  adminUrl: string;
  adminKey: string;
  demoApiKey?: string;
}): string {
  const lines = [
    'Gateway development default (not for production)',
    '',
    `  Console      ${details.consoleUrl}`,
    `  Admin API    ${details.adminUrl}`,
    `  Admin key    ${details.adminKey}`,
    ...(details.demoApiKey === undefined ? [] : [`  Demo API key ${details.demoApiKey}`]),
    '',
    'The admin key changes on every start: set GATEWAY_ADMIN_KEY to keep one.',
  ];
  const width = Math.max(...lines.map((l) => l.length)) + 2;
  const rule = `+${'-'.repeat(width)}+`;
  return `\n${rule}\n${lines.map((l) => `| ${l.padEnd(width - 1)}|`).join('\n')}\n${rule}\n\n`;
}

/**
 * Starts the gateway with the environment's {@link StartSettings}, `JWT_PRIVATE_KEY` loaded when
 * set and, when `GATEWAY_CONFIG` is set, its config file, all checked already (main.ts); without a
 * config file, the development default with its demo MCP server. Resolves once the server listens.
 */
export async function startGateway(
  env: NodeJS.ProcessEnv,
  logger: Logger,
  settings: StartSettings,
  configFile: CheckedConfig | undefined,
  signingKey: StartSigningKey | undefined,
): Promise<{ server: Server; stop: () => Promise<void> }> {
  const { publicBaseUrl, trustedProxies, allowedOrigins, host, port, limits, graceMs } = settings;
  const { requestLogDays, requestLogQueue, responsesDays } = settings;
  const offLoopback = publicBaseUrlWarning(host, publicBaseUrl);
  if (offLoopback !== undefined) logger.warn({ host: host.slice(0, 60) }, offLoopback);
  const cleanups: (() => Promise<void>)[] = [];
  // The OpenTelemetry SDK only when an OTLP endpoint is set; otherwise nothing is started.
  const tracing = startTracing(env);
  if (tracing) cleanups.push(() => tracing.shutdown());
  let checked: CheckedConfig;
  let identityProviderKeys;
  if (configFile) {
    checked = configFile;
  } else {
    // The demo MCP server (the MCP SDK's server side, ~20 MB resident) only for the development
    // default: a gateway with a config file never loads it.
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded only when used
    const { startDemoMcpServer } = require('./demo/demo-mcp-server') as typeof DemoMcpServer;
    const demo = await startDemoMcpServer();
    cleanups.push(demo.close);
    const defaults = embeddedDefault(demo.url, env);
    checked = configStartRules(env, defaults.config);
    identityProviderKeys = defaults.demoIdentityProviderKeys;
  }
  const { config, adminClaim, fixedMode } = checked;
  if (fixedMode?.mode === 'open' && env.NODE_ENV === 'production') {
    logger.warn(
      { accessMode: 'open' },
      'access mode is open: every authenticated caller reaches every provider, MCP server and integration. Set GATEWAY_ACCESS_MODE=policies (or access.mode in the config) and define policies to limit them.',
    );
  }
  const signing: { signer?: IdentityTokenSigner } = {};
  const modelLists = new ProviderModelLists();
  cleanups.push(async () => modelLists.stop());
  let catalogState: 'ok' | 'degraded' = 'ok';
  if (!env.DATABASE_URL?.trim()) embeddedDatabaseFootprint();
  const catalog = await openGatewayCatalog({
    env,
    config,
    logger,
    developmentDefault: !env.GATEWAY_CONFIG,
    // One line when the database goes away and one when the catalog has caught up, not one a reload.
    onStatus: (status) => {
      if (status.state === catalogState) return;
      catalogState = status.state;
      if (status.state === 'degraded') {
        logger.warn(
          { reason: status.reason, servingSince: status.loadedAt.toISOString() },
          'catalog database unreachable: serving the last catalog read (GET /healthz says degraded)',
        );
      } else {
        logger.info({}, 'catalog database reachable again: the catalog has caught up');
      }
    },
    hooks: catalogRecordChecks({
      signer: () => signing.signer,
      acceptsIdentityTokens: config.auth?.jwt_validation !== undefined,
      // A custom selection remembers the provider's models when it was saved (autoEnableNew).
      currentModels: (provider) =>
        typeof provider.apiKey === 'string'
          ? modelLists
              .list({
                slug: String(provider.slug),
                apiKey: provider.apiKey,
                baseUrl: provider.baseUrl as string | undefined,
              })
              .models.map((m) => m.id)
          : KNOWN_ANTHROPIC_MODELS,
    }),
  });
  cleanups.unshift(catalog.close);
  // A `jwt_header` server of the config file or of the catalog database needs the signing key.
  const storedServers = [...(catalog.live.snapshot.records.get('mcp-servers')?.values() ?? [])].map(
    (record) => record.data as { user_identity_forwarding?: { method?: unknown } },
  );
  const jwtHeaderInUse = [...(config.mcpServers ?? []), ...storedServers].some(
    (s) => s.user_identity_forwarding?.method === 'jwt_header',
  );
  // The OAuth authorization server (config `oauth`) signs access tokens with the same key.
  const oauthBaseUrl = oauthPublicBaseUrl(config, env, publicBaseUrl, logger);
  if (config.oauth && env.NODE_ENV === 'production' && !env.JWT_PRIVATE_KEY) {
    throw new Error(
      'config oauth signs access tokens with JWT_PRIVATE_KEY: set it (the same RSA key on every instance).',
    );
  }
  // Without JWT_PRIVATE_KEY, the temporary key is made when first needed (deferred-signing-key.ts):
  // about 0.2 s of CPU a start.
  const keys =
    signingKey ??
    signingKeyAtStart({
      privateKeyPem: env.JWT_PRIVATE_KEY,
      previousPublicKeysPem: env.JWT_PREVIOUS_PUBLIC_KEYS,
      production: env.NODE_ENV === 'production',
      jwtHeaderInUse: jwtHeaderInUse || config.oauth !== undefined,
    });
  if (keys.ephemeral) {
    logger.warn(
      { kid: keys.generated() ? keys.key?.kid : undefined },
      'JWT_PRIVATE_KEY is not set: signing with a temporary development key. Tokens stop verifying when the gateway restarts; set JWT_PRIVATE_KEY in production.',
    );
  }
  signing.signer = keys.key ? deferredSigner(keys.key) : undefined;
  if (!publicBaseUrl && env.NODE_ENV === 'production') {
    logger.warn(
      {},
      "PUBLIC_BASE_URL is not set: OAuth metadata and 401 challenges name the origin from each request's Host header. Set PUBLIC_BASE_URL to the address clients use.",
    );
  }
  // The metrics exist once the gateway is built; Redis errors before that are not counted.
  const built: { gateway?: Gateway } = {};
  const cache = responseCacheStore(
    env,
    logger,
    (operation) => built.gateway?.metrics.recordCacheRedisError(operation),
    catalog.cacheMacKey,
  );
  if (cache.close) cleanups.push(cache.close);
  // Connected before the first request (at most 2 s; a Redis that is down only means MISS).
  if (cache.ready && !(await cache.ready())) {
    logger.warn({}, 'response cache: Redis not reachable at start-up; requests go to the provider (MISS) until it is');
  }
  const limitCounters = limitCountersFromEnv(env);
  if (limitCounters.close) cleanups.push(limitCounters.close);
  if (limitCounters.ready && !(await limitCounters.ready())) {
    logger.warn(
      { onStoreUnavailable: limitCounters.onStoreUnavailable },
      'limits: Redis not reachable at start-up; limited requests follow GATEWAY_LIMITS_ON_STORE_UNAVAILABLE until it is',
    );
  }
  const gateway = createGateway({
    config,
    signingKey: keys.key,
    jwks: keys.jwks,
    logger,
    identityProviderKeys,
    publicBaseUrl,
    allowedOrigins,
    oauthPublicBaseUrl: oauthBaseUrl,
    trustedProxies,
    catalog,
    adminClaim,
    modelLists,
    ...(fixedMode ? { accessMode: fixedMode.mode, accessModeSource: fixedMode.source } : {}),
    requestLog: requestLogDays === 0 ? false : { retentionDays: requestLogDays, maxQueue: requestLogQueue },
    tracingStats: tracing ? () => tracing.stats : undefined,
    cacheStore: cache.store,
    responsesRetentionDays: responsesDays,

    limitCounters: limitCounters.store,
    limitsOnStoreUnavailable: limitCounters.onStoreUnavailable,
  });
  built.gateway = gateway;
  // First, while the database is open: the request records still queued are written.
  cleanups.unshift(() => gateway.close());
  const { listener } = gateway;
  const server = createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      // How often Node looks for connections past those timeouts (its default, 30 s, would let a
      // slow client overstay a 10 s limit threefold).
      connectionsCheckingInterval: Math.min(1_000, Math.max(50, Math.floor(limits.headersTimeoutMs / 4))),
    },
    listener,
  );
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  server.maxConnections = limits.maxConnections;
  server.maxHeadersCount = limits.maxHeadersCount;
  capConnectionsPerIp(server, limits.maxConnectionsPerIp);
  const openResponses = trackOpenResponses(server);
  server.listen(port, host);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const address = server.address();
  const base = typeof address === 'object' && address ? `http://${host}:${address.port}` : `http://${host}:${port}`;
  gateway.listeningOn(
    `http://${host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host}:${typeof address === 'object' && address ? address.port : port}`,
  );
  logger.info({ url: base, kid: keys.generated() ? keys.key?.kid : undefined }, `gateway listening on ${base}`);
  startupFinished();
  logger.info(
    { catalog: catalog.db.kind },
    catalog.db.kind === 'postgres'
      ? 'catalog: PostgreSQL (DATABASE_URL), changes shared with every instance'
      : `catalog: embedded database in ${dataDirectory(env)}`,
  );
  if (catalog.adminKey !== undefined && !env.GATEWAY_ADMIN_KEY) {
    // A person at a terminal reads a short banner; anything else (a log collector) gets JSON lines.
    if (process.stdout.isTTY === true) {
      flushLogger(logger);
      process.stdout.write(
        developmentBanner({
          consoleUrl: `${base}/console`,
          adminUrl: `${base}/admin/v1`,
          adminKey: catalog.adminKey,
          demoApiKey: env.GATEWAY_CONFIG ? undefined : DEMO_API_KEY,
        }),
      );
    } else {
      logger.warn(
        { adminKey: catalog.adminKey, consoleUrl: `${base}/console` },
        `development admin key (GATEWAY_ADMIN_KEY is not set): "${catalog.adminKey}" for ${base}/admin/v1 and ${base}/console; it changes on every start. Set GATEWAY_ADMIN_KEY to keep one.`,
      );
    }
  } else if (catalog.adminKey === undefined && !adminClaim) {
    logger.info(
      {},
      'admin API disabled: set GATEWAY_ADMIN_KEY (at least 24 characters) to manage the catalog at /admin/v1',
    );
  }
  if (!env.GATEWAY_CONFIG) {
    logger.info(
      {
        demoApiKey: DEMO_API_KEY,
        mcpServers: (config.mcpServers ?? []).map((s) => `${base}/mcp/${s.slug}`),
        providers: (config.providers ?? []).map((p) => `@${p.slug}`),
      },
      `development default (GATEWAY_CONFIG is not set): demo API key "${DEMO_API_KEY}", a demo MCP server with a whoami tool under /mcp/demo-claims, /mcp/demo-jwt and /mcp/demo-bearer, ${
        config.providers?.length
          ? 'and @anthropic from ANTHROPIC_API_KEY'
          : 'no model providers (set ANTHROPIC_API_KEY to add @anthropic)'
      }. Not for production.`,
    );
    logger.info({}, 'see every forwarding method at work: npx -y pnpm@10 demo');
  }
  flushLogger(logger);

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= new Promise<void>((resolve) => {
      logger.info({}, 'shutting down: no new connections, finishing in-flight requests');
      flushLogger(logger);
      // Streams shorter than the grace finish; longer ones end with an error frame, then every
      // connection still open is closed.
      const force = setTimeout(() => {
        endOpenStreams(openResponses);
        setTimeout(() => server.closeAllConnections(), 100).unref();
      }, graceMs);
      force.unref();
      // Streams that only wait for notifications end now: their clients open them again elsewhere.
      gateway.endStreams();
      server.close(() => {
        clearTimeout(force);
        // In order: the gateway (its queued records), then the catalog database, the rest.
        void cleanups
          .reduce((previous, cleanup) => previous.then(() => cleanup().catch(() => undefined)), Promise.resolve())
          .then(() => {
            flushLogger(logger);
            resolve();
          });
      });
      server.closeIdleConnections();
    }));
  return { server, stop };
}

import { randomBytes } from 'node:crypto';
import type { RequestListener } from 'node:http';
import express, { type Express, type RequestHandler } from 'express';
import type { Logger } from 'pino';
import { jwksHandler, type JsonWebKeySet, type KeyResolver, type SigningKey } from '@gw/jwks';
import {
  Authenticator,
  mcpOriginGuard,
  mcpResourceMetadataUrl,
  protectedResourceMetadata,
  type AccessTokenVerifier,
  type GatewayIdentity,
} from '@gw/identity-forwarding';
import { identityForwarding, type IdentityForwardingMiddleware } from '@gw/mcp-gateway';
import type * as VirtualCollisions from './mcp/virtual-collisions';
import type * as VirtualServers from './mcp/virtual-servers';
import type * as VirtualRelay from './mcp/virtual-relay';
import { virtualSessionEvents } from './mcp/virtual-sessions';
import {
  AdminAccess,
  CatalogError,
  adminPrincipalOf,
  checkRole,
  DatabaseConsoleSessionStore,
  DatabaseResponsesStore,
  RequestLogWriter,
  clientAddress,
  createAdminApi,
  trustedProxySet,
  useParsedBody,
  withAdminPrincipal,
  sendError as sendAdminError,
  type AdminClaim,
  type AdminRole,
  type AdminRoleMapping,
  type CatalogSnapshot,
  createUpstreamConnectionStore,
} from '@gw/catalog';
import { gatewayConsole } from '@gw/console';
import {
  MemoryCacheStore,
  ProviderModelLists,
  createModelRoutes,
  type ProviderEntry,
  type ResponseCacheStore,
} from '@gw/model-router';
import { sigv4Proxy } from '@gw/sigv4-proxy';
import {
  Limiter,
  MemoryCounterStore,
  type AccessMode,
  type LimitCounterStore,
  type OnStoreUnavailable,
} from '@gw/access';
import { accessCaller, accessHooks, CONSOLE_TEST_SUBJECT } from './access/access-hooks';
import { accessModeSetting, storedAccessMode } from './access/access-mode';
import { ApiKeyUse } from './catalog/api-key-use';
import { consoleOidcFingerprint, consoleOidcSignIn } from './oauth/console-oidc';
import { budgetAudit, limitMetrics, limitStatus } from './limits/limit-admin';
import { buildLimitsView, limitStep } from './limits/limit-step';
import { apiKeyConfigSlug, namedConfig } from './catalog/named-configs';
import { buildCatalogView, type CatalogView } from './catalog/catalog-view';
import type { GatewayCatalog } from './catalog/open-catalog';
import { providerModelList } from './catalog/record-checks';
import { CONSOLE_TEST_USER, testRecord } from './catalog/record-tests';
import type { GatewayConfig } from './config/schema';
import { deferredSigner } from './deferred-signing-key';
import { createDirectListener } from './http/direct-listener';
import { errorHandler, logUnhandled, refuseBadRequestTarget, routeNotFound } from './http/errors';
import { requestContext, requestState } from './http/request-context';
import {
  ADMIN_PREFIX,
  mountRouteTable,
  type NodeMiddleware,
  type RouteTable,
  type RouteTableEntry,
} from './http/route-table';
import { GatewayMetrics } from './observability/metrics';
import type { RequestRecord } from './observability/request-record';
import type { TracingStats } from './observability/tracing';
import { oauthPackage } from './oauth/oauth-package';
import { createGatewayOAuth, type GatewayOAuth } from './oauth/oauth-setup';
import { createUpstreamAccess } from './upstream/upstream-setup';
import {
  handleOAuthSettings,
  oauthSettingsErrorAnswer,
  oauthSettingsOf,
  oauthSettingsRoutes,
  sendOAuthAdminAnswer,
} from './oauth/oauth-settings';

/**
 * The JWKS route: its body is built with the first request, so that a temporary key made when
 * first needed (deferred-signing-key.ts) is not made at start-up by the route itself.
 */
function jwksWhenAsked(jwks: JsonWebKeySet): RequestHandler {
  let handler: RequestHandler | undefined;
  return function jwksRoute(req, res, next) {
    handler ??= jwksHandler(jwks);
    return handler(req, res, next);
  };
}

/** Everything the gateway is built from. */
export interface GatewayOptions {
  config: GatewayConfig;
  /** The key that signs `jwt_header` tokens; none means no `jwt_header` server may exist. */
  signingKey: SigningKey | undefined;
  /** The published key set (current key first, then retired keys). */
  jwks: JsonWebKeySet;
  logger: Logger;
  /** Keys of an identity provider to use instead of fetching `jwt_validation.jwksUri` (the embedded demo). */
  identityProviderKeys?: KeyResolver;
  /**
   * The gateway's public origin: RFC 9728 metadata names it, and MCP requests whose `Host` is not
   * its host are refused (`403 origin_not_allowed`, DNS rebinding). Default: metadata from each
   * request, and the gateway is taken to listen on a loopback address (MCP requests must name
   * `localhost`, 127.0.0.0/8 or `[::1]` in `Host`); a host that serves it on another address sets it.
   */
  publicBaseUrl?: string;
  /**
   * Origins besides the gateway's own whose pages may call its MCP servers
   * (`GATEWAY_ALLOWED_ORIGINS`); any other `Origin` is `403 origin_not_allowed`. Default `[]`.
   */
  allowedOrigins?: readonly string[];
  /** Proxies in front of the gateway whose `x-forwarded-for` MCP servers may see. Default `[]`. */
  trustedProxies?: readonly string[];
  /**
   * The catalog in the database (CONTRACT section 8): its records join the config file's, changes
   * apply without a restart, and the admin API is mounted at `/admin/v1`. Default: none (the
   * config file only, no admin API).
   */
  catalog?: GatewayCatalog;
  /** The claim that makes an identity-provider token an admin credential (`GATEWAY_ADMIN_CLAIM`). Default: none. */
  adminClaim?: AdminClaim;
  /** Each provider's own model list (its `GET /v1/models`). Default: one of the gateway's own, stopped by `close`. */
  modelLists?: ProviderModelLists;
  /**
   * The access mode fixed by `GATEWAY_ACCESS_MODE` or the config file's `access.mode` (CONTRACT
   * section 10): `PUT /admin/v1/access/mode` then answers `409 managed_by_config_file`. Default:
   * none, and the mode lives in the catalog (`open` until an admin sets another).
   */
  accessMode?: AccessMode;
  /** Where {@link GatewayOptions.accessMode} comes from, as `GET /admin/v1/access/mode` says. Default `config`. */
  accessModeSource?: 'environment' | 'config';
  /**
   * Request records in the catalog's database (CONTRACT section 9): `false` keeps them out of the
   * database (they are still logged, and records stored before stay readable through
   * `/admin/v1/requests` and `/admin/v1/usage`). Default, with a catalog: kept 30 days
   * (`GATEWAY_REQUEST_LOG_DAYS`), at most 10000 waiting to be inserted.
   */
  requestLog?: false | { retentionDays?: number; maxQueue?: number; flushIntervalMs?: number };
  /** The OpenTelemetry SDK's counts, for the metrics, when `startTracing` started it. Default: none. */
  tracingStats?: () => TracingStats;
  /**
   * Where the response cache keeps answers (CONTRACT section 9): a shared Redis store, or by
   * default a 256 MiB {@link MemoryCacheStore} in this process.
   */
  cacheStore?: ResponseCacheStore;
  /**
   * The origin the OAuth authorization server issues from, when the config has `oauth` (CONTRACT
   * section 11): `PUBLIC_BASE_URL`, or the loopback address of the development default. Default:
   * `publicBaseUrl`; without either, `oauth` is not served.
   */
  oauthPublicBaseUrl?: string;
  /**
   * Days a stored Responses API response is kept in the catalog's database
   * (`GATEWAY_RESPONSES_DAYS`, CONTRACT section 13). Default 30. Without a catalog, responses are
   * kept in memory (1000 at most, this process only).
   */
  responsesRetentionDays?: number;
  /**
   * Where limit counters live (CONTRACT section 14): a Redis shared by every instance
   * (`RedisCounterStore`), or by default this process's memory (per instance).
   */
  limitCounters?: LimitCounterStore;
  /** When the limit counters cannot be reached (`GATEWAY_LIMITS_ON_STORE_UNAVAILABLE`). Default `deny`. */
  limitsOnStoreUnavailable?: OnStoreUnavailable;
}

/** The assembled gateway: the Express app and what operators observe. */
export interface Gateway {
  /**
   * The node:http request listener to serve, derived from {@link Gateway.routes}: requests below a
   * route group's prefix (`/v1/…`: the model routes, then the SigV4 proxy; `/mcp/<slug>…`) go
   * straight to the group's handlers, everything else to {@link Gateway.app}. Both answer those
   * routes alike; the direct path skips the Express router.
   */
  listener: RequestListener;
  /** The whole gateway as an Express app (every route, the model routes included), mounted from {@link Gateway.routes}. */
  app: Express;
  /** Every route of the gateway, declared once: {@link Gateway.listener} and {@link Gateway.app} are both derived from it. */
  routes: RouteTable;
  metrics: GatewayMetrics;
  mcp: IdentityForwardingMiddleware;
  /** The catalog as requests read it now. */
  readonly view: CatalogView;
  /** The writer of request records to the catalog's database, when there is one. */
  readonly requestLog: RequestLogWriter | undefined;
  /** Stops following the catalog's changes and writes the request records still queued (at most 5 s). */
  close(): Promise<void>;
  /** Tells the gateway the address it listens on (the console's "test" buttons call it there). */
  listeningOn(baseUrl: string): void;
  /**
   * Ends the streams that only wait for notifications (a virtual MCP server's `GET` and
   * `subscriptions/listen` streams), at the start of a shutdown: their clients open them again, on
   * another instance, instead of holding this one for the shutdown's grace.
   */
  endStreams(): void;
}

/**
 * Builds the gateway from a validated config (CONTRACT section 3): its route table (health, the
 * JWKS, RFC 9728 metadata, the MCP gateway at `/mcp`, the `/v1` routes, the admin API), and the
 * Express app and the listener derived from it. Package factories validate their own options here
 * and throw on a bad one.
 */
export function createGateway(options: GatewayOptions): Gateway {
  const { config, logger, catalog } = options;
  const validation = config.auth?.jwt_validation;
  // The console's "test" buttons call the gateway with a key that exists only in this process.
  const consoleTestKey = catalog
    ? {
        key: `gw-console-test-${randomBytes(24).toString('base64url')}`,
        user: CONSOLE_TEST_USER,
        id: CONSOLE_TEST_SUBJECT.slice('key:'.length),
      }
    : undefined;
  const extraKeys = consoleTestKey ? [consoleTestKey] : [];
  let selfUrl: string | undefined;
  // The access mode: fixed at start-up, else the catalog's (changed live through the admin API).
  const fixedMode = options.accessMode;
  const accessModeOf = (snapshot: CatalogSnapshot | undefined): AccessMode =>
    fixedMode ??
    storedAccessMode(snapshot, (message) => logger.error({ record: 'settings/access-mode' }, message)) ??
    'open';
  // What every request reads: replaced whole when the catalog changes (one assignment).
  let view = buildCatalogView(config, catalog?.live.snapshot, logger, extraKeys, accessModeOf(catalog?.live.snapshot));
  // Every hook reads the view of the moment.
  const access = accessHooks({
    view: () => view,
    groupsClaim: config.auth?.groups_claim ?? 'groups',
    toolPins: catalog?.toolPins,
    // Mode `report`: the request goes on; its record, a log line and a metric say what `policies` would refuse.
    report: (req, reason) => {
      requestState(req).wouldDeny = reason;
    },
  });
  // The model and integration routes ask the hooks whenever the mode is not fixed at `open`.
  const enforcing = fixedMode === undefined ? catalog !== undefined : fixedMode !== 'open';
  const requestLog =
    catalog && options.requestLog !== false
      ? new RequestLogWriter({
          db: catalog.db,
          ...options.requestLog,
          onError: (error) =>
            logger.warn(
              { err: { message: String((error as Error)?.message ?? error).slice(0, 200) } },
              'request records not written to the catalog database (retrying; the queue is bounded)',
            ),
        })
      : undefined;
  const cacheStore = options.cacheStore ?? new MemoryCacheStore();
  // Metrics read the token cache of the MCP gateway built below, when scraped.
  const metrics = new GatewayMetrics(() => mcp.tokenCache.stats, {
    catalogStatus: catalog ? () => catalog.live.status : undefined,
    catalogCounts: () => view.counts,
    requestLog: requestLog ? () => requestLog.stats : undefined,
    tracing: options.tracingStats,
    responseCache: () => cacheStore.stats?.(),
  });
  // Limits, budgets and cost (CONTRACT section 14): read from the in-memory snapshot, never the database.
  let limitsView = buildLimitsView(config, catalog?.live.snapshot, logger);
  const limitCounters = options.limitCounters ?? new MemoryCounterStore();
  const limitCounts = limitMetrics(metrics.registry);
  const auditBudget = budgetAudit(catalog?.db, logger);
  const limiter = new Limiter({
    store: limitCounters,
    onStoreUnavailable: options.limitsOnStoreUnavailable,
    onAllowedUnavailable: () => limitCounts.storeUnavailable('allowed'),
    onBudgetExhausted: auditBudget,
    onRefused: (kind) => limitCounts.refused(kind),
    onDenied: () => limitCounts.storeUnavailable('denied'),
    onSettleError: (error) =>
      logger.warn(
        { err: { message: String((error as Error)?.message ?? error).slice(0, 200) } },
        'a limit reservation was not settled (it stays counted at its largest cost until its window passes)',
      ),
  });
  const groupsClaim = config.auth?.groups_claim ?? 'groups';
  const limits = limitStep({
    view: () => limitsView,
    limiter,
    callerOf: (req) => {
      const identity = requestState(req).identity;
      return identity === undefined ? undefined : accessCaller(identity, view, groupsClaim);
    },
  });
  const recordSink = requestLog ? (record: RequestRecord) => void requestLog.push(record) : undefined;
  const jwtValidation = validation && {
    ...validation,
    keys: options.identityProviderKeys,
    onKeySetFetch: (outcome: 'ok' | 'error') => metrics.recordKeySetFetch(outcome),
  };
  // Made with the first token: a temporary key made when first needed stays unmade until then.
  const signer = options.signingKey ? deferredSigner(options.signingKey) : undefined;
  // Servers' own credentials (CONTRACT section 15), read from the catalog's snapshot on each call;
  // users' OAuth connections live in the catalog's database.
  const upstream = createUpstreamAccess({
    publicBaseUrl: options.oauthPublicBaseUrl ?? options.publicBaseUrl,
    servers: () => view.upstreamAuth,
    urls: () => view.mcpUrls,
    catalog,
    store: catalog ? createUpstreamConnectionStore(catalog.db, catalog.box) : undefined,
    identityProviderIssuer: validation?.issuer,
    authorizationServer: () => currentOAuth?.oauth.server,
    metrics,
    logger,
  });
  const mcp = identityForwarding({
    mcpServers: view.mcpServers,
    signer,
    acceptsIdentityTokens: validation !== undefined,
    logger,
    trustedProxies: options.trustedProxies,
    authorize: access.mcp,
    toolCallAdmission: (req, res) => requestState(req).limits?.toolCallAdmission(req, res),
    upstreamCredentials: upstream.credentials,
  });
  // DNS rebinding: MCP requests must name this gateway in Host (and Origin, when they have one).
  const originGuard = mcpOriginGuard({ publicOrigin: options.publicBaseUrl, allowedOrigins: options.allowedOrigins });
  const guardMcpOrigin: NodeMiddleware = (req, res, next) => {
    // The console's "test" buttons call this gateway at its listen address, whatever name clients
    // use, with a key that exists only in this process: no web page can send it.
    const caller = (req as { callerIdentity?: { subject?: string } }).callerIdentity;
    if (consoleTestKey !== undefined && caller?.subject === CONSOLE_TEST_SUBJECT) return next();
    originGuard(req, res, next);
  };
  // Virtual MCP servers (CONTRACT section 16): the config file's and the catalog's, of the current view.
  // Their handler brings the MCP SDK's client and server (~150 ms of CPU to load): it is loaded with
  // the first virtual server, at start-up or by the catalog change that brings one (off the
  // requests), never by a gateway that has none.
  let virtualMcpHandler: ReturnType<typeof VirtualServers.virtualServersHandler> | undefined;
  const loadVirtualMcp = (): NodeMiddleware => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded only when configured
    virtualMcpHandler ??= (require('./mcp/virtual-servers') as typeof VirtualServers).virtualServersHandler({
      servers: () => view.virtualServers,
      selfUrl: () => selfUrl,
      logger,
      onMemberUnavailable: (server) => metrics.recordVirtualMemberUnavailable(server),
      authorize: access.mcp,
      sessionKey: catalog?.virtualSessionKey,
      sessionEvents: catalog && virtualSessionEvents(catalog.db),
      // An answer to a member's request relayed to a caller reaches the instance that waits (NOTIFY, sealed).
      relayEvents:
        catalog &&
        // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded with the virtual servers only
        (require('./mcp/virtual-relay') as typeof VirtualRelay).relayAnswerEvents(catalog.db),
      // A call routed to a member is handed in process to the member's own endpoint (the MCP proxy).
      memberEndpoint: mcp as unknown as NodeMiddleware,
    });
    return virtualMcpHandler;
  };
  if (view.virtualServers.size > 0) loadVirtualMcp();
  const virtualMcp: NodeMiddleware = (req, res, next) =>
    virtualMcpHandler === undefined && view.virtualServers.size === 0 ? next() : loadVirtualMcp()(req, res, next);
  const liveMcpSlugs = { has: (slug: string) => view.mcpSlugs.has(slug) || view.virtualServers.has(slug) };
  // Mode `report` on MCP: the server and tool are known when the request ends; checked then.
  const reportMcpAccess: NodeMiddleware = (req, _res, next) => {
    const current = view;
    const identity = (req as { callerIdentity?: GatewayIdentity }).callerIdentity;
    if (current.access.mode === 'report' && identity !== undefined) {
      requestState(req).wouldDeny = (gateway) =>
        gateway.target === undefined
          ? undefined
          : access.mcpReport(identity, current, gateway.target, gateway.mcpMethod, gateway.mcpTool);
    }
    next();
  };
  // The last use of each API key, written back at most once a minute per key, off the request path.
  const keyUse = catalog ? new ApiKeyUse(catalog.store, logger) : undefined;
  const noteKeyUse: NodeMiddleware = (req, _res, next) => {
    const identity = (req as { callerIdentity?: GatewayIdentity }).callerIdentity;
    if (keyUse !== undefined && identity?.method === 'api_key') {
      const id = view.apiKeyIds.get(identity.subject);
      if (id !== undefined) keyUse.used(id);
    }
    next();
  };
  // ---- OAuth authorization server (CONTRACT section 11): on with the config's `oauth` object or
  // the catalog's `settings/oauth` record. A change of the record builds a new server and swaps it
  // in; every route below reads the current one, so requests in flight finish with the old one.
  const oauthBase = options.oauthPublicBaseUrl ?? options.publicBaseUrl;
  const oauthPossible = catalog !== undefined && options.signingKey !== undefined && oauthBase !== undefined;
  if (config.oauth && !oauthPossible)
    throw new Error('config oauth needs the catalog database, a signing key and PUBLIC_BASE_URL.');
  interface CurrentOAuth {
    version: string;
    oauth: GatewayOAuth;
    resourceMetadata: RequestHandler;
  }
  let currentOAuth: CurrentOAuth | undefined;
  let oauthVersion = 'none';
  // The OAuth routes count their rate limits by the client behind the trusted proxies.
  const oauthProxies = trustedProxySet(options.trustedProxies);
  const applyOAuthSettings = () => {
    if (!catalog || !oauthPossible) return;
    const settings = oauthSettingsOf(config.oauth, catalog.live.snapshot, (message) =>
      logger.error({ reason: message }, 'the catalog OAuth settings are not valid: OAuth is off'),
    );
    if (settings.version === oauthVersion) return;
    const previous = currentOAuth;
    let next: CurrentOAuth | undefined;
    if (settings.config) {
      const built = createGatewayOAuth({
        config: settings.config,
        publicBaseUrl: oauthBase as string,
        catalog,
        // A user's upstream connections (CONTRACT section 15) end with their revoked grant.
        onGrantRevoked: ({ userId }) =>
          void upstream.connections
            ?.endUserConnections(userId, 'gateway:grant_revoked')
            .catch((error: unknown) =>
              logger.warn(
                { err: { message: (error as Error).message } },
                'upstream connections of a revoked grant not ended',
              ),
            ),
        signingKey: options.signingKey as SigningKey,
        jwks: options.jwks,
        mcpServerSlugs: liveMcpSlugs,
        apiKeys: () => authenticator,
        apiKeyIds: () => view.apiKeyIds,
        apiKeyExpiry: () => view.apiKeyExpiry,
        clientAddress: (req) => clientAddress(req, oauthProxies),
        groupsClaim: config.auth?.groups_claim,
        logger,
      });
      next = {
        version: settings.version,
        oauth: built,
        resourceMetadata: protectedResourceMetadata({
          issuer: built.server.issuer,
          mcpServerSlugs: liveMcpSlugs,
          publicBaseUrl: built.server.issuer,
        }),
      };
    }
    currentOAuth = next;
    oauthVersion = settings.version;
    if (previous) {
      logger.info({ source: settings.source, on: next !== undefined }, 'OAuth settings applied');
      // Requests in flight keep their reference to the old server; only its background work stops.
      void previous.oauth.server.stop();
    }
  };
  applyOAuthSettings();
  /** The current server's access tokens: none while OAuth is off. */
  const accessTokens: AccessTokenVerifier | undefined = oauthPossible
    ? {
        get issuer() {
          return currentOAuth?.oauth.server.issuer ?? (oauthBase as string);
        },
        issuedHere: (token) => currentOAuth?.oauth.server.tokens.issuedHere(token) ?? false,
        verify: (token, resource) => {
          const current = currentOAuth;
          if (!current) return Promise.reject(Object.assign(new Error('OAuth is off.'), { code: 'token_invalid' }));
          return current.oauth.server.tokens.verify(token, resource);
        },
      }
    : undefined;
  const validationResourceMetadata = validation
    ? protectedResourceMetadata({
        issuer: validation.issuer,
        mcpServerSlugs: liveMcpSlugs,
        publicBaseUrl: options.publicBaseUrl,
      })
    : undefined;
  const oauthMcpMetadataUrl = oauthBase ? mcpResourceMetadataUrl(oauthBase, liveMcpSlugs) : undefined;
  const validationMcpMetadataUrl = mcpResourceMetadataUrl(options.publicBaseUrl, liveMcpSlugs);
  // ---- end of the OAuth block.
  // One authenticator for /v1 and /mcp: the same keys, tokens and identity provider, so each API
  // key's digest and identity, and the identity provider's key set, are held once.
  const authenticator = new Authenticator({ apiKeys: view.apiKeys, jwtValidation, accessTokens });
  const modelLists = options.modelLists ?? new ProviderModelLists();
  const providerModels = (provider: ProviderEntry) => modelLists.list(provider);
  // Stored Responses API responses: in the catalog's database, sealed like secrets (CONTRACT section 13).
  const responsesStore = catalog
    ? new DatabaseResponsesStore({
        db: catalog.db,
        box: catalog.box,
        retentionDays: options.responsesRetentionDays,
        onError: (error) =>
          logger.warn(
            { err: { message: String((error as Error)?.message).slice(0, 200) } },
            'expired responses not deleted',
          ),
      })
    : undefined;
  const models = createModelRoutes({
    ...(responsesStore ? { responsesStore, reasoningKey: catalog?.reasoningKey } : {}),
    onResponseStoreError: (error) =>
      logger.error({ err: { message: String((error as Error)?.message).slice(0, 200) } }, 'a response was not stored'),
    catalog: {
      resolveProvider: (slug) => view.modelProviders.get(slug),
      listProviders: () => view.modelProviderList,
      modelsOf: (provider) => providerModels(provider).models.map((m) => m.id),
    },
    resolvePrompt: (id) => view.prompts.get(id),
    onInternalError: (error) => logUnhandled(logger, error),
    cacheStore,
    ...(enforcing ? { authorize: access.model } : {}),
    admit: (req, res, call) => requestState(req).limits?.admitModelCall(req, res, call),
    // Named configs (CONTRACT section 17): `x-gateway-config: <slug>`, or the API key's config.
    configs: { resolve: (slug) => namedConfig(view, slug), defaultSlug: apiKeyConfigSlug },
  });
  const bedrock = sigv4Proxy({
    resolveIntegration: (slug) => view.awsIntegrations.get(slug),
    ...(enforcing ? { authorize: access.integration } : {}),
  });

  /** Swaps in the catalog's new snapshot: every package reads it from the next request on. */
  const apply = () => {
    if (!catalog) return;
    const next = buildCatalogView(
      config,
      catalog.live.snapshot,
      logger,
      extraKeys,
      accessModeOf(catalog.live.snapshot),
    );
    if (next.access.mode !== view.access.mode) logger.info({ accessMode: next.access.mode }, 'access mode changed');
    try {
      mcp.update(next.mcpServers);
    } catch (error) {
      logger.error({ err: { message: (error as Error).message } }, 'catalog change not applied to MCP servers');
      return;
    }
    try {
      authenticator.setApiKeys(next.apiKeys);
    } catch (error) {
      logger.error({ err: { message: (error as Error).message } }, 'catalog change not applied to API keys');
      return;
    }
    endConnectionsOfRevokedKeys(view, next);
    view = next;
    if (next.virtualServers.size > 0) loadVirtualMcp();
  };
  /**
   * A user's upstream connections (CONTRACT section 15) end with their API key: every user whose
   * key left the catalog loses them (each instance tries; the first one finds and revokes them).
   */
  const endConnectionsOfRevokedKeys = (before: CatalogView, after: CatalogView) => {
    const connections = upstream.connections;
    if (connections === undefined || after.upstreamAuth.size === 0) return;
    // The catalog's keys have their record id; the config file's stay until a restart.
    const kept = new Set(after.apiKeys.map((entry) => entry.id));
    const users = new Set<string>();
    for (const entry of before.apiKeys) {
      const user = entry.user.user_id ?? entry.user.sub;
      if (entry.id !== undefined && !kept.has(entry.id) && typeof user === 'string') users.add(user);
    }
    for (const user of users)
      connections
        .endUserConnections(user, 'gateway:api_key_revoked')
        .catch((error: unknown) =>
          logger.warn(
            { err: { message: (error as Error).message } },
            'upstream connections of a revoked key not ended',
          ),
        );
  };
  const unsubscribe = catalog?.live.onSnapshot(() => {
    apply();
    try {
      limitsView = buildLimitsView(config, catalog.live.snapshot, logger);
    } catch (error) {
      logger.error({ err: { message: (error as Error).message } }, 'catalog change not applied to the limits');
    }
    try {
      applyOAuthSettings();
    } catch (error) {
      logger.error({ err: { message: (error as Error).message } }, 'catalog change not applied to the OAuth settings');
    }
  });

  // Every route of the gateway, once, in the order the Express app tries them. The Express app and
  // the listener are both derived from this table (http/route-table.ts, http/direct-listener.ts).
  const routes: RouteTableEntry[] = [
    { kind: 'app', method: 'GET', paths: ['/healthz'], handler: healthCheck(catalog) },
    { kind: 'app', method: 'GET', paths: ['/metrics'], handler: metricsScrape(metrics) },
    {
      kind: 'app',
      method: 'GET',
      paths: ['/.well-known/jwks.json', '/mcp/.well-known/jwks.json'],
      handler: jwksWhenAsked(options.jwks),
    },
  ];
  if (validation || oauthPossible) {
    routes.push({
      kind: 'app',
      method: 'GET',
      // The paths the metadata router answers (it matches them itself).
      paths: ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp/:slug'],
      // With OAuth on, MCP clients sign in at the gateway itself.
      handler: (req, res, next) => {
        const handler = currentOAuth?.resourceMetadata ?? validationResourceMetadata;
        if (!handler) return next();
        handler(req, res, next);
      },
    });
  }
  if (oauthPossible && upstream.routes) {
    // The connections pages of servers that need each user's own token, before the rest of /oauth.
    const { pages, callback } = upstream.routes;
    routes.push(
      { kind: 'app', method: 'ALL', paths: ['/connect'], handler: pages },
      { kind: 'app', method: 'ALL', paths: ['/oauth/upstream'], handler: callback },
    );
  }
  if (oauthPossible) {
    routes.push(
      {
        kind: 'app',
        method: 'GET',
        paths: ['/.well-known/oauth-authorization-server'],
        handler: (req, res, next) => (currentOAuth ? currentOAuth.oauth.metadata(req, res, next) : next()),
      },
      {
        kind: 'app',
        method: 'ALL',
        paths: ['/oauth'],
        handler: (req, res, next) => (currentOAuth ? currentOAuth.oauth.routes(req, res, next) : next()),
      },
    );
  }
  routes.push(
    {
      kind: 'group',
      prefix: '/mcp',
      authenticator: authenticator,
      resourceMetadataUrl: (req) =>
        currentOAuth ? oauthMcpMetadataUrl?.(req) : validation ? validationMcpMetadataUrl(req) : undefined,
      resource: (req) => currentOAuth?.oauth.mcpResource(req),
      limits,
      handlers: [
        { kind: 'middleware', middleware: noteKeyUse },
        { kind: 'middleware', middleware: guardMcpOrigin },
        { kind: 'middleware', middleware: reportMcpAccess },
        { kind: 'middleware', middleware: virtualMcp },
        { kind: 'middleware', middleware: mcp as unknown as NodeMiddleware },
      ],
    },
    {
      kind: 'group',
      prefix: '/v1',
      authenticator: authenticator,
      resource: () => currentOAuth?.oauth.v1Resource(),
      limits,
      // Model routes come before the SigV4 proxy; the proxy reads raw bodies, so no JSON parser runs before it.
      handlers: [
        { kind: 'middleware', middleware: noteKeyUse },
        { kind: 'routes', routes: models },
        { kind: 'middleware', middleware: bedrock as unknown as NodeMiddleware },
      ],
    },
  );
  if (catalog) {
    // Console sessions and sign-in events live in the catalog's database, shared by every instance.
    const consoleSessions = new DatabaseConsoleSessionStore(catalog.db);
    const proxies = trustedProxySet(options.trustedProxies);
    const adminRoles = config.adminRoles as AdminRoleMapping | undefined;
    const oidcLoginSettings = () => {
      if (!oauthPossible) return undefined;
      const login = oauthSettingsOf(config.oauth, catalog.live.snapshot, () => undefined).config?.login;
      return login?.type === 'oidc' ? login : undefined;
    };
    const adminAccess = new AdminAccess({
      adminKey: catalog.adminKey,
      adminClaim: options.adminClaim,
      // Identity-provider tokens on the admin API: the admin claim, or a role of adminRoles (with jwt_validation).
      roles: adminRoles && validation ? adminRoles : undefined,
      verifyToken:
        options.adminClaim || (adminRoles && validation)
          ? async (token) => (await authenticator.authenticate(['authorization', `Bearer ${token}`])).claims
          : undefined,
      oidcFingerprint: () => consoleOidcFingerprint(oidcLoginSettings(), adminRoles),
      isApiKey: (credential) => authenticator.isApiKey(credential),
      clientAddress: (req) => clientAddress(req, proxies),
      // Failed sign-ins (slowed down per address by AdminAccess) are logged and audited, never the credential.
      onSignInFailure: (failure) => {
        logger.warn({ via: failure.via, address: failure.address, code: failure.code }, 'admin sign-in refused');
        consoleSessions
          .recordSignIn({ action: 'sign_in_failed', actor: 'anonymous', ...failure })
          .catch((error: unknown) =>
            logger.warn(
              { err: { message: String((error as Error)?.message ?? error).slice(0, 200) } },
              'a refused admin sign-in was not written to the audit log',
            ),
          );
      },
    });
    const admin = createAdminApi({
      store: catalog.store,
      access: adminAccess,
      explainAccess: access.explain,
      toolPins: catalog.toolPins,
      configRecords: catalog.configRecords,
      // A virtual server whose members, listed now through their own endpoints, would offer one tool
      // name twice is refused (CONTRACT section 16); the SDK client is loaded with the first such write.
      beforeWrite: async (kind, record, changed) => {
        if (kind !== 'virtual-servers' || !changed.includes('members')) return;
        // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded only when used
        const { refuseVirtualToolCollisions } = require('./mcp/virtual-collisions') as typeof VirtualCollisions;
        await refuseVirtualToolCollisions(record, {
          selfUrl,
          serviceKey: consoleTestKey?.key,
          onUnlisted: ({ server, reason }) =>
            logger.warn(
              { virtualServer: String(record.slug).slice(0, 64), server, reason },
              'a member of a virtual MCP server could not be listed: its tool names are not checked for collisions',
            ),
        });
      },
      // The next request on this instance sees the change: the snapshot is reloaded before the answer.
      afterWrite: () => catalog.live.reload(),
      // Readable whether or not new records are stored (`requestLog: false` stores none).
      requestRecords: catalog.db,
      limitStatus: (slug, counterOf) => limitStatus(limitsView, limitCounters, slug, counterOf),
      providerModels: async (slug) => {
        const provider = view.modelProviders.get(slug);
        // The first look at a provider waits for its own list (at most the lists' timeout).
        if (provider && providerModels(provider).fetchedAt === undefined) await modelLists.refresh(provider);
        return providerModelList(view, slug, (s) => {
          const entry = view.modelProviders.get(s);
          return entry ? providerModels(entry) : { models: [], source: 'bundled' };
        });
      },
      onInternalError: (error) => logUnhandled(logger, error),
      upstreamConnections: upstream.admin,
      accessMode: accessModeSetting({
        store: catalog.store,
        fixed: fixedMode === undefined ? undefined : { mode: fixedMode, source: options.accessModeSource ?? 'config' },
        current: () => view.access.mode,
        policyCount: () => view.counts.get('policies') ?? 0,
      }),
    });
    // Every route below /admin authenticates here, once, slowed down and audited per address
    // (section 8); mountRouteTable refuses an admin route that no such gate covers.
    routes.push({
      kind: 'gate',
      prefix: ADMIN_PREFIX,
      authenticate: function adminAuthentication(req, res, next) {
        adminAccess.authorizeRequest(req).then(
          (principal) => {
            withAdminPrincipal(req, principal);
            next();
          },
          (error: unknown) => (error instanceof CatalogError ? sendAdminError(res, error) : next(error)),
        );
      },
    });
    const settingsOptions = {
      store: catalog.store,
      fileConfig: config.oauth,
      publicBaseUrl: oauthBase,
      afterWrite: () => catalog.live.reload(),
    };
    routes.push({
      kind: 'app',
      method: 'ALL',
      paths: ['/admin/v1/oauth/settings'],
      handler: oauthSettingsRoutes(settingsOptions),
    });
    if (oauthPossible)
      routes.push({
        kind: 'app',
        method: 'ALL',
        paths: ['/admin/v1/oauth'],
        // Reads for every role; changes (revoking a grant) for admins only.
        handler: (req, res, next) => {
          if (currentOAuth)
            return currentOAuth.oauth.admin({
              authorize: async () => {
                const principal = adminPrincipalOf(req);
                checkRole(principal, req.method, 'admin');
                return principal;
              },
            })(req, res, next);
          // OAuth off: its clients and grants answer as the console's do, to an admin only.
          adminPrincipalOf(req);
          sendOAuthAdminAnswer(res, OAUTH_DISABLED_ANSWER);
        },
      });
    routes.push(
      {
        kind: 'app',
        method: 'ALL',
        paths: ['/admin/v1'],
        handler: (req, res, next) => {
          // A body an app parsed before (when the gateway is mounted after express.json()).
          if ((req as { _body?: boolean })._body === true) useParsedBody(req, req.body);
          admin(req, res, req.url).catch(next);
        },
      },
      {
        kind: 'app',
        method: 'ALL',
        paths: ['/console'],
        handler: gatewayConsole({
          access: adminAccess,
          adminApi: admin,
          sessionSecret: catalog.sessionSecret,
          sessionStore: consoleSessions,
          publicBaseUrl: options.publicBaseUrl,
          testRecord: (kind, slug) => testRecord(selfUrl, consoleTestKey?.key as string, view, kind, slug),
          oidcSignIn:
            oauthPossible && adminRoles
              ? consoleOidcSignIn({
                  login: oidcLoginSettings,
                  roles: adminRoles,
                  publicBaseUrl: oauthBase as string,
                  groupsClaim: config.auth?.groups_claim ?? 'groups',
                })
              : undefined,
          // The "Connected apps" page: the OAuth operator routes as the console's signed-in admin (changes: admins only).
          oauthAdmin: oauthPossible
            ? ({ method, path, query, actor, role, body }) =>
                method !== 'GET' && method !== 'HEAD' && (role ?? 'admin') !== 'admin'
                  ? Promise.resolve(roleForbiddenAnswer(role))
                  : path === '/settings'
                    ? handleOAuthSettings(settingsOptions, method, body, actor).catch((error: unknown) => {
                        const answer = oauthSettingsErrorAnswer(error);
                        if (!answer) throw error;
                        return answer;
                      })
                    : currentOAuth === undefined
                      ? Promise.resolve(OAUTH_DISABLED_ANSWER)
                      : oauthPackage().handleOAuthAdmin(
                          currentOAuth.oauth.server,
                          { authorize: async () => ({ actor }) },
                          { method, path, query, headers: {} },
                        )
            : undefined,
        }),
      },
    );
  }

  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', false);
  app.use(requestContext(logger, metrics, recordSink));
  app.use(refuseBadRequestTarget);
  mountRouteTable(app, routes);
  app.use(routeNotFound);
  app.use(errorHandler(logger));

  const listener = createDirectListener({ logger, metrics, routes, app, recordSink });
  return {
    listener,
    app,
    routes,
    metrics,
    mcp,
    get view() {
      return view;
    },
    listeningOn: (baseUrl: string) => {
      selfUrl = baseUrl;
    },
    endStreams: () => virtualMcpHandler?.endStreams(),
    requestLog,
    close: async () => {
      unsubscribe?.();
      await virtualMcpHandler?.close();
      await keyUse?.close();
      await currentOAuth?.oauth.server.stop();
      await upstream.close();
      responsesStore?.close();
      if (!options.modelLists) modelLists.stop();
      await requestLog?.close();
    },
  };
}

/** The answer to a change the signed-in role may not make (the OAuth routes of the console). */
function roleForbiddenAnswer(role: AdminRole | undefined) {
  return {
    status: 403,
    body: {
      error: {
        message: `The signed-in role "${role ?? 'admin'}" may not change the OAuth settings or grants: an "admin" may.`,
        type: 'permission_error',
        code: 'role_forbidden',
        param: null,
      },
    },
  };
}

/**
 * The answer of the OAuth operator routes (clients, grants) while OAuth is off, in the admin API
 * and the console alike: `404 oauth_disabled`.
 */
const OAUTH_DISABLED_ANSWER = {
  status: 404,
  body: {
    error: {
      message: 'OAuth is off: set the oauth settings (config file or admin API) to turn it on.',
      type: 'not_found_error',
      code: 'oauth_disabled',
      param: null,
    },
  },
};

/** `GET /healthz`: `ok`, or `degraded` with the reason while the catalog cannot be read. */
function healthCheck(catalog: GatewayCatalog | undefined): RequestHandler {
  return function healthCheck(_req, res) {
    const status = catalog?.live.status;
    if (status?.state === 'degraded') {
      res.json({
        status: 'degraded',
        catalog: { state: 'degraded', reason: status.reason, loadedAt: status.loadedAt.toISOString() },
      });
      return;
    }
    res.json({ status: 'ok' });
  };
}

/** `GET /metrics`: the Prometheus scrape. */
function metricsScrape(metrics: GatewayMetrics): RequestHandler {
  return async function metricsScrape(_req, res, next) {
    try {
      res.setHeader('content-type', metrics.registry.contentType);
      res.end(await metrics.registry.metrics());
    } catch (error) {
      next(error);
    }
  };
}

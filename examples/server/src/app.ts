import type { RequestListener } from 'node:http';
import express, { type Express } from 'express';
import type { Logger } from 'pino';
import {
  jwksHandler,
  type JsonWebKeySet,
  type KeyResolver,
  type SigningKey,
  createIdentityTokenSigner,
} from '@gw/jwks';
import {
  authenticate,
  identityForwarding,
  mcpResourceMetadataUrl,
  protectedResourceMetadata,
  type IdentityForwardingMiddleware,
} from '@gw/identity-forwarding';
import { modelRouter, type PromptTemplate } from '@gw/model-router';
import { sigv4Proxy } from '@gw/sigv4-proxy';
import type { BedrockProviderConfig, GatewayConfig } from './config/schema';
import { createDirectListener, type NodeMiddleware } from './http/direct-listener';
import { errorHandler, logUnhandled, refuseBadRequestTarget, routeNotFound } from './http/errors';
import { requestContext } from './http/request-context';
import { GatewayMetrics } from './observability/metrics';

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
  /** The gateway's public origin, for RFC 9728 metadata. Default: from each request. */
  publicBaseUrl?: string;
  /** Proxies in front of the gateway whose `x-forwarded-for` MCP servers may see. Default `[]`. */
  trustedProxies?: readonly string[];
}

/** The assembled gateway: the Express app and what operators observe. */
export interface Gateway {
  /**
   * The node:http request listener to serve: `/v1/…` (the model routes, then the SigV4 proxy) and
   * MCP calls (`/mcp/<slug>…`) go straight to their handlers, everything else to
   * {@link Gateway.app}. Both answer those routes alike; the direct path skips the Express
   * router.
   */
  listener: RequestListener;
  /** The whole gateway as an Express app (every route, the model routes included). */
  app: Express;
  metrics: GatewayMetrics;
  mcp: IdentityForwardingMiddleware;
}

/**
 * Builds the gateway's Express app from a validated config (CONTRACT section 3): health, the
 * JWKS, RFC 9728 metadata, the MCP gateway at `/mcp`, and the `/v1` routes. Package factories
 * validate their own options here and throw on a bad one.
 */
export function createGateway(options: GatewayOptions): Gateway {
  const { config, logger } = options;
  const validation = config.auth?.jwt_validation;
  // Metrics read the token cache of the MCP gateway built below, when scraped.
  const metrics = new GatewayMetrics(() => mcp.tokenCache.stats);
  const jwtValidation = validation && {
    ...validation,
    keys: options.identityProviderKeys,
    onKeySetFetch: (outcome: 'ok' | 'error') => metrics.recordKeySetFetch(outcome),
  };
  const mcp = identityForwarding({
    mcpServers: config.mcpServers ?? [],
    signer: options.signingKey ? createIdentityTokenSigner(options.signingKey) : undefined,
    acceptsIdentityTokens: validation !== undefined,
    logger,
    trustedProxies: options.trustedProxies,
  });

  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', false);
  app.use(requestContext(logger, metrics));
  app.use(refuseBadRequestTarget);
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/metrics', async (_req, res, next) => {
    try {
      res.setHeader('content-type', metrics.registry.contentType);
      res.end(await metrics.registry.metrics());
    } catch (error) {
      next(error);
    }
  });
  const jwks = jwksHandler(options.jwks);
  app.get('/.well-known/jwks.json', jwks);
  app.get('/mcp/.well-known/jwks.json', jwks);
  if (validation) {
    app.use(
      protectedResourceMetadata({
        issuer: validation.issuer,
        mcpServerSlugs: (config.mcpServers ?? []).map((s) => s.slug),
        publicBaseUrl: options.publicBaseUrl,
      }),
    );
  }

  // The server listens with the direct listener (http/direct-listener.ts), which serves `/v1/…`
  // and `/mcp/<slug>…` itself: a route added below those prefixes here must be added there too
  // (direct-routes.test.ts compares the two).
  const apiKeys = config.auth?.apiKeys ?? [];
  const mcpMetadataUrl = mcpResourceMetadataUrl(
    options.publicBaseUrl,
    (config.mcpServers ?? []).map((s) => s.slug),
  );
  const mcpAuthentication = authenticate({ apiKeys, jwtValidation, resourceMetadataUrl: mcpMetadataUrl });
  app.use('/mcp', mcpAuthentication, mcp);
  const awsIntegrations = (config.providers ?? []).filter((p): p is BedrockProviderConfig => p.provider === 'bedrock');
  const v1Authentication = authenticate({ apiKeys, jwtValidation });
  app.use('/v1', v1Authentication);
  // Model routes come before the SigV4 proxy; the proxy reads raw bodies, so no JSON parser runs before it.
  const models = modelRouter({
    providers: config.providers ?? [],
    prompts: (config.prompts ?? []) as PromptTemplate[],
    onInternalError: (error) => logUnhandled(logger, error),
  });
  app.use('/v1', models);
  const bedrock = sigv4Proxy({ integrations: awsIntegrations });
  app.use('/v1', bedrock);
  app.use(routeNotFound);
  app.use(errorHandler(logger));

  const listener = createDirectListener({
    logger,
    metrics,
    app,
    v1Authenticator: v1Authentication.authenticator,
    modelRoutes: models.routes,
    bedrock: bedrock as unknown as NodeMiddleware,
    mcpAuthenticator: mcpAuthentication.authenticator,
    mcpMetadataUrl,
    mcp: mcp as unknown as NodeMiddleware,
  });
  return { listener, app, metrics, mcp };
}

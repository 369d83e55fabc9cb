import { hkdfSync } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';
import type { Logger } from 'pino';
import type { JsonWebKeySet, SigningKey } from '@gw/jwks';
import type { Authenticator } from '@gw/identity-forwarding';
import type {
  AuthorizationServer,
  LoginMethod,
  OidcLoginState,
  OAuthAdminAccess,
  OAuthRoutesOptions,
  SignedInUser,
} from '@gw/oauth';
import type { GatewayCatalog } from '../catalog/open-catalog';
import type { OAuthConfig } from '../config/schema';
import { oauthPackage } from './oauth-package';

/** The gateway's OAuth authorization server, assembled for the route table. */
export interface GatewayOAuth {
  server: AuthorizationServer;
  /** `GET /.well-known/oauth-authorization-server`. */
  metadata: RequestHandler;
  /** Everything below `/oauth`. */
  routes: RequestHandler;
  /** The operator routes, mounted at `/admin/v1/oauth`. */
  admin(access: OAuthAdminAccess): RequestHandler;
  /** The resource of a request below `/mcp` (its `req.url` below the prefix): `<base>/mcp/<slug>`. */
  mcpResource(req: IncomingMessage): string | undefined;
  /** The resource of every request below `/v1`. */
  v1Resource(): string;
}

/** What {@link createGatewayOAuth} is built from. */
export interface GatewayOAuthOptions {
  config: OAuthConfig;
  /** The origin the server issues from (`PUBLIC_BASE_URL`). */
  publicBaseUrl: string;
  catalog: GatewayCatalog;
  signingKey: SigningKey;
  jwks: JsonWebKeySet;
  mcpServerSlugs: { has(slug: string): boolean };
  /** The API keys of `/mcp` callers, read at sign-in (the catalog's included). */
  apiKeys: () => Authenticator;
  /**
   * The current API keys' stable ids by authenticated subject (`key:<record id or index>` → id),
   * read at sign-in and, for every token of an API-key sign-in, on each request: a token ends
   * with its key. Default: the subject is the id, and every sign-in holds.
   */
  apiKeyIds?: () => ReadonlyMap<string, string>;
  /** When a key expires (ms since the epoch), by its id; a sign-in ends with its key's expiry. Default: keys do not expire. */
  apiKeyExpiry?: () => ReadonlyMap<string, number>;
  logger: Logger;
  /** The claim access policies read the caller's groups from (`auth.groups_claim`). Default `groups`. */
  groupsClaim?: string;
  /** Rate limits of `/oauth/token` and `/oauth/register`. Default: the package's. */
  rateLimits?: Omit<OAuthRoutesOptions, 'clientAddress'>;
  /** The client's address the rate limits count by (`TRUSTED_PROXIES` read). Default: the connection's. */
  clientAddress?: (req: IncomingMessage) => string;
  /** Called once a grant is revoked on this instance (its user's upstream connections end with it). Default: none. */
  onGrantRevoked?: (grant: { id: string; userId: string }) => void;
}

/** `login.type: "api_key"`: a gateway API key entered once on the sign-in page; its `user` becomes the caller. */
function apiKeyLogin(
  apiKeys: () => Authenticator,
  groupsClaim: string,
  apiKeyIds: (() => ReadonlyMap<string, string>) | undefined,
  apiKeyExpiry: (() => ReadonlyMap<string, number>) | undefined,
): LoginMethod {
  // The ids of the current keys, computed once per catalog snapshot (the map changes with it).
  let idsOf: ReadonlyMap<string, string> | undefined;
  let liveIds = new Set<string>();
  const currentIds = (): Set<string> => {
    const map = apiKeyIds?.();
    if (map && map !== idsOf) {
      idsOf = map;
      liveIds = new Set(map.values());
    }
    return liveIds;
  };
  return {
    type: 'api_key',
    signInHolds: (subject) => {
      if (!apiKeyIds) return true;
      if (!subject.startsWith('api_key:')) return false;
      const keyId = subject.slice('api_key:'.length);
      const expiresAt = apiKeyExpiry?.().get(keyId);
      return currentIds().has(keyId) && (expiresAt === undefined || expiresAt > Date.now());
    },
    async checkApiKey(key: string): Promise<SignedInUser | undefined> {
      let identity;
      try {
        identity = await apiKeys().authenticate(['x-gateway-api-key', key]);
      } catch {
        return undefined;
      }
      if (identity.method !== 'api_key') return undefined;
      const claims: Record<string, unknown> = { ...identity.claims };
      const sub =
        typeof claims.sub === 'string'
          ? claims.sub
          : typeof claims.user_id === 'string'
            ? claims.user_id
            : identity.subject;
      claims.sub = sub;
      // A token's groups are read from auth.groups_claim; an API key's are its user.groups.
      if (groupsClaim !== 'groups' && claims.groups !== undefined) claims[groupsClaim] = claims.groups;
      // The key's stable id (a config key's `key:<index>` may name another key after a restart).
      const keyId = apiKeyIds ? apiKeyIds().get(identity.subject) : identity.subject;
      if (keyId === undefined) return undefined;
      return { sub, subject: `api_key:${keyId}`, claims };
    },
  };
}

/**
 * `login.type: "oidc"`: sign-in at the company's OpenID Provider, the gateway its confidential
 * client (authorization code with PKCE, `state` and `nonce`, the ID token verified); the verified
 * claims become the caller's (`username` from `preferred_username`, groups under
 * `auth.groups_claim` as the provider sent them). An http issuer is accepted on a loopback host
 * only (a provider on the same machine).
 */
function oidcLogin(
  config: Extract<OAuthConfig['login'], { type: 'oidc' }>,
  base: string,
  groupsClaim: string,
): LoginMethod {
  const issuerUrl = new URL(config.issuer);
  const loopback =
    ['localhost', '127.0.0.1', '[::1]'].includes(issuerUrl.hostname) || issuerUrl.hostname.startsWith('127.');
  const { OidcLogin, userFromIdTokenClaims } = oauthPackage();
  const provider = new OidcLogin({
    issuer: config.issuer,
    clientId: config.clientId,
    clientSecret: config.clientSecret,
    redirectUri: `${base}/oauth/callback`,
    scopes: config.scopes,
    groupsClaim,
    allowInsecureIssuer: issuerUrl.protocol === 'http:' && loopback,
  });
  return {
    type: 'oidc',
    start: async () => {
      const { url, state } = await provider.start();
      return { url, state: { ...state } };
    },
    finish: (callbackUrl, state) => provider.finish(callbackUrl, state as unknown as OidcLoginState),
    // The provider's refresh token, kept encrypted with the grant: each gateway refresh renews the
    // sign-in at the provider and reads the user's groups again (refused when the provider refuses).
    finishWithTokens: (callbackUrl, state) =>
      provider.finishWithTokens(callbackUrl, state as unknown as OidcLoginState),
    renew: (refreshToken, sub) => provider.renew(refreshToken, sub),
    toUser: (claims) => userFromIdTokenClaims(config.issuer, claims),
  };
}

/**
 * Builds the OAuth authorization server of the config's `oauth` object (CONTRACT section 11) on
 * the catalog's database, signing with the gateway's key, and starts following revocations.
 */
export function createGatewayOAuth(options: GatewayOAuthOptions): GatewayOAuth {
  const { config, publicBaseUrl, catalog } = options;
  const { AuthorizationServer, fetchClientMetadata, oauthAdminRoutes, oauthMetadataHandler, oauthRoutes } =
    oauthPackage();
  let login: LoginMethod;
  if (config.login.type === 'api_key') {
    login = apiKeyLogin(options.apiKeys, options.groupsClaim ?? 'groups', options.apiKeyIds, options.apiKeyExpiry);
  } else {
    login = oidcLogin(config.login, publicBaseUrl.replace(/\/$/, ''), options.groupsClaim ?? 'groups');
  }
  const base = publicBaseUrl.replace(/\/$/, '');
  const allowedClientHosts = config.allowedClientHosts ?? [];
  const server = new AuthorizationServer({
    publicBaseUrl: base,
    db: catalog.db,
    signingKey: options.signingKey,
    jwks: options.jwks,
    // Its own key, derived from the catalog's (the same on every instance sharing GATEWAY_ENCRYPTION_KEY).
    pageSecret: Buffer.from(hkdfSync('sha256', catalog.sessionSecret, Buffer.alloc(0), 'gw-oauth-pages', 32)),
    login,
    // The OpenID Provider's refresh tokens, encrypted under GATEWAY_ENCRYPTION_KEY like the catalog's secrets.
    loginTokenBox: catalog.box,
    // Client ID metadata documents: fetched within the limits of CONTRACT section 11.
    clientMetadata: (clientId) => fetchClientMetadata(clientId, { allowedClientHosts }),
    mcpServerSlugs: options.mcpServerSlugs,
    accessTokenTtlSeconds: config.accessTokenTtlSeconds,
    refreshTokenTtlSeconds: config.refreshTokenTtlSeconds,
    onGrantRevoked: options.onGrantRevoked,
    onRevocationReloadError: (error) =>
      options.logger.warn(
        { err: { message: String((error as Error)?.message ?? error).slice(0, 200) } },
        'OAuth revoked grants not reloaded from the catalog database (the last list stays in force; retrying)',
      ),
  });
  void server.start();
  return {
    server,
    metadata: oauthMetadataHandler(server),
    routes: oauthRoutes(server, { ...options.rateLimits, clientAddress: options.clientAddress }),
    admin: (access) => oauthAdminRoutes(server, access),
    mcpResource: (req) => {
      const slug = /^\/([^/?#]+)/.exec(req.url ?? '')?.[1];
      return slug === undefined ? undefined : `${base}/mcp/${slug}`;
    },
    v1Resource: () => `${base}/v1`,
  };
}

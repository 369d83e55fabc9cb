/**
 * The gateway as each user's OAuth client of an MCP server (CONTRACT section 15, `oauth`): its
 * client identity (configured, its Client ID Metadata Document, or RFC 7591 registration), the
 * authorization code flow with PKCE S256, `state`, `resource` and RFC 9207 `iss`, refresh and
 * RFC 7009 revocation, all through oauth4webapi and the guarded fetch.
 */
import * as oauth from 'oauth4webapi';
import type { OAuthUpstreamAuth } from './config';
import { AuthorizationServerDiscovery, requestOptions, type DiscoveredAuthorizationServer } from './discovery';
import { UpstreamAuthUnavailableError, UpstreamAuthorizationFailedError, UpstreamRefreshRefusedError } from './errors';
import type { PendingAuthorization, StoredConnection, UpstreamConnectionStore } from './store';
import { isAllowedAuthUrl } from './validate';

/** An MCP server whose `upstream_auth` is `oauth`. */
export interface UpstreamOAuthServer {
  /** The server's slug. */
  slug: string;
  /** The server's URL: the `resource` of every request (RFC 8707). */
  url: string;
  /** Its `upstream_auth`. */
  auth: OAuthUpstreamAuth;
}

/** The client the gateway is at an authorization server, and where that identity comes from. */
export interface UpstreamClientIdentity {
  clientId: string;
  /** Secret. */
  clientSecret?: string;
  tokenEndpointAuthMethod: 'client_secret_basic' | 'client_secret_post' | 'none';
  source: 'configured' | 'metadata_document' | 'registered';
}

/** Options of {@link UpstreamOAuth}. */
export interface UpstreamOAuthOptions {
  /** The gateway's public origin (`PUBLIC_BASE_URL`), e.g. `https://gw.example.com`. Required. */
  publicBaseUrl: string;
  /** Where registered clients are kept. Required. */
  store: UpstreamConnectionStore;
  /** How authorization servers are found (and the fetch every request uses). Default a new {@link AuthorizationServerDiscovery}. */
  discovery?: AuthorizationServerDiscovery;
  /** The `client_name` of the metadata document and registrations. Default `"MCP Gateway"`. */
  clientName?: string;
  /** How long an authorization waits for its callback, in ms. Default 600000 (10 minutes). */
  pendingTtlMs?: number;
  /** The clock, in ms since the epoch. Default `Date.now`. */
  now?: () => number;
}

/** The started authorization: where to send the browser, and what to save until the callback. */
export interface StartedAuthorization {
  /** The authorization server's URL to open in the user's browser. */
  authorizationUrl: string;
  /** To save with `store.savePendingAuthorization` (holds the PKCE verifier: secret). */
  pending: PendingAuthorization;
}

/** The gateway's public origin without a trailing slash. */
function baseOf(publicBaseUrl: string): string {
  return publicBaseUrl.replace(/\/+$/, '');
}

/** `<publicBaseUrl>/oauth/upstream/<slug>/client.json`: the gateway's client id at servers supporting Client ID Metadata Documents. */
export function clientMetadataDocumentUrl(publicBaseUrl: string, slug: string): string {
  return `${baseOf(publicBaseUrl)}/oauth/upstream/${encodeURIComponent(slug)}/client.json`;
}

/** `<publicBaseUrl>/oauth/upstream/callback`: the redirect URI of every upstream authorization. */
export function upstreamRedirectUri(publicBaseUrl: string): string {
  return `${baseOf(publicBaseUrl)}/oauth/upstream/callback`;
}

/**
 * The Client ID Metadata Document the gateway serves at {@link clientMetadataDocumentUrl}: a
 * public client (`token_endpoint_auth_method: none`) using the code and refresh grants.
 */
export function renderClientMetadataDocument(
  publicBaseUrl: string,
  slug: string,
  clientName = 'MCP Gateway',
): Record<string, unknown> {
  return {
    client_id: clientMetadataDocumentUrl(publicBaseUrl, slug),
    client_name: clientName,
    client_uri: baseOf(publicBaseUrl),
    redirect_uris: [upstreamRedirectUri(publicBaseUrl)],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
  };
}

/** The oauth4webapi client and its authentication for an identity. */
export function clientAuthOf(
  identity: Pick<UpstreamClientIdentity, 'clientId' | 'clientSecret' | 'tokenEndpointAuthMethod'>,
): {
  client: oauth.Client;
  auth: oauth.ClientAuth;
} {
  const client: oauth.Client = {
    client_id: identity.clientId,
    token_endpoint_auth_method: identity.tokenEndpointAuthMethod,
  };
  if (identity.tokenEndpointAuthMethod === 'none' || identity.clientSecret === undefined)
    return { client, auth: oauth.None() };
  return {
    client,
    auth:
      identity.tokenEndpointAuthMethod === 'client_secret_post'
        ? oauth.ClientSecretPost(identity.clientSecret)
        : oauth.ClientSecretBasic(identity.clientSecret),
  };
}

/** A token answer turned into a stored connection's fields. */
function tokenFields(tokens: oauth.TokenEndpointResponse, now: number, scopesAsked: string[]) {
  return {
    accessToken: tokens.access_token,
    expiresAt: typeof tokens.expires_in === 'number' ? now + tokens.expires_in * 1000 : undefined,
    scopes: typeof tokens.scope === 'string' ? tokens.scope.split(' ').filter(Boolean) : scopesAsked,
  };
}

/** Whether a refusal at the token endpoint is the server being down rather than the grant refused. */
function isOutage(error: oauth.ResponseBodyError): boolean {
  return error.status >= 500 || error.error === 'server_error' || error.error === 'temporarily_unavailable';
}

/** The gateway as each user's OAuth client of MCP servers (see the module). */
export class UpstreamOAuth {
  /** `<publicBaseUrl>/oauth/upstream/callback`. */
  readonly redirectUri: string;
  readonly #publicBaseUrl: string;
  readonly #store: UpstreamConnectionStore;
  readonly #discovery: AuthorizationServerDiscovery;
  readonly #clientName: string;
  readonly #pendingTtlMs: number;
  readonly #now: () => number;
  readonly #registering = new Map<string, Promise<UpstreamClientIdentity>>();

  constructor(options: UpstreamOAuthOptions) {
    if (typeof options !== 'object' || options === null)
      throw new TypeError('UpstreamOAuth: pass { publicBaseUrl, store }.');
    if (!isAllowedAuthUrl(options.publicBaseUrl))
      throw new TypeError(
        'UpstreamOAuth: `publicBaseUrl` must be the gateway\'s https URL, e.g. "https://gw.example.com" (http only on loopback).',
      );
    if (typeof options.store !== 'object' || options.store === null)
      throw new TypeError('UpstreamOAuth: `store` must be an UpstreamConnectionStore.');
    this.#publicBaseUrl = baseOf(options.publicBaseUrl);
    this.redirectUri = upstreamRedirectUri(this.#publicBaseUrl);
    this.#store = options.store;
    this.#discovery = options.discovery ?? new AuthorizationServerDiscovery();
    this.#clientName = options.clientName ?? 'MCP Gateway';
    this.#pendingTtlMs = options.pendingTtlMs ?? 600_000;
    this.#now = options.now ?? Date.now;
  }

  /** The authorization server of `server` (configured `authorization_server`, else discovered). */
  discover(server: UpstreamOAuthServer): Promise<DiscoveredAuthorizationServer> {
    return this.#discovery.discover(server.url, server.auth.authorization_server);
  }

  /** The Client ID Metadata Document of `slug` (see {@link renderClientMetadataDocument}). */
  clientMetadataDocument(slug: string): Record<string, unknown> {
    return renderClientMetadataDocument(this.#publicBaseUrl, slug, this.#clientName);
  }

  /**
   * The gateway's client identity at `discovered`: the configured `client`, else its Client ID
   * Metadata Document when the server supports them, else the client registered (RFC 7591) and
   * stored with `saveRegisteredClient`, registering once when there is none.
   */
  async clientFor(
    server: UpstreamOAuthServer,
    discovered: DiscoveredAuthorizationServer,
  ): Promise<UpstreamClientIdentity> {
    const configured = server.auth.client;
    if (configured)
      return {
        clientId: configured.client_id,
        clientSecret: configured.client_secret,
        tokenEndpointAuthMethod:
          configured.token_endpoint_auth_method ??
          (configured.client_secret === undefined ? 'none' : 'client_secret_basic'),
        source: 'configured',
      };
    if (discovered.metadata.client_id_metadata_document_supported === true)
      return {
        clientId: clientMetadataDocumentUrl(this.#publicBaseUrl, server.slug),
        tokenEndpointAuthMethod: 'none',
        source: 'metadata_document',
      };
    const stored = await this.#store.getRegisteredClient(server.slug, discovered.issuer);
    if (stored) return this.#registeredIdentity(stored.clientId, stored.clientSecret, stored.tokenEndpointAuthMethod);
    const key = `${server.slug}\n${discovered.issuer}`;
    const running = this.#registering.get(key);
    if (running) return running;
    const registering = this.#register(server, discovered).finally(() => this.#registering.delete(key));
    this.#registering.set(key, registering);
    return registering;
  }

  #registeredIdentity(clientId: string, clientSecret: string | undefined, method: string): UpstreamClientIdentity {
    const tokenEndpointAuthMethod =
      method === 'client_secret_post' || method === 'client_secret_basic' || method === 'none'
        ? method
        : clientSecret === undefined
          ? 'none'
          : 'client_secret_basic';
    return { clientId, clientSecret, tokenEndpointAuthMethod, source: 'registered' };
  }

  async #register(
    server: UpstreamOAuthServer,
    discovered: DiscoveredAuthorizationServer,
  ): Promise<UpstreamClientIdentity> {
    const as = discovered.metadata;
    if (typeof as.registration_endpoint !== 'string')
      throw new UpstreamAuthUnavailableError(
        'no_client',
        `The authorization server of "${server.slug}" offers neither client ID metadata documents nor registration: configure upstream_auth.client.`,
      );
    const methods = as.token_endpoint_auth_methods_supported;
    const method = !methods || methods.includes('none') ? 'none' : 'client_secret_basic';
    let registered: oauth.OmitSymbolProperties<oauth.Client>;
    try {
      const response = await oauth.dynamicClientRegistrationRequest(
        as,
        {
          client_name: this.#clientName,
          redirect_uris: [this.redirectUri],
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
          token_endpoint_auth_method: method,
        },
        requestOptions(this.#discovery.fetch),
      );
      registered = await oauth.processDynamicClientRegistrationResponse(response);
    } catch (error) {
      if (error instanceof UpstreamAuthUnavailableError) throw error;
      throw new UpstreamAuthUnavailableError(
        'no_client',
        `The authorization server of "${server.slug}" refused the gateway's client registration.`,
      );
    }
    const identity = this.#registeredIdentity(
      registered.client_id,
      typeof registered.client_secret === 'string' ? registered.client_secret : undefined,
      typeof registered.token_endpoint_auth_method === 'string' ? registered.token_endpoint_auth_method : method,
    );
    await this.#store.saveRegisteredClient({
      server: server.slug,
      issuer: discovered.issuer,
      clientId: identity.clientId,
      clientSecret: identity.clientSecret,
      tokenEndpointAuthMethod: identity.tokenEndpointAuthMethod,
    });
    return identity;
  }

  /** The scopes to ask for: `scopes`, else the metadata's `scopes_supported`, else none. */
  scopesFor(server: UpstreamOAuthServer, discovered: DiscoveredAuthorizationServer): string[] {
    return (
      server.auth.scopes ?? discovered.resourceMetadata?.scopes_supported ?? discovered.metadata.scopes_supported ?? []
    );
  }

  /**
   * Starts an authorization of `userId` at `server`'s authorization server: the URL to open
   * (PKCE S256, `state`, `resource` = the server's URL, `scope`) and the pending authorization
   * to save until the callback. Does not save it.
   */
  async startAuthorization(userId: string, server: UpstreamOAuthServer): Promise<StartedAuthorization> {
    const discovered = await this.discover(server);
    const identity = await this.clientFor(server, discovered);
    const codeVerifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const url = new URL(discovered.metadata.authorization_endpoint!);
    url.searchParams.set('response_type', 'code');
    url.searchParams.set('client_id', identity.clientId);
    url.searchParams.set('redirect_uri', this.redirectUri);
    url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(codeVerifier));
    url.searchParams.set('code_challenge_method', 'S256');
    url.searchParams.set('state', state);
    url.searchParams.set('resource', server.url);
    const scopes = this.scopesFor(server, discovered);
    if (scopes.length > 0) url.searchParams.set('scope', scopes.join(' '));
    return {
      authorizationUrl: url.href,
      pending: {
        state,
        codeVerifier,
        userId,
        server: server.slug,
        issuer: discovered.issuer,
        clientId: identity.clientId,
        expiresAt: this.#now() + this.#pendingTtlMs,
      },
    };
  }

  /**
   * Finishes the authorization `pending` with the authorization server's redirect to the
   * callback (`callbackUrl`): checks `state`, `iss` (RFC 9207, required when the server says it
   * sends it) and exchanges the code with its PKCE verifier and `resource`. Resolves with the
   * connection to save. Throws {@link UpstreamAuthorizationFailedError} or
   * {@link UpstreamAuthUnavailableError}.
   */
  async finishAuthorization(
    pending: PendingAuthorization,
    callbackUrl: string | URL,
    server: UpstreamOAuthServer,
  ): Promise<StoredConnection> {
    const params = new URL(String(callbackUrl)).searchParams;
    if (params.get('state') !== pending.state)
      throw new UpstreamAuthorizationFailedError(
        'state_mismatch',
        'The authorization answer is for another authorization (state).',
      );
    if (pending.server !== server.slug)
      throw new UpstreamAuthorizationFailedError('state_mismatch', 'The authorization answer is for another server.');
    if (pending.expiresAt <= this.#now())
      throw new UpstreamAuthorizationFailedError('expired', 'The authorization took too long; start again.');
    const discovered = await this.discover(server);
    const as = discovered.metadata;
    if (discovered.issuer !== pending.issuer)
      throw new UpstreamAuthorizationFailedError(
        'issuer_mismatch',
        "The server's authorization server changed during the authorization; start again.",
      );
    const iss = params.get('iss');
    if (
      (iss === null && as.authorization_response_iss_parameter_supported === true) ||
      (iss !== null && iss !== as.issuer)
    )
      throw new UpstreamAuthorizationFailedError(
        'issuer_mismatch',
        "The authorization answer does not come from the server's authorization server (iss).",
      );
    const identity = await this.clientFor(server, discovered);
    if (identity.clientId !== pending.clientId)
      throw new UpstreamAuthorizationFailedError(
        'invalid_response',
        "The gateway's client changed during the authorization; start again.",
      );
    const { client, auth } = clientAuthOf(identity);
    let validated: URLSearchParams;
    try {
      validated = oauth.validateAuthResponse(as, client, params, pending.state);
    } catch (error) {
      if (error instanceof oauth.AuthorizationResponseError)
        throw new UpstreamAuthorizationFailedError(
          'authorization_denied',
          'The authorization server did not authorize the connection.',
          error.error,
        );
      throw new UpstreamAuthorizationFailedError('invalid_response', 'The authorization answer is not usable.');
    }
    let tokens: oauth.TokenEndpointResponse;
    try {
      const response = await oauth.authorizationCodeGrantRequest(
        as,
        client,
        auth,
        validated,
        this.redirectUri,
        pending.codeVerifier,
        {
          ...requestOptions(this.#discovery.fetch),
          additionalParameters: { resource: server.url },
        },
      );
      tokens = await oauth.processAuthorizationCodeResponse(as, client, response);
    } catch (error) {
      if (error instanceof UpstreamAuthUnavailableError) throw error;
      if (error instanceof oauth.ResponseBodyError && !isOutage(error))
        throw new UpstreamAuthorizationFailedError(
          'code_refused',
          'The authorization server refused the authorization code.',
          error.error,
        );
      if (error instanceof oauth.ResponseBodyError)
        throw new UpstreamAuthUnavailableError(
          'bad_status',
          'The authorization server could not exchange the code just now.',
        );
      throw new UpstreamAuthorizationFailedError(
        'invalid_response',
        "The authorization server's token answer is not usable.",
      );
    }
    const now = this.#now();
    return {
      userId: pending.userId,
      server: pending.server,
      issuer: discovered.issuer,
      clientId: identity.clientId,
      ...tokenFields(tokens, now, this.scopesFor(server, discovered)),
      ...(typeof tokens.refresh_token === 'string' ? { refreshToken: tokens.refresh_token } : {}),
      createdAt: now,
    };
  }

  /**
   * Refreshes `connection` (with `resource`); resolves with the connection to save, keeping the
   * old refresh token unless the server rotated it. Throws {@link UpstreamRefreshRefusedError}
   * when the server refuses the grant (the connection is over; also without a refresh token, or
   * when the client or issuer changed), {@link UpstreamAuthUnavailableError} when it is down.
   */
  async refresh(connection: StoredConnection, server: UpstreamOAuthServer): Promise<StoredConnection> {
    if (connection.refreshToken === undefined) throw new UpstreamRefreshRefusedError('no_refresh_token');
    const discovered = await this.discover(server);
    if (discovered.issuer !== connection.issuer) throw new UpstreamRefreshRefusedError('issuer_changed');
    const identity = await this.clientFor(server, discovered);
    if (identity.clientId !== connection.clientId) throw new UpstreamRefreshRefusedError('client_changed');
    const { client, auth } = clientAuthOf(identity);
    let tokens: oauth.TokenEndpointResponse;
    try {
      const response = await oauth.refreshTokenGrantRequest(
        discovered.metadata,
        client,
        auth,
        connection.refreshToken,
        {
          ...requestOptions(this.#discovery.fetch),
          additionalParameters: { resource: server.url },
        },
      );
      tokens = await oauth.processRefreshTokenResponse(discovered.metadata, client, response);
    } catch (error) {
      if (error instanceof UpstreamAuthUnavailableError) throw error;
      if (error instanceof oauth.ResponseBodyError && !isOutage(error))
        throw new UpstreamRefreshRefusedError(error.error);
      throw new UpstreamAuthUnavailableError(
        'bad_status',
        'The authorization server could not refresh the token just now.',
      );
    }
    const now = this.#now();
    return {
      ...connection,
      ...tokenFields(tokens, now, connection.scopes),
      refreshToken: typeof tokens.refresh_token === 'string' ? tokens.refresh_token : connection.refreshToken,
      lastRefreshedAt: now,
    };
  }

  /**
   * Revokes `connection` at the authorization server (RFC 7009): its refresh token, else its
   * access token. Resolves false when the server has no `revocation_endpoint`.
   */
  async revoke(connection: StoredConnection, server: UpstreamOAuthServer): Promise<boolean> {
    const discovered = await this.discover(server);
    if (typeof discovered.metadata.revocation_endpoint !== 'string') return false;
    const identity = await this.clientFor(server, discovered);
    const { client, auth } = clientAuthOf(identity);
    const token = connection.refreshToken ?? connection.accessToken;
    const response = await oauth.revocationRequest(discovered.metadata, client, auth, token, {
      ...requestOptions(this.#discovery.fetch),
      additionalParameters: {
        token_type_hint: connection.refreshToken !== undefined ? 'refresh_token' : 'access_token',
      },
    });
    try {
      await oauth.processRevocationResponse(response);
    } catch {
      throw new UpstreamAuthUnavailableError('bad_status', 'The authorization server did not accept the revocation.');
    }
    return true;
  }
}

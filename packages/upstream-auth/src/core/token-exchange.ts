/**
 * RFC 8693 token exchange (CONTRACT section 15, `token_exchange`): the caller's
 * identity-provider token exchanged at the provider's token endpoint for a token minted for the
 * MCP server, cached per (sha256 of the caller's token, server) until 30 s before it expires.
 */
import { createHash } from 'node:crypto';
import * as oauth from 'oauth4webapi';
import type { TokenExchangeUpstreamAuth } from './config';
import { AuthorizationServerDiscovery, requestOptions } from './discovery';
import { TokenExchangeFailedError, UpstreamAuthUnavailableError } from './errors';
import { clientAuthOf } from './oauth-client';

/** The grant type of RFC 8693. */
export const TOKEN_EXCHANGE_GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';

/** An MCP server whose `upstream_auth` is `token_exchange`. */
export interface TokenExchangeServer {
  slug: string;
  /** The server's URL: the default `resource`. */
  url: string;
  auth: TokenExchangeUpstreamAuth;
}

/** Options of {@link TokenExchanger}. */
export interface TokenExchangerOptions {
  /** Finds `issuer` metadata (and holds the guarded fetch). Default a new {@link AuthorizationServerDiscovery}. */
  discovery?: AuthorizationServerDiscovery;
  /** The issuer used when a server names neither `token_endpoint` nor `issuer` (the `jwt_validation` issuer). Default none. */
  defaultIssuer?: string;
  /** Most exchanged tokens kept (the oldest goes first). Default 10000. */
  maxCachedTokens?: number;
  /** The clock, in ms since the epoch. Default `Date.now`. */
  now?: () => number;
}

/** Exchanges callers' tokens (see the module). */
export class TokenExchanger {
  readonly #discovery: AuthorizationServerDiscovery;
  readonly #defaultIssuer: string | undefined;
  readonly #max: number;
  readonly #now: () => number;
  readonly #cache = new Map<string, { token: string; until: number }>();

  constructor(options: TokenExchangerOptions = {}) {
    this.#discovery = options.discovery ?? new AuthorizationServerDiscovery();
    this.#defaultIssuer = options.defaultIssuer;
    this.#max = options.maxCachedTokens ?? 10_000;
    if (!Number.isInteger(this.#max) || this.#max < 1)
      throw new TypeError('TokenExchanger: `maxCachedTokens` must be a whole number of at least 1 (default 10000).');
    this.#now = options.now ?? Date.now;
  }

  /** How many exchanged tokens are kept. */
  get cachedTokens(): number {
    return this.#cache.size;
  }

  /**
   * The access token for `server` exchanged from `subjectToken` (`subjectTokenType` access_token
   * by default, or id_token). Throws {@link TokenExchangeFailedError} when the provider refuses,
   * {@link UpstreamAuthUnavailableError} when it cannot be reached or is not configured.
   */
  async exchange(
    server: TokenExchangeServer,
    subjectToken: string,
    subjectTokenType: 'access_token' | 'id_token' = 'access_token',
  ): Promise<string> {
    const key = `${createHash('sha256').update(subjectToken).digest('base64url')}\n${server.slug}\n${subjectTokenType}`;
    const now = this.#now();
    const hit = this.#cache.get(key);
    if (hit && hit.until > now) return hit.token;
    this.#cache.delete(key);
    const as = await this.#authorizationServer(server);
    const { client, auth } = clientAuthOf({
      clientId: server.auth.client.client_id,
      clientSecret: server.auth.client.client_secret,
      tokenEndpointAuthMethod:
        server.auth.client.token_endpoint_auth_method ??
        (server.auth.client.client_secret === undefined ? 'none' : 'client_secret_basic'),
    });
    const parameters = new URLSearchParams({
      subject_token: subjectToken,
      subject_token_type: `urn:ietf:params:oauth:token-type:${subjectTokenType}`,
      requested_token_type: 'urn:ietf:params:oauth:token-type:access_token',
    });
    if (server.auth.audience !== undefined) parameters.set('audience', server.auth.audience);
    const resource = server.auth.resource ?? (server.auth.audience === undefined ? server.url : undefined);
    if (resource !== undefined) parameters.set('resource', resource);
    if (server.auth.scopes && server.auth.scopes.length > 0) parameters.set('scope', server.auth.scopes.join(' '));
    let tokens: oauth.TokenEndpointResponse;
    try {
      const response = await oauth.genericTokenEndpointRequest(
        as,
        client,
        auth,
        TOKEN_EXCHANGE_GRANT,
        parameters,
        requestOptions(this.#discovery.fetch),
      );
      tokens = await oauth.processGenericTokenEndpointResponse(as, client, response);
    } catch (error) {
      if (error instanceof UpstreamAuthUnavailableError) throw error;
      if (error instanceof oauth.ResponseBodyError && error.status < 500 && error.error !== 'temporarily_unavailable')
        throw new TokenExchangeFailedError(error.error);
      // A refused client authentication comes as a 401 with a WWW-Authenticate challenge.
      if (error instanceof oauth.WWWAuthenticateChallengeError && error.status < 500)
        throw new TokenExchangeFailedError(error.cause[0]?.parameters.error ?? 'invalid_client');
      throw new UpstreamAuthUnavailableError(
        'bad_status',
        `The identity provider could not exchange the token for "${server.slug}" just now.`,
      );
    }
    if (typeof tokens.expires_in === 'number') {
      const until = this.#now() + tokens.expires_in * 1000 - 30_000;
      if (until > this.#now()) {
        while (this.#cache.size >= this.#max) this.#cache.delete(this.#cache.keys().next().value!);
        this.#cache.set(key, { token: tokens.access_token, until });
      }
    }
    return tokens.access_token;
  }

  async #authorizationServer(server: TokenExchangeServer): Promise<oauth.AuthorizationServer> {
    const { token_endpoint, issuer } = server.auth;
    if (token_endpoint !== undefined) return { issuer: issuer ?? new URL(token_endpoint).origin, token_endpoint };
    const from = issuer ?? this.#defaultIssuer;
    if (from === undefined)
      throw new UpstreamAuthUnavailableError(
        'invalid_metadata',
        `The server "${server.slug}" names neither token_endpoint nor issuer for its token exchange, and there is no jwt_validation issuer.`,
      );
    return this.#discovery.issuerMetadata(from);
  }
}

import { randomUUID } from 'node:crypto';
import type { CatalogDatabase } from '@gw/catalog';
import { LocalKeySet, type JsonWebKeySet, type SigningKey } from '@gw/jwks';
import { rejectUnknownOptions } from '@gw/options';
import {
  InvalidClientMetadataError,
  InvalidGrantError,
  InvalidScopeError,
  InvalidTargetError,
  ServerError,
} from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { OAuthServerProvider } from '@modelcontextprotocol/sdk/server/auth/provider.js';
import type { OAuthRegisteredClientsStore } from '@modelcontextprotocol/sdk/server/auth/clients.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type {
  OAuthClientInformationFull,
  OAuthTokenRevocationRequest,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import { AccessTokens, AccessTokenRefusedError, type VerifiedAccessToken } from './access-tokens';
import {
  AuthorizationPageError,
  AuthorizationRequestExpiredError,
  CsrfTokenInvalidError,
  InvalidAuthorizationRequestError,
  InvalidResourceError,
  InvalidScopeRequestError,
  PkceRequiredError,
  RedirectUriMismatchError,
  SignInFailedError,
  TooManySignInsError,
  TooManyAuthorizationRequestsError,
  UnknownClientError,
  ClientMetadataError,
  ClientMetadataRefusedError,
  IdentityTokenUnavailableError,
} from './errors';
import type { ClientMetadataDocument } from './client-metadata';
import type { LoginMethod, ProviderSignIn, RedirectLoginMethod, SignedInUser } from './login';
import { openProviderTokens, sealProviderTokens, type ProviderTokens } from './provider-tokens';
import { consentPage, continuePage, errorPage, pageCsp, signInPage } from './pages';
import { RevokedGrants } from './revoked-grants';
import { Sealer, digest, randomToken } from './sealed';
import { OAuthStore, type Grant, type StoredClient } from './store';

/** Options of {@link AuthorizationServer}. */
export interface AuthorizationServerOptions {
  /** The gateway's public origin (`PUBLIC_BASE_URL`), such as `https://gateway.example.com`: the issuer. Required. */
  publicBaseUrl: string;
  /**
   * Called once a grant is revoked on this instance (by an administrator, the user's client, a
   * reused refresh token or an ended sign-in), with its id and its user: what the host holds for
   * that user ends with it (their upstream connections, CONTRACT section 15). Must not throw.
   * Default: none.
   */
  onGrantRevoked?: (grant: { id: string; userId: string }) => void;
  /** The catalog's database (migration 6 applied). Required. */
  db: CatalogDatabase;
  /** The key that signs access tokens (the gateway's signing key). Required. */
  signingKey: SigningKey;
  /** The published key set that verifies them (current and retired keys). Default: the signing key alone. */
  jwks?: JsonWebKeySet;
  /** Signs the pages' hidden fields and cookies; the same on every instance, at least 32 bytes. Required. */
  pageSecret: Buffer;
  /** How users sign in. Required. */
  login: LoginMethod;
  /** The MCP servers' slugs, read on every authorization request (a live set). Required. */
  mcpServerSlugs: { has(slug: string): boolean };
  /** Access token lifetime in seconds. Default 3600. */
  accessTokenTtlSeconds?: number;
  /** Refresh token lifetime in seconds (each rotation starts it again). Default 2592000 (30 days). */
  refreshTokenTtlSeconds?: number;
  /** Scopes a client may ask for (the first is granted when none is asked for). Default `["mcp"]`. */
  scopesSupported?: readonly string[];
  /** How often the revoked grants are reloaded, in ms. Default 500. */
  revocationRefreshMs?: number;
  /**
   * Fetches a client ID metadata document for a `client_id` that is an https URL; throws when it
   * is refused. Wire `fetchClientMetadata` of `client-metadata.ts` here. Default: none, and such
   * clients are unknown.
   */
  clientMetadata?: (clientId: string) => Promise<ClientMetadataDocument>;
  /** Called when the revoked grants cannot be reloaded (the last snapshot stays). Default: none. */
  onRevocationReloadError?: (error: unknown) => void;
  /**
   * Encrypts the OpenID Provider's refresh token of a sign-in (in the sign-in cookie and the grant's
   * row); the catalog's `SecretBox` fits. With `login.type: "oidc"`, a grant is refreshed only by
   * renewing its sign-in at the provider, so without this box (or without a provider refresh
   * token) its refresh is refused with `invalid_grant`. Default: none.
   */
  loginTokenBox?: LoginTokenBox;
}

/** Encryption of the provider's tokens at rest (`SecretBox` of `@gw/catalog` has this shape). */
export interface LoginTokenBox {
  /** Encrypts `plaintext`, bound to `context`. */
  seal(plaintext: string, context: string): string;
  /** Decrypts what {@link LoginTokenBox.seal} gave for the same `context`; throws when it was altered. */
  open(sealed: string, context: string): string;
}

/** An answer of the authorization pages, framework-free: an HTML page or a redirect, with cookies to set. */
export type PageAnswer =
  | { kind: 'page'; status: number; html: string; csp: string; cookies: string[] }
  | { kind: 'redirect'; location: string; csp: string; cookies: string[] };

/** The authorization request, checked and sealed into the pages' hidden field. */
interface PendingRequest {
  clientId: string;
  clientName: string;
  redirectUri: string;
  codeChallenge: string;
  state?: string;
  scopes: string[];
  resource: string;
  /**
   * A sign-in for a page of the gateway (the connections page, CONTRACT section 15), not for a
   * client: the path (and query) of this gateway the user goes back to once signed in.
   */
  returnTo?: string;
}

const LOGIN_COOKIE = 'gw_oauth_login';
/** The sign-in of the gateway's own pages under `/connect` (a cookie of that path only). */
const PAGE_LOGIN_COOKIE = 'gw_connect_login';
/** Where {@link PAGE_LOGIN_COOKIE} is sent. */
const PAGE_PATH = '/connect';
/** A path of this gateway under `/connect` (and its query), as a page sign-in may return to. */
const PAGE_RETURN = /^\/connect(?:\/[A-Za-z0-9._~%-]*)*(?:\?[A-Za-z0-9._~%&=+-]*)?$/;
const PRESESSION_COOKIE = 'gw_oauth_presession';
const REDIRECT_LOGIN_COOKIE = 'gw_oauth_signin';
const REQUEST_TTL_SECONDS = 600;
const LOGIN_TTL_SECONDS = 600;

/** The provider's access token is used as is while more than this remains of it (30 s); else it is renewed. */
export const PROVIDER_ACCESS_TOKEN_MARGIN_MS = 30_000;
/** How long a provider access token whose answer had no `expires_in` is used (5 minutes). */
const UNKNOWN_ACCESS_TOKEN_LIFETIME_MS = 5 * 60_000;
/**
 * Longest sign-in cookie kept with the provider's access token inside: a longer one (a large JWT
 * access token) is kept without it, under browsers' 4096-byte cookie limit, and the grant renews
 * the access token when it is first needed.
 */
const MAX_LOGIN_COOKIE_CHARS = 3800;

/** The provider's tokens of a sign-in or renewal as a grant keeps them (an access token always with an expiry). */
function keptTokens(answer: ProviderSignIn, obtainedAt: number, refreshToken?: string): ProviderTokens {
  const tokens: ProviderTokens = {};
  const refresh = answer.refreshToken ?? refreshToken;
  if (refresh !== undefined && refresh !== '') tokens.refreshToken = refresh;
  if (typeof answer.accessToken === 'string' && answer.accessToken !== '') {
    tokens.accessToken = answer.accessToken;
    tokens.accessTokenExpiresAt =
      typeof answer.accessTokenExpiresAt === 'number' && Number.isFinite(answer.accessTokenExpiresAt)
        ? answer.accessTokenExpiresAt
        : obtainedAt + UNKNOWN_ACCESS_TOKEN_LIFETIME_MS;
  }
  return tokens;
}

/** The access token of `tokens` when more than {@link PROVIDER_ACCESS_TOKEN_MARGIN_MS} of it remain at `now`. */
function usableAccessToken(tokens: ProviderTokens, now: number): string | undefined {
  return tokens.accessToken !== undefined &&
    tokens.accessTokenExpiresAt !== undefined &&
    tokens.accessTokenExpiresAt - now > PROVIDER_ACCESS_TOKEN_MARGIN_MS
    ? tokens.accessToken
    : undefined;
}

/** Whether a failure of the login method's `renew` is the provider being unreachable (`OidcLoginError` code). */
function providerUnreachable(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'provider_unreachable';
}
const CODE_TTL_MS = 60_000;
const MAX_PARAM_CHARS = 2048;
const MAX_REDIRECT_URIS = 10;
const PKCE_CHALLENGE = /^[A-Za-z0-9._~-]{43,128}$/;
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/** A single string parameter, or undefined; a repeated or oversized one is refused. */
function param(params: Record<string, unknown>, name: string): string | undefined {
  const value = params[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length > MAX_PARAM_CHARS)
    throw new InvalidAuthorizationRequestError(
      `The parameter "${name}" must be given once, as text of at most ${MAX_PARAM_CHARS} characters.`,
    );
  return value;
}

function isLoopbackHttp(url: URL): boolean {
  return url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);
}

/** A redirect URI a client may register: https, or http on a loopback host (RFC 8252); no fragment, no credentials. */
export function isAllowedRedirectUri(value: unknown): boolean {
  if (typeof value !== 'string' || value.length > MAX_PARAM_CHARS || !URL.canParse(value)) return false;
  const url = new URL(value);
  if (url.hash !== '' || value.includes('#') || url.username !== '' || url.password !== '') return false;
  return url.protocol === 'https:' || isLoopbackHttp(url);
}

/**
 * Whether `requested` is one of `registered`: exactly, or (for client ID metadata documents, as
 * RFC 8252 section 7.3 says for native clients) a loopback http URI differing only in its port.
 */
export function redirectUriRegistered(
  requested: string,
  registered: readonly string[],
  anyLoopbackPort: boolean,
): boolean {
  if (registered.includes(requested)) return true;
  if (!anyLoopbackPort || !URL.canParse(requested)) return false;
  const want = new URL(requested);
  if (!isLoopbackHttp(want)) return false;
  return registered.some((uri) => {
    if (!URL.canParse(uri)) return false;
    const have = new URL(uri);
    return (
      isLoopbackHttp(have) &&
      have.hostname === want.hostname &&
      have.pathname === want.pathname &&
      have.search === want.search
    );
  });
}

function cookie(name: string, value: string, maxAgeSeconds: number, secure: boolean, path = '/oauth'): string {
  return `${name}=${value}; Path=${path}; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSeconds}${secure ? '; Secure' : ''}`;
}

function checkPositiveInteger(value: unknown, name: string, example: string): void {
  if (value !== undefined && !(Number.isInteger(value) && (value as number) > 0))
    throw new TypeError(`AuthorizationServer ${name} must be a whole number above 0, such as ${example}.`);
}

/**
 * The gateway as an OAuth 2.1 authorization server for MCP clients (CONTRACT section 11), without
 * Express: the authorization pages (sign-in, consent, errors) as {@link PageAnswer}s, the MCP SDK's
 * `OAuthServerProvider` behind `/oauth/token`, `/oauth/register` and `/oauth/revoke`, and the
 * access token verifier of the request path. Authorization code with PKCE S256 only; the
 * `resource` (RFC 8707) is bound into the token's `aud` (a request without one is taken as
 * `<issuer>/mcp`, every MCP server, never `/v1`); codes are single-use
 * within 60 s; refresh tokens rotate, and a reused one revokes its whole grant.
 */
export class AuthorizationServer {
  /** The issuer: `PUBLIC_BASE_URL` without a trailing slash. */
  readonly issuer: string;
  readonly store: OAuthStore;
  readonly tokens: AccessTokens;
  readonly revoked: RevokedGrants;
  readonly scopesSupported: readonly string[];
  private readonly sealer: Sealer;
  private readonly accessTtl: number;
  private readonly refreshTtl: number;
  private readonly secureCookies: boolean;

  constructor(private readonly options: AuthorizationServerOptions) {
    if (typeof options !== 'object' || options === null)
      throw new TypeError(
        'AuthorizationServer options must be an object such as { publicBaseUrl, db, signingKey, pageSecret, login, mcpServerSlugs }.',
      );
    rejectUnknownOptions(
      options,
      [
        'publicBaseUrl',
        'db',
        'signingKey',
        'jwks',
        'pageSecret',
        'login',
        'mcpServerSlugs',
        'accessTokenTtlSeconds',
        'refreshTokenTtlSeconds',
        'scopesSupported',
        'revocationRefreshMs',
        'clientMetadata',
        'onRevocationReloadError',
        'loginTokenBox',
        'onGrantRevoked',
      ],
      'AuthorizationServer',
    );
    if (options.onGrantRevoked !== undefined && typeof options.onGrantRevoked !== 'function')
      throw new TypeError('AuthorizationServer onGrantRevoked must be a function ({ id, userId }) => void.');
    if (typeof options.publicBaseUrl !== 'string' || !/^https?:\/\/[^/?#]+\/?$/.test(options.publicBaseUrl))
      throw new TypeError(
        'AuthorizationServer publicBaseUrl (PUBLIC_BASE_URL) must be an origin such as "https://gateway.example.com".',
      );
    if (typeof options.db?.query !== 'function')
      throw new TypeError('AuthorizationServer db must be the catalog database.');
    if (typeof options.signingKey?.kid !== 'string')
      throw new TypeError('AuthorizationServer signingKey must be a SigningKey of @gw/jwks.');
    if (options.login?.type !== 'api_key' && options.login?.type !== 'oidc')
      throw new TypeError('AuthorizationServer login must be an api_key or oidc login method.');
    if (typeof options.mcpServerSlugs?.has !== 'function')
      throw new TypeError('AuthorizationServer mcpServerSlugs must be a set with has(slug).');
    checkPositiveInteger(options.accessTokenTtlSeconds, 'accessTokenTtlSeconds', '3600');
    checkPositiveInteger(options.refreshTokenTtlSeconds, 'refreshTokenTtlSeconds', '2592000');
    checkPositiveInteger(options.revocationRefreshMs, 'revocationRefreshMs', '500');
    const scopes = options.scopesSupported ?? ['mcp'];
    if (
      !Array.isArray(scopes) ||
      scopes.length === 0 ||
      !scopes.every((s) => typeof s === 'string' && /^[\x21\x23-\x5b\x5d-\x7e]+$/.test(s))
    )
      throw new TypeError(
        'AuthorizationServer scopesSupported must be a non-empty list of scope names such as ["mcp"].',
      );
    if (
      options.loginTokenBox !== undefined &&
      (typeof options.loginTokenBox?.seal !== 'function' || typeof options.loginTokenBox?.open !== 'function')
    )
      throw new TypeError(
        'AuthorizationServer loginTokenBox must have seal(plaintext, context) and open(sealed, context).',
      );
    if (options.clientMetadata !== undefined && typeof options.clientMetadata !== 'function')
      throw new TypeError('AuthorizationServer clientMetadata must be a function (clientId) => Promise<document>.');
    this.issuer = options.publicBaseUrl.replace(/\/$/, '');
    this.secureCookies = this.issuer.startsWith('https:');
    this.scopesSupported = scopes;
    this.sealer = new Sealer(options.pageSecret);
    this.accessTtl = options.accessTokenTtlSeconds ?? 3600;
    this.refreshTtl = options.refreshTokenTtlSeconds ?? 2_592_000;
    this.store = new OAuthStore(options.db);
    this.revoked = new RevokedGrants(this.store, {
      refreshMs: options.revocationRefreshMs ?? 500,
      windowSeconds: this.accessTtl + 120,
      onError: options.onRevocationReloadError,
    });
    this.tokens = new AccessTokens({
      issuer: this.issuer,
      signingKey: options.signingKey,
      keys: new LocalKeySet(options.jwks ?? { keys: [options.signingKey.publicJwk] }),
      ttlSeconds: this.accessTtl,
      isRevoked: (id) => this.revoked.has(id),
      signInHolds: (login) => this.signInHolds(login),
    });
  }

  private purgeTimer: NodeJS.Timeout | undefined;
  /** Per grant, the last renewal at the OpenID Provider queued on this instance (they run one at a time). */
  private readonly renewals = new Map<string, Promise<void>>();

  /**
   * Runs `work` (a renewal of grant `grantId` at the provider, under its row lock) after the ones
   * queued before it on this instance: one per grant at a time here, so waiting calls hold no
   * database connection, and on the embedded database (no row lock held) they never overlap.
   */
  private oneRenewalAtATime<T>(grantId: string, work: () => Promise<T>): Promise<T> {
    const previous = this.renewals.get(grantId) ?? Promise.resolve();
    const run = previous.then(work);
    const done = run.then(
      () => undefined,
      () => undefined,
    );
    this.renewals.set(grantId, done);
    void done.then(() => {
      if (this.renewals.get(grantId) === done) this.renewals.delete(grantId);
    });
    return run;
  }

  /**
   * Loads the revoked grants and keeps them fresh; call before serving. Also deletes, every hour,
   * codes and refresh tokens expired for more than a day.
   */
  start(): Promise<void> {
    const purge = () =>
      void this.store.purgeExpired().catch((error: unknown) => this.options.onRevocationReloadError?.(error));
    purge();
    this.purgeTimer = setInterval(purge, 3_600_000);
    this.purgeTimer.unref();
    return this.revoked.start();
  }

  /** Stops reloading the revoked grants and purging. */
  stop(): Promise<void> {
    if (this.purgeTimer) clearInterval(this.purgeTimer);
    this.purgeTimer = undefined;
    return this.revoked.stop();
  }

  /** RFC 8414 metadata, exactly the fields of CONTRACT section 11. */
  metadata(): Record<string, unknown> {
    const base = this.issuer;
    return {
      issuer: base,
      authorization_endpoint: `${base}/oauth/authorize`,
      token_endpoint: `${base}/oauth/token`,
      registration_endpoint: `${base}/oauth/register`,
      revocation_endpoint: `${base}/oauth/revoke`,
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['none'],
      client_id_metadata_document_supported: true,
      scopes_supported: [...this.scopesSupported],
      authorization_response_iss_parameter_supported: true,
    };
  }

  /** Whether `resource` is one a token may be issued for: `<base>/mcp`, `<base>/v1` or `<base>/mcp/<slug>` of a configured server. */
  isResource(resource: string): boolean {
    const base = this.issuer;
    if (resource === `${base}/mcp` || resource === `${base}/v1`) return true;
    const prefix = `${base}/mcp/`;
    if (!resource.startsWith(prefix)) return false;
    const slug = resource.slice(prefix.length);
    return /^[A-Za-z0-9._~-]+$/.test(slug) && this.options.mcpServerSlugs.has(slug);
  }

  // ---------------------------------------------------------------- clients

  /** A registered client, or the client of a metadata document (`client_id` an https URL), or undefined. */
  async findClient(
    clientId: string,
  ): Promise<{ client: OAuthClientInformationFull; metadataDocument: boolean } | undefined> {
    try {
      return await this.lookUpClient(clientId);
    } catch (error) {
      if (error instanceof ClientMetadataRefusedError) return undefined;
      throw error;
    }
  }

  /**
   * {@link findClient}, but a metadata document the gateway refuses throws
   * {@link ClientMetadataRefusedError} with the fetcher's code, for the authorization page to name.
   */
  private async lookUpClient(
    clientId: string,
  ): Promise<{ client: OAuthClientInformationFull; metadataDocument: boolean } | undefined> {
    if (typeof clientId !== 'string' || clientId === '' || clientId.length > MAX_PARAM_CHARS) return undefined;
    // An http client_id is a document too: the fetcher refuses it unless its origin is an allowed client host.
    if (clientId.startsWith('https://') || clientId.startsWith('http://')) {
      if (!this.options.clientMetadata) return undefined;
      let document: ClientMetadataDocument;
      try {
        document = await this.options.clientMetadata(clientId);
      } catch (error) {
        if (error instanceof ClientMetadataError) throw new ClientMetadataRefusedError(error.code, error.message);
        throw new ClientMetadataRefusedError(
          'client_metadata_unreachable',
          'The client metadata document could not be fetched.',
        );
      }
      if (document.client_id !== clientId)
        throw new ClientMetadataRefusedError(
          'client_id_mismatch',
          'The client metadata document names another client_id than the URL it was fetched from.',
        );
      if (!Array.isArray(document.redirect_uris))
        throw new ClientMetadataRefusedError(
          'client_metadata_invalid',
          'The client metadata document lists no redirect_uris.',
        );
      return {
        client: {
          client_id: clientId,
          client_name: typeof document.client_name === 'string' ? document.client_name : undefined,
          redirect_uris: document.redirect_uris.filter((u): u is string => typeof u === 'string'),
          token_endpoint_auth_method: 'none',
        },
        metadataDocument: true,
      };
    }
    const stored = await this.store.getClient(clientId);
    return stored ? { client: stored as unknown as OAuthClientInformationFull, metadataDocument: false } : undefined;
  }

  /** Registers a public client (RFC 7591); the body was parsed by the MCP SDK's handler. */
  async registerClient(
    metadata: Omit<OAuthClientInformationFull, 'client_id' | 'client_id_issued_at'> &
      Partial<OAuthClientInformationFull>,
  ): Promise<OAuthClientInformationFull> {
    const uris = metadata.redirect_uris;
    if (!Array.isArray(uris) || uris.length === 0 || uris.length > MAX_REDIRECT_URIS)
      throw new InvalidClientMetadataError(`redirect_uris must list 1 to ${MAX_REDIRECT_URIS} URIs.`);
    for (const uri of uris) {
      if (!isAllowedRedirectUri(uri))
        throw new InvalidClientMetadataError(
          'Each redirect URI must be https, or http on a loopback host (127.0.0.1, [::1], localhost), without a fragment.',
        );
    }
    const grantTypes = metadata.grant_types ?? ['authorization_code', 'refresh_token'];
    if (!grantTypes.every((g) => g === 'authorization_code' || g === 'refresh_token'))
      throw new InvalidClientMetadataError('grant_types may hold only "authorization_code" and "refresh_token".');
    const responseTypes = metadata.response_types ?? ['code'];
    if (!responseTypes.every((r) => r === 'code'))
      throw new InvalidClientMetadataError('response_types may hold only "code".');
    const text = (value: unknown, max: number) =>
      typeof value === 'string' && value.length <= max ? value : undefined;
    const client: StoredClient = {
      client_id: randomUUID(),
      client_id_issued_at: Math.floor(Date.now() / 1000),
      client_name: text(metadata.client_name, 200),
      client_uri: text(metadata.client_uri, MAX_PARAM_CHARS),
      redirect_uris: [...uris],
      // Public clients only: a requested secret-based method is replaced (RFC 7591 section 3.2.1).
      token_endpoint_auth_method: 'none',
      grant_types: [...grantTypes],
      response_types: [...responseTypes],
    };
    for (const key of Object.keys(client)) if (client[key] === undefined) delete client[key];
    await this.store.registerClient(client);
    await this.store.audit({
      actor: `client:${client.client_id}`,
      action: 'oauth.register',
      kind: 'oauth-clients',
      slug: client.client_id,
      fields: [`client_name=${client.client_name ?? ''}`, ...client.redirect_uris.map((u) => `redirect_uri=${u}`)],
    });
    return client as unknown as OAuthClientInformationFull;
  }

  // ---------------------------------------------------------------- authorization pages

  /**
   * Checks an authorization request (`GET /oauth/authorize`): the client, its redirect URI and
   * PKCE first (refused on the gateway's error page, never by a redirect), then the rest. Throws
   * an {@link AuthorizationPageError}.
   */
  async checkAuthorizationRequest(params: Record<string, unknown>): Promise<PendingRequest> {
    const clientId = param(params, 'client_id');
    if (!clientId) throw new UnknownClientError('The request names no client (client_id).');
    const found = await this.lookUpClient(clientId);
    if (!found) throw new UnknownClientError('The client is not registered with the gateway.');
    const { client, metadataDocument } = found;
    let redirectUri = param(params, 'redirect_uri');
    if (redirectUri === undefined) {
      if (client.redirect_uris.length !== 1)
        throw new RedirectUriMismatchError('The request names no redirect_uri and the client has several.');
      redirectUri = client.redirect_uris[0] as string;
    } else if (!redirectUriRegistered(redirectUri, client.redirect_uris, metadataDocument)) {
      throw new RedirectUriMismatchError('The redirect_uri is not one the client registered.');
    }
    const challenge = param(params, 'code_challenge');
    const method = param(params, 'code_challenge_method');
    if (challenge === undefined || method !== 'S256')
      throw new PkceRequiredError('PKCE is required: send code_challenge with code_challenge_method=S256.');
    if (!PKCE_CHALLENGE.test(challenge))
      throw new PkceRequiredError('The code_challenge is not a base64url S256 challenge.');
    if (param(params, 'response_type') !== 'code')
      throw new InvalidAuthorizationRequestError('Only response_type=code is supported.');
    // A client without RFC 8707 (MCP clients before 2025-06-18 still exist) gets every MCP server,
    // never `/v1` or anything else: the consent page says so.
    const resource = param(params, 'resource') ?? `${this.issuer}/mcp`;
    if (!this.isResource(resource))
      throw new InvalidResourceError(
        `The resource must be ${this.issuer}/mcp/<server>, ${this.issuer}/mcp or ${this.issuer}/v1 (RFC 8707).`,
      );
    const scope = param(params, 'scope');
    const scopes =
      scope === undefined || scope.trim() === ''
        ? [this.scopesSupported[0] as string]
        : [...new Set(scope.trim().split(/ +/))];
    const unknown = scopes.find((s) => !this.scopesSupported.includes(s));
    if (unknown !== undefined)
      throw new InvalidScopeRequestError(
        `The scope "${unknown.slice(0, 64)}" is not offered; offered: ${this.scopesSupported.join(' ')}.`,
      );
    const state = param(params, 'state');
    return {
      clientId,
      clientName: client.client_name ?? clientId,
      redirectUri,
      codeChallenge: challenge,
      state,
      scopes,
      resource,
    };
  }

  /** The answer to `GET /oauth/authorize`. */
  async authorize(params: Record<string, unknown>, cookies: Record<string, string>): Promise<PageAnswer> {
    let pending: PendingRequest;
    try {
      pending = await this.checkAuthorizationRequest(params);
    } catch (error) {
      return this.errorAnswer(error);
    }
    const user = this.sealer.open<SignedInUser>('login', cookies[LOGIN_COOKIE]);
    if (user) return this.afterSignIn(user, pending, cookies[LOGIN_COOKIE] as string, []);
    return this.signInStep(pending, undefined);
  }

  /** The answer to the sign-in form (`POST /oauth/authorize/sign-in`, `login.type: "api_key"`). */
  async signIn(
    form: Record<string, unknown>,
    cookies: Record<string, string>,
    origin: string | undefined,
  ): Promise<PageAnswer> {
    try {
      this.checkOrigin(origin);
      const request = form.request;
      const pending = this.openRequest(request);
      const presession = cookies[PRESESSION_COOKIE];
      if (!presession || !this.sealer.checkMac(form.csrf, 'sign-in', presession, String(request)))
        throw new CsrfTokenInvalidError(
          "The sign-in form is not this page's: open the application's sign-in link again.",
        );
      const login = this.options.login;
      if (login.type !== 'api_key')
        throw new SignInFailedError('This gateway signs users in at its identity provider.');
      const key = typeof form.api_key === 'string' ? form.api_key.trim() : '';
      const user = key === '' || key.length > 1024 ? undefined : await login.checkApiKey(key);
      if (!user) {
        await this.store.audit({
          actor: 'anonymous',
          action: 'oauth.sign_in_failed',
          kind: 'oauth-clients',
          slug: pending.clientId,
          fields: ['method=api_key'],
        });
        return this.signInStep(pending, 'That API key is not valid.', 401);
      }
      await this.audit(user, 'oauth.sign_in', 'oauth-clients', pending.clientId, ['method=api_key']);
      const sealed = this.sealer.seal('login', user, LOGIN_TTL_SECONDS);
      return this.afterSignIn(user, pending, sealed, [
        cookie(LOGIN_COOKIE, sealed, LOGIN_TTL_SECONDS, this.secureCookies),
      ]);
    } catch (error) {
      return this.errorAnswer(error);
    }
  }

  /** The answer to the consent form (`POST /oauth/authorize/consent`). */
  async consent(
    form: Record<string, unknown>,
    cookies: Record<string, string>,
    origin: string | undefined,
  ): Promise<PageAnswer> {
    try {
      this.checkOrigin(origin);
      const request = form.request;
      const pending = this.openRequest(request);
      const loginCookie = cookies[LOGIN_COOKIE];
      const user = this.sealer.open<SignedInUser>('login', loginCookie);
      if (!user || !this.sealer.checkMac(form.csrf, 'consent', loginCookie as string, String(request)))
        throw new CsrfTokenInvalidError(
          "The consent form is not this page's, or the sign-in has ended: open the application's sign-in link again.",
        );
      if (form.decision !== 'allow') {
        await this.audit(user, 'oauth.consent_denied', 'oauth-clients', pending.clientId, [
          `resource=${pending.resource}`,
        ]);
        return this.redirectAnswer(
          pending,
          { error: 'access_denied', error_description: 'The user denied access.' },
          [],
        );
      }
      await this.store.addConsent(user.sub, pending.clientId, pending.scopes, pending.resource);
      await this.audit(user, 'oauth.consent', 'oauth-clients', pending.clientId, [
        `resource=${pending.resource}`,
        `scope=${pending.scopes.join(' ')}`,
      ]);
      return this.issueCode(user, pending, []);
    } catch (error) {
      return this.errorAnswer(error);
    }
  }

  /** Starts a redirect sign-in (`login.type: "oidc"`): the provider's URL, with the state kept in a sealed cookie. */
  private async redirectSignIn(pending: PendingRequest): Promise<PageAnswer> {
    const login = this.options.login;
    if (login.type !== 'oidc') throw new SignInFailedError('This gateway signs users in with an API key.');
    const { url, state } = await login.start();
    const sealed = this.sealer.seal('redirect-sign-in', { state, pending }, REQUEST_TTL_SECONDS);
    return {
      kind: 'redirect',
      location: url,
      csp: pageCsp(),
      cookies: [cookie(REDIRECT_LOGIN_COOKIE, sealed, REQUEST_TTL_SECONDS, this.secureCookies)],
    };
  }

  /** The answer to `GET /oauth/callback` (the OpenID Provider sends the user back here). */
  async callback(callbackUrl: URL, cookies: Record<string, string>): Promise<PageAnswer> {
    try {
      const login = this.options.login;
      if (login.type !== 'oidc')
        throw new SignInFailedError('This gateway does not sign users in at an identity provider.');
      const kept = this.sealer.open<{ state: Record<string, unknown>; pending: PendingRequest }>(
        'redirect-sign-in',
        cookies[REDIRECT_LOGIN_COOKIE],
      );
      if (!kept)
        throw new AuthorizationRequestExpiredError(
          "The sign-in took too long or was not started here: open the application's sign-in link again.",
        );
      let user: SignedInUser;
      let tokens: ProviderTokens = {};
      try {
        const obtainedAt = Date.now();
        const signIn: ProviderSignIn = login.finishWithTokens
          ? await login.finishWithTokens(callbackUrl, kept.state)
          : { claims: await login.finish(callbackUrl, kept.state) };
        user = login.toUser(signIn.claims);
        tokens = keptTokens(signIn, obtainedAt);
      } catch {
        throw new SignInFailedError("The identity provider's answer could not be verified.");
      }
      await this.audit(user, 'oauth.sign_in', 'oauth-clients', kept.pending.clientId, ['method=oidc']);
      const sealed = this.sealLogin(user, tokens);
      return this.afterSignIn(user, kept.pending, sealed, [
        cookie(LOGIN_COOKIE, sealed, LOGIN_TTL_SECONDS, this.secureCookies),
        cookie(REDIRECT_LOGIN_COOKIE, '', 0, this.secureCookies),
      ]);
    } catch (error) {
      return this.errorAnswer(error);
    }
  }

  /**
   * The sign-in cookie's value: the user with the provider's tokens encrypted inside (when there is
   * a box and a token), the access token left out when the cookie would be too long for a browser.
   */
  private sealLogin(user: SignedInUser, tokens: ProviderTokens): string {
    const box = this.options.loginTokenBox;
    if (box === undefined || (tokens.refreshToken === undefined && tokens.accessToken === undefined))
      return this.sealer.seal('login', user, LOGIN_TTL_SECONDS);
    user.loginTokens = sealProviderTokens(box, user.subject, tokens);
    const sealed = this.sealer.seal('login', user, LOGIN_TTL_SECONDS);
    if (sealed.length <= MAX_LOGIN_COOKIE_CHARS || tokens.accessToken === undefined) return sealed;
    if (tokens.refreshToken === undefined) delete user.loginTokens;
    else user.loginTokens = sealProviderTokens(box, user.subject, { refreshToken: tokens.refreshToken });
    return this.sealer.seal('login', user, LOGIN_TTL_SECONDS);
  }

  private async signInStep(pending: PendingRequest, error: string | undefined, status = 200): Promise<PageAnswer> {
    if (this.options.login.type === 'oidc') return this.redirectSignIn(pending);
    const request = this.sealer.seal('request', pending, REQUEST_TTL_SECONDS);
    const presession = randomToken();
    return {
      kind: 'page',
      status,
      html: signInPage({
        clientName: pending.clientName,
        action: '/oauth/authorize/sign-in',
        fields: { request, csrf: this.sealer.mac('sign-in', presession, request) },
        error,
        forGatewayPage: pending.returnTo !== undefined,
      }),
      csp: pageCsp(this.formTargets(pending)),
      cookies: [cookie(PRESESSION_COOKIE, presession, REQUEST_TTL_SECONDS, this.secureCookies)],
    };
  }

  /**
   * The sign-in for a page of the gateway under `/connect` (CONTRACT section 15): the sign-in page
   * (`login.type: "api_key"`) or the redirect to the OpenID Provider, after which the user is sent
   * back to `returnTo` (a path under `/connect`, with its query; anything else is refused, so it
   * can never redirect elsewhere) signed in for those pages ({@link pageUser}) for 10 minutes.
   */
  async signInForPage(returnTo: string, pageName: string): Promise<PageAnswer> {
    try {
      if (!PAGE_RETURN.test(returnTo)) throw new TypeError('signInForPage returnTo must be a path under /connect.');
      return await this.signInStep(
        {
          clientId: 'gateway',
          clientName: pageName,
          redirectUri: `${this.issuer}${returnTo}`,
          codeChallenge: '',
          scopes: [],
          resource: '',
          returnTo,
        },
        undefined,
      );
    } catch (error) {
      return this.errorAnswer(error);
    }
  }

  /** The user signed in for the gateway's pages under `/connect` (see {@link signInForPage}), or undefined. */
  pageUser(cookies: Record<string, string>): SignedInUser | undefined {
    return this.sealer.open<SignedInUser>('page-login', cookies[PAGE_LOGIN_COOKIE]);
  }

  /**
   * A value bound to the page sign-in of these `cookies` and to `purpose`, for a form's CSRF field
   * (checked by {@link checkPageForm}); undefined when not signed in.
   */
  pageFormToken(cookies: Record<string, string>, purpose: string): string | undefined {
    const login = cookies[PAGE_LOGIN_COOKIE];
    return login === undefined || this.pageUser(cookies) === undefined
      ? undefined
      : this.sealer.mac('page-form', login, purpose);
  }

  /**
   * Whether a form posted to a page under `/connect` is the gateway's own: posted from this origin
   * (when the browser names one) with the CSRF field {@link pageFormToken} gave for `purpose`.
   */
  checkPageForm(cookies: Record<string, string>, origin: string | undefined, token: unknown, purpose: string): boolean {
    const login = cookies[PAGE_LOGIN_COOKIE];
    if (origin !== undefined && origin !== this.issuer) return false;
    return (
      login !== undefined &&
      this.pageUser(cookies) !== undefined &&
      this.sealer.checkMac(token, 'page-form', login, purpose)
    );
  }

  /** Wraps a page of the gateway with the pages' headers (CSP with `frame-ancestors 'none'`, no framing). */
  page(status: number, html: string, cookies: string[] = []): PageAnswer {
    return { kind: 'page', status, html, csp: pageCsp(), cookies };
  }

  /** The page answer of an error (its code and message on the gateway's error page, with its status). */
  pageError(error: unknown): PageAnswer {
    return this.errorAnswer(error);
  }

  /** After sign-in: the consent page, or the code at once when the user consented to this client, scopes and resource before. */
  private async afterSignIn(
    user: SignedInUser,
    pending: PendingRequest,
    loginCookie: string,
    cookies: string[],
  ): Promise<PageAnswer> {
    if (pending.returnTo !== undefined) {
      // A page's sign-in: back to the page (checked to be under /connect), signed in for those pages only.
      const returnTo = PAGE_RETURN.test(pending.returnTo) ? pending.returnTo : PAGE_PATH;
      const { loginTokens: _provider, ...pageUser } = user;
      const sealed = this.sealer.seal('page-login', pageUser, LOGIN_TTL_SECONDS);
      return {
        kind: 'page',
        status: 200,
        html: continuePage(returnTo),
        csp: pageCsp(),
        cookies: [
          ...cookies.filter((c) => !c.startsWith(`${LOGIN_COOKIE}=`)),
          cookie(PAGE_LOGIN_COOKIE, sealed, LOGIN_TTL_SECONDS, this.secureCookies, PAGE_PATH),
        ],
      };
    }
    if (await this.store.hasConsent(user.sub, pending.clientId, pending.scopes, pending.resource)) {
      return this.issueCode(user, pending, cookies);
    }
    const request = this.sealer.seal('request', pending, REQUEST_TTL_SECONDS);
    return {
      kind: 'page',
      status: 200,
      html: consentPage({
        clientName: pending.clientName,
        clientId: pending.clientId,
        redirectHost: new URL(pending.redirectUri).host,
        resource:
          pending.resource === `${this.issuer}/mcp`
            ? `${pending.resource} (every MCP server of this gateway)`
            : pending.resource,
        scopes: pending.scopes,
        user: String(user.claims.email ?? user.claims.username ?? user.sub),
        action: '/oauth/authorize/consent',
        fields: { request, csrf: this.sealer.mac('consent', loginCookie, request) },
      }),
      csp: pageCsp(this.formTargets(pending)),
      cookies,
    };
  }

  private async issueCode(user: SignedInUser, pending: PendingRequest, cookies: string[]): Promise<PageAnswer> {
    const code = randomToken();
    const grantId = await this.store.createGrantWithCode(
      {
        clientId: pending.clientId,
        userId: user.sub,
        subject: user.subject,
        claims: user.claims,
        loginTokens: user.loginTokens ?? null,
        resource: pending.resource,
        scopes: pending.scopes,
        expiresAt: new Date(Date.now() + this.refreshTtl * 1000),
      },
      {
        digest: digest(code),
        redirectUri: pending.redirectUri,
        codeChallenge: pending.codeChallenge,
        expiresAt: new Date(Date.now() + CODE_TTL_MS),
      },
    );
    await this.audit(user, 'oauth.code_issued', 'oauth-grants', grantId, [
      `client_id=${pending.clientId}`,
      `resource=${pending.resource}`,
    ]);
    // The provider's refresh token goes to one grant only: the next authorization signs in again.
    const ended = user.loginTokens === undefined ? [] : [cookie(LOGIN_COOKIE, '', 0, this.secureCookies)];
    return this.redirectAnswer(pending, { code }, [
      ...cookies.filter((c) => !c.startsWith(`${LOGIN_COOKIE}=`)),
      ...ended,
    ]);
  }

  /** The redirect to the client's (checked) redirect URI, with `state` and `iss` (RFC 9207). */
  private redirectAnswer(pending: PendingRequest, values: Record<string, string>, cookies: string[]): PageAnswer {
    const url = new URL(pending.redirectUri);
    for (const [name, value] of Object.entries(values)) url.searchParams.set(name, value);
    if (pending.state !== undefined) url.searchParams.set('state', pending.state);
    url.searchParams.set('iss', this.issuer);
    return { kind: 'redirect', location: url.href, csp: pageCsp(), cookies };
  }

  private formTargets(pending: PendingRequest): string[] {
    // A form whose answer redirects to the client must be allowed to go there (CSP form-action covers redirects).
    return [new URL(pending.redirectUri).origin];
  }

  private openRequest(sealed: unknown): PendingRequest {
    const pending = this.sealer.open<PendingRequest>('request', sealed);
    if (!pending)
      throw new AuthorizationRequestExpiredError(
        "The authorization request has expired or was altered: open the application's sign-in link again.",
      );
    return pending;
  }

  /** A form posted from another origin (when the browser names one) is refused. */
  private checkOrigin(origin: string | undefined): void {
    if (origin !== undefined && origin !== this.issuer)
      throw new CsrfTokenInvalidError('The form was posted from another site.');
  }

  /** The error page of a client address that tried too many sign-ins (`429`; `retry-after` is set by the limiter). */
  /** The page answered when one address sent too many authorization requests (`429`). */
  tooManyAuthorizationRequests(): PageAnswer {
    return this.errorAnswer(
      new TooManyAuthorizationRequestsError(
        'Too many authorization requests from this address: wait a minute and try again.',
      ),
    );
  }

  tooManySignIns(): PageAnswer {
    return this.errorAnswer(
      new TooManySignInsError('Too many sign-in attempts from this address: wait a minute and try again.'),
    );
  }

  private errorAnswer(error: unknown): PageAnswer {
    if (error instanceof AuthorizationPageError) {
      return {
        kind: 'page',
        status: error.status,
        html: errorPage(error.code, error.message),
        csp: pageCsp(),
        cookies: [],
      };
    }
    throw error;
  }

  private async audit(
    user: SignedInUser,
    action: string,
    kind: 'oauth-grants' | 'oauth-clients',
    slug: string,
    fields: string[],
  ): Promise<void> {
    await this.store.audit({ actor: `user:${user.sub}`, action, kind, slug, fields });
  }

  // ---------------------------------------------------------------- token endpoint

  /**
   * Revokes `grant` and refuses the exchange when the sign-in it was made with no longer holds
   * (its API key was revoked or has expired).
   */
  private async endGrantWhoseSignInEnded(grant: Grant): Promise<void> {
    if (this.signInHolds(grant.subject)) return;
    await this.revokeGrant(grant.id, 'gateway', 'sign_in_ended');
    throw new InvalidGrantError('The API key this grant was signed in with was revoked or has expired; sign in again.');
  }

  /**
   * Renews an OpenID sign-in at the provider with the grant's (decrypted) provider refresh token and
   * keeps the claims as they are now (groups included) and the provider's next refresh token,
   * encrypted. When the provider refuses (the user was removed or disabled) or the grant has no
   * provider refresh token, the grant is revoked and `invalid_grant` answered: the user signs in
   * again. Fails closed when the provider cannot be reached too (the refresh token is spent).
   */
  private async renewSignIn(grant: Grant): Promise<Record<string, unknown>> {
    const login = this.options.login;
    let claims: Record<string, unknown> | undefined;
    if (login.type === 'oidc' && login.renew && this.options.loginTokenBox && grant.loginTokens !== null) {
      // Under the grant's row lock: another instance renewing the provider's access token of this
      // grant at the same moment has stored the provider's next refresh token before this reads it.
      claims = await this.oneRenewalAtATime(grant.id, () =>
        this.store.withLockedGrant(grant.id, async (locked, tx) => {
          if (locked === undefined || locked.revokedAt !== null || locked.loginTokens === null) return undefined;
          try {
            const renewed = await this.renewAtProvider(locked, login);
            await this.store.renewSignIn(locked.id, renewed.claims, renewed.loginTokens, tx);
            return renewed.claims;
          } catch {
            return undefined;
          }
        }),
      );
    }
    if (claims === undefined) {
      await this.revokeGrant(grant.id, 'gateway', 'sign_in_not_renewed');
      throw new InvalidGrantError('The sign-in at the identity provider could not be renewed; sign in again.');
    }
    return claims;
  }

  /**
   * Presents the grant's provider refresh token to the provider (call under the grant's row lock):
   * the user's claims now and the provider's new tokens, encrypted. Throws
   * {@link IdentityTokenUnavailableError} when the grant has no refresh token, the provider refuses
   * or cannot be reached, or it renewed another user's sign-in.
   */
  private async renewAtProvider(
    grant: Grant,
    login: RedirectLoginMethod,
  ): Promise<{ claims: Record<string, unknown>; tokens: ProviderTokens; loginTokens: string }> {
    const box = this.options.loginTokenBox;
    if (box === undefined || grant.loginTokens === null || login.renew === undefined)
      throw new IdentityTokenUnavailableError('no_refresh_token', 'The grant has no identity-provider tokens.');
    const current = openProviderTokens(box, grant.subject, grant.loginTokens);
    if (current.refreshToken === undefined)
      throw new IdentityTokenUnavailableError(
        'no_refresh_token',
        'The identity provider gave this sign-in no refresh token; sign in again.',
      );
    const obtainedAt = Date.now();
    let answer: ProviderSignIn;
    try {
      answer = await login.renew(current.refreshToken, grant.userId);
    } catch (error) {
      if (providerUnreachable(error))
        throw new IdentityTokenUnavailableError(
          'provider_unreachable',
          'The identity provider could not be reached to renew the sign-in.',
        );
      throw new IdentityTokenUnavailableError(
        'renewal_refused',
        'The identity provider refused to renew the sign-in; sign in again.',
      );
    }
    const user = login.toUser(answer.claims);
    if (user.sub !== grant.userId || user.subject !== grant.subject)
      throw new IdentityTokenUnavailableError(
        'renewal_refused',
        'The identity provider renewed the sign-in of another user.',
      );
    const tokens = keptTokens(answer, obtainedAt, current.refreshToken);
    return { claims: user.claims, tokens, loginTokens: sealProviderTokens(box, grant.subject, tokens) };
  }

  /**
   * The OpenID Provider's access token of grant `grantId` (the caller's identity-provider token of
   * an OAuth-token caller signed in with `login.type: "oidc"`, for `upstream_auth.type:
   * "token_exchange"`, CONTRACT section 15): the kept one while more than 30 s of it remain, else
   * a new one got with the provider's refresh token and kept (the sign-in's claims too). The
   * renewal runs under the grant's row lock in the catalog's database, so of several instances
   * (or calls) needing it at once only one presents the refresh token; the others wait and use
   * its result. Resolves with undefined for API-key sign-ins, an unknown grant, and grants with no
   * provider tokens (or without a `loginTokenBox`). Throws {@link IdentityTokenUnavailableError}
   * when the grant is revoked or the renewal fails (nothing is revoked by it). Never logs or
   * returns the provider's refresh token.
   */
  async providerAccessToken(grantId: string): Promise<string | undefined> {
    const login = this.options.login;
    const box = this.options.loginTokenBox;
    if (login.type !== 'oidc' || box === undefined || typeof grantId !== 'string') return undefined;
    const grant = await this.store.getGrant(grantId);
    if (grant === undefined || grant.loginTokens === null) return undefined;
    if (grant.revokedAt !== null)
      throw new IdentityTokenUnavailableError('grant_revoked', 'The grant was revoked; sign in again.');
    const kept = usableAccessToken(openProviderTokens(box, grant.subject, grant.loginTokens), Date.now());
    if (kept !== undefined) return kept;
    return this.oneRenewalAtATime(grantId, () => this.lockedProviderAccessToken(grantId, login, box));
  }

  /** {@link AuthorizationServer.providerAccessToken} once the grant is locked: the winner's token, or a renewal. */
  private lockedProviderAccessToken(
    grantId: string,
    login: RedirectLoginMethod,
    box: LoginTokenBox,
  ): Promise<string | undefined> {
    return this.store.withLockedGrant(grantId, async (locked, tx) => {
      if (locked === undefined || locked.loginTokens === null) return undefined;
      if (locked.revokedAt !== null)
        throw new IdentityTokenUnavailableError('grant_revoked', 'The grant was revoked; sign in again.');
      // Renewed by another instance (or call) while this one waited for the lock: its result.
      const now = usableAccessToken(openProviderTokens(box, locked.subject, locked.loginTokens), Date.now());
      if (now !== undefined) return now;
      const renewed = await this.renewAtProvider(locked, login);
      if (renewed.tokens.accessToken === undefined)
        throw new IdentityTokenUnavailableError(
          'renewal_refused',
          'The identity provider renewed the sign-in without an access token.',
        );
      await this.store.renewSignIn(locked.id, renewed.claims, renewed.loginTokens, tx);
      return renewed.tokens.accessToken;
    });
  }

  /** Whether the sign-in `subject` (`api_key:<key id>`, `oidc:…`) still holds. */
  private signInHolds(subject: string): boolean {
    const login = this.options.login;
    return login.type !== 'api_key' || (login.signInHolds?.(subject) ?? true);
  }

  /** When an access token signed now expires, rounded up (the grant is kept revoked until then). */
  private accessTokenExpiry(): Date {
    return new Date((Math.ceil(Date.now() / 1000) + this.accessTtl + 1) * 1000);
  }

  private tokenAnswer(grant: Grant, refreshToken: string): OAuthTokens {
    const accessToken = this.tokens.sign({
      login: grant.subject,
      sub: grant.userId,
      resource: grant.resource,
      clientId: grant.clientId,
      scopes: grant.scopes,
      grantId: grant.id,
      claims: grant.claims,
    });
    return {
      access_token: accessToken,
      token_type: 'Bearer',
      expires_in: this.accessTtl,
      refresh_token: refreshToken,
      scope: grant.scopes.join(' '),
    };
  }

  /** Revokes a grant everywhere (this instance at once, the others within a reload) and audits it. */
  async revokeGrant(id: string, actor: string, reason: string): Promise<boolean> {
    const revoked = await this.store.revokeGrant(id, reason);
    this.revoked.add(id);
    if (revoked) {
      await this.store.audit({
        actor,
        action: 'oauth.revoke',
        kind: 'oauth-grants',
        slug: id,
        fields: [`reason=${reason}`],
      });
      const onRevoked = this.options.onGrantRevoked;
      if (onRevoked !== undefined) {
        const grant = await this.store.getGrant(id);
        if (grant !== undefined) onRevoked({ id, userId: grant.userId });
      }
    }
    return revoked;
  }

  private async usableCode(client: OAuthClientInformationFull, code: string) {
    const stored = typeof code === 'string' && code.length <= 256 ? await this.store.findCode(digest(code)) : undefined;
    if (!stored || stored.clientId !== client.client_id)
      throw new InvalidGrantError('The authorization code is not valid.');
    if (stored.expiresAt.getTime() <= Date.now()) throw new InvalidGrantError('The authorization code has expired.');
    return stored;
  }

  /** The MCP SDK's provider behind `/oauth/token`, `/oauth/register` and `/oauth/revoke`. */
  provider(): OAuthServerProvider {
    const clientsStore: OAuthRegisteredClientsStore = {
      getClient: async (clientId) => (await this.findClient(clientId))?.client,
      registerClient: (client) => this.registerClient(client),
    };
    return {
      clientsStore,
      authorize: async () => {
        throw new ServerError("Authorization is served by the gateway's own pages.");
      },
      challengeForAuthorizationCode: async (client, code) => (await this.usableCode(client, code)).codeChallenge,
      exchangeAuthorizationCode: async (client, code, _verifier, redirectUri, resource) => {
        const stored = await this.usableCode(client, code);
        if (redirectUri !== stored.redirectUri)
          throw new InvalidGrantError('The redirect_uri is not the one of the authorization request.');
        const grant = await this.store.getGrant(stored.grantId);
        if (!grant || grant.revokedAt !== null) throw new InvalidGrantError('The authorization code is not valid.');
        await this.endGrantWhoseSignInEnded(grant);
        if (resource !== undefined && resource.href !== grant.resource && resource.href !== `${grant.resource}/`)
          throw new InvalidTargetError('The resource is not the one of the authorization request.');
        // Used once, atomically on every instance; a code used twice may have been stolen, so the
        // tokens of its first use are revoked too (RFC 6749 section 4.1.2).
        if (!(await this.store.useCode(digest(code)))) {
          await this.revokeGrant(grant.id, `client:${client.client_id}`, 'code_replay');
          throw new InvalidGrantError('The authorization code has been used.');
        }
        const refreshToken = randomToken();
        await this.store.addRefreshToken(
          grant.id,
          digest(refreshToken),
          new Date(Date.now() + this.refreshTtl * 1000),
          undefined,
          this.accessTokenExpiry(),
        );
        await this.store.audit({
          actor: `client:${client.client_id}`,
          action: 'oauth.token_issued',
          kind: 'oauth-grants',
          slug: grant.id,
          fields: ['grant_type=authorization_code', `user=${grant.userId}`],
        });
        return this.tokenAnswer(grant, refreshToken);
      },
      exchangeRefreshToken: async (client, refreshToken, scopes, resource) => {
        if (typeof refreshToken !== 'string' || refreshToken.length > 256)
          throw new InvalidGrantError('The refresh token is not valid.');
        const used = await this.store.useRefreshToken(digest(refreshToken));
        if (used.state === 'unknown') throw new InvalidGrantError('The refresh token is not valid.');
        if (used.state === 'reused') {
          const grant = await this.store.getGrant(used.grantId);
          await this.revokeGrant(used.grantId, `client:${client.client_id}`, 'refresh_token_reuse');
          await this.store.audit({
            actor: `client:${client.client_id}`,
            action: 'oauth.refresh_reuse',
            kind: 'oauth-grants',
            slug: used.grantId,
            fields: [`user=${grant?.userId ?? ''}`],
          });
          throw new InvalidGrantError('The refresh token has been used before; its grant is revoked.');
        }
        const grant = await this.store.getGrant(used.grantId);
        if (
          !grant ||
          grant.clientId !== client.client_id ||
          grant.revokedAt !== null ||
          used.expiresAt.getTime() <= Date.now()
        )
          throw new InvalidGrantError('The refresh token is not valid.');
        await this.endGrantWhoseSignInEnded(grant);
        if (scopes !== undefined && !scopes.every((s) => grant.scopes.includes(s)))
          throw new InvalidScopeError('A refresh cannot add scopes.');
        if (resource !== undefined && resource.href !== grant.resource && resource.href !== `${grant.resource}/`)
          throw new InvalidTargetError('The resource is not the one of the grant.');
        if (this.options.login.type === 'oidc') grant.claims = await this.renewSignIn(grant);
        const next = randomToken();
        await this.store.addRefreshToken(
          grant.id,
          digest(next),
          new Date(Date.now() + this.refreshTtl * 1000),
          undefined,
          this.accessTokenExpiry(),
        );
        await this.store.audit({
          actor: `client:${client.client_id}`,
          action: 'oauth.token_issued',
          kind: 'oauth-grants',
          slug: grant.id,
          fields: ['grant_type=refresh_token', `user=${grant.userId}`],
        });
        const narrowed = scopes === undefined ? grant : { ...grant, scopes };
        return this.tokenAnswer(narrowed, next);
      },
      verifyAccessToken: async (token): Promise<AuthInfo> => {
        const verified = await this.verifyAnyResource(token);
        return {
          token,
          clientId: String(verified.claims.client_id ?? ''),
          scopes: String(verified.claims.scope ?? '')
            .split(' ')
            .filter(Boolean),
          expiresAt: Number(verified.claims.exp),
          resource: new URL(String(verified.claims.aud)),
        };
      },
      revokeToken: async (client, request: OAuthTokenRevocationRequest) => {
        const token = request.token;
        if (typeof token !== 'string' || token.length > 16 * 1024) return;
        let grantId = token.length <= 256 ? await this.store.grantOfRefreshToken(digest(token)) : undefined;
        if (grantId === undefined && this.tokens.issuedHere(token)) {
          grantId = await this.verifyAnyResource(token).then(
            (v) => v.grantId,
            () => undefined,
          );
        }
        if (grantId === undefined) return;
        const grant = await this.store.getGrant(grantId);
        // RFC 7009: a token of another client is left alone, and the answer is the same.
        if (grant?.clientId === client.client_id)
          await this.revokeGrant(grantId, `client:${client.client_id}`, 'revoked_by_client');
      },
    };
  }

  private verifyAnyResource(token: string): Promise<VerifiedAccessToken> {
    return this.tokens.verify(token, undefined).catch(async (error: unknown) => {
      if (!(error instanceof AccessTokenRefusedError) || error.code !== 'wrong_resource') throw error;
      // Read the audience the token names (its signature was verified above) and verify for it.
      const payload = JSON.parse(Buffer.from(token.split('.')[1] as string, 'base64url').toString('utf8')) as {
        aud?: unknown;
      };
      return this.tokens.verify(token, String(payload.aud));
    });
  }
}

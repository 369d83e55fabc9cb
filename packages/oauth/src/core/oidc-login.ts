/**
 * The user's sign-in at the company's OpenID Provider: the gateway is the provider's confidential
 * client (authorization code with PKCE S256, `state` and `nonce`), through `openid-client`, a
 * certified relying-party library. The ID token's signature, `iss`, `aud`, `exp` and `nonce` are
 * checked by it; this module adds the option checks, the age limit of a sign-in, the discovery
 * cache and the mapping of failures to {@link OidcLoginError} codes that never carry a secret.
 */
import { timingSafeEqual } from 'node:crypto';
import * as oidc from 'openid-client';
import { OidcLoginError } from './errors';

/** Options of {@link OidcLogin}. */
export interface OidcLoginOptions {
  /** The provider's issuer URL, exactly as its discovery document states it (https). */
  issuer: string;
  /** The gateway's client ID at the provider. */
  clientId: string;
  /** The gateway's client secret at the provider. Never logged nor put in an error. */
  clientSecret: string;
  /** The gateway's callback, registered at the provider: `PUBLIC_BASE_URL/oauth/callback`. */
  redirectUri: string;
  /** Scopes asked for. Default `['openid', 'email', 'profile']`; must include `openid`. */
  scopes?: string[];
  /** Most milliseconds one request to the provider may take. Default 5000. */
  timeoutMs?: number;
  /** Accept an `http:` issuer (loopback tests only). Default `false`. */
  allowInsecureIssuer?: boolean;
  /**
   * The claim holding the user's groups (`auth.groups_claim`). When the ID token has no `email`
   * or lacks this claim, the provider's userinfo answer fills them in. Default `groups`.
   */
  groupsClaim?: string;
}

/** What the gateway keeps (server side, for one browser) between {@link OidcLogin.start} and {@link OidcLogin.finish}. */
export interface OidcLoginState {
  /** The `state` sent to the provider, checked on the callback. */
  state: string;
  /** The `nonce` sent to the provider, checked in the ID token. */
  nonce: string;
  /** The PKCE code verifier; its S256 challenge was sent to the provider. */
  codeVerifier: string;
  /** When the sign-in started (milliseconds since the epoch). */
  createdAt: number;
}

/** A sign-in started longer ago than this (10 minutes) is refused. */
export const OIDC_LOGIN_MAX_AGE_MS = 10 * 60 * 1000;
/** The provider's discovery document is read again after this long (1 hour). */
const DISCOVERY_TTL_MS = 60 * 60 * 1000;
/** Longest `state`, `nonce` or code verifier accepted back. */
const MAX_STATE_FIELD = 512;
/** ID-token claims about the token itself, not the user; they never become caller claims. */
const PROTOCOL_CLAIMS = new Set([
  'iss',
  'aud',
  'exp',
  'iat',
  'nbf',
  'jti',
  'nonce',
  'at_hash',
  'c_hash',
  's_hash',
  'auth_time',
  'azp',
  'sid',
  'acr',
  'amr',
]);

function optionError(message: string): TypeError {
  return new TypeError(`OidcLogin: ${message}`);
}

function httpsUrl(name: string, value: unknown, allowHttp: boolean): URL {
  if (typeof value !== 'string' || value === '')
    throw optionError(`\`${name}\` is required, e.g. "https://login.example.com".`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw optionError(`\`${name}\` must be an absolute URL, e.g. "https://login.example.com"; received "${value}".`);
  }
  if (url.protocol !== 'https:' && !(allowHttp && url.protocol === 'http:'))
    throw optionError(
      `\`${name}\` must be an https URL; received "${url.protocol}". (\`allowInsecureIssuer: true\` accepts http for loopback tests only.)`,
    );
  if (url.username !== '' || url.password !== '' || url.hash !== '')
    throw optionError(`\`${name}\` must not contain a user name, password or #fragment.`);
  return url;
}

function validate(options: OidcLoginOptions): Required<OidcLoginOptions> {
  if (typeof options !== 'object' || options === null)
    throw optionError('pass an options object: new OidcLogin({ issuer, clientId, clientSecret, redirectUri }).');
  const known = new Set([
    'issuer',
    'clientId',
    'clientSecret',
    'redirectUri',
    'scopes',
    'timeoutMs',
    'allowInsecureIssuer',
    'groupsClaim',
  ]);
  for (const key of Object.keys(options))
    if (!known.has(key)) throw optionError(`unknown option \`${key}\`; the options are ${[...known].join(', ')}.`);
  const allowInsecureIssuer = options.allowInsecureIssuer ?? false;
  if (typeof allowInsecureIssuer !== 'boolean') throw optionError('`allowInsecureIssuer` must be true or false.');
  httpsUrl('issuer', options.issuer, allowInsecureIssuer);
  const redirect = httpsUrl('redirectUri', options.redirectUri, true);
  if (redirect.protocol === 'http:' && !['localhost', '127.0.0.1', '[::1]'].includes(redirect.hostname))
    throw optionError(
      '`redirectUri` must be https (http only on localhost), e.g. "https://gateway.example.com/oauth/callback".',
    );
  if (redirect.search !== '') throw optionError('`redirectUri` must not have a query string.');
  if (typeof options.clientId !== 'string' || options.clientId.trim() === '')
    throw optionError('`clientId` is required: the client ID the provider gave the gateway.');
  if (typeof options.clientSecret !== 'string' || options.clientSecret === '')
    throw optionError(
      '`clientSecret` is required: the client secret the provider gave the gateway, e.g. "${OIDC_CLIENT_SECRET}".',
    );
  const scopes = options.scopes ?? ['openid', 'email', 'profile'];
  if (!Array.isArray(scopes) || scopes.some((s) => typeof s !== 'string' || !/^[\x21\x23-\x5b\x5d-\x7e]+$/.test(s)))
    throw optionError('`scopes` must be a list of scope names without spaces, e.g. ["openid", "email", "profile"].');
  if (!scopes.includes('openid'))
    throw optionError('`scopes` must include "openid", e.g. ["openid", "email", "profile"].');
  const timeoutMs = options.timeoutMs ?? 5000;
  if (!Number.isInteger(timeoutMs) || timeoutMs < 100 || timeoutMs > 60_000)
    throw optionError(
      `\`timeoutMs\` must be a whole number of milliseconds from 100 to 60000 (default 5000); received ${String(timeoutMs)}.`,
    );
  const groupsClaim = options.groupsClaim ?? 'groups';
  if (typeof groupsClaim !== 'string' || groupsClaim === '' || groupsClaim.length > 200)
    throw optionError('`groupsClaim` must be a claim name, e.g. "groups".');
  return {
    issuer: options.issuer,
    clientId: options.clientId,
    clientSecret: options.clientSecret,
    redirectUri: options.redirectUri,
    scopes: [...scopes],
    timeoutMs,
    allowInsecureIssuer,
    groupsClaim,
  };
}

/** Error codes of Node's sockets and of its fetch (undici) for a provider that cannot be reached. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EPIPE',
]);

/**
 * True for the failures of reaching the provider: refused, reset, DNS, timed out, aborted. Read
 * by name and code along the `cause` chain (at most 4 deep): fetch's errors may come from another
 * realm than this module's `TypeError`.
 */
function isUnreachable(err: unknown): boolean {
  let current: unknown = err;
  for (let depth = 0; depth < 4 && typeof current === 'object' && current !== null; depth++) {
    const { name, message, code } = current as { name?: unknown; message?: unknown; code?: unknown };
    if (code === 'OAUTH_TIMEOUT' || code === 'OAUTH_ABORT' || name === 'TimeoutError' || name === 'AbortError')
      return true;
    if (typeof code === 'string' && (NETWORK_CODES.has(code) || code.startsWith('UND_ERR_'))) return true;
    if (name === 'TypeError' && message === 'fetch failed') return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/** A short, secret-free description of an openid-client failure: codes only, never bodies. */
function describe(err: unknown): string {
  const safe = (value: unknown): string | undefined =>
    typeof value === 'string' && /^[\w.:-]{1,64}$/.test(value) ? value : undefined;
  if (err instanceof oidc.AuthorizationResponseError || err instanceof oidc.ResponseBodyError)
    return `the provider answered error "${safe(err.error) ?? 'unknown'}"`;
  if (err instanceof oidc.ClientError) return `${err.message.slice(0, 120)} (${safe(err.code) ?? 'no code'})`;
  return 'unexpected failure';
}

function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

function checkedState(state: OidcLoginState, now: number): OidcLoginState {
  const fields = [state?.state, state?.nonce, state?.codeVerifier];
  if (
    fields.some((f) => typeof f !== 'string' || f === '' || f.length > MAX_STATE_FIELD) ||
    !Number.isFinite(state.createdAt)
  )
    throw new OidcLoginError(
      'login_state_mismatch',
      'The sign-in state is missing or malformed; start the sign-in again.',
    );
  const age = now - state.createdAt;
  if (age > OIDC_LOGIN_MAX_AGE_MS || age < -60_000)
    throw new OidcLoginError(
      'login_state_expired',
      'The sign-in was started more than 10 minutes ago; start it again.',
    );
  return state;
}

/** The provider's tokens of a sign-in or of its renewal, as {@link OidcLogin} returns them. */
export interface OidcProviderTokens {
  /** The verified claims (ID token, completed from userinfo). */
  claims: Record<string, unknown>;
  /** The provider's access token (a secret: encrypted before it is kept anywhere). */
  accessToken: string;
  /**
   * When the access token expires (milliseconds since the epoch), from the token answer's
   * `expires_in`; absent when the provider did not say.
   */
  accessTokenExpiresAt?: number;
}

/** When an access token obtained at `obtainedAt` expires, from the token answer's `expires_in`; undefined when absent. */
function accessTokenExpiry(tokens: oidc.TokenEndpointResponse, obtainedAt: number): number | undefined {
  const seconds = tokens.expires_in;
  return typeof seconds === 'number' && Number.isFinite(seconds) && seconds >= 0
    ? obtainedAt + seconds * 1000
    : undefined;
}

/**
 * The gateway's sign-in at the company's OpenID Provider. One instance per provider; it caches the
 * discovery document (1 hour) and the provider's keys.
 */
export class OidcLogin {
  readonly #options: Required<OidcLoginOptions>;
  readonly #clientSecret: string;
  #discovered: { at: number; config: Promise<oidc.Configuration> } | undefined;

  /** Checks the options; throws a `TypeError` that says what to write. Nothing is fetched yet. */
  constructor(options: OidcLoginOptions) {
    const checked = validate(options);
    this.#clientSecret = checked.clientSecret;
    this.#options = { ...checked, clientSecret: '[redacted]' };
  }

  /** The provider's configuration, discovered once (and again after an hour or a failure). */
  #configuration(): Promise<oidc.Configuration> {
    const now = Date.now();
    if (this.#discovered && now - this.#discovered.at < DISCOVERY_TTL_MS) return this.#discovered.config;
    const basic = oidc.ClientSecretBasic(this.#clientSecret);
    const post = oidc.ClientSecretPost(this.#clientSecret);
    // client_secret_basic (RFC 8414's default) unless the provider lists only client_secret_post.
    const clientAuth: oidc.ClientAuth = (as, client, body, headers) => {
      const methods = as.token_endpoint_auth_methods_supported;
      const usePost =
        Array.isArray(methods) && !methods.includes('client_secret_basic') && methods.includes('client_secret_post');
      (usePost ? post : basic)(as, client, body, headers);
    };
    const config = oidc
      .discovery(new URL(this.#options.issuer), this.#options.clientId, undefined, clientAuth, {
        timeout: this.#options.timeoutMs / 1000,
        // The ID token's signature is checked against the provider's keys, not only trusted because
        // it came over TLS: openid-client skips that check unless asked.
        execute: [
          oidc.enableNonRepudiationChecks,
          ...(this.#options.allowInsecureIssuer ? [oidc.allowInsecureRequests] : []),
        ],
      })
      .catch((err: unknown) => {
        this.#discovered = undefined;
        const why = isUnreachable(err) ? 'no answer within the timeout or the connection failed' : describe(err);
        throw new OidcLoginError(
          'provider_unreachable',
          `The OpenID Provider ${this.#options.issuer} could not be discovered: ${why}.`,
        );
      });
    this.#discovered = { at: now, config };
    return config;
  }

  /**
   * Starts a sign-in: the URL to send the browser to (authorization code, PKCE S256, `state`,
   * `nonce`) and the state to keep for {@link OidcLogin.finish}. Throws `provider_unreachable`.
   */
  async start(): Promise<{ url: string; state: OidcLoginState }> {
    const config = await this.#configuration();
    const state: OidcLoginState = {
      state: oidc.randomState(),
      nonce: oidc.randomNonce(),
      codeVerifier: oidc.randomPKCECodeVerifier(),
      createdAt: Date.now(),
    };
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: this.#options.redirectUri,
      response_type: 'code',
      scope: this.#options.scopes.join(' '),
      state: state.state,
      nonce: state.nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(state.codeVerifier),
      code_challenge_method: 'S256',
    });
    return { url: url.href, state };
  }

  /**
   * Finishes a sign-in from the provider's callback: checks `state` and the sign-in's age,
   * exchanges the code (with the PKCE verifier), verifies the ID token and returns its claims,
   * with `email` and the groups claim filled in from userinfo when the ID token lacks them.
   * Throws {@link OidcLoginError}.
   */
  async finish(callbackUrl: URL, state: OidcLoginState): Promise<Record<string, unknown>> {
    return (await this.finishWithTokens(callbackUrl, state)).claims;
  }

  /**
   * {@link OidcLogin.finish} with the provider's tokens: its access token and when it expires, and
   * its refresh token when it issued one (many providers issue one only for the `offline_access`
   * scope). Throws {@link OidcLoginError}.
   */
  async finishWithTokens(
    callbackUrl: URL,
    state: OidcLoginState,
  ): Promise<OidcProviderTokens & { refreshToken?: string }> {
    const expected = checkedState(state, Date.now());
    const returned = callbackUrl.searchParams.getAll('state');
    if (returned.length !== 1 || !sameText(returned[0] ?? '', expected.state))
      throw new OidcLoginError(
        'login_state_mismatch',
        'The callback does not belong to this sign-in (state differs); start the sign-in again.',
      );
    const config = await this.#configuration();
    // The token request names the configured redirect URI, never one derived from the request's Host.
    const current = new URL(this.#options.redirectUri);
    current.search = callbackUrl.search;
    try {
      const obtainedAt = Date.now();
      const tokens = await oidc.authorizationCodeGrant(config, current, {
        pkceCodeVerifier: expected.codeVerifier,
        expectedState: expected.state,
        expectedNonce: expected.nonce,
        idTokenExpected: true,
      });
      const claims: Record<string, unknown> = { ...tokens.claims() };
      await this.#fillFromUserinfo(config, tokens.access_token, claims);
      const expiresAt = accessTokenExpiry(tokens, obtainedAt);
      return {
        claims,
        accessToken: tokens.access_token,
        ...(expiresAt === undefined ? {} : { accessTokenExpiresAt: expiresAt }),
        ...(tokens.refresh_token ? { refreshToken: tokens.refresh_token } : {}),
      };
    } catch (err) {
      if (err instanceof OidcLoginError) throw err;
      if (isUnreachable(err))
        throw new OidcLoginError(
          'provider_unreachable',
          `The OpenID Provider ${this.#options.issuer} did not answer within the timeout or the connection failed.`,
        );
      throw new OidcLoginError('login_failed', `The sign-in at the OpenID Provider failed: ${describe(err)}.`);
    }
  }

  /**
   * Renews the sign-in of user `sub` with the provider's refresh token: the provider's refresh
   * grant, its new ID token verified (when it sends one), the claims read again from userinfo.
   * Resolves with the claims as they are now, the provider's new access token and when it expires,
   * and the provider's next refresh token (the same one when it does not rotate). Throws {@link OidcLoginError}: `login_failed` when the provider
   * refuses (the account was removed or disabled, its grant revoked) or names another user,
   * `provider_unreachable` when it cannot be reached.
   */
  async renew(refreshToken: string, sub: string): Promise<OidcProviderTokens & { refreshToken: string }> {
    const config = await this.#configuration();
    try {
      const obtainedAt = Date.now();
      const tokens = await oidc.refreshTokenGrant(config, refreshToken);
      const fromIdToken = tokens.claims();
      if (fromIdToken !== undefined && fromIdToken.sub !== sub)
        throw new OidcLoginError('login_failed', 'The OpenID Provider renewed the sign-in of another user.');
      // Every claim is read again: the ID token's, then userinfo's (the groups may have changed).
      const claims: Record<string, unknown> = { ...fromIdToken, sub };
      if (fromIdToken === undefined || claims.email === undefined || claims[this.#options.groupsClaim] === undefined)
        await this.#fillFromUserinfo(config, tokens.access_token, claims, true);
      const expiresAt = accessTokenExpiry(tokens, obtainedAt);
      return {
        claims,
        accessToken: tokens.access_token,
        ...(expiresAt === undefined ? {} : { accessTokenExpiresAt: expiresAt }),
        refreshToken: tokens.refresh_token ?? refreshToken,
      };
    } catch (err) {
      if (err instanceof OidcLoginError) throw err;
      if (isUnreachable(err))
        throw new OidcLoginError(
          'provider_unreachable',
          `The OpenID Provider ${this.#options.issuer} did not answer within the timeout or the connection failed.`,
        );
      throw new OidcLoginError('login_failed', `The renewal at the OpenID Provider failed: ${describe(err)}.`);
    }
  }

  /** Adds `email` and the groups claim from userinfo when the ID token lacks them; never overrides an ID-token claim. */
  async #fillFromUserinfo(
    config: oidc.Configuration,
    accessToken: string,
    claims: Record<string, unknown>,
    always = false,
  ): Promise<void> {
    const wanted = ['email', this.#options.groupsClaim];
    if (!always && wanted.every((name) => claims[name] !== undefined)) return;
    if (config.serverMetadata().userinfo_endpoint === undefined || typeof claims.sub !== 'string') return;
    const userinfo = await oidc.fetchUserInfo(config, accessToken, claims.sub);
    for (const [name, value] of Object.entries(userinfo))
      if (claims[name] === undefined && !PROTOCOL_CLAIMS.has(name)) claims[name] = value;
  }
}

/** At most this many groups are read from the groups claim. */
const MAX_GROUPS = 256;

function groupList(value: unknown): string[] | undefined {
  if (typeof value === 'string') {
    const groups = value.split(/[\s,]+/).filter((g) => g !== '');
    return groups.length === 0 ? undefined : groups.slice(0, MAX_GROUPS);
  }
  if (!Array.isArray(value)) return undefined;
  const groups = value.slice(0, MAX_GROUPS).filter((g): g is string => typeof g === 'string' && g !== '');
  return groups.length === 0 ? undefined : groups;
}

/**
 * The caller's claims from a verified ID token (CONTRACT section 5): every claim about the user
 * (protocol claims such as `iss`, `aud`, `exp`, `nonce`, `azp` are dropped), `username` from
 * `username` or else `preferred_username`, and `groups` from the claim `groupsClaim` (a list, or a
 * space- or comma-separated string; at most 256). Claims the user does not have are left out.
 */
export function callerClaimsFromIdToken(
  claims: Readonly<Record<string, unknown>>,
  groupsClaim: string,
): Record<string, unknown> {
  const caller: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(claims))
    if (!PROTOCOL_CLAIMS.has(name) && value !== undefined && value !== null) caller[name] = value;
  const username =
    typeof claims.username === 'string' && claims.username !== '' ? claims.username : claims.preferred_username;
  if (typeof username === 'string' && username !== '') caller.username = username;
  const groups = groupList(claims[groupsClaim]);
  if (groups === undefined) delete caller.groups;
  else caller.groups = groups;
  return caller;
}

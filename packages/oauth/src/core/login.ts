/** A user signed in on the authorization pages. */
export interface SignedInUser {
  /** The user's id (`sub`): grants, consents and the admin routes' `?user=` use it. */
  sub: string;
  /** How the user signed in, with the id: `api_key:<key id>` or `oidc:<issuer>|<sub>`. */
  subject: string;
  /** The user's claims (CONTRACT section 5), copied into the access tokens. */
  claims: Record<string, unknown>;
  /**
   * The OpenID Provider's tokens of this sign-in (its refresh token, its access token and when that
   * expires), encrypted with the authorization server's `loginTokenBox` (never in clear); kept
   * with the grant to renew the sign-in on each refresh and for token exchange. Absent for API-key
   * sign-ins.
   */
  loginTokens?: string;
}

/**
 * What a sign-in at the OpenID Provider, or its renewal, gives: the verified claims and the
 * provider's tokens.
 */
export interface ProviderSignIn {
  /** The verified ID token's claims, completed from userinfo. */
  claims: Record<string, unknown>;
  /** The provider's refresh token, when it issued one. A secret: encrypted before it is kept anywhere. */
  refreshToken?: string;
  /**
   * The provider's access token of this sign-in or renewal (exchanged for MCP servers with
   * `upstream_auth.type: "token_exchange"`, CONTRACT section 15). A secret: encrypted before it is
   * kept anywhere. Default: none (the grant then has no provider access token).
   */
  accessToken?: string;
  /**
   * When {@link ProviderSignIn.accessToken} expires, in milliseconds since the epoch (from the
   * token answer's `expires_in`). Default: unknown, and the gateway uses the token for at most
   * 5 minutes after it was obtained.
   */
  accessTokenExpiresAt?: number;
}

/**
 * `login.type: "api_key"`: a page of the gateway where the user enters a gateway API key once; the
 * key's `user` becomes the caller. `checkApiKey` resolves with the user, or undefined when the key
 * is not a valid gateway API key (it is never stored or shown).
 */
export interface ApiKeyLoginMethod {
  readonly type: 'api_key';
  checkApiKey(key: string): Promise<SignedInUser | undefined>;
  /**
   * Whether a sign-in made earlier (`subject` of {@link SignedInUser}) still holds: its API key
   * still exists and has not expired. Read from memory on every request with a token of that
   * sign-in, and on every code and refresh token exchange; when it no longer holds, the tokens are
   * refused and the grant is revoked. Default: every sign-in holds.
   */
  signInHolds?(subject: string): boolean;
}

/** What a redirect sign-in keeps between its start and its callback (a short-lived sealed cookie). */
export type RedirectLoginState = Record<string, unknown>;

/**
 * `login.type: "oidc"`: the user signs in at the company's OpenID Provider. `start` gives the
 * provider's authorization URL and the state to keep until the callback (`state`, `nonce`, the
 * PKCE verifier); `finish` checks the callback at `<PUBLIC_BASE_URL>/oauth/callback` and
 * resolves with the verified ID token's claims. `OidcLogin` (`oidc-login.ts`) has this shape;
 * `toUser` maps its claims to the caller (`username` from `preferred_username`, the groups claim).
 */
export interface RedirectLoginMethod {
  readonly type: 'oidc';
  start(): Promise<{ url: string; state: RedirectLoginState }>;
  finish(callbackUrl: URL, state: RedirectLoginState): Promise<Record<string, unknown>>;
  /** The caller made of the verified claims; throws when they lack a `sub`. */
  toUser(claims: Record<string, unknown>): SignedInUser;
  /**
   * Like `finish`, with the provider's refresh token. Without it (or without `renew`), grants of
   * this sign-in cannot be refreshed: the gateway's refresh is refused with `invalid_grant`.
   */
  finishWithTokens?(callbackUrl: URL, state: RedirectLoginState): Promise<ProviderSignIn>;
  /**
   * Renews the sign-in of user `sub` at the provider with its refresh token (on each refresh of a
   * grant): the claims as they are now. Throws when the provider refuses (the user was removed or
   * disabled, the provider's grant revoked) or cannot be reached.
   */
  renew?(refreshToken: string, sub: string): Promise<ProviderSignIn>;
}

/** How users sign in during `/oauth/authorize`. */
export type LoginMethod = ApiKeyLoginMethod | RedirectLoginMethod;

/**
 * The caller of an OpenID Provider's verified claims (CONTRACT section 5 and 11): every claim,
 * `username` from `preferred_username` when it has none, the groups from `groupsClaim`.
 */
export function userFromIdTokenClaims(issuer: string, claims: Record<string, unknown>): SignedInUser {
  if (typeof claims.sub !== 'string' || claims.sub === '') throw new Error('The ID token has no "sub".');
  const copy: Record<string, unknown> = { ...claims };
  if (copy.username === undefined && typeof claims.preferred_username === 'string')
    copy.username = claims.preferred_username;
  for (const name of ['nonce', 'at_hash', 'c_hash', 'auth_time', 'azp', 'sid']) delete copy[name];
  return { sub: claims.sub, subject: `oidc:${issuer}|${claims.sub}`, claims: copy };
}

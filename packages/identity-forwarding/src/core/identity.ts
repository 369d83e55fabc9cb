/** The claims the gateway knows about a caller (CONTRACT section 5). */
export interface UserClaims {
  sub?: string;
  email?: string;
  username?: string;
  user_id?: string;
  workspace_id?: string;
  organisation_id?: string;
  scope?: string;
  client_id?: string;
  /** Any other claim of an identity-provider token, or of an API key's `user` record. */
  [claim: string]: unknown;
}

/** Who is calling, as established by `authenticate`. */
export interface GatewayIdentity {
  /**
   * How the caller authenticated: a gateway API key, an identity-provider token, or an access
   * token the gateway issued itself as OAuth authorization server (`oauth_token`; never forwarded).
   */
  method: 'api_key' | 'identity_token' | 'oauth_token';
  /**
   * A string unique to this caller: `key:<n>` for the n-th configured API key, `idp:<iss>|<sub>`
   * for a token, `oauth:<sub>` for a gateway access token. Two callers with identical claims still have different subjects.
   */
  subject: string;
  /** The caller's claims. */
  claims: Readonly<UserClaims>;
  /** The identity provider's token exactly as sent (identity_token only). Never log it. */
  token?: string;
  /**
   * The slug of the named routing config the API key carries (its `config`, CONTRACT section 17);
   * api_key only. Default: absent (the key names none).
   */
  apiKeyConfig?: string;
}

/** The `user` record of a configured API key. */
export interface ApiKeyUser {
  user_id?: string;
  sub?: string;
  email?: string;
  username?: string;
  workspace_id?: string;
  organisation_id?: string;
  [claim: string]: unknown;
}

/** Claims of an API-key caller: its `user` record, with `sub` defaulting to `user_id`. */
export function claimsFromApiKeyUser(user: ApiKeyUser): UserClaims {
  const claims: UserClaims = { ...user };
  if (claims.sub === undefined && typeof user.user_id === 'string') claims.sub = user.user_id;
  return Object.freeze(claims);
}

/**
 * Claims of an identity-provider token: every claim of the token, with `client_id` taken from
 * `client_id` or `azp` and `username` from `username` or `preferred_username`.
 */
export function claimsFromToken(payload: Readonly<Record<string, unknown>>): UserClaims {
  const claims: UserClaims = { ...payload };
  if (claims.client_id === undefined && payload.azp !== undefined) claims.client_id = payload.azp as string;
  if (claims.username === undefined && payload.preferred_username !== undefined) {
    claims.username = payload.preferred_username as string;
  }
  return Object.freeze(claims);
}

/**
 * The OpenID Provider's tokens of a sign-in as a grant keeps them (`login_tokens` of
 * `gw_oauth_grants`): one value encrypted with the authorization server's `loginTokenBox`, bound to
 * the sign-in's subject. Inside, a JSON object of format 1; a value of the earlier format (the bare
 * refresh token, encrypted) still opens, as tokens without an access token.
 */

/** The provider's tokens of one sign-in, in clear (only in memory). */
export interface ProviderTokens {
  /** The provider's refresh token; absent when it issued none. */
  refreshToken?: string;
  /** The provider's access token; absent for a value of the earlier format. */
  accessToken?: string;
  /** When the access token expires, in milliseconds since the epoch. */
  accessTokenExpiresAt?: number;
}

/** Encrypts and decrypts bound to a context (`LoginTokenBox` of the authorization server). */
interface Box {
  seal(plaintext: string, context: string): string;
  open(sealed: string, context: string): string;
}

/** The format number stored inside the encrypted JSON value. */
const FORMAT = 1;

/** What the provider's tokens of a sign-in are encrypted to (a value sealed for one user opens for no other). */
export function providerTokensContext(subject: string): string {
  return `oauth-login-refresh-token:${subject}`;
}

/** Encrypts `tokens` for the sign-in `subject`: one JSON value, never a token in clear. */
export function sealProviderTokens(box: Box, subject: string, tokens: ProviderTokens): string {
  const value: Record<string, unknown> = { v: FORMAT };
  if (tokens.refreshToken !== undefined) value.refreshToken = tokens.refreshToken;
  if (tokens.accessToken !== undefined) {
    value.accessToken = tokens.accessToken;
    value.accessTokenExpiresAt = tokens.accessTokenExpiresAt;
  }
  return box.seal(JSON.stringify(value), providerTokensContext(subject));
}

/**
 * Decrypts what {@link sealProviderTokens} stored for `subject`, or a value of the earlier format
 * (the refresh token alone). Throws when the box cannot open it (altered, another subject, another key).
 */
export function openProviderTokens(box: Box, subject: string, sealed: string): ProviderTokens {
  const plaintext = box.open(sealed, providerTokensContext(subject));
  let parsed: unknown;
  try {
    parsed = plaintext.startsWith('{') ? JSON.parse(plaintext) : undefined;
  } catch {
    parsed = undefined;
  }
  const value = parsed as {
    v?: unknown;
    refreshToken?: unknown;
    accessToken?: unknown;
    accessTokenExpiresAt?: unknown;
  };
  if (typeof value !== 'object' || value === null || value.v !== FORMAT) return { refreshToken: plaintext };
  const tokens: ProviderTokens = {};
  if (typeof value.refreshToken === 'string' && value.refreshToken !== '') tokens.refreshToken = value.refreshToken;
  if (
    typeof value.accessToken === 'string' &&
    value.accessToken !== '' &&
    typeof value.accessTokenExpiresAt === 'number' &&
    Number.isFinite(value.accessTokenExpiresAt)
  ) {
    tokens.accessToken = value.accessToken;
    tokens.accessTokenExpiresAt = value.accessTokenExpiresAt;
  }
  return tokens;
}

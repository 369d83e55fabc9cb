/**
 * Errors of the authorization pages (`/oauth/authorize` and its sign-in and consent steps): one
 * class per failure, each with a stable `code` and the HTTP `status` of the gateway's error page.
 * These are never sent to a client's `redirect_uri`: a request whose client, redirect URI or PKCE
 * cannot be trusted is answered on the gateway's own page. Messages never contain a secret.
 * Errors of `/oauth/token`, `/oauth/register` and `/oauth/revoke` use the OAuth error classes of
 * the MCP SDK instead (RFC 6749 section 5.2 shape).
 */
export abstract class AuthorizationPageError extends Error {
  /** Stable, machine-readable code (snake_case). */
  abstract readonly code: string;
  /** HTTP status of the error page. */
  readonly status: number = 400;

  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** A parameter of the authorization request is missing or malformed. */
export class InvalidAuthorizationRequestError extends AuthorizationPageError {
  readonly code = 'invalid_authorization_request';
}

/** The `client_id` is neither a registered client nor a client ID metadata document the gateway accepts. */
export class UnknownClientError extends AuthorizationPageError {
  readonly code = 'unknown_client';
}

/**
 * The `client_id` is a client ID metadata document URL the gateway refused to use; `code` is the
 * {@link ClientMetadataError}'s (`client_id_invalid`, `client_id_mismatch`,
 * `client_metadata_unreachable`, `client_metadata_invalid`, `client_metadata_forbidden_address`,
 * `client_metadata_redirect`, `client_metadata_too_large`).
 */
export class ClientMetadataRefusedError extends AuthorizationPageError {
  readonly code: ClientMetadataErrorCode;
  /** 400, or 503 when the gateway is fetching too many documents just now (`client_metadata_busy`). */
  override readonly status: number;

  constructor(code: ClientMetadataErrorCode, message: string) {
    super(message);
    this.code = code;
    this.status = code === 'client_metadata_busy' ? 503 : 400;
  }
}

/** The `redirect_uri` is not one of the client's registered redirect URIs. */
export class RedirectUriMismatchError extends AuthorizationPageError {
  readonly code = 'redirect_uri_mismatch';
}

/** No `code_challenge`, or a `code_challenge_method` other than `S256`. */
export class PkceRequiredError extends AuthorizationPageError {
  readonly code = 'pkce_required';
}

/** The `resource` is missing or is not one the gateway protects (RFC 8707 `invalid_target`). */
export class InvalidResourceError extends AuthorizationPageError {
  readonly code = 'invalid_target';
}

/** A scope the gateway does not offer. */
export class InvalidScopeRequestError extends AuthorizationPageError {
  readonly code = 'invalid_scope';
}

/** The signed authorization request of a page is missing, altered or older than 10 minutes. */
export class AuthorizationRequestExpiredError extends AuthorizationPageError {
  readonly code = 'authorization_request_expired';
}

/** A sign-in or consent form was posted without the page's CSRF token, or from another origin. */
export class CsrfTokenInvalidError extends AuthorizationPageError {
  readonly code = 'csrf_token_invalid';
  override readonly status = 403;
}

/** The credentials entered on the sign-in page were not accepted. */
export class SignInFailedError extends AuthorizationPageError {
  readonly code = 'sign_in_failed';
  override readonly status = 401;
}

/** Too many sign-in attempts from one client address. */
export class TooManySignInsError extends AuthorizationPageError {
  readonly code = 'too_many_sign_in_attempts';
  override readonly status = 429;
}

/** Too many authorization requests from one client address (each may fetch a client's metadata document). */
export class TooManyAuthorizationRequestsError extends AuthorizationPageError {
  readonly code = 'too_many_authorization_requests';
  override readonly status = 429;
}

// ---- Sign-in at the company's OpenID Provider, and client ID metadata documents.

/** Codes of {@link OidcLoginError}. */
export type OidcLoginErrorCode =
  'login_state_mismatch' | 'login_state_expired' | 'login_failed' | 'provider_unreachable';

const OIDC_LOGIN_STATUS: ReadonlyMap<OidcLoginErrorCode, number> = new Map([
  ['login_state_mismatch', 400],
  ['login_state_expired', 400],
  ['login_failed', 401],
  ['provider_unreachable', 502],
]);

/**
 * A sign-in at the company's OpenID Provider failed.
 *
 * - `login_state_mismatch` (400): the callback's `state` is missing or is not the one this sign-in
 *   started with (a forged or crossed callback).
 * - `login_state_expired` (400): the sign-in was started more than ten minutes ago.
 * - `login_failed` (401): the provider answered with an error, refused the code, or its ID token
 *   did not verify (signature, `iss`, `aud`, `exp`, `nonce`).
 * - `provider_unreachable` (502): the provider could not be reached, did not answer within the
 *   timeout, or its discovery document is not usable.
 */
export class OidcLoginError extends Error {
  /** Stable, machine-readable code. */
  readonly code: OidcLoginErrorCode;
  /** HTTP status the failure is answered with. */
  readonly status: number;

  constructor(code: OidcLoginErrorCode, message: string) {
    super(message);
    this.name = 'OidcLoginError';
    this.code = code;
    this.status = OIDC_LOGIN_STATUS.get(code) ?? 400;
  }
}

/** Codes of {@link ClientMetadataError}. */
export type ClientMetadataErrorCode =
  | 'client_id_invalid'
  | 'client_metadata_unreachable'
  | 'client_metadata_invalid'
  | 'client_metadata_forbidden_address'
  | 'client_metadata_redirect'
  | 'client_metadata_too_large'
  | 'client_metadata_busy'
  | 'client_id_mismatch';

/**
 * A client ID metadata document could not be used. Every code answers 400: the client (not the
 * gateway) named a document the gateway may not or cannot use; the authorization endpoint shows
 * it on the gateway's own error page, never by a redirect.
 *
 * - `client_id_invalid`: the `client_id` is not an https URL with a path (no fragment, no user
 *   name or password, no `.`/`..` segments), or is http without being an allowed client host.
 * - `client_metadata_unreachable`: the fetch failed, timed out or answered a status other than 200.
 * - `client_metadata_invalid`: the answer is not a JSON object of client metadata (content type,
 *   syntax, `redirect_uris`, a client secret).
 * - `client_metadata_forbidden_address`: the host resolves to a loopback, private, link-local,
 *   metadata or unspecified address and its origin is not an allowed client host.
 * - `client_metadata_redirect`: the answer is a redirect (never followed).
 * - `client_metadata_too_large`: the body is over the size limit.
 * - `client_id_mismatch`: the document's `client_id` is not exactly its URL.
 */
export class ClientMetadataError extends Error {
  /** Stable, machine-readable code. */
  readonly code: ClientMetadataErrorCode;
  /** HTTP status the failure is answered with: always 400. */
  readonly status = 400 as const;

  constructor(code: ClientMetadataErrorCode, message: string) {
    super(message);
    this.name = 'ClientMetadataError';
    this.code = code;
  }
}

/** Why {@link IdentityTokenUnavailableError} was thrown. */
export type IdentityTokenUnavailableReason =
  'renewal_refused' | 'provider_unreachable' | 'no_refresh_token' | 'grant_revoked';

/**
 * The OpenID Provider's access token of a grant (the caller's identity-provider token, CONTRACT
 * section 15 `token_exchange`) is needed but none can be had: the kept one expires within 30 s and
 * renewing it with the provider's refresh token failed. Nothing is revoked by it; the caller's
 * request is refused. `code` is always `identity_token_unavailable`; `reason` says why:
 *
 * - `renewal_refused` (401): the provider refused the refresh token (the user was removed or
 *   disabled, the provider's grant revoked) or renewed the sign-in of another user.
 * - `provider_unreachable` (502): the provider could not be reached or did not answer in time.
 * - `no_refresh_token` (401): the grant has no provider refresh token to renew with.
 * - `grant_revoked` (401): the gateway's grant was revoked.
 *
 * The message never holds a token.
 */
export class IdentityTokenUnavailableError extends Error {
  /** Stable, machine-readable code. */
  readonly code = 'identity_token_unavailable' as const;
  /** Why no token could be had. */
  readonly reason: IdentityTokenUnavailableReason;
  /** HTTP status: 502 when the provider could not be reached, else 401. */
  readonly status: number;
  /** OpenAI-style error type (CONTRACT section 7). */
  readonly type: 'authentication_error' | 'api_error';

  constructor(reason: IdentityTokenUnavailableReason, message: string) {
    super(message);
    this.name = 'IdentityTokenUnavailableError';
    this.reason = reason;
    this.status = reason === 'provider_unreachable' ? 502 : 401;
    this.type = reason === 'provider_unreachable' ? 'api_error' : 'authentication_error';
  }
}

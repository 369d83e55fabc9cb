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

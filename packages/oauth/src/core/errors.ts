/**
 * Errors of the gateway's OAuth sign-in. One class per failure family, each with a stable `code`
 * and the HTTP status it is answered with. Messages never contain a client secret, an
 * authorization code, a token or a document body.
 */

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

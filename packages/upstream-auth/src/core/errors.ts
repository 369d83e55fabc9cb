/**
 * The failures of the upstream-credential core, one class each, with a stable `code`, an HTTP
 * `status` and an OpenAI-style `type` (CONTRACT sections 7 and 15). No message ever holds a
 * token, a secret or a response body.
 */

/** Why an authorization server or identity provider could not be used. */
export type UnavailableReason =
  | 'unreachable'
  | 'timeout'
  | 'redirect'
  | 'too_large'
  | 'forbidden_address'
  | 'insecure_url'
  | 'bad_status'
  | 'invalid_metadata'
  | 'resource_mismatch'
  | 'issuer_mismatch'
  | 'no_client';

/**
 * 502 `upstream_auth_unavailable`: the server's authorization server (or the identity provider)
 * is unreachable, answered a redirect, too much, from a refused address, or its metadata is
 * unusable. `reason` says which.
 */
export class UpstreamAuthUnavailableError extends Error {
  readonly code = 'upstream_auth_unavailable' as const;
  readonly status = 502;
  readonly type = 'api_error' as const;
  /** Which of the failures above. */
  readonly reason: UnavailableReason;
  constructor(reason: UnavailableReason, message: string) {
    super(message);
    this.name = 'UpstreamAuthUnavailableError';
    this.reason = reason;
  }
}

/**
 * 403 `token_exchange_failed`: the identity provider refused the RFC 8693 exchange.
 * `providerError` is the provider's `error` code (e.g. `invalid_grant`), never its description.
 */
export class TokenExchangeFailedError extends Error {
  readonly code = 'token_exchange_failed' as const;
  readonly status = 403;
  readonly type = 'permission_error' as const;
  /** The identity provider's `error` code. */
  readonly providerError: string;
  constructor(providerError: string) {
    super(`The identity provider refused to exchange the caller's token for this server (${providerError}).`);
    this.name = 'TokenExchangeFailedError';
    this.providerError = providerError;
  }
}

/**
 * `connection_required` (answered as the JSON-RPC error -32042 with HTTP 200 on `/mcp`, 401
 * elsewhere): the caller has no usable token for the server and must connect it in a browser.
 */
export class ConnectionRequiredError extends Error {
  readonly code = 'connection_required' as const;
  readonly status = 401;
  readonly type = 'authentication_error' as const;
  /** The MCP server's slug. */
  readonly server: string;
  constructor(server: string) {
    super(`Connect your account to the MCP server "${server}" first.`);
    this.name = 'ConnectionRequiredError';
    this.server = server;
  }
}

/** 401 `identity_token_required`: a `token_exchange` server was called with an API key (no identity-provider token to exchange). */
export class IdentityTokenRequiredError extends Error {
  readonly code = 'identity_token_required' as const;
  readonly status = 401;
  readonly type = 'authentication_error' as const;
  constructor(server: string) {
    super(
      `The MCP server "${server}" needs a token from your identity provider to exchange; call it with that token, not an API key.`,
    );
    this.name = 'IdentityTokenRequiredError';
  }
}

/** Why an authorization callback was refused. */
export type AuthorizationFailureReason =
  'state_mismatch' | 'issuer_mismatch' | 'authorization_denied' | 'invalid_response' | 'code_refused' | 'expired';

/**
 * 400 `upstream_authorization_failed`: the callback of an authorization is refused (unknown or
 * replayed `state`, `iss` of another server, the user denied, the code refused).
 * `providerError` is the server's `error` code when it gave one.
 */
export class UpstreamAuthorizationFailedError extends Error {
  readonly code = 'upstream_authorization_failed' as const;
  readonly status = 400;
  readonly type = 'invalid_request_error' as const;
  readonly reason: AuthorizationFailureReason;
  /** The authorization server's `error` code, when it gave one. */
  readonly providerError: string | undefined;
  constructor(reason: AuthorizationFailureReason, message: string, providerError?: string) {
    super(message);
    this.name = 'UpstreamAuthorizationFailedError';
    this.reason = reason;
    this.providerError = providerError;
  }
}

/**
 * 401 `upstream_refresh_refused`: the authorization server refused a refresh token (for example
 * `invalid_grant`); the connection is over.
 */
export class UpstreamRefreshRefusedError extends Error {
  readonly code = 'upstream_refresh_refused' as const;
  readonly status = 401;
  readonly type = 'authentication_error' as const;
  /** The authorization server's `error` code. */
  readonly providerError: string;
  constructor(providerError: string) {
    super(`The authorization server refused the refresh token (${providerError}).`);
    this.name = 'UpstreamRefreshRefusedError';
    this.providerError = providerError;
  }
}

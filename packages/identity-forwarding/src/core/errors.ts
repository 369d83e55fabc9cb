/**
 * Errors of @gw/identity-forwarding: one class per failure, each with a stable `code`, the HTTP
 * `status`, an OpenAI-style `type` and extra response `headers` (the `WWW-Authenticate`
 * challenge of a 401). Messages never contain credentials.
 */

/** OpenAI-style error types used by this package. */
export type IdentityErrorType =
  | 'authentication_error'
  | 'invalid_request_error'
  | 'permission_error'
  | 'not_found_error'
  | 'api_error'
  | 'timeout_error';

/** Base class of every error this package produces. */
export abstract class IdentityForwardingError extends Error {
  /** Stable, machine-readable code. */
  abstract readonly code: string;
  /** HTTP status. */
  abstract readonly status: number;
  /** OpenAI-style error type. */
  abstract readonly type: IdentityErrorType;
  /** Extra response headers, such as `WWW-Authenticate`. */
  readonly headers: Readonly<Record<string, string>>;

  constructor(message: string, headers: Record<string, string> = {}) {
    super(message);
    this.name = new.target.name;
    this.headers = headers;
  }
}

/** No credentials were sent. */
export class MissingCredentialsError extends IdentityForwardingError {
  readonly code = 'missing_credentials';
  readonly status = 401;
  readonly type = 'authentication_error';
}

/** An unknown API key, or an identity-provider token that did not verify. */
export class InvalidCredentialsError extends IdentityForwardingError {
  readonly code = 'invalid_credentials';
  readonly status = 401;
  readonly type = 'authentication_error';
  /** Why the token failed, as a @gw/jwks code (`token_expired`, `unknown_key`, ...), for logs. */
  readonly reason: string;

  constructor(message: string, headers: Record<string, string>, reason: string) {
    super(message, headers);
    this.reason = reason;
  }
}

/**
 * The identity provider's key set cannot be fetched and the token names a key the gateway does
 * not have: 503 with `retry-after`, since the token may well be good.
 */
export class IdentityProviderUnavailableError extends IdentityForwardingError {
  readonly code = 'identity_provider_unavailable';
  readonly status = 503;
  readonly type = 'api_error';
}

/** A verified identity-provider token lacks a claim listed in `requiredClaims`. */
export class RequiredClaimMissingError extends IdentityForwardingError {
  readonly code = 'missing_required_claim';
  readonly status = 401;
  readonly type = 'authentication_error';
}

/** Two `Authorization` headers, or credentials in several places that disagree. */
export class AmbiguousCredentialsError extends IdentityForwardingError {
  readonly code = 'ambiguous_credentials';
  readonly status = 400;
  readonly type = 'invalid_request_error';
}

/** A `bearer` MCP server was called by a caller who authenticated with an API key. */
export class IdentityTokenRequiredError extends IdentityForwardingError {
  readonly code = 'identity_token_required';
  readonly status = 401;
  readonly type = 'authentication_error';
}

/** The caller's token is not meant for this `bearer` server (`bearer_audience`). */
export class TokenAudienceMismatchError extends IdentityForwardingError {
  readonly code = 'token_audience_mismatch';
  readonly status = 403;
  readonly type = 'permission_error';
}

/** No MCP server has this slug. */
export class McpServerNotFoundError extends IdentityForwardingError {
  readonly code = 'mcp_server_not_found';
  readonly status = 404;
  readonly type = 'not_found_error';
}

/** The MCP server refused or reset the connection. */
export class UpstreamUnreachableError extends IdentityForwardingError {
  readonly code = 'upstream_unreachable';
  readonly status = 502;
  readonly type = 'api_error';
}

/** The MCP server did not answer within the timeout. */
export class UpstreamTimeoutError extends IdentityForwardingError {
  readonly code = 'upstream_timeout';
  readonly status = 504;
  readonly type = 'timeout_error';
}

/**
 * An MCP path with a dot segment (`.` or `..`, plain or percent-encoded, or next to an encoded
 * slash): refused before anything is sent, so no path leaves the server's configured URL.
 */
export class InvalidMcpPathError extends IdentityForwardingError {
  readonly code = 'invalid_mcp_path';
  readonly status = 400;
  readonly type = 'invalid_request_error';
}

/** A method other than GET, POST and DELETE on an MCP route (Streamable HTTP uses only those). */
export class MethodNotAllowedError extends IdentityForwardingError {
  readonly code = 'method_not_allowed';
  readonly status = 405;
  readonly type = 'invalid_request_error';

  constructor(message: string) {
    super(message, { allow: 'GET, POST, DELETE' });
  }
}

/**
 * A GET (the server's event stream) or DELETE (the end of a session) for a server whose credential
 * the caller has not got yet (CONTRACT section 15): no stream and no session exist, so `405`, as an
 * MCP server without them answers; the caller's next POST gets the JSON-RPC error that says how to
 * connect.
 */
export class StreamNeedsConnectionError extends IdentityForwardingError {
  readonly code = 'connection_required';
  readonly status = 405;
  readonly type = 'invalid_request_error';

  constructor(message: string) {
    super(message, { allow: 'POST' });
  }
}

/**
 * The request body was already read by a body parser mounted before the MCP proxy (such as
 * `express.json()`), so there is nothing left to stream to the MCP server.
 */
export class RawBodyUnavailableError extends IdentityForwardingError {
  readonly code = 'raw_body_unavailable';
  readonly status = 500;
  readonly type = 'api_error' as const;
}

/** The host's access rules do not let the caller use this MCP server (`authorize` said no). */
export class AccessDeniedError extends IdentityForwardingError {
  readonly code = 'access_denied';
  readonly status = 403;
  readonly type = 'permission_error';
}

/** An MCP request whose tools the gateway inspects is larger than it reads (`maxInspectedBodyBytes`). */
export class McpBodyTooLargeError extends IdentityForwardingError {
  readonly code = 'body_too_large';
  readonly status = 413;
  readonly type = 'invalid_request_error';
}

/**
 * Where a tool gate applies, an MCP answer the gateway cannot read: compressed, too large, of a
 * content type other than `application/json` or `text/event-stream` with a body, or not strict
 * UTF-8 JSON.
 */
export class UpstreamInvalidResponseError extends IdentityForwardingError {
  readonly code = 'upstream_invalid_response';
  readonly status = 502;
  readonly type = 'api_error';
}

/**
 * Where a tool gate applies, an MCP request body the gateway cannot read as strict UTF-8 JSON (a
 * byte-order mark, a `charset` other than `utf-8`, a content type other than `application/json`,
 * invalid UTF-8 or JSON, a key the gate reads given twice): refused, never forwarded, since the
 * MCP server might read it otherwise than the gateway.
 */
export class InvalidMcpMessageError extends IdentityForwardingError {
  readonly code = 'invalid_mcp_message';
  readonly status = 400;
  readonly type = 'invalid_request_error';
}

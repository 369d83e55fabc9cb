/** Errors of @gw/sigv4-proxy: one class per failure, with a stable `code`, `status` and `type`. */
export abstract class Sigv4ProxyError extends Error {
  /** Stable, machine-readable code. */
  abstract readonly code: string;
  /** HTTP status. */
  abstract readonly status: number;
  /** OpenAI-style error type. */
  readonly type: string = 'invalid_request_error';

  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** The host's access rules do not let the caller use this integration (`authorize` said no). */
export class AccessDeniedError extends Sigv4ProxyError {
  readonly code = 'access_denied';
  readonly status = 403;
  override readonly type: string = 'permission_error';
}

/** An AWS integration was named but no custom host was given. */
export class CustomHostRequiredError extends Sigv4ProxyError {
  readonly code = 'custom_host_required';
  readonly status = 400;
}

/** The custom host is not an allowed AWS Bedrock agent host (or an exact `allowedHosts` origin). */
export class CustomHostNotAllowedError extends Sigv4ProxyError {
  readonly code = 'custom_host_not_allowed';
  readonly status = 400;
}

/** `x-gateway-config` is not a JSON object. */
export class InvalidConfigHeaderError extends Sigv4ProxyError {
  readonly code = 'invalid_config';
  readonly status = 400;
}

/** The request body is larger than the proxy accepts. */
/**
 * A query parameter the signer cannot sign faithfully: `__proto__`, which the SigV4 signing library
 * leaves out of its canonical query, so AWS would refuse the signature.
 */
export class UnsupportedQueryParameterError extends Sigv4ProxyError {
  readonly code = 'unsupported_query_parameter';
  readonly status = 400;
}

export class BodyTooLargeError extends Sigv4ProxyError {
  readonly code = 'body_too_large';
  readonly status = 413;
}

/** The raw request body was already consumed by a body parser mounted before the proxy. */
export class RawBodyUnavailableError extends Sigv4ProxyError {
  readonly code = 'raw_body_unavailable';
  readonly status = 500;
  override readonly type = 'api_error';
}

/** The AWS endpoint refused or reset the connection. */
export class UpstreamUnreachableError extends Sigv4ProxyError {
  readonly code = 'upstream_unreachable';
  readonly status = 502;
  override readonly type = 'api_error';
}

/** The AWS endpoint did not answer in time. */
export class UpstreamTimeoutError extends Sigv4ProxyError {
  readonly code = 'upstream_timeout';
  readonly status = 504;
  override readonly type = 'timeout_error';
}

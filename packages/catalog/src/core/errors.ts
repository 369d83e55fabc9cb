/**
 * Errors of the catalog. One class per failure, each with a stable `code`, the HTTP `status` the
 * admin API answers with and, for invalid input, the field (`param`) it is about. Messages never
 * contain a secret.
 */
export abstract class CatalogError extends Error {
  /** Stable, machine-readable code (snake_case). */
  abstract readonly code: string;
  /** HTTP status of the admin API's answer. */
  abstract readonly status: number;
  /** OpenAI-style error type. */
  readonly type: string = 'invalid_request_error';
  /** The field the error is about, when there is one. */
  readonly param: string | null;

  constructor(message: string, param: string | null = null) {
    super(message);
    this.name = new.target.name;
    this.param = param;
  }
}

/** A field of a record is missing, unknown or of the wrong shape. */
export class InvalidRecordError extends CatalogError {
  readonly code = 'invalid_request';
  readonly status = 400;
}

/**
 * A change moves a routing field of a record holding secrets (a provider's `baseUrl`, an
 * integration's `region` or `allowedHosts`, the OAuth settings' `login.issuer`) without giving
 * every secret again: `400 invalid_request`, `param` naming the first secret missing.
 */
export class SecretsRequiredForRoutingChangeError extends InvalidRecordError {}

/**
 * A virtual MCP server's members, as they list their tools now, would offer one public tool name
 * twice (CONTRACT section 16: two members with the same prefix, or both without one, that list the
 * same name, or a rename onto a name another member lists): `400 virtual_tool_collision`,
 * `param: "members"`; the message names both members and the tool. Thrown by the host's
 * {@link AdminApiOptions.beforeWrite} check.
 */
export class VirtualToolCollisionRecordError extends CatalogError {
  readonly code = 'virtual_tool_collision';
  readonly status = 400;
}

/** The slug (or prompt id) is already used by another record of the same kind, from either source. */
export class SlugTakenError extends CatalogError {
  readonly code = 'slug_taken';
  readonly status = 409;
}

/** An update was based on a version that is no longer the record's. */
export class VersionConflictError extends CatalogError {
  readonly code = 'version_conflict';
  readonly status = 409;
}

/**
 * A named config (`configs/<slug>`) cannot be deleted while an API key still names it in its
 * `config`: `409 config_in_use`; the message names the key.
 */
export class ConfigInUseError extends CatalogError {
  readonly code = 'config_in_use';
  readonly status = 409;
}

/**
 * An MCP server (`mcp-servers/<slug>`) cannot be deleted while a virtual MCP server names it among
 * its `members`: `409 server_in_use`; the message names the virtual server.
 */
export class ServerInUseError extends CatalogError {
  readonly code = 'server_in_use';
  readonly status = 409;
}

/** The record comes from the config file, which the admin API does not change. */
export class ManagedByConfigFileError extends CatalogError {
  readonly code = 'managed_by_config_file';
  readonly status = 409;
}

/** No record of that kind has that slug or id. */
export class RecordNotFoundError extends CatalogError {
  readonly code = 'not_found';
  readonly status = 404;
  override readonly type = 'not_found_error';
}

/** The MCP server exists but the user has no upstream connection to it: `404 not_found`. */
export class UpstreamConnectionNotFoundError extends RecordNotFoundError {}

/** A stored secret cannot be opened with any configured encryption key. */
export class SecretUnreadableError extends CatalogError {
  readonly code = 'secret_unreadable';
  readonly status = 500;
  override readonly type = 'api_error';
}

/** The admin API is off: `GATEWAY_ADMIN_KEY` is not set and no admin claim is configured. */
export class AdminDisabledError extends CatalogError {
  readonly code = 'admin_disabled';
  readonly status = 403;
  override readonly type = 'permission_error';
}

/** No admin credential was sent. */
export class AdminCredentialsMissingError extends CatalogError {
  readonly code = 'missing_credentials';
  readonly status = 401;
  override readonly type = 'authentication_error';
}

/** The credential sent is not a valid admin key or identity-provider token. */
export class AdminCredentialsInvalidError extends CatalogError {
  readonly code = 'invalid_credentials';
  readonly status = 401;
  override readonly type = 'authentication_error';
}

/** The credential is valid but not an admin's: a `/v1` API key, or a token without the admin claim. */
export class AdminRequiredError extends CatalogError {
  readonly code = 'admin_required';
  readonly status = 403;
  override readonly type = 'permission_error';
}

/** The signed-in admin's role does not allow the change (a `viewer` changes nothing; an `operator` no gateway setting). */
export class RoleForbiddenError extends CatalogError {
  readonly code = 'role_forbidden';
  readonly status = 403;
  override readonly type = 'permission_error';
}

/** The request body is not valid JSON. */
export class InvalidJsonError extends CatalogError {
  readonly code = 'invalid_json';
  readonly status = 400;
}

/** The request body is larger than the admin API reads. */
export class BodyTooLargeError extends CatalogError {
  readonly code = 'body_too_large';
  readonly status = 413;
}

/** The request body is not `application/json`. */
export class UnsupportedMediaTypeError extends CatalogError {
  readonly code = 'unsupported_media_type';
  readonly status = 415;
}

/** The path exists but not with this method. */
export class MethodNotAllowedError extends CatalogError {
  readonly code = 'method_not_allowed';
  readonly status = 405;
}

/** No admin route has this path. */
export class AdminRouteNotFoundError extends CatalogError {
  readonly code = 'route_not_found';
  readonly status = 404;
  override readonly type = 'not_found_error';
}

/** The database cannot be reached: reads and writes of the admin API wait for it to return. */
export class CatalogUnavailableError extends CatalogError {
  readonly code = 'catalog_unavailable';
  readonly status = 503;
  override readonly type = 'api_error';
}

/** The limits' shared counters (Redis) cannot be reached: a limit's status cannot be read now. */
export class LimitsUnavailableError extends CatalogError {
  readonly code = 'limits_unavailable';
  readonly status = 503;
  override readonly type = 'api_error';
}

/** A fault of the gateway itself while handling an admin request (logged; the message says nothing more). */
export class AdminInternalError extends CatalogError {
  readonly code = 'internal_error';
  readonly status = 500;
  override readonly type = 'api_error';
}

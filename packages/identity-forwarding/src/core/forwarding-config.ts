/** How an MCP server receives the caller's identity. */
export type ForwardingMethod = 'claims_header' | 'bearer' | 'jwt_header';

/** The claims forwarded when `include_claims` is absent. */
export const DEFAULT_INCLUDE_CLAIMS: readonly string[] = Object.freeze([
  'sub',
  'email',
  'username',
  'user_id',
  'workspace_id',
  'organisation_id',
  'scope',
  'client_id',
]);

/** The header each method writes when `header_name` is absent. */
export const DEFAULT_HEADER_NAMES: Readonly<Record<ForwardingMethod, string>> = Object.freeze({
  claims_header: 'X-User-Claims',
  bearer: 'Authorization',
  jwt_header: 'X-User-JWT',
});

/** Default lifetime of a signed identity token, in seconds. */
export const DEFAULT_JWT_EXPIRY_SECONDS = 300;

/** What every `user_identity_forwarding` object has, whatever its method. */
interface UserIdentityForwardingBase {
  /** Claims to forward. Default: {@link DEFAULT_INCLUDE_CLAIMS}. Any claim name is accepted. */
  include_claims?: readonly string[];
  /** Header that carries the identity (a valid HTTP header name). Default per method: {@link DEFAULT_HEADER_NAMES}. */
  header_name?: string;
}

/** The config's `user_identity_forwarding` object, by its `method`. */
export type UserIdentityForwardingConfig =
  | (UserIdentityForwardingBase & {
      /** `claims_header` (the claims as JSON in a header) or `bearer` (the caller's own token). Required. */
      method: 'claims_header' | 'bearer';
      jwt_expiry_seconds?: undefined;
    })
  | (UserIdentityForwardingBase & {
      /** `jwt_header`: a token signed by the gateway. Required. */
      method: 'jwt_header';
      /** Lifetime of the signed token in whole seconds, 1 to 86400. Default 300. */
      jwt_expiry_seconds?: number;
    });

/** The config's `forward_headers` object. */
export interface ForwardHeadersConfig {
  /** `all-except` forwards every client header but the listed ones; `only` just the listed ones. Default `all-except`. */
  mode?: 'all-except' | 'only';
  /** Header names. Default `[]`. */
  headers?: readonly string[];
}

/** One MCP server of the config's `mcpServers`. */
export interface McpServerConfig {
  /** Identifier in `/mcp/<slug>`: letters, digits, `.`, `_` or `-`, at most 64. Required. */
  slug: string;
  /** The server's Streamable HTTP endpoint, for example `http://127.0.0.1:9000/mcp`. Required. */
  url: string;
  /** Identity forwarding. Default: none (the server sees only the gateway). */
  user_identity_forwarding?: UserIdentityForwardingConfig;
  /** Which client headers pass. Default: every header except the protected ones. */
  forward_headers?: ForwardHeadersConfig;
  /** `aud` of signed tokens. Default: `url`. */
  jwt_audience?: string;
  /** `bearer` only: forward only identity-provider tokens whose `aud` contains this. Default: any. */
  bearer_audience?: string;
}

/** A validated server, with everything the config decides computed once. */
export interface ResolvedServer {
  slug: string;
  url: URL;
  method: ForwardingMethod | undefined;
  includeClaims: readonly string[];
  /** Lower-cased header name. */
  headerName: string | undefined;
  jwtExpirySeconds: number;
  jwtAudience: string;
  bearerAudience: string | undefined;
  forwardMode: 'all-except' | 'only';
  forwardList: readonly string[];
}

const SLUG = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const FORWARDING_FIELDS = ['method', 'include_claims', 'header_name', 'jwt_expiry_seconds'];
const SERVER_FIELDS = ['slug', 'url', 'user_identity_forwarding', 'forward_headers', 'jwt_audience', 'bearer_audience'];
const METHODS: readonly ForwardingMethod[] = ['claims_header', 'bearer', 'jwt_header'];

function fail(where: string, message: string): never {
  throw new TypeError(`${where} ${message}`);
}

function checkFields(value: object, allowed: readonly string[], where: string): void {
  for (const field of Object.keys(value)) {
    if (allowed.includes(field)) continue;
    const near = allowed.find((a) => a.replace(/_/g, '').toLowerCase() === field.replace(/[_-]/g, '').toLowerCase());
    fail(
      where,
      `has an unknown field "${field}"${near ? `; did you mean "${near}"?` : `; allowed: ${allowed.join(', ')}.`}`,
    );
  }
}

function stringList(value: unknown, where: string): string[] {
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string' || v === '')) {
    fail(where, 'must be a list of non-empty strings.');
  }
  return value as string[];
}

/** Validates one MCP server config (throws TypeError with a message naming the field). */
export function resolveServer(config: McpServerConfig, where = `mcpServers[${String(config?.slug)}]`): ResolvedServer {
  if (typeof config !== 'object' || config === null) fail(where, 'must be an object with "slug" and "url".');
  checkFields(config, SERVER_FIELDS, where);
  if (typeof config.slug !== 'string' || !SLUG.test(config.slug)) {
    fail(`${where}.slug`, 'must be letters, digits, ".", "_" or "-" (at most 64), for example "tools".');
  }
  let url: URL;
  try {
    url = new URL(config.url);
  } catch {
    fail(`${where}.url`, 'must be an absolute http(s) URL, for example "http://127.0.0.1:9000/mcp".');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') fail(`${where}.url`, 'must use http or https.');
  if (url.username || url.password || url.hash) fail(`${where}.url`, 'must not contain credentials or a fragment.');

  const forwarding = config.user_identity_forwarding;
  let method: ForwardingMethod | undefined;
  let includeClaims = DEFAULT_INCLUDE_CLAIMS;
  let headerName: string | undefined;
  let jwtExpirySeconds = DEFAULT_JWT_EXPIRY_SECONDS;
  if (forwarding !== undefined) {
    const at = `${where}.user_identity_forwarding`;
    if (typeof forwarding !== 'object' || forwarding === null) fail(at, 'must be an object with a "method".');
    checkFields(forwarding, FORWARDING_FIELDS, at);
    if (!METHODS.includes(forwarding.method)) {
      fail(`${at}.method`, `must be one of ${METHODS.join(', ')} (got ${JSON.stringify(forwarding.method)}).`);
    }
    method = forwarding.method;
    if (forwarding.include_claims !== undefined)
      includeClaims = Object.freeze(stringList(forwarding.include_claims, `${at}.include_claims`));
    const name = forwarding.header_name ?? DEFAULT_HEADER_NAMES[method];
    if (typeof name !== 'string' || !HEADER_NAME.test(name))
      fail(`${at}.header_name`, 'must be a valid HTTP header name.');
    headerName = name.toLowerCase();
    if (forwarding.jwt_expiry_seconds !== undefined) {
      if (method !== 'jwt_header') fail(`${at}.jwt_expiry_seconds`, 'applies only to the jwt_header method.');
      const seconds = forwarding.jwt_expiry_seconds;
      if (!Number.isInteger(seconds) || seconds < 1 || seconds > 86_400) {
        fail(`${at}.jwt_expiry_seconds`, 'must be a whole number of seconds from 1 to 86400.');
      }
      jwtExpirySeconds = seconds;
    }
  }
  if (config.bearer_audience !== undefined && method !== 'bearer') {
    fail(`${where}.bearer_audience`, 'applies only to the bearer method.');
  }
  if (
    config.bearer_audience !== undefined &&
    (typeof config.bearer_audience !== 'string' || config.bearer_audience === '')
  ) {
    fail(`${where}.bearer_audience`, 'must be a non-empty string.');
  }
  if (config.jwt_audience !== undefined && (typeof config.jwt_audience !== 'string' || config.jwt_audience === '')) {
    fail(`${where}.jwt_audience`, 'must be a non-empty string.');
  }

  const forward = config.forward_headers ?? {};
  if (typeof forward !== 'object' || forward === null) fail(`${where}.forward_headers`, 'must be an object.');
  checkFields(forward, ['mode', 'headers'], `${where}.forward_headers`);
  const forwardMode = forward.mode ?? 'all-except';
  if (forwardMode !== 'all-except' && forwardMode !== 'only') {
    fail(`${where}.forward_headers.mode`, `must be "all-except" or "only" (got ${JSON.stringify(forward.mode)}).`);
  }
  const forwardList = stringList(forward.headers ?? [], `${where}.forward_headers.headers`);

  return {
    slug: config.slug,
    url,
    method,
    includeClaims,
    headerName,
    jwtExpirySeconds,
    jwtAudience: config.jwt_audience ?? config.url,
    bearerAudience: config.bearer_audience,
    forwardMode,
    forwardList,
  };
}

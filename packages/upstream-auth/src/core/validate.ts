/**
 * Checks an MCP server's `upstream_auth` object (CONTRACT section 15) as the config file, the
 * admin API and the console give it; each message names the field and says what to write.
 */
import type {
  OAuthUpstreamAuth,
  StaticUpstreamAuth,
  TokenExchangeUpstreamAuth,
  UpstreamAuthConfig,
  UpstreamClientConfig,
} from './config';
import { REFUSED_STATIC_HEADER_NAMES } from '@gw/upstream';

/** RFC 9110 `token`: the characters a header name may have. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/;
const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);
const AUTH_METHODS = ['client_secret_basic', 'client_secret_post', 'none'] as const;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function refuse(where: string, message: string): never {
  throw new TypeError(`${where}: ${message}`);
}

function onlyKeys(where: string, value: Record<string, unknown>, allowed: readonly string[]): void {
  for (const key of Object.keys(value))
    if (!allowed.includes(key))
      refuse(where, `unknown field "${key}"; the fields of this object are ${allowed.join(', ')}.`);
}

/**
 * Whether `value` is an https URL, or an http URL on a loopback host (127.0.0.1, [::1],
 * localhost), without user name, password or fragment.
 */
export function isAllowedAuthUrl(value: unknown): value is string {
  if (typeof value !== 'string' || value.length > 2048) return false;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  if (url.username !== '' || url.password !== '' || url.hash !== '' || value.includes('#')) return false;
  return url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname));
}

function url(where: string, name: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (!isAllowedAuthUrl(value))
    refuse(
      where,
      `"${name}" must be an https URL without user, password or fragment (http only on 127.0.0.1, [::1] or localhost), e.g. "https://login.example.com"; received ${JSON.stringify(value)}.`,
    );
  return value;
}

function scopes(where: string, value: unknown): string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.length > 100 || !value.every((s) => typeof s === 'string' && SCOPE_TOKEN.test(s)))
    refuse(where, `"scopes" must be a list of scope names without spaces or quotes, e.g. ["read", "write"].`);
  return [...(value as string[])];
}

function client(where: string, value: unknown, required: boolean): UpstreamClientConfig | undefined {
  if (value === undefined) {
    if (required) refuse(where, `"client" is required: {"client_id": "...", "client_secret": "..."}.`);
    return undefined;
  }
  const at = `${where}.client`;
  if (!isRecord(value)) refuse(at, 'must be an object: {"client_id": "...", "client_secret": "..."}.');
  onlyKeys(at, value, ['client_id', 'client_secret', 'token_endpoint_auth_method']);
  const { client_id, client_secret, token_endpoint_auth_method } = value;
  if (typeof client_id !== 'string' || client_id.length === 0 || client_id.length > 2048)
    refuse(at, '"client_id" must be a non-empty string (the client id the authorization server issued).');
  if (client_secret !== undefined && (typeof client_secret !== 'string' || client_secret.length === 0))
    refuse(at, '"client_secret" must be a non-empty string, or be left out for a public client.');
  if (
    token_endpoint_auth_method !== undefined &&
    !(AUTH_METHODS as readonly unknown[]).includes(token_endpoint_auth_method)
  )
    refuse(at, `"token_endpoint_auth_method" must be one of ${AUTH_METHODS.join(', ')}.`);
  if (token_endpoint_auth_method !== undefined && token_endpoint_auth_method !== 'none' && client_secret === undefined)
    refuse(at, `"token_endpoint_auth_method": "${String(token_endpoint_auth_method)}" needs a "client_secret".`);
  if (token_endpoint_auth_method === 'none' && client_secret !== undefined)
    refuse(at, '"token_endpoint_auth_method": "none" takes no "client_secret"; remove one of them.');
  return {
    client_id,
    ...(client_secret !== undefined ? { client_secret: client_secret as string } : {}),
    ...(token_endpoint_auth_method !== undefined
      ? { token_endpoint_auth_method: token_endpoint_auth_method as UpstreamClientConfig['token_endpoint_auth_method'] }
      : {}),
  };
}

/**
 * Whether `name` may be set by a `static` header map: an RFC 9110 token, and not a hop-by-hop
 * header, `Host` or `Content-Length`.
 */
export function isAllowedStaticHeaderName(name: string): boolean {
  return HEADER_NAME.test(name) && !REFUSED_STATIC_HEADER_NAMES.has(name.toLowerCase());
}

function headers(where: string, value: unknown): Record<string, string> {
  if (!isRecord(value) || Object.keys(value).length === 0)
    refuse(where, '"headers" must be an object of at least one header, e.g. {"Authorization": "Bearer ${CRM_TOKEN}"}.');
  const names = new Set<string>();
  const result: Record<string, string> = {};
  for (const [name, headerValue] of Object.entries(value)) {
    if (!isAllowedStaticHeaderName(name))
      refuse(
        where,
        `header name ${JSON.stringify(name)} is not allowed: write a header name of letters, digits and -, not a hop-by-hop header, Host or Content-Length.`,
      );
    if (names.has(name.toLowerCase())) refuse(where, `header "${name}" is given twice (names are case-insensitive).`);
    names.add(name.toLowerCase());
    // eslint-disable-next-line no-control-regex
    if (typeof headerValue !== 'string' || headerValue.length === 0 || /[\x00-\x08\x0a-\x1f\x7f]/.test(headerValue))
      refuse(where, `header "${name}" must have a non-empty string value without line breaks or control characters.`);
    result[name] = headerValue;
  }
  return result;
}

/**
 * Checks `value` as an `upstream_auth` object and returns it, copied with only its known fields.
 * Throws a `TypeError` whose message starts with `where` (e.g. `mcp_servers[2].upstream_auth`),
 * names the field and says what to write. Types: `oauth`, `token_exchange`, `static`.
 */
export function validateUpstreamAuth(value: unknown, where: string): UpstreamAuthConfig {
  if (!isRecord(value))
    refuse(where, 'must be an object with a "type": "oauth", "token_exchange" or "static", e.g. {"type": "oauth"}.');
  switch (value.type) {
    case 'oauth': {
      onlyKeys(where, value, ['type', 'scopes', 'authorization_server', 'client']);
      const result: OAuthUpstreamAuth = { type: 'oauth' };
      const s = scopes(where, value.scopes);
      if (s) result.scopes = s;
      const as = url(where, 'authorization_server', value.authorization_server);
      if (as) result.authorization_server = as;
      const c = client(where, value.client, false);
      if (c) result.client = c;
      return result;
    }
    case 'token_exchange': {
      onlyKeys(where, value, ['type', 'token_endpoint', 'issuer', 'audience', 'resource', 'scopes', 'client']);
      const result: TokenExchangeUpstreamAuth = { type: 'token_exchange', client: client(where, value.client, true)! };
      const tokenEndpoint = url(where, 'token_endpoint', value.token_endpoint);
      if (tokenEndpoint) result.token_endpoint = tokenEndpoint;
      const issuer = url(where, 'issuer', value.issuer);
      if (issuer) result.issuer = issuer;
      if (value.audience !== undefined) {
        if (typeof value.audience !== 'string' || value.audience.length === 0 || value.audience.length > 2048)
          refuse(where, '"audience" must be a non-empty string (the name the identity provider knows the server by).');
        result.audience = value.audience;
      }
      if (value.resource !== undefined) {
        let ok = typeof value.resource === 'string' && !value.resource.includes('#');
        try {
          if (ok) new URL(value.resource as string);
        } catch {
          ok = false;
        }
        if (!ok)
          refuse(where, '"resource" must be an absolute URL without fragment, e.g. "https://mcp.example.com/mcp".');
        result.resource = value.resource as string;
      }
      const s = scopes(where, value.scopes);
      if (s) result.scopes = s;
      return result;
    }
    case 'static': {
      onlyKeys(where, value, ['type', 'headers']);
      const result: StaticUpstreamAuth = { type: 'static', headers: headers(where, value.headers) };
      return result;
    }
    default:
      return refuse(
        where,
        `"type" must be "oauth", "token_exchange" or "static"; received ${JSON.stringify(value.type ?? null)}.`,
      );
  }
}

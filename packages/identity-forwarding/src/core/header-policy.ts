import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';

/** Identity headers no client may set, whatever the server's configuration. */
export const PROTECTED_IDENTITY_HEADERS: readonly string[] = ['x-user-claims', 'x-user-jwt'];

/**
 * Headers that always reach the MCP server, so every protocol revision keeps working: the
 * session and version headers of 2025-03-26 to 2025-11-25, and the routing headers of 2026-07-28
 * (`mcp-method`, `mcp-name`; `mcp-param-*` too, see {@link ALWAYS_FORWARDED_HEADER_PREFIX}).
 */
export const ALWAYS_FORWARDED_HEADERS: readonly string[] = [
  'content-type',
  'accept',
  'mcp-session-id',
  'mcp-protocol-version',
  'last-event-id',
  'mcp-method',
  'mcp-name',
];

/**
 * Every header whose name starts with this always reaches the MCP server: MCP 2026-07-28 copies
 * chosen request parameters into `Mcp-Param-<Name>` headers, so that load balancers can route on them.
 */
export const ALWAYS_FORWARDED_HEADER_PREFIX = 'mcp-param-';

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
]);
const CALLER_CREDENTIALS = new Set(['authorization', 'x-api-key']);
/**
 * Where a request came from, as clients claim it. The gateway never passes the client's claim on:
 * the proxy writes `x-forwarded-for` itself from the address it saw (see `forwardedFor`).
 */
const CLIENT_ORIGIN_CLAIMS = new Set(['x-forwarded-for', 'forwarded', 'x-real-ip']);

/** Lower-cases a header name and turns `_` into `-`, so `X_User_Claims` and `x-user-claims` compare equal. */
export function normalizeHeaderName(name: string): string {
  return name.toLowerCase().replace(/_/g, '-');
}

/** The headers of one MCP server's requests: what passes, computed once from its config. */
export interface HeaderPolicy {
  /** Copies the client headers that may reach the server (identity header not included). */
  filter(incoming: IncomingHttpHeaders): OutgoingHttpHeaders;
}

/**
 * Builds the header policy of a server. Never forwarded, in any mode: the protected identity
 * headers, the server's own identity header and those of every other configured server (compared
 * after normalisation), the client's `x-forwarded-for`, `forwarded` and `x-real-ip`, the caller's
 * gateway credentials (`authorization`, `x-api-key`, every `x-gateway-*` and `x-portkey-*`),
 * hop-by-hop headers and those named in `Connection`. Always forwarded: the MCP protocol headers
 * ({@link ALWAYS_FORWARDED_HEADERS} and every `mcp-param-*`), whatever `mode` and `headers` say.
 */
export function createHeaderPolicy(options: {
  identityHeaderName: string | undefined;
  /**
   * Identity headers of every other server behind the same gateway. One backend may sit behind
   * several slugs, so a header that identifies callers to any of them is never taken from a client.
   * Default `[]`.
   */
  otherIdentityHeaderNames?: readonly string[];
  mode: 'all-except' | 'only';
  headers: readonly string[];
}): HeaderPolicy {
  const blocked = new Set(PROTECTED_IDENTITY_HEADERS);
  if (options.identityHeaderName) blocked.add(normalizeHeaderName(options.identityHeaderName));
  for (const name of options.otherIdentityHeaderNames ?? []) blocked.add(normalizeHeaderName(name));
  for (const name of CLIENT_ORIGIN_CLAIMS) blocked.add(name);
  const always = new Set(ALWAYS_FORWARDED_HEADERS);
  const listed = new Set(options.headers.map(normalizeHeaderName));
  const only = options.mode === 'only';

  function passes(name: string, connectionListed: ReadonlySet<string> | undefined): boolean {
    const normalized = name.includes('_') ? name.replace(/_/g, '-') : name;
    if (blocked.has(normalized) || CALLER_CREDENTIALS.has(normalized) || HOP_BY_HOP.has(normalized)) return false;
    if (normalized.startsWith('x-gateway-') || normalized.startsWith('x-portkey-')) return false;
    if (connectionListed?.has(normalized)) return false;
    if (always.has(normalized) || normalized.startsWith(ALWAYS_FORWARDED_HEADER_PREFIX)) return true;
    return only ? listed.has(normalized) : !listed.has(normalized);
  }

  return {
    filter(incoming) {
      const connection = incoming.connection;
      const connectionListed = connection
        ? new Set(connection.split(',').map((n) => normalizeHeaderName(n.trim())))
        : undefined;
      const outgoing: OutgoingHttpHeaders = {};
      for (const name in incoming) {
        // Node lower-cases incoming names; normalisation of `_` happens in passes().
        if (passes(name, connectionListed)) outgoing[name] = incoming[name];
      }
      return outgoing;
    },
  };
}

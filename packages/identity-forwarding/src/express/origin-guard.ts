import type { IncomingMessage, ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import { IdentityForwardingError } from '../core/errors';
import { detectMissingCall } from './shared';

/**
 * A request to an MCP server whose `Host` is not the gateway's, or whose `Origin` is neither the
 * gateway's nor an allowed one (DNS rebinding: a web page that makes its own name resolve to the
 * gateway's address). Never forwarded.
 */
export class OriginNotAllowedError extends IdentityForwardingError {
  readonly code = 'origin_not_allowed';
  readonly status = 403;
  readonly type = 'permission_error';
}

/** Options of {@link mcpOriginGuard}. */
export interface McpOriginGuardOptions {
  /**
   * The gateway's public origin (`PUBLIC_BASE_URL`, such as `https://gateway.example.com`): the
   * `Host` of every request must be its host (and port), and it is the gateway's own origin.
   * Default: none, and the gateway is taken to listen on a loopback address: `Host` must then be
   * `localhost`, an address of 127.0.0.0/8 or `[::1]`, with any port, and the gateway's origin is
   * `http://<that Host>`.
   */
  publicOrigin?: string;
  /**
   * Further origins whose pages may call the MCP servers (`GATEWAY_ALLOWED_ORIGINS`): whole
   * origins (`https://app.example.com`, `http://localhost:3000`), compared exactly after letter
   * case and default ports are normalised. Default `[]`.
   */
  allowedOrigins?: readonly string[];
}

/** The middleware returned by {@link mcpOriginGuard}: passes a request on, or calls `next` with the refusal. */
export type McpOriginGuard = (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void) => void;

/** A `Host` value as RFC 9110 allows it: a name, an IPv4 address or a bracketed IPv6 address, and a port. */
const HOST_SYNTAX = /^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?$/;
/** An origin as browsers send it: scheme `://` host[:port], nothing after. */
const ORIGIN_SYNTAX = /^[A-Za-z][A-Za-z0-9+.-]{0,15}:\/\/[^/?#@\\\s]{1,260}$/;

/**
 * `host[:port]` in the form URLs compare it for `scheme` (lower case, IPv4 written in full, default
 * port dropped), or undefined when it is not a valid `Host` value.
 */
function normalizeHost(host: string, scheme: 'http:' | 'https:'): URL | undefined {
  if (!HOST_SYNTAX.test(host)) return undefined;
  try {
    return new URL(`${scheme}//${host}`);
  } catch {
    return undefined;
  }
}

/** The origin `value` names (`https://a.example`, lower case, no default port), or undefined when it is not an http(s) origin. */
export function normalizeOrigin(value: string): string | undefined {
  if (!ORIGIN_SYNTAX.test(value)) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  // `http://a.example:80` and `HTTP://A.example` are the origin `http://a.example`.
  return normalizeHost(url.host, url.protocol) === undefined ? undefined : url.origin;
}

/** Whether a host name, as URLs normalise it, is the loopback interface: `localhost`, 127.0.0.0/8 or `[::1]`. */
export function isLoopbackHostname(hostname: string): boolean {
  if (hostname === 'localhost' || hostname === '[::1]') return true;
  return isIP(hostname) === 4 && hostname.startsWith('127.');
}

/** How many times `name` (lower case) appears in a request's raw headers. */
function headerCount(raw: readonly string[], name: string): number {
  let count = 0;
  for (let i = 0; i < raw.length; i += 2) if ((raw[i] as string).toLowerCase() === name) count++;
  return count;
}

/**
 * Protection of the MCP routes against DNS rebinding (MCP transports, "Security warning"): a
 * request whose `Host` is not the gateway's, or whose `Origin`, when present, is neither the
 * gateway's own origin nor one of `allowedOrigins`, is refused with `403 origin_not_allowed` and
 * never forwarded. Two `Host` or two `Origin` headers, an `Origin` of `null`, or one that is not
 * an http(s) origin, are refused alike. Mount it on the MCP routes, before the MCP proxy. Options
 * are validated here.
 */
export function mcpOriginGuard(options: McpOriginGuardOptions = {}): McpOriginGuard {
  detectMissingCall(options, 'mcpOriginGuard');
  if (typeof options !== 'object' || options === null) {
    throw new TypeError('mcpOriginGuard takes { publicOrigin?, allowedOrigins? }.');
  }
  for (const key of Object.keys(options)) {
    if (key !== 'publicOrigin' && key !== 'allowedOrigins') {
      throw new TypeError(
        `mcpOriginGuard has no option "${key.slice(0, 40)}"; it takes publicOrigin and allowedOrigins.`,
      );
    }
  }
  let publicUrl: URL | undefined;
  if (options.publicOrigin !== undefined) {
    const origin = typeof options.publicOrigin === 'string' ? normalizeOrigin(options.publicOrigin) : undefined;
    if (origin === undefined) {
      throw new TypeError('publicOrigin must be an http(s) origin such as "https://gateway.example.com".');
    }
    publicUrl = new URL(origin);
  }
  const allowedList = options.allowedOrigins ?? [];
  if (!Array.isArray(allowedList)) {
    throw new TypeError('allowedOrigins must be a list of origins such as ["https://app.example.com"].');
  }
  const allowed = new Set<string>();
  for (const entry of allowedList) {
    const origin = typeof entry === 'string' ? normalizeOrigin(entry.trim()) : undefined;
    if (origin === undefined) {
      throw new TypeError(
        `allowedOrigins: "${String(entry).slice(0, 100)}" is not an origin; write scheme://host[:port] such as "https://app.example.com".`,
      );
    }
    allowed.add(origin);
  }

  /** The gateway's origin for a `Host` value, or undefined when it is not the gateway's. */
  const originOfHost = (host: string): string | undefined => {
    if (publicUrl !== undefined) {
      const url = normalizeHost(host, publicUrl.protocol as 'http:' | 'https:');
      return url !== undefined && url.host === publicUrl.host ? publicUrl.origin : undefined;
    }
    const url = normalizeHost(host, 'http:');
    return url !== undefined && isLoopbackHostname(url.hostname) ? url.origin : undefined;
  };
  // The last `Host` value read and its answer: a deployment's clients all send the same one, and
  // parsing it as a URL was ~6 µs of CPU on every MCP request. A different value is read afresh.
  let lastHost: string | undefined;
  let lastOrigin: string | undefined;
  /** The gateway's origin for this request, or undefined when its Host is not the gateway's. */
  const gatewayOrigin = (host: string): string | undefined => {
    // Stryker disable next-line ConditionalExpression: a memo never used reads every Host afresh, with the same answers.
    if (host !== lastHost) {
      lastOrigin = originOfHost(host);
      lastHost = host;
    }
    return lastOrigin;
  };

  return function mcpOriginGuardMiddleware(req, _res, next) {
    const raw = req.rawHeaders;
    const host = req.headers.host;
    if (host === undefined || headerCount(raw, 'host') !== 1) {
      next(new OriginNotAllowedError('The request must name the gateway in exactly one Host header.'));
      return;
    }
    const own = gatewayOrigin(host);
    if (own === undefined) {
      next(
        new OriginNotAllowedError(
          publicUrl === undefined
            ? 'The Host header does not name this gateway: without PUBLIC_BASE_URL, only a loopback name or address does.'
            : 'The Host header does not name this gateway.',
        ),
      );
      return;
    }
    const originCount = headerCount(raw, 'origin');
    if (originCount === 0) {
      next();
      return;
    }
    const origin = originCount === 1 ? req.headers.origin : undefined;
    const normalized = origin === undefined ? undefined : normalizeOrigin(origin);
    if (normalized === undefined || (normalized !== own && !allowed.has(normalized))) {
      next(new OriginNotAllowedError("Pages of this origin may not call the gateway's MCP servers."));
      return;
    }
    next();
  };
}

import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { Router, type Request, type Response } from 'express';
import { rejectUnknownOptions } from '@gw/options';

/** The MCP servers' slugs: a fixed list, or a live set read on every request. */
export type McpServerSlugs = readonly string[] | { has(slug: string): boolean };

function slugSet(slugs: McpServerSlugs | undefined): { has(slug: string): boolean } {
  if (slugs === undefined) return new Set<string>();
  return Array.isArray(slugs) ? new Set(slugs) : (slugs as { has(slug: string): boolean });
}

/** Options of {@link protectedResourceMetadata}. */
export interface ProtectedResourceMetadataOptions {
  /** The identity provider's issuer, published as the authorization server. Default: none listed. */
  issuer?: string;
  /**
   * Slugs of the MCP servers, each with its own metadata document: a list, or a live set (anything
   * with `has(slug)`) for a catalog that changes while the gateway runs. Default `[]`.
   */
  mcpServerSlugs?: McpServerSlugs;
  /** The gateway's public origin, such as `https://gateway.example.com`. Default: from the request. */
  publicBaseUrl?: string;
}

/**
 * RFC 9728 protected resource metadata: `GET /.well-known/oauth-protected-resource` and
 * `GET /.well-known/oauth-protected-resource/mcp/<slug>`, each with `resource`,
 * `authorization_servers` and `bearer_methods_supported: ["header"]`. Mount it only when
 * identity-provider tokens are accepted.
 */
export function protectedResourceMetadata(options: ProtectedResourceMetadataOptions = {}): Router {
  if (typeof options !== 'object' || options === null)
    throw new TypeError('protectedResourceMetadata options must be an object such as { issuer, mcpServerSlugs }.');
  rejectUnknownOptions(options, ['issuer', 'mcpServerSlugs', 'publicBaseUrl'], 'protectedResourceMetadata');
  if (options.issuer !== undefined && typeof options.issuer !== 'string')
    throw new TypeError('protectedResourceMetadata issuer must be a string, such as "https://idp.example.com".');
  if (options.publicBaseUrl !== undefined && !/^https?:\/\/[^/?#]+\/?$/.test(String(options.publicBaseUrl)))
    throw new TypeError(
      'protectedResourceMetadata publicBaseUrl must be an http(s) origin, such as "https://gateway.example.com".',
    );
  const list = options.mcpServerSlugs;
  if (
    list !== undefined &&
    !(Array.isArray(list)
      ? list.every((s) => typeof s === 'string')
      : typeof (list as { has?: unknown })?.has === 'function')
  ) {
    throw new TypeError('protectedResourceMetadata mcpServerSlugs must be a list of slugs or a set with has(slug).');
  }
  const slugs = slugSet(options.mcpServerSlugs);
  const authorizationServers = options.issuer ? [options.issuer] : [];
  const base = (req: Request): string | undefined => {
    if (options.publicBaseUrl !== undefined) return options.publicBaseUrl.replace(/\/$/, '');
    const host = req.get('host');
    return isValidHostHeader(host) ? `${req.protocol}://${host}` : undefined;
  };
  const send = (res: Response, origin: string | undefined, path = ''): void => {
    if (origin === undefined) {
      res.status(400).json({
        error: {
          message: 'The Host header is not a valid host[:port].',
          type: 'invalid_request_error',
          code: 'invalid_host',
        },
      });
      return;
    }
    const resource = `${origin}${path}`;
    res.setHeader('cache-control', 'public, max-age=300');
    res.json({ resource, authorization_servers: authorizationServers, bearer_methods_supported: ['header'] });
  };
  const router = Router();
  router.get('/.well-known/oauth-protected-resource', (req, res) => send(res, base(req)));
  router.get('/.well-known/oauth-protected-resource/mcp/:slug', (req, res, next) => {
    const slug = req.params.slug as string;
    if (!slugs.has(slug)) return next();
    send(res, base(req), `/mcp/${slug}`);
  });
  return router;
}

/** A `Host` header value that is a host name, IPv4 or bracketed IPv6 address, with an optional port. */
const VALID_HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?$/;

/** True when `host` is a plain `host[:port]`, safe to build a URL from. */
export function isValidHostHeader(host: string | undefined): host is string {
  return host !== undefined && VALID_HOST.test(host);
}

/**
 * The metadata URL of the MCP server a request under `/mcp/<slug>` is for (for `authenticate`),
 * or undefined when `<slug>` is not one of `mcpServerSlugs`: the URL is built from configuration,
 * never from the path as sent. `req.url` is the path below `/mcp`. The origin is `publicBaseUrl`,
 * or else the request's own (its `Host` header when it is a valid `host[:port]`, `https` on TLS
 * connections; forwarding headers are not trusted). Works on any node:http request.
 */
export function mcpResourceMetadataUrl(
  publicBaseUrl: string | undefined,
  mcpServerSlugs: McpServerSlugs,
): (req: IncomingMessage) => string | undefined {
  const fixed = publicBaseUrl?.replace(/\/$/, '');
  const slugs = slugSet(mcpServerSlugs);
  return (req) => {
    const sent = /^\/([^/?]+)/.exec(req.url ?? '')?.[1];
    if (sent === undefined || !slugs.has(sent)) return undefined;
    const path = `/.well-known/oauth-protected-resource/mcp/${encodeURIComponent(sent)}`;
    if (fixed !== undefined) return `${fixed}${path}`;
    const host = req.headers.host;
    if (!isValidHostHeader(host)) return undefined;
    return `${(req.socket as TLSSocket).encrypted ? 'https' : 'http'}://${host}${path}`;
  };
}

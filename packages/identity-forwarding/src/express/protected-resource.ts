import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { Router, type Request, type Response } from 'express';

/** Options of {@link protectedResourceMetadata}. */
export interface ProtectedResourceMetadataOptions {
  /** The identity provider's issuer, published as the authorization server. Default: none listed. */
  issuer?: string;
  /** Slugs of the MCP servers, each with its own metadata document. Default `[]`. */
  mcpServerSlugs?: readonly string[];
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
  const slugs = new Set(options.mcpServerSlugs ?? []);
  const authorizationServers = options.issuer ? [options.issuer] : [];
  const base = (req: Request): string =>
    options.publicBaseUrl?.replace(/\/$/, '') ?? `${req.protocol}://${req.get('host')}`;
  const send = (res: Response, resource: string): void => {
    res.setHeader('cache-control', 'public, max-age=300');
    res.json({ resource, authorization_servers: authorizationServers, bearer_methods_supported: ['header'] });
  };
  const router = Router();
  router.get('/.well-known/oauth-protected-resource', (req, res) => send(res, base(req)));
  router.get('/.well-known/oauth-protected-resource/mcp/:slug', (req, res, next) => {
    const slug = req.params.slug as string;
    if (!slugs.has(slug)) return next();
    send(res, `${base(req)}/mcp/${slug}`);
  });
  return router;
}

/**
 * The metadata URL of the MCP server a request under `/mcp/<slug>` is for (for `authenticate`).
 * `req.url` is the path below `/mcp`. The origin is `publicBaseUrl`, or else the request's own
 * (its `Host` header, `https` on TLS connections; forwarding headers are not trusted). Works on
 * any node:http request.
 */
export function mcpResourceMetadataUrl(publicBaseUrl?: string): (req: IncomingMessage) => string | undefined {
  const fixed = publicBaseUrl?.replace(/\/$/, '');
  return (req) => {
    const slug = /^\/([^/?]+)/.exec(req.url ?? '')?.[1];
    if (!slug) return undefined;
    const base = fixed ?? `${(req.socket as TLSSocket).encrypted ? 'https' : 'http'}://${req.headers.host ?? ''}`;
    return `${base}/.well-known/oauth-protected-resource/mcp/${slug}`;
  };
}

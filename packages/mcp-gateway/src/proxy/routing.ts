import type { Logger, McpServerConfig, IdentityTokenCache } from '@gw/identity-forwarding/identity';
import { DEFAULT_HEADER_NAMES, IdentityForwarder, resolveServer } from '@gw/identity-forwarding/identity';
import type { IdentityTokenSigner } from '@gw/jwks';
import { createUpstream, type UpstreamConnections } from './upstream-connections';

/** Everything a call needs to find its server, replaced whole by `update`. */
export interface Routing {
  forwarders: Map<string, IdentityForwarder>;
  proxies: Map<string, UpstreamConnections>;
  configuredQueryNames: Map<string, ReadonlySet<string>>;
  /** The JSON of each server's config, to keep the proxy (and its connections) of an unchanged server. */
  configs: Map<string, string>;
}

/** What {@link buildRouting} needs besides the servers. */
export interface RoutingSettings {
  signer: IdentityTokenSigner | undefined;
  acceptsIdentityTokens: boolean;
  tokenCache: IdentityTokenCache;
  logger: Logger | undefined;
  timeoutMs: number;
  streamIdleTimeoutMs: number;
}

/**
 * The routing of `mcpServers`: a forwarder and upstream connections per server. An unchanged
 * server keeps the connections it had in `previous`; those of a server that went or changed close
 * once their calls in flight are over. Throws when a server is not valid or two share a slug.
 * `warn`: log the warning of every `bearer` server (else only of new ones).
 */
export function buildRouting(
  mcpServers: readonly McpServerConfig[],
  previous: Routing | undefined,
  warn: boolean,
  settings: RoutingSettings,
): Routing {
  if (!Array.isArray(mcpServers)) throw new TypeError('mcpServers must be a list of MCP servers.');
  const next: Routing = {
    forwarders: new Map(),
    proxies: new Map(),
    configuredQueryNames: new Map(),
    configs: new Map(),
  };
  // One backend may sit behind several slugs: a header that carries identity to any server, and
  // every method's default, is removed from client requests on every server's routes.
  const identityHeaderNames = [
    ...Object.values(DEFAULT_HEADER_NAMES),
    ...mcpServers.map((config) => resolveServer(config).headerName).filter((n): n is string => !!n),
  ];
  for (const config of mcpServers) {
    const forwarder = new IdentityForwarder(config, {
      signer: settings.signer,
      acceptsTokens: settings.acceptsIdentityTokens,
      tokenCache: settings.tokenCache,
      identityHeaderNames,
    });
    const { slug, url, method } = forwarder.server;
    if (next.forwarders.has(slug))
      throw new TypeError(`mcpServers has two servers with the slug "${slug}"; slugs must be unique.`);
    if (method === 'bearer' && (warn || previous?.configs.get(slug) === undefined)) {
      settings.logger?.warn(
        { mcpServer: slug },
        `MCP server "${slug}" receives callers' identity-provider tokens (bearer): use it only for servers that trust the same identity provider.`,
      );
    }
    const json = JSON.stringify(config);
    const kept = previous?.configs.get(slug) === json ? previous.proxies.get(slug) : undefined;
    next.forwarders.set(slug, forwarder);
    next.proxies.set(slug, kept ?? createUpstream(url, settings.timeoutMs, settings.streamIdleTimeoutMs));
    next.configuredQueryNames.set(slug, new Set([...url.searchParams.keys()].map((n) => n.toLowerCase())));
    next.configs.set(slug, json);
  }
  // A server that went (or changed): its pool closes once the calls in flight on it are over.
  if (previous !== undefined)
    for (const [slug, upstream] of previous.proxies) if (next.proxies.get(slug) !== upstream) upstream.close();
  return next;
}

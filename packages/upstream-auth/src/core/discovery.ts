/**
 * Finds an MCP server's authorization server exactly as an MCP client does (MCP authorization
 * 2025-11-25): the `resource_metadata` of the server's `401`, else its RFC 9728 metadata at the
 * path-based then the root well-known URL (whose `resource` must be the server's URL); then the
 * issuer's RFC 8414 metadata, else OpenID discovery (path-inserted, then path-appended), whose
 * `issuer` must be the issuer asked. Answers and refusals are cached.
 */
import * as oauth from 'oauth4webapi';
import { classifyAddress, isRefusedAddress } from '@gw/upstream';
import { UpstreamAuthUnavailableError } from './errors';
import { createGuardedFetch, type GuardedFetch } from './guarded-fetch';
import { isAllowedAuthUrl } from './validate';

/** An authorization server found for an MCP server. */
export interface DiscoveredAuthorizationServer {
  /** The issuer, exactly as its metadata writes it. */
  issuer: string;
  /** Its RFC 8414 / OpenID metadata, checked. */
  metadata: oauth.AuthorizationServer;
  /** The MCP server's RFC 9728 metadata, when the issuer was discovered from it. */
  resourceMetadata?: oauth.ResourceServer;
}

/** Options of {@link AuthorizationServerDiscovery}. */
export interface AuthorizationServerDiscoveryOptions {
  /** The fetch used for every request. Default {@link createGuardedFetch} with its defaults (5 s, 64 KiB). */
  fetch?: GuardedFetch;
  /** How long a discovery is kept, in ms. Default 3600000 (1 hour). */
  cacheMs?: number;
  /** How long a refused discovery is kept, in ms. Default 30000. */
  refusalCacheMs?: number;
  /** Most discoveries kept (the oldest goes first). Default 1000. */
  maxEntries?: number;
  /** The clock, in ms since the epoch. Default `Date.now`. */
  now?: () => number;
}

interface Entry<T> {
  value: Promise<T>;
  expires: number;
}

/** oauth4webapi options for a request through the guarded fetch (which enforces https itself). */
export function requestOptions(fetch: GuardedFetch): {
  [oauth.customFetch]: GuardedFetch;
  [oauth.allowInsecureRequests]: true;
} {
  return { [oauth.customFetch]: fetch, [oauth.allowInsecureRequests]: true };
}

function invalid(message: string): UpstreamAuthUnavailableError {
  return new UpstreamAuthUnavailableError('invalid_metadata', message);
}

/** The `resource_metadata` URL of a `WWW-Authenticate` header, if any. */
export function resourceMetadataOf(wwwAuthenticate: string | null): string | undefined {
  if (!wwwAuthenticate) return undefined;
  const match = /(?:^|[\s,])resource_metadata\s*=\s*(?:"([^"]*)"|([^\s,]+))/i.exec(wwwAuthenticate);
  return match ? (match[1] ?? match[2]) : undefined;
}

/** Refuses metadata whose endpoints are not https (or loopback http) or name a refused IP literal. */
function checkEndpoints(metadata: oauth.AuthorizationServer): void {
  for (const [name, value] of Object.entries(metadata)) {
    if (!name.endsWith('_endpoint') && name !== 'jwks_uri') continue;
    if (value === undefined) continue;
    if (!isAllowedAuthUrl(value))
      throw invalid(`The authorization server's ${name} is not an https URL (http only on loopback).`);
    const host = new URL(value).hostname.replace(/^\[|\]$/g, '');
    const kind = classifyAddress(host);
    if (kind !== 'invalid' && isRefusedAddress(host, { allowPrivate: true }))
      throw new UpstreamAuthUnavailableError(
        'forbidden_address',
        `The authorization server's ${name} points at a ${kind.replace('_', '-')} address; the gateway does not connect there.`,
      );
  }
  if (typeof metadata.token_endpoint !== 'string')
    throw invalid('The authorization server metadata has no token_endpoint.');
}

/** Refuses metadata unusable for the authorization code flow: no authorization_endpoint, or no PKCE S256. */
function checkCodeFlow(metadata: oauth.AuthorizationServer): oauth.AuthorizationServer {
  if (typeof metadata.authorization_endpoint !== 'string')
    throw invalid('The authorization server metadata has no authorization_endpoint.');
  if (!metadata.code_challenge_methods_supported?.includes('S256'))
    throw invalid(
      'The authorization server does not list S256 in code_challenge_methods_supported (PKCE is required).',
    );
  return metadata;
}

/**
 * Discovers and caches authorization servers (see the module). Every failure is an
 * {@link UpstreamAuthUnavailableError}: `resource_mismatch`, `issuer_mismatch`,
 * `invalid_metadata`, or a failure of the guarded fetch.
 */
export class AuthorizationServerDiscovery {
  readonly #fetch: GuardedFetch;
  readonly #cacheMs: number;
  readonly #refusalCacheMs: number;
  readonly #maxEntries: number;
  readonly #now: () => number;
  readonly #servers = new Map<string, Entry<DiscoveredAuthorizationServer>>();
  readonly #issuers = new Map<string, Entry<oauth.AuthorizationServer>>();

  constructor(options: AuthorizationServerDiscoveryOptions = {}) {
    this.#fetch = options.fetch ?? createGuardedFetch();
    this.#cacheMs = options.cacheMs ?? 3_600_000;
    this.#refusalCacheMs = options.refusalCacheMs ?? 30_000;
    this.#maxEntries = options.maxEntries ?? 1000;
    this.#now = options.now ?? Date.now;
  }

  /** The fetch this discovery uses (for the requests made with what it found). */
  get fetch(): GuardedFetch {
    return this.#fetch;
  }

  /**
   * The authorization server of the MCP server at `serverUrl`: the issuer `authorizationServer`
   * when given, else discovered from the server's RFC 9728 metadata.
   */
  discover(serverUrl: string, authorizationServer?: string): Promise<DiscoveredAuthorizationServer> {
    return this.#cached(this.#servers, `${serverUrl}\n${authorizationServer ?? ''}`, async () => {
      if (authorizationServer !== undefined) {
        const metadata = checkCodeFlow(await this.issuerMetadata(authorizationServer));
        return { issuer: metadata.issuer, metadata };
      }
      const resourceMetadata = await this.resourceMetadata(serverUrl);
      const issuer = resourceMetadata.authorization_servers?.[0];
      if (typeof issuer !== 'string')
        throw invalid("The MCP server's protected resource metadata names no authorization_servers.");
      const metadata = checkCodeFlow(await this.issuerMetadata(issuer));
      return { issuer: metadata.issuer, metadata, resourceMetadata };
    });
  }

  /** The RFC 9728 metadata of the MCP server at `serverUrl` (uncached). */
  async resourceMetadata(serverUrl: string): Promise<oauth.ResourceServer> {
    const expected = new URL(serverUrl);
    const hinted = await this.#probe(serverUrl);
    const candidates: string[] = [];
    if (hinted !== undefined) candidates.push(hinted);
    else {
      const path = expected.pathname === '/' ? '' : expected.pathname.replace(/\/$/, '');
      if (path !== '') candidates.push(`${expected.origin}/.well-known/oauth-protected-resource${path}`);
      candidates.push(`${expected.origin}/.well-known/oauth-protected-resource`);
    }
    for (const candidate of candidates) {
      if (!isAllowedAuthUrl(candidate))
        throw invalid('The MCP server names resource metadata that is not an https URL (http only on loopback).');
      const response = await this.#fetch(candidate, { method: 'GET', headers: { accept: 'application/json' } });
      if (response.status === 404 && candidate !== hinted) continue;
      try {
        return await oauth.processResourceDiscoveryResponse(expected, response);
      } catch (error) {
        throw this.#processingError(error, 'resource_mismatch', 'protected resource metadata');
      }
    }
    throw invalid(
      'The MCP server publishes no protected resource metadata (RFC 9728) and no authorization_server is configured.',
    );
  }

  /** The RFC 8414 (else OpenID) metadata of `issuer`, its endpoints checked; cached. */
  issuerMetadata(issuer: string): Promise<oauth.AuthorizationServer> {
    return this.#cached(this.#issuers, issuer, async () => {
      if (!isAllowedAuthUrl(issuer)) throw invalid('The issuer is not an https URL (http only on loopback).');
      const url = new URL(issuer);
      const path = url.pathname === '/' ? '' : url.pathname.replace(/\/$/, '');
      const candidates =
        path === ''
          ? [`${url.origin}/.well-known/oauth-authorization-server`, `${url.origin}/.well-known/openid-configuration`]
          : [
              `${url.origin}/.well-known/oauth-authorization-server${path}`,
              `${url.origin}/.well-known/openid-configuration${path}`,
              `${url.origin}${path}/.well-known/openid-configuration`,
            ];
      for (const candidate of candidates) {
        const response = await this.#fetch(candidate, { method: 'GET', headers: { accept: 'application/json' } });
        if (response.status === 404) continue;
        let metadata: oauth.AuthorizationServer;
        try {
          metadata = await oauth.processDiscoveryResponse(url, response);
        } catch (error) {
          throw this.#processingError(error, 'issuer_mismatch', 'authorization server metadata');
        }
        checkEndpoints(metadata);
        return metadata;
      }
      throw invalid('The issuer publishes neither OAuth authorization server metadata nor OpenID discovery.');
    });
  }

  /** Drops what is cached for `serverUrl` (its configuration changed). */
  forget(serverUrl: string): void {
    for (const key of [...this.#servers.keys()]) if (key.startsWith(`${serverUrl}\n`)) this.#servers.delete(key);
  }

  /** An unauthenticated request to the MCP server: the `resource_metadata` its 401 names, if any. */
  async #probe(serverUrl: string): Promise<string | undefined> {
    try {
      const response = await this.#fetch(serverUrl, {
        method: 'POST',
        headers: {
          accept: 'application/json, text/event-stream',
          'content-type': 'application/json',
          'mcp-protocol-version': '2025-11-25',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'ping' }),
      });
      if (response.status !== 401) return undefined;
      const hint = resourceMetadataOf(response.headers.get('www-authenticate'));
      return hint === undefined ? undefined : new URL(hint, serverUrl).href;
    } catch (error) {
      // A redirect or a refused address of the server itself is not a hint to follow: the
      // well-known URLs at its origin are tried, guarded alike.
      if (error instanceof UpstreamAuthUnavailableError) return undefined;
      throw error;
    }
  }

  #processingError(error: unknown, mismatch: 'resource_mismatch' | 'issuer_mismatch', what: string): Error {
    if (error instanceof UpstreamAuthUnavailableError) return error;
    if (error instanceof oauth.OperationProcessingError && error.code === oauth.JSON_ATTRIBUTE_COMPARISON)
      return new UpstreamAuthUnavailableError(
        mismatch,
        mismatch === 'resource_mismatch'
          ? `The ${what} names another resource than the MCP server's URL.`
          : `The ${what} names another issuer than the one asked.`,
      );
    if (error instanceof oauth.OperationProcessingError && error.code === oauth.RESPONSE_IS_NOT_CONFORM)
      return new UpstreamAuthUnavailableError('bad_status', `The ${what} answered an unexpected status.`);
    return invalid(`The ${what} is not usable.`);
  }

  #cached<T>(map: Map<string, Entry<T>>, key: string, load: () => Promise<T>): Promise<T> {
    const now = this.#now();
    const hit = map.get(key);
    if (hit && hit.expires > now) return hit.value;
    map.delete(key);
    while (map.size >= this.#maxEntries) map.delete(map.keys().next().value!);
    const value = load();
    const entry: Entry<T> = { value, expires: now + this.#cacheMs };
    map.set(key, entry);
    value.catch(() => {
      if (map.get(key) === entry) entry.expires = this.#now() + this.#refusalCacheMs;
    });
    return value;
  }
}

/**
 * The gateway's source of MCP servers' own credentials (CONTRACT section 15): for a server with
 * `upstream_auth`, the header each call carries — the caller's own OAuth token at the server
 * (`oauth`), a token the identity provider minted for the server (`token_exchange`), or shared
 * service headers (`static`) — and the JSON-RPC errors that say what to do when there is none.
 * The proxy (`@gw/mcp-gateway`) asks it on every call; a token held in memory is answered
 * at once.
 */
import { randomBytes } from 'node:crypto';
import type { GatewayIdentity } from '@gw/identity-forwarding';
import type { UpstreamCredential, UpstreamCredentialSource } from '@gw/mcp-gateway';
import type { UpstreamAuthConfig } from '@gw/upstream-auth';
import { callerUserId } from '../access/access-hooks';

/** MCP 2025-11-25's "URL elicitation required" JSON-RPC error code. */
export const URL_ELICITATION_REQUIRED = -32042;
/** The JSON-RPC error code of the gateway's other credential failures (an exchange refused, an authorization server down). */
export const UPSTREAM_AUTH_JSON_RPC_CODE = -32001;
/** How long a connect link works: 10 minutes. */
export const CONNECT_LINK_TTL_MS = 10 * 60 * 1000;
/**
 * A caller without a connection gets the same link again for this long (a client that retries at
 * once makes no new link each time); a call that finds a token forgets it.
 */
const CONNECT_LINK_REUSE_MS = 60 * 1000;
/** Most links remembered for reuse (one per caller and server). */
const MAX_REMEMBERED_LINKS = 10_000;

/** What the source needs of the per-user OAuth connections (`@gw/upstream-auth`'s manager). */
export interface UserConnections {
  /** The access token held in memory for `(userId, server)` when it needs no refresh yet; never waits. */
  cachedAccessToken(userId: string, server: string): string | undefined;
  /** The usable access token (loaded, refreshed when due), or undefined when the user has no connection. */
  accessToken(userId: string, server: string): Promise<string | undefined>;
  /**
   * The server answered `401` to `rejected`: refreshed once (unless another call did), or, with
   * `final`, the connection ended. Undefined: no usable token any more.
   */
  afterUnauthorized(userId: string, server: string, rejected: string, final: boolean): Promise<string | undefined>;
  /** Stores a connect link's request: only `userId` may complete it, before `expiresAt`. */
  createConnectRequest(request: { id: string; userId: string; server: string; expiresAt: number }): Promise<void>;
}

/** What the source needs of token exchange (`@gw/upstream-auth`'s exchanger). */
export interface TokenExchanges {
  /** The token minted for `server` from the caller's identity-provider token (cached until 30 s before expiry). */
  exchange(
    server: string,
    config: Extract<UpstreamAuthConfig, { type: 'token_exchange' }>,
    subjectToken: string,
    subjectTokenType: 'access_token' | 'id_token',
  ): string | Promise<string>;
}

/** A credential failure of the gateway's own, with its HTTP form and the JSON-RPC form of a POST. */
export class UpstreamCredentialFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly jsonRpc?: { code: number; message: string; data?: unknown },
    readonly type = status === 401 ? 'authentication_error' : status === 403 ? 'permission_error' : 'api_error',
  ) {
    super(message);
    this.name = 'UpstreamCredentialFailure';
  }
}

/** What {@link createUpstreamCredentials} is built from. */
export interface UpstreamCredentialsOptions {
  /** `PUBLIC_BASE_URL`: connect links are `<base>/connect/<slug>?request=<id>`. */
  publicBaseUrl: string;
  /** The servers' `upstream_auth` now (the catalog's snapshot), by slug. */
  servers: () => ReadonlyMap<string, UpstreamAuthConfig>;
  /** The per-user OAuth connections; without them an `oauth` server is refused (`upstream_auth_unavailable`). */
  connections?: UserConnections;
  /** Token exchange; without it a `token_exchange` server is refused (`upstream_auth_unavailable`). */
  exchanges?: TokenExchanges;
  /**
   * The identity provider's access token of a caller signed in through section 11 with an OpenID
   * Provider (a gateway OAuth token): kept sealed with its grant, renewed when it expires.
   * Undefined when the caller's sign-in has none (an API-key sign-in). Default: none.
   */
  providerAccessToken?: (identity: GatewayIdentity) => Promise<string | undefined>;
  /** Millisecond clock. Default `Date.now`. */
  now?: () => number;
}

/**
 * The {@link UpstreamCredentialSource} of the gateway's MCP proxy. The servers' configs are read
 * per call from `servers()`, so a catalog change applies to the next call.
 */
export function createUpstreamCredentials(options: UpstreamCredentialsOptions): UpstreamCredentialSource {
  const now = options.now ?? Date.now;
  /** The headers of each `static` server, by its config object (rebuilt when the config changes). */
  const staticCredentials = new WeakMap<UpstreamAuthConfig, UpstreamCredential>();
  /** The link last handed to a caller for a server: `user\nserver` → id and when it was made. */
  const links = new Map<string, { id: string; createdAt: number }>();

  const connectionRequired = async (userId: string, server: string): Promise<UpstreamCredentialFailure> => {
    const connections = options.connections as UserConnections;
    const key = `${userId}\n${server}`;
    const at = now();
    let link = links.get(key);
    if (link === undefined || at - link.createdAt > CONNECT_LINK_REUSE_MS) {
      link = { id: randomBytes(32).toString('base64url'), createdAt: at };
      await connections.createConnectRequest({ id: link.id, userId, server, expiresAt: at + CONNECT_LINK_TTL_MS });
      links.delete(key);
      if (links.size >= MAX_REMEMBERED_LINKS) links.delete(links.keys().next().value as string);
      links.set(key, link);
    }
    const url = `${options.publicBaseUrl}/connect/${encodeURIComponent(server)}?request=${link.id}`;
    const message = `The MCP server "${server}" needs your own sign-in there. Open ${url} in your browser to connect it, then try again.`;
    return new UpstreamCredentialFailure(403, 'connection_required', message, {
      code: URL_ELICITATION_REQUIRED,
      message,
      data: {
        code: 'connection_required',
        elicitations: [{ mode: 'url', elicitationId: link.id, url, message }],
      },
    });
  };

  const oauthCredential = (userId: string, server: string, token: string): UpstreamCredential => ({
    headers: { authorization: `Bearer ${token}` },
    rejected: async (final) => {
      const connections = options.connections as UserConnections;
      const next = await connections.afterUnauthorized(userId, server, token, final);
      if (next === undefined || final) throw await connectionRequired(userId, server);
      // A connect link handed out before no longer applies once the user has a token again.
      links.delete(`${userId}\n${server}`);
      return oauthCredential(userId, server, next);
    },
  });

  const oauth = (identity: GatewayIdentity, server: string): UpstreamCredential | Promise<UpstreamCredential> => {
    const connections = options.connections;
    if (connections === undefined) throw unavailable(server);
    const userId = callerUserId(identity);
    if (userId === undefined)
      throw new UpstreamCredentialFailure(
        403,
        'connection_required',
        `The MCP server "${server}" needs each user's own sign-in, and this caller has no user id.`,
      );
    const cached = connections.cachedAccessToken(userId, server);
    if (cached !== undefined) return oauthCredential(userId, server, cached);
    return connections.accessToken(userId, server).then(
      async (token) => {
        if (token === undefined) throw await connectionRequired(userId, server);
        // Connected (here or on another instance): a link handed out before is used up.
        if (links.size > 0) links.delete(`${userId}\n${server}`);
        return oauthCredential(userId, server, token);
      },
      (error: unknown) => {
        throw isCredentialFailure(error) ? asJsonRpcFailure(error) : unavailable(server);
      },
    );
  };

  const tokenExchange = (
    identity: GatewayIdentity,
    server: string,
    config: Extract<UpstreamAuthConfig, { type: 'token_exchange' }>,
  ): UpstreamCredential | Promise<UpstreamCredential> => {
    const exchanges = options.exchanges;
    if (exchanges === undefined) throw unavailable(server);
    const identityTokenRequired = () =>
      new UpstreamCredentialFailure(
        401,
        'identity_token_required',
        `The MCP server "${server}" takes a token minted from the caller's identity-provider token; sign in with one (a gateway API key cannot be exchanged).`,
      );
    const asCredential = (token: string): UpstreamCredential => ({ headers: { authorization: `Bearer ${token}` } });
    const exchange = (subjectToken: string): UpstreamCredential | Promise<UpstreamCredential> => {
      let exchanged: string | Promise<string>;
      try {
        exchanged = exchanges.exchange(server, config, subjectToken, 'access_token');
      } catch (error) {
        throw asJsonRpcFailure(error, server);
      }
      if (typeof exchanged === 'string') return asCredential(exchanged);
      return exchanged.then(asCredential, (error: unknown) => {
        throw asJsonRpcFailure(error, server);
      });
    };
    if (identity.method === 'identity_token' && identity.token !== undefined) return exchange(identity.token);
    // A gateway OAuth token of an OpenID sign-in: the provider's own access token of that sign-in.
    const providerAccessToken = options.providerAccessToken;
    if (identity.method !== 'oauth_token' || providerAccessToken === undefined) throw identityTokenRequired();
    return providerAccessToken(identity).then(
      (token) => {
        if (token === undefined) throw identityTokenRequired();
        return exchange(token);
      },
      (error: unknown) => {
        throw asJsonRpcFailure(error, server);
      },
    );
  };

  return {
    appliesTo: (slug) => options.servers().has(slug),
    credential(identity, slug) {
      const config = options.servers().get(slug);
      if (config === undefined) throw unavailable(slug);
      switch (config.type) {
        case 'static': {
          let credential = staticCredentials.get(config);
          if (credential === undefined) {
            const headers: Record<string, string> = {};
            for (const [name, value] of Object.entries(config.headers)) headers[name.toLowerCase()] = value;
            credential = { headers: Object.freeze(headers) };
            staticCredentials.set(config, credential);
          }
          return credential;
        }
        case 'oauth':
          return oauth(identity, slug);
        case 'token_exchange':
          return tokenExchange(identity, slug, config);
        default:
          throw unavailable(slug);
      }
    },
  };
}

/** `502 upstream_auth_unavailable`, with its JSON-RPC form. */
function unavailable(server: string): UpstreamCredentialFailure {
  const message = `The credential for the MCP server "${server}" cannot be obtained just now: its authorization server is unreachable or its metadata unusable.`;
  return new UpstreamCredentialFailure(502, 'upstream_auth_unavailable', message, {
    code: UPSTREAM_AUTH_JSON_RPC_CODE,
    message,
    data: { code: 'upstream_auth_unavailable' },
  });
}

/** Whether an error has the `status` and `code` of a gateway error. */
function isCredentialFailure(error: unknown): error is { status: number; code: string; message: string } {
  const e = error as { status?: unknown; code?: unknown } | null;
  return typeof e?.status === 'number' && typeof e.code === 'string';
}

/**
 * A failure of the exchange or the authorization server as the caller sees it: its status and code,
 * with a JSON-RPC form (`data.code`, and `data.error`, the provider's OAuth `error` code, for a
 * refused exchange); anything else is `upstream_auth_unavailable`. Never a token, never a body.
 */
function asJsonRpcFailure(error: unknown, server = ''): UpstreamCredentialFailure {
  if (error instanceof UpstreamCredentialFailure) return error;
  if (!isCredentialFailure(error)) return unavailable(server);
  const providerError = (error as { providerError?: unknown }).providerError;
  const data: Record<string, unknown> = { code: error.code };
  if (typeof providerError === 'string' && /^[\x21-\x7e]{1,64}$/.test(providerError)) data.error = providerError;
  return new UpstreamCredentialFailure(error.status, error.code, error.message, {
    code: UPSTREAM_AUTH_JSON_RPC_CODE,
    message: error.message,
    data,
  });
}

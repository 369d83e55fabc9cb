import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestHandler } from 'express';
import { rejectUnknownOptions } from '@gw/options';
import type { IdentityTokenSigner } from '@gw/jwks';
import type {
  GatewayIdentity,
  IdentityForwarder,
  IdentityTokenCache,
  Logger,
  McpServerConfig,
} from '@gw/identity-forwarding/identity';
import type { McpAccess } from '../gate/tool-gate';
import type { UpstreamCredentialSource } from '../upstream-credentials/upstream-credentials';
import { trustedProxyList } from './forwarded-for';

/** Options of `identityForwarding`. */
export interface IdentityForwardingOptions {
  /** The MCP servers, as in the config's `mcpServers`. Required (may be empty). */
  mcpServers: readonly McpServerConfig[];
  /** Signs `jwt_header` tokens (from @gw/jwks). Default: none, and `jwt_header` servers are refused. */
  signer?: IdentityTokenSigner;
  /** Whether callers may hold identity-provider tokens (`jwt_validation` is set); `bearer` needs it. Default false. */
  acceptsIdentityTokens?: boolean;
  /** Most signed tokens cached. Default 10000. */
  tokenCacheSize?: number;
  /** How long to wait for an MCP server's response headers, in ms. Default 30000. Streams may then last. */
  timeoutMs?: number;
  /**
   * Longest silence between two chunks of an MCP server's response body once its headers arrived,
   * in ms; after it the gateway closes the client connection and the upstream request. Default
   * 300000 (5 minutes): a GET event stream may carry nothing for long, so keep it above the
   * servers' own keep-alive interval. A `subscriptions/listen` stream (MCP 2026-07-28) is not cut:
   * it lasts while the server keeps it open.
   */
  streamIdleTimeoutMs?: number;
  /** Start-up warnings (one per `bearer` server) go here. Default: none. */
  logger?: Logger;
  /** Millisecond clock of the token cache, for tests. Default `Date.now`. */
  now?: () => number;
  /**
   * Addresses of proxies in front of the gateway whose `x-forwarded-for` is believed (exact IP
   * addresses, as the socket reports them). From any other peer, the MCP server gets only the peer's
   * address. Default `[]`: every client's own `x-forwarded-for`, `forwarded` and `x-real-ip` are dropped.
   */
  trustedProxies?: readonly string[];
  /**
   * The host's access rule, called for every request with the caller and the server's slug before
   * anything is sent: `{ allowed: false }` answers `403 access_denied`. With `tools` (a tool gate)
   * the gateway fails closed: it reads every POST body (at most `maxInspectedBodyBytes`) and
   * refuses one that is not strict UTF-8 JSON of content type `application/json`
   * (`400 invalid_mcp_message`), one whose `Mcp-Method`/`Mcp-Name` headers disagree with it or,
   * of protocol revision 2026-07-28 or later, lacks them (`400`, JSON-RPC error `-32020`), and a
   * `tools/call` the gate refuses (JSON-RPC error `-32602`); none of them reaches the server. It
   * reads every answer (POST and GET, JSON or event stream, newline-delimited JSON message by
   * message; other content types only when empty, else `502 upstream_invalid_response`) and
   * keeps only allowed tools in every `result.tools`, whatever its JSON-RPC id. Without `tools`,
   * requests and answers stream through untouched. Must not wait; it is called on every request,
   * so a host should remember its answers. Default: none (every caller, every tool).
   */
  authorize?: (identity: GatewayIdentity, server: string) => McpAccess;
  /**
   * The host's admission of a `tools/call` (limits: it counts as a request), asked for every POST:
   * it returns the step to await before a `tools/call` is forwarded, or undefined when the request
   * needs none (then its body is not read for it). When a step is returned, the body is read as a
   * tool gate reads it (at most `maxInspectedBodyBytes`; one that is not strict UTF-8 JSON of
   * content type `application/json`, or a batch of more than 100 messages, is
   * `400 invalid_mcp_message` and not forwarded) and, when it holds `tools/call`s, the step runs
   * first with their number (each call of a batch counts); a rejection (with `status`, `code` and
   * `headers`, such as `429 rate_limited`) is the answer and nothing is forwarded. Default: none.
   */
  toolCallAdmission?: (req: IncomingMessage, res: ServerResponse) => ((toolCalls: number) => Promise<void>) | undefined;
  /** Largest request body read when `authorize` gives a tool gate, in bytes. Default 4194304 (4 MiB). */
  maxInspectedBodyBytes?: number;
  /** Largest JSON answer read where a tool gate applies, in bytes (a larger one is 502). Default 16777216 (16 MiB). */
  maxInspectedAnswerBytes?: number;
  /**
   * Credentials of the servers' own (CONTRACT section 15, `upstream_auth`): for a server it applies
   * to, every call carries the headers it gives for the caller, set over the client's. A POST body
   * is then read whole before it is sent (at most `maxInspectedBodyBytes`), so that a `401` of the
   * server is followed by one renewal and one retry, and a refusal of the source with a JSON-RPC
   * form (a connection to make, an exchange refused) answers each JSON-RPC request of it with that
   * error (HTTP 200; a body of notifications only: `202`), never forwarded. A GET or DELETE it
   * refuses for want of a connection is `405` (no stream, no session to end); a server's `401` to
   * one is not passed on (its challenge names the server's authorization server): the credential
   * is renewed for the next call and the client gets `405`. Default: none.
   */
  upstreamCredentials?: UpstreamCredentialSource;
}

/** The middleware returned by `identityForwarding`, with what the host's metrics read. */
export type IdentityForwardingMiddleware = RequestHandler & {
  readonly tokenCache: IdentityTokenCache;
  /** The servers' forwarders, by slug, as of now. */
  readonly forwarders: ReadonlyMap<string, IdentityForwarder>;
  /**
   * Replaces the MCP servers at once (the catalog changed): new calls see the new list (a removed
   * server answers `404 mcp_server_not_found`); calls in flight finish with the server they
   * started with. An unchanged server keeps its connections. Throws, keeping the old list, when
   * a server is not valid.
   */
  update(mcpServers: readonly McpServerConfig[]): void;
};

/** The options of `identityForwarding` once read, with their defaults. */
export interface ProxySettings {
  toolCallAdmission: IdentityForwardingOptions['toolCallAdmission'];
  upstreamCredentials: UpstreamCredentialSource | undefined;
  authorize: IdentityForwardingOptions['authorize'];
  /** Default 4194304 (4 MiB). */
  maxInspectedBodyBytes: number;
  /** Default 16777216 (16 MiB). */
  maxInspectedAnswerBytes: number;
  /** Default 30000. */
  timeoutMs: number;
  /** Default 300000. */
  streamIdleTimeoutMs: number;
  trustedProxies: ReadonlySet<string>;
  /** Default: the token cache's own (10000). */
  tokenCacheSize: number | undefined;
}

/** Throws when a factory is mounted without being called (`app.use(identityForwarding)`). */
function detectMissingCall(options: unknown, factory: string): void {
  if (typeof options === 'object' && options !== null && 'method' in options && 'socket' in options) {
    throw new TypeError(`${factory} is a factory: mount it as app.use(${factory}({ ... })), not app.use(${factory}).`);
  }
}

/**
 * Validates the options of `identityForwarding`, when the factory is called: a bad option
 * throws a `TypeError` that names it and says what to write.
 */
export function readProxyOptions(options: IdentityForwardingOptions): ProxySettings {
  detectMissingCall(options, 'identityForwarding');
  if (!options || !Array.isArray(options.mcpServers)) {
    throw new TypeError('identityForwarding needs { mcpServers: [...] }, the MCP servers of the config.');
  }
  rejectUnknownOptions(
    options,
    [
      'mcpServers',
      'signer',
      'acceptsIdentityTokens',
      'tokenCacheSize',
      'timeoutMs',
      'streamIdleTimeoutMs',
      'logger',
      'now',
      'trustedProxies',
      'authorize',
      'maxInspectedBodyBytes',
      'maxInspectedAnswerBytes',
      'toolCallAdmission',
      'upstreamCredentials',
    ],
    'identityForwarding',
  );
  const toolCallAdmission = options.toolCallAdmission;
  if (toolCallAdmission !== undefined && typeof toolCallAdmission !== 'function') {
    throw new TypeError('toolCallAdmission must be a function (req, res) => (() => Promise<void>) | undefined.');
  }
  const upstreamCredentials = options.upstreamCredentials;
  if (
    upstreamCredentials !== undefined &&
    (typeof upstreamCredentials?.appliesTo !== 'function' || typeof upstreamCredentials.credential !== 'function')
  ) {
    throw new TypeError('upstreamCredentials must be an object with appliesTo(slug) and credential(identity, slug).');
  }
  const authorize = options.authorize;
  if (authorize !== undefined && typeof authorize !== 'function') {
    throw new TypeError('authorize must be a function (identity, server) => { allowed, tools? }.');
  }
  if (options.signer !== undefined && typeof options.signer?.signIdentityToken !== 'function') {
    throw new TypeError('signer must be an identity token signer of @gw/jwks (createIdentityTokenSigner(key)).');
  }
  if (options.acceptsIdentityTokens !== undefined && typeof options.acceptsIdentityTokens !== 'boolean') {
    throw new TypeError('acceptsIdentityTokens must be true or false.');
  }
  if (options.logger !== undefined && typeof options.logger?.warn !== 'function') {
    throw new TypeError('logger must be an object with a warn(object, message) method, such as a pino logger.');
  }
  if (options.now !== undefined && typeof options.now !== 'function') {
    throw new TypeError('now must be a function () => milliseconds since the epoch.');
  }
  const positiveBytes = (name: string, value: number | undefined, fallback: number) => {
    if (value === undefined) return fallback;
    if (!Number.isInteger(value) || value <= 0)
      throw new TypeError(`${name} must be a positive whole number of bytes, for example ${fallback}.`);
    return value;
  };
  const maxInspectedBodyBytes = positiveBytes('maxInspectedBodyBytes', options.maxInspectedBodyBytes, 4 * 1024 * 1024);
  const maxInspectedAnswerBytes = positiveBytes(
    'maxInspectedAnswerBytes',
    options.maxInspectedAnswerBytes,
    16 * 1024 * 1024,
  );
  const timeoutMs = options.timeoutMs ?? 30_000;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0)
    throw new TypeError('timeoutMs must be a positive number of milliseconds.');
  const streamIdleTimeoutMs = options.streamIdleTimeoutMs ?? 300_000;
  if (!Number.isFinite(streamIdleTimeoutMs) || streamIdleTimeoutMs <= 0)
    throw new TypeError('streamIdleTimeoutMs must be a positive number of milliseconds, for example 300000.');
  const trustedProxies = new Set(trustedProxyList(options.trustedProxies));
  const tokenCacheSize = options.tokenCacheSize;
  if (tokenCacheSize !== undefined && (!Number.isInteger(tokenCacheSize) || tokenCacheSize < 1))
    throw new TypeError('tokenCacheSize must be a positive whole number, for example 10000.');
  return {
    toolCallAdmission,
    upstreamCredentials,
    authorize,
    maxInspectedBodyBytes,
    maxInspectedAnswerBytes,
    timeoutMs,
    streamIdleTimeoutMs,
    trustedProxies,
    tokenCacheSize,
  };
}

import {
  Agent as HttpAgent,
  type ClientRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type ServerResponse,
} from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { isIP } from 'node:net';
import type { Readable } from 'node:stream';
import { parse as parseLegacyUrl } from 'node:url';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { createProxyMiddleware } from 'http-proxy-middleware';
import { Pool } from 'undici';
import type { IdentityTokenSigner } from '@gw/jwks';
import {
  AccessDeniedError,
  InvalidMcpMessageError,
  McpBodyTooLargeError,
  UpstreamInvalidResponseError,
  InvalidMcpPathError,
  McpServerNotFoundError,
  MethodNotAllowedError,
  MissingCredentialsError,
  RawBodyUnavailableError,
  StreamNeedsConnectionError,
  UpstreamTimeoutError,
  UpstreamUnreachableError,
} from '../core/errors';
import { DEFAULT_HEADER_NAMES, resolveServer, type McpServerConfig } from '../core/forwarding-config';
import { IdentityForwarder } from '../core/forwarder';
import { rejectUnknownOptions } from '@gw/options';
import { MAX_WHOLE_ANSWER_BYTES, UpstreamAbort, holdWhole } from '@gw/upstream';
import {
  SpanKind,
  SpanStatusCode,
  injectTraceHeaders,
  requestTraceContext,
  setDefinedAttributes,
  startSpan,
  type Context,
  type Span,
} from '@gw/tracing';
import { IdentityTokenCache } from '../core/token-cache';
import type { GatewayIdentity } from '../core/identity';
import {
  countToolCalls,
  filterJsonBytes,
  inspectRequest,
  isUtf8MediaType,
  parseMediaType,
  readMcpRequest,
  type InspectedRequest,
  type JsonRpcMessage,
  type McpAccess,
  type McpRequestMessages,
  type McpToolGate,
} from '../core/tool-gate';
import { SseToolFilter } from '../core/sse-tool-filter';
import {
  CONNECTION_REQUIRED_CODE,
  credentialErrorAnswer,
  hasJsonRpcForm,
  type UpstreamCredential,
  type UpstreamCredentialSource,
} from '../core/upstream-credentials';
import { JsonLinesToolFilter } from '../core/json-lines-tool-filter';
import { detectMissingCall, type GatewayLocals, type Logger } from './shared';

/** Options of {@link identityForwarding}. */
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

/** The middleware returned by {@link identityForwarding}, with what the host's metrics read. */
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

const UPSTREAM_PATH = Symbol('gateway.upstreamPath');
const PROXY_STATE = Symbol('gateway.proxyState');

interface ProxyState {
  next: NextFunction;
  started: number;
  timedOut: boolean;
  /** The request body read for inspection: sent instead of the (consumed) stream. */
  body?: Buffer;
  /**
   * A small body read whole before it is forwarded when nothing inspects it (see
   * {@link readAheadLength}): sent as read, with the client's own headers.
   */
  readAhead?: Buffer;
  /** The tool gate every answer is read through. */
  gate?: McpToolGate;
  maxAnswerBytes?: number;
  /** The MCP call's span. */
  span: Span;
  /** Whether the client's request has a body (a length or a chunked body), which is then streamed on. */
  hasBody: boolean;
  /** The server credential this call carries (see `upstreamCredentials`). */
  credential?: UpstreamCredential;
  /** Whether the call was sent again after the server's `401`. */
  retried?: boolean;
}

/** The instrumentation scope of the MCP gateway's spans. */
const TRACER_NAME = '@gw/identity-forwarding';

/** Most bytes of a request body read for its JSON-RPC method: 64 KiB (a larger body's method is not read). */
const MAX_METHOD_SCAN_BYTES = 64 * 1024;

/**
 * The declared length of a POST body small enough to read whole before it is forwarded (at most
 * 64 KiB, with a `content-length` and no `transfer-encoding`), else undefined: such a body is
 * streamed to the server.
 *
 * Measured: a streamed body (undici's stream writer listens on the long-lived upstream connection
 * for each request) kept each request's objects alive until the next full garbage collection; the
 * MCP `tools/call` of the benchmarks promoted 8.7 KB a request to the old generation streamed and
 * 1.0 KB read whole, for 20 µs more CPU (docs/decisions.md, "Request objects that outlived their
 * request"). A body read whole also leaves in the same write as the headers.
 */
function readAheadLength(req: IncomingMessage): number | undefined {
  if (req.method !== 'POST' || req.headers['transfer-encoding'] !== undefined) return undefined;
  const declared = req.headers['content-length'];
  if (declared === undefined || !/^[0-9]{1,5}$/.test(declared)) return undefined;
  const length = Number(declared);
  return length > 0 && length <= MAX_METHOD_SCAN_BYTES ? length : undefined;
}
const RPC_NAME = /^[A-Za-z0-9_./:-]{1,128}$/;
/** The MCP 2026-07-28 request whose answer is a stream that lasts while the server keeps it open. */
const LISTEN_METHOD = 'subscriptions/listen';

/**
 * Reads the JSON-RPC `method` (and the tool of a `tools/call`) of an MCP request body as it streams
 * to the server, from the first 64 KiB, into the call's record and span. Only those names are
 * kept: never arguments or content.
 */
function tapRpcMethod(req: IncomingMessage, record: GatewayLocals, span: Span, read?: Buffer): void {
  const type = String(req.headers['content-type'] ?? '');
  if (req.method !== 'POST') return;
  // The media type in any case and with parameters, as the server reads it.
  if (!type.startsWith('application/json') && parseMediaType(type)?.essence !== 'application/json') return;
  // Named already from the strict reading of a gate or a limit.
  if (record.mcpMethod !== undefined) return;
  if (read !== undefined) {
    // The body was read whole before it is sent: its bytes are the ones to name.
    if (read.length <= MAX_METHOD_SCAN_BYTES) recordRpcMethod(read, record, span);
    return;
  }
  let chunks: Buffer[] | undefined = [];
  let size = 0;
  req.on('data', (chunk: Buffer) => {
    if (chunks === undefined) return;
    size += chunk.length;
    if (size > MAX_METHOD_SCAN_BYTES) chunks = undefined;
    else chunks.push(chunk);
  });
  req.once('end', () => {
    if (chunks === undefined) return;
    const body = Buffer.concat(chunks);
    chunks = undefined;
    recordRpcMethod(body, record, span);
  });
}

/** Names the call's record and span after the JSON-RPC method (and tool) of `body`, when it has one. */
function recordRpcMethod(body: Buffer, record: GatewayLocals, span: Span): void {
  let message: unknown;
  try {
    message = JSON.parse(body.toString('utf8'));
  } catch {
    return;
  }
  // A batch is named after its first message.
  nameCall((Array.isArray(message) ? message[0] : message) as JsonRpcMessage | undefined, record, span);
}

/** Names the call's record and span after `first`, the (first) message of its body, when it has a method. */
function nameCall(first: JsonRpcMessage | undefined, record: GatewayLocals, span: Span): void {
  const method = first?.method;
  if (typeof method !== 'string' || !RPC_NAME.test(method)) return;
  record.mcpMethod = method;
  const tool = method === 'tools/call' ? first?.params?.name : undefined;
  if (typeof tool === 'string' && RPC_NAME.test(tool)) record.mcpTool = tool;
  setDefinedAttributes(span, { 'mcp.method.name': method, 'gen_ai.tool.name': record.mcpTool });
  span.updateName(record.mcpTool ? `${method} ${record.mcpTool}` : method);
}

type ProxiedRequest = IncomingMessage & { [UPSTREAM_PATH]?: string; [PROXY_STATE]?: ProxyState };

function locals(res: Response | ServerResponse): GatewayLocals {
  const r = res as Response;
  r.locals ??= {};
  return ((r.locals as { gateway?: GatewayLocals }).gateway ??= {});
}

/**
 * The MCP gateway, mounted by the host at `/mcp` after `authenticate`: `/mcp/<slug>[/rest][?query]`
 * goes to the server's `url` + rest + query, with the client's headers filtered and the caller's
 * identity added as the server's `user_identity_forwarding` says. Streamable HTTP POST, GET and
 * DELETE; responses (SSE included) stream through unbuffered; a client that disconnects aborts
 * the upstream request. Every option is validated here, when the factory is called.
 */
export function identityForwarding(options: IdentityForwardingOptions): IdentityForwardingMiddleware {
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
  const tokenCache = new IdentityTokenCache({ maxSize: tokenCacheSize, now: options.now });

  /** Everything a call needs to find its server, replaced whole by `update`. */
  interface Routing {
    forwarders: Map<string, IdentityForwarder>;
    proxies: Map<string, UpstreamConnections>;
    configuredQueryNames: Map<string, ReadonlySet<string>>;
    /** The JSON of each server's config, to keep the proxy (and its connections) of an unchanged server. */
    configs: Map<string, string>;
  }
  const build = (mcpServers: readonly McpServerConfig[], previous: Routing | undefined, warn: boolean): Routing => {
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
        signer: options.signer,
        acceptsTokens: options.acceptsIdentityTokens ?? false,
        tokenCache,
        identityHeaderNames,
      });
      const { slug, url, method } = forwarder.server;
      if (next.forwarders.has(slug))
        throw new TypeError(`mcpServers has two servers with the slug "${slug}"; slugs must be unique.`);
      if (method === 'bearer' && (warn || previous?.configs.get(slug) === undefined)) {
        options.logger?.warn(
          { mcpServer: slug },
          `MCP server "${slug}" receives callers' identity-provider tokens (bearer): use it only for servers that trust the same identity provider.`,
        );
      }
      const json = JSON.stringify(config);
      const kept = previous?.configs.get(slug) === json ? previous.proxies.get(slug) : undefined;
      next.forwarders.set(slug, forwarder);
      next.proxies.set(slug, kept ?? createUpstream(url, timeoutMs, streamIdleTimeoutMs));
      next.configuredQueryNames.set(slug, new Set([...url.searchParams.keys()].map((n) => n.toLowerCase())));
      next.configs.set(slug, json);
    }
    // A server that went (or changed): its pool closes once the calls in flight on it are over.
    if (previous !== undefined)
      for (const [slug, upstream] of previous.proxies) if (next.proxies.get(slug) !== upstream) upstream.close();
    return next;
  };
  let routing = build(options.mcpServers, undefined, true);
  let warnedAboutParser = false;

  const middleware = function identityForwardingMiddleware(req: Request, res: Response, next: NextFunction): void {
    const url = req.url;
    const query = url.indexOf('?');
    const path = query === -1 ? url : url.slice(0, query);
    const slash = path.indexOf('/', 1);
    const slug = path.slice(1, slash === -1 ? undefined : slash);
    // One read: a call uses the servers as they were when it arrived, whatever `update` does meanwhile.
    const current = routing;
    const forwarder = current.forwarders.get(slug);
    if (forwarder === undefined) {
      next(new McpServerNotFoundError(`No MCP server is configured as "${slug.slice(0, 64)}".`));
      return;
    }
    const method = req.method;
    if (method !== 'POST' && method !== 'GET' && method !== 'DELETE') {
      next(new MethodNotAllowedError('MCP servers take GET, POST and DELETE only.'));
      return;
    }
    if (bodyAlreadyRead(req)) {
      if (!warnedAboutParser) {
        warnedAboutParser = true;
        options.logger?.warn(
          { mcpServer: slug },
          'identityForwarding is mounted after a body parser: MCP requests with a body are refused (500 raw_body_unavailable). Mount it before express.json().',
        );
      }
      next(
        new RawBodyUnavailableError(
          'Mount identityForwarding before any body parser such as express.json(): it streams the request body to the MCP server as sent.',
        ),
      );
      return;
    }
    const rest = slash === -1 ? '' : path.slice(slash);
    if (hasDotSegment(rest)) {
      next(new InvalidMcpPathError('The path below the MCP server may not contain "." or ".." segments.'));
      return;
    }
    const identity = req.callerIdentity;
    if (identity === undefined) {
      next(new MissingCredentialsError('No authenticated caller.', { 'www-authenticate': 'Bearer' }));
      return;
    }
    let gate: McpToolGate | undefined;
    if (authorize !== undefined) {
      const access = authorize(identity, slug);
      if (access?.allowed !== true) {
        next(new AccessDeniedError(`The caller may not use MCP server "${slug.slice(0, 64)}".`));
        return;
      }
      // DELETE carries no tools; POST and the GET stream (which replays answers) are inspected.
      gate = method === 'DELETE' ? undefined : access.tools;
    }
    const traceContext = requestTraceContext(req);
    const call = startSpan(TRACER_NAME, `mcp ${slug}`, traceContext, SpanKind.CLIENT, {
      'gateway.mcp_server.slug': slug,
      'server.address': forwarder.server.url.hostname,
      'http.request.method': method,
    });
    const record = locals(res);
    res.once('close', () => {
      setDefinedAttributes(call.span, { 'http.response.status_code': record.upstreamStatus });
      if (record.upstreamStatus === undefined || record.upstreamStatus >= 500)
        call.span.setStatus({ code: SpanStatusCode.ERROR });
      call.span.end();
    });
    // What the gate reads of the client's own headers, before the forwarded ones replace them.
    const client = {
      contentType: req.headers['content-type'],
      contentTypes: req.headersDistinct['content-type']?.length ?? 0,
      mirror: {
        method: req.headersDistinct['mcp-method'],
        name: req.headersDistinct['mcp-name'],
        version: req.headersDistinct['mcp-protocol-version'],
      },
      hasBody: req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined,
    };
    try {
      const headers = signedHeaders(forwarder, req, identity, tokenCache, call.context);
      headers['x-forwarded-for'] = forwardedFor(req, trustedProxies);
      // Answers the gateway reads must come uncompressed.
      if (gate !== undefined) headers['accept-encoding'] = 'identity';
      injectTraceHeaders(call.context, headers);
      req.headers = headers as Request['headers'];
    } catch (error) {
      call.span.setStatus({ code: SpanStatusCode.ERROR });
      next(error);
      return;
    }
    const upstream = forwarder.server.url;
    (req as ProxiedRequest)[UPSTREAM_PATH] =
      `${upstream.pathname}${rest}${upstreamQuery(upstream.search, current.configuredQueryNames.get(slug) as ReadonlySet<string>, query === -1 ? '' : url.slice(query + 1))}`;
    const state: ProxyState = {
      next,
      started: performance.now(),
      timedOut: false,
      span: call.span,
      hasBody: client.hasBody,
    };
    (req as ProxiedRequest)[PROXY_STATE] = state;
    record.target = slug;
    const upstreamConnections = current.proxies.get(slug) as UpstreamConnections;
    const forward = (req: Request, res: Response, next: NextFunction) => upstreamConnections.forward(req, res, next);
    const credentials = upstreamCredentials?.appliesTo(slug) === true ? upstreamCredentials : undefined;
    const proxy =
      credentials === undefined
        ? forward
        : (req: Request, res: Response, next: NextFunction) =>
            withCredential(credentials, identity, slug, req, res, state, () => forward(req, res, next));
    const admission = method === 'POST' ? toolCallAdmission?.(req, res) : undefined;
    if (gate === undefined && admission === undefined) {
      if (credentials !== undefined && method === 'POST' && client.hasBody) {
        // Read whole, to be sent again after a 401 and answered when the credential fails.
        readInspectedBody(req, maxInspectedBodyBytes).then(
          (body) => {
            state.readAhead = body;
            proxy(req, res, next);
          },
          bodyUnread(res, next),
        );
        return;
      }
      if (readAheadLength(req) === undefined) {
        proxy(req, res, next);
        return;
      }
      readInspectedBody(req, MAX_METHOD_SCAN_BYTES).then(
        (body) => {
          state.readAhead = body;
          proxy(req, res, next);
        },
        bodyUnread(res, next),
      );
      return;
    }
    if (gate !== undefined) {
      state.gate = gate;
      state.maxAnswerBytes = maxInspectedAnswerBytes;
    }
    if (method === 'GET') {
      proxy(req, res, next);
      return;
    }
    // A gate or a limit decides on this POST: one strict reading of it decides every check (the
    // gate, the header mirror, the count of tools/call), and what it cannot read is refused, never
    // forwarded unchecked (a media type the server reads, a BOM, a batch over the bound...).
    if (!isUtf8MediaType(parseMediaType(client.contentType), 'application/json') || client.contentTypes > 1) {
      req.resume();
      next(
        new InvalidMcpMessageError(
          'The MCP request body must be of content type application/json, in UTF-8 (no other charset).',
        ),
      );
      return;
    }
    readInspectedBody(req, maxInspectedBodyBytes).then(
      (body) => {
        let read: McpRequestMessages;
        let inspected: InspectedRequest = {};
        try {
          read = readMcpRequest(body);
          if (gate !== undefined) inspected = inspectRequest(read, gate, client.mirror);
        } catch (error) {
          next(error);
          return;
        }
        // Named from this reading: the body is not parsed again to name the call.
        if (body.length <= MAX_METHOD_SCAN_BYTES) nameCall(read.list[0], record, call.span);
        if (inspected.answer !== undefined) {
          // Answered here (a refused call, a header mismatch): the record still names the method and tool.
          res.statusCode = inspected.status ?? 200;
          res.setHeader('content-type', 'application/json');
          res.setHeader('content-length', Buffer.byteLength(inspected.answer));
          res.end(inspected.answer);
          return;
        }
        state.body = body;
        const toolCalls = admission === undefined ? 0 : countToolCalls(read);
        if (toolCalls === 0) {
          proxy(req, res, next);
          return;
        }
        (admission as (toolCalls: number) => Promise<void>)(toolCalls).then(() => proxy(req, res, next), next);
      },
      bodyUnread(res, next),
    );
  };
  return Object.defineProperties(middleware, {
    tokenCache: { value: tokenCache, enumerable: true },
    forwarders: { get: () => routing.forwarders, enumerable: true },
    update: {
      value: (mcpServers: readonly McpServerConfig[]) => {
        routing = build(mcpServers, routing, false);
      },
      enumerable: true,
    },
  }) as IdentityForwardingMiddleware;
}

/**
 * The MCP server's request headers from the forwarder; a `jwt_header` server's token is signed (or
 * read from the cache) in a span of its own, `gateway.identity_token.sign`, whose
 * `gateway.token_cache.hit` says which.
 */
function signedHeaders(
  forwarder: IdentityForwarder,
  req: Request,
  identity: NonNullable<Request['callerIdentity']>,
  tokenCache: IdentityTokenCache,
  parent: Context,
): OutgoingHttpHeaders {
  if (forwarder.server.method !== 'jwt_header') return forwarder.upstreamHeaders(req.headers, identity);
  const { span } = startSpan(TRACER_NAME, 'gateway.identity_token.sign', parent, SpanKind.INTERNAL);
  const hitsBefore = tokenCache.stats.hits;
  try {
    return forwarder.upstreamHeaders(req.headers, identity);
  } catch (error) {
    span.setStatus({ code: SpanStatusCode.ERROR });
    throw error;
  } finally {
    // Signing is synchronous: a hit in between is this call's.
    span.setAttribute('gateway.token_cache.hit', tokenCache.stats.hits > hitsBefore);
    span.end();
  }
}

/**
 * Whether a body parser read the request's body already: the request has one (a length or a
 * chunked body) and the stream is over, or Express's parsers marked it (`req._body`).
 */
function bodyAlreadyRead(req: Request): boolean {
  const length = req.headers['content-length'];
  const hasBody = (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
  return hasBody && (req.readableEnded || (req as Request & { _body?: boolean })._body === true);
}

/**
 * Whether a path has a dot segment (`.` or `..`) as any server might read it: plain or
 * percent-encoded (`%2e`, any case, also double-encoded `%252e`), between `/`, `\` or their
 * encodings (`%2f`, `%5c`), and with `;parameters` removed (`..;x`).
 */
export function hasDotSegment(path: string): boolean {
  let decoded = path;
  for (let i = 0; i < 3 && /%25/i.test(decoded); i++) decoded = decoded.replace(/%25/gi, '%');
  decoded = decoded.replace(/%2e/gi, '.').replace(/%2f|%5c|\\/gi, '/');
  return decoded.split('/').some((segment) => {
    const name = segment.split(';', 1)[0];
    return name === '.' || name === '..';
  });
}

/**
 * The upstream query: the server's configured query (`search` of its `url`, kept as written),
 * then the client's parameters (as the client wrote them) except those whose name, decoded and
 * compared without case, is one of the configured ones; `;` also counts as a separator there.
 */
export function upstreamQuery(configured: string, configuredNames: ReadonlySet<string>, client: string): string {
  let kept = client;
  if (client !== '' && configuredNames.size > 0) {
    kept = client
      .split('&')
      .filter(
        (part) =>
          part !== '' &&
          !part.split(';').some((piece) => {
            for (const name of new URLSearchParams(piece).keys())
              if (configuredNames.has(name.toLowerCase())) return true;
            return false;
          }),
      )
      .join('&');
  }
  const base = configured.startsWith('?') ? configured.slice(1) : configured;
  if (base === '') return kept === '' ? '' : `?${kept}`;
  return kept === '' ? `?${base}` : `?${base}&${kept}`;
}

const IPV4_MAPPED = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i;

function peerAddress(req: IncomingMessage): string {
  const address = req.socket.remoteAddress ?? '';
  return IPV4_MAPPED.exec(address)?.[1] ?? address;
}

function trustedProxyList(list: readonly string[] | undefined): string[] {
  if (list === undefined) return [];
  if (!Array.isArray(list) || list.some((a) => typeof a !== 'string' || isIP(a) === 0)) {
    throw new TypeError('trustedProxies must be a list of IP addresses, for example ["10.0.0.5"].');
  }
  return list.map((a) => IPV4_MAPPED.exec(a)?.[1] ?? a);
}

/**
 * The `x-forwarded-for` the MCP server gets: the address the gateway saw, after the client's own
 * list only when that peer is a trusted proxy.
 */
export function forwardedFor(req: IncomingMessage, trustedProxies: ReadonlySet<string>): string {
  const peer = peerAddress(req);
  const claimed = req.headers['x-forwarded-for'];
  if (claimed === undefined || !trustedProxies.has(peer)) return peer;
  return `${Array.isArray(claimed) ? claimed.join(', ') : claimed}, ${peer}`;
}

/**
 * Hop-by-hop headers (RFC 9110 section 7.6.1): they describe one connection, so the upstream's
 * never reach the client (the client's never reach the upstream: see `createHeaderPolicy`).
 */
const HOP_BY_HOP_RESPONSE_HEADERS: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/**
 * The upstream's response headers without hop-by-hop headers, without the headers its
 * `Connection` names, and without `x-gateway-*`/`x-portkey-*` (the gateway's own request and trace
 * ids stay its own); node:http then writes the client connection's own `Connection` and framing.
 */
export function endToEndResponseHeaders(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const named = new Set(
    String(headers.connection ?? '')
      .split(',')
      .map((n) => n.trim().toLowerCase())
      .filter((n) => n !== ''),
  );
  const out: OutgoingHttpHeaders = {};
  for (const name in headers) {
    if (HOP_BY_HOP_RESPONSE_HEADERS.has(name) || named.has(name)) continue;
    if (name.startsWith('x-gateway-') || name.startsWith('x-portkey-')) continue;
    const value = headers[name];
    if (value !== undefined) out[name] = value;
  }
  return out;
}

/** The answer of an MCP server, from undici (POST) or node:http (GET, DELETE). */
interface UpstreamAnswer {
  statusCode: number;
  headers: IncomingHttpHeaders;
  body: Readable;
}

/** Marks an upstream body the gateway ended on purpose: its `error` then ends nothing else. */
const DISCARDED = Symbol('gateway.discarded');

/** Ends an upstream body on purpose (its error event is then not the client's concern). */
function discard(body: Readable): void {
  (body as Readable & { [DISCARDED]?: boolean })[DISCARDED] = true;
  // Its abort error is expected: heard here, so an answer dropped before anything read it ends nothing.
  if (body.listenerCount('error') === 0) body.on('error', () => undefined);
  body.destroy();
}

/** Whether an upstream body ended on purpose (see {@link discard}). */
function discarded(body: Readable): boolean {
  return (body as Readable & { [DISCARDED]?: boolean })[DISCARDED] === true;
}

/** One server's upstream connections: POSTs through an undici pool, GET and DELETE through http-proxy. */
interface UpstreamConnections {
  /** Sends the prepared request (path, headers and state set by the middleware) and writes the answer. */
  forward(req: Request, res: Response, next: NextFunction): void;
  /** Closes the pool once its requests in flight are over. */
  close(): void;
}

/** Request headers undici refuses to send (it writes its own framing, and `Expect` is not supported). */
const UNDICI_REFUSED_HEADERS: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'upgrade',
  'expect',
  'host',
]);

/**
 * One server's keep-alive connections, built once per server: an undici `Pool` for POSTs (the
 * MCP calls; Node's HTTP client costs about a fifth more CPU per request) and an http-proxy
 * instance for the GET event stream and DELETE.
 */
function createUpstream(url: URL, timeoutMs: number, idleTimeoutMs: number): UpstreamConnections {
  const pool = new Pool(url.origin, {
    connections: 256,
    pipelining: 1,
    keepAliveTimeout: 30_000,
    // The timeout covers connecting too, as it did with node:http.
    connect: { timeout: timeoutMs },
  });
  const proxy = createUpstreamProxy(url, timeoutMs, idleTimeoutMs);
  const post = (req: Request, res: Response): void => {
    const state = (req as ProxiedRequest)[PROXY_STATE] as ProxyState;
    const record = locals(res);
    // Here, just before the body is sent, so the tap sees every chunk.
    tapRpcMethod(req, record, state.span, state.body ?? state.readAhead);
    const headers: Record<string, string | string[]> = {};
    const incoming = req.headers as OutgoingHttpHeaders;
    for (const name in incoming) {
      const value = incoming[name];
      if (value === undefined || UNDICI_REFUSED_HEADERS.has(name)) continue;
      headers[name] = typeof value === 'number' ? String(value) : value;
    }
    let body: Buffer | Readable | undefined;
    if (state.body !== undefined) {
      // The stream was read for inspection: its bytes go as read, as the JSON the gate read (it
      // checked the client's type said just that).
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(state.body.length);
      body = state.body;
    } else if (state.readAhead !== undefined) {
      // Read whole as the client sent it (its declared length): its own headers, content type included.
      headers['content-length'] = String(state.readAhead.length);
      body = state.readAhead;
    } else if (state.hasBody) {
      // As the client sent it; without a forwarded `content-length`, undici sends it chunked.
      body = req;
      // The tap's listener set the stream flowing: it waits for undici, which resumes it once the
      // request is on a connection.
      req.pause();
    }
    const abort = new UpstreamAbort();
    res.once('close', () => {
      if (!res.writableFinished) abort.abort();
    });
    const send = (): void => {
      pool
        .request({
          path: (req as ProxiedRequest)[UPSTREAM_PATH] as string,
          method: 'POST',
          headers,
          body,
          // The timeout covers waiting for the response headers; a stream may then last (the idle
          // timeout between chunks is the gateway's own, see writeAnswer).
          headersTimeout: timeoutMs,
          bodyTimeout: 0,
          signal: abort,
        })
        .then(
          (answer) => {
            if (abort.aborted) {
              discard(answer.body);
              return;
            }
            const rejected = state.credential?.rejected;
            if (answer.statusCode === 401 && rejected !== undefined && Buffer.isBuffer(body)) {
              // The server refused its credential: renewed once and sent once more; a second
              // refusal ends it, and the caller is told what to do (never the server's challenge).
              discard(answer.body);
              const final = state.retried === true;
              state.retried = true;
              rejected(final).then(
                (renewed) => {
                  if (abort.aborted) return;
                  state.credential = renewed;
                  setCredentialHeaders(headers, renewed);
                  send();
                },
                (error: unknown) => credentialFailed(error, req, res, state),
              );
              return;
            }
            writeAnswer(
              { statusCode: answer.statusCode, headers: answer.headers as IncomingHttpHeaders, body: answer.body },
              res,
              state,
              idleTimeoutMs,
            );
          },
          (error: NodeJS.ErrnoException) => {
            if (abort.aborted || res.headersSent || res.destroyed) {
              res.destroy();
              return;
            }
            state.next(mapUpstreamError(error, false));
          },
        );
    };
    send();
  };
  return {
    forward(req, res, next) {
      if (req.method === 'POST') post(req, res);
      else proxy(req, res, next);
    },
    close() {
      pool.close().catch(() => undefined);
    },
  };
}

/**
 * Writes an MCP server's answer to the client: through the tool gate when one applies, else as it
 * streams, with end-to-end headers only. Silence between two body chunks longer than the idle
 * timeout ends both connections, except on a `subscriptions/listen` stream (MCP 2026-07-28),
 * which lasts while the server keeps it open: it ends when either side closes, and TCP keep-alive
 * on the upstream connection finds a server that went away. A listen answer is never held to be
 * sent whole, whatever its content type (some servers answer it with newline-delimited JSON).
 */
function writeAnswer(answer: UpstreamAnswer, response: ServerResponse, state: ProxyState, idleTimeoutMs: number): void {
  const record = locals(response);
  const body = answer.body;
  const rejected = state.credential?.rejected;
  if (answer.statusCode === 401 && rejected !== undefined) {
    // A GET or DELETE the server refused its credential for: renewed for the next call (a refusal
    // of the renewal ends the connection, and the next POST says how to connect again).
    record.upstreamStatus = 401;
    discard(body);
    rejected(false).catch(() => undefined);
    state.next(new StreamNeedsConnectionError('The MCP server refused the credential; try again.'));
    return;
  }
  record.upstreamStatus = answer.statusCode;
  record.upstreamMs = performance.now() - state.started;
  // An error of the upstream body ends the client connection, unless the gateway ended it itself.
  body.on('error', () => {
    if (!discarded(body)) response.destroy();
  });
  if (response.headersSent || response.destroyed) {
    discard(body);
    return;
  }
  const idle =
    record.mcpMethod === LISTEN_METHOD
      ? undefined
      : setTimeout(function mcpStreamIdle() {
          record.streamIdleTimeout = true;
          discard(body);
          response.destroy();
        }, idleTimeoutMs);
  body.on('data', () => {
    record.firstByteAt ??= performance.now();
    idle?.refresh();
  });
  body.once('close', () => clearTimeout(idle));
  response.once('close', () => clearTimeout(idle));
  // A listen answer lasts whatever its content type (newline-delimited JSON too): never held.
  const listen = record.mcpMethod === LISTEN_METHOD;
  if (state.gate !== undefined) {
    gateAnswer(answer, response, state, listen);
    return;
  }
  const eventStream = String(answer.headers['content-type'] ?? '').startsWith('text/event-stream');
  if (!eventStream && !listen && Number(answer.headers['content-length'] ?? 0) <= MAX_WHOLE_ANSWER_BYTES) {
    sendWhole(answer, response);
    return;
  }
  response.writeHead(answer.statusCode, endToEndResponseHeaders(answer.headers));
  // An event stream may stay quiet for long: its headers leave now, not with its first event.
  if (eventStream || listen) response.flushHeaders();
  body.pipe(response);
}

/**
 * Sends an answer that is not an event stream (a JSON-RPC response, an error) whole once it has
 * arrived, with its length: headers and body leave in one write, where piping takes a write per
 * chunk and one more at the end (a JSON-RPC response is of no use to a client before its last
 * byte). One that grows past {@link MAX_WHOLE_ANSWER_BYTES} is written as it stands and piped
 * from there; so is one without a length that has not ended {@link MAX_WHOLE_HOLD_MS} after its
 * headers (newline-delimited JSON that lasts, see {@link holdBriefly}).
 */
function sendWhole(answer: UpstreamAnswer, response: ServerResponse): void {
  const whole = (bytes: Buffer) => {
    if (response.destroyed) return;
    const headers = endToEndResponseHeaders(answer.headers);
    // No length on an answer that may not have one (RFC 9110, 8.6).
    if (answer.statusCode !== 204 && answer.statusCode !== 304) headers['content-length'] = bytes.length;
    response.writeHead(answer.statusCode, headers).end(bytes);
  };
  const stream = (held: Buffer[]) => {
    if (response.destroyed) {
      discard(answer.body);
      return;
    }
    response.writeHead(answer.statusCode, endToEndResponseHeaders(answer.headers));
    if (held.length === 0) response.flushHeaders();
    for (const part of held) response.write(part);
    answer.body.pipe(response);
  };
  if (answer.headers['content-length'] !== undefined) holdWhole(answer.body, MAX_WHOLE_ANSWER_BYTES, whole, stream);
  else holdBriefly(answer.body, MAX_WHOLE_ANSWER_BYTES, whole, stream);
}

/**
 * How long an answer without a length (not an event stream) is held to be sent whole, from its
 * headers: 250 ms. One that has not ended by then (newline-delimited JSON that lasts) is passed
 * on as it arrives, or, under a tool gate, read and written message by message.
 */
const MAX_WHOLE_HOLD_MS = 250;

/**
 * {@link holdWhole} for an answer without a length, which may never end (JSON-RPC messages as
 * newline-delimited JSON that the server keeps sending): held at most
 * {@link MAX_WHOLE_HOLD_MS}. When it has not ended by then, `stream` gets what was held (possibly
 * nothing) and the rest is the caller's to pass on as it arrives; a JSON-RPC response, which ends
 * within a few reads, is still sent whole.
 */
function holdBriefly(
  body: Readable,
  maxBytes: number,
  whole: (bytes: Buffer) => void,
  stream: (held: Buffer[]) => void,
): void {
  const chunks: Buffer[] = [];
  let size = 0;
  const stop = () => {
    body.off('data', hold);
    body.off('end', end);
    clearTimeout(unended);
  };
  const release = () => {
    stop();
    if (!body.destroyed) stream(chunks);
  };
  const hold = (chunk: Buffer) => {
    size += chunk.length;
    chunks.push(chunk);
    if (size > maxBytes) release();
  };
  const end = () => {
    stop();
    whole(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks));
  };
  const unended = setTimeout(release, MAX_WHOLE_HOLD_MS);
  body.on('data', hold);
  body.once('end', end);
  body.once('close', () => clearTimeout(unended));
}

/** One http-proxy-middleware instance per server (GET and DELETE), with keep-alive connections. */
function createUpstreamProxy(url: URL, timeoutMs: number, idleTimeoutMs: number): RequestHandler {
  const agent =
    url.protocol === 'https:'
      ? new HttpsAgent({ keepAlive: true, maxSockets: 256 })
      : new HttpAgent({ keepAlive: true, maxSockets: 256 });
  return createProxyMiddleware<Request, Response>({
    // Parsed once here, as http-proxy would parse the string again on every request (legacy
    // `url.parse`, ~9 µs of CPU a request in a profile of MCP tools/call).
    target: parseLegacyUrl(url.origin),
    changeOrigin: true,
    agent,
    // The response is written here (proxyRes below): the proxy's own copy would pass hop-by-hop
    // headers on and add a `Connection` of its own.
    selfHandleResponse: true,
    pathRewrite: (_path, req) => (req as ProxiedRequest)[UPSTREAM_PATH] as string,
    on: {
      proxyReq: (proxyReq: ClientRequest, req, res) => {
        const state = (req as ProxiedRequest)[PROXY_STATE] as ProxyState;
        // The timeout covers waiting for the response headers; a stream may then last.
        const timer = setTimeout(() => {
          state.timedOut = true;
          proxyReq.destroy(new Error('upstream timeout'));
        }, timeoutMs);
        proxyReq.once('response', () => clearTimeout(timer));
        proxyReq.once('close', () => clearTimeout(timer));
        res.once('close', () => {
          if (!res.writableFinished) proxyReq.destroy();
        });
      },
      proxyRes: (proxyRes, req, res) => {
        const state = (req as ProxiedRequest)[PROXY_STATE] as ProxyState;
        writeAnswer(
          { statusCode: proxyRes.statusCode ?? 502, headers: proxyRes.headers, body: proxyRes },
          res as ServerResponse,
          state,
          idleTimeoutMs,
        );
      },
      error: (error, req, res) => {
        const state = (req as ProxiedRequest)[PROXY_STATE];
        const response = res as ServerResponse;
        if (!state || typeof response.writeHead !== 'function') {
          (res as { destroy?: () => void }).destroy?.();
          return;
        }
        if (response.headersSent || response.destroyed) {
          response.destroy();
          return;
        }
        state.next(mapUpstreamError(error as NodeJS.ErrnoException, state.timedOut));
      },
    },
  }) as unknown as RequestHandler;
}

/** Sets a server credential's headers on the upstream request, over any of the same name. */
function setCredentialHeaders(headers: OutgoingHttpHeaders, credential: UpstreamCredential): void {
  for (const [name, value] of Object.entries(credential.headers)) headers[name.toLowerCase()] = value;
}

/**
 * Sends a call with its server credential: at once when the source holds it, else once it has
 * it; a source's refusal is answered by {@link credentialFailed}.
 */
function withCredential(
  source: UpstreamCredentialSource,
  identity: GatewayIdentity,
  slug: string,
  req: Request,
  res: Response,
  state: ProxyState,
  send: () => void,
): void {
  const apply = (credential: UpstreamCredential): void => {
    if (res.destroyed) return;
    state.credential = credential;
    setCredentialHeaders(req.headers as OutgoingHttpHeaders, credential);
    send();
  };
  const failed = (error: unknown): void => credentialFailed(error, req, res, state);
  let credential: UpstreamCredential | Promise<UpstreamCredential>;
  try {
    credential = source.credential(identity, slug);
  } catch (error) {
    failed(error);
    return;
  }
  if (typeof (credential as Promise<UpstreamCredential>).then === 'function')
    (credential as Promise<UpstreamCredential>).then(apply, failed);
  else apply(credential as UpstreamCredential);
}

/**
 * Answers a call whose server credential failed: a POST with its JSON-RPC form, one error per
 * request of the body (HTTP 200; `202` for notifications only); a GET or DELETE for want of a
 * connection with `405`; anything else with the error itself.
 */
function credentialFailed(error: unknown, req: Request, res: ServerResponse, state: ProxyState): void {
  if (res.headersSent || res.destroyed) {
    res.destroy();
    return;
  }
  if (hasJsonRpcForm(error)) {
    if (req.method !== 'POST') {
      state.next(
        error.code === CONNECTION_REQUIRED_CODE
          ? new StreamNeedsConnectionError('Connect this MCP server first: the next request says how.')
          : error,
      );
      return;
    }
    const body = state.body ?? state.readAhead;
    if (body !== undefined) {
      let read: McpRequestMessages;
      try {
        read = readMcpRequest(body);
      } catch (unreadable) {
        state.next(unreadable);
        return;
      }
      const answer = credentialErrorAnswer(read, error.jsonRpc);
      locals(res).upstreamCredentialError = error.code;
      if (answer === undefined) {
        res.statusCode = 202;
        res.end();
        return;
      }
      res.statusCode = 200;
      res.setHeader('content-type', 'application/json');
      res.setHeader('content-length', Buffer.byteLength(answer));
      res.end(answer);
      return;
    }
  }
  state.next(error);
}

/** The one place where MCP upstream failures become gateway errors: timeout → 504, anything else → 502. */
export function mapUpstreamError(error: NodeJS.ErrnoException, timedOut: boolean): Error {
  const code = error.code;
  if (timedOut || code === 'ETIMEDOUT' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT')
    return new UpstreamTimeoutError('The MCP server did not answer in time.');
  return new UpstreamUnreachableError('The MCP server could not be reached.');
}

/** Reads a request body of at most `limit` bytes (`413 body_too_large` past it). */
function readInspectedBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume();
    return Promise.reject(new McpBodyTooLargeError(`The MCP request body is larger than ${limit} bytes.`));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.off('data', onData);
        req.resume();
        reject(new McpBodyTooLargeError(`The MCP request body is larger than ${limit} bytes.`));
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => resolve(Buffer.concat(chunks)));
    req.once('error', reject);
  });
}

/**
 * What follows a request body that could not be read whole: a body over the bound is refused
 * (`413 mcp_body_too_large`); a client that left before its body was whole is dropped quietly
 * (nothing to send, no one to answer, nothing for the host to log as an unhandled error).
 */
function bodyUnread(res: ServerResponse, next: NextFunction): (error: unknown) => void {
  return (error) => {
    if (error instanceof McpBodyTooLargeError) next(error);
    else res.destroy();
  };
}

/** Refuses the answer being read: 502 when nothing was sent yet, else the client connection ends. */
function refuseAnswer(body: Readable, response: ServerResponse, state: ProxyState, message: string): void {
  discard(body);
  if (response.headersSent || response.destroyed) response.destroy();
  else state.next(new UpstreamInvalidResponseError(message));
}

/**
 * Writes an MCP server's answer through the tool gate, failing closed: a JSON answer is read
 * whole (at most `maxAnswerBytes`) and written with only allowed tools, unless it answers a
 * `subscriptions/listen` or has no length and has not ended {@link MAX_WHOLE_HOLD_MS} after its
 * headers (newline-delimited JSON that lasts): it is then
 * read message by message ({@link JsonLinesToolFilter}), each written as it completes, and one it
 * cannot read ends it; an event stream is read
 * event by event and written again as it arrives (an event it cannot read ends it); an answer
 * of any other content type passes only when it is empty. A compressed answer with a body is
 * refused (502).
 */
function gateAnswer(answer: UpstreamAnswer, response: ServerResponse, state: ProxyState, listen: boolean): void {
  const gate = state.gate as McpToolGate;
  const proxyRes = answer.body;
  const type = parseMediaType(answer.headers['content-type']);
  const encoding = String(answer.headers['content-encoding'] ?? 'identity').toLowerCase();
  const headers = endToEndResponseHeaders(answer.headers);
  const status = answer.statusCode;
  const identity = encoding === 'identity';
  if (identity && isUtf8MediaType(type, 'text/event-stream')) {
    streamEvents(proxyRes, response, status, headers, gate);
    return;
  }
  const isJson = identity && isUtf8MediaType(type, 'application/json');
  const chunks: Buffer[] = [];
  let size = 0;
  // A JSON listen answer, or one without a length that has not ended in MAX_WHOLE_HOLD_MS
  // (newline-delimited JSON that lasts), is read and written message by message.
  let lines: JsonLinesToolFilter | undefined;
  const byMessage = () => {
    if (response.headersSent || response.destroyed || proxyRes.destroyed) return;
    lines = new JsonLinesToolFilter(gate, state.maxAnswerBytes as number);
    delete headers['content-length'];
    response.writeHead(status, headers);
    response.flushHeaders();
    for (const chunk of chunks.splice(0)) writeMessages(chunk);
  };
  const unended =
    isJson && !listen && answer.headers['content-length'] === undefined
      ? setTimeout(byMessage, MAX_WHOLE_HOLD_MS)
      : undefined;
  const writeMessages = (chunk: Buffer) => {
    let messages: Buffer[];
    try {
      messages = (lines as JsonLinesToolFilter).push(chunk);
    } catch {
      discard(proxyRes);
      response.destroy();
      return;
    }
    for (const message of messages) response.write(message);
  };
  if (isJson && listen) byMessage();
  proxyRes.once('close', () => clearTimeout(unended));
  proxyRes.on('data', (chunk: Buffer) => {
    if (chunk.length === 0 || response.destroyed) return;
    if (lines !== undefined) {
      writeMessages(chunk);
      return;
    }
    if (!isJson) {
      refuseAnswer(
        proxyRes,
        response,
        state,
        identity
          ? 'The MCP server answered with a content type other than application/json or text/event-stream (in UTF-8); the gateway cannot read it.'
          : 'The MCP server answered compressed; the gateway cannot read it.',
      );
      return;
    }
    size += chunk.length;
    if (size > (state.maxAnswerBytes as number)) {
      refuseAnswer(proxyRes, response, state, 'The MCP server answered with more than the gateway reads.');
      return;
    }
    chunks.push(chunk);
  });
  proxyRes.once('end', () => {
    clearTimeout(unended);
    if (lines !== undefined) {
      try {
        lines.end();
        response.end();
      } catch {
        response.destroy();
      }
      return;
    }
    if (response.headersSent || response.destroyed) return;
    let body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
    if (body.length > 0) {
      try {
        body = filterJsonBytes(body, gate);
      } catch (error) {
        state.next(error);
        return;
      }
    }
    delete headers['content-length'];
    if (body.length > 0 || answer.headers['content-length'] !== undefined) headers['content-length'] = body.length;
    response.writeHead(status, headers);
    response.end(body);
  });
}

/** An event stream, read and written again event by event through the gate; an event it cannot read ends it. */
function streamEvents(
  proxyRes: Readable,
  response: ServerResponse,
  status: number,
  headers: OutgoingHttpHeaders,
  gate: McpToolGate,
): void {
  delete headers['content-length'];
  response.writeHead(status, headers);
  // An event stream may stay quiet for long: its headers leave now, not with its first event.
  response.flushHeaders();
  const filter = new SseToolFilter(gate);
  const fail = () => {
    discard(proxyRes);
    response.destroy();
  };
  proxyRes.on('data', (chunk: Buffer) => {
    let text: string;
    try {
      text = filter.push(chunk);
    } catch {
      fail();
      return;
    }
    if (text !== '') response.write(text);
  });
  proxyRes.once('end', () => {
    try {
      response.end(filter.end());
    } catch {
      fail();
    }
  });
  response.once('close', () => {
    if (!upstreamComplete(proxyRes)) discard(proxyRes);
  });
}

/** Whether an upstream body was received whole (node:http's `complete`; undici's body once it ended). */
function upstreamComplete(body: Readable): boolean {
  const complete = (body as Partial<IncomingMessage>).complete;
  return complete ?? body.readableEnded;
}

import type { NextFunction, Request, Response } from 'express';
import {
  AccessDeniedError,
  IdentityTokenCache,
  InvalidMcpMessageError,
  InvalidMcpPathError,
  McpServerNotFoundError,
  MethodNotAllowedError,
  MissingCredentialsError,
  RawBodyUnavailableError,
  type McpServerConfig,
} from '@gw/identity-forwarding/identity';
import {
  SpanKind,
  SpanStatusCode,
  injectTraceHeaders,
  requestTraceContext,
  setDefinedAttributes,
  startSpan,
} from '@gw/tracing';
import {
  countToolCalls,
  inspectRequest,
  isUtf8MediaType,
  parseMediaType,
  readMcpRequest,
  type InspectedRequest,
  type McpRequestMessages,
  type McpToolGate,
} from '../gate/tool-gate';
import { withCredential } from './call-credentials';
import { nameCall } from './call-naming';
import { forwardedFor } from './forwarded-for';
import { signedHeaders } from './identity-headers';
import { readProxyOptions, type IdentityForwardingMiddleware, type IdentityForwardingOptions } from './options';
import { PROXY_STATE, TRACER_NAME, UPSTREAM_PATH, locals, type ProxiedRequest, type ProxyState } from './proxy-state';
import {
  MAX_METHOD_SCAN_BYTES,
  bodyAlreadyRead,
  bodyUnread,
  handedBody,
  readAheadLength,
  readInspectedBody,
} from './request-body';
import { hasDotSegment, upstreamQuery } from './request-path';
import { buildRouting, type Routing, type RoutingSettings } from './routing';
import type { UpstreamConnections } from './upstream-connections';

/**
 * The MCP gateway, mounted by the host at `/mcp` after `authenticate`: `/mcp/<slug>[/rest][?query]`
 * goes to the server's `url` + rest + query, with the client's headers filtered and the caller's
 * identity added as the server's `user_identity_forwarding` says. Streamable HTTP POST, GET and
 * DELETE; responses (SSE included) stream through unbuffered; a client that disconnects aborts
 * the upstream request. Every option is validated here, when the factory is called.
 */
export function identityForwarding(options: IdentityForwardingOptions): IdentityForwardingMiddleware {
  const {
    toolCallAdmission,
    upstreamCredentials,
    authorize,
    maxInspectedBodyBytes,
    maxInspectedAnswerBytes,
    timeoutMs,
    streamIdleTimeoutMs,
    trustedProxies,
    tokenCacheSize,
  } = readProxyOptions(options);
  const tokenCache = new IdentityTokenCache({ maxSize: tokenCacheSize, now: options.now });
  const routingSettings: RoutingSettings = {
    signer: options.signer,
    acceptsIdentityTokens: options.acceptsIdentityTokens ?? false,
    tokenCache,
    logger: options.logger,
    timeoutMs,
    streamIdleTimeoutMs,
  };
  const build = (mcpServers: readonly McpServerConfig[], previous: Routing | undefined, warn: boolean): Routing =>
    buildRouting(mcpServers, previous, warn, routingSettings);
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
    // A body the host read itself and handed over (MCP_REQUEST_BODY, in process only) is used
    // instead of the stream; any other request whose body was read already is refused.
    const handed = method === 'POST' ? handedBody(req) : undefined;
    if (handed === undefined && bodyAlreadyRead(req)) {
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
      hasBody:
        handed !== undefined ||
        req.headers['content-length'] !== undefined ||
        req.headers['transfer-encoding'] !== undefined,
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
      if (handed !== undefined) {
        // Sent as handed over, whatever its length: the stream it came from is consumed.
        state.readAhead = handed;
        proxy(req, res, next);
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

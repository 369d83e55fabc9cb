/**
 * Virtual MCP servers (CONTRACT section 16), served by the gateway itself at `/mcp/<virtual>`.
 *
 * The gateway answers as an MCP server with the official SDK (`Server` and a
 * `StreamableHTTPServerTransport`: a new pair per request; a session is a token the client carries,
 * checked here, so any instance serves it: `virtual-sessions.ts`) and reaches each member
 * as an MCP SDK `Client` through the member's own endpoint, `/mcp/<member>` of this same gateway,
 * with the caller's own credentials. So every check of a member (authentication, policies, the tool
 * gate, pinning, limits, identity forwarding, upstream credentials, request records) is the one its
 * own endpoint applies: implemented once. The merge and the routing back are the core's
 * (`VirtualMembers` of `@gw/mcp-gateway`).
 *
 * Beside this handler: the member clients kept per caller (`virtual-member-clients.ts`), the
 * `GET` streams of list changes (`virtual-list-streams.ts`), calls and lists handed in process to
 * the members' endpoint (`virtual-fast-call.ts`, `virtual-fast-list.ts`), members' requests
 * relayed to the caller (`virtual-relay.ts`) and session tokens (`virtual-sessions.ts`).
 */
import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { DEFAULT_REQUEST_TIMEOUT_MSEC } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import {
  CallToolRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  LATEST_PROTOCOL_VERSION,
  SUPPORTED_PROTOCOL_VERSIONS,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  type CallToolResult,
  type GetPromptResult,
  type Progress,
  type Prompt,
  type ReadResourceResult,
  type Resource,
  type ResourceTemplate,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { AccessDeniedError, type GatewayIdentity } from '@gw/identity-forwarding';
import {
  inspectRequest,
  listAllPages,
  MAX_MEMBER_LIST_PAGES,
  VirtualMembers,
  type ListPage,
  type McpAccess,
  type McpToolGate,
  type MergeReports,
  type ResolvedVirtualServer,
} from '@gw/mcp-gateway';
import { z } from 'zod';
import type { Logger } from 'pino';
import type { NodeMiddleware } from '../http/route-table';
import {
  endpointFailure,
  fastCallHeaders,
  planFastCall,
  serveFastCall,
  UPSTREAM_UNAVAILABLE,
} from './virtual-fast-call';
import { InProcessLister, planFastList, serveFastList } from './virtual-fast-list';
import {
  LIST_CHANGED,
  ListChangedStreams,
  type ListenedMember,
  type ListenSubscription,
  type VirtualStreamLimits,
} from './virtual-list-streams';
import { virtualServerMarker } from './virtual-marker';
import {
  CALLER_HEADERS,
  MemberClients,
  MemberConnections,
  PER_REQUEST_HEADERS,
  pickHeaders,
} from './virtual-member-clients';
import { answersIn, callsTools, relayedCapabilities, RelayedRequests, type RelayAnswerEvents } from './virtual-relay';
import {
  VIRTUAL_SESSION_TTL_MS,
  VirtualSessionTokens,
  type VirtualSession,
  type VirtualSessionEvents,
} from './virtual-sessions';

/** MCP's JSON-RPC error for a resource no member offers (`resources/read`): -32002. */
export const RESOURCE_NOT_FOUND = -32002;

/** The JSON-RPC `data.code` of a call whose member did not answer (CONTRACT section 16). */
export { UPSTREAM_UNAVAILABLE } from './virtual-fast-call';

/**
 * The abort listeners a member's list may add to its signal: one per page (at most
 * `MAX_MEMBER_LIST_PAGES`) and a few for the connection. Node warns past 10.
 */
export const LIST_SIGNAL_LISTENERS = MAX_MEMBER_LIST_PAGES + 8;

/** What the virtual servers' handler needs from the gateway. */
export interface VirtualServersOptions {
  /**
   * The virtual servers of the moment, by slug (the config file's and the catalog's), read on each
   * request: an admin API change applies to the next request. Required.
   */
  servers: () => ReadonlyMap<string, ResolvedVirtualServer>;
  /**
   * The gateway's own address (`http://127.0.0.1:<port>`), where members' endpoints are reached;
   * undefined until the gateway listens (a call then fails with `-32603`).
   */
  selfUrl: () => string | undefined;
  logger: Logger;
  /** Counts a member left out of a merged list (`gateway_virtual_member_unavailable_total{server}`). */
  onMemberUnavailable: (server: string) => void;
  /**
   * The access decision of the members' own endpoints (access mode `policies`): a caller allowed
   * none of a virtual server's members is answered `403 access_denied`. Default: every caller.
   */
  authorize?: (identity: GatewayIdentity, server: string) => McpAccess | undefined;
  /**
   * The key that authenticates session ids (32 bytes), the same on every instance: the catalog's,
   * derived from `GATEWAY_ENCRYPTION_KEY`. Default: 32 random bytes of this process (a session is
   * then served by the instance that began it only).
   */
  sessionKey?: Buffer;
  /** Where an ended session is told to every instance (the catalog database's `NOTIFY`). Default: this instance only. */
  sessionEvents?: VirtualSessionEvents;
  /** Bounds of the `GET` streams. Default {@link VIRTUAL_STREAM_LIMITS}. */
  streamLimits?: Partial<VirtualStreamLimits>;
  /**
   * The members' own endpoint in this process (the MCP proxy, `identityForwarding`, which serves
   * `req.url` = `/<member>`): a call routed to a member is handed to it in process
   * (`virtual-fast-call.ts`). Default: none (every call takes the SDK path over loopback).
   */
  memberEndpoint?: NodeMiddleware;
  /** How long a member's request relayed to the caller waits for the answer, in ms. Default `RELAY_TIMEOUT_MS` (120 s). */
  relayTimeoutMs?: number;
  /** Where a caller's answer to a relayed request reaches the instance that waits (the catalog database's `NOTIFY`). Default: this instance only. */
  relayEvents?: RelayAnswerEvents;
}

/**
 * A JSON-RPC error the SDK `Server` answers as it is: `code`, `message` and `data`. (An SDK
 * `McpError` would add "MCP error <code>: " to the message, once more for each hop.)
 */
export class JsonRpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

/** The `error.code` of a gateway error answer (CONTRACT section 7) in an SDK error's message, if any. */
function gatewayErrorCode(error: StreamableHTTPError): string | undefined {
  const start = error.message.indexOf('{');
  if (start === -1) return undefined;
  try {
    const code = (JSON.parse(error.message.slice(start)) as { error?: { code?: unknown } }).error?.code;
    return typeof code === 'string' ? code : undefined;
  } catch {
    return undefined;
  }
}

/**
 * What a member's failure becomes for the caller: the member's own JSON-RPC error as it is (a
 * refused tool, an unknown tool), else `-32603` with `data.code: "upstream_unavailable"` when the
 * member did not answer (or answered 5xx), else `-32603` with the gateway error's code.
 */
export function memberFailure(server: string, error: unknown): JsonRpcError {
  if (error instanceof McpError && error.code !== ErrorCode.RequestTimeout && error.code !== ErrorCode.ConnectionClosed)
    return new JsonRpcError(error.code, error.message.replace(/^MCP error -?\d+: /, ''), error.data);
  // The member endpoint's answer status, when it answered: mapped as for a call handed in process.
  const status = error instanceof StreamableHTTPError ? error.code : undefined;
  const failure = endpointFailure(
    server,
    status,
    status !== undefined && status < 500 ? gatewayErrorCode(error as StreamableHTTPError) : undefined,
  );
  return new JsonRpcError(failure.code, failure.message, failure.data);
}

/**
 * The member that owns a name (or URI) by `route`; one not known here yet (listed for another
 * caller, or never) is routed again after `relist` asks the members as this caller: the caller's
 * own lists decide. Undefined when no member offers it.
 */
async function routeAfterListing<T>(
  route: () => T | undefined,
  relist: () => Promise<unknown>,
): Promise<T | undefined> {
  const known = route();
  if (known !== undefined) return known;
  await relist();
  return route();
}

/**
 * What a virtual server offers: tools, prompts and resources, and their list changes (passed on to
 * a session's `GET` stream from its members).
 */
const VIRTUAL_CAPABILITIES = {
  tools: { listChanged: true },
  prompts: { listChanged: true },
  resources: { listChanged: true },
};

/** What a 2026-07-28 client is told (`server/discover`): the same (list changes through `subscriptions/listen`). */
const DISCOVERED_CAPABILITIES = VIRTUAL_CAPABILITIES;

/** The stateless protocol revision a virtual server serves beside the SDK's (CONTRACT section 12). */
export const MODERN_REVISION = '2026-07-28';

/** Where a 2026-07-28 request names its revision in the body. */
const META_VERSION = 'io.modelcontextprotocol/protocolVersion';

/** `server/discover` (MCP 2026-07-28): what the server is, instead of an `initialize` handshake. */
const DiscoverRequestSchema = z.object({ method: z.literal('server/discover'), params: z.optional(z.looseObject({})) });

/** A gate that lets every tool through: the virtual server checks the mirror headers only (members gate their tools). */
const EVERY_TOOL: McpToolGate = { listed: () => 'allowed', called: () => 'allowed', namesOnly: true };

/** Whether a request is of revision 2026-07-28 or later: its `MCP-Protocol-Version`, or its body's `_meta`. */
function isModern(req: IncomingMessage, body: unknown): boolean {
  const later = (value: unknown) =>
    typeof value === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(value) && value >= MODERN_REVISION;
  if ((req.headersDistinct['mcp-protocol-version'] ?? []).some(later)) return true;
  return (Array.isArray(body) ? (body as unknown[]) : [body]).some((message) =>
    later((message as { params?: { _meta?: Record<string, unknown> } } | null)?.params?._meta?.[META_VERSION]),
  );
}

/**
 * The caller's `_meta` as a member is sent it: without the request metadata of revision 2026-07-28
 * (`io.modelcontextprotocol/…`: the member client speaks its own revision) and without the
 * caller's `progressToken` (the member client asks for progress under its own); undefined when
 * nothing is left.
 */
function memberMeta(meta: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (meta === undefined) return undefined;
  const kept = Object.entries(meta).filter(
    ([key]) => key !== 'progressToken' && !key.startsWith('io.modelcontextprotocol/'),
  );
  return kept.length === 0 ? undefined : Object.fromEntries(kept);
}

/** The `protocolVersion` and `capabilities` of an `initialize` request, or undefined for any other message. */
function initializeParams(
  body: unknown,
): { protocolVersion: string; capabilities: Record<string, unknown> } | undefined {
  const message = body as { method?: unknown; params?: { protocolVersion?: unknown; capabilities?: unknown } } | null;
  if (message === null || typeof message !== 'object' || message.method !== 'initialize') return undefined;
  const capabilities = message.params?.capabilities;
  return {
    protocolVersion: typeof message.params?.protocolVersion === 'string' ? message.params.protocolVersion : '',
    capabilities:
      typeof capabilities === 'object' && capabilities !== null && !Array.isArray(capabilities)
        ? (capabilities as Record<string, unknown>)
        : {},
  };
}

/** The subscription of a `subscriptions/listen` request (one message, with an id), or undefined for any other. */
function listenSubscription(body: unknown): ListenSubscription | undefined {
  const message = body as { id?: unknown; method?: unknown; params?: { notifications?: unknown } } | null;
  if (message === null || typeof message !== 'object' || Array.isArray(message)) return undefined;
  if (message.method !== 'subscriptions/listen') return undefined;
  if (typeof message.id !== 'string' && typeof message.id !== 'number') return undefined;
  const asked = message.params?.notifications;
  const notifications: ListenSubscription['notifications'] = {};
  if (typeof asked === 'object' && asked !== null)
    for (const [, , flag] of LIST_CHANGED) notifications[flag] = (asked as Record<string, unknown>)[flag] === true;
  return { id: message.id, notifications };
}

/** Answers a JSON-RPC error with no id, as the SDK's transport answers one about the request itself. */
function answerJson(res: ServerResponse, status: number, code: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code, message } }));
}

/** Sets a request header as the SDK's transport reads it (from `rawHeaders`, through its Node adapter). */
function setHeader(req: IncomingMessage, name: string, value: string): void {
  req.headers[name] = value;
  for (let i = 0; i < req.rawHeaders.length; i += 2)
    if (req.rawHeaders[i]?.toLowerCase() === name) req.rawHeaders[i + 1] = value;
}

/** The largest request body a virtual server reads: 4 MB, as the SDK's transport. */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;

/** The JSON-RPC error of a body over {@link MAX_BODY_BYTES} (answered `413`). */
const PAYLOAD_TOO_LARGE = -32000;

/**
 * The request's JSON body, read here so that the answer's form can follow it (`body` undefined
 * for an empty one), with its bytes (`raw`). A body that is not JSON is the JSON-RPC parse error (`-32700`), one over
 * {@link MAX_BODY_BYTES} `-32000`, both answered before the SDK sees them.
 */
function readJsonBody(req: IncomingMessage): Promise<JsonRpcError | { raw: Buffer; body: unknown }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        req.removeAllListeners('data');
        req.resume();
        resolve(new JsonRpcError(PAYLOAD_TOO_LARGE, `Parse error: the body is over ${MAX_BODY_BYTES} bytes.`));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (size > MAX_BODY_BYTES) return;
      const raw = Buffer.concat(chunks);
      const text = raw.toString('utf8');
      if (text.trim() === '') return resolve({ raw, body: undefined });
      try {
        resolve({ raw, body: JSON.parse(text) as unknown });
      } catch {
        resolve(new JsonRpcError(ErrorCode.ParseError, 'Parse error: the body is not JSON.'));
      }
    });
    req.on('error', reject);
  });
}

/** Whether a request (or one of a batch) asks for progress notifications (`params._meta.progressToken`). */
function asksProgress(body: unknown): boolean {
  const messages = Array.isArray(body) ? (body as unknown[]) : [body];
  return messages.some(
    (message) =>
      (message as { params?: { _meta?: { progressToken?: unknown } } } | null)?.params?._meta?.progressToken !==
      undefined,
  );
}

/**
 * One JSON-schema validator for every request's SDK `Server` (each would build an Ajv instance of
 * its own otherwise: a third of a call's CPU). It holds compiled schemas only, nothing of a request.
 */
const schemaValidator = new AjvJsonSchemaValidator();

/**
 * The handler of `/mcp/<virtual>` (mounted in the `/mcp` route group, after authentication and the
 * origin guard, before the MCP proxy): answers a request for a virtual server's slug and passes
 * every other on. An `initialize` (revisions before 2026-07-28) begins a session: its
 * `Mcp-Session-Id` is a token any instance checks (`virtual-sessions.ts`); a request naming one that
 * is not this caller's, altered, expired or ended is `404`. With a session, `GET` opens the stream
 * of list changes ({@link ListChangedStreams}) and `DELETE` ends it; without one they are `405`.
 * A request with no session id, and every 2026-07-28 request, is served statelessly.
 */
export function virtualServersHandler(
  options: VirtualServersOptions,
): NodeMiddleware & { close(): Promise<void>; endStreams(): void; relayedRequests(): number } {
  const { logger } = options;
  const kept = new MemberClients();
  const sessionKey = options.sessionKey ?? randomBytes(32);
  const tokens = new VirtualSessionTokens({ key: sessionKey });
  // Members' requests during a call, relayed to callers that can receive them (`virtual-relay.ts`).
  const relays = new RelayedRequests(
    {
      key: sessionKey,
      timeoutMs: options.relayTimeoutMs,
      events: options.relayEvents,
      onTimeout: (method) =>
        logger.warn(
          { method },
          'a member request relayed to the caller of a virtual MCP server was not answered in time',
        ),
    },
    (error) =>
      logger.warn(
        { err: { message: String((error as Error)?.message).slice(0, 200) } },
        'answers to relayed member requests cannot be heard from other instances; such an answer reaching another instance is lost',
      ),
  );
  const streams = new ListChangedStreams(logger, options.streamLimits);
  // Sessions ended on any instance are refused here too, and their streams here ended.
  const unsubscribe = (
    options.sessionEvents?.subscribe((id, expiresAt) => {
      tokens.revoke(id, expiresAt);
      streams.end(id);
    }) ?? Promise.resolve(undefined)
  ).catch((error: unknown) => {
    logger.warn(
      { err: { message: String((error as Error)?.message).slice(0, 200) } },
      'the ends of virtual MCP server sessions on other instances cannot be heard; those sessions are served until they expire',
    );
    return undefined;
  });
  const sweeper = setInterval(() => tokens.sweep(), 60_000);
  sweeper.unref();
  /** Each virtual server's members, kept while its definition is unchanged (the same object). */
  const membersByDefinition = new WeakMap<ResolvedVirtualServer, VirtualMembers & { servers: string[] }>();
  const membersOf = (server: ResolvedVirtualServer) => {
    let found = membersByDefinition.get(server);
    if (found === undefined) {
      found = Object.assign(new VirtualMembers(server), { servers: server.members.map((member) => member.server) });
      membersByDefinition.set(server, found);
    }
    return found;
  };

  /** What merging a list reports: the member left out (warning, metric) and a name listed twice. */
  const reports = (members: VirtualMembers, method: string): MergeReports => ({
    onUnavailable: ({ server, reason, error }) => {
      options.onMemberUnavailable(server);
      logger.warn(
        {
          virtualServer: members.slug,
          server,
          reason,
          method,
          err: error === undefined ? undefined : { message: String((error as Error)?.message).slice(0, 200) },
        },
        `a member of a virtual MCP server is left out of ${method}`,
      );
    },
    onCollision: (collision) =>
      logger.warn(
        { virtualServer: members.slug, ...collision },
        `a virtual MCP server ${collision.kind} name is listed twice`,
      ),
  });

  /**
   * Asks one member for a list through `page` (one page per call, from its `cursor`), following
   * `nextCursor` up to the bounds of `listAllPages` (20 pages, 10,000 items; a longer list is cut
   * there, with a warning), all within the member's `timeout_ms`: a member the caller may not reach
   * (its endpoint answers 401/403) lists nothing of theirs, and one that does not offer the method
   * (`-32601`, a server without prompts or resources) lists nothing, without being counted unavailable.
   */
  const askMember =
    <T>(
      connections: MemberConnections,
      members: VirtualMembers,
      method: string,
      page: (client: Client, cursor: string | undefined, signal: AbortSignal) => Promise<ListPage<T>>,
    ) =>
    async (server: string, signal: AbortSignal): Promise<readonly T[]> => {
      // The SDK client adds an abort listener to the member's signal per page it asks for.
      setMaxListeners(LIST_SIGNAL_LISTENERS, signal);
      try {
        return await connections.listWith(server, signal, (client) =>
          listAllPages(
            (cursor) => page(client, cursor, signal),
            (cut) =>
              logger.warn(
                { virtualServer: members.slug, server, method, ...cut },
                `a member's ${method} is cut at the virtual MCP server's bound`,
              ),
          ),
        );
      } catch (error) {
        if (error instanceof StreamableHTTPError && (error.code === 401 || error.code === 403)) return [];
        if (error instanceof McpError && error.code === ErrorCode.MethodNotFound) return [];
        throw error;
      }
    };
  /** The request parameters of a list page: the cursor, when there is one. */
  const from = (cursor: string | undefined) => (cursor === undefined ? undefined : { cursor });

  const listTools = (members: VirtualMembers, connections: MemberConnections): Promise<Tool[]> =>
    members.listTools(
      askMember(connections, members, 'tools/list', async (client, cursor, signal) => {
        const answer = await client.listTools(from(cursor), { signal });
        return { items: answer.tools, nextCursor: answer.nextCursor };
      }),
      reports(members, 'tools/list'),
    );
  const listPrompts = (members: VirtualMembers, connections: MemberConnections): Promise<Prompt[]> =>
    members.listPrompts(
      askMember(connections, members, 'prompts/list', async (client, cursor, signal) => {
        const answer = await client.listPrompts(from(cursor), { signal });
        return { items: answer.prompts, nextCursor: answer.nextCursor };
      }),
      reports(members, 'prompts/list'),
    );
  const listResources = (members: VirtualMembers, connections: MemberConnections): Promise<Resource[]> =>
    members.listResources(
      askMember(connections, members, 'resources/list', async (client, cursor, signal) => {
        const answer = await client.listResources(from(cursor), { signal });
        return { items: answer.resources, nextCursor: answer.nextCursor };
      }),
      reports(members, 'resources/list'),
    );
  const listResourceTemplates = (
    members: VirtualMembers,
    connections: MemberConnections,
  ): Promise<ResourceTemplate[]> =>
    members.listResourceTemplates(
      askMember(connections, members, 'resources/templates/list', async (client, cursor, signal) => {
        const answer = await client.listResourceTemplates(from(cursor), { signal });
        return { items: answer.resourceTemplates, nextCursor: answer.nextCursor };
      }),
      reports(members, 'resources/templates/list'),
    );

  /** The members a caller's stream listens to: each through its own endpoint, with the caller's headers and the marker. */
  const listenedMembers = (req: IncomingMessage, slug: string, servers: readonly string[]): ListenedMember[] => {
    const base = options.selfUrl();
    if (base === undefined) return [];
    const headers = { ...pickHeaders(req, CALLER_HEADERS), ...virtualServerMarker(slug) };
    return servers.map((server) => ({ server, url: new URL(`${base}/mcp/${encodeURIComponent(server)}`), headers }));
  };

  const virtualMcpServer: NodeMiddleware = function virtualMcpServer(req, res, next) {
    const url = req.url ?? '/';
    const query = url.indexOf('?');
    const slug = (query === -1 ? url : url.slice(0, query)).replace(/^\//, '').replace(/\/$/, '');
    const definition = options.servers().get(slug);
    if (definition === undefined) return next();
    const members = membersOf(definition);
    const identity = (req as { callerIdentity?: GatewayIdentity }).callerIdentity;
    if (
      options.authorize !== undefined &&
      (identity === undefined ||
        !members.servers.some((server) => options.authorize?.(identity, server)?.allowed === true))
    )
      return next(
        new AccessDeniedError(`The caller may not use MCP server "${slug}": no policy allows any of its members.`),
      );
    const sessionId = req.headers['mcp-session-id'];
    /** The session the request names, checked; undefined when it names none. */
    let session: VirtualSession | undefined;
    // GET and DELETE here; a POST once its body says whether it is an initialize (which begins a new one).
    if (req.method !== 'POST' && typeof sessionId === 'string' && !isModern(req, undefined)) {
      session = tokens.verify(sessionId, slug, req.headers);
      // Another caller's, another virtual server's, altered, expired or ended: the client begins again.
      if (session === undefined) return answerJson(res, 404, -32001, 'Session not found');
    }
    if (req.method === 'DELETE' && session !== undefined) {
      tokens.revoke(session.id, session.expiresAt);
      streams.end(session.id);
      const ended = session;
      void (options.sessionEvents?.publish(ended.id, ended.expiresAt) ?? Promise.resolve())
        .catch((error: unknown) =>
          logger.warn(
            { virtualServer: slug, err: { message: String((error as Error)?.message).slice(0, 200) } },
            'the end of a virtual MCP server session could not be told to the other instances; they serve it until it expires',
          ),
        )
        .finally(() => {
          res.writeHead(200);
          res.end();
        });
      return;
    }
    if (req.method === 'GET' && session !== undefined) {
      if (!String(req.headers.accept ?? '').includes('text/event-stream'))
        return answerJson(res, 406, -32000, 'Not Acceptable: Client must accept text/event-stream');
      try {
        streams.start(session, tokens.binding(req.headers), res, listenedMembers(req, slug, members.servers));
      } catch (error) {
        return next(error);
      }
      return;
    }
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'POST', 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          jsonrpc: '2.0',
          id: null,
          error: {
            code: -32000,
            message: 'Method not allowed: GET and DELETE of a virtual MCP server need a session (Mcp-Session-Id).',
          },
        }),
      );
      return;
    }
    const base = options.selfUrl();
    const memberEndpoint = options.memberEndpoint;
    const connections = new MemberConnections(
      kept,
      slug,
      base ?? '',
      pickHeaders(req, CALLER_HEADERS),
      memberEndpoint && ((server, handshake) => new InProcessLister(memberEndpoint, req, server, handshake)),
      () => pickHeaders(req, PER_REQUEST_HEADERS),
    );
    /** Whether this request is of revision 2026-07-28 (stateless): its results then say `resultType: "complete"`. */
    let modern = false;
    const complete = <T extends object>(result: T): T => (modern ? { ...result, resultType: 'complete' } : result);
    /** The SDK server of this request, with its handlers: built only when the SDK path serves the request. */
    const sdkServer = (): Server => {
      const server = new Server(
        { name: slug, title: definition.name, version: '1.0.0' },
        { capabilities: VIRTUAL_CAPABILITIES, jsonSchemaValidator: schemaValidator },
      );
      /** A request handler that answers -32603 while the gateway is not listening yet (its members unreachable). */
      const whenListening =
        <A extends unknown[], R>(handler: (...args: A) => Promise<R>) =>
        (...args: A): Promise<R> =>
          base === undefined
            ? Promise.reject(
                new JsonRpcError(ErrorCode.InternalError, 'The gateway is not listening yet.', {
                  code: UPSTREAM_UNAVAILABLE,
                }),
              )
            : handler(...args);
      server.setRequestHandler(DiscoverRequestSchema, () => ({
        resultType: 'complete',
        supportedVersions: [MODERN_REVISION, ...SUPPORTED_PROTOCOL_VERSIONS],
        capabilities: DISCOVERED_CAPABILITIES,
        _meta: { 'io.modelcontextprotocol/serverInfo': { name: slug, title: definition.name, version: '1.0.0' } },
      }));
      server.setRequestHandler(
        ListToolsRequestSchema,
        whenListening(async () => {
          return complete({ tools: await listTools(members, connections) });
        }),
      );
      server.setRequestHandler(
        CallToolRequestSchema,
        whenListening(async (request, extra): Promise<CallToolResult> => {
          const name = request.params.name;
          const target = await routeAfterListing(
            () => members.routeTool(name),
            () => listTools(members, connections),
          );
          if (target === undefined)
            throw new JsonRpcError(
              ErrorCode.InvalidParams,
              `Unknown tool: "${name.slice(0, 128)}" is not offered by "${slug}".`,
            );
          try {
            const own = { ...request.params, name: target.name, _meta: memberMeta(request.params._meta) };
            // The member's progress notifications, under the caller's progressToken, as they come.
            const progressToken = request.params._meta?.progressToken;
            const onprogress =
              progressToken === undefined
                ? undefined
                : (progress: Progress) =>
                    void extra
                      .sendNotification({ method: 'notifications/progress', params: { ...progress, progressToken } })
                      .catch(() => undefined);
            const call = (client: Client, timeout?: number) =>
              client.callTool(own, undefined, {
                signal: extra.signal,
                onprogress,
                resetTimeoutOnProgress: true,
                timeout,
              });
            // A caller that can receive the member's requests gets them on this call's stream, through a client of its own.
            const relayed = relayedCapabilities(session);
            return complete(
              (relayed === undefined || session === undefined
                ? await connections.with(target.server, extra.signal, (client) => call(client))
                : await connections.withOwnClient(
                    target.server,
                    relays.clientFor(slug, session, relayed, {
                      send: (message) => server.transport!.send(message, { relatedRequestId: extra.requestId }),
                      signal: extra.signal,
                    }),
                    extra.signal,
                    (client) => call(client, DEFAULT_REQUEST_TIMEOUT_MSEC + relays.timeoutMs),
                  )) as CallToolResult,
            );
          } catch (error) {
            throw memberFailure(target.server, error);
          }
        }),
      );
      server.setRequestHandler(
        ListPromptsRequestSchema,
        whenListening(async () => {
          return complete({ prompts: await listPrompts(members, connections) });
        }),
      );
      server.setRequestHandler(
        GetPromptRequestSchema,
        whenListening(async (request, extra): Promise<GetPromptResult> => {
          const name = request.params.name;
          const target = await routeAfterListing(
            () => members.routePrompt(name),
            () => listPrompts(members, connections),
          );
          if (target === undefined)
            throw new JsonRpcError(
              ErrorCode.InvalidParams,
              `Unknown prompt: "${name.slice(0, 128)}" is not offered by "${slug}".`,
            );
          const own = { ...request.params, name: target.name, _meta: memberMeta(request.params._meta) };
          try {
            return complete(
              await connections.with(target.server, extra.signal, (client) =>
                client.getPrompt(own, { signal: extra.signal }),
              ),
            );
          } catch (error) {
            throw memberFailure(target.server, error);
          }
        }),
      );
      server.setRequestHandler(
        ListResourcesRequestSchema,
        whenListening(async () => {
          return complete({ resources: await listResources(members, connections) });
        }),
      );
      server.setRequestHandler(
        ListResourceTemplatesRequestSchema,
        whenListening(async () => {
          return complete({ resourceTemplates: await listResourceTemplates(members, connections) });
        }),
      );
      server.setRequestHandler(
        ReadResourceRequestSchema,
        whenListening(async (request, extra): Promise<ReadResourceResult> => {
          const uri = request.params.uri;
          // The caller's lists (resources, then templates) decide for a URI not listed here before.
          const target = await routeAfterListing(
            () => members.routeResource(uri),
            () => Promise.all([listResources(members, connections), listResourceTemplates(members, connections)]),
          );
          if (target === undefined)
            throw new JsonRpcError(
              RESOURCE_NOT_FOUND,
              `Resource not found: "${uri.slice(0, 256)}" is not offered by "${slug}".`,
              {
                uri: uri.slice(0, 256),
              },
            );
          const server = target;
          try {
            return complete(
              await connections.with(server, extra.signal, (client) =>
                client.readResource(
                  { ...request.params, _meta: memberMeta(request.params._meta) },
                  { signal: extra.signal },
                ),
              ),
            );
          } catch (error) {
            throw memberFailure(server, error);
          }
        }),
      );
      res.on('close', () => void server.close());
      return server;
    };
    readJsonBody(req).then((read) => {
      if (read instanceof JsonRpcError) {
        res.writeHead(read.code === PAYLOAD_TOO_LARGE ? 413 : 400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: read.code, message: read.message } }));
        return;
      }
      const { raw, body } = read;
      // A caller's answer to a member's request relayed during a call: passed to the call that waits.
      const answers = answersIn(body);
      if (answers !== undefined)
        return void relays
          .receivePost(answers, sessionId, (id) => tokens.verify(id, slug, req.headers), res)
          .catch(next);
      // MCP 2026-07-28 (CONTRACT section 12): Mcp-Method and Mcp-Name must agree with the body (and
      // be there), checked as the proxy checks them for servers: else 400 with -32020, answered here.
      const mirror = {
        method: req.headersDistinct['mcp-method'],
        name: req.headersDistinct['mcp-name'],
        version: req.headersDistinct['mcp-protocol-version'],
      };
      let mismatch: string | undefined;
      try {
        mismatch = inspectRequest(raw, EVERY_TOOL, mirror).answer;
      } catch (error) {
        return next(error);
      }
      if (mismatch !== undefined) {
        res.writeHead(400, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(mismatch) });
        res.end(mismatch);
        return;
      }
      modern = isModern(req, body);
      // MCP 2026-07-28: subscriptions/listen is a stream of the list changes asked for, as a session's GET stream.
      const listen = modern ? listenSubscription(body) : undefined;
      if (listen !== undefined) {
        try {
          streams.start(
            { id: `listen:${randomBytes(16).toString('base64url')}`, expiresAt: Date.now() + VIRTUAL_SESSION_TTL_MS },
            tokens.binding(req.headers),
            res,
            listenedMembers(req, slug, members.servers),
            listen,
          );
        } catch (error) {
          next(error);
        }
        return;
      }
      // The SDK transport knows revisions up to 2025-11-25 and refuses a later MCP-Protocol-Version:
      // a stateless 2026-07-28 request is served by the same handlers, its revision known here.
      if (modern) setHeader(req, 'mcp-protocol-version', LATEST_PROTOCOL_VERSION);
      // A session-based client's initialize begins a session: its id is a token any instance checks.
      let issued: string | undefined;
      const initialize = !modern && !Array.isArray(body) ? initializeParams(body) : undefined;
      if (initialize === undefined && !modern && typeof sessionId === 'string') {
        session = tokens.verify(sessionId, slug, req.headers);
        if (session === undefined) return answerJson(res, 404, -32001, 'Session not found');
      }
      if (initialize !== undefined) {
        const version = SUPPORTED_PROTOCOL_VERSIONS.includes(initialize.protocolVersion)
          ? initialize.protocolVersion
          : LATEST_PROTOCOL_VERSION;
        issued = tokens.issue(slug, version, initialize.capabilities, req.headers).sessionId;
      } else if (session !== undefined && req.headers['mcp-protocol-version'] === undefined)
        setHeader(req, 'mcp-protocol-version', session.protocolVersion);
      // A call routed to a member: handed in process to the member's own endpoint (virtual-fast-call.ts).
      if (initialize === undefined && base !== undefined && memberEndpoint !== undefined && fastCallHeaders(req)) {
        const plan = planFastCall(body, members, session?.clientCapabilities);
        if (plan !== undefined)
          return serveFastCall(req, res, plan, {
            slug,
            modern,
            memberEndpoint,
            // The kept client's initialize (when there is none yet) carries the marker.
            handshake: (member) => connections.handshake(member),
            readyHandshake: (member) => connections.readyHandshake(member),
            failure: memberFailure,
          });
        // A list: the members' lists merged and answered here, without an SDK server for the request.
        const list = planFastList(body);
        if (list !== undefined)
          return serveFastList(res, list, async () => {
            switch (list.method) {
              case 'tools/list':
                return complete({ tools: await listTools(members, connections) });
              case 'prompts/list':
                return complete({ prompts: await listPrompts(members, connections) });
              case 'resources/list':
                return complete({ resources: await listResources(members, connections) });
              default:
                return complete({ resourceTemplates: await listResourceTemplates(members, connections) });
            }
          });
      }
      // An answer that carries a member's notifications (progress) is a stream; every other is JSON.
      // Only an initialize has a session id generator (a session id it carries is not read: it begins
      // a new one); every later request is checked above, and the
      // SDK's transport, stateless, serves it as any instance would.
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: issued === undefined ? undefined : () => issued,
        enableJsonResponse: !asksProgress(body) && !(relayedCapabilities(session) !== undefined && callsTools(body)),
      });
      res.on('close', () => void transport.close());
      const server = sdkServer();
      server
        .connect(transport)
        .then(() => transport.handleRequest(req, res, body))
        .catch(next);
    }, next);
  };
  return Object.assign(virtualMcpServer, {
    /** Ends every open stream (shutdown begins); requests are still served. */
    endStreams: () => streams.close(),
    /** How many members' requests relayed to callers wait for an answer on this instance now. */
    relayedRequests: () => relays.size,
    close: async () => {
      clearInterval(sweeper);
      streams.close();
      kept.close();
      await relays.close();
      await (await unsubscribe)?.().catch(() => undefined);
    },
  });
}

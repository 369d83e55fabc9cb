/**
 * Virtual MCP servers (CONTRACT section 16), served by the gateway itself at `/mcp/<virtual>`.
 *
 * The gateway answers as an MCP server with the official SDK (`Server` and a stateless
 * `StreamableHTTPServerTransport`: a new pair per request, no session id) and reaches each member
 * as an MCP SDK `Client` through the member's own endpoint, `/mcp/<member>` of this same gateway,
 * with the caller's own credentials. So every check of a member (authentication, policies, the tool
 * gate, pinning, limits, identity forwarding, upstream credentials, request records) is the one its
 * own endpoint applies: implemented once. The merge and the routing back are the core's
 * (`VirtualMembers` of `@gw/mcp-gateway`).
 */
import { Agent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { AccessDeniedError, type GatewayIdentity } from '@gw/identity-forwarding';
import { VirtualMembers, type McpAccess, type ResolvedVirtualServer } from '@gw/mcp-gateway';
import type { Logger } from 'pino';
import type { NodeMiddleware } from '../http/route-table';

/** The JSON-RPC `data.code` of a call whose member did not answer (CONTRACT section 16). */
export const UPSTREAM_UNAVAILABLE = 'upstream_unavailable';

/**
 * The request headers a member's endpoint authenticates and checks the caller by, passed on as the
 * caller sent them (the virtual endpoint has already checked them): credentials, `Host` and
 * `Origin` (the DNS-rebinding guard), metadata and the trace context.
 */
const CALLER_HEADERS = [
  'authorization',
  'x-api-key',
  'x-gateway-api-key',
  'x-portkey-api-key',
  'host',
  'origin',
  'x-gateway-metadata',
  'x-portkey-metadata',
  'traceparent',
  'tracestate',
] as const;

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
}

/**
 * Keep-alive connections to the gateway's own address: a member request reuses one. At most 64
 * at once, well below `MAX_CONNECTIONS_PER_IP` (default 256), which counts them as 127.0.0.1's.
 */
const loopbackAgent = new Agent({ keepAlive: true, maxSockets: 64 });

/**
 * A `fetch` for the members' SDK clients, over node:http to the gateway's own address. Unlike the
 * global `fetch` (undici), it sends the `Host` header given (the caller's, already checked by the
 * origin guard), so the member endpoint's DNS-rebinding guard answers as it did for the caller.
 */
export function loopbackFetch(url: string | URL, init: RequestInit = {}): Promise<Response> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((value, name) => (headers[name] = value));
    const body = init.body;
    if (body !== undefined && body !== null && typeof body !== 'string')
      return reject(new TypeError('loopbackFetch sends string bodies only.'));
    const req = httpRequest(url, { method: init.method ?? 'GET', headers, agent: loopbackAgent }, (res) => {
      const answer = new Headers();
      for (const [name, value] of Object.entries(res.headers)) {
        if (Array.isArray(value)) for (const v of value) answer.append(name, v);
        else if (value !== undefined) answer.set(name, value);
      }
      const status = res.statusCode ?? 502;
      const empty = status === 204 || status === 304 || init.method === 'HEAD';
      if (empty) res.resume();
      resolve(
        new Response(empty ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>), {
          status,
          statusText: res.statusMessage,
          headers: answer,
        }),
      );
    });
    const signal = init.signal;
    if (signal) {
      if (signal.aborted) {
        req.destroy(signal.reason as Error);
        return reject(signal.reason as Error);
      }
      signal.addEventListener('abort', () => req.destroy(signal.reason as Error), { once: true });
    }
    req.on('error', reject);
    req.end(body ?? undefined);
  });
}

/** The caller's headers to send on to a member's endpoint. */
function callerHeaders(req: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of CALLER_HEADERS) {
    const value = req.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  return headers;
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
  if (error instanceof StreamableHTTPError && error.code !== undefined && error.code < 500) {
    const code = gatewayErrorCode(error) ?? 'member_refused';
    return new JsonRpcError(ErrorCode.InternalError, `The MCP server "${server}" refused the call (${code}).`, {
      code,
      server,
      status: error.code,
    });
  }
  return new JsonRpcError(ErrorCode.InternalError, `The MCP server "${server}" is unavailable.`, {
    code: UPSTREAM_UNAVAILABLE,
    server,
  });
}

/** One caller's connections to the members of a virtual server, for the length of one request. */
class MemberConnections {
  private readonly clients: Client[] = [];

  constructor(
    private readonly slug: string,
    private readonly base: string,
    private readonly headers: Record<string, string>,
  ) {}

  /** An SDK client connected (initialized) to `server`'s own endpoint of this gateway. */
  async connect(server: string, signal?: AbortSignal): Promise<Client> {
    const transport = new StreamableHTTPClientTransport(new URL(`${this.base}/mcp/${encodeURIComponent(server)}`), {
      requestInit: { headers: this.headers },
      fetch: loopbackFetch,
    });
    const client = new Client({ name: `gateway-virtual-${this.slug}`, version: '1.0.0' });
    this.clients.push(client);
    await client.connect(transport, { signal });
    return client;
  }

  /** Ends every member session opened (a stateful member gets its `DELETE`), never throws. */
  close(): void {
    for (const client of this.clients) {
      const transport = client.transport as StreamableHTTPClientTransport | undefined;
      const ending = transport?.sessionId !== undefined ? transport.terminateSession() : Promise.resolve();
      void ending.catch(() => undefined).finally(() => void client.close().catch(() => undefined));
    }
  }
}

/**
 * The handler of `/mcp/<virtual>` (mounted in the `/mcp` route group, after authentication and the
 * origin guard, before the MCP proxy): answers a request for a virtual server's slug and passes
 * every other on. `POST` only (stateless); `GET` and `DELETE` are `405` with `Allow: POST`.
 */
export function virtualServersHandler(options: VirtualServersOptions): NodeMiddleware {
  const { logger } = options;
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

  const listTools = async (members: VirtualMembers, connections: MemberConnections): Promise<Tool[]> =>
    members.listTools(
      async (server, signal) => {
        try {
          const client = await connections.connect(server, signal);
          return (await client.listTools(undefined, { signal })).tools;
        } catch (error) {
          // A member the caller may not reach (its endpoint answers 401/403): none of its tools is theirs.
          if (error instanceof StreamableHTTPError && (error.code === 401 || error.code === 403)) return [];
          throw error;
        }
      },
      {
        onUnavailable: ({ server, reason, error }) => {
          options.onMemberUnavailable(server);
          logger.warn(
            {
              virtualServer: members.slug,
              server,
              reason,
              err: error === undefined ? undefined : { message: String((error as Error)?.message).slice(0, 200) },
            },
            'a member of a virtual MCP server is left out of tools/list',
          );
        },
        onCollision: (collision) =>
          logger.warn({ virtualServer: members.slug, ...collision }, 'a virtual MCP server tool name is listed twice'),
      },
    );

  return function virtualMcpServer(req, res, next) {
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
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'POST', 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          jsonrpc: '2.0',
          id: null,
          error: { code: -32000, message: 'Method not allowed: a virtual MCP server takes POST only (no sessions).' },
        }),
      );
      return;
    }
    const base = options.selfUrl();
    const connections = new MemberConnections(slug, base ?? '', callerHeaders(req));
    const server = new Server(
      { name: slug, title: definition.name, version: '1.0.0' },
      { capabilities: { tools: { listChanged: false } } },
    );
    const notListening = () =>
      new JsonRpcError(ErrorCode.InternalError, 'The gateway is not listening yet.', { code: UPSTREAM_UNAVAILABLE });
    server.setRequestHandler(ListToolsRequestSchema, async () => {
      if (base === undefined) throw notListening();
      return { tools: await listTools(members, connections) };
    });
    server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
      if (base === undefined) throw notListening();
      const name = request.params.name;
      let target = members.routeTool(name);
      // A name not listed here before (an unprefixed member): the caller's list decides.
      if (target === undefined) {
        await listTools(members, connections);
        target = members.routeTool(name);
      }
      if (target === undefined)
        throw new JsonRpcError(
          ErrorCode.InvalidParams,
          `Unknown tool: "${name.slice(0, 128)}" is not offered by "${slug}".`,
        );
      try {
        const client = await connections.connect(target.server, extra.signal);
        return (await client.callTool({ ...request.params, name: target.name }, undefined, {
          signal: extra.signal,
        })) as CallToolResult;
      } catch (error) {
        throw memberFailure(target.server, error);
      }
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      connections.close();
      void transport.close();
      void server.close();
    });
    server
      .connect(transport)
      .then(() => transport.handleRequest(req, res))
      .catch(next);
  };
}

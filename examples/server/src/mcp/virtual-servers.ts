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
 */
import { createHash, randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { Agent, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
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
  PromptListChangedNotificationSchema,
  ReadResourceRequestSchema,
  ResourceListChangedNotificationSchema,
  ToolListChangedNotificationSchema,
  type CallToolResult,
  type GetPromptResult,
  type Progress,
  type Prompt,
  type ReadResourceResult,
  type Resource,
  type ResourceTemplate,
  type Tool,
  type JSONRPCMessage,
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
  type MemberHandshake,
} from './virtual-fast-call';
import { InProcessLister, planFastList, serveFastList } from './virtual-fast-list';
import { virtualServerMarker } from './virtual-marker';
import {
  answersIn,
  callsTools,
  refuseMemberRequests,
  relayedCapabilities,
  RelayedRequests,
  type RelayAnswerEvents,
} from './virtual-relay';
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
] as const;

/**
 * The caller's headers that belong to one request, not to the caller (the trace context): sent
 * with each member request made for it, whichever kept member client makes it, with the virtual
 * server's marker (`virtual-marker.ts`).
 */
const PER_REQUEST_HEADERS = ['traceparent', 'tracestate'] as const;

/**
 * The abort listeners a member's list may add to its signal: one per page (at most
 * `MAX_MEMBER_LIST_PAGES`) and a few for the connection. Node warns past 10.
 */
export const LIST_SIGNAL_LISTENERS = MAX_MEMBER_LIST_PAGES + 8;

/** How long a member client, once initialized, is kept for the same caller: 30 s from its `initialize`. */
export const MEMBER_CLIENT_TTL_MS = 30_000;

/** How many member clients are kept at most (least recently used dropped first): 512. */
export const MEMBER_CLIENTS_MAX = 512;

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
 * Keep-alive connections to the gateway's own address: a member request reuses one. At most 64
 * at once, well below `MAX_CONNECTIONS_PER_IP` (default 256), which counts them as 127.0.0.1's.
 */
const loopbackAgent = new Agent({ keepAlive: true, maxSockets: 64 });

/**
 * The connections of the streams' member listeners to the gateway's own address, apart from
 * {@link loopbackAgent}: a held `GET` never takes a place member requests wait for. Their number is
 * bounded by {@link VirtualStreamLimits.memberConnections}, not here.
 */
const listenerAgent = new Agent({ keepAlive: false });

/**
 * A `fetch` for the members' SDK clients, over node:http to the gateway's own address. Unlike the
 * global `fetch` (undici), it sends the `Host` header given (the caller's, already checked by the
 * origin guard), so the member endpoint's DNS-rebinding guard answers as it did for the caller.
 */
export function loopbackFetch(
  url: string | URL,
  init: RequestInit = {},
  agent: Agent = loopbackAgent,
): Promise<Response> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((value, name) => (headers[name] = value));
    const body = init.body;
    if (body !== undefined && body !== null && typeof body !== 'string')
      return reject(new TypeError('loopbackFetch sends string bodies only.'));
    const req = httpRequest(url, { method: init.method ?? 'GET', headers, agent }, (res) => {
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
      // A kept member client's transport passes one signal for all its requests, as many at once as
      // callers use it: each request removes its own listener when it ends, so none is left behind.
      setMaxListeners(0, signal);
      const abort = () => req.destroy(signal.reason as Error);
      signal.addEventListener('abort', abort, { once: true });
      req.once('close', () => signal.removeEventListener('abort', abort));
    }
    req.on('error', reject);
    req.end(body ?? undefined);
  });
}

/** The caller's headers to send on to a member's endpoint, from `names`. */
function pickHeaders(req: IncomingMessage, names: readonly string[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of names) {
    const value = req.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  return headers;
}

/**
 * The `fetch` of a member client: {@link loopbackFetch}; a `GET` (the SDK's standalone SSE stream,
 * opened after `initialized`) is answered `405` here without a request: a kept client holds no
 * member connection while idle, and a virtual server passes no member notification outside a call.
 * (No AsyncLocalStorage carries a request's headers here: once entered, it would turn on promise
 * hooks for every request of the process. A kept client's headers are its caller's and the virtual
 * server's marker; a call's own client also carries the call's trace context.)
 */
function memberFetch(url: string | URL, init: RequestInit = {}): Promise<Response> {
  if ((init.method ?? 'GET') === 'GET') return Promise.resolve(new Response(null, { status: 405 }));
  return loopbackFetch(url, init);
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

/** A member client, initialized or on its way, and when it is dropped. */
interface KeptClient {
  client: Client;
  connected: Promise<Client>;
  /** The client once its `initialize` succeeded: lent without waiting ({@link MemberClients.lendReady}). */
  ready?: Client;
  expires: number;
  /** Requests using it now (its member session): it is ended only when none does. */
  uses: number;
  /** No longer kept (expired, evicted, failed): ended when its last use ends. */
  retired: boolean;
}

/** A kept client lent to one request: `release` when the request no longer uses its member session. */
export interface LentClient {
  client: Client;
  release(): void;
}

/**
 * The initialized SDK clients of members, kept per (caller, virtual server, member) so that a
 * request through a virtual server costs each member one request, not an `initialize`,
 * `initialized` and the request. Keyed by a SHA-256 of the caller's credential headers, `Host`,
 * `Origin` and metadata with the two slugs: the credential itself is never a key. Bounded
 * ({@link MEMBER_CLIENTS_MAX}, least recently used dropped first) and short-lived
 * ({@link MEMBER_CLIENT_TTL_MS} from `initialize`). The member endpoint still authenticates and
 * checks every request: a kept client saves the handshake, never a check.
 */
export class MemberClients {
  private readonly kept = new Map<string, KeptClient>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly ttlMs = MEMBER_CLIENT_TTL_MS,
    private readonly max = MEMBER_CLIENTS_MAX,
    private readonly now: () => number = Date.now,
  ) {
    this.sweeper = setInterval(() => this.sweep(), ttlMs);
    this.sweeper.unref();
  }

  /** The key of a caller's client of `server` in virtual server `slug`: a hash, never a credential. */
  static key(slug: string, server: string, caller: Record<string, string>): string {
    // One update of the same bytes (the same digest as one update a header): a call's fewer CPU.
    let text = `${slug}\0${server}`;
    for (const name of CALLER_HEADERS) text += `\0${name}\0${caller[name] ?? ''}`;
    return createHash('sha256').update(text).digest('base64url');
  }

  /** How many clients are kept now. */
  get size(): number {
    return this.kept.size;
  }

  /**
   * The kept client of `key`, or a new one `open` makes (and `initialize`s once, however many
   * requests wait for it). A client whose initialize fails is not kept.
   */
  get(key: string, open: () => Client, connect: (client: Client) => Promise<void>): Promise<Client> {
    return this.entry(key, open, connect).connected;
  }

  /**
   * {@link get}, lent until `release`: a client in use is never ended (its member `DELETE`d) while
   * a request still uses its member session, even once it expired or was evicted; it is ended when
   * its last use is released. `release` more than once counts once.
   */
  async lend(key: string, open: () => Client, connect: (client: Client) => Promise<void>): Promise<LentClient> {
    const entry = this.entry(key, open, connect);
    const release = this.use(entry);
    try {
      return { client: await entry.connected, release };
    } catch (error) {
      release();
      throw error;
    }
  }

  /**
   * {@link lend} without waiting: the kept client of `key` when its `initialize` succeeded already
   * and it has not expired; undefined otherwise (none, expired, or its `initialize` under way),
   * when {@link lend} serves.
   */
  lendReady(key: string): LentClient | undefined {
    const found = this.kept.get(key);
    if (found?.ready === undefined || found.expires <= this.now()) return undefined;
    this.kept.delete(key);
    this.kept.set(key, found); // most recently used last
    return { client: found.ready, release: this.use(found) };
  }

  /** Counts a use of `entry`; the returned `release` ends it (more than once counts once). */
  private use(entry: KeptClient): () => void {
    entry.uses++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      entry.uses--;
      if (entry.retired && entry.uses === 0) closeClient(entry.client);
    };
  }

  /** The kept entry of `key`, or a new one (most recently used last; the least recently used beyond the bound retired). */
  private entry(key: string, open: () => Client, connect: (client: Client) => Promise<void>): KeptClient {
    const now = this.now();
    const found = this.kept.get(key);
    if (found !== undefined) {
      this.kept.delete(key);
      if (found.expires > now) {
        this.kept.set(key, found); // most recently used last
        return found;
      }
      this.retire(found);
    }
    const client = open();
    const entry: KeptClient = {
      client,
      connected: connect(client).then(() => (entry.ready = client)),
      expires: now + this.ttlMs,
      uses: 0,
      retired: false,
    };
    entry.connected.catch(() => this.drop(key, entry));
    this.kept.set(key, entry);
    while (this.kept.size > this.max) {
      const [oldest, kept] = this.kept.entries().next().value as [string, KeptClient];
      this.kept.delete(oldest);
      this.retire(kept);
    }
    return entry;
  }

  /** Ends `entry`'s client now, or when its last use is released. */
  private retire(entry: KeptClient): void {
    if (entry.retired) return;
    entry.retired = true;
    if (entry.uses === 0) closeClient(entry.client);
  }

  /**
   * Drops `key`'s client if it is still `client` (one that failed: a member that restarted, a
   * session it ended); the next request opens a new one.
   */
  forget(key: string, client: Client): void {
    const entry = this.kept.get(key);
    if (entry?.client === client) this.drop(key, entry);
  }

  /** Ends every kept client (a stateful member gets its `DELETE`). */
  close(): void {
    clearInterval(this.sweeper);
    for (const entry of this.kept.values()) {
      entry.retired = true;
      closeClient(entry.client);
    }
    this.kept.clear();
  }

  private drop(key: string, entry: KeptClient): void {
    if (this.kept.get(key) === entry) this.kept.delete(key);
    this.retire(entry);
  }

  private sweep(): void {
    const now = this.now();
    for (const [key, entry] of this.kept) if (entry.expires <= now) this.drop(key, entry);
  }
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

/** Ends a member client's session (a stateful member gets its `DELETE`), never throws. */
function closeClient(client: Client): void {
  const transport = client.transport as StreamableHTTPClientTransport | undefined;
  const ending = transport?.sessionId !== undefined ? transport.terminateSession() : Promise.resolve();
  void ending.catch(() => undefined).finally(() => void client.close().catch(() => undefined));
}

/** One caller's member clients for one request through a virtual server: kept ones where there are. */
class MemberConnections {
  constructor(
    private readonly kept: MemberClients,
    private readonly slug: string,
    private readonly base: string,
    private readonly headers: Record<string, string>,
    /** The lists of a member asked in process (`virtual-fast-list.ts`); undefined: through the kept SDK client. */
    private readonly lister?: (server: string, handshake: MemberHandshake) => InProcessLister,
    /** The request's trace context (`traceparent`, `tracestate`), sent by a call's own client (read when one is made). Default: none. */
    private readonly trace: () => Record<string, string> = () => ({}),
  ) {}

  /** What a member client sends: the caller's headers and the virtual server's marker (made when a client is). */
  private get sent(): Record<string, string> {
    return { ...this.headers, ...virtualServerMarker(this.slug) };
  }

  /**
   * Runs `use` (a member's list pages) with `server`'s in-process lister when there is one (its
   * member session from {@link handshake}; once more anew when a stateful member no longer knows
   * it), else with the kept SDK client ({@link with}).
   */
  async listWith<T>(
    server: string,
    signal: AbortSignal | undefined,
    use: (client: Client) => Promise<T>,
    retry = true,
  ): Promise<T> {
    if (this.lister === undefined) return this.with(server, signal, use);
    const handshake = await this.handshake(server, signal);
    try {
      return await use(this.lister(server, handshake) as unknown as Client);
    } catch (error) {
      if (retry && handshake.sessionId !== undefined && error instanceof StreamableHTTPError && error.code === 404) {
        handshake.forget();
        handshake.release();
        return this.listWith(server, signal, use, false);
      }
      throw error;
    } finally {
      handshake.release();
    }
  }

  /** This caller's kept SDK client of `server`'s own endpoint, initialized (once, whoever waits for it). */
  private async client(
    server: string,
    signal: AbortSignal | undefined,
  ): Promise<{ key: string; client: Client; release(): void }> {
    const key = MemberClients.key(this.slug, server, this.headers);
    const { client, release } = await this.kept.lend(
      key,
      () => refuseMemberRequests(new Client({ name: `gateway-virtual-${this.slug}`, version: '1.0.0' }), this.slug),
      (client) =>
        client.connect(
          new StreamableHTTPClientTransport(new URL(`${this.base}/mcp/${encodeURIComponent(server)}`), {
            requestInit: { headers: this.sent },
            fetch: memberFetch,
          }),
          { signal },
        ),
    );
    return { key, client, release };
  }

  /**
   * The member session of this caller's kept client of `server` (its `initialize` made once, as
   * for {@link with}): what a call handed in process to the member's endpoint carries
   * (`virtual-fast-call.ts`). Rejects as the `initialize` failed.
   */
  async handshake(server: string, signal?: AbortSignal): Promise<MemberHandshake> {
    const { key, client, release } = await this.client(server, signal);
    return this.handshakeOf(key, client, release);
  }

  /**
   * {@link handshake} without waiting, when this caller's kept client of `server` is initialized
   * already (the usual case after the first call); undefined otherwise.
   */
  readyHandshake(server: string): MemberHandshake | undefined {
    const key = MemberClients.key(this.slug, server, this.headers);
    const lent = this.kept.lendReady(key);
    return lent === undefined ? undefined : this.handshakeOf(key, lent.client, lent.release);
  }

  /** The member session of `client` (kept as `key`), lent until `release`. */
  private handshakeOf(key: string, client: Client, release: () => void): MemberHandshake {
    const transport = client.transport as StreamableHTTPClientTransport | undefined;
    return {
      sessionId: transport?.sessionId,
      protocolVersion: transport?.protocolVersion,
      forget: () => this.kept.forget(key, client),
      release,
      // As if the kept client had received it: its fallback handler refuses it, posted to the member's session.
      refuse: (request) => client.transport?.onmessage?.(request as JSONRPCMessage),
    };
  }

  /**
   * Runs `use` with an SDK client initialized to `server`'s own endpoint of this gateway, kept for
   * this caller. A kept client whose request fails without a member's answer (its session gone,
   * the gateway restarted) is dropped; a failure of a freshly opened one is the member's.
   */
  async with<T>(
    server: string,
    signal: AbortSignal | undefined,
    use: (client: Client) => Promise<T>,
    retry = true,
  ): Promise<T> {
    const { key, client, release } = await this.client(server, signal);
    const sessionId = (client.transport as StreamableHTTPClientTransport | undefined)?.sessionId;
    try {
      return await use(client);
    } catch (error) {
      if (error instanceof McpError && error.code !== ErrorCode.ConnectionClosed) throw error;
      this.kept.forget(key, client);
      release();
      // A stateful member that no longer knows the kept session (404) did not take the request: once more, anew.
      if (retry && sessionId !== undefined && error instanceof StreamableHTTPError && error.code === 404)
        return this.with(server, signal, use, false);
      throw error;
    } finally {
      release();
    }
  }

  /**
   * Runs `use` with `client`, a member client of one call only (one that relays its member's
   * requests to the caller), connected to `server`'s own endpoint of this gateway; ends it after.
   */
  async withOwnClient<T>(
    server: string,
    client: Client,
    signal: AbortSignal | undefined,
    use: (client: Client) => Promise<T>,
  ): Promise<T> {
    try {
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${this.base}/mcp/${encodeURIComponent(server)}`), {
          requestInit: { headers: { ...this.sent, ...this.trace() } },
          fetch: memberFetch,
        }),
        { signal },
      );
      return await use(client);
    } finally {
      closeClient(client);
    }
  }
}

/** Bounds of the server-to-client `GET` streams of virtual servers' sessions. */
export interface VirtualStreamLimits {
  /** Streams one caller (one credential) holds open at once on an instance. */
  perCaller: number;
  /** Streams open at once on an instance. */
  total: number;
  /** A stream that carried nothing this long is ended (the client opens it again), in ms. */
  idleMs: number;
  /**
   * Member connections the streams of an instance hold at once (one a member of each stream's
   * virtual server), kept well below `MAX_CONNECTIONS_PER_IP` (default 256), which counts them as
   * 127.0.0.1's.
   */
  memberConnections: number;
}

/**
 * The default bounds: 8 streams a caller, 1,000 in all, 128 member connections in all, each stream
 * ended after 10 minutes without a notification.
 */
export const VIRTUAL_STREAM_LIMITS: Readonly<VirtualStreamLimits> = {
  perCaller: 8,
  total: 1000,
  idleMs: 10 * 60_000,
  memberConnections: 128,
};

/**
 * `429 mcp_stream_limit`: a `GET` stream of a virtual server beyond {@link VirtualStreamLimits}
 * (per caller or in all, on this instance).
 */
export class VirtualStreamLimitError extends Error {
  readonly status = 429;
  readonly code = 'mcp_stream_limit';
  readonly type = 'rate_limit_error';
  constructor(message: string) {
    super(message);
    this.name = 'VirtualStreamLimitError';
  }
}

/** How long a stream's member client may take to connect (initialize) before that member is not listened to: 10 s. */
export const LISTENER_CONNECT_TIMEOUT_MS = 10_000;

/**
 * How a member listener opens its `GET` stream again when it ends (the MCP proxy ends a silent one
 * after its `streamIdleTimeoutMs`, default 5 minutes): after 100 ms, then longer up to 5 s, giving
 * up after 5 failures in a row (the SDK's default waits 1 s and gives up after 2).
 */
const LISTENER_RECONNECTION = {
  initialReconnectionDelay: 100,
  maxReconnectionDelay: 5_000,
  reconnectionDelayGrowFactor: 2,
  maxRetries: 5,
};

/** The list-changed notifications of a member a virtual server passes on, each as it is named, and the `subscriptions/listen` flag asking for it. */
const LIST_CHANGED = [
  [ToolListChangedNotificationSchema, 'notifications/tools/list_changed', 'toolsListChanged'],
  [PromptListChangedNotificationSchema, 'notifications/prompts/list_changed', 'promptsListChanged'],
  [ResourceListChangedNotificationSchema, 'notifications/resources/list_changed', 'resourcesListChanged'],
] as const;

/** Where a 2026-07-28 notification names the `subscriptions/listen` request it belongs to. */
const META_SUBSCRIPTION = 'io.modelcontextprotocol/subscriptionId';

/**
 * A `subscriptions/listen` stream (MCP 2026-07-28): the request's id, and the notifications it asked
 * for (`params.notifications`: `toolsListChanged`, `promptsListChanged`, `resourcesListChanged`).
 */
export interface ListenSubscription {
  id: string | number;
  notifications: Partial<Record<(typeof LIST_CHANGED)[number][2], boolean>>;
}

/** One open `GET` stream of a session (or `subscriptions/listen` stream), and the member clients listening for it. */
interface OpenStream {
  caller: string;
  res: ServerResponse;
  /** For a `subscriptions/listen` stream: its subscription. */
  subscription?: ListenSubscription;
  /** How many member connections it holds (counted against {@link VirtualStreamLimits.memberConnections}). */
  memberConnections: number;
  /** The member clients connected (or connecting) for this stream, each as the function that stops it; called when the stream ends. */
  listeners: Promise<(() => void) | undefined>[];
  /** Aborts the member clients' handshakes still under way when the stream ends. */
  ending: AbortController;
  timer?: NodeJS.Timeout;
  expiresAt: number;
}

/** A member a stream listens to: its endpoint URL and the headers to reach it with. */
interface ListenedMember {
  server: string;
  url: URL;
  headers: Record<string, string>;
}

/**
 * The `GET` streams of virtual servers' sessions on this instance: at most one a session (a second
 * is `409`, as the SDK's transport answers), bounded per caller and in all, each ended when idle,
 * when its session ends or expires, and at shutdown. Each stream has a member client of its own for
 * every member (with the caller's credentials, through the member's own endpoint): the member's
 * `GET` stream brings its `notifications/tools/list_changed` (and prompts, resources), and the
 * stream passes one on for each.
 */
export class ListChangedStreams {
  private readonly open = new Map<string, OpenStream>();
  private readonly perCaller = new Map<string, number>();
  private readonly limits: VirtualStreamLimits;
  /** Member connections the open streams hold. */
  private memberConnections = 0;

  constructor(
    private readonly logger: Logger,
    limits: Partial<VirtualStreamLimits> = {},
  ) {
    this.limits = { ...VIRTUAL_STREAM_LIMITS, ...limits };
  }

  /** How many streams are open now. */
  get size(): number {
    return this.open.size;
  }

  /**
   * Opens the stream of `session` on `res` for `caller` (the session's binding), listening to
   * `members`; answers `409` itself when the session has one open here. Throws
   * {@link VirtualStreamLimitError} beyond the bounds (nothing written).
   */
  start(
    session: Pick<VirtualSession, 'id' | 'expiresAt'>,
    caller: string,
    res: ServerResponse,
    members: readonly ListenedMember[],
    subscription?: ListenSubscription,
  ): void {
    if (this.open.has(session.id)) {
      const body = JSON.stringify({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32000, message: 'Conflict: Only one SSE stream is allowed per session' },
      });
      res.writeHead(409, { 'content-type': 'application/json' });
      res.end(body);
      return;
    }
    const held = this.perCaller.get(caller) ?? 0;
    if (held >= this.limits.perCaller)
      throw new VirtualStreamLimitError(
        `This caller holds ${held} streams of virtual MCP servers open, the most allowed: close one first.`,
      );
    if (this.open.size >= this.limits.total || this.memberConnections + members.length > this.limits.memberConnections)
      throw new VirtualStreamLimitError(
        `The gateway holds ${this.open.size} streams of virtual MCP servers open, the most it allows: try again later.`,
      );
    const stream: OpenStream = {
      caller,
      res,
      subscription,
      listeners: [],
      ending: new AbortController(),
      expiresAt: session.expiresAt,
      memberConnections: members.length,
    };
    this.memberConnections += members.length;
    this.open.set(session.id, stream);
    this.perCaller.set(caller, held + 1);
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache, no-transform',
      'x-accel-buffering': 'no',
    });
    res.flushHeaders();
    if (subscription !== undefined) {
      const granted = Object.fromEntries(
        LIST_CHANGED.map(([, , flag]) => [flag, subscription.notifications[flag] === true]),
      );
      writeEvent(res, {
        jsonrpc: '2.0',
        method: 'notifications/subscriptions/acknowledged',
        params: { notifications: granted, _meta: { [META_SUBSCRIPTION]: subscription.id } },
      });
    }
    this.rearm(session.id, stream);
    res.once('close', () => this.drop(session.id, stream));
    for (const member of members) stream.listeners.push(this.listen(session.id, stream, member));
  }

  /** Ends the stream of session `id` on this instance, if it has one (the session ended). */
  end(id: string): void {
    const stream = this.open.get(id);
    if (stream !== undefined) {
      this.drop(id, stream);
      stream.res.end();
    }
  }

  /** Ends every stream and its member clients (shutdown). */
  close(): void {
    for (const [id, stream] of [...this.open]) {
      this.drop(id, stream);
      stream.res.end();
    }
  }

  /**
   * A member client of `stream` listening to `member`, as the function that stops it; undefined when
   * the member cannot be reached or sends no list changes.
   */
  private async listen(id: string, stream: OpenStream, member: ListenedMember): Promise<(() => void) | undefined> {
    const client = new Client({ name: 'gateway-virtual-listener', version: '1.0.0' });
    // Its own copy: set to no retry when it stops, so the end of its GET stream (which its DELETE
    // brings) does not open another.
    const reconnection = { ...LISTENER_RECONNECTION };
    const stop = () => {
      reconnection.maxRetries = 0;
      closeClient(client);
    };
    const subscription = stream.subscription;
    for (const [schema, method, flag] of LIST_CHANGED)
      client.setNotificationHandler(schema, () => {
        if (this.open.get(id) !== stream) return;
        if (subscription === undefined) writeEvent(stream.res, { jsonrpc: '2.0', method });
        else if (subscription.notifications[flag] === true)
          writeEvent(stream.res, {
            jsonrpc: '2.0',
            method,
            params: { _meta: { [META_SUBSCRIPTION]: subscription.id } },
          });
        else return;
        this.rearm(id, stream);
      });
    try {
      await client.connect(
        new StreamableHTTPClientTransport(member.url, {
          requestInit: { headers: member.headers },
          fetch: (url, init) => loopbackFetch(url, init, listenerAgent),
          reconnectionOptions: reconnection,
        }),
        { signal: AbortSignal.any([stream.ending.signal, AbortSignal.timeout(LISTENER_CONNECT_TIMEOUT_MS)]) },
      );
    } catch (error) {
      this.logger.debug(
        { server: member.server, err: { message: String((error as Error)?.message).slice(0, 200) } },
        'a member of a virtual MCP server could not be listened to',
      );
      // A handshake cut short may have begun a member session (DELETE it) and its GET (aborted).
      stop();
      return undefined;
    }
    const offered = client.getServerCapabilities();
    const changes =
      offered?.tools?.listChanged === true ||
      offered?.prompts?.listChanged === true ||
      offered?.resources?.listChanged === true;
    // A member that sends no list changes, or a stream that ended meanwhile: nothing to listen for.
    if (!changes || this.open.get(id) !== stream) {
      stop();
      return undefined;
    }
    return stop;
  }

  /** (Re)starts the timer that ends `stream` when idle for `idleMs`, or when its session expires. */
  private rearm(id: string, stream: OpenStream): void {
    clearTimeout(stream.timer);
    const wait = Math.max(0, Math.min(this.limits.idleMs, stream.expiresAt - Date.now()));
    stream.timer = setTimeout(() => this.end(id), wait);
    stream.timer.unref();
  }

  private drop(id: string, stream: OpenStream): void {
    if (this.open.get(id) !== stream) return;
    this.open.delete(id);
    clearTimeout(stream.timer);
    stream.ending.abort();
    this.memberConnections -= stream.memberConnections;
    const held = (this.perCaller.get(stream.caller) ?? 1) - 1;
    if (held <= 0) this.perCaller.delete(stream.caller);
    else this.perCaller.set(stream.caller, held);
    for (const listener of stream.listeners) void listener.then((stop) => stop?.()).catch(() => undefined);
  }
}

/** Writes one JSON-RPC message as an event of an event stream. */
function writeEvent(res: ServerResponse, message: unknown): void {
  res.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
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

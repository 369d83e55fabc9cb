/**
 * The member clients of virtual MCP servers (CONTRACT section 16): how the gateway reaches a
 * member's own endpoint, `/mcp/<member>` of this same gateway, as an MCP SDK `Client` with the
 * caller's credentials (`loopbackFetch`), and the clients kept per caller and member for 30 s
 * after their `initialize` (`MemberClients`), lent to one request at a time
 * (`MemberConnections`): a call or list of a caller reuses its member session.
 */
import { hash } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { Agent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { MemberHandshake } from './virtual-fast-call';
import type { InProcessLister } from './virtual-fast-list';
import { virtualServerMarker } from './virtual-marker';
import { refuseMemberRequests } from './virtual-relay';

/**
 * The request headers a member's endpoint authenticates and checks the caller by, passed on as the
 * caller sent them (the virtual endpoint has already checked them): credentials, `Host` and
 * `Origin` (the DNS-rebinding guard), metadata and the trace context.
 */
export const CALLER_HEADERS = [
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
export const PER_REQUEST_HEADERS = ['traceparent', 'tracestate'] as const;

/** How long a member client, once initialized, is kept for the same caller: 30 s from its `initialize`. */
export const MEMBER_CLIENT_TTL_MS = 30_000;

/** How many member clients are kept at most (least recently used dropped first): 512. */
export const MEMBER_CLIENTS_MAX = 512;

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
export const listenerAgent = new Agent({ keepAlive: false });

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
export function pickHeaders(req: IncomingMessage, names: readonly string[]): Record<string, string> {
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
    // One hash of the same bytes (the same digest as one update a header), in one call without a
    // Hash object: a call's fewer CPU (about 0.4 µs against 1.2 µs).
    let text = `${slug}\0${server}`;
    for (const name of CALLER_HEADERS) text += `\0${name}\0${caller[name] ?? ''}`;
    return hash('sha256', text, 'base64url');
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

/** Ends a member client's session (a stateful member gets its `DELETE`), never throws. */
export function closeClient(client: Client): void {
  const transport = client.transport as StreamableHTTPClientTransport | undefined;
  const ending = transport?.sessionId !== undefined ? transport.terminateSession() : Promise.resolve();
  void ending.catch(() => undefined).finally(() => void client.close().catch(() => undefined));
}

/** One caller's member clients for one request through a virtual server: kept ones where there are. */
export class MemberConnections {
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

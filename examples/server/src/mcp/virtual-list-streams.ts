/**
 * The server-to-client `GET` streams of virtual servers' sessions (and 2026-07-28
 * `subscriptions/listen` streams): each listens to the members' list changes through member
 * clients of its own and passes them on to the caller, within {@link VirtualStreamLimits}.
 */
import type { ServerResponse } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import { closeClient, listenerAgent, loopbackFetch } from './virtual-member-clients';
import type { VirtualSession } from './virtual-sessions';

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
export const LIST_CHANGED = [
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
export interface ListenedMember {
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

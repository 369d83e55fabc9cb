/**
 * The fast path of a call through a virtual MCP server (CONTRACT section 16, issue #44): a
 * `tools/call`, `prompts/get` or `resources/read` that the virtual server routes to a member is
 * handed in process to the member's own MCP proxy (`identityForwarding` of `@gw/mcp-gateway`, the
 * handler after the virtual servers' in the `/mcp` route group), with the caller's identity
 * already on the request. No SDK `Server` or `Client` and no loopback hop: the member endpoint's
 * checks (policies, the tool gate, pinning, limits, identity forwarding, upstream credentials) run
 * once, on exactly the bytes the proxy forwards (handed over as `MCP_REQUEST_BODY`), and the
 * request's one record is the member request's (`mcp_server` = the member, `mcp_virtual_server` =
 * the virtual slug).
 *
 * The answer goes back as the member's proxy writes it (an event stream with progress
 * notifications included), except: the member's `Mcp-Session-Id` never reaches the caller; a
 * 2026-07-28 caller's result gets `resultType: "complete"`; and a failure is the JSON-RPC error the
 * SDK path answers (`-32603` with `data.code: "upstream_unavailable"` for a member down or a 5xx,
 * `-32603` with the gateway error's code and `data.status` for a 4xx of the member endpoint, the
 * member's own JSON-RPC error as it is).
 *
 * What it does not cover is served by the SDK path (`virtual-servers.ts`): a batch, an
 * `initialize`, a caller that declared `elicitation` or `sampling` (member requests are relayed
 * there), a name not routed yet (the caller's lists decide), a request the SDK transport would
 * refuse (its `Accept`, content type or protocol revision).
 */
import type {
  IncomingHttpHeaders,
  IncomingMessage,
  OutgoingHttpHeader,
  OutgoingHttpHeaders,
  ServerResponse,
} from 'node:http';
import { StringDecoder } from 'node:string_decoder';
import { MCP_REQUEST_BODY, parseMediaType, type RequestWithBody, type VirtualMembers } from '@gw/mcp-gateway';
import { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import { requestState } from '../http/request-context';
import type { NodeMiddleware } from '../http/route-table';

/** The methods the fast path serves: those routed to one member by a name or URI. */
export const FAST_CALL_METHODS: ReadonlySet<string> = new Set(['tools/call', 'prompts/get', 'resources/read']);

/** The JSON-RPC `data.code` of a call whose member did not answer (CONTRACT section 16). */
export const UPSTREAM_UNAVAILABLE = 'upstream_unavailable';

/** JSON-RPC's internal error: what a member's failure becomes for the caller (and a list's failure without a code of its own). */
export const INTERNAL_ERROR = -32603;

/** The most bytes of a member endpoint's error answer (4xx, 5xx) read for its gateway error code: 64 KiB. */
const MAX_FAILURE_BYTES = 64 * 1024;

/** The session of the caller's kept SDK client of a member (its `initialize` made once, 30 s). */
export interface MemberHandshake {
  /** The member's session id (a stateful member), sent as `Mcp-Session-Id` to the member only. */
  sessionId?: string;
  /** The protocol revision the member agreed to, sent as `MCP-Protocol-Version`. */
  protocolVersion?: string;
  /** Drops the kept client (the member no longer knows its session): the next call initializes anew. */
  forget(): void;
  /** The request no longer uses the member session: the kept client may be ended once it expired. */
  release(): void;
  /**
   * Answers a request the member sent within the call (elicitation, sampling) as the kept client
   * answers one: refused (`-32601`, `relay_unavailable`), posted to the member's session. The fast
   * path serves callers that cannot receive such requests.
   */
  refuse(request: { jsonrpc: '2.0'; id: string | number; method: string; params?: unknown }): void;
}

/** A call the fast path serves: the member, and the request it is sent (its own name, the caller's id). */
export interface FastCallPlan {
  server: string;
  method: string;
  /** The caller's JSON-RPC id, answered with. */
  id: string | number;
  /** The member's request, serialised: the bytes the member's proxy checks and forwards. */
  body: Buffer;
}

/** The JSON-RPC error a caller is answered with: code, message and data, as the SDK path answers it. */
export interface CallerError {
  code: number;
  message: string;
  data?: unknown;
}

/** What the fast path needs of the virtual server's handler for one request. */
export interface FastCallContext {
  /** The virtual server's slug. */
  slug: string;
  /** Whether the caller speaks revision 2026-07-28 (its result gets `resultType: "complete"`). */
  modern: boolean;
  /** The member's own endpoint: the MCP proxy, called with `req.url` = `/<member>`. */
  memberEndpoint: NodeMiddleware;
  /** The caller's member session of `server` (rejects as its `initialize` failed). */
  handshake: (server: string) => Promise<MemberHandshake>;
  /** The caller's member session of `server` when it is at hand without waiting (its kept client initialized), else undefined. */
  readyHandshake?: (server: string) => MemberHandshake | undefined;
  /** What a member's failure to initialize becomes for the caller (the SDK path's `memberFailure`). */
  failure: (server: string, error: unknown) => CallerError;
}

/** Whether a parsed JSON value is an object (not an array, not null). */
export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The client capabilities whose requests a member may send back in a call: relayed by the SDK path only. */
const RELAYED_CAPABILITIES = ['elicitation', 'sampling'] as const;

/** Where a 2026-07-28 request carries its client's capabilities. */
const META_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';

/**
 * The caller's `_meta` as the member is sent it on the fast path: without the request metadata of
 * revision 2026-07-28 (`io.modelcontextprotocol/…`: the member speaks its own revision); the
 * caller's `progressToken` stays (the member's progress notifications reach the caller as sent).
 */
function fastMeta(meta: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (meta === undefined) return undefined;
  const kept = Object.entries(meta).filter(([key]) => !key.startsWith('io.modelcontextprotocol/'));
  return kept.length === 0 ? undefined : Object.fromEntries(kept);
}

/**
 * Whether the request's headers are ones the SDK transport serves without an error of its own: an
 * `Accept` of both JSON and event streams, one `Content-Type` of JSON, a known (or no) revision.
 * Another request takes the SDK path, which answers as it always did.
 */
export function fastCallHeaders(req: IncomingMessage): boolean {
  const accept = String(req.headers.accept ?? '');
  if (!accept.includes('application/json') || !accept.includes('text/event-stream')) return false;
  const types = req.headersDistinct['content-type'];
  if (types?.length !== 1 || parseMediaType(types[0])?.essence !== 'application/json') return false;
  const version = req.headers['mcp-protocol-version'];
  return version === undefined || (typeof version === 'string' && SUPPORTED_PROTOCOL_VERSIONS.includes(version));
}

/**
 * The fast call of a request's body, or undefined when the SDK path serves it: one JSON-RPC
 * request (not a batch) of {@link FAST_CALL_METHODS} of the form the SDK's schemas accept, whose
 * name (URI) a member is known to own now, from a caller that declared no capability a member's
 * requests need (`capabilities`: its session's; a 2026-07-28 request's own `_meta`).
 */
export function planFastCall(
  body: unknown,
  members: VirtualMembers,
  capabilities: Record<string, unknown> | undefined,
): FastCallPlan | undefined {
  if (!isRecord(body) || body.jsonrpc !== '2.0') return undefined;
  const { id, method, params } = body;
  if ((typeof id !== 'string' && typeof id !== 'number') || typeof method !== 'string') return undefined;
  if (!FAST_CALL_METHODS.has(method) || !isRecord(params)) return undefined;
  const meta = params._meta;
  if (meta !== undefined && !isRecord(meta)) return undefined;
  const token = meta?.progressToken;
  if (token !== undefined && typeof token !== 'string' && typeof token !== 'number') return undefined;
  if (declaresRelayed(capabilities) || (meta !== undefined && declaresRelayed(meta[META_CAPABILITIES])))
    return undefined;
  let server: string | undefined;
  let name: string | undefined;
  if (method === 'resources/read') {
    if (typeof params.uri !== 'string') return undefined;
    server = members.routeResource(params.uri);
  } else {
    if (typeof params.name !== 'string') return undefined;
    const args = params.arguments;
    if (args !== undefined && !isRecord(args)) return undefined;
    if (method === 'prompts/get' && args !== undefined && Object.values(args).some((v) => typeof v !== 'string'))
      return undefined;
    const target = method === 'tools/call' ? members.routeTool(params.name) : members.routePrompt(params.name);
    server = target?.server;
    name = target?.name;
  }
  if (server === undefined) return undefined;
  const own: Record<string, unknown> = { ...params };
  if (meta !== undefined) own._meta = fastMeta(meta);
  if (name !== undefined) own.name = name;
  // Serialised from the parsed request: one `name`, the member's, whatever the caller's bytes held.
  const request = { jsonrpc: '2.0', id, method, params: own };
  return { server, method, id, body: Buffer.from(JSON.stringify(request)) };
}

/** Whether a client's capabilities declare one a member's requests need ({@link RELAYED_CAPABILITIES}). */
function declaresRelayed(capabilities: unknown): boolean {
  if (!isRecord(capabilities)) return false;
  for (const name of RELAYED_CAPABILITIES) if (capabilities[name] !== undefined) return true;
  return false;
}

/**
 * Whether a caller's header is the virtual server's, not the member's: its session, the 2026-07-28
 * mirror headers (of the caller's names), a stream's `Last-Event-ID`, the body's framing, the revision.
 */
export function isVirtualServerHeader(name: string): boolean {
  return (
    name === 'mcp-session-id' ||
    name === 'mcp-method' ||
    name === 'mcp-name' ||
    name.startsWith('mcp-param-') ||
    name === 'last-event-id' ||
    name === 'transfer-encoding' ||
    name === 'mcp-protocol-version'
  );
}

/**
 * The request's headers as the member is sent them: the virtual server's replaced by the member
 * session's, and the body's length. New objects (`headers`, and Node's distinct lists the proxy
 * reads, cached when first read): deleting from the parsed ones would leave them slow to read.
 */
function memberHeaders(req: IncomingMessage, plan: FastCallPlan, handshake: MemberHandshake): void {
  const headers: IncomingHttpHeaders = {};
  const distinct: Record<string, string[]> = {};
  const caller = req.headers;
  for (const name in caller) {
    const value = caller[name];
    if (value === undefined || name === 'content-length' || isVirtualServerHeader(name)) continue;
    headers[name] = value;
    distinct[name] = Array.isArray(value) ? value : [value];
  }
  const set = (name: string, value: string) => {
    headers[name] = value;
    distinct[name] = [value];
  };
  if (handshake.sessionId !== undefined) set('mcp-session-id', handshake.sessionId);
  if (handshake.protocolVersion !== undefined) set('mcp-protocol-version', handshake.protocolVersion);
  set('content-length', String(plan.body.length));
  req.headers = headers;
  (req as { headersDistinct: Record<string, string[]> }).headersDistinct = distinct;
}

/** A JSON-RPC error answer for the caller's request. */
function errorAnswer(id: string | number, error: CallerError): string {
  return JSON.stringify({ jsonrpc: '2.0', id, error });
}

/**
 * What a failure of the member's endpoint becomes for the caller (as the SDK path's
 * `memberFailure`): a gateway error of status below 500 is `-32603` with its code and status; a
 * member down, a timeout, a 5xx (or anything else) `-32603` with `data.code: "upstream_unavailable"`.
 */
export function endpointFailure(server: string, status: number | undefined, code: string | undefined): CallerError {
  if (status !== undefined && status < 500) {
    const named = code ?? 'member_refused';
    return {
      code: INTERNAL_ERROR,
      message: `The MCP server "${server}" refused the call (${named}).`,
      data: { code: named, server, status },
    };
  }
  return {
    code: INTERNAL_ERROR,
    message: `The MCP server "${server}" is unavailable.`,
    data: { code: UPSTREAM_UNAVAILABLE, server },
  };
}

/** The `error.code` of a gateway error answer (CONTRACT section 7), if the body is one. */
function gatewayErrorCode(body: Buffer): string | undefined {
  try {
    const code = (JSON.parse(body.toString('utf8')) as { error?: { code?: unknown } } | null)?.error?.code;
    return typeof code === 'string' ? code : undefined;
  } catch {
    return undefined;
  }
}

/** A JSON-RPC response (or batch of them) with `resultType: "complete"` on each result, for a 2026-07-28 caller. */
function completed(message: unknown): unknown {
  if (Array.isArray(message)) return message.map(completed);
  if (isRecord(message) && isRecord(message.result) && message.result.resultType === undefined)
    return { ...message, result: { ...message.result, resultType: 'complete' } };
  return message;
}

/** Adds `resultType: "complete"` to the results of an event stream's one-line `data:` fields, as the stream passes. */
class CompletedEvents {
  private readonly decoder = new StringDecoder('utf8');
  private pending = '';

  constructor(
    /** Whether results get `resultType: "complete"` (a 2026-07-28 caller). */
    private readonly modern: boolean,
    /** Called with each request of the member's (it is not passed on: an SSE comment stands in its place). */
    private readonly onRequest: (request: { jsonrpc: '2.0'; id: string | number; method: string }) => void,
  ) {}

  /** The text of `chunk` to send, up to its last complete line. */
  push(chunk: Buffer | string): string {
    this.pending += typeof chunk === 'string' ? chunk : this.decoder.write(chunk);
    const last = Math.max(this.pending.lastIndexOf('\n'), this.pending.lastIndexOf('\r'));
    if (last === -1) return '';
    const ready = this.pending.slice(0, last + 1);
    this.pending = this.pending.slice(last + 1);
    return ready.replace(/^data: ?(.*)$/gm, (line, data: string) => {
      const result = this.modern && data.includes('"result"');
      if (!result && !data.includes('"method"')) return line;
      try {
        const message = JSON.parse(data) as unknown;
        if (isMemberRequest(message)) {
          this.onRequest(message);
          return ': a request of the member, answered by the gateway';
        }
        return result ? `data: ${JSON.stringify(completed(message))}` : line;
      } catch {
        return line;
      }
    });
  }

  /** What is left at the end of the stream. */
  end(): string {
    const rest = this.pending + this.decoder.end();
    this.pending = '';
    return rest;
  }
}

/** Whether a message is a JSON-RPC request (a `method` and an `id`), not a notification or an answer. */
function isMemberRequest(message: unknown): message is { jsonrpc: '2.0'; id: string | number; method: string } {
  return (
    isRecord(message) &&
    typeof message.method === 'string' &&
    (typeof message.id === 'string' || typeof message.id === 'number')
  );
}

/** The headers of a `writeHead` call as an object (its raw `[name, value, …]` form too), without `Mcp-Session-Id`. */
function withoutSession(headers: OutgoingHttpHeaders | OutgoingHttpHeader[] | undefined): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  if (Array.isArray(headers)) {
    for (let i = 0; i + 1 < headers.length; i += 2) out[String(headers[i]).toLowerCase()] = headers[i + 1];
  } else if (headers !== undefined)
    for (const [name, value] of Object.entries(headers)) out[name.toLowerCase()] = value;
  delete out['mcp-session-id'];
  return out;
}

type WriteCallback = (error?: Error | null) => void;
type Chunk = Buffer | string | Uint8Array;

/**
 * Rewrites the answer the member's proxy writes to `res`, as the module's comment says: patched on
 * the response object (its `writeHead`, `write`, `end`, `flushHeaders`), so every way the proxy
 * writes (whole, piped, through the tool gate, an answer of its own) is seen. `failed` answers a
 * member endpoint's error status from its body. Returns `answer`, which writes a JSON-RPC error
 * with the patches removed (a proxy error passed to `next`).
 */
function rewriteAnswer(
  res: ServerResponse,
  modern: boolean,
  failed: (status: number, body: Buffer) => string,
  refuse: MemberHandshake['refuse'],
): { answer: (text: string) => void } {
  const original = { writeHead: res.writeHead, write: res.write, end: res.end, flushHeaders: res.flushHeaders };
  /** `pass`: as written (headers cleaned); `held`: read whole, then answered; `events`: an event stream, rewritten as it passes. */
  let mode: 'undecided' | 'pass' | 'held' | 'events' = 'undecided';
  let status = 200;
  let headers: OutgoingHttpHeaders = {};
  const held: Buffer[] = [];
  let heldBytes = 0;
  let events: CompletedEvents | undefined;
  const restore = () => Object.assign(res, original);
  const writeWhole = (code: number, out: OutgoingHttpHeaders, bytes: Buffer | string) => {
    restore();
    res.removeHeader('mcp-session-id');
    res.removeHeader('content-length');
    res.removeHeader('transfer-encoding');
    out['content-length'] = Buffer.byteLength(bytes);
    res.writeHead(code, out).end(bytes);
  };
  const decide = function writeHead(this: ServerResponse, code: number, ...rest: unknown[]): ServerResponse {
    if (mode !== 'undecided') return mode === 'pass' ? original.writeHead.apply(res, [code, ...rest] as never) : res;
    status = code;
    headers = withoutSession(
      (typeof rest[0] === 'string' ? rest[1] : rest[0]) as OutgoingHttpHeaders | OutgoingHttpHeader[] | undefined,
    );
    res.removeHeader('mcp-session-id');
    const type = String(headers['content-type'] ?? res.getHeader('content-type') ?? '');
    if (code >= 400 || (modern && code < 300 && parseMediaType(type)?.essence === 'application/json')) mode = 'held';
    else if (code < 300 && type.startsWith('text/event-stream')) {
      // Results completed for a 2026-07-28 caller; a member's own requests answered here, not passed on.
      mode = 'events';
      events = new CompletedEvents(modern, refuse);
      delete headers['content-length'];
      res.removeHeader('content-length');
      original.writeHead.call(res, code, headers);
    } else {
      mode = 'pass';
      original.writeHead.call(res, code, headers);
    }
    return res;
  };
  const take = (chunk: Chunk | undefined, encoding: unknown) => {
    if (chunk === undefined || chunk === null || typeof chunk === 'function') return;
    const bytes =
      typeof chunk === 'string'
        ? Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8')
        : Buffer.from(chunk);
    if (mode === 'held' && status >= 400 && heldBytes + bytes.length > MAX_FAILURE_BYTES) return;
    heldBytes += bytes.length;
    held.push(bytes);
  };
  const write = function write(this: ServerResponse, chunk: Chunk, ...rest: unknown[]): boolean {
    if (mode === 'undecided') decide.call(res, res.statusCode);
    if (mode === 'pass') return original.write.apply(res, [chunk, ...rest] as never);
    if (mode === 'events') {
      const text = (events as CompletedEvents).push(typeof chunk === 'string' ? chunk : Buffer.from(chunk));
      return text === '' ? true : original.write.apply(res, [text] as never);
    }
    take(chunk, rest[0]);
    const callback = rest.find((value) => typeof value === 'function') as WriteCallback | undefined;
    if (callback !== undefined) process.nextTick(callback);
    return true;
  };
  const end = function end(this: ServerResponse, ...args: unknown[]): ServerResponse {
    if (mode === 'undecided') decide.call(res, res.statusCode);
    if (mode === 'pass') return original.end.apply(res, args as never);
    const chunk = typeof args[0] === 'function' ? undefined : (args[0] as Chunk | undefined);
    const callback = args.find((value) => typeof value === 'function') as (() => void) | undefined;
    if (mode === 'events') {
      const stream = events as CompletedEvents;
      const text =
        (chunk === undefined ? '' : stream.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk))) + stream.end();
      restore();
      return res.end(text, callback);
    }
    take(chunk, args[1]);
    const body = Buffer.concat(held);
    if (status >= 400) {
      writeWhole(200, { 'content-type': 'application/json' }, failed(status, body));
    } else {
      let text: string | Buffer = body;
      try {
        text = JSON.stringify(completed(JSON.parse(body.toString('utf8'))));
      } catch {
        // Not JSON: sent as the member's proxy wrote it.
      }
      writeWhole(status, headers, text);
    }
    if (callback !== undefined) res.once('finish', callback);
    return res;
  };
  const flushHeaders = function flushHeaders(this: ServerResponse): void {
    if (mode === 'undecided') decide.call(res, res.statusCode);
    if (mode !== 'held') original.flushHeaders.call(res);
  };
  Object.assign(res, { writeHead: decide, write, end, flushHeaders });
  return {
    answer: (text) => {
      restore();
      writeWhole(200, { 'content-type': 'application/json' }, text);
    },
  };
}

/**
 * Serves `plan` on the fast path: the caller's member session (kept SDK client's `initialize`),
 * then the member's own endpoint in process, its answer rewritten as the module's comment says.
 */
export function serveFastCall(
  req: IncomingMessage,
  res: ServerResponse,
  plan: FastCallPlan,
  context: FastCallContext,
): void {
  const { server } = plan;
  const fail = (error: CallerError) => {
    if (res.headersSent || res.destroyed) return;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(errorAnswer(plan.id, error));
  };
  const handed = (handshake: MemberHandshake) => {
    // The member session stays up until the answer is over (a kept client expiring meanwhile waits).
    if (res.destroyed) return handshake.release();
    res.once('close', () => handshake.release());
    memberHeaders(req, plan, handshake);
    req.url = `/${server}`;
    (req as RequestWithBody)[MCP_REQUEST_BODY] = plan.body;
    requestState(req).virtualMember = { path: `/mcp/${server}`, virtualServer: context.slug };
    const rewriter = rewriteAnswer(
      res,
      context.modern,
      (status, body) => {
        // A stateful member that no longer knows the kept session: the next call begins a new one.
        if (status === 404 && handshake.sessionId !== undefined) handshake.forget();
        return errorAnswer(plan.id, endpointFailure(server, status, gatewayErrorCode(body)));
      },
      handshake.refuse,
    );
    context.memberEndpoint(req, res, (error?: unknown) => {
      if (res.headersSent || res.destroyed) {
        res.destroy();
        return;
      }
      const failure = error as { status?: unknown; code?: unknown } | undefined;
      const status = typeof failure?.status === 'number' ? failure.status : undefined;
      const code = typeof failure?.code === 'string' ? failure.code : undefined;
      const gateway = (res as { locals?: { gateway?: { errorCode?: string } } }).locals?.gateway;
      if (gateway !== undefined && code !== undefined) gateway.errorCode = code;
      rewriter.answer(errorAnswer(plan.id, endpointFailure(server, status, code)));
    });
  };
  // A kept member session is handed at once; the first call of a caller waits for its initialize.
  const ready = context.readyHandshake?.(server);
  if (ready !== undefined) return handed(ready);
  context.handshake(server).then(handed, (error: unknown) => {
    const { code, message, data } = context.failure(server, error);
    fail(data === undefined ? { code, message } : { code, message, data });
  });
}

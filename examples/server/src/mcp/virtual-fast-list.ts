/**
 * The members' lists of a virtual MCP server (CONTRACT section 16) asked in process: each page
 * (`tools/list`, `prompts/list`, `resources/list`, `resources/templates/list`) is handed to the
 * member's own MCP proxy (`identityForwarding`) as a request derived from the caller's (its
 * identity, credentials, limits step and trace), and the proxy's answer is captured in memory
 * instead of travelling a loopback HTTP hop and an SDK client. The member endpoint's checks (policy,
 * the tool gate, pinning, identity forwarding, upstream credentials) are the same ones; what is not
 * made is the member request's own record (the virtual request has its record).
 *
 * A failure is thrown as the SDK client throws it, so the virtual server treats it alike: an HTTP
 * error status (the member endpoint's gateway error, or the member's) as a `StreamableHTTPError`
 * with that status, a JSON-RPC error answer as an `McpError`.
 */
import type { IncomingMessage, OutgoingHttpHeader, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { Writable } from 'node:stream';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { MCP_REQUEST_BODY, type RequestWithBody } from '@gw/mcp-gateway';
import { endWithJson } from '@gw/upstream';
import type { NodeMiddleware } from '../http/route-table';
import { INTERNAL_ERROR, isRecord, isVirtualServerHeader, type MemberHandshake } from './virtual-fast-call';

/** The most bytes of a member's list page kept in memory: 16 MiB (a larger answer fails the member's list). */
export const MAX_LIST_ANSWER_BYTES = 16 * 1024 * 1024;

/** A member answer the proxy wrote to a {@link CapturedAnswer}. */
interface Captured {
  status: number;
  headers: Record<string, OutgoingHttpHeader>;
  body: Buffer;
}

/**
 * A response object the MCP proxy writes to as to a `ServerResponse` (whole, piped, or through the
 * tool gate), kept in memory; `answer` settles when it ends, or fails when it is destroyed.
 */
class CapturedAnswer extends Writable {
  statusCode = 200;
  headersSent = false;
  locals: Record<string, unknown> = {};
  readonly answer: Promise<Captured>;
  private readonly fields: Record<string, OutgoingHttpHeader> = {};
  private readonly chunks: Buffer[] = [];
  private size = 0;

  constructor() {
    super();
    this.answer = new Promise((resolve, reject) => {
      this.once('finish', () =>
        resolve({ status: this.statusCode, headers: this.fields, body: Buffer.concat(this.chunks) }),
      );
      this.once('close', () => {
        if (!this.writableFinished) reject(new Error('The member answer ended before it was whole.'));
      });
    });
    // Rejections are read through `answer`; an unread one is not the process's concern.
    this.answer.catch(() => undefined);
  }

  setHeader(name: string, value: OutgoingHttpHeader): this {
    this.fields[name.toLowerCase()] = value;
    return this;
  }

  getHeader(name: string): OutgoingHttpHeader | undefined {
    return this.fields[name.toLowerCase()];
  }

  getHeaders(): Record<string, OutgoingHttpHeader> {
    return { ...this.fields };
  }

  hasHeader(name: string): boolean {
    return Object.hasOwn(this.fields, name.toLowerCase());
  }

  removeHeader(name: string): void {
    delete this.fields[name.toLowerCase()];
  }

  writeHead(status: number, ...rest: unknown[]): this {
    this.statusCode = status;
    const headers = (typeof rest[0] === 'string' ? rest[1] : rest[0]) as
      OutgoingHttpHeaders | OutgoingHttpHeader[] | undefined;
    if (Array.isArray(headers)) {
      for (let i = 0; i + 1 < headers.length; i += 2) this.setHeader(String(headers[i]), headers[i + 1] as string);
    } else if (headers !== undefined)
      for (const [name, value] of Object.entries(headers)) if (value !== undefined) this.setHeader(name, value);
    this.headersSent = true;
    return this;
  }

  flushHeaders(): void {
    this.headersSent = true;
  }

  override _write(chunk: Buffer | string, encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    this.headersSent = true;
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, encoding) : chunk;
    this.size += bytes.length;
    if (this.size > MAX_LIST_ANSWER_BYTES) return done(new Error('The member list answer is too large.'));
    this.chunks.push(bytes);
    done();
  }
}

/** The caller's headers a member request does not carry: the virtual server's session, mirror headers, framing. */
function isVirtualOnly(name: string): boolean {
  return isVirtualServerHeader(name) || name === 'content-length' || name === 'content-type' || name === 'accept';
}

/** Each list's items and the field every item must have as a string. */
const LIST_ITEMS = [
  ['tools', 'name'],
  ['prompts', 'name'],
  ['resources', 'uri'],
  ['resourceTemplates', 'uriTemplate'],
] as const;

/** The JSON-RPC id of in-process list requests (one request per derived request object). */
const LIST_ID = 1;

/**
 * A member's list pages asked in process, as an SDK `Client`'s `listTools`, `listPrompts`,
 * `listResources` and `listResourceTemplates` answer them (the virtual server's page functions call
 * those), for the caller of `caller` and its member session `handshake`.
 */
export class InProcessLister {
  constructor(
    private readonly memberEndpoint: NodeMiddleware,
    private readonly caller: IncomingMessage,
    private readonly server: string,
    private readonly handshake: MemberHandshake,
  ) {}

  listTools(params?: { cursor?: string }, options?: { signal?: AbortSignal }) {
    return this.ask('tools/list', params, options?.signal);
  }

  listPrompts(params?: { cursor?: string }, options?: { signal?: AbortSignal }) {
    return this.ask('prompts/list', params, options?.signal);
  }

  listResources(params?: { cursor?: string }, options?: { signal?: AbortSignal }) {
    return this.ask('resources/list', params, options?.signal);
  }

  listResourceTemplates(params?: { cursor?: string }, options?: { signal?: AbortSignal }) {
    return this.ask('resources/templates/list', params, options?.signal);
  }

  /** One page: the member's JSON-RPC result, or the failure thrown as the SDK client throws it. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the page functions read the result's own fields
  async ask(method: string, params: { cursor?: string } | undefined, signal?: AbortSignal): Promise<any> {
    signal?.throwIfAborted();
    const body = Buffer.from(
      JSON.stringify(
        params === undefined
          ? { jsonrpc: '2.0', id: LIST_ID, method }
          : { jsonrpc: '2.0', id: LIST_ID, method, params },
      ),
    );
    // A request of its own that reads through to the caller's (identity, socket, request state,
    // trace), with the member's path, headers and body.
    const req = Object.create(this.caller) as IncomingMessage & RequestWithBody;
    const headers: IncomingMessage['headers'] = {};
    for (const [name, value] of Object.entries(this.caller.headers))
      if (value !== undefined && !isVirtualOnly(name)) headers[name] = value;
    headers['content-type'] = 'application/json';
    headers.accept = 'application/json, text/event-stream';
    headers['content-length'] = String(body.length);
    if (this.handshake.sessionId !== undefined) headers['mcp-session-id'] = this.handshake.sessionId;
    if (this.handshake.protocolVersion !== undefined) headers['mcp-protocol-version'] = this.handshake.protocolVersion;
    const distinct: Record<string, string[]> = {};
    for (const [name, value] of Object.entries(headers))
      if (value !== undefined) distinct[name] = Array.isArray(value) ? value : [value];
    Object.defineProperties(req, {
      url: { value: `/${this.server}`, writable: true },
      method: { value: 'POST', writable: true },
      headers: { value: headers, writable: true },
      headersDistinct: { value: distinct, writable: true },
      [MCP_REQUEST_BODY]: { value: body, writable: true },
    });
    const res = new CapturedAnswer();
    const abort = () => res.destroy();
    signal?.addEventListener('abort', abort, { once: true });
    let failed: unknown;
    try {
      const proxied = new Promise<void>((resolve) =>
        this.memberEndpoint(req, res as never, (error?: unknown) => {
          failed = error ?? new Error('The member endpoint did not answer.');
          res.destroy();
          resolve();
        }),
      );
      const answer = await Promise.race([res.answer, proxied.then(() => res.answer)]);
      return this.read(answer);
    } catch (error) {
      if (failed !== undefined) {
        const status = (failed as { status?: unknown }).status;
        if (typeof status === 'number' && status < 500) {
          const code = (failed as { code?: unknown }).code;
          throw new StreamableHTTPError(status, `Error POSTing to endpoint: ${JSON.stringify({ error: { code } })}`);
        }
        throw failed;
      }
      signal?.throwIfAborted();
      throw error;
    } finally {
      signal?.removeEventListener('abort', abort);
    }
  }

  /** The result of a captured answer (a JSON answer or an event stream of one response), or its failure. */
  private read(answer: Captured): Record<string, unknown> {
    const text = answer.body.toString('utf8');
    if (answer.status >= 400) {
      // A stateful member that no longer knows the kept session: the next list begins a new one.
      if (answer.status === 404 && this.handshake.sessionId !== undefined) this.handshake.forget();
      throw new StreamableHTTPError(answer.status, `Error POSTing to endpoint: ${text.slice(0, 1000)}`);
    }
    const type = String(answer.headers['content-type'] ?? '');
    let message: unknown;
    try {
      if (type.startsWith('text/event-stream')) {
        for (const line of text.split(/\r?\n/)) {
          if (!line.startsWith('data:')) continue;
          const event = JSON.parse(line.slice(5)) as { id?: unknown };
          if (event.id === LIST_ID) message = event;
        }
      } else message = JSON.parse(text);
    } catch {
      throw new StreamableHTTPError(502, 'The member answered something that is not JSON.');
    }
    const response = message as { result?: unknown; error?: { code?: unknown; message?: unknown; data?: unknown } };
    if (response?.error !== undefined) {
      const code = typeof response.error.code === 'number' ? response.error.code : -32603;
      throw new McpError(code, String(response.error.message ?? ''), response.error.data);
    }
    const result = response?.result as Record<string, unknown> | null | undefined;
    if (typeof result !== 'object' || result === null)
      throw new StreamableHTTPError(502, 'The member answered without a result.');
    // The list's items, of the form the SDK client's schemas require of the fields the merge reads.
    for (const [key, field] of LIST_ITEMS) {
      const items = result[key];
      if (items === undefined) continue;
      if (
        !Array.isArray(items) ||
        items.some(
          (item) =>
            typeof item !== 'object' || item === null || typeof (item as Record<string, unknown>)[field] !== 'string',
        )
      )
        throw new StreamableHTTPError(502, `The member answered a ${key} list of another form.`);
    }
    if (result.nextCursor !== undefined && typeof result.nextCursor !== 'string')
      throw new StreamableHTTPError(502, 'The member answered a cursor that is not a string.');
    return result;
  }
}

/** The list methods a virtual server answers itself, without the SDK server: each merges its members' lists. */
export const FAST_LIST_METHODS: ReadonlySet<string> = new Set([
  'tools/list',
  'prompts/list',
  'resources/list',
  'resources/templates/list',
]);

/** A list request the fast path answers: its method and the caller's JSON-RPC id. */
export interface FastListPlan {
  method: string;
  id: string | number;
}

/**
 * The fast list of a request's body, or undefined when the SDK path serves it: one JSON-RPC
 * request (not a batch) of {@link FAST_LIST_METHODS} whose parameters the SDK's schemas accept (no
 * parameters, or an object with a string `cursor` and an object `_meta`), that asks for no progress
 * (an answer with notifications is an event stream: the SDK path's).
 */
export function planFastList(body: unknown): FastListPlan | undefined {
  if (!isRecord(body) || body.jsonrpc !== '2.0') return undefined;
  const { id, method, params } = body;
  if ((typeof id !== 'string' && typeof id !== 'number') || typeof method !== 'string') return undefined;
  if (!FAST_LIST_METHODS.has(method)) return undefined;
  if (params !== undefined) {
    if (!isRecord(params)) return undefined;
    if (params.cursor !== undefined && typeof params.cursor !== 'string') return undefined;
    const meta = params._meta;
    if (meta !== undefined && (!isRecord(meta) || meta.progressToken !== undefined)) return undefined;
  }
  return { method, id };
}

/**
 * Answers `plan` with the merged list `list` makes, as the SDK server answers a request in JSON:
 * `200`, `application/json`, the result (or the JSON-RPC error of a failure: its `code` when it has
 * one, else `-32603`; its message; its `data`).
 */
export function serveFastList(res: ServerResponse, plan: FastListPlan, list: () => Promise<object>): void {
  list().then(
    (result) => answer(res, { result, jsonrpc: '2.0', id: plan.id }),
    (error: unknown) => {
      const failure = error as { code?: unknown; message?: unknown; data?: unknown } | undefined;
      const code = Number.isSafeInteger(failure?.code) ? (failure?.code as number) : INTERNAL_ERROR;
      const message = typeof failure?.message === 'string' ? failure.message : 'Internal error';
      const data = failure?.data;
      answer(res, {
        jsonrpc: '2.0',
        id: plan.id,
        error: data === undefined ? { code, message } : { code, message, data },
      });
    },
  );
}

/** Writes a JSON-RPC answer `200` as JSON, in pieces when it is large (`endWithJson`: docs/decisions.md). */
function answer(res: ServerResponse, message: object): void {
  if (res.headersSent || res.destroyed) return;
  endWithJson(res, 200, message);
}

import { JsonScanner, type ScannedTool } from './tool-scan';

/** What the host decides about one tool of an MCP server for one caller. */
export type McpToolVerdict = 'allowed' | 'access_denied' | 'tool_pending_approval';

/** An MCP tool as `tools/list` answers it. */
export interface McpListedTool {
  name: string;
  description?: unknown;
  inputSchema?: unknown;
  [field: string]: unknown;
}

/**
 * The host's per-tool rule for one caller on one MCP server. With it, the gateway inspects the
 * caller's `tools/list` and `tools/call` requests (and only those).
 */
export interface McpToolGate {
  /** The verdict on a tool the server listed; only `allowed` tools reach the caller. */
  listed(tool: McpListedTool): McpToolVerdict;
  /** The verdict on a call of tool `name`; any other than `allowed` is answered by the gateway, never sent on. */
  called(name: string): McpToolVerdict;
  /**
   * Whether {@link McpToolGate.listed} reads only the tool's `name`: the gateway then gives it
   * `{ name }` and never reads the rest of the tool. Default false (the whole tool, parsed).
   */
  readonly namesOnly?: boolean;
}

/** What the host decides about one caller on one MCP server. */
export interface McpAccess {
  /** false: the request is answered `403 access_denied`. */
  allowed: boolean;
  /** Per-tool rule. Default: none (every tool; nothing is inspected). */
  tools?: McpToolGate;
}

/** JSON-RPC "invalid params": the code of a refused `tools/call`. */
export const TOOL_REFUSED_CODE = -32602;

type JsonRpcId = string | number | null;

/**
 * Which answers of a stream are `tools/list` answers to filter: the request ids of a POST's
 * `tools/list` requests (`s:<id>` for a string id, `n:<id>` for a number), or
 * {@link EVERY_TOOL_LIST}: every answer with a `result.tools` list, whatever its id (the GET
 * stream, where answers replayed on resumption carry ids of earlier POSTs).
 */
export type ToolListIds = ReadonlySet<string> | typeof EVERY_TOOL_LIST;

/** Every answer holding `result.tools` is filtered (see {@link ToolListIds}). */
export const EVERY_TOOL_LIST = 'every tools/list answer';

/** Request bodies at least this long (in bytes) are read by the scanner rather than `JSON.parse`. */
export const SCANNED_REQUEST_BYTES = 16 * 1024;

interface JsonRpcMessage {
  jsonrpc?: unknown;
  id?: unknown;
  method?: unknown;
  params?: { name?: unknown } | null;
  result?: { tools?: unknown } | null;
}

function idKey(id: unknown): string | undefined {
  if (typeof id === 'string') return `s:${id}`;
  if (typeof id === 'number') return `n:${id}`;
  return undefined;
}

function refusal(id: JsonRpcId, tool: string, verdict: Exclude<McpToolVerdict, 'allowed'>): object {
  const shown = tool.slice(0, 128);
  const message =
    verdict === 'access_denied'
      ? `The tool "${shown}" is not allowed for this caller.`
      : `The tool "${shown}" is new or changed and waits for an administrator's approval.`;
  return { jsonrpc: '2.0', id, error: { code: TOOL_REFUSED_CODE, message, data: { code: verdict, tool: shown } } };
}

/** What {@link inspectRequest} found in a request body. */
export interface InspectedRequest {
  /** The JSON-RPC answer to send instead of forwarding (a refused `tools/call`), or undefined. */
  answer?: string;
  /** The ids of the body's `tools/list` requests, whose answers must be filtered. */
  listIds: ReadonlySet<string>;
}

/**
 * Reads a JSON-RPC request body (one message or a batch): a `tools/call` whose tool the gate does
 * not allow makes the gateway answer instead of the server (a batch holding one is answered whole:
 * the refused calls with their error, its other requests with "not forwarded"); the ids of the
 * `tools/list` requests are returned. A body that is not JSON is left to the server.
 */
export function inspectRequest(body: string | Buffer, gate: McpToolGate): InspectedRequest {
  const messages = requestMessages(body);
  if (messages === undefined) return { listIds: new Set() };
  const { batch, list } = messages;
  const listIds = new Set<string>();
  const refused = new Map<JsonRpcMessage, object>();
  for (const message of list) {
    if (typeof message !== 'object' || message === null) continue;
    if (message.method === 'tools/list') {
      const key = idKey(message.id);
      if (key !== undefined) listIds.add(key);
    } else if (message.method === 'tools/call') {
      const name = typeof message.params?.name === 'string' ? message.params.name : '';
      const verdict = gate.called(name);
      if (verdict !== 'allowed') refused.set(message, refusal(answerId(message.id), name, verdict));
    }
  }
  if (refused.size === 0) return { listIds };
  if (!batch) return { answer: JSON.stringify(refused.values().next().value), listIds };
  const answers = list
    .filter((m) => typeof m === 'object' && m !== null && m.id !== undefined && m.method !== undefined)
    .map(
      (m) =>
        refused.get(m) ?? {
          jsonrpc: '2.0',
          id: answerId(m.id),
          error: { code: -32600, message: 'Not forwarded: the batch holds a refused tools/call.' },
        },
    );
  return { answer: JSON.stringify(answers), listIds };
}

/**
 * The messages of a request body with what the gate reads of them (`id`, `method`,
 * `params.name`): a large body is scanned, not parsed; undefined when it is not JSON.
 */
function requestMessages(body: string | Buffer): { batch: boolean; list: JsonRpcMessage[] } | undefined {
  if (body.length >= SCANNED_REQUEST_BYTES) {
    const scanner = new JsonScanner(typeof body === 'string' ? Buffer.from(body) : body);
    const scanned = scanner.requests();
    if (scanned !== undefined) {
      return {
        batch: scanner.batch,
        list: scanned.map((m) =>
          m.object
            ? {
                ...(m.id !== undefined ? { id: m.id } : {}),
                ...(m.method !== undefined ? { method: m.method } : {}),
                params: m.name === undefined ? null : { name: m.name },
              }
            : (null as unknown as JsonRpcMessage),
        ),
      };
    }
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(typeof body === 'string' ? body : body.toString('utf8'));
  } catch {
    return undefined;
  }
  const batch = Array.isArray(parsed);
  return { batch, list: (batch ? parsed : [parsed]) as JsonRpcMessage[] };
}

function answerId(id: unknown): JsonRpcId {
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

function listed(ids: ToolListIds, key: string | undefined): boolean {
  return key !== undefined && (ids === EVERY_TOOL_LIST || ids.has(key));
}

/** Whether `message` answers one of `listIds` with a tool list; if so, removes the tools the gate does not allow. */
function filterMessage(message: unknown, listIds: ToolListIds, gate: McpToolGate): boolean {
  if (typeof message !== 'object' || message === null) return false;
  const m = message as JsonRpcMessage;
  if (!listed(listIds, idKey(m.id))) return false;
  const tools = m.result?.tools;
  if (!Array.isArray(tools)) return false;
  (m.result as { tools: unknown[] }).tools = tools.filter(
    (tool) =>
      typeof tool === 'object' &&
      tool !== null &&
      typeof (tool as McpListedTool).name === 'string' &&
      gate.listed(tool as McpListedTool) === 'allowed',
  );
  return true;
}

/** The answer parsed whole, filtered and written again: for what the scanner does not follow. */
function filterParsed(text: string, listIds: ToolListIds, gate: McpToolGate): string | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  let changed = false;
  for (const message of Array.isArray(parsed) ? parsed : [parsed])
    changed = filterMessage(message, listIds, gate) || changed;
  return changed ? JSON.stringify(parsed) : undefined;
}

/**
 * The ranges of `body` to keep so that its `tools/list` answers hold only allowed tools (every
 * other byte as received, the allowed tools' included; a pair `-1, -1` stands for a comma), `[]`
 * when nothing is removed, or undefined when the scanner cannot follow the body.
 */
function keptRanges(body: Buffer, listIds: ToolListIds, gate: McpToolGate): number[] | undefined {
  const messages = new JsonScanner(body).answers();
  if (messages === undefined) return undefined;
  const kept: number[] = [];
  let from = 0;
  for (const message of messages) {
    const tools = message.tools;
    if (tools === undefined || !listed(listIds, idKey(message.id))) continue;
    let removed = false;
    const allowed: ScannedTool[] = [];
    for (const tool of tools.items) {
      if (tool.name !== undefined && verdict(gate, tool, body) === 'allowed') allowed.push(tool);
      else removed = true;
    }
    if (!removed) continue;
    // `[` + the allowed tools, separated by commas + `]`.
    kept.push(from, tools.start + 1);
    allowed.forEach((tool, i) => {
      if (i > 0) kept.push(-1, -1);
      kept.push(tool.start, tool.end);
    });
    from = tools.end - 1;
  }
  if (from === 0) return [];
  kept.push(from, body.length);
  return kept;
}

function verdict(gate: McpToolGate, tool: ScannedTool, body: Buffer): McpToolVerdict {
  if (gate.namesOnly === true) return gate.listed({ name: tool.name as string });
  // The scanner checked the tool's text: JSON.parse reads it.
  return gate.listed(JSON.parse(body.toString('utf8', tool.start, tool.end)) as McpListedTool);
}

/**
 * A JSON answer with the tools of its `tools/list` answers filtered; the text unchanged when it
 * holds none (or is not JSON). The allowed tools keep their text as received.
 */
export function filterJsonAnswer(text: string, listIds: ToolListIds, gate: McpToolGate): string {
  const body = Buffer.from(text);
  const filtered = filterJsonBytes(body, listIds, gate);
  return filtered === body ? text : filtered.toString('utf8');
}

const COMMA = 0x2c;

/**
 * {@link filterJsonAnswer} on the bytes of a UTF-8 answer: the allowed tools' bytes as received,
 * and `body` itself when nothing is removed. The answer is scanned, not parsed; what the scanner
 * does not follow (deep nesting, a repeated key it reads) is parsed whole and written again.
 */
export function filterJsonBytes(body: Buffer, listIds: ToolListIds, gate: McpToolGate): Buffer {
  const kept = keptRanges(body, listIds, gate);
  if (kept === undefined) {
    const filtered = filterParsed(body.toString('utf8'), listIds, gate);
    return filtered === undefined ? body : Buffer.from(filtered);
  }
  if (kept.length === 0) return body;
  let size = 0;
  for (let i = 0; i < kept.length; i += 2) size += kept[i] === -1 ? 1 : (kept[i + 1] as number) - (kept[i] as number);
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for (let i = 0; i < kept.length; i += 2) {
    if (kept[i] === -1) out[at++] = COMMA;
    else at += body.copy(out, at, kept[i] as number, kept[i + 1] as number);
  }
  return out;
}

function tooLarge(): Error {
  return new Error('An MCP event is larger than the gateway inspects.');
}

/** Largest event of an inspected event stream, in characters. */
export const MAX_INSPECTED_EVENT_CHARS = 16 * 1024 * 1024;

/**
 * Filters an SSE stream event by event: an event whose data is a JSON answer to one of `listIds`
 * is written again with only the allowed tools; every other event is passed on as received, as
 * soon as it is complete. {@link SseToolFilter.push} throws when one event grows past
 * {@link MAX_INSPECTED_EVENT_CHARS}.
 */
export class SseToolFilter {
  private readonly decoder = new TextDecoder();
  /** The pieces of the line not ended yet (kept apart, so that a long line costs its length once). */
  private partial: string[] = [];
  private partialChars = 0;
  /** The complete lines of the event not ended yet. */
  private lines: string[] = [];
  private eventChars = 0;
  /** The last line ended with `\r` at the end of a chunk: a `\n` starting the next one belongs to it. */
  private skipLf = false;

  constructor(
    private readonly listIds: ToolListIds,
    private readonly gate: McpToolGate,
  ) {}

  /** Takes a chunk of the stream; returns the text ready to send (possibly empty). */
  push(chunk: Buffer): string {
    return this.feed(this.decoder.decode(chunk, { stream: true }));
  }

  /** The end of the stream: whatever is left, as received. */
  end(): string {
    let out = this.feed(this.decoder.decode());
    if (this.partial.length > 0) this.lines.push(this.partial.join(''));
    this.partial = [];
    this.partialChars = 0;
    if (this.lines.length > 0) out += this.lines.join('\n');
    this.lines = [];
    return out;
  }

  /** Reads the lines of `text`, each character once; returns the events it completes. */
  private feed(text: string): string {
    let out = '';
    let at = 0;
    if (this.skipLf && text.length > 0) {
      if (text.charCodeAt(0) === 0x0a) at = 1;
      this.skipLf = false;
    }
    let lf = -2;
    let cr = -2;
    while (at < text.length) {
      if (lf !== -1 && lf < at) lf = text.indexOf('\n', at);
      if (cr !== -1 && cr < at) cr = text.indexOf('\r', at);
      const brk = lf === -1 ? cr : cr === -1 ? lf : Math.min(lf, cr);
      if (brk === -1) {
        this.partial.push(text.slice(at));
        this.partialChars += text.length - at;
        if (this.partialChars + this.eventChars > MAX_INSPECTED_EVENT_CHARS) throw tooLarge();
        break;
      }
      const piece = text.slice(at, brk);
      let line = piece;
      if (this.partial.length > 0) {
        this.partial.push(piece);
        line = this.partial.join('');
        this.partial = [];
        this.partialChars = 0;
      }
      at = brk + 1;
      if (brk === cr) {
        if (at === text.length) this.skipLf = true;
        else if (text.charCodeAt(at) === 0x0a) at += 1;
      }
      if (line === '') {
        out += this.event();
        continue;
      }
      this.eventChars += line.length;
      if (this.eventChars > MAX_INSPECTED_EVENT_CHARS) throw tooLarge();
      this.lines.push(line);
    }
    return out;
  }

  private event(): string {
    const lines = this.lines;
    if (lines.length === 0) return '\n';
    this.lines = [];
    this.eventChars = 0;
    const data: string[] = [];
    const others: string[] = [];
    for (const line of lines) {
      if (line === 'data' || line.startsWith('data:')) {
        const value = line.slice(5);
        data.push(value.startsWith(' ') ? value.slice(1) : value);
      } else others.push(line);
    }
    if (data.length > 0 && (this.listIds === EVERY_TOOL_LIST || this.listIds.size > 0)) {
      const text = data.join('\n');
      const filtered = filterJsonAnswer(text, this.listIds, this.gate);
      if (filtered !== text) return `${[...others, `data: ${filtered}`].join('\n')}\n\n`;
    }
    return `${lines.join('\n')}\n\n`;
  }
}

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
export function inspectRequest(body: string, gate: McpToolGate): InspectedRequest {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return { listIds: new Set() };
  }
  const batch = Array.isArray(parsed);
  const messages = (batch ? parsed : [parsed]) as JsonRpcMessage[];
  const listIds = new Set<string>();
  const refused = new Map<JsonRpcMessage, object>();
  for (const message of messages) {
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
  const answers = messages
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

function answerId(id: unknown): JsonRpcId {
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

/** Whether `message` answers one of `listIds` with a tool list; if so, removes the tools the gate does not allow. */
function filterMessage(message: unknown, listIds: ReadonlySet<string>, gate: McpToolGate): boolean {
  if (typeof message !== 'object' || message === null) return false;
  const m = message as JsonRpcMessage;
  const key = idKey(m.id);
  if (key === undefined || !listIds.has(key)) return false;
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

/**
 * A JSON answer with the tools of its `tools/list` answers filtered; the text unchanged when it
 * holds none (or is not JSON).
 */
export function filterJsonAnswer(text: string, listIds: ReadonlySet<string>, gate: McpToolGate): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return text;
  }
  let changed = false;
  for (const message of Array.isArray(parsed) ? parsed : [parsed])
    changed = filterMessage(message, listIds, gate) || changed;
  return changed ? JSON.stringify(parsed) : text;
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
  private buffer = '';
  private lines: string[] = [];
  private eventChars = 0;

  constructor(
    private readonly listIds: ReadonlySet<string>,
    private readonly gate: McpToolGate,
  ) {}

  /** Takes a chunk of the stream; returns the text ready to send (possibly empty). */
  push(chunk: Buffer): string {
    this.buffer += this.decoder.decode(chunk, { stream: true });
    return this.drain(false);
  }

  /** The end of the stream: whatever is left, as received. */
  end(): string {
    this.buffer += this.decoder.decode();
    return this.drain(true);
  }

  private drain(final: boolean): string {
    let out = '';
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.buffer);
      if (match === null || (match[0] === '\r' && match.index === this.buffer.length - 1 && !final)) break;
      const line = this.buffer.slice(0, match.index);
      this.buffer = this.buffer.slice(match.index + match[0].length);
      if (line === '') {
        out += this.event();
        continue;
      }
      this.eventChars += line.length;
      if (this.eventChars > MAX_INSPECTED_EVENT_CHARS)
        throw new Error('An MCP event is larger than the gateway inspects.');
      this.lines.push(line);
    }
    if (this.buffer.length + this.eventChars > MAX_INSPECTED_EVENT_CHARS) {
      throw new Error('An MCP event is larger than the gateway inspects.');
    }
    if (final) {
      if (this.buffer !== '') this.lines.push(this.buffer);
      this.buffer = '';
      if (this.lines.length > 0) out += this.lines.join('\n');
      this.lines = [];
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
    if (data.length > 0 && this.listIds.size > 0) {
      const text = data.join('\n');
      const filtered = filterJsonAnswer(text, this.listIds, this.gate);
      if (filtered !== text) return `${[...others, `data: ${filtered}`].join('\n')}\n\n`;
    }
    return `${lines.join('\n')}\n\n`;
  }
}

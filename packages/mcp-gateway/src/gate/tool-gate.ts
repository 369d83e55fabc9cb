import { isUtf8 } from 'node:buffer';
import { InvalidMcpMessageError, UpstreamInvalidResponseError } from '@gw/identity-forwarding/identity';
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
 * The host's per-tool rule for one caller on one MCP server. With it, the gateway reads every
 * request body and every answer of the caller on that server, and fails closed: what it cannot
 * read is refused, never passed on.
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

/** MCP's HeaderMismatch (revision 2026-07-28): `Mcp-Method` or `Mcp-Name` disagrees with the body. */
export const HEADER_MISMATCH_CODE = -32020;

type JsonRpcId = string | number | null;

/** A JSON-RPC message as the gateway reads it. */
export interface JsonRpcMessage {
  id?: unknown;
  method?: unknown;
  params?: { name?: unknown; uri?: unknown } | null;
  result?: { tools?: unknown; cacheScope?: unknown } | null;
}

function refusal(id: JsonRpcId, tool: string, verdict: Exclude<McpToolVerdict, 'allowed'>): object {
  const shown = tool.slice(0, 128);
  const message =
    verdict === 'access_denied'
      ? `The tool "${shown}" is not allowed for this caller.`
      : `The tool "${shown}" is new or changed and waits for an administrator's approval.`;
  return { jsonrpc: '2.0', id, error: { code: TOOL_REFUSED_CODE, message, data: { code: verdict, tool: shown } } };
}

/** A media type as the gateway reads it: the lowercased `type/subtype`, and the `charset` parameter when given. */
export interface McpMediaType {
  essence: string;
  charset?: string;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * Parses a `Content-Type` value (RFC 9110: `type/subtype *( OWS ";" OWS name=value )`, values
 * as tokens or quoted strings); undefined when it is missing or not of that grammar (a list of
 * types, a parameter without `=`, a repeated `charset`...). The charset is lowercased and
 * unquoted.
 */
export function parseMediaType(header: string | readonly string[] | undefined): McpMediaType | undefined {
  if (typeof header !== 'string') return undefined;
  const semicolon = header.indexOf(';');
  const essence = (semicolon === -1 ? header : header.slice(0, semicolon)).trim().toLowerCase();
  const slash = essence.indexOf('/');
  if (slash <= 0 || !TOKEN.test(essence.slice(0, slash)) || !TOKEN.test(essence.slice(slash + 1))) return undefined;
  const type: McpMediaType = { essence };
  let rest = semicolon === -1 ? '' : header.slice(semicolon);
  // Each round reads `; name=value`; the bound is the header's own length.
  while (rest !== '') {
    const match =
      /^[ \t]*;[ \t]*([!#$%&'*+.^_`|~0-9A-Za-z-]+)=("(?:[^"\\]|\\.)*"|[!#$%&'*+.^_`|~0-9A-Za-z-]+)[ \t]*/.exec(rest);
    if (match === null) return undefined;
    const name = (match[1] as string).toLowerCase();
    let value = match[2] as string;
    if (value.startsWith('"')) value = value.slice(1, -1).replace(/\\(.)/g, '$1');
    if (name === 'charset') {
      if (type.charset !== undefined) return undefined;
      type.charset = value.toLowerCase();
    }
    rest = rest.slice(match[0].length);
  }
  return type;
}

/** Whether `type` is exactly `essence`, with no charset or `utf-8`. */
export function isUtf8MediaType(type: McpMediaType | undefined, essence: string): boolean {
  return type !== undefined && type.essence === essence && (type.charset === undefined || type.charset === 'utf-8');
}

/** Whether `bytes` start with a UTF-8 byte-order mark. */
function hasBom(bytes: Buffer): boolean {
  return bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf;
}

/**
 * The `Mcp-Method` and `Mcp-Name` headers of a request (MCP 2026-07-28), each as every value
 * received (a repeated header holds several); undefined when absent.
 */
export interface McpMirrorHeaders {
  method?: readonly string[];
  name?: readonly string[];
  /**
   * `MCP-Protocol-Version`, every value received: from revision 2026-07-28 on (here or in the
   * body's `_meta`), `Mcp-Method` and `Mcp-Name` are required. Default: absent (an older revision).
   */
  version?: readonly string[];
}

/** The body field `Mcp-Name` mirrors, by method (MCP 2026-07-28, "Standard headers"). */
const NAME_SOURCE: ReadonlyMap<string, 'name' | 'uri'> = new Map([
  ['tools/call', 'name'],
  ['prompts/get', 'name'],
  ['resources/read', 'uri'],
  ['resources/subscribe', 'uri'],
  ['resources/unsubscribe', 'uri'],
]);

const BASE64_SENTINEL = /^=\?base64\?([A-Za-z0-9+/]*={0,2})\?=$/;

/**
 * An `Mcp-Name` value as the client meant it: a value wrapped as `=?base64?…?=` is the UTF-8
 * text of its Base64; undefined when that is not valid Base64 of valid UTF-8.
 */
export function decodeMcpName(value: string): string | undefined {
  const wrapped = BASE64_SENTINEL.exec(value);
  if (wrapped === null) return value;
  const b64 = wrapped[1] as string;
  if (b64.length % 4 !== 0) return undefined;
  const bytes = Buffer.from(b64, 'base64');
  if (bytes.toString('base64') !== b64 || !isUtf8(bytes)) return undefined;
  return bytes.toString('utf8');
}

/** The first protocol revision whose requests carry `Mcp-Method` and `Mcp-Name` (SEP-2243). */
export const MIRROR_HEADERS_REVISION = '2026-07-28';

/** Where a request of revision 2026-07-28 names its protocol revision in the body (`params._meta`). */
const META_VERSION = 'io.modelcontextprotocol/protocolVersion';

/** The methods whose `Mcp-Name` is required from revision 2026-07-28 on, when the body names its target. */
const NAME_REQUIRED: ReadonlySet<string> = new Set(['tools/call', 'prompts/get', 'resources/read']);

/** Whether `value` is a revision (`YYYY-MM-DD`) of 2026-07-28 or later. */
function mirrorsRequired(value: unknown): boolean {
  return typeof value === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(value) && value >= MIRROR_HEADERS_REVISION;
}

/**
 * Whether the request is of revision 2026-07-28 or later: its `MCP-Protocol-Version` says so, or
 * the `_meta` of one of its messages does (parsed only when the body holds the `_meta` key, which
 * older clients never send).
 */
function isMirroringRevision(headers: McpMirrorHeaders, body: Buffer): boolean {
  if (headers.version?.some(mirrorsRequired) === true) return true;
  // Stryker disable next-line ConditionalExpression: parsing every body finds the same; the test spares it.
  if (!body.includes(META_VERSION)) return false;
  // `requestMessages` read the body as JSON already.
  const parsed: unknown = JSON.parse(body.toString('utf8'));
  return (Array.isArray(parsed) ? parsed : [parsed]).some((message) => {
    const meta = (message as { params?: { _meta?: Record<string, unknown> } } | null)?.params?._meta;
    return typeof meta === 'object' && meta !== null && mirrorsRequired(meta[META_VERSION]);
  });
}

/**
 * Why a request of revision 2026-07-28 or later lacks a header SEP-2243 requires (`Mcp-Method`
 * on every request, `Mcp-Name` on a `tools/call`, `prompts/get` or `resources/read` whose body
 * names its target), or undefined when none is missing or the revision is older.
 */
function missingMirrorHeader(
  headers: McpMirrorHeaders,
  message: JsonRpcMessage | undefined,
  body: Buffer,
): string | undefined {
  const bodyMethod = typeof message === 'object' && message !== null ? message.method : undefined;
  // A method in NAME_REQUIRED comes from a message.
  const named =
    NAME_REQUIRED.has(bodyMethod as string) &&
    typeof (message as JsonRpcMessage).params?.[NAME_SOURCE.get(bodyMethod as string) as 'name' | 'uri'] === 'string';
  const lacksMethod = headers.method === undefined;
  if (!lacksMethod && (headers.name !== undefined || !named)) return undefined;
  if (!isMirroringRevision(headers, body)) return undefined;
  return lacksMethod
    ? `Mcp-Method is required from protocol revision ${MIRROR_HEADERS_REVISION} on.`
    : `Mcp-Name is required on ${String(bodyMethod)} from protocol revision ${MIRROR_HEADERS_REVISION} on.`;
}

/** Why the mirror headers disagree with the body, or undefined when they agree (or are absent). */
function headerMismatch(
  headers: McpMirrorHeaders,
  batch: boolean,
  message: JsonRpcMessage | undefined,
): string | undefined {
  const { method, name } = headers;
  if (method === undefined && name === undefined) return undefined;
  if ((method?.length ?? 0) > 1 || (name?.length ?? 0) > 1) return 'Mcp-Method or Mcp-Name is given more than once.';
  if (batch || typeof message !== 'object' || message === null)
    return 'Mcp-Method and Mcp-Name go with one message, not a batch.';
  const bodyMethod = message.method;
  if (method !== undefined && method[0] !== bodyMethod) return "Mcp-Method is not the body's method.";
  if (name === undefined) return undefined;
  const source = typeof bodyMethod === 'string' ? NAME_SOURCE.get(bodyMethod) : undefined;
  if (source === undefined) return "Mcp-Name is given, but the body's method has no name.";
  const bodyName = message.params?.[source];
  const headerName = decodeMcpName(name[0] as string);
  if (typeof bodyName !== 'string' || headerName !== bodyName) return `Mcp-Name is not the body's params.${source}.`;
  return undefined;
}

/** What {@link inspectRequest} decided about a request body. */
export interface InspectedRequest {
  /** The JSON-RPC answer to send instead of forwarding, or undefined: forward the body as received. */
  answer?: string;
  /** The HTTP status of `answer`: 200 for a refused `tools/call`, 400 for a header mismatch. */
  status?: number;
}

/**
 * Reads a request body (one JSON-RPC message or a batch) the way the MCP server will, and
 * decides on it: throws {@link InvalidMcpMessageError} when it is not strict UTF-8 JSON (a
 * byte-order mark, invalid UTF-8, invalid JSON) or repeats a key the gate reads (`id`, `method`,
 * `params`, `params.name`, `params.uri`, in any case); answers `400` with JSON-RPC error
 * {@link HEADER_MISMATCH_CODE} when `Mcp-Method`/`Mcp-Name` disagree with it, or when a request
 * of revision 2026-07-28 or later (`MCP-Protocol-Version`, or the body's `_meta`) lacks them
 * (SEP-2243: `Mcp-Method` always, `Mcp-Name` on a `tools/call`, `prompts/get` or
 * `resources/read` naming its target); answers a
 * `tools/call` whose tool the gate does not allow (a batch holding one is answered whole: the
 * refused calls with their error, its other requests with "not forwarded"). Otherwise the body
 * is forwarded as received: the server reads the very messages the gate checked. The content
 * type is the caller's to check first ({@link isUtf8MediaType}).
 */
export function inspectRequest(
  body: Buffer | McpRequestMessages,
  gate: McpToolGate,
  headers: McpMirrorHeaders = {},
): InspectedRequest {
  const read = Buffer.isBuffer(body) ? readMcpRequest(body) : body;
  const { batch, list } = read;
  const mismatch =
    missingMirrorHeader(headers, batch ? undefined : list[0], read.body) ?? headerMismatch(headers, batch, list[0]);
  if (mismatch !== undefined) {
    const first = batch ? undefined : list[0];
    const id = typeof first === 'object' && first !== null ? answerId(first.id) : null;
    return {
      status: 400,
      answer: JSON.stringify({ jsonrpc: '2.0', id, error: { code: HEADER_MISMATCH_CODE, message: mismatch } }),
    };
  }
  const refused = new Map<JsonRpcMessage, object>();
  for (const message of list) {
    if (typeof message !== 'object' || message === null || message.method !== 'tools/call') continue;
    const name = typeof message.params?.name === 'string' ? message.params.name : '';
    const verdict = gate.called(name);
    if (verdict !== 'allowed') refused.set(message, refusal(answerId(message.id), name, verdict));
  }
  if (refused.size === 0) return {};
  if (!batch) return { status: 200, answer: JSON.stringify(refused.values().next().value) };
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
  return { status: 200, answer: JSON.stringify(answers) };
}

/** Checks that `bytes` are UTF-8 without a byte-order mark; `fail` makes the error. */
function checkUtf8(bytes: Buffer, fail: (reason: string) => Error): void {
  if (hasBom(bytes)) throw fail('it starts with a byte-order mark');
  if (!isUtf8(bytes)) throw fail('it is not valid UTF-8');
}

const invalidRequest = (reason: string) =>
  new InvalidMcpMessageError(`The MCP request body cannot be read as strict UTF-8 JSON: ${reason}.`);

/** Most messages in one JSON-RPC batch, as the MCP SDK's servers accept (`MAX_BATCH_SIZE`). */
export const MAX_BATCH_MESSAGES = 100;

/**
 * A request body's JSON-RPC messages as {@link readMcpRequest} read them: the one reading that
 * every decision about the request takes (the tool gate, the `Mcp-Method`/`Mcp-Name` check, the
 * limits' count of `tools/call`s).
 */
export interface McpRequestMessages {
  /** Whether the body is a batch (an array). */
  readonly batch: boolean;
  /** Its messages, with what the gateway reads of them (`id`, `method`, `params.name`, `params.uri`). */
  readonly list: readonly JsonRpcMessage[];
  /** The body read. */
  readonly body: Buffer;
}

/**
 * Reads a request body (one JSON-RPC message or a batch) as strict UTF-8 JSON, the way the MCP
 * server will: throws {@link InvalidMcpMessageError} when the gateway cannot read it so (a
 * byte-order mark, invalid UTF-8, invalid JSON, a key it reads repeated, a batch of more than
 * {@link MAX_BATCH_MESSAGES} messages). What it cannot read, no check can count, so it is refused.
 */
export function readMcpRequest(body: Buffer): McpRequestMessages {
  const read = requestMessages(body);
  if (read.batch && read.list.length > MAX_BATCH_MESSAGES)
    throw invalidRequest(`a batch holds more than ${MAX_BATCH_MESSAGES} messages`);
  return { ...read, body };
}

/** How many `tools/call` requests `read` holds (each of a batch counts). */
export function countToolCalls(read: McpRequestMessages): number {
  let calls = 0;
  for (const message of read.list)
    if (typeof message === 'object' && message !== null && message.method === 'tools/call') calls++;
  return calls;
}

/**
 * The messages of a request body with what the gate reads of them (`id`, `method`,
 * `params.name`, `params.uri`): scanned, not parsed; parsed when the scanner cannot follow the
 * text (nesting deeper than it follows), where `JSON.parse` then decides like the server does.
 */
function requestMessages(body: Buffer): { batch: boolean; list: JsonRpcMessage[] } {
  checkUtf8(body, invalidRequest);
  const scanner = new JsonScanner(body);
  const scanned = scanner.requests();
  if (scanner.duplicate) throw invalidRequest('a key the gateway reads (id, method, params, name, uri) is repeated');
  // Stryker disable next-line BlockStatement: JSON.parse below reads the same messages; the scan spares parsing.
  if (scanned !== undefined) {
    return {
      batch: scanner.batch,
      list: scanned.map((m) =>
        m.object
          ? {
              ...(m.id !== undefined ? { id: m.id } : {}),
              ...(m.method !== undefined ? { method: m.method } : {}),
              params: { name: m.name, uri: m.uri },
            }
          : (null as unknown as JsonRpcMessage),
      ),
    };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    throw invalidRequest('it is not valid JSON');
  }
  const batch = Array.isArray(parsed);
  return { batch, list: (batch ? parsed : [parsed]) as JsonRpcMessage[] };
}

function answerId(id: unknown): JsonRpcId {
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

const PRIVATE = '"private"';

/** Removes the tools the gate does not allow from `message.result.tools`, and makes its `cacheScope` private. */
function filterMessage(message: unknown, gate: McpToolGate): boolean {
  if (typeof message !== 'object' || message === null) return false;
  const result = (message as JsonRpcMessage).result;
  if (typeof result !== 'object' || result === null) return false;
  const tools = result.tools;
  if (!Array.isArray(tools)) return false;
  result.tools = tools.filter(
    (tool) =>
      typeof tool === 'object' &&
      tool !== null &&
      typeof (tool as McpListedTool).name === 'string' &&
      gate.listed(tool as McpListedTool) === 'allowed',
  );
  if ('cacheScope' in result) result.cacheScope = 'private';
  return true;
}

/** The answer parsed whole, filtered and written again: for what the scanner does not follow. */
function filterParsed(text: string, gate: McpToolGate): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new UpstreamInvalidResponseError('The MCP server answered with a body that is not valid JSON.');
  }
  let changed = false;
  for (const message of Array.isArray(parsed) ? parsed : [parsed]) changed = filterMessage(message, gate) || changed;
  return changed ? JSON.stringify(parsed) : text;
}

/** A piece of the filtered answer: bytes `[start, end)` of the answer, or text of the gateway's. */
type Piece = { start: number; end: number } | string;

/**
 * The pieces of `body` that make it hold only allowed tools and private cache scopes (every
 * other byte as received, the allowed tools' included), `[]` when nothing changes, or undefined
 * when the scanner cannot follow the body.
 */
function keptPieces(body: Buffer, gate: McpToolGate): Piece[] | undefined {
  const messages = new JsonScanner(body).answers();
  if (messages === undefined) return undefined;
  const kept: Piece[] = [];
  let from = 0;
  for (const message of messages) {
    const tools = message.tools;
    if (tools === undefined) continue;
    // The pieces of this message, in the order of the body.
    const edits: { start: number; end: number; with: Piece[] }[] = [];
    const scope = message.cacheScope;
    if (scope !== undefined && body.toString('latin1', scope.start, scope.end) !== PRIVATE)
      edits.push({ start: scope.start, end: scope.end, with: [PRIVATE] });
    let removed = false;
    const allowed: Piece[] = [];
    for (const tool of tools.items) {
      if (tool.name !== undefined && verdict(gate, tool, body) === 'allowed') {
        if (allowed.length > 0) allowed.push(',');
        allowed.push({ start: tool.start, end: tool.end });
      } else removed = true;
    }
    if (removed) edits.push({ start: tools.start + 1, end: tools.end - 1, with: allowed });
    edits.sort((a, b) => a.start - b.start);
    for (const edit of edits) {
      kept.push({ start: from, end: edit.start }, ...edit.with);
      from = edit.end;
    }
  }
  if (from === 0) return [];
  kept.push({ start: from, end: body.length });
  return kept;
}

function verdict(gate: McpToolGate, tool: ScannedTool, body: Buffer): McpToolVerdict {
  if (gate.namesOnly === true) return gate.listed({ name: tool.name as string });
  // The scanner checked the tool's text: JSON.parse reads it.
  return gate.listed(JSON.parse(body.toString('utf8', tool.start, tool.end)) as McpListedTool);
}

/**
 * A JSON answer's text with every `result.tools` filtered (see {@link filterJsonBytes}); the
 * text unchanged when nothing is removed. Throws {@link UpstreamInvalidResponseError} when it
 * is not JSON.
 */
export function filterJsonAnswer(text: string, gate: McpToolGate): string {
  const body = Buffer.from(text);
  const filtered = filterJsonBytes(body, gate);
  return filtered === body ? text : filtered.toString('utf8');
}

/**
 * Reads the bytes of a JSON answer (one message or a batch) and keeps, in every message's
 * `result.tools` whatever its `id`, only the tools the gate allows; a result whose tools were
 * read has its `cacheScope` (when it has one) made `"private"`, since the list is this caller's.
 * The allowed tools' bytes are kept as received, and `body` itself is answered when nothing
 * changes. Throws {@link UpstreamInvalidResponseError} when the body is not strict UTF-8 JSON (a
 * byte-order mark, invalid UTF-8, invalid JSON): the client would read it some other way. The
 * answer is scanned, not parsed; what the scanner does not follow (deep nesting, a repeated key
 * it reads) is parsed whole and written again.
 */
export function filterJsonBytes(body: Buffer, gate: McpToolGate): Buffer {
  checkUtf8(
    body,
    (reason) => new UpstreamInvalidResponseError(`The MCP server's JSON answer cannot be read: ${reason}.`),
  );
  const kept = keptPieces(body, gate);
  if (kept === undefined) {
    const text = body.toString('utf8');
    const filtered = filterParsed(text, gate);
    return filtered === text ? body : Buffer.from(filtered);
  }
  if (kept.length === 0) return body;
  let size = 0;
  for (const piece of kept) size += typeof piece === 'string' ? piece.length : piece.end - piece.start;
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for (const piece of kept) {
    if (typeof piece === 'string') at += out.write(piece, at, 'latin1');
    else at += body.copy(out, at, piece.start, piece.end);
  }
  return out;
}

/**
 * A JSON answer written in pieces. V8 places a string of more than 128 KiB in its large-object
 * space, on memory freshly mapped for it and unmapped when it is collected; `JSON.stringify` of a
 * large value gives a string made of parts that the first reading of it (`Buffer.byteLength`,
 * `res.end`, `Buffer.from`) copies into one such string. On the 2-core machine the gateway is
 * measured on, every page of that copy is a page fault: a 205 KB answer (a merged list of 600 MCP
 * tools) cost about 1.5 ms of CPU more written whole than written as pieces of 32 Ki characters,
 * whose copies stay in V8's young generation (docs/decisions.md, "Large JSON answers in pieces").
 */
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';

/**
 * The length, in UTF-16 code units, a piece of text stops growing at: 32 Ki, so that a piece is
 * under V8's 128 KiB large-object size even as two-byte text. A single value longer than this (one
 * long string, one large array element) is one piece of its own length.
 */
export const JSON_PIECE_LENGTH = 32 * 1024;

/** Arrays of more elements than this are written element by element; shorter ones whole: 16. */
const SPLIT_ARRAY_FROM = 16;

/** How deep plain objects are opened key by key (the top level and the one below: `{ result: { tools } }`). */
const OPEN_OBJECTS_TO_DEPTH = 2;

/** A plain object or array `JSON.stringify` writes by its own rules alone (no `toJSON`). */
function isPlainObject(value: object): boolean {
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return false;
  const prototype = Object.getPrototypeOf(value) as unknown;
  return prototype === Object.prototype || prototype === null;
}

/** Whether {@link jsonPieces} opens `value` rather than writing it with one `JSON.stringify`. */
function opens(value: unknown, depth: number): value is object {
  if (typeof value !== 'object' || value === null) return false;
  if (Array.isArray(value))
    return value.length > SPLIT_ARRAY_FROM && typeof (value as { toJSON?: unknown }).toJSON !== 'function';
  return depth < OPEN_OBJECTS_TO_DEPTH && isPlainObject(value);
}

/**
 * Appends the JSON text of `value`, which {@link opens}, to `out`: an array element by element, a
 * plain object key by key (each value opened in turn where it opens).
 */
function appendOpened(value: object, depth: number, out: string[]): void {
  if (Array.isArray(value)) {
    out.push('[');
    for (let i = 0; i < value.length; i++) {
      // What JSON.stringify writes for an element that has no JSON text: null.
      const text = (JSON.stringify(value[i]) as string | undefined) ?? 'null';
      out.push(i > 0 ? `,${text}` : text);
    }
    out.push(']');
    return;
  }
  out.push('{');
  let first = true;
  for (const key of Object.keys(value)) {
    const field = (value as Record<string, unknown>)[key];
    const name = `${first ? '' : ','}${JSON.stringify(key)}:`;
    if (opens(field, depth + 1)) {
      out.push(name);
      appendOpened(field, depth + 1, out);
    } else {
      // What JSON.stringify leaves out of an object (undefined, functions, symbols, a toJSON answering undefined).
      const text = JSON.stringify(field) as string | undefined;
      if (text === undefined) continue;
      out.push(name + text);
    }
    first = false;
  }
  out.push('}');
}

/**
 * The text of `JSON.stringify(value)` (no replacer, no indentation), as pieces of at most
 * {@link JSON_PIECE_LENGTH} code units wherever the value allows: arrays of more than 16 elements
 * are written element by element, and plain objects of the first two levels key by key, so that an
 * answer such as `{ result: { tools: [600 tools] } }` never becomes one string. The pieces joined
 * are exactly `JSON.stringify(value)`, but for one thing: a `toJSON` method of a value inside an
 * opened array or object is called with the key `''` where `JSON.stringify` passes its key or index
 * (`Date`'s ignores it).
 *
 * @throws {TypeError} when `value` has no JSON text (`undefined`, a function, a symbol), and what
 * `JSON.stringify` throws (a cycle, a `BigInt`).
 */
export function jsonPieces(value: unknown): string[] {
  const parts: string[] = [];
  if (opens(value, 0)) appendOpened(value, 0, parts);
  else {
    const text = JSON.stringify(value) as string | undefined;
    if (text === undefined) throw new TypeError('The value has no JSON text.');
    parts.push(text);
  }
  const pieces: string[] = [];
  let piece = '';
  for (const part of parts) {
    if (piece.length > 0 && piece.length + part.length > JSON_PIECE_LENGTH) {
      pieces.push(piece);
      piece = '';
    }
    piece += part;
  }
  pieces.push(piece);
  return pieces;
}

/**
 * Ends `res` (a `node:http` response, and so an Express one) with `value` as its JSON body:
 * `status`, `headers` with `content-type: application/json` (unless `headers` names another) and
 * `content-length`, then the text in {@link jsonPieces}, one write each. For a small value that is
 * one `end` with the whole text.
 *
 * @param headers Default none but the two above.
 */
export function endWithJson(
  res: ServerResponse,
  status: number,
  value: unknown,
  headers: OutgoingHttpHeaders = {},
): void {
  const pieces = jsonPieces(value);
  let length = 0;
  for (const piece of pieces) length += Buffer.byteLength(piece);
  res.writeHead(status, { 'content-type': 'application/json', ...headers, 'content-length': length });
  const last = pieces.length - 1;
  for (let i = 0; i < last; i++) res.write(pieces[i] as string);
  res.end(pieces[last]);
}

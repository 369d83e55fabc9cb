/**
 * A small scanner for the JSON-RPC messages the tool gate reads: it finds, without building the
 * messages, where each tool of an answer's `result.tools` starts and ends and what its name is
 * (and where `result.cacheScope` is), and the `id`, `method`, `params.name` and `params.uri` of
 * requests. It delimits values exactly as `JSON.parse`
 * does (strings and their escapes, numbers, literals, nesting) and gives up (`undefined`) on
 * anything it does not follow: text that is not JSON, nesting deeper than {@link MAX_SCAN_DEPTH},
 * or a key it reads given twice (`JSON.parse` keeps the last one; the caller then parses the
 * whole text itself, or, for a request, refuses it: see {@link JsonScanner.duplicate}). It reads the UTF-8 bytes as received (JSON's structure is ASCII), so that
 * the ranges it gives are byte offsets, and decodes only the strings it returns.
 */

/** Deepest nesting followed; deeper text is left to `JSON.parse`. */
export const MAX_SCAN_DEPTH = 256;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** A JSON-RPC `id` as read: a string, a number, another JSON value (`null` here), or absent. */
export type ScannedId = string | number | null | undefined;

/** One tool of a `tools/list` answer: where it is, and its name when it is an object with a string `name`. */
export interface ScannedTool {
  start: number;
  end: number;
  name: string | undefined;
}

/** One message of an answer: when its `result` holds a `tools` array, where that array is and its tools. */
export interface ScannedAnswer {
  tools?: { start: number; end: number; items: ScannedTool[] };
  /** Where the value of `result.cacheScope` is, when the result has one. */
  cacheScope?: { start: number; end: number };
}

/** One message of a request. */
export interface ScannedRequest {
  /** false when the batch element is not an object. */
  object: boolean;
  id: ScannedId;
  method: unknown;
  /** `params.name` when it is a string. */
  name: string | undefined;
  /** `params.uri` when it is a string. */
  uri: string | undefined;
}

/** The request keys the gate reads, by level; another spelling of one of them (any case) counts as a repeat. */
const REQUEST_KEYS: ReadonlySet<string> = new Set(['id', 'method', 'params']);
const PARAMS_KEYS: ReadonlySet<string> = new Set(['name', 'uri']);

/** Bytes that end the fast run through a string: `"`, `\\` and the control characters JSON refuses raw. */
const STRING_STOP = new Uint8Array(256);
for (let c = 0; c < 0x20; c++) STRING_STOP[c] = 1;
STRING_STOP[QUOTE] = 1;
STRING_STOP[BACKSLASH] = 1;

/** Gives up on the text. */
const FAIL = -1;

/** Most `tools` arrays remembered by {@link ToolArrayMemo}. */
export const MEMO_ARRAYS = 16;
/** Smallest `tools` array remembered: below it, scanning costs about what comparing does. */
export const MEMO_MIN_BYTES = 1024;
/** Largest `tools` array remembered (a copy of its bytes is kept). */
export const MEMO_MAX_BYTES = 1024 * 1024;

/** A `tools` array scanned before: its bytes (a copy), and its tools with offsets from its `[`. */
interface MemoEntry {
  bytes: Buffer;
  items: readonly ScannedTool[];
}

/**
 * The `tools` arrays scanned most recently (at most {@link MEMO_ARRAYS}, each of
 * {@link MEMO_MIN_BYTES} to {@link MEMO_MAX_BYTES}), so that a server's unchanged tool list —
 * every `tools/list` answer of a server whose tools did not change — is compared, not scanned
 * again. Sound because a JSON value read from its first byte ends, and holds what it holds,
 * whatever comes before or after it: the same bytes at the same depth scan the same way.
 */
class ToolArrayMemo {
  private readonly entries: MemoEntry[] = [];

  /** The remembered array whose bytes start at `at` in `s`, or undefined. */
  find(s: Buffer, at: number): MemoEntry | undefined {
    for (let e = this.entries.length - 1; e >= 0; e--) {
      const entry = this.entries[e] as MemoEntry;
      const end = at + entry.bytes.length;
      if (end <= s.length && s[end - 1] === 0x5d && entry.bytes.compare(s, at, end) === 0) {
        // Stryker disable next-line ArithmeticOperator: moving the last entry to the end leaves the list as it is.
        if (e !== this.entries.length - 1) this.entries.push(...this.entries.splice(e, 1));
        return entry;
      }
    }
    return undefined;
  }

  /** Remembers the array scanned from `start` to `end` in `s` and its tools. */
  remember(s: Buffer, start: number, end: number, items: readonly ScannedTool[]): void {
    const length = end - start;
    if (length < MEMO_MIN_BYTES || length > MEMO_MAX_BYTES) return;
    const bytes = Buffer.from(s.subarray(start, end));
    const relative = items.map((tool) => ({ start: tool.start - start, end: tool.end - start, name: tool.name }));
    this.entries.push({ bytes, items: relative });
    if (this.entries.length > MEMO_ARRAYS) this.entries.shift();
  }
}

/** One memo for the process: tool lists are the same for every caller of a server. */
const toolArrays = new ToolArrayMemo();

export class JsonScanner {
  /** Whether the last string scanned holds an escape. */
  private escaped = false;
  /** Whether the last key read holds an escape. */
  private keyEscaped = false;
  /** The name of the last tool read, when it is a string. */
  private toolName: string | undefined;
  /** Whether the text read is a batch (a JSON array). */
  batch = false;
  /**
   * Whether {@link JsonScanner.requests} gave up because a key the gate reads (`id`, `method`,
   * `params`, `params.name`, `params.uri`) is given twice in one object, or also spelled in
   * another case (`"Name"`): servers differ in which one they read, so such a request is refused.
   */
  duplicate = false;

  private readonly s: Buffer;
  private readonly length: number;

  constructor(bytes: Buffer) {
    this.s = bytes;
    this.length = bytes.length;
  }

  /** The messages of an answer (one, or a batch), or undefined when the scanner cannot follow it. */
  answers(): ScannedAnswer[] | undefined {
    const out: ScannedAnswer[] = [];
    const end = this.top((i) => this.answer(i, out));
    return end === FAIL ? undefined : out;
  }

  /** The messages of a request (one, or a batch), or undefined when the scanner cannot follow it. */
  requests(): ScannedRequest[] | undefined {
    const out: ScannedRequest[] = [];
    const end = this.top((i) => this.request(i, out));
    return end === FAIL ? undefined : out;
  }

  /** A message, or a batch of them (the elements read by `message`), then only whitespace. */
  private top(message: (i: number) => number): number {
    const s = this.s;
    let i = this.ws(0);
    if (s[i] === 0x5b) {
      this.batch = true;
      i = this.ws(i + 1);
      if (s[i] === 0x5d) i += 1;
      else
        for (;;) {
          i = message(i);
          if (i === FAIL) return FAIL;
          i = this.ws(i);
          const c = s[i] as number;
          if (c === 0x2c) i = this.ws(i + 1);
          else if (c === 0x5d) {
            i += 1;
            break;
          } else return FAIL;
        }
    } else {
      i = message(i);
      if (i === FAIL) return FAIL;
    }
    return this.ws(i) === this.length ? i : FAIL;
  }

  /**
   * Walks the members of the object at `i` (depth `depth`), calling `member(keyStart, keyEnd,
   * valueStart)` for each (without `member`, values are skipped); `member` returns the value's
   * end. Returns the object's end.
   */
  private members(i: number, depth: number, member?: (keyStart: number, keyEnd: number, at: number) => number): number {
    const s = this.s;
    if (depth > MAX_SCAN_DEPTH) return FAIL;
    i = this.ws(i + 1);
    if (s[i] === 0x7d) return i + 1;
    for (;;) {
      if (s[i] !== QUOTE) return FAIL;
      const keyStart = i;
      const keyEnd = this.string(i);
      if (keyEnd === FAIL) return FAIL;
      this.keyEscaped = this.escaped;
      i = this.ws(keyEnd);
      if (s[i] !== 0x3a) return FAIL;
      i = this.ws(i + 1);
      i = member === undefined ? this.value(i, depth + 1) : member(keyStart, keyEnd, i);
      if (i === FAIL) return FAIL;
      i = this.ws(i);
      const c = s[i] as number;
      if (c === 0x2c) i = this.ws(i + 1);
      else if (c === 0x7d) return i + 1;
      else return FAIL;
    }
  }

  /** Whether the key just read (from `start` to `end`, quotes included) is `name`. */
  private is(start: number, end: number, name: string): boolean {
    if (!this.keyEscaped) {
      if (end - start - 2 !== name.length) return false;
      for (let k = 0; k < name.length; k++) if (this.s[start + 1 + k] !== name.charCodeAt(k)) return false;
      return true;
    }
    this.escaped = true;
    return this.text(start, end) === name;
  }

  private answer(i: number, out: ScannedAnswer[]): number {
    if (this.s[i] !== 0x7b) {
      const end = this.value(i, 1);
      out.push({});
      return end;
    }
    const message: ScannedAnswer = {};
    let seenResult = false;
    const end = this.members(i, 1, (ks, ke, at) => {
      if (!this.is(ks, ke, 'result')) return this.value(at, 2);
      if (seenResult) return FAIL;
      seenResult = true;
      if (this.s[at] !== 0x7b) return this.value(at, 2);
      let seenTools = false;
      let seenScope = false;
      return this.members(at, 2, (fs, fe, from) => {
        if (this.is(fs, fe, 'cacheScope')) {
          if (seenScope) return FAIL;
          seenScope = true;
          const scopeEnd = this.value(from, 3);
          if (scopeEnd !== FAIL) message.cacheScope = { start: from, end: scopeEnd };
          return scopeEnd;
        }
        if (!this.is(fs, fe, 'tools')) return this.value(from, 3);
        if (seenTools) return FAIL;
        seenTools = true;
        if (this.s[from] !== 0x5b) return this.value(from, 3);
        const items: ScannedTool[] = [];
        const arrayEnd = this.tools(from, items);
        if (arrayEnd !== FAIL) message.tools = { start: from, end: arrayEnd, items };
        return arrayEnd;
      });
    });
    out.push(message);
    return end;
  }

  /** The tools array at `i` (depth 3): each element's range and name; compared with the memo first. */
  private tools(i: number, items: ScannedTool[]): number {
    const known = toolArrays.find(this.s, i);
    if (known !== undefined) {
      for (const tool of known.items) items.push({ start: tool.start + i, end: tool.end + i, name: tool.name });
      return i + known.bytes.length;
    }
    const end = this.scanTools(i, items);
    if (end !== FAIL) toolArrays.remember(this.s, i, end, items);
    return end;
  }

  private scanTools(i: number, items: ScannedTool[]): number {
    const s = this.s;
    i = this.ws(i + 1);
    if (s[i] === 0x5d) return i + 1;
    for (;;) {
      const start = i;
      this.toolName = undefined;
      i = s[i] === 0x7b ? this.tool(i) : this.value(i, 4);
      if (i === FAIL) return FAIL;
      items.push({ start, end: i, name: this.toolName });
      i = this.ws(i);
      const c = s[i] as number;
      if (c === 0x2c) i = this.ws(i + 1);
      else if (c === 0x5d) return i + 1;
      else return FAIL;
    }
  }

  /** The tool object at `i` (depth 4): its end; its name in `toolName`. */
  private tool(i: number): number {
    const s = this.s;
    i = this.ws(i + 1);
    if (s[i] === 0x7d) return i + 1;
    let seenName = false;
    for (;;) {
      if (s[i] !== QUOTE) return FAIL;
      const keyStart = i;
      const keyEnd = this.string(i);
      if (keyEnd === FAIL) return FAIL;
      this.keyEscaped = this.escaped;
      i = this.ws(keyEnd);
      if (s[i] !== 0x3a) return FAIL;
      i = this.ws(i + 1);
      if (!this.is(keyStart, keyEnd, 'name')) i = this.value(i, 5);
      else {
        if (seenName) return FAIL;
        seenName = true;
        if (s[i] !== QUOTE) i = this.value(i, 5);
        else {
          const end = this.string(i);
          if (end === FAIL) return FAIL;
          this.toolName = this.text(i, end);
          if (this.toolName === undefined) return FAIL;
          i = end;
        }
      }
      if (i === FAIL) return FAIL;
      i = this.ws(i);
      const c = s[i];
      if (c === 0x2c) i = this.ws(i + 1);
      else if (c === 0x7d) return i + 1;
      else return FAIL;
    }
  }

  /**
   * Which of `keys` the key just read (from `start` to `end`) is, when it is one exactly; a
   * repeat, or another spelling of one in another case, sets {@link JsonScanner.duplicate}.
   */
  private readKey(start: number, end: number, keys: ReadonlySet<string>, seen: Set<string>): string | undefined {
    const text = this.keyEscaped || end - start <= 8 ? this.keyText(start, end) : undefined;
    if (text === undefined) return undefined;
    const lower = text.toLowerCase();
    if (!keys.has(lower)) return undefined;
    if (seen.has(lower) || text !== lower) {
      this.duplicate = true;
      return undefined;
    }
    seen.add(lower);
    return lower;
  }

  private keyText(start: number, end: number): string | undefined {
    this.escaped = this.keyEscaped;
    return this.text(start, end);
  }

  private request(i: number, out: ScannedRequest[]): number {
    const s = this.s;
    if (s[i] !== 0x7b) {
      out.push({ object: false, id: undefined, method: undefined, name: undefined, uri: undefined });
      return this.value(i, 1);
    }
    const message: ScannedRequest = { object: true, id: undefined, method: undefined, name: undefined, uri: undefined };
    const seen = new Set<string>();
    const end = this.members(i, 1, (ks, ke, at) => {
      const key = this.readKey(ks, ke, REQUEST_KEYS, seen);
      if (this.duplicate) return FAIL;
      if (key === undefined) return this.value(at, 2);
      if (key === 'id') return this.id(at, message);
      if (key === 'method') {
        if (s[at] !== QUOTE) {
          // Not a string: never a method the gate reads (only its presence counts).
          message.method = null;
          return this.value(at, 2);
        }
        const methodEnd = this.string(at);
        if (methodEnd === FAIL) return FAIL;
        message.method = this.text(at, methodEnd);
        return message.method === undefined ? FAIL : methodEnd;
      }
      if (s[at] !== 0x7b) return this.value(at, 2);
      const seenParams = new Set<string>();
      return this.members(at, 2, (fs, fe, from) => {
        const field = this.readKey(fs, fe, PARAMS_KEYS, seenParams);
        if (this.duplicate) return FAIL;
        if (field === undefined || s[from] !== QUOTE) return this.value(from, 3);
        const valueEnd = this.string(from);
        if (valueEnd === FAIL) return FAIL;
        const value = this.text(from, valueEnd);
        if (value === undefined) return FAIL;
        if (field === 'name') message.name = value;
        else message.uri = value;
        return valueEnd;
      });
    });
    out.push(message);
    return end;
  }

  /** An `id` value at `i`, stored in `message.id`. */
  private id(i: number, message: { id: ScannedId }): number {
    const c = this.s[i] as number;
    if (c === QUOTE) {
      const end = this.string(i);
      if (end === FAIL) return FAIL;
      const text = this.text(i, end);
      if (text === undefined) return FAIL;
      message.id = text;
      return end;
    }
    const end = this.value(i, 2);
    if (end === FAIL) return FAIL;
    message.id = c === 0x2d || (c >= 0x30 && c <= 0x39) ? Number(this.s.toString('latin1', i, end)) : null;
    return end;
  }

  /** The end of the value at `i`. */
  private value(i: number, depth: number): number {
    const s = this.s;
    const c = s[i] as number;
    if (c === QUOTE) return this.string(i);
    if (c === 0x7b) return this.members(i, depth);
    if (c === 0x5b) {
      if (depth > MAX_SCAN_DEPTH) return FAIL;
      i = this.ws(i + 1);
      if (s[i] === 0x5d) return i + 1;
      for (;;) {
        i = this.value(i, depth + 1);
        if (i === FAIL) return FAIL;
        i = this.ws(i);
        const d = s[i];
        if (d === 0x2c) i = this.ws(i + 1);
        else if (d === 0x5d) return i + 1;
        else return FAIL;
      }
    }
    if (c === 0x74) return s[i + 1] === 0x72 && s[i + 2] === 0x75 && s[i + 3] === 0x65 ? i + 4 : FAIL;
    if (c === 0x66)
      return s[i + 1] === 0x61 && s[i + 2] === 0x6c && s[i + 3] === 0x73 && s[i + 4] === 0x65 ? i + 5 : FAIL;
    if (c === 0x6e) return s[i + 1] === 0x75 && s[i + 2] === 0x6c && s[i + 3] === 0x6c ? i + 4 : FAIL;
    return this.number(i);
  }

  /** The end of the number at `i` (JSON's grammar: no leading zeros, no bare dot, no `+`). */
  private number(i: number): number {
    const s = this.s;
    if (s[i] === 0x2d) i++;
    const first = s[i] as number;
    if (first === 0x30) i++;
    else if (first >= 0x31 && first <= 0x39) i = this.digits(i);
    else return FAIL;
    if (s[i] === 0x2e) {
      const after = this.digits(i + 1);
      if (after === i + 1) return FAIL;
      i = after;
    }
    const e = s[i];
    if (e === 0x65 || e === 0x45) {
      i++;
      const sign = s[i];
      if (sign === 0x2b || sign === 0x2d) i++;
      const after = this.digits(i);
      if (after === i) return FAIL;
      i = after;
    }
    return i;
  }

  private digits(i: number): number {
    const s = this.s;
    for (;;) {
      const c = s[i] as number;
      if (c >= 0x30 && c <= 0x39) i++;
      else return i;
    }
  }

  private ws(i: number): number {
    const s = this.s;
    for (;;) {
      const c = s[i] as number;
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) i++;
      else return i;
    }
  }

  /**
   * The end (after the closing quote) of the string whose opening quote is at `i`, as JSON reads
   * it: escapes checked, raw control characters refused. Sets `escaped`.
   */
  private string(i: number): number {
    const s = this.s;
    const length = this.length;
    // Stryker disable next-line BooleanLiteral: a string read as escaped is decoded by JSON.parse, to the same text.
    let escaped = false;
    for (let k = i + 1; k < length; k++) {
      const c = s[k] as number;
      if (STRING_STOP[c] === 0) continue;
      if (c === QUOTE) {
        this.escaped = escaped;
        return k + 1;
      }
      if (c < 0x20) return FAIL;
      if (c !== BACKSLASH) continue;
      escaped = true;
      const e = s[k + 1];
      if (e === 0x75) {
        for (let h = k + 2; h < k + 6; h++) {
          const x = s[h] as number;
          if (!((x >= 0x30 && x <= 0x39) || (x >= 0x41 && x <= 0x46) || (x >= 0x61 && x <= 0x66))) return FAIL;
        }
        k += 5;
      } else if (
        e === QUOTE ||
        e === BACKSLASH ||
        e === 0x2f ||
        e === 0x62 ||
        e === 0x66 ||
        e === 0x6e ||
        e === 0x72 ||
        e === 0x74
      )
        k += 1;
      else return FAIL;
    }
    return FAIL;
  }

  /** The value of the string from `start` (its opening quote) to `end` (after its closing quote), as `JSON.parse` reads it. */
  private text(start: number, end: number): string | undefined {
    const escaped = this.escaped;
    if (!escaped) return this.s.toString('utf8', start + 1, end - 1);
    const raw = this.s.toString('utf8', start, end);
    try {
      return JSON.parse(raw) as string;
    } catch {
      return undefined;
    }
  }
}

import { randomBytes } from 'node:crypto';
import { RawJsonString } from './raw-json-string';

/** Strings of at least this many bytes, where the route allows it, are kept raw: 64 KiB. */
export const RAW_STRING_MIN_BYTES = 64 * 1024;
/** Most strings one body keeps raw; any further ones are decoded as usual. */
export const MAX_RAW_STRINGS = 1024;
/** Deepest nesting at which the reader follows keys: strings deeper than this are never kept raw. */
export const RAW_STRING_MAX_DEPTH = 16;
/** Longest key (in bytes, as sent) the reader follows: the values under a longer key are decoded as usual. */
const MAX_KEY_BYTES = 256;

/** Where a value stands in a JSON body: object keys and array indices from the top. */
export type JsonPath = readonly (string | number)[];

/**
 * Which large strings a route takes raw, by where they stand. A route lists only the strings it
 * reads as {@link RawJsonString} (or forwards untouched): any other is a plain string as usual.
 */
export type RawStringPolicy = (path: JsonPath) => boolean;

/** A string found in the body to keep raw: its characters' byte range and where it stands. */
interface RawString {
  /** First byte of the characters (after the opening quote). */
  start: number;
  /** The closing quote. */
  end: number;
  path: (string | number)[];
}

/** An open object or array, while its key or index is followed. */
interface Frame {
  object: boolean;
  /** The current member's key (undefined: not known, or not followed). */
  key: string | undefined;
  index: number;
  /** In an object: the next string is a key. */
  expectKey: boolean;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Finds the large strings of a JSON body as its bytes arrive, a chunk at a time, without
 * decoding them: each string's extent is found by its quotes and escapes, and a string of at
 * least {@link RAW_STRING_MIN_BYTES} of printable ASCII without escapes, where `policy` allows it
 * (asked as each value string starts), is noted with its place. Other strings are skipped to
 * their closing quote by a native search. It reads the structure only as far as it needs to (quotes, brackets,
 * commas and colons) and validates nothing: {@link parseJsonBytes} leaves the validation to
 * `JSON.parse`. Its memory is bounded: {@link RAW_STRING_MAX_DEPTH} levels of keys, keys of up to
 * 256 bytes, {@link MAX_RAW_STRINGS} strings noted.
 */
export class RawStringScanner {
  /** The strings found, in body order. */
  readonly found: RawString[] = [];
  private readonly frames: Frame[] = [];
  /** Nesting depth, including the levels deeper than the frames followed. */
  private depth = 0;
  private offset = 0;
  private inString = false;
  private escaped = false;
  /** Whether the current string is printable ASCII without escapes so far. */
  private plain = true;
  private isKey = false;
  private stringStart = 0;
  /** The current string's path, when the policy may take it raw. */
  private path: (string | number)[] | undefined;
  /** The current string is neither a key nor wanted: only its end is looked for. */
  private skipping = false;
  /** Backslashes just before the end of the previous chunk, in a skipped string. */
  private backslashes = 0;
  private keyParts: Buffer[] = [];
  private keyLength = 0;
  /** A closing bracket without its opening one: the body is not JSON, nothing more is noted. */
  private lost = false;

  constructor(
    private readonly policy: RawStringPolicy,
    private readonly minBytes = RAW_STRING_MIN_BYTES,
  ) {}

  /** Reads the next bytes of the body. */
  push(chunk: Buffer): void {
    const n = chunk.length;
    let i = 0;
    while (i < n) {
      if (this.inString) {
        if (this.skipping) {
          i = this.skip(chunk, i);
          continue;
        }
        if (this.escaped) {
          this.escaped = false;
          if (this.isKey) this.keepKey(chunk, i, i + 1);
          i++;
          continue;
        }
        let j = i;
        if (this.plain) {
          for (; j < n; j++) {
            const c = chunk[j] as number;
            if (c === QUOTE || c === BACKSLASH || c < 0x20 || c > 0x7e) break;
          }
        } else {
          for (; j < n; j++) {
            const c = chunk[j] as number;
            if (c === QUOTE || c === BACKSLASH) break;
          }
        }
        if (this.isKey) this.keepKey(chunk, i, j);
        if (j >= n) break;
        const c = chunk[j] as number;
        if (c === QUOTE) {
          this.endString(this.offset + j);
        } else {
          this.plain = false;
          if (c === BACKSLASH) this.escaped = true;
          if (this.isKey) this.keepKey(chunk, j, j + 1);
        }
        i = j + 1;
        continue;
      }
      switch (chunk[i]) {
        case QUOTE:
          this.startString(this.offset + i + 1);
          break;
        case 0x7b /* { */:
          this.open(true);
          break;
        case 0x5b /* [ */:
          this.open(false);
          break;
        case 0x7d /* } */:
        case 0x5d /* ] */:
          this.close();
          break;
        case 0x2c /* , */: {
          const top = this.top();
          if (top?.object) {
            top.expectKey = true;
            top.key = undefined;
          } else if (top) top.index++;
          break;
        }
        case 0x3a /* : */: {
          const top = this.top();
          if (top?.object) top.expectKey = false;
          break;
        }
        default:
      }
      i++;
    }
    this.offset += n;
  }

  /**
   * A string starts: a key is kept to follow it; a value the policy may take raw is read byte by
   * byte (to know whether it is plain); any other is skipped to its closing quote.
   */
  private startString(start: number): void {
    const top = this.frames.at(-1);
    this.inString = true;
    this.plain = true;
    this.escaped = false;
    this.stringStart = start;
    this.isKey = top !== undefined && top.object && top.expectKey && this.frames.length === this.depth;
    this.keyParts = [];
    this.keyLength = 0;
    this.path = this.isKey ? undefined : this.wanted();
    this.skipping = !this.isKey && this.path === undefined;
    this.backslashes = 0;
  }

  /** The path of the value string starting now, when the policy may take it raw. */
  private wanted(): (string | number)[] | undefined {
    if (this.lost || this.found.length >= MAX_RAW_STRINGS || this.frames.length !== this.depth || this.depth === 0)
      return undefined;
    const path: (string | number)[] = [];
    for (const frame of this.frames) {
      if (frame.object) {
        if (frame.key === undefined || frame.expectKey) return undefined;
        path.push(frame.key);
      } else path.push(frame.index);
    }
    return this.policy(path) ? path : undefined;
  }

  /**
   * Skips a string's characters from `from` to its closing quote (a quote after an even run of
   * backslashes), searched natively; returns where reading goes on.
   */
  private skip(chunk: Buffer, from: number): number {
    let start = from;
    for (;;) {
      const quote = chunk.indexOf(QUOTE, start);
      const stop = quote === -1 ? chunk.length : quote;
      let k = stop - 1;
      while (k >= start && chunk[k] === BACKSLASH) k--;
      const run = stop - 1 - k + (k < start ? this.backslashes : 0);
      if (quote === -1) {
        this.backslashes = run;
        return chunk.length;
      }
      this.backslashes = 0;
      if (run % 2 === 0) {
        this.inString = false;
        this.skipping = false;
        return quote + 1;
      }
      start = quote + 1;
    }
  }

  /** The innermost frame when it is the current level (not a deeper, unfollowed one). */
  private top(): Frame | undefined {
    return this.frames.length === this.depth ? this.frames.at(-1) : undefined;
  }

  private open(object: boolean): void {
    this.depth++;
    if (this.depth <= RAW_STRING_MAX_DEPTH && this.frames.length === this.depth - 1)
      this.frames.push({ object, key: undefined, index: 0, expectKey: object });
  }

  private close(): void {
    if (this.depth === 0) {
      this.lost = true;
      return;
    }
    if (this.frames.length === this.depth) this.frames.pop();
    this.depth--;
  }

  private keepKey(chunk: Buffer, from: number, to: number): void {
    if (to <= from) return;
    this.keyLength += to - from;
    // A view of the chunk, not a copy: the chunk is part of the body, kept anyway.
    if (this.keyLength <= MAX_KEY_BYTES) this.keyParts.push(chunk.subarray(from, to));
  }

  private endString(end: number): void {
    this.inString = false;
    if (this.isKey) {
      const top = this.frames.at(-1) as Frame;
      const parts = this.keyParts;
      top.key =
        this.keyLength > MAX_KEY_BYTES
          ? undefined
          : decodeKey(parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts), this.plain);
      this.keyParts = [];
      return;
    }
    const path = this.path;
    this.path = undefined;
    if (path !== undefined && this.plain && end - this.stringStart >= this.minBytes)
      this.found.push({ start: this.stringStart, end, path });
  }
}

/** A key's characters: plain ones as they are, others as `JSON.parse` reads them (undefined if it cannot). */
function decodeKey(bytes: Buffer, plain: boolean): string | undefined {
  if (plain) return bytes.toString('latin1');
  try {
    return JSON.parse(`"${bytes.toString('utf8')}"`) as string;
  } catch {
    return undefined;
  }
}

/** A prefix no client can guess, for the placeholders of raw strings while the rest is parsed. */
const PLACEHOLDER = `gw-raw-string:${randomBytes(12).toString('hex')}:`;

/**
 * Parses a JSON body from its bytes: as `JSON.parse` of its UTF-8 text (a leading byte order mark
 * ignored), except that the strings `raw` names are {@link RawJsonString}s over `bytes`. The rest
 * of the body, each of those strings replaced by a placeholder string, is parsed by `JSON.parse`,
 * which so validates the whole body (a string of printable ASCII without escapes is valid JSON
 * text, and so is its placeholder: one is invalid exactly when the other is). The placeholders are
 * then replaced along their paths; one that a later duplicate key replaced is dropped, as
 * `JSON.parse` drops it. `check` runs on the parsed value before the raw strings are put in.
 * Throws `SyntaxError` for text that is not JSON.
 */
export function parseJsonBytes(
  bytes: Buffer,
  raw: readonly RawString[] = [],
  check?: (value: unknown) => void,
): unknown {
  let text: string;
  if (raw.length === 0) {
    text = bytes.toString('utf8');
  } else {
    const parts: Buffer[] = [];
    let at = 0;
    raw.forEach((string, index) => {
      parts.push(bytes.subarray(at, string.start), Buffer.from(`${PLACEHOLDER}${index}`));
      at = string.end;
    });
    parts.push(bytes.subarray(at));
    text = Buffer.concat(parts).toString('utf8');
  }
  // A leading byte order mark is not JSON; some clients send one.
  const parsed: unknown = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  check?.(parsed);
  raw.forEach((string, index) => {
    let container: unknown = parsed;
    const last = string.path.length - 1;
    for (let step = 0; step < last; step++) container = own(container, string.path[step] as string | number);
    const key = string.path[last] as string | number;
    if (own(container, key) === `${PLACEHOLDER}${index}`)
      (container as Record<string | number, unknown>)[key] = new RawJsonString(
        bytes.subarray(string.start, string.end),
      );
  });
  return parsed;
}

function own(container: unknown, key: string | number): unknown {
  return typeof container === 'object' && container !== null && Object.prototype.hasOwnProperty.call(container, key)
    ? (container as Record<string | number, unknown>)[key]
    : undefined;
}

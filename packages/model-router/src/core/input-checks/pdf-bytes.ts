import type { JsonString } from '../raw-json-string';

/** Work done in slices: `due` when the current slice has lasted long enough, `pause` to yield. */
export interface Slices {
  due(): boolean;
  pause(): Promise<void>;
}

/** Base64 characters decoded into one window: 256 Ki, 192 KiB decoded (about 0.3 ms of work). */
const WINDOW_CHARS = 256 * 1024;
/**
 * Characters of a raw string decoded at once: each piece is first copied into a string, kept
 * small enough to be an ordinary young object (see RAW_DECODE_CHUNK in pdf.ts).
 */
const RAW_PIECE_CHARS = 64 * 1024;
/** Windows kept decoded: the searches of the PDF checks work at a few places of the PDF at once. */
const CACHED_WINDOWS = 4;

/** The decoded bytes of one window: bytes `start` to `start + bytes.length` of the PDF. */
interface Window {
  index: number;
  start: number;
  bytes: Buffer;
  /** The memory `bytes` is decoded into, reused for another window once this one is dropped. */
  memory: Buffer;
}

/** Base64 text decoded a window at a time. */
class Base64Windows {
  /** Bytes that a window of base64 letters decodes to. */
  readonly windowBytes: number;

  constructor(
    private readonly base64: JsonString,
    private readonly windowChars: number,
    private readonly pieceChars: number,
  ) {
    this.windowBytes = (windowChars / 4) * 3;
  }

  /**
   * Decodes window `index` into `memory`, a piece at a time, each as Node's decoder reads it.
   * Undefined when a piece other than the text's last decodes to less than 3 bytes per 4
   * characters: it holds something other than base64 letters (a line break, `=`), and the
   * windows no longer map linearly to bytes.
   */
  decode(index: number, memory: Buffer): Buffer | undefined {
    const end = Math.min((index + 1) * this.windowChars, this.base64.length);
    let length = 0;
    for (let at = index * this.windowChars; at < end; at += this.pieceChars) {
      const to = Math.min(at + this.pieceChars, end);
      const written = memory.write(this.base64.slice(at, to), length, 'base64');
      if (to < this.base64.length && written !== ((to - at) / 4) * 3) return undefined;
      length += written;
    }
    return memory.subarray(0, length);
  }
}

/**
 * The bytes of a PDF, read by the PDF checks. Either a buffer, or base64 text decoded a window
 * of 192 KiB at a time, on demand, the last four windows used kept: a large PDF is searched
 * without a decoded copy of it. Positions are byte offsets into the decoded PDF.
 */
export class PdfBytes {
  /** Windows decoded from base64 so far, for the tests: the searches decode each only a few times. */
  windowsDecoded = 0;
  /** The windows at hand, the most recently used first. */
  private readonly windows: Window[];
  private readonly windowBytes: number;

  private constructor(
    private size: number,
    windows: Window[],
    private readonly source?: Base64Windows,
  ) {
    this.windows = windows;
    this.windowBytes = source?.windowBytes ?? Infinity;
  }

  /** Bytes in the PDF. */
  get length(): number {
    return this.size;
  }

  /** The bytes of `buffer`. */
  static of(buffer: Buffer): PdfBytes {
    return new PdfBytes(buffer.length, [{ index: 0, start: 0, bytes: buffer, memory: buffer }]);
  }

  /**
   * The bytes that `base64` decodes to (as `Buffer.from(base64, 'base64')`), decoded a window
   * at a time; undefined when the text is not made of base64 letters only (but at its end), which
   * a full decoding reads instead. Every window is decoded once here, to know the length and that
   * each window before the last holds 192 KiB, pausing between windows when a slice is due.
   * `windowChars` (a multiple of `pieceChars`, which is a multiple of 4) for the tests.
   */
  static async fromBase64(
    base64: JsonString,
    slices: Slices,
    windowChars = WINDOW_CHARS,
    // Stryker disable next-line ConditionalExpression,EqualityOperator,StringLiteral: the piece size only sets how much garbage one string makes; the bytes are the same.
    pieceChars = typeof base64 === 'string' ? windowChars : RAW_PIECE_CHARS,
  ): Promise<PdfBytes | undefined> {
    const view = new PdfBytes(0, [], new Base64Windows(base64, windowChars, pieceChars));
    const count = Math.ceil(base64.length / windowChars);
    for (let index = 0; index < count; index++) {
      if (slices.due()) await slices.pause();
      const window = view.load(index);
      if (window === undefined) return undefined;
      view.size = window.start + window.bytes.length;
    }
    return view;
  }

  /** The byte at `at`; undefined outside the PDF. */
  at(at: number): number | undefined {
    if (at < 0 || at >= this.length) return undefined;
    const { start, bytes } = this.window(at);
    return bytes[at - start];
  }

  /** Whether the bytes at `at` are `needle` (false when it would run outside the PDF). */
  startsWith(at: number, needle: Buffer): boolean {
    for (let i = 0; i < needle.length; i++) if (this.at(at + i) !== needle[i]) return false;
    return true;
  }

  /**
   * The first position in [`from`, `to`) where `needle` starts (and ends within the PDF), or -1;
   * `from` ≥ 0. A search of each window, then of the few positions where `needle` would cross
   * into the next.
   */
  indexOf(needle: Buffer, from: number, to: number): number {
    const last = Math.min(to, this.length);
    for (let at = from; at < last;) {
      const { start, bytes } = this.window(at);
      const end = start + bytes.length;
      const hit = bytes.subarray(at - start, Math.min(last, end) - start + needle.length - 1).indexOf(needle);
      if (hit !== -1) return at + hit;
      for (let crossing = Math.max(at, end - needle.length + 1); crossing < Math.min(last, end); crossing++) {
        if (this.startsWith(crossing, needle)) return crossing;
      }
      // the next window (never back, whatever the windows hold)
      at = start + this.windowBytes;
    }
    return -1;
  }

  /** The last position in [`from`, `to`] where `needle` starts (and ends within the PDF), or -1. */
  lastIndexOf(needle: Buffer, from: number, to: number): number {
    for (let at = Math.min(to, this.length - 1); at >= from;) {
      const { start, bytes } = this.window(at);
      const end = start + bytes.length;
      for (let crossing = at; crossing > end - needle.length && crossing >= from; crossing--) {
        if (this.startsWith(crossing, needle)) return crossing;
      }
      const bottom = Math.max(from, start);
      const hit = bytes.subarray(bottom - start, at - start + needle.length).lastIndexOf(needle);
      if (hit !== -1) return bottom + hit;
      at = start - 1;
    }
    return -1;
  }

  /**
   * Bytes from `start` (within the PDF) towards `end`, up to the end of the window holding
   * `start`: a view of the window, valid until another window is decoded.
   */
  piece(start: number, end: number): Buffer {
    const window = this.window(start);
    return window.bytes.subarray(start - window.start, end - window.start);
  }

  /** Bytes from `start` to `end` (both within the PDF), copied into one buffer. */
  copy(start: number, end: number): Buffer {
    const copy = Buffer.allocUnsafe(end - start);
    for (let at = start; at < end;) {
      const piece = this.piece(at, end);
      piece.copy(copy, at - start);
      at += piece.length;
    }
    return copy;
  }

  /** The window holding byte `at` (within the PDF), decoded if it is not at hand. */
  private window(at: number): Window {
    const index = Math.floor(at / this.windowBytes);
    let found = 0;
    while (found < this.windows.length && (this.windows[found] as Window).index !== index) found++;
    if (found === 0) return this.windows[0] as Window;
    if (found === this.windows.length) return this.load(index) as Window;
    const window = this.windows.splice(found, 1)[0] as Window;
    this.windows.unshift(window);
    return window;
  }

  /**
   * Decodes window `index` and puts it first, in the memory of the window least recently used
   * when four are at hand; undefined when the text is not base64 letters only there.
   */
  private load(index: number): Window | undefined {
    const memory =
      this.windows.length < CACHED_WINDOWS
        ? Buffer.allocUnsafe(this.windowBytes)
        : (this.windows.pop() as Window).memory;
    this.windowsDecoded++;
    const bytes = (this.source as Base64Windows).decode(index, memory);
    if (bytes === undefined) return undefined;
    const window = { index, start: index * this.windowBytes, bytes, memory };
    this.windows.unshift(window);
    return window;
  }
}

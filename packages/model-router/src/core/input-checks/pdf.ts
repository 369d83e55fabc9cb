import { performance } from 'node:perf_hooks';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { createInflate, inflateSync } from 'node:zlib';
import {
  InvalidPdfError,
  PdfEncryptedError,
  PdfTooComplexError,
  PdfTooLargeError,
  PdfTooManyPagesError,
} from '../errors';
import { base64DecodedLength } from './data-url';
import { PdfBytes, type Slices } from './pdf-bytes';
import type { JsonString } from '../raw-json-string';

export type { Slices } from './pdf-bytes';

/** Largest PDF accepted, decoded: 32 MiB. */
export const MAX_PDF_BYTES = 32 * 1024 * 1024;
/** Most pages a PDF may have. */
export const MAX_PDF_PAGES = 100;
/** Most bytes the PDF checks of one request inflate from compressed object streams, all PDFs together: 64 MiB. */
export const MAX_PDF_INFLATED_BYTES = 64 * 1024 * 1024;
/** Most bytes one PDF's object streams inflate to, as a multiple of the PDF's own size (at least 1 MiB). */
export const MAX_PDF_INFLATE_RATIO = 4;
/** Most CPU time the PDF checks of one request take on the event loop, all PDFs together: 5 s. */
export const MAX_PDF_CHECK_MS = 5_000;

/** What a small PDF may inflate whatever its size: its object streams can be most of it. */
const MIN_PDF_INFLATE_ALLOWANCE = 1024 * 1024;
/** Work done between two turns of the event loop. */
const SLICE_MS = 3;
/** Bytes searched at a time (a 32 MiB search can take 20-50 ms). */
const WINDOW = 256 * 1024;
/** Base64 characters decoded at once, when the PDF is decoded whole (about 1 ms). */
const DECODE_CHUNK = 1024 * 1024;
/**
 * Characters of a raw string decoded at once (when it is decoded whole): each piece is first copied into a string, kept far
 * under the size (about 1 MB) at which Node makes it an external string, which lives outside the
 * heap until a full garbage collection, and small enough to be an ordinary young object: a 32 MB
 * PDF grew the heap by 16 MB in 512 KiB pieces, by 8 MB in these.
 */
const RAW_DECODE_CHUNK = 64 * 1024;
/** Streams this small inflate on the event loop, up to SYNC_INFLATE_OUTPUT (under about 1 ms)... */
const SYNC_INFLATE_INPUT = 256 * 1024;
const SYNC_INFLATE_OUTPUT = 256 * 1024;
/** ...larger ones on the libuv threadpool, in pieces of this size. */
const ASYNC_INFLATE_CHUNK = 1024 * 1024;

const PDF_HEADER = Buffer.from('%PDF-');
const ENCRYPT = Buffer.from('/Encrypt');
const PAGES = Buffer.from('/Pages');
const TYPE = Buffer.from('/Type');
const COUNT = Buffer.from('/Count');
const OBJSTM = Buffer.from('/ObjStm');
const STREAM = Buffer.from('stream');
const ENDSTREAM = Buffer.from('endstream');
const OPEN = Buffer.from('<<');
const CLOSE = Buffer.from('>>');

/**
 * What the PDF checks of one request may still spend: bytes inflated from object streams and
 * milliseconds of event-loop time. One per request, shared by all its PDFs.
 */
export class PdfCheckBudget {
  inflatedBytes: number;
  milliseconds: number;

  constructor(limits: { inflatedBytes?: number; milliseconds?: number } = {}) {
    this.inflatedBytes = limits.inflatedBytes ?? MAX_PDF_INFLATED_BYTES;
    this.milliseconds = limits.milliseconds ?? MAX_PDF_CHECK_MS;
  }
}

/** One PDF's check: slices of work between turns of the event loop, charged to the budget. */
class Scan implements Slices {
  private sliceStart = performance.now();
  /**
   * The process's CPU time when the slice started. Slices end by the clock (so others are served
   * in time), but the budget is charged the CPU the process used: a machine busy with other
   * processes does not make an ordinary PDF look too complex.
   */
  private sliceCpu = process.cpuUsage();

  /** What this PDF may still inflate. */
  inflateLeft = 0;

  constructor(
    private readonly budget: PdfCheckBudget,
    private readonly param: string,
  ) {}

  /** True when the current slice has lasted long enough: time to `pause`. */
  due(): boolean {
    return performance.now() - this.sliceStart >= SLICE_MS;
  }

  /** Ends the current slice: charges its time, refusing the PDF when the time budget is spent. */
  charge(): void {
    const used = process.cpuUsage(this.sliceCpu);
    this.budget.milliseconds -= (used.user + used.system) / 1000;
    this.sliceStart = performance.now();
    this.sliceCpu = process.cpuUsage();
    if (this.budget.milliseconds < 0) {
      throw new PdfTooComplexError(
        `The PDF is too complex to check: reading its structure takes more than ${MAX_PDF_CHECK_MS / 1000} s.`,
        { param: this.param },
      );
    }
  }

  /** Lets the event loop serve other requests, then starts a new slice. */
  async pause(): Promise<void> {
    this.charge();
    await nextTurn();
    this.sliceStart = performance.now();
    this.sliceCpu = process.cpuUsage();
  }

  /**
   * Inflates one Flate stream within what is left of the budgets; undefined when it is not a
   * Flate stream. Small streams inflate here (bounded to about 1 ms), larger ones on the libuv
   * threadpool, whose time is not charged: the byte budget bounds it.
   */
  async inflate(pdf: PdfBytes, start: number, end: number): Promise<Buffer | undefined> {
    const limit = Math.min(this.inflateLeft, this.budget.inflatedBytes);
    if (limit < 1) throw this.tooMuchInflated();
    let inflated: Buffer | undefined;
    try {
      if (end - start <= SYNC_INFLATE_INPUT) {
        try {
          inflated = inflateSync(pdf.copy(start, end), { maxOutputLength: Math.min(limit, SYNC_INFLATE_OUTPUT) });
        } catch (error) {
          if (!(isTooLarge(error) && limit > SYNC_INFLATE_OUTPUT)) throw error;
        }
      }
      if (inflated === undefined) {
        this.charge();
        try {
          inflated = await inflateAsync(pdf, start, end, limit);
        } finally {
          this.sliceStart = performance.now();
          this.sliceCpu = process.cpuUsage();
        }
      }
    } catch (error) {
      if (error instanceof PdfTooComplexError) throw error;
      if (isTooLarge(error)) throw this.tooMuchInflated();
      return undefined;
    }
    this.inflateLeft -= inflated.length;
    this.budget.inflatedBytes -= inflated.length;
    return inflated;
  }

  private tooMuchInflated(): PdfTooComplexError {
    return new PdfTooComplexError(
      `The PDF is too complex to check: its compressed object streams inflate to more than ${MAX_PDF_INFLATE_RATIO} ` +
        `times its size (or more than ${MAX_PDF_INFLATED_BYTES / 1024 / 1024} MB for all PDFs of the request).`,
      { param: this.param },
    );
  }
}

/** The code of zlib's error past `maxOutputLength`, and of `inflateAsync`'s. */
const TOO_LARGE = 'ERR_BUFFER_TOO_LARGE';

function isTooLarge(error: unknown): boolean {
  // Stryker disable next-line OptionalChaining: zlib and inflateAsync only throw error objects, never null.
  return (error as { code?: unknown } | null)?.code === TOO_LARGE;
}

/**
 * Inflates bytes `start` to `end` of `pdf` on the libuv threadpool, a piece at a time, each
 * piece copied into one buffer of `limit` bytes (allocated, not touched: its pages are used as
 * it fills), so that no single step on the event loop copies more than a piece. The PDF is fed a
 * window at a time, each once the one before has been read (the next may be decoded into the
 * same memory). Rejects with code ERR_BUFFER_TOO_LARGE past `limit`.
 */
function inflateAsync(pdf: PdfBytes, start: number, end: number, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const inflated = Buffer.allocUnsafe(limit);
    let length = 0;
    let done = false;
    // Stryker disable next-line ObjectLiteral: the piece size only sets how much one step copies; the inflated bytes and the limit are the same.
    const inflater = createInflate({ chunkSize: ASYNC_INFLATE_CHUNK });
    const fail = (error: unknown) => {
      done = true;
      inflater.destroy();
      reject(error);
    };
    inflater.on('data', (piece: Buffer) => {
      if (length + piece.length > limit) {
        // Stryker disable next-line StringLiteral: never shown: `inflate` turns the code into its own pdf_too_complex error.
        fail(Object.assign(new RangeError('Inflated past the limit.'), { code: TOO_LARGE }));
        return;
      }
      piece.copy(inflated, length);
      length += piece.length;
    });
    inflater.on('error', fail);
    inflater.once('end', () => {
      done = true;
      resolve(inflated.subarray(0, length));
    });
    // zlib calls back once it has read a piece, not after an error (the error settles the promise).
    const feed = (at: number): void => {
      if (done) return;
      if (at === end) return void inflater.end();
      const piece = pdf.piece(at, end);
      inflater.write(piece, () => feed(at + piece.length));
    };
    feed(start);
  });
}

function isSpace(byte: number | undefined): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09 || byte === 0x0c || byte === 0x00;
}

/** The first position at or after `from` where `needle` starts, or -1; searched a window at a time. */
async function find(pdf: PdfBytes, needle: Buffer, from: number, scan: Scan): Promise<number> {
  for (let at = Math.max(from, 0); at < pdf.length; at += WINDOW) {
    if (scan.due()) await scan.pause();
    const hit = pdf.indexOf(needle, at, at + WINDOW);
    if (hit !== -1) return hit;
  }
  return -1;
}

/** The last position in [from, to] where `needle` starts, or -1; searched a window at a time. */
async function findLast(pdf: PdfBytes, needle: Buffer, from: number, to: number, scan: Scan): Promise<number> {
  for (let top = to; top >= from; top -= WINDOW) {
    if (scan.due()) await scan.pause();
    const hit = pdf.lastIndexOf(needle, Math.max(from, top - WINDOW + 1), top);
    if (hit !== -1) return hit;
  }
  return -1;
}

/** The first position at or after `at` that is not white space. */
async function skipSpaces(pdf: PdfBytes, at: number, scan: Scan): Promise<number> {
  let i = at;
  while (isSpace(pdf.at(i))) {
    i++;
    if ((i & 0xffff) === 0 && scan.due()) await scan.pause();
  }
  return i;
}

/** Going back from `at`, the first position that is not white space (-1 when there is none). */
async function skipSpacesBack(pdf: PdfBytes, at: number, scan: Scan): Promise<number> {
  let i = at;
  while (isSpace(pdf.at(i))) {
    i--;
    if ((i & 0xffff) === 0 && scan.due()) await scan.pause();
  }
  return i;
}

async function readInteger(pdf: PdfBytes, at: number, scan: Scan): Promise<number | undefined> {
  let i = await skipSpaces(pdf, at, scan);
  let value = 0;
  const start = i;
  while ((pdf.at(i) as number) >= 0x30 && (pdf.at(i) as number) <= 0x39 && i - start < 9) {
    value = value * 10 + ((pdf.at(i) as number) - 0x30);
    i++;
  }
  return i === start ? undefined : value;
}

/** True when `/Encrypt` is used as a dictionary key (followed by a reference or a dictionary). */
async function isEncrypted(pdf: PdfBytes, scan: Scan): Promise<boolean> {
  for (
    let at = await find(pdf, ENCRYPT, 0, scan);
    at !== -1;
    at = await find(pdf, ENCRYPT, at + ENCRYPT.length, scan)
  ) {
    const next = pdf.at(await skipSpaces(pdf, at + ENCRYPT.length, scan)) as number;
    if ((next >= 0x30 && next <= 0x39) || next === 0x3c /* < */) return true;
  }
  return false;
}

/**
 * The largest `/Count` of a `/Type /Pages` dictionary: the root page tree's page count. For each
 * `/Type /Pages`, the dictionary runs from the last `<<` before it to the first `>>` after it,
 * and its `/Count` is the first one after that `<<`. Those positions only move forward from one
 * `/Pages` to the next, so each is found from where the previous search left off: every byte
 * is searched once, whatever the PDF holds.
 */
async function pageTreeCount(pdf: PdfBytes, scan: Scan): Promise<number | undefined> {
  let best: number | undefined;
  let open = -1; // the last `<<` before `openFrom`
  let openFrom = 0;
  let close: number | undefined; // the first `>>` at or after the last `/Pages` that needed it (-1: none)
  let countFrom = -1;
  // Stryker disable next-line UnaryOperator: never read before the first search, which `countFrom === -1` forces.
  let count = -1; // the first `/Count` at or after `countFrom` (-1: none)
  // Stryker disable next-line UnaryOperator: no `/Count` starts at byte 1: its dictionary's `<<` comes before it.
  let valueAt = -1;
  let value: number | undefined;
  for (let at = await find(pdf, PAGES, 0, scan); at !== -1; at = await find(pdf, PAGES, at + PAGES.length, scan)) {
    const i = await skipSpacesBack(pdf, at - 1, scan);
    if (!pdf.startsWith(i - TYPE.length + 1, TYPE)) continue;
    if (openFrom <= at) {
      const found = await findLast(pdf, OPEN, openFrom, at, scan);
      if (found !== -1) open = found;
      // Stryker disable next-line ArithmeticOperator: no `<<` starts at `at - 1`, the byte before the `/` of `/Pages`.
      openFrom = at + 1;
    }
    // Stryker disable next-line UnaryOperator: no `>>` starts at byte 1 (it follows `/Pages`), and none after -1 is none after `at`.
    if (close === undefined || (close !== -1 && close < at)) close = await find(pdf, CLOSE, at, scan);
    if (open === -1 || close === -1) continue;
    if (countFrom === -1 || (count !== -1 && count < open)) {
      count = await find(pdf, COUNT, open, scan);
      countFrom = open;
    }
    // Stryker disable next-line UnaryOperator: no `/Count` starts at byte 1, and -1 is past `count > close` anyway.
    if (count === -1 || count > close) continue;
    if (valueAt !== count) {
      value = await readInteger(pdf, count + COUNT.length, scan);
      valueAt = count;
    }
    if (value !== undefined && (best === undefined || value > best)) best = value;
  }
  return best;
}

/** Page count from compressed object streams (PDF 1.5+), which hide the page tree. */
async function objectStreamPageCount(pdf: PdfBytes, scan: Scan): Promise<number | undefined> {
  let best: number | undefined;
  // Stryker disable next-line UnaryOperator: every `/ObjStm` is past byte 1 (after `%PDF-`), so the first search runs either way.
  let streamAt = -1; // the first `stream` at or after the current `/ObjStm`
  // Stryker disable next-line UnaryOperator: every `stream` is past byte 1, so the first search runs either way.
  let endAt = -1; // the first `endstream` at or after `streamAt`
  // Stryker disable next-line UnaryOperator: no stream data starts at byte 1.
  let previousData = -1;
  for (let at = await find(pdf, OBJSTM, 0, scan); at !== -1; at = await find(pdf, OBJSTM, at + OBJSTM.length, scan)) {
    if (streamAt < at) streamAt = await find(pdf, STREAM, at, scan);
    if (streamAt === -1) break; // and none after either
    if (endAt < streamAt) endAt = await find(pdf, ENDSTREAM, streamAt, scan);
    if (endAt === -1) break;
    let dataStart = streamAt + STREAM.length;
    if (pdf.at(dataStart) === 0x0d) dataStart++;
    if (pdf.at(dataStart) === 0x0a) dataStart++;
    // Several `/ObjStm` before one stream name the same stream: it is read once.
    if (dataStart === previousData) continue;
    previousData = dataStart;
    const inflated = await scan.inflate(pdf, dataStart, endAt);
    // Not a Flate stream we can read: the page count stays unknown.
    if (inflated === undefined) continue;
    const count = await pageTreeCount(PdfBytes.of(inflated), scan);
    if (count !== undefined && (best === undefined || count > best)) best = count;
  }
  return best;
}

const BASE64_ALPHABET = new Uint8Array(256);
for (const char of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_')
  BASE64_ALPHABET[char.charCodeAt(0)] = 1;

const NOT_BASE64 = /[^A-Za-z0-9+/_-]+/g;
// eslint-disable-next-line no-control-regex -- a range of characters, from U+0000
const NOT_LATIN1 = /[^\x00-\xff]/;

/**
 * The characters of `text` that Node's base64 decoder reads: letters of either base64 alphabet
 * kept, anything else skipped, `=` ending the data. Node reads only the low byte of characters
 * past U+00FF (so U+0141 reads as `A`), which the slow path here does too.
 */
async function base64Characters(text: string, scan: Slices): Promise<{ characters: string; ended: boolean }> {
  if (!NOT_LATIN1.test(text)) {
    const end = text.indexOf('=');
    const data = end === -1 ? text : text.slice(0, end);
    return { characters: data.replace(NOT_BASE64, ''), ended: end !== -1 };
  }
  const kept = Buffer.allocUnsafe(text.length);
  let length = 0;
  let ended = false;
  for (let i = 0; i < text.length; i++) {
    if ((i & 0xffff) === 0 && scan.due()) await scan.pause();
    const code = text.charCodeAt(i) & 0xff;
    if (code === 0x3d /* = */) {
      ended = true;
      break;
    }
    if (BASE64_ALPHABET[code] === 1) kept[length++] = code;
  }
  return { characters: kept.toString('latin1', 0, length), ended };
}

/**
 * `Buffer.from(base64, 'base64')`, byte for byte, decoded about a millisecond at a time. Plain
 * base64 is decoded by Node a chunk at a time; a chunk with anything else in it (line breaks,
 * `=`) is first reduced to the characters Node reads, and an incomplete last group of four is
 * carried to the next chunk. A raw string is read a chunk at a time from its bytes: the only
 * copy made is the decoded one. Exported for the tests.
 */
export async function decodeBase64(
  base64: JsonString,
  scan: Slices,
  chunk = typeof base64 === 'string' ? DECODE_CHUNK : RAW_DECODE_CHUNK,
): Promise<Buffer> {
  const decoded = Buffer.allocUnsafe(Math.ceil((base64.length * 3) / 4));
  let length = 0;
  let carry = '';
  for (let at = 0; at < base64.length;) {
    if (scan.due()) await scan.pause();
    const end = Math.min(at + chunk - carry.length, base64.length);
    const text = carry + base64.slice(at, end);
    at = end;
    const last = end === base64.length;
    if (!last && text.length % 4 === 0) {
      const written = decoded.write(text, length, 'base64');
      if (written === (text.length / 4) * 3) {
        length += written;
        carry = '';
        continue;
      }
    }
    const { characters, ended } = await base64Characters(text, scan);
    if (last || ended) {
      length += decoded.write(characters, length, 'base64');
      break;
    }
    const whole = characters.length - (characters.length % 4);
    length += decoded.write(characters.slice(0, whole), length, 'base64');
    carry = characters.slice(whole);
  }
  return decoded.subarray(0, length);
}

/**
 * Checks a base64 PDF before any upstream call: decoded size (from the base64 length, before
 * decoding), the `%PDF-` header, encryption, and the page count (page tree `/Count`, including
 * inside compressed object streams). A PDF whose page count cannot be read passes through to
 * the provider, which has the last word. Never converts the PDF to a string, and reads a raw
 * string from the bytes received. Base64 of letters only (padding at the end allowed), as raw
 * strings are, is decoded a window of 192 KiB at a time, a few windows kept ({@link PdfBytes}):
 * no decoded copy of the PDF is made. Other base64 (line breaks, spaces, `=` before the end) is
 * decoded whole, the one copy made.
 *
 * The work is done in slices of a few milliseconds, letting the event loop serve other requests
 * in between, within `budget` (one per request, shared by its PDFs; a new one when not given):
 * 2 s of event-loop time, and object streams inflated to at most 4 times the PDF's size (at
 * least 1 MiB) and 64 MiB for the request. A PDF over budget is refused with `pdf_too_complex`.
 */
export async function checkPdf(base64: JsonString, param: string, budget = new PdfCheckBudget()): Promise<void> {
  if (base64DecodedLength(base64) > MAX_PDF_BYTES) {
    throw new PdfTooLargeError('The PDF is larger than 32 MB.', { param });
  }
  const scan = new Scan(budget, param);
  // Base64 letters only (but at the end), as raw strings and most others are: decoded a window at
  // a time. Anything else (line breaks, spaces, `=` before the end) is decoded whole.
  const pdf = (await PdfBytes.fromBase64(base64, scan)) ?? PdfBytes.of(await decodeBase64(base64, scan));
  scan.inflateLeft = Math.max(pdf.length * MAX_PDF_INFLATE_RATIO, MIN_PDF_INFLATE_ALLOWANCE);
  // `%PDF-` within its first 1 KiB: no need to search further.
  const header = pdf.indexOf(PDF_HEADER, 0, 1024 + 1);
  if (header === -1) throw new InvalidPdfError('The document is not a PDF.', { param });
  if (await isEncrypted(pdf, scan))
    throw new PdfEncryptedError('Encrypted or password-protected PDFs are not supported.', { param });
  const pages = (await pageTreeCount(pdf, scan)) ?? (await objectStreamPageCount(pdf, scan));
  scan.charge();
  if (pages !== undefined && pages > MAX_PDF_PAGES) {
    throw new PdfTooManyPagesError(`The PDF has ${pages} pages; at most ${MAX_PDF_PAGES} are accepted.`, { param });
  }
}

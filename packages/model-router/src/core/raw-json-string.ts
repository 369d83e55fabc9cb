/**
 * A JSON string value kept as the bytes the client sent, a reference into the received body
 * instead of a decoded copy: large base64 data (PDFs, images) is checked and forwarded from
 * these bytes. Only strings of printable ASCII without escapes are kept this way, so the bytes
 * are both the string's characters and its JSON text (between the quotes), exactly as
 * `JSON.stringify` writes them.
 */
export class RawJsonString {
  constructor(
    /** The string's characters, one byte each (printable ASCII). */
    readonly bytes: Buffer,
  ) {}

  /** Characters (and bytes) in the string. */
  get length(): number {
    return this.bytes.length;
  }

  /** The characters from `start` to `end` (exclusive), as another reference into the same bytes. */
  subarray(start: number, end?: number): RawJsonString {
    return new RawJsonString(this.bytes.subarray(start, end));
  }

  /** The characters from `start` to `end` as a string (a copy: for short parts). */
  slice(start = 0, end = this.bytes.length): string {
    return this.bytes.toString('latin1', start, end);
  }

  /** The whole string, decoded (a copy). */
  toString(): string {
    return this.bytes.toString('latin1');
  }

  /**
   * The string for `JSON.stringify`, so any serialisation writes what the client sent; one that
   * streams the body in pieces (see `chunkedJson`) gets a marker instead and writes the bytes.
   */
  toJSON(): string {
    if (collector !== undefined) {
      collector.found.push(this);
      return collector.marker;
    }
    return this.toString();
  }
}

let collector: { found: unknown[]; marker: string } | undefined;

/**
 * Runs `serialise` (a synchronous `JSON.stringify`) with every {@link RawJsonString} written as
 * `marker` and appended to `found`, in the order written.
 */
export function collectRawStrings<T>(found: unknown[], marker: string, serialise: () => T): T {
  const previous = collector;
  collector = { found, marker };
  try {
    return serialise();
  } finally {
    collector = previous;
  }
}

/** A string, whether decoded or kept as the bytes the client sent. */
export type JsonString = string | RawJsonString;

/** Whether `value` is a string, decoded or raw. */
export function isJsonString(value: unknown): value is JsonString {
  return typeof value === 'string' || value instanceof RawJsonString;
}

import { UpstreamInvalidResponseError } from '@gw/identity-forwarding/identity';
import { filterJsonBytes, type McpToolGate } from './tool-gate';

function unreadable(reason: string): UpstreamInvalidResponseError {
  return new UpstreamInvalidResponseError(`The MCP server's streamed JSON answer cannot be read: ${reason}.`);
}

const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** JSON whitespace (RFC 8259): space, tab, line feed, carriage return. */
function isWhitespace(byte: number): boolean {
  return byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d;
}

/**
 * Reads an `application/json` answer that streams several JSON-RPC messages one after another
 * (newline-delimited JSON, as some 2026-07-28 servers answer `subscriptions/listen`), message by
 * message, and writes each again as it completes, through the tool gate ({@link filterJsonBytes}:
 * only allowed tools in every `result.tools`), followed by a line feed. A message is a top-level
 * JSON object or array; it may span lines (pretty-printed) and chunks, and the whitespace between
 * messages is dropped. {@link JsonLinesToolFilter.push} throws `UpstreamInvalidResponseError` when
 * something other than whitespace stands between messages, when a message is not strict UTF-8
 * JSON, or when one grows past `maxMessageBytes`: the caller then ends the stream.
 */
export class JsonLinesToolFilter {
  /** The bytes of the message being read, not ended yet. */
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** Nesting depth in the message being read (0: between messages). */
  private depth = 0;
  private inString = false;
  private escaped = false;

  /**
   * @param gate The caller's tool gate.
   * @param maxMessageBytes Largest message read, in bytes (the gateway's `maxInspectedAnswerBytes`).
   */
  constructor(
    private readonly gate: McpToolGate,
    private readonly maxMessageBytes: number,
  ) {}

  /** Takes a chunk of the answer; returns the messages it completed, filtered, each with a line feed (possibly empty). */
  push(chunk: Buffer): Buffer[] {
    const out: Buffer[] = [];
    let start = this.depth > 0 ? 0 : -1;
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i] as number;
      if (this.depth === 0) {
        if (isWhitespace(byte)) continue;
        if (byte !== OPEN_OBJECT && byte !== OPEN_ARRAY)
          throw unreadable('something other than a JSON object or array stands between its messages');
        start = i;
        this.depth = 1;
        continue;
      }
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (byte === BACKSLASH) this.escaped = true;
        else if (byte === QUOTE) this.inString = false;
        continue;
      }
      if (byte === QUOTE) this.inString = true;
      else if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) this.depth += 1;
      else if (byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) {
        this.depth -= 1;
        if (this.depth === 0) {
          out.push(this.message(chunk.subarray(start, i + 1)));
          start = -1;
        }
      }
    }
    if (start !== -1) this.hold(chunk.subarray(start));
    return out;
  }

  /** The end of the answer: throws when it ends inside a message. */
  end(): void {
    if (this.depth !== 0) throw unreadable('it ends inside a message');
  }

  private hold(bytes: Buffer): void {
    this.pendingBytes += bytes.length;
    if (this.pendingBytes > this.maxMessageBytes) throw unreadable('a message is larger than the gateway inspects');
    this.pending.push(bytes);
  }

  /** One whole message (its last bytes given), filtered, with a line feed. */
  private message(last: Buffer): Buffer {
    this.hold(last);
    // Stryker disable next-line ConditionalExpression: concatenating one buffer gives the same bytes; the test spares a copy.
    const bytes = this.pending.length === 1 ? (this.pending[0] as Buffer) : Buffer.concat(this.pending);
    this.pending = [];
    this.pendingBytes = 0;
    const filtered = filterJsonBytes(bytes, this.gate);
    return Buffer.concat([filtered, LINE_FEED]);
  }
}

const LINE_FEED = Buffer.from('\n');

import { UpstreamInvalidResponseError } from '@gw/identity-forwarding/identity';
import { filterJsonAnswer, type McpToolGate } from './tool-gate';

/** Largest event of an inspected event stream, in characters. */
export const MAX_INSPECTED_EVENT_CHARS = 16 * 1024 * 1024;

function unreadable(reason: string): UpstreamInvalidResponseError {
  return new UpstreamInvalidResponseError(`The MCP server's event stream cannot be read: ${reason}.`);
}

/** The characters a UTF-8 byte-order mark reads as in Latin-1, which the client's event parser also skips. */
const LATIN1_BOM = '\u00ef\u00bb\u00bf';

/**
 * Reads an MCP server's event stream the way the MCP SDK client does (UTF-8 decoding that skips
 * a byte-order mark, then the WHATWG event-stream rules as `eventsource-parser` implements them:
 * CR, LF and CRLF line ends, `data:` with or without one space, several `data:` lines of one
 * event joined with `\n`, `:` comments, `id:` without NUL, `event:`, `retry:` digits, other
 * fields ignored, an event dispatched only by a blank line and only when it has data) and
 * writes every event again in one plain form: `id: …`, `event: …`, one `data: …` line per line
 * of its data, a blank line; comments and `retry:` lines as they come. The client thus reads
 * exactly the events the gateway read. The data of a message event (no `event:` type, or
 * `message`) with data is a JSON-RPC message or batch whose `result.tools` are filtered
 * ({@link filterJsonAnswer}); other events (the legacy transport's `endpoint`) pass, since
 * clients never read them as messages. {@link SseToolFilter.push} throws
 * `UpstreamInvalidResponseError` when the bytes are not UTF-8, when a message event's data is
 * not JSON, or when one event grows past {@link MAX_INSPECTED_EVENT_CHARS}: the caller then ends
 * the stream.
 */
export class SseToolFilter {
  private readonly decoder = new TextDecoder('utf-8', { fatal: true });
  private started = false;
  /** The pieces of the line not ended yet (kept apart, so that a long line costs its length once). */
  private partial: string[] = [];
  private partialChars = 0;
  /** The last line ended with `\r` at the end of a chunk: a `\n` starting the next one belongs to it. */
  // Stryker disable next-line BooleanLiteral: a line feed first in the stream is a blank line with no event to end.
  private skipLf = false;
  /** The event being read. */
  private data: string[] = [];
  private eventChars = 0;
  private id: string | undefined;
  private type: string | undefined;

  constructor(private readonly gate: McpToolGate) {}

  /** Takes a chunk of the stream; returns the text ready to send (possibly empty). */
  push(chunk: Buffer): string {
    let text: string;
    try {
      text = this.decoder.decode(chunk, { stream: true });
    } catch {
      throw unreadable('it is not valid UTF-8');
    }
    return this.feed(text);
  }

  /** The end of the stream: an event not ended by a blank line is dropped, as the client drops it. */
  end(): string {
    try {
      this.decoder.decode();
    } catch {
      throw unreadable('it ends inside a UTF-8 character');
    }
    return '';
  }

  /** Reads the lines of `text`, each character once; returns what they make ready to send. */
  private feed(text: string): string {
    if (!this.started && text.length > 0) {
      // The decoder skipped a byte-order mark; the parser also skips its Latin-1 reading.
      this.started = true;
      if (text.startsWith(LATIN1_BOM)) text = text.slice(3);
    }
    let out = '';
    let at = 0;
    if (this.skipLf && text.length > 0) {
      if (text.charCodeAt(0) === 0x0a) at = 1;
      this.skipLf = false;
    }
    let lf = -2;
    let cr = -2;
    while (at < text.length) {
      // Stryker disable next-line LogicalOperator: searching again from `at` finds the same line feed, or none again.
      if (lf !== -1 && lf < at) lf = text.indexOf('\n', at);
      // Stryker disable next-line LogicalOperator,UnaryOperator: searching again from `at` finds the same CR, or none again.
      if (cr !== -1 && cr < at) cr = text.indexOf('\r', at);
      const brk = lf === -1 ? cr : cr === -1 ? lf : Math.min(lf, cr);
      if (brk === -1) {
        this.partial.push(text.slice(at));
        this.partialChars += text.length - at;
        this.checkSize(0);
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
      out += this.line(line);
    }
    return out;
  }

  private checkSize(more: number): void {
    if (this.partialChars + this.eventChars + more > MAX_INSPECTED_EVENT_CHARS)
      throw unreadable('an event is larger than the gateway inspects');
  }

  /** One line: a field of the event being read, a comment or `retry:` (sent at once), or the blank line that ends the event. */
  private line(line: string): string {
    if (line === '') return this.dispatch();
    if (line.charCodeAt(0) === 0x3a) return `${line}\n`;
    this.checkSize(line.length);
    this.eventChars += line.length;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    const value = colon === -1 ? '' : line.slice(line.charCodeAt(colon + 1) === 0x20 ? colon + 2 : colon + 1);
    switch (field) {
      case 'data':
        this.data.push(value);
        return '';
      case 'event':
        this.type = value === '' ? undefined : value;
        return '';
      case 'id':
        if (!value.includes('\0')) this.id = value;
        return '';
      case 'retry':
        return /^\d+$/.test(value) ? `retry: ${value}\n` : '';
      default:
        return '';
    }
  }

  private dispatch(): string {
    const { data, id, type } = this;
    this.data = [];
    this.eventChars = 0;
    this.id = undefined;
    this.type = undefined;
    // Without a data line, the client dispatches nothing (and forgets the event's id).
    if (data.length === 0) return '';
    let text = data.join('\n');
    if ((type === undefined || type === 'message') && text !== '') {
      try {
        text = filterJsonAnswer(text, this.gate);
      } catch {
        throw unreadable('a message event holds data that is not JSON');
      }
    }
    let out = id === undefined ? '' : `id: ${id}\n`;
    if (type !== undefined) out += `event: ${type}\n`;
    for (const line of text.split('\n')) out += `data: ${line}\n`;
    return `${out}\n`;
  }
}

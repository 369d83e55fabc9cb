import type { ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';

/**
 * Longest an event of a stream waits to be written with the events after it: 5 ms. An event that
 * comes 5 ms or more after the last write (the first one, and tokens as a provider usually
 * generates them) is written at once; events that come faster leave together, in one write.
 */
export const STREAM_FLUSH_MS = 5;
/**
 * Shortest wait worth a timer: 1 ms, the resolution of Node's timers (a shorter `setTimeout`
 * fires after 1 ms or later). An event whose window ends sooner is written at once: holding it
 * would delay a provider's paced tokens by a millisecond each to save nothing.
 */
export const STREAM_SHORTEST_WAIT_MS = 1;
/** Bytes held for the window at most: more are written at once (64 KiB). */
export const STREAM_FLUSH_BYTES = 64 * 1024;

/**
 * Writes a stream's events to the client in as few writes as the window allows (each write is a
 * system call and a chunk of the HTTP body; a provider may send every event as its own chunk),
 * and holds the upstream back while the client reads slower than the provider writes. The bytes
 * are those written, in order: only when they leave changes.
 */
export class StreamWriter {
  private parts: (string | Buffer)[] = [];
  private size = 0;
  private timer: NodeJS.Timeout | undefined;
  private lastWrite = Number.NEGATIVE_INFINITY;
  private holds = 0;
  private closed = false;
  private opening: NodeJS.Immediate | undefined;

  /**
   * @param res - the client's response (headers already sent or set).
   * @param upstream - the provider's body, paused while the client's socket is full.
   * @param onWrite - called before each write to the socket (the first one marks the first byte).
   */
  constructor(
    private readonly res: ServerResponse,
    private readonly upstream: Readable,
    private readonly onWrite: () => void,
  ) {
    res.once('close', () => {
      this.stopTimer();
      this.stopOpening();
    });
  }

  /**
   * Starts the response: its headers (set, not sent) leave with the first write, in the same
   * packet as the first event, when that event has already arrived with the provider's headers
   * (the usual case); else on the next turn of the event loop, so that a client still learns at
   * once that its stream has started. One write and one wake-up of the client fewer than sending
   * the headers on their own first.
   */
  open(): void {
    if (this.opening !== undefined || this.res.headersSent) return;
    this.opening = setImmediate(() => {
      this.opening = undefined;
      if (!this.res.headersSent && !this.res.destroyed) this.res.flushHeaders();
    });
  }

  /** Queues bytes of the stream; they leave now, or within {@link STREAM_FLUSH_MS}. */
  write(data: string | Buffer): void {
    if (data.length === 0 || this.closed) return;
    this.parts.push(data);
    this.size += data.length;
    if (this.timer !== undefined) {
      if (this.size >= STREAM_FLUSH_BYTES) this.flush();
      return;
    }
    const wait = this.lastWrite + STREAM_FLUSH_MS - performance.now();
    if (wait < STREAM_SHORTEST_WAIT_MS || this.size >= STREAM_FLUSH_BYTES) this.flush();
    else this.timer = setTimeout(this.flushLater, wait);
  }

  private readonly flushLater = (): void => {
    this.timer = undefined;
    this.flush();
  };

  /** Writes what is queued now. */
  flush(): void {
    this.stopTimer();
    if (this.parts.length === 0 || this.closed) return;
    const parts = this.parts;
    this.parts = [];
    this.size = 0;
    this.lastWrite = performance.now();
    this.onWrite();
    if (this.res.destroyed) return;
    if (!this.res.write(joined(parts))) {
      this.hold();
      this.res.once('drain', this.release);
    }
  }

  /** Writes what is queued, then `last`, and ends the response. */
  end(last?: string): void {
    if (last) this.write(last);
    this.flush();
    this.closed = true;
    this.res.end();
  }

  /** Pauses the upstream until as many {@link release} calls have been made. */
  hold(): void {
    if (this.holds++ === 0) this.upstream.pause();
  }

  /** Undoes one {@link hold}. */
  readonly release = (): void => {
    if (--this.holds === 0) this.upstream.resume();
  };

  private stopOpening(): void {
    if (this.opening === undefined) return;
    clearImmediate(this.opening);
    this.opening = undefined;
  }

  private stopTimer(): void {
    if (this.timer === undefined) return;
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}

function joined(parts: (string | Buffer)[]): string | Buffer {
  if (parts.length === 1) return parts[0] as string | Buffer;
  if (parts.every((p) => typeof p === 'string')) return parts.join('');
  return Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : p)));
}

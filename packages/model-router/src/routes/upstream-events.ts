import type { Readable } from 'node:stream';
import { createParser } from 'eventsource-parser';
import type { StreamWriter } from './stream-writer';
import { MAX_UPSTREAM_EVENT_BYTES, isBodyTimeout } from './upstream-call';

/** What a route does with the provider's event stream, one event at a time. */
export interface UpstreamEventSink {
  /** Called with each complete upstream event (its name, `message` when unnamed, and raw data). */
  onEvent(event: string, data: string): void;
  /** True once the route's translation has ended (message_stop or an error): no more events are read. */
  done(): boolean;
}

/** How an upstream event stream ended, when the sink did not end it. */
export interface UpstreamEventsEnd {
  /** An event grew past {@link MAX_UPSTREAM_EVENT_BYTES}: the upstream was destroyed. */
  oversized: boolean;
  /** The provider sent nothing for the stream idle timeout. */
  idle: boolean;
}

/**
 * Upstream text converted in one turn of the event loop at most (16 Ki characters, about 130
 * small events, well under a millisecond): a provider's larger chunk is converted over several
 * turns, the provider held back meanwhile.
 */
const STREAM_SLICE_CHARS = 16 * 1024;

/**
 * Reads a provider's event stream and hands each event to `sink` as it arrives, until the sink is
 * done or the upstream ends, breaks, goes idle or sends an event too large. Shared by the routes
 * that translate Anthropic events (chat completions, responses). `onEventSeen` is called before
 * each event (the stream span's event counter).
 */
export async function pumpUpstreamEvents(
  upstream: Readable,
  writer: StreamWriter,
  onEventSeen: () => void,
  sink: UpstreamEventSink,
): Promise<UpstreamEventsEnd> {
  // Bytes received since the last complete event: a provider that never ends an event (or a line)
  // cannot make the gateway buffer without bound.
  let pending = 0;
  const parser = createParser({
    onEvent(event) {
      pending = 0;
      onEventSeen();
      sink.onEvent(event.event ?? 'message', event.data);
    },
  });
  const decoder = new TextDecoder();
  let oversized = false;
  let idle = false;
  // Each upstream chunk is converted as undici delivers it ('data' events, not an async iterator,
  // which would join chunks that arrived while one was being converted); a large chunk (many
  // events at once) in slices, one per turn of the event loop, so that other streams and new
  // requests do not wait behind it.
  await new Promise<void>((resolve) => {
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      upstream.off('data', onData);
      resolve();
    };
    /** Feeds converted text; false when the stream is over (ended, or an event too large). */
    const feed = (text: string): boolean => {
      parser.feed(text);
      if (sink.done()) {
        finish();
        return false;
      }
      if (pending > MAX_UPSTREAM_EVENT_BYTES) {
        oversized = true;
        upstream.destroy();
        finish();
        return false;
      }
      return true;
    };
    // While a chunk is converted in slices, the upstream's end (or break) waits for its last slice.
    let slicing = false;
    let endAfterSlices = false;
    const onEnd = () => (slicing ? (endAfterSlices = true) : finish());
    const feedSlices = (text: string, at: number) => {
      if (finished) return;
      const next = at + STREAM_SLICE_CHARS;
      if (!feed(text.slice(at, next))) return;
      if (next < text.length) {
        setImmediate(feedSlices, text, next);
        return;
      }
      slicing = false;
      writer.release();
      if (endAfterSlices) finish();
    };
    const onData = (chunk: Buffer) => {
      pending += chunk.length;
      const text = decoder.decode(chunk, { stream: true });
      if (text.length <= STREAM_SLICE_CHARS) {
        feed(text);
        return;
      }
      slicing = true;
      writer.hold();
      feedSlices(text, 0);
    };
    upstream.on('data', onData);
    // An upstream stream that breaks ends here too; the client gets an error frame.
    upstream.once('end', onEnd);
    upstream.once('error', (error) => {
      // undici's body timeout: the provider sent nothing for streamIdleTimeoutMs.
      idle = isBodyTimeout(error);
      onEnd();
    });
    upstream.once('close', onEnd);
  });
  return { oversized, idle };
}

/** Most bytes, and longest time, an upstream stream may take to close after its last event. */
const DRAIN_LIMIT_BYTES = 64 * 1024;
const DRAIN_LIMIT_MS = 5_000;

/**
 * After `message_stop` the provider only closes its stream. Reading that close (rather than
 * destroying the body) keeps the keep-alive connection for the next request; a provider that
 * sends more than a little, or takes long, has its connection closed instead.
 */
export function drainUpstream(upstream: Readable): void {
  if (upstream.destroyed || upstream.readableEnded) return;
  let drained = 0;
  const timer = setTimeout(() => upstream.destroy(), DRAIN_LIMIT_MS);
  timer.unref();
  upstream.once('close', () => clearTimeout(timer));
  upstream.on('error', () => undefined);
  upstream.on('data', (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > DRAIN_LIMIT_BYTES) upstream.destroy();
  });
  upstream.resume();
}

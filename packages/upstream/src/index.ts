/**
 * @gw/upstream: what the gateway's proxies do alike with an upstream call, framework-free and
 * without dependencies: the abort signal they hand undici, and an answer sent whole up to a bound.
 */
import { EventEmitter } from 'node:events';
import type { Readable } from 'node:stream';

/**
 * Cancels one upstream call when its client leaves. undici takes an `EventEmitter` that emits
 * `abort` as its `signal`; it costs a small fraction of an `AbortController` and its listener.
 */
export class UpstreamAbort extends EventEmitter {
  /** Whether {@link UpstreamAbort.abort} was called. Default false. */
  aborted = false;

  /** Emits `abort` once; later calls do nothing. */
  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.emit('abort');
  }
}

/**
 * Most bytes of an answer that is not a stream held to be sent whole, by the proxies that use
 * {@link holdWhole}: 1 MiB (a JSON answer is of no use to a client before its last byte).
 */
export const MAX_WHOLE_ANSWER_BYTES = 1024 * 1024;

/**
 * Reads `body` to its end, holding its chunks, then calls `whole` with them as one buffer (the
 * chunk itself when there was one), so that the answer can leave in one write with its headers.
 * When the chunks held pass `maxBytes`, it stops holding: `overflow` gets the chunks held so far,
 * once, and the rest of `body` is left to the caller (to pipe). Neither is called when `body`
 * fails or is destroyed first; the caller's own `error` listener handles that.
 */
export function holdWhole(
  body: Readable,
  maxBytes: number,
  whole: (bytes: Buffer) => void,
  overflow: (held: Buffer[]) => void,
): void {
  const chunks: Buffer[] = [];
  let size = 0;
  const hold = (chunk: Buffer) => {
    size += chunk.length;
    chunks.push(chunk);
    if (size <= maxBytes) return;
    body.off('data', hold);
    body.off('end', end);
    overflow(chunks);
  };
  const end = () => whole(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks));
  body.on('data', hold);
  body.once('end', end);
}

export * from './addresses';

/**
 * Header names a `static` upstream credential may not set, lower-case: hop-by-hop headers,
 * framing, and the gateway's own routing (`host`). The config file's validation
 * (`@gw/upstream-auth`, which re-exports it) and the catalog's admin API refuse the same names.
 */
export const REFUSED_STATIC_HEADER_NAMES: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'content-length',
]);

export * from './json-answer';

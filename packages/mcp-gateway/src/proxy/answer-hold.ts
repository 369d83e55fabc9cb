import type { Readable } from 'node:stream';

/**
 * How long an answer without a length (not an event stream) is held to be sent whole, from its
 * headers: 250 ms. One that has not ended by then (newline-delimited JSON that lasts) is passed
 * on as it arrives, or, under a tool gate, read and written message by message.
 */
export const MAX_WHOLE_HOLD_MS = 250;

/**
 * {@link holdWhole} for an answer without a length, which may never end (JSON-RPC messages as
 * newline-delimited JSON that the server keeps sending): held at most
 * {@link MAX_WHOLE_HOLD_MS}. When it has not ended by then, `stream` gets what was held (possibly
 * nothing) and the rest is the caller's to pass on as it arrives; a JSON-RPC response, which ends
 * within a few reads, is still sent whole.
 */
export function holdBriefly(
  body: Readable,
  maxBytes: number,
  whole: (bytes: Buffer) => void,
  stream: (held: Buffer[]) => void,
): void {
  const chunks: Buffer[] = [];
  let size = 0;
  const stop = () => {
    body.off('data', hold);
    body.off('end', end);
    clearTimeout(unended);
  };
  const release = () => {
    stop();
    if (!body.destroyed) stream(chunks);
  };
  const hold = (chunk: Buffer) => {
    size += chunk.length;
    chunks.push(chunk);
    if (size > maxBytes) release();
  };
  const end = () => {
    stop();
    whole(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks));
  };
  const unended = setTimeout(release, MAX_WHOLE_HOLD_MS);
  body.on('data', hold);
  body.once('end', end);
  body.once('close', () => clearTimeout(unended));
}

import { Transform, type TransformCallback } from 'node:stream';
import type * as SmithyEventStream from '@smithy/eventstream-codec';
import type { EventStreamCodec, Message } from '@smithy/eventstream-codec';
import { anthropicErrorBodyOf, exceptionName, mapBedrockException } from './errors';

/**
 * Largest AWS event-stream frame read: 2 MiB (a 1 MiB Anthropic event, base64 in a JSON body,
 * with room to spare). A longer frame ends the stream with an error before it is buffered.
 */
export const MAX_BEDROCK_FRAME_BYTES = 2 * 1024 * 1024;

/** Prelude (total and header lengths, prelude CRC) plus message CRC: the smallest frame. */
const MIN_FRAME_BYTES = 16;

let codec: EventStreamCodec | undefined;

/**
 * The AWS event-stream codec, made with the first Bedrock stream: a gateway that never streams
 * from Bedrock never loads `@smithy/eventstream-codec` and its dependencies (about 40 ms at start-up).
 */
function eventStreamCodec(): EventStreamCodec {
  if (codec === undefined) {
    const { EventStreamCodec: Codec } =
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded with the first Bedrock stream
      require('@smithy/eventstream-codec') as typeof SmithyEventStream;
    codec = new Codec(
      (bytes) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'),
      (text) => Buffer.from(text, 'utf8'),
    );
  }
  return codec;
}

/** An SSE frame as Anthropic writes it. */
function sseFrame(event: string, data: string): string {
  return `event: ${event}\ndata: ${data}\n\n`;
}

/** The stream's `error` event, in Anthropic's shape. */
export function sseErrorFrame(type: string, message: string): string {
  return sseFrame('error', JSON.stringify({ type: 'error', error: { type, message } }));
}

/** A string header of a frame. */
function header(message: Message, name: string): string | undefined {
  const value = message.headers[name];
  return value?.type === 'string' ? value.value : undefined;
}

/** Bedrock's own field of the last event, not part of Anthropic's stream. */
const BEDROCK_METRICS_KEY = 'amazon-bedrock-invocationMetrics';
/** The `bytes` field of a chunk payload, when it comes first (as Bedrock sends it). */
const LEADING_BYTES = /^\{"bytes":"([A-Za-z0-9+/=]*)"[,}]/;
/** The `type` of an Anthropic event, read without parsing the event when it comes first (as Bedrock sends it). */
const LEADING_TYPE = /^\{\s*"type"\s*:\s*"([a-z_]{1,64})"/;

/**
 * Converts one `chunk` frame's payload (`{"bytes":"<base64 of an Anthropic event>"}`) to the SSE
 * frame Anthropic would have sent; undefined when it is not such a payload.
 */
function chunkToSse(body: Uint8Array): string | undefined {
  const text = Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('latin1');
  // Base64 needs no JSON unescaping: the field is read without parsing the payload when it comes first.
  let bytes: unknown = LEADING_BYTES.exec(text)?.[1];
  if (bytes === undefined) {
    try {
      bytes = (JSON.parse(text) as { bytes?: unknown }).bytes;
    } catch {
      return undefined;
    }
  }
  if (typeof bytes !== 'string') return undefined;
  let data = Buffer.from(bytes, 'base64').toString('utf8');
  let type = LEADING_TYPE.exec(data)?.[1];
  if (type === undefined || type === 'message_stop' || data.includes(BEDROCK_METRICS_KEY)) {
    let event: Record<string, unknown>;
    try {
      event = JSON.parse(data) as Record<string, unknown>;
    } catch {
      return undefined;
    }
    if (typeof event !== 'object' || event === null || typeof event.type !== 'string') return undefined;
    type = event.type;
    if (Object.hasOwn(event, BEDROCK_METRICS_KEY)) {
      delete event[BEDROCK_METRICS_KEY];
      data = JSON.stringify(event);
    }
  }
  return sseFrame(type, data);
}

/**
 * Decodes Bedrock Runtime's `InvokeModelWithResponseStream` answer (AWS event-stream frames,
 * `application/vnd.amazon.eventstream`) into the server-sent events Anthropic's API sends, frame
 * by frame as bytes arrive, whatever the chunking. Each frame's length is read from its prelude and
 * bounded by `maxFrameBytes` before any of it is kept; its CRCs are checked by the AWS codec
 * (`@smithy/eventstream-codec`). A `chunk` event becomes the Anthropic event it carries; an
 * exception frame (`modelStreamErrorException`, `throttlingException`…) becomes Anthropic's `error`
 * event; a frame that is too long, fails its CRC or does not decode becomes an `error` event too.
 * After an error event the stream ends and nothing more is read. Never throws.
 */
export class BedrockEventStreamDecoder extends Transform {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private ended = false;

  /** @param maxFrameBytes - the longest frame read. Default {@link MAX_BEDROCK_FRAME_BYTES}. */
  constructor(private readonly maxFrameBytes: number = MAX_BEDROCK_FRAME_BYTES) {
    super();
  }

  /** Whether the stream ended with an error event made here (a broken frame or an exception frame). */
  errorEvent: { type: string; message: string } | undefined;

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    if (this.ended) return callback();
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    let out = '';
    while (!this.ended && this.pendingBytes >= 4) {
      const first = this.pending[0] as Buffer;
      const head = first.length >= 4 ? first : this.join();
      const length = head.readUInt32BE(0);
      if (length < MIN_FRAME_BYTES || length > this.maxFrameBytes) {
        out += this.fail(
          length > this.maxFrameBytes
            ? 'The provider sent a stream event larger than the gateway reads.'
            : 'The provider sent a malformed event-stream frame.',
        );
        break;
      }
      if (this.pendingBytes < length) break;
      const whole = this.join();
      const frame = whole.subarray(0, length);
      const rest = whole.subarray(length);
      this.pending = rest.length > 0 ? [rest] : [];
      this.pendingBytes = rest.length;
      out += this.frame(frame);
    }
    if (out !== '') this.push(out);
    if (this.ended) this.push(null);
    callback();
  }

  override _flush(callback: TransformCallback): void {
    // A partial frame at the end is dropped: the consumer sees the stream end without message_stop.
    callback();
  }

  /** The pending bytes as one buffer (copied only when they came in several chunks). */
  private join(): Buffer {
    if (this.pending.length === 1) return this.pending[0] as Buffer;
    const whole = Buffer.concat(this.pending, this.pendingBytes);
    this.pending = [whole];
    return whole;
  }

  /** One whole frame as SSE text ('' for a frame that carries no event, such as an initial-response). */
  private frame(bytes: Buffer): string {
    let message: Message;
    try {
      message = eventStreamCodec().decode(bytes);
    } catch {
      return this.fail('The provider sent an event-stream frame whose checksum does not match.');
    }
    const kind = header(message, ':message-type');
    if (kind === 'event') {
      if (header(message, ':event-type') !== 'chunk') return '';
      const sse = chunkToSse(message.body);
      return sse ?? this.fail('The provider sent a stream event the gateway cannot read.');
    }
    let body: unknown;
    try {
      body = JSON.parse(Buffer.from(message.body).toString('utf8'));
    } catch {
      body = undefined;
    }
    const name =
      kind === 'exception'
        ? exceptionName(header(message, ':exception-type'), body)
        : exceptionName(header(message, ':error-code'));
    const mapped = mapBedrockException(name, 500);
    const text = JSON.parse(
      anthropicErrorBodyOf(mapped, name, body ?? { message: header(message, ':error-message') }),
    ) as { error: { type: string; message: string } };
    return this.fail(text.error.message, text.error.type);
  }

  /** Ends the stream with an Anthropic `error` event. */
  private fail(message: string, type = 'api_error'): string {
    this.ended = true;
    this.pending = [];
    this.pendingBytes = 0;
    this.errorEvent = { type, message };
    return sseErrorFrame(type, message);
  }
}

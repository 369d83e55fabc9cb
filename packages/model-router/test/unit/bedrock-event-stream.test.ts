/**
 * The Bedrock event-stream decoder on frames built by the AWS codec: split at every byte boundary,
 * a corrupt CRC, an oversized or malformed prelude, exception frames. It must give exactly the
 * SSE Anthropic sends, and end with an `error` event (never throw) on anything broken.
 */
import { Readable } from 'node:stream';
import { BedrockEventStreamDecoder, MAX_BEDROCK_FRAME_BYTES } from '../../src';
import { chunkFrame, exceptionFrame, framesOf } from '../bedrock-support';
import { sse, thinkingEvents, toolEvents } from '../support';

/** Feeds `chunks` to a decoder and returns all it produced (the decoder never errors). */
async function decode(chunks: Buffer[], max?: number): Promise<{ text: string; decoder: BedrockEventStreamDecoder }> {
  const decoder = new BedrockEventStreamDecoder(max);
  const out: Buffer[] = [];
  decoder.on('data', (chunk: Buffer) => out.push(Buffer.from(chunk)));
  const ended = new Promise<void>((resolve, reject) => {
    decoder.once('end', resolve);
    decoder.once('error', reject);
  });
  Readable.from(chunks, { objectMode: false }).pipe(decoder);
  await ended;
  return { text: Buffer.concat(out).toString('utf8'), decoder };
}

const events = thinkingEvents();
const frames = framesOf(events);
const whole = Buffer.concat(frames);

describe('BedrockEventStreamDecoder', () => {
  it('turns chunk frames into the SSE Anthropic sends', async () => {
    expect((await decode([whole])).text).toBe(sse(events));
    expect((await decode(framesOf(toolEvents()))).text).toBe(sse(toolEvents()));
  });

  it('gives the same events whatever byte boundary the stream is split at', async () => {
    const expected = sse(events);
    for (let at = 0; at <= whole.length; at++) {
      const { text } = await decode([whole.subarray(0, at), whole.subarray(at)]);
      if (text !== expected)
        throw new Error(`split at byte ${at} of ${whole.length} gave ${JSON.stringify(text.slice(0, 200))}`);
    }
  });

  it('gives the same events a byte at a time', async () => {
    const bytes = Array.from({ length: whole.length }, (_, i) => whole.subarray(i, i + 1));
    expect((await decode(bytes)).text).toBe(sse(events));
  });

  it('drops the invocation metrics Bedrock adds to message_stop', async () => {
    const stop = {
      type: 'message_stop',
      'amazon-bedrock-invocationMetrics': { inputTokenCount: 3, outputTokenCount: 5 },
    };
    expect((await decode([chunkFrame(stop)])).text).toBe('event: message_stop\ndata: {"type":"message_stop"}\n\n');
  });

  it.each([
    ['the message CRC', (frame: Buffer) => frame.length - 10],
    ['the prelude CRC', () => 9],
    ['a header byte', () => 14],
  ])('ends with an error event, and reads no further, when %s is corrupt', async (_what, offset) => {
    const second = Buffer.from(frames[1] as Buffer);
    const at = offset(second);
    second[at] = (second[at] as number) ^ 0xff;
    const { text, decoder } = await decode([frames[0] as Buffer, second, ...frames.slice(2)]);
    const [first, error, ...rest] = text.split('\n\n').filter(Boolean);
    expect(first).toBe(sse([events[0] as [string, unknown]]).trimEnd());
    expect(error).toMatch(/^event: error\ndata: \{"type":"error","error":\{"type":"api_error","message":".*checksum/);
    expect(rest).toEqual([]);
    expect(decoder.errorEvent?.type).toBe('api_error');
  });

  it('ends with an error event, before buffering it, when a frame declares more than the bound', async () => {
    const prelude = Buffer.alloc(12);
    prelude.writeUInt32BE(MAX_BEDROCK_FRAME_BYTES + 1, 0);
    const { text } = await decode([frames[0] as Buffer, prelude]);
    expect(text).toBe(
      `${sse([events[0] as [string, unknown]])}event: error\ndata: {"type":"error","error":{"type":"api_error","message":"The provider sent a stream event larger than the gateway reads."}}\n\n`,
    );
    // A smaller bound applies to a frame that is otherwise fine.
    expect((await decode([whole], 64)).text).toMatch(/^event: error\n.*larger than the gateway reads/);
  });

  it('ends with an error event on a frame shorter than its own prelude', async () => {
    const bad = Buffer.alloc(16);
    bad.writeUInt32BE(8, 0);
    expect((await decode([bad])).text).toMatch(/^event: error\n.*malformed event-stream frame/);
  });

  it.each([
    ['modelStreamErrorException', 'api_error'],
    ['throttlingException', 'rate_limit_error'],
    ['serviceUnavailableException', 'overloaded_error'],
    ['validationException', 'invalid_request_error'],
    ['modelTimeoutException', 'timeout_error'],
    ['internalServerException', 'api_error'],
  ])('turns a %s frame into an Anthropic error event of type %s', async (exception, type) => {
    const { text } = await decode([
      frames[0] as Buffer,
      exceptionFrame(exception, 'the model broke'),
      frames[1] as Buffer,
    ]);
    expect(text).toBe(
      `${sse([events[0] as [string, unknown]])}event: error\ndata: ${JSON.stringify({ type: 'error', error: { type, message: 'the model broke' } })}\n\n`,
    );
  });
});

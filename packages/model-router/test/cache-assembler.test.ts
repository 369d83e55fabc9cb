import { MessageAssembler } from '../src/core/cache/answer';

// The events of a short answer, as Anthropic streams them.
const events = [
  {
    type: 'message_start',
    message: {
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5',
      content: [],
      usage: { input_tokens: 3, output_tokens: 0 },
    },
  },
  { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
  { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hello there' } },
  { type: 'content_block_stop', index: 0 },
  { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 2 } },
  { type: 'message_stop' },
].map((event) => JSON.stringify(event));
const total = events.reduce((sum, data) => sum + data.length, 0);

function assemble(maxBytes: number) {
  const assembler = new MessageAssembler(maxBytes);
  for (const data of events) assembler.push(data);
  return assembler.result();
}

describe('MessageAssembler', () => {
  it('assembles an answer of exactly its limit, and refuses one of a byte more', () => {
    expect(assemble(total)).toMatchObject({
      content: [{ type: 'text', text: 'Hello there' }],
      stop_reason: 'end_turn',
      usage: { input_tokens: 3, output_tokens: 2 },
    });
    expect(assemble(total - 1)).toBeUndefined();
  });

  it('copies a message_delta key named __proto__ as data, never as the message prototype', () => {
    const assembler = new MessageAssembler(1 << 20);
    for (const data of events.slice(0, 4)) assembler.push(data);
    assembler.push('{"type":"message_delta","delta":{"stop_reason":"end_turn","__proto__":{"polluted":true}}}');
    assembler.push('{"type":"message_stop"}');
    const message = assembler.result() as Record<string, unknown>;
    expect(Object.getPrototypeOf(message)).toBe(Object.prototype);
    expect(message.polluted).toBeUndefined();
    expect(JSON.parse(JSON.stringify(message))).toMatchObject({ stop_reason: 'end_turn' });
  });

  it('keeps nothing of a stream without message_stop', () => {
    const assembler = new MessageAssembler(total);
    for (const data of events.slice(0, -1)) assembler.push(data);
    expect(assembler.result()).toBeUndefined();
  });
});

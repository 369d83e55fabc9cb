/**
 * The one form a cached answer is kept in: the provider's complete Anthropic message, as a
 * non-streamed `/v1/messages` call returns it. A streamed answer is assembled into it event by
 * event ({@link MessageAssembler}); a cached answer is rendered back as JSON or as the events of a
 * stream ({@link messageEvents}). No web framework, no I/O.
 */

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A cached answer: the Anthropic message and when it was stored (ms since the epoch). */
export interface CachedAnswer {
  message: Json;
  storedAt: number;
}

/**
 * Whether a provider's message may be cached: a complete `message` with content, a stop reason
 * that is not `refusal` (a refusal may depend on more than the request), and no `pause_turn`
 * (an unfinished turn the client is meant to continue).
 */
export function isCacheableMessage(message: unknown): message is Json {
  if (!isObject(message) || message.type !== 'message' || !Array.isArray(message.content)) return false;
  const stop = message.stop_reason;
  return typeof stop === 'string' && stop !== 'refusal' && stop !== 'pause_turn';
}

/** Input tokens and output tokens of a cached answer, for the tokens-saved count. */
export function answerTokens(message: Json): { input: number; output: number } {
  const usage = isObject(message.usage) ? message.usage : {};
  const n = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : 0);
  return {
    input: n(usage.input_tokens) + n(usage.cache_creation_input_tokens) + n(usage.cache_read_input_tokens),
    output: n(usage.output_tokens),
  };
}

interface OpenBlock {
  block: Json;
  /** The JSON text of a tool's input, in pieces as it arrives. */
  json?: string;
}

/**
 * Builds the complete message from an Anthropic event stream, one event at a time, the way the
 * Anthropic SDK's `finalMessage()` does. {@link MessageAssembler.result} is the message only when
 * the stream ended with `message_stop`, without an error and with every event understood; an
 * event the assembler cannot reproduce (an unknown delta type) makes the answer uncacheable.
 */
export class MessageAssembler {
  private message: Json | undefined;
  private readonly blocks: OpenBlock[] = [];
  private failed = false;
  private stopped = false;
  private size = 0;

  /** @param maxBytes Most bytes of event data assembled; a longer answer is not cached. */
  constructor(private readonly maxBytes: number) {}

  /** Feeds one event's raw data (the event name is not needed: Anthropic repeats it as `type`). */
  push(data: string): void {
    if (this.failed || this.stopped) return;
    this.size += Buffer.byteLength(data);
    if (this.size > this.maxBytes) return this.fail();
    let event: unknown;
    try {
      event = JSON.parse(data);
    } catch {
      return this.fail();
    }
    if (!isObject(event)) return this.fail();
    this.apply(event);
  }

  private fail(): void {
    this.failed = true;
    this.message = undefined;
    this.blocks.length = 0;
  }

  private apply(event: Json): void {
    switch (event.type) {
      case 'ping':
        return;
      case 'message_start':
        if (this.message !== undefined || !isObject(event.message)) return this.fail();
        this.message = { ...event.message, content: [] };
        return;
      case 'content_block_start': {
        const index = event.index;
        if (this.message === undefined || index !== this.blocks.length || !isObject(event.content_block)) {
          return this.fail();
        }
        const block = { ...event.content_block };
        this.blocks.push(
          block.type === 'tool_use' || block.type === 'server_tool_use' ? { block, json: '' } : { block },
        );
        return;
      }
      case 'content_block_delta':
        return this.delta(event.index, event.delta);
      case 'content_block_stop': {
        const open = typeof event.index === 'number' ? this.blocks[event.index] : undefined;
        if (!open) return this.fail();
        if (open.json !== undefined && open.json !== '') {
          try {
            open.block.input = JSON.parse(open.json);
          } catch {
            return this.fail();
          }
          open.json = '';
        }
        return;
      }
      case 'message_delta': {
        if (this.message === undefined) return this.fail();
        const delta = isObject(event.delta) ? event.delta : {};
        for (const key of Object.keys(delta)) this.message[key] = delta[key];
        if (isObject(event.usage)) {
          this.message.usage = { ...(isObject(this.message.usage) ? this.message.usage : {}), ...event.usage };
        }
        return;
      }
      case 'message_stop':
        if (this.message === undefined) return this.fail();
        this.stopped = true;
        return;
      default:
        // `error`, or an event this gateway does not know: nothing to store.
        return this.fail();
    }
  }

  private delta(index: unknown, delta: unknown): void {
    const open = typeof index === 'number' ? this.blocks[index] : undefined;
    if (!open || !isObject(delta)) return this.fail();
    const block = open.block;
    const append = (field: string, piece: unknown) => {
      if (typeof piece !== 'string') return this.fail();
      block[field] = `${typeof block[field] === 'string' ? (block[field] as string) : ''}${piece}`;
    };
    switch (delta.type) {
      case 'text_delta':
        return append('text', delta.text);
      case 'thinking_delta':
        return append('thinking', delta.thinking);
      case 'signature_delta':
        if (typeof delta.signature !== 'string') return this.fail();
        block.signature = delta.signature;
        return;
      case 'input_json_delta':
        if (open.json === undefined || typeof delta.partial_json !== 'string') return this.fail();
        open.json += delta.partial_json;
        return;
      case 'citations_delta':
        block.citations = [...(Array.isArray(block.citations) ? block.citations : []), delta.citation];
        return;
      default:
        return this.fail();
    }
  }

  /** The complete message, or undefined when the stream did not end normally or cannot be cached. */
  result(): Json | undefined {
    if (this.failed || !this.stopped || this.message === undefined) return undefined;
    const message = { ...this.message, content: this.blocks.map((b) => b.block) };
    return isCacheableMessage(message) ? message : undefined;
  }
}

/**
 * The events of an Anthropic stream that carries `message`, as `[event name, data]`: what the
 * provider would have sent, so SDKs assemble the same message (content, stop reason, usage,
 * thinking and its signature, tool inputs).
 */
export function messageEvents(message: Json): [string, Json][] {
  const content = Array.isArray(message.content) ? (message.content as unknown[]) : [];
  const usage = isObject(message.usage) ? message.usage : {};
  const events: [string, Json][] = [
    [
      'message_start',
      {
        type: 'message_start',
        message: { ...message, content: [], stop_reason: null, stop_sequence: null, usage },
      },
    ],
  ];
  content.forEach((raw, index) => {
    const block = isObject(raw) ? raw : {};
    const deltas: Json[] = [];
    let start: Json;
    switch (block.type) {
      case 'text': {
        const { citations, text, ...rest } = block;
        start = Array.isArray(citations) ? { ...rest, text: '', citations: [] } : { ...rest, text: '' };
        if (Array.isArray(citations))
          for (const citation of citations) deltas.push({ type: 'citations_delta', citation });
        if (typeof text === 'string' && text !== '') deltas.push({ type: 'text_delta', text });
        break;
      }
      case 'thinking': {
        const { thinking, signature, ...rest } = block;
        start = { ...rest, thinking: '', signature: '' };
        if (typeof thinking === 'string' && thinking !== '') deltas.push({ type: 'thinking_delta', thinking });
        if (typeof signature === 'string') deltas.push({ type: 'signature_delta', signature });
        break;
      }
      case 'tool_use':
      case 'server_tool_use': {
        const { input, ...rest } = block;
        start = { ...rest, input: {} };
        const json = JSON.stringify(input ?? {});
        if (json !== '{}') deltas.push({ type: 'input_json_delta', partial_json: json });
        break;
      }
      default:
        // redacted_thinking and server tool results arrive whole in their start event.
        start = block;
    }
    events.push(['content_block_start', { type: 'content_block_start', index, content_block: start }]);
    for (const delta of deltas) events.push(['content_block_delta', { type: 'content_block_delta', index, delta }]);
    events.push(['content_block_stop', { type: 'content_block_stop', index }]);
  });
  events.push(
    [
      'message_delta',
      {
        type: 'message_delta',
        delta: { stop_reason: message.stop_reason ?? null, stop_sequence: message.stop_sequence ?? null },
        usage,
      },
    ],
    ['message_stop', { type: 'message_stop' }],
  );
  return events;
}

/** {@link messageEvents} as Anthropic's SSE text. */
export function messageEventStream(message: Json): string {
  let out = '';
  for (const [event, data] of messageEvents(message)) out += `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
  return out;
}

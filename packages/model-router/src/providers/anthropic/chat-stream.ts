import { completionId, jsonFinishReason, reportedModel, toOpenAiError, toOpenAiUsage } from './chat-response';

type Json = Record<string, unknown>;

/** How the stream is shaped. */
export interface ChatStreamContext {
  strict: boolean;
  includeUsage: boolean;
  /** The model id sent upstream, until `message_start` names the model the provider reports. */
  model: string;
  /** The forced tool that carries `response_format`'s JSON: its input deltas become `delta.content`. */
  jsonTool?: string;
  created?: number;
}

/**
 * A text delta exactly as Anthropic writes it, its text free of escapes and control characters:
 * such a text's JSON is the quoted text itself, so the event is converted without parsing it and
 * its text without serialising it again (the chunk is the same as through `JSON.parse`).
 */
const PLAIN_TEXT_DELTA =
  // eslint-disable-next-line no-control-regex -- control characters are what the text must not hold
  /^\{"type":"content_block_delta","index":(0|[1-9]\d{0,8}),"delta":\{"type":"text_delta","text":("[^"\\\u0000-\u001f]*")\}\}$/;

interface BlockState {
  kind: 'text' | 'thinking' | 'redacted_thinking' | 'tool_use' | 'json' | 'other';
  toolIndex?: number;
}

/**
 * Converts Anthropic stream events to `chat.completion.chunk` SSE frames, one event at a time,
 * so each chunk is written as soon as its event arrives. Never throws on bad input.
 */
export class ChatStreamTranslator {
  private readonly context: ChatStreamContext;
  private prefix: string;
  private model: string;
  private readonly blocks = new Map<number, BlockState>();
  private toolCalls = 0;
  private usage: Json = {};
  private stopReason: unknown;
  private ended = false;

  constructor(context: ChatStreamContext) {
    this.context = context;
    this.model = context.model;
    this.prefix = this.chunkPrefix(completionId(undefined), context.created ?? Math.floor(Date.now() / 1000));
  }

  /** The fixed part of every chunk, serialised once. */
  private chunkPrefix(id: string, created: number): string {
    return `{"id":${JSON.stringify(id)},"object":"chat.completion.chunk","created":${created},"model":${JSON.stringify(this.model)},"choices":`;
  }

  /** True once the stream has ended (message_stop or an error). */
  get done(): boolean {
    return this.ended;
  }

  private frame(delta: Json, finish: string | null = null): string {
    return `data: ${this.prefix}${JSON.stringify([{ index: 0, delta, logprobs: null, finish_reason: finish }])}}\n\n`;
  }

  /** The provider's usage so far (Anthropic field names), from `message_start` and `message_delta`. */
  get reportedUsage(): Readonly<Record<string, unknown>> {
    return this.usage;
  }

  /** The model the provider reported in `message_start` (the model sent until then). */
  get reportedModel(): string {
    return this.model;
  }

  /** Feeds one upstream event (its name and raw data); returns the SSE text to write now. */
  push(event: string, data: string): string {
    if (this.ended || event === 'ping') return '';
    if (event === 'content_block_delta') {
      const plain = PLAIN_TEXT_DELTA.exec(data);
      if (plain !== null) return this.quotedText(Number(plain[1]), plain[2] as string);
    }
    let payload: unknown;
    try {
      payload = JSON.parse(data);
    } catch {
      // not JSON: payload stays undefined and is refused below
    }
    if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
      return this.errorFrame({
        error: { type: 'api_error', message: 'The provider sent an unreadable stream event.' },
      });
    }
    return this.dispatch(event, payload as Json);
  }

  private dispatch(event: string, payload: Json): string {
    switch (payload.type ?? event) {
      case 'message_start': {
        const message = (payload.message ?? {}) as Json;
        this.usage = { ...((message.usage as Json) ?? {}) };
        this.model = reportedModel(message.model, this.context.model);
        this.prefix = this.chunkPrefix(completionId(message.id), this.context.created ?? Math.floor(Date.now() / 1000));
        return this.frame({ role: 'assistant', content: '' });
      }
      case 'content_block_start':
        return this.blockStart(Number(payload.index), (payload.content_block ?? {}) as Json);
      case 'content_block_delta':
        return this.blockDelta(Number(payload.index), (payload.delta ?? {}) as Json);
      case 'message_delta': {
        const delta = (payload.delta ?? {}) as Json;
        if (delta.stop_reason !== undefined) this.stopReason = delta.stop_reason;
        if (payload.usage) this.usage = { ...this.usage, ...(payload.usage as Json) };
        return '';
      }
      case 'message_stop':
        return this.finish();
      case 'error':
        return this.errorFrame(payload);
      default:
        return '';
    }
  }

  private blockStart(index: number, block: Json): string {
    switch (block.type) {
      case 'text':
        // Stryker disable next-line ObjectLiteral,StringLiteral: only the json and tool_use kinds are ever read
        this.blocks.set(index, { kind: 'text' });
        return typeof block.text === 'string' && block.text !== '' ? this.text(index, block.text) : '';
      // Stryker disable next-line StringLiteral: a thinking block starts like an unknown one (nothing written, its kind never read)
      case 'thinking':
        // Stryker disable next-line ObjectLiteral,StringLiteral: only the json and tool_use kinds are ever read
        this.blocks.set(index, { kind: 'thinking' });
        return '';
      case 'redacted_thinking':
        // Stryker disable next-line ObjectLiteral,StringLiteral: only the json and tool_use kinds are ever read
        this.blocks.set(index, { kind: 'redacted_thinking' });
        return this.context.strict
          ? ''
          : this.frame({ content_blocks: [{ index, delta: { type: 'redacted_thinking', data: block.data } }] });
      case 'tool_use': {
        if (this.context.jsonTool !== undefined && block.name === this.context.jsonTool) {
          this.blocks.set(index, { kind: 'json' });
          return '';
        }
        const toolIndex = this.toolCalls++;
        this.blocks.set(index, { kind: 'tool_use', toolIndex });
        return this.frame({
          tool_calls: [
            { index: toolIndex, id: block.id, type: 'function', function: { name: block.name, arguments: '' } },
          ],
        });
      }
      default:
        // Stryker disable next-line ObjectLiteral,StringLiteral: only the json and tool_use kinds are ever read
        this.blocks.set(index, { kind: 'other' });
        return '';
    }
  }

  private text(index: number, text: string): string {
    if (!Number.isFinite(index)) {
      const delta: Json = { content: text };
      if (!this.context.strict) delta.content_blocks = [{ index, delta: { type: 'text', text } }];
      return this.frame(delta);
    }
    return this.quotedText(index, JSON.stringify(text));
  }

  /** The chunk of a text delta, from its text as JSON (what `frame` writes for it, without the objects). */
  private quotedText(index: number, quoted: string): string {
    const blocks = this.context.strict
      ? ''
      : `,"content_blocks":[{"index":${index},"delta":{"type":"text","text":${quoted}}}]`;
    return `data: ${this.prefix}[{"index":0,"delta":{"content":${quoted}${blocks}},"logprobs":null,"finish_reason":null}]}\n\n`;
  }

  private blockDelta(index: number, delta: Json): string {
    const block = this.blocks.get(index);
    switch (delta.type) {
      case 'text_delta':
        return this.text(index, String(delta.text ?? ''));
      case 'input_json_delta':
        if (block?.kind === 'json') {
          const json = String(delta.partial_json ?? '');
          return json === '' ? '' : this.text(index, json);
        }
        if (block?.kind !== 'tool_use') return '';
        return this.frame({
          tool_calls: [{ index: block.toolIndex, function: { arguments: String(delta.partial_json ?? '') } }],
        });
      case 'thinking_delta':
        return this.context.strict
          ? ''
          : this.frame({ content_blocks: [{ index, delta: { type: 'thinking', thinking: delta.thinking } }] });
      case 'signature_delta':
        return this.context.strict
          ? ''
          : this.frame({ content_blocks: [{ index, delta: { type: 'signature', signature: delta.signature } }] });
      default:
        return '';
    }
  }

  private finish(): string {
    this.ended = true;
    let out = this.frame({}, jsonFinishReason(this.stopReason, this.context.jsonTool));
    if (this.context.includeUsage)
      out += `data: ${this.prefix}[],"usage":${JSON.stringify(toOpenAiUsage(this.usage))}}\n\n`;
    return `${out}data: [DONE]\n\n`;
  }

  private errorFrame(payload: Json): string {
    this.ended = true;
    const error = toOpenAiError(500, payload).error;
    return `data: ${JSON.stringify({ error })}\n\n`;
  }

  /** The frame to write when the upstream ends without `message_stop`. */
  abortFrame(message: string): string {
    if (this.ended) return '';
    return this.errorFrame({ error: { type: 'api_error', message } });
  }
}

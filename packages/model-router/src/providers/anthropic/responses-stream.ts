/**
 * Anthropic Messages events → the OpenAI Responses event stream and response object. One
 * translator serves both: a streamed answer feeds the provider's events as they arrive, a JSON
 * answer feeds the events of the provider's message (`messageEvents`), so both give the same
 * output items. See MAPPING.md.
 */
import type { ThinkingBlock } from '../../core/reasoning-seal';
import { reportedModel, toOpenAiError } from './chat-response';

type Json = Record<string, unknown>;

/** How the response is shaped. */
export interface ResponsesStreamContext {
  /** The response's id (`resp_…`): item ids are derived from it. */
  id: string;
  /** Seconds since the epoch. */
  createdAt: number;
  /** The model id sent upstream, until `message_start` names the model the provider reports. */
  model: string;
  /** The forced tool that carries `text.format`'s JSON: its input becomes `output_text`. */
  jsonTool?: string;
  /** Whether reasoning items the client sees carry `encrypted_content`. */
  includeEncrypted: boolean;
  /**
   * Whether reasoning items carry the thinking text in `summary` (the request set
   * `reasoning.summary`), with the `response.reasoning_summary_*` events. Otherwise `summary` is `[]`.
   */
  summary: boolean;
  /** Seals a reasoning item's thinking blocks into its `encrypted_content`. */
  seal(blocks: ThinkingBlock[]): string;
  /** The request's fields the response object repeats (instructions, tools, metadata, …). */
  echo: Json;
  /** Whether event frames are written (false for a JSON answer: only the response is built). */
  frames: boolean;
}

interface OpenItem {
  outputIndex: number;
  item: Json;
  kind: 'reasoning' | 'message' | 'function_call' | 'redacted' | 'other';
  text: string;
  thinking?: ThinkingBlock;
}

/** Responses usage from Anthropic usage: input tokens include cache creation and cache reads. */
export function toResponsesUsage(usage: Json): Json {
  const n = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
  const cacheRead = n(usage.cache_read_input_tokens);
  const input = n(usage.input_tokens) + n(usage.cache_creation_input_tokens) + cacheRead;
  const output = n(usage.output_tokens);
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: cacheRead },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: input + output,
  };
}

/** The `resp_` id's random part, which the ids of its items share (`msg_<part>_<n>`). */
export function responseIdPart(id: string): string {
  return id.startsWith('resp_') ? id.slice(5) : id;
}

/** The response id an item id (`msg_…`, `fc_…`, `rs_…`) belongs to, or undefined. */
export function responseIdOfItem(itemId: unknown): string | undefined {
  if (typeof itemId !== 'string') return undefined;
  const match = /^(?:msg|fc|rs)_([0-9a-f]{32})_\d{1,6}$/.exec(itemId);
  return match ? `resp_${match[1]}` : undefined;
}

/**
 * Converts Anthropic stream events into Responses events (`response.created`, …,
 * `response.completed`), each with its `sequence_number`, and builds the response object. The
 * final event is not written by {@link push}: the route writes {@link finalFrame} once the
 * response is stored. Never throws on bad input.
 */
export class ResponsesStreamTranslator {
  private readonly context: ResponsesStreamContext;
  private sequence = 0;
  private model: string;
  private readonly output: Json[] = [];
  /** Output items with `encrypted_content` always set on reasoning items: what is stored. */
  private readonly stored: Json[] = [];
  private readonly open = new Map<number, OpenItem>();
  private usage: Json = {};
  private stopReason: unknown;
  private ended = false;
  private failed = false;
  private readonly idPart: string;
  private started = false;

  constructor(context: ResponsesStreamContext) {
    this.context = context;
    this.model = context.model;
    this.idPart = responseIdPart(context.id);
  }

  /** True once the provider's message ended (`message_stop`) or the stream failed. */
  get done(): boolean {
    return this.ended;
  }

  /** True once the provider's message ended normally. */
  get completed(): boolean {
    return this.ended && !this.failed;
  }

  /** The provider's usage so far (Anthropic field names). */
  get reportedUsage(): Readonly<Json> {
    return this.usage;
  }

  /** The model the provider reported (the model sent until then). */
  get reportedModel(): string {
    return this.model;
  }

  private frame(type: string, data: Json): string {
    if (!this.context.frames) return '';
    const payload = JSON.stringify({ type, sequence_number: this.sequence++, ...data });
    return `event: ${type}\ndata: ${payload}\n\n`;
  }

  /** The response object: `in_progress` while streaming, then `completed` or `incomplete`. */
  response(status?: 'completed' | 'incomplete' | 'in_progress'): Json {
    const final = status ?? (this.ended ? this.finalStatus() : 'in_progress');
    const text = this.output
      .filter((item) => item.type === 'message')
      .flatMap((item) => (item.content as Json[]).map((part) => String(part.text ?? '')))
      .join('');
    return {
      id: this.context.id,
      object: 'response',
      created_at: this.context.createdAt,
      status: final,
      background: false,
      error: null,
      incomplete_details:
        final === 'incomplete'
          ? { reason: this.stopReason === 'refusal' ? 'content_filter' : 'max_output_tokens' }
          : null,
      model: this.model,
      output: final === 'in_progress' ? [] : this.output,
      output_text: text,
      parallel_tool_calls: true,
      temperature: null,
      top_p: null,
      tool_choice: 'auto',
      tools: [],
      truncation: 'disabled',
      ...this.context.echo,
      usage: final === 'in_progress' ? null : toResponsesUsage(this.usage),
    };
  }

  /** The output items as stored: reasoning items always carry `encrypted_content`. */
  get storedOutput(): readonly Json[] {
    return this.stored;
  }

  private finalStatus(): 'completed' | 'incomplete' {
    return this.stopReason === 'max_tokens' ||
      this.stopReason === 'model_context_window_exceeded' ||
      this.stopReason === 'refusal'
      ? 'incomplete'
      : 'completed';
  }

  /** Feeds one upstream event (its name and raw data); returns the SSE text to write now. */
  push(event: string, data: string): string {
    if (this.ended || event === 'ping') return '';
    let payload: unknown;
    try {
      payload = JSON.parse(data);
    } catch {
      // refused below
    }
    if (typeof payload !== 'object' || payload === null || Array.isArray(payload))
      return this.errorFrame({
        error: { type: 'api_error', message: 'The provider sent an unreadable stream event.' },
      });
    return this.pushEvent(event, payload as Json);
  }

  /** Feeds one parsed upstream event; returns the SSE text to write now. */
  pushEvent(event: string, payload: Json): string {
    if (this.ended) return '';
    switch (payload.type ?? event) {
      case 'message_start': {
        const message = (payload.message ?? {}) as Json;
        this.usage = { ...((message.usage as Json) ?? {}) };
        this.model = reportedModel(message.model, this.context.model);
        return this.start();
      }
      case 'content_block_start':
        return this.start() + this.blockStart(Number(payload.index), (payload.content_block ?? {}) as Json);
      case 'content_block_delta':
        return this.blockDelta(Number(payload.index), (payload.delta ?? {}) as Json);
      case 'content_block_stop':
        return this.blockStop(Number(payload.index));
      case 'message_delta': {
        const delta = (payload.delta ?? {}) as Json;
        if (delta.stop_reason !== undefined) this.stopReason = delta.stop_reason;
        if (payload.usage) this.usage = { ...this.usage, ...(payload.usage as Json) };
        return '';
      }
      case 'message_stop': {
        let out = '';
        for (const index of [...this.open.keys()]) out += this.blockStop(index);
        this.ended = true;
        return out;
      }
      case 'error':
        return this.errorFrame(payload);
      default:
        return '';
    }
  }

  private start(): string {
    if (this.started) return '';
    this.started = true;
    const response = this.response('in_progress');
    return this.frame('response.created', { response }) + this.frame('response.in_progress', { response });
  }

  private itemId(prefix: string, outputIndex: number): string {
    return `${prefix}_${this.idPart}_${outputIndex}`;
  }

  private add(index: number, kind: OpenItem['kind'], item: Json, thinking?: ThinkingBlock): string {
    const outputIndex = this.output.length;
    item.id = this.itemId(kind === 'message' ? 'msg' : kind === 'function_call' ? 'fc' : 'rs', outputIndex);
    this.output.push(item);
    this.stored.push(item);
    this.open.set(index, { outputIndex, item, kind, text: '', thinking });
    return this.frame('response.output_item.added', { output_index: outputIndex, item: { ...item } });
  }

  private blockStart(index: number, block: Json): string {
    if (this.open.has(index)) return '';
    switch (block.type) {
      case 'thinking': {
        const out = this.add(
          index,
          'reasoning',
          { type: 'reasoning', summary: [] },
          {
            type: 'thinking',
            thinking: '',
            signature: '',
          },
        );
        const open = this.open.get(index) as OpenItem;
        if (!this.context.summary) return out;
        return (
          out +
          this.frame('response.reasoning_summary_part.added', {
            item_id: open.item.id,
            output_index: open.outputIndex,
            summary_index: 0,
            part: { type: 'summary_text', text: '' },
          })
        );
      }
      case 'redacted_thinking':
        return this.add(
          index,
          'redacted',
          { type: 'reasoning', summary: [] },
          {
            type: 'redacted_thinking',
            data: String(block.data ?? ''),
          },
        );
      case 'text':
        return this.textStart(index, typeof block.text === 'string' ? block.text : '');
      case 'tool_use':
        if (this.context.jsonTool !== undefined && block.name === this.context.jsonTool)
          return this.textStart(index, '');
        return this.add(index, 'function_call', {
          type: 'function_call',
          status: 'in_progress',
          call_id: String(block.id ?? ''),
          name: String(block.name ?? ''),
          arguments: '',
        });
      default:
        return '';
    }
  }

  private textStart(index: number, text: string): string {
    let out = this.add(index, 'message', { type: 'message', status: 'in_progress', role: 'assistant', content: [] });
    const open = this.open.get(index) as OpenItem;
    out += this.frame('response.content_part.added', {
      item_id: open.item.id,
      output_index: open.outputIndex,
      content_index: 0,
      part: { type: 'output_text', text: '', annotations: [], logprobs: [] },
    });
    return text === '' ? out : out + this.textDelta(open, text);
  }

  private textDelta(open: OpenItem, delta: string): string {
    open.text += delta;
    return this.frame('response.output_text.delta', {
      item_id: open.item.id,
      output_index: open.outputIndex,
      content_index: 0,
      delta,
      logprobs: [],
    });
  }

  private blockDelta(index: number, delta: Json): string {
    const open = this.open.get(index);
    if (open === undefined) return '';
    switch (delta.type) {
      case 'text_delta':
        return open.kind === 'message' ? this.textDelta(open, String(delta.text ?? '')) : '';
      case 'input_json_delta': {
        const piece = String(delta.partial_json ?? '');
        if (open.kind === 'message') return piece === '' ? '' : this.textDelta(open, piece);
        if (open.kind !== 'function_call') return '';
        open.text += piece;
        return this.frame('response.function_call_arguments.delta', {
          item_id: open.item.id,
          output_index: open.outputIndex,
          delta: piece,
        });
      }
      case 'thinking_delta': {
        if (open.thinking?.type !== 'thinking') return '';
        const piece = String(delta.thinking ?? '');
        open.thinking.thinking += piece;
        if (!this.context.summary) return '';
        return this.frame('response.reasoning_summary_text.delta', {
          item_id: open.item.id,
          output_index: open.outputIndex,
          summary_index: 0,
          delta: piece,
        });
      }
      case 'signature_delta':
        if (open.thinking?.type === 'thinking') open.thinking.signature += String(delta.signature ?? '');
        return '';
      default:
        return '';
    }
  }

  private blockStop(index: number): string {
    const open = this.open.get(index);
    if (open === undefined) return '';
    this.open.delete(index);
    const { item, outputIndex } = open;
    let out = '';
    if (open.kind === 'message') {
      const part = { type: 'output_text', text: open.text, annotations: [], logprobs: [] };
      item.content = [part];
      item.status = 'completed';
      const at = { item_id: item.id, output_index: outputIndex, content_index: 0 };
      out += this.frame('response.output_text.done', { ...at, text: open.text, logprobs: [] });
      out += this.frame('response.content_part.done', { ...at, part });
    } else if (open.kind === 'function_call') {
      item.arguments = open.text === '' ? '{}' : open.text;
      item.status = 'completed';
      out += this.frame('response.function_call_arguments.done', {
        item_id: item.id,
        output_index: outputIndex,
        name: item.name,
        arguments: item.arguments,
      });
    } else if (open.thinking) {
      const sealed = this.context.seal([open.thinking]);
      const stored: Json = { ...item, encrypted_content: sealed };
      this.stored[outputIndex] = stored;
      if (open.thinking.type === 'thinking' && this.context.summary) {
        const text = open.thinking.thinking;
        const part = { type: 'summary_text', text };
        item.summary = [part];
        stored.summary = [part];
        const at = { item_id: item.id, output_index: outputIndex, summary_index: 0 };
        out += this.frame('response.reasoning_summary_text.done', { ...at, text });
        out += this.frame('response.reasoning_summary_part.done', { ...at, part });
      }
      if (this.context.includeEncrypted) item.encrypted_content = sealed;
    }
    return out + this.frame('response.output_item.done', { output_index: outputIndex, item: { ...item } });
  }

  /** The final event (`response.completed`, or `response.incomplete`), once the message ended normally. */
  finalFrame(): string {
    const response = this.response();
    return this.frame(response.status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response });
  }

  private errorFrame(payload: Json): string {
    this.ended = true;
    this.failed = true;
    const error = toOpenAiError(500, payload).error;
    // Both shapes: OpenAI's (code and message at the top) and the nested `error` that SDKs raise on.
    return this.frame('error', {
      code: error.code,
      message: error.message,
      param: null,
      error: { type: error.type, code: error.code, message: error.message, param: null },
    });
  }

  /** The frame to write when the upstream ends without `message_stop`. */
  abortFrame(message: string): string {
    if (this.ended) return '';
    return this.errorFrame({ error: { type: 'api_error', message } });
  }
}

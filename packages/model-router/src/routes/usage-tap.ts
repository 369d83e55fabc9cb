import { TextDecoder } from 'node:util';
import { createParser, type EventSourceParser } from 'eventsource-parser';
import { anthropicUsage, type GatewayLocals, type GatewayUsage } from './respond';

/** Most bytes of a non-streamed answer the tap keeps to read its usage: 1 MiB (a larger answer's usage is not read). */
const MAX_TAPPED_JSON_BYTES = 1024 * 1024;

function mergeUsage(into: GatewayUsage | undefined, next: GatewayUsage | undefined): GatewayUsage | undefined {
  if (next === undefined) return into;
  const merged: GatewayUsage = { ...into };
  for (const key of Object.keys(next) as (keyof GatewayUsage)[]) if (next[key] !== undefined) merged[key] = next[key];
  return merged;
}

/**
 * Reads the model and token usage of a native Messages answer as its bytes pass through to the
 * client unchanged: from `message_start` and `message_delta` of an event stream, or from the JSON
 * body (up to 1 MiB). Only those fields are kept; nothing of the content is.
 */
export class UsageTap {
  private readonly parser: EventSourceParser | undefined;
  /** An event stream's decoder (a JSON answer is decoded whole, at its end). */
  private readonly decoder: TextDecoder | undefined;
  private chunks: Buffer[] | undefined = [];
  private size = 0;

  constructor(
    private readonly locals: GatewayLocals,
    eventStream: boolean,
  ) {
    if (eventStream) {
      this.chunks = undefined;
      this.decoder = new TextDecoder();
      this.parser = createParser({ onEvent: (event) => this.onEvent(event.event, event.data) });
    }
  }

  /** Feeds one chunk of the answer. */
  push(chunk: Buffer): void {
    if (this.parser) {
      this.parser.feed((this.decoder as TextDecoder).decode(chunk, { stream: true }));
      return;
    }
    if (this.chunks === undefined) return;
    this.size += chunk.length;
    if (this.size > MAX_TAPPED_JSON_BYTES) this.chunks = undefined;
    else this.chunks.push(chunk);
  }

  /** The answer is over: reads a JSON body's usage. */
  end(): void {
    if (this.chunks === undefined) return;
    let body: unknown;
    try {
      const chunks = this.chunks;
      // A short answer is one chunk: read it as it is, not copied first.
      body = JSON.parse((chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)).toString('utf8'));
    } catch {
      body = undefined;
    }
    this.chunks = undefined;
    if (typeof body !== 'object' || body === null) return;
    const answer = body as { usage?: unknown; model?: unknown; input_tokens?: unknown };
    this.locals.usage = mergeUsage(this.locals.usage, anthropicUsage(answer.usage ?? answer));
    if (typeof answer.model === 'string') this.locals.responseModel = answer.model.slice(0, 256);
  }

  private onEvent(name: string | undefined, data: string): void {
    if (name !== 'message_start' && name !== 'message_delta') return;
    let payload: { message?: { usage?: unknown; model?: unknown }; usage?: unknown } | undefined;
    try {
      payload = JSON.parse(data) as typeof payload;
    } catch {
      return;
    }
    if (name === 'message_start') {
      const model = payload?.message?.model;
      if (typeof model === 'string') this.locals.responseModel = model.slice(0, 256);
      this.locals.usage = mergeUsage(this.locals.usage, anthropicUsage(payload?.message?.usage));
    } else {
      this.locals.usage = mergeUsage(this.locals.usage, anthropicUsage(payload?.usage));
    }
  }
}

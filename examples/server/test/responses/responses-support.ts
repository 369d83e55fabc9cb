import { createServer, type IncomingMessage } from 'node:http';
import { close, listen } from '../observability/otel-support';

/** One answer of the double: a JSON message, or events written one per chunk. */
export type Answer =
  | { json: Record<string, unknown> }
  | { events: [string, unknown][]; holdBefore?: number }
  | { status: number; json: unknown };

/** A request the double received: its raw body and the body parsed. */
export interface Received {
  body: string;
  json: Record<string, unknown>;
  headers: IncomingMessage['headers'];
}

/**
 * A real HTTP server answering like Anthropic's Messages API with the answers a test scripts. A
 * streamed answer is written one event per chunk, each after the previous one was flushed; with
 * `holdBefore`, the events from that index on wait for {@link AnthropicScript.release}.
 */
export interface AnthropicScript {
  url: string;
  received: Received[];
  reply(...answers: Answer[]): void;
  release(): void;
  close(): Promise<void>;
}

export const RELEASE = 'claude-sonnet-4-5-20250929';

export async function startAnthropicScript(): Promise<AnthropicScript> {
  const received: Received[] = [];
  const script: Answer[] = [];
  let release: () => void = () => undefined;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      received.push({ body, json: JSON.parse(body || '{}') as Record<string, unknown>, headers: req.headers });
      const answer = script.shift() ?? { json: message([{ type: 'text', text: 'unscripted' }]) };
      if ('events' in answer) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const held = new Promise<void>((resolve) => (release = resolve));
        void (async () => {
          for (const [index, [event, data]] of answer.events.entries()) {
            if (index === answer.holdBefore) await held;
            await new Promise<void>((resolve) =>
              res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`, () => resolve()),
            );
            await new Promise((resolve) => setImmediate(resolve));
          }
          res.end();
        })();
        return;
      }
      res.writeHead('status' in answer ? answer.status : 200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer.json));
    });
  });
  const url = await listen(server);
  return {
    url,
    received,
    reply: (...answers) => script.push(...answers),
    release: () => release(),
    close: () => close(server),
  };
}

/** An Anthropic message as the API returns it. */
export function message(content: unknown[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: 'msg_01SCRIPT',
    type: 'message',
    role: 'assistant',
    model: RELEASE,
    content,
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 12, output_tokens: 7, cache_creation_input_tokens: 2, cache_read_input_tokens: 3 },
    ...extra,
  };
}

/** The events Anthropic streams for `content` (one delta per text piece given as an array). */
export function events(
  content: ({ type: 'text'; text: string | string[] } | Record<string, unknown>)[],
  stopReason = 'end_turn',
): [string, unknown][] {
  const out: [string, unknown][] = [
    [
      'message_start',
      {
        type: 'message_start',
        message: { ...message([]), stop_reason: null, usage: { input_tokens: 12, output_tokens: 1 } },
      },
    ],
  ];
  content.forEach((entry, index) => {
    const block = entry as Record<string, unknown>;
    if (block.type === 'text') {
      out.push([
        'content_block_start',
        { type: 'content_block_start', index, content_block: { type: 'text', text: '' } },
      ]);
      const pieces = Array.isArray(block.text) ? block.text : [block.text];
      for (const text of pieces as string[])
        out.push(['content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text } }]);
    } else if (block.type === 'thinking') {
      out.push([
        'content_block_start',
        { type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '', signature: '' } },
      ]);
      out.push([
        'content_block_delta',
        { type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: block.thinking } },
      ]);
      out.push([
        'content_block_delta',
        { type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: block.signature } },
      ]);
    } else if (block.type === 'tool_use') {
      out.push(['content_block_start', { type: 'content_block_start', index, content_block: { ...block, input: {} } }]);
      const json = JSON.stringify(block.input);
      for (const partial_json of [json.slice(0, 5), json.slice(5)])
        out.push([
          'content_block_delta',
          { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json } },
        ]);
    }
    out.push(['content_block_stop', { type: 'content_block_stop', index }]);
  });
  out.push(
    ['message_delta', { type: 'message_delta', delta: { stop_reason: stopReason }, usage: { output_tokens: 9 } }],
    ['message_stop', { type: 'message_stop' }],
  );
  return out;
}

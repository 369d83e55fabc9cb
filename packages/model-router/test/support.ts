import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { modelRouter, type ModelRouterOptions } from '../src';

export const GATEWAY_KEY = 'gw-test-gateway-key-123';
export const PROVIDER_KEY = 'sk-ant-test-provider-key-456';

export interface Recorded {
  /** Which connection of the mock the request came on (1, 2, …). */
  connection: number;
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
  json: Record<string, unknown>;
}

export type Scripted =
  | { status?: number; headers?: Record<string, string>; json: unknown }
  | { sse: [string, unknown][]; holdAfter?: number; holdEnd?: boolean }
  | { hang: true };

/** Turns events into SSE text as Anthropic sends it. */
export function sse(events: [string, unknown][]): string {
  return events.map(([event, data]) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`).join('');
}

/** A mock Anthropic API: records every request, answers with what the test scripted. */
export async function mockAnthropic() {
  const requests: Recorded[] = [];
  const script: Scripted[] = [];
  const closed: Promise<void>[] = [];
  const connections = new WeakMap<object, number>();
  const held: (() => Promise<void>)[] = [];
  let connectionCount = 0;
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      let json: Record<string, unknown> = {};
      try {
        json = JSON.parse(body) as Record<string, unknown>;
      } catch {
        // recorded as is
      }
      const connection = connections.get(req.socket) as number;
      requests.push({
        connection,
        method: req.method as string,
        url: req.url as string,
        headers: req.headers,
        body,
        json,
      });
      const next = script.shift() ?? { json: message([{ type: 'text', text: 'default' }]) };
      if ('hang' in next) {
        closed.push(new Promise((resolve) => res.on('close', () => resolve())));
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(
          sse([
            [
              'message_start',
              { type: 'message_start', message: { id: 'msg_hang', usage: { input_tokens: 1, output_tokens: 0 } } },
            ],
          ]),
        );
        return;
      }
      if ('sse' in next) {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'request-id': 'req_stream' });
        // holdEnd: the events now, the end of the response when the test calls `endHeld()`.
        if (next.holdEnd) {
          res.write(sse(next.sse));
          held.push(() => new Promise<void>((resolve) => res.end(resolve)));
        } else {
          res.end(sse(next.sse));
        }
        return;
      }
      res.writeHead(next.status ?? 200, { 'content-type': 'application/json', 'request-id': 'req_1', ...next.headers });
      res.end(JSON.stringify(next.json));
    });
  });
  server.on('connection', (socket) => connections.set(socket, ++connectionCount));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    requests,
    closed,
    reply: (...answers: Scripted[]) => script.push(...answers),
    /** Ends the oldest response held by `holdEnd`, resolving once its last bytes are written. */
    endHeld: () => (held.shift() as () => Promise<void>)(),
    last: () => requests.at(-1) as Recorded,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** An Anthropic message as the API returns it. */
export function message(content: unknown[], extra: Record<string, unknown> = {}) {
  return {
    id: 'msg_01TEST',
    type: 'message',
    role: 'assistant',
    model: 'claude-sonnet-4-5',
    content,
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 10, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    ...extra,
  };
}

/** The gateway under test: a tiny API-key check, then the model router at /v1. */
export async function gatewayFor(upstreamUrl: string, options: Partial<ModelRouterOptions> = {}) {
  const app = express();
  app.use('/v1', (req, res, next) => {
    const key =
      req.headers['x-gateway-api-key'] ??
      req.headers['x-portkey-api-key'] ??
      req.headers['x-api-key'] ??
      req.headers.authorization?.replace(/^Bearer /, '');
    if (key !== GATEWAY_KEY)
      return res
        .status(401)
        .json({ error: { message: 'bad key', type: 'authentication_error', code: 'invalid_credentials' } });
    next();
  });
  app.use(
    '/v1',
    modelRouter({
      providers: [
        { slug: 'anthropic-test', provider: 'anthropic', apiKey: PROVIDER_KEY, baseUrl: upstreamUrl },
        {
          slug: 'limited',
          provider: 'anthropic',
          apiKey: PROVIDER_KEY,
          baseUrl: upstreamUrl,
          models: { mode: 'custom', models: ['claude-sonnet-4-5'], autoEnableNew: true },
        },
        {
          slug: 'kb',
          provider: 'bedrock',
          accessKeyId: 'AKIDEXAMPLE',
          secretAccessKey: 'kb-secret',
          region: 'us-east-1',
        },
      ],
      ...options,
    }),
  );
  app.use((_req, res) => res.status(404).json({ error: { code: 'route_not_found' } }));
  const server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A minimal PDF with `pages` pages (optionally declaring encryption). */
export function makePdf(pages: number, options: { encrypted?: boolean } = {}): Buffer {
  const kids = Array.from({ length: pages }, (_, i) => `${i + 3} 0 R`).join(' ');
  const objects = [
    '1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj',
    `2 0 obj << /Type /Pages /Kids [${kids}] /Count ${pages} >> endobj`,
    ...Array.from(
      { length: pages },
      (_, i) => `${i + 3} 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >> endobj`,
    ),
  ];
  const trailer = `trailer << /Root 1 0 R /Size ${pages + 3}${options.encrypted ? ' /Encrypt 99 0 R' : ''} >>`;
  return Buffer.from(`%PDF-1.4\n${objects.join('\n')}\n${trailer}\n%%EOF\n`);
}

/** A real Anthropic event sequence: thinking, a signature, text. */
export function thinkingEvents(): [string, unknown][] {
  return [
    [
      'message_start',
      {
        type: 'message_start',
        message: {
          id: 'msg_01THINK',
          type: 'message',
          role: 'assistant',
          content: [],
          model: 'claude-sonnet-4-5',
          stop_reason: null,
          usage: { input_tokens: 20, output_tokens: 1 },
        },
      },
    ],
    [
      'content_block_start',
      { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '' } },
    ],
    [
      'content_block_delta',
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Let me think' } },
    ],
    [
      'content_block_delta',
      { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'sig-abc' } },
    ],
    ['content_block_stop', { type: 'content_block_stop', index: 0 }],
    [
      'content_block_start',
      { type: 'content_block_start', index: 1, content_block: { type: 'redacted_thinking', data: 'redacted-xyz' } },
    ],
    ['content_block_stop', { type: 'content_block_stop', index: 1 }],
    ['ping', { type: 'ping' }],
    ['content_block_start', { type: 'content_block_start', index: 2, content_block: { type: 'text', text: '' } }],
    [
      'content_block_delta',
      { type: 'content_block_delta', index: 2, delta: { type: 'text_delta', text: 'The answer' } },
    ],
    ['content_block_delta', { type: 'content_block_delta', index: 2, delta: { type: 'text_delta', text: ' is 42.' } }],
    ['content_block_stop', { type: 'content_block_stop', index: 2 }],
    [
      'message_delta',
      {
        type: 'message_delta',
        delta: { stop_reason: 'end_turn', stop_sequence: null },
        usage: { output_tokens: 30, cache_read_input_tokens: 7, cache_creation_input_tokens: 3 },
      },
    ],
    ['message_stop', { type: 'message_stop' }],
  ];
}

/** A real Anthropic event sequence: two tool calls whose input arrives in pieces. */
export function toolEvents(): [string, unknown][] {
  return [
    [
      'message_start',
      {
        type: 'message_start',
        message: {
          id: 'msg_01TOOL',
          type: 'message',
          role: 'assistant',
          content: [],
          model: 'claude-sonnet-4-5',
          stop_reason: null,
          usage: { input_tokens: 50, output_tokens: 1 },
        },
      },
    ],
    ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
    [
      'content_block_delta',
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Checking.' } },
    ],
    ['content_block_stop', { type: 'content_block_stop', index: 0 }],
    [
      'content_block_start',
      {
        type: 'content_block_start',
        index: 1,
        content_block: { type: 'tool_use', id: 'toolu_01A', name: 'get_weather', input: {} },
      },
    ],
    [
      'content_block_delta',
      { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '' } },
    ],
    [
      'content_block_delta',
      { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"city": "Par' } },
    ],
    [
      'content_block_delta',
      { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: 'is"}' } },
    ],
    ['content_block_stop', { type: 'content_block_stop', index: 1 }],
    [
      'content_block_start',
      {
        type: 'content_block_start',
        index: 2,
        content_block: { type: 'tool_use', id: 'toolu_01B', name: 'get_time', input: {} },
      },
    ],
    [
      'content_block_delta',
      { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '{"tz":"CET"}' } },
    ],
    ['content_block_stop', { type: 'content_block_stop', index: 2 }],
    [
      'message_delta',
      { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 40 } },
    ],
    ['message_stop', { type: 'message_stop' }],
  ];
}

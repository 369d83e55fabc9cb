import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { checkPdf, MAX_PDF_BYTES } from '../src';
import {
  GATEWAY_KEY,
  PROVIDER_KEY,
  gatewayFor,
  makePdf,
  message,
  mockAnthropic,
  sse,
  thinkingEvents,
  toolEvents,
} from './support';

let mock: Awaited<ReturnType<typeof mockAnthropic>>;
let gateway: Awaited<ReturnType<typeof gatewayFor>>;
let client: OpenAI;
const MODEL = '@anthropic-test/claude-sonnet-4-5';
const PNG = 'data:image/png;base64,iVBORw0KGgo=';

beforeAll(async () => {
  mock = await mockAnthropic();
  gateway = await gatewayFor(mock.url, {
    providers: [
      { slug: 'anthropic-test', provider: 'anthropic', apiKey: PROVIDER_KEY, baseUrl: mock.url },
      {
        slug: 'listed-only',
        provider: 'anthropic',
        apiKey: PROVIDER_KEY,
        baseUrl: mock.url,
        models: { mode: 'custom', models: ['claude-sonnet-4-5'] },
      },
    ],
  });
  client = new OpenAI({ apiKey: GATEWAY_KEY, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
});

afterAll(async () => {
  await gateway.close();
  await mock.close();
});

const ask = { max_tokens: 10, messages: [{ role: 'user' as const, content: 'x' }] };

/** Anthropic stream events: a text answer ending with `stopReason` (message_stop included unless told). */
function textEvents(text: string, stopReason: string, options: { stop?: boolean } = {}): [string, unknown][] {
  const events: [string, unknown][] = [
    [
      'message_start',
      {
        type: 'message_start',
        message: {
          id: 'msg_01GUARD',
          type: 'message',
          role: 'assistant',
          content: [],
          model: 'claude-sonnet-4-5',
          stop_reason: null,
          usage: { input_tokens: 3, output_tokens: 1 },
        },
      },
    ],
    ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
    ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } }],
    ['content_block_stop', { type: 'content_block_stop', index: 0 }],
    [
      'message_delta',
      {
        type: 'message_delta',
        delta: { stop_reason: stopReason, stop_sequence: stopReason === 'stop_sequence' ? 'END' : null },
        usage: { output_tokens: 4 },
      },
    ],
  ];
  if (options.stop !== false) events.push(['message_stop', { type: 'message_stop' }]);
  return events;
}

describe('stop reasons and tool call ids', () => {
  it('maps stop_reason stop_sequence to finish_reason "stop", streamed and not', async () => {
    mock.reply({
      json: message([{ type: 'text', text: 'Up to the' }], { stop_reason: 'stop_sequence', stop_sequence: 'END' }),
    });
    const completion = await client.chat.completions.create({ model: MODEL, stop: ['END'], ...ask });
    expect(completion.choices[0]?.finish_reason).toBe('stop');
    expect(completion.choices[0]?.message.content).toBe('Up to the');

    mock.reply({ sse: textEvents('Up to the', 'stop_sequence') });
    const stream = await client.chat.completions.create({ model: MODEL, stop: ['END'], stream: true, ...ask });
    const reasons: (string | null)[] = [];
    for await (const chunk of stream) for (const choice of chunk.choices) reasons.push(choice.finish_reason);
    expect(reasons.filter((r) => r !== null)).toEqual(['stop']);
  });

  it("gives a non-streamed answer's tool_calls the ids of Anthropic's tool_use blocks", async () => {
    mock.reply({
      json: message(
        [
          { type: 'text', text: 'Checking.' },
          { type: 'tool_use', id: 'toolu_01XyZ9', name: 'get_weather', input: { city: 'Paris' } },
          { type: 'tool_use', id: 'toolu_02AbC7', name: 'get_time', input: {} },
        ],
        { stop_reason: 'tool_use' },
      ),
    });
    const completion = await client.chat.completions.create({
      model: MODEL,
      ...ask,
      tools: [
        { type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } },
        { type: 'function', function: { name: 'get_time', parameters: { type: 'object' } } },
      ],
    });
    const calls = completion.choices[0]?.message.tool_calls ?? [];
    expect(calls.map((c) => c.id)).toEqual(['toolu_01XyZ9', 'toolu_02AbC7']);
    expect(calls.map((c) => (c.type === 'function' ? c.function.name : undefined))).toEqual([
      'get_weather',
      'get_time',
    ]);
    expect(completion.choices[0]?.finish_reason).toBe('tool_calls');

    // The id is what a tool result refers to: it goes back upstream as tool_use_id.
    mock.reply({ json: message([{ type: 'text', text: 'Sunny.' }]) });
    await client.chat.completions.create({
      model: MODEL,
      max_tokens: 10,
      messages: [
        { role: 'user', content: 'Weather?' },
        { role: 'assistant', content: null, tool_calls: calls },
        { role: 'tool', tool_call_id: calls[0]?.id as string, content: '21C' },
        { role: 'tool', tool_call_id: calls[1]?.id as string, content: '12:00' },
      ],
    });
    expect(JSON.stringify(mock.last().json)).toContain('"tool_use_id":"toolu_01XyZ9"');
  });
});

describe('converted streams', () => {
  it.each([
    ['text', () => textEvents('Hello', 'end_turn'), 'stop'],
    ['tool calls', toolEvents, 'tool_calls'],
    ['thinking', thinkingEvents, 'stop'],
    ['max_tokens', () => textEvents('cut', 'max_tokens'), 'length'],
  ] as const)('carries exactly one finish_reason, on the last choice chunk (%s)', async (_name, events, expected) => {
    for (const includeUsage of [false, true]) {
      mock.reply({ sse: events() });
      const stream = await client.chat.completions.create({
        model: MODEL,
        stream: true,
        ...ask,
        ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
      });
      const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
      for await (const chunk of stream) chunks.push(chunk);
      const choiceChunks = chunks.filter((c) => c.choices.length > 0);
      expect(choiceChunks.length).toBeGreaterThan(1);
      const finishing = choiceChunks.filter((c) => c.choices.some((choice) => choice.finish_reason !== null));
      expect(finishing).toHaveLength(1);
      expect(finishing[0]).toBe(choiceChunks.at(-1));
      expect(finishing[0]?.choices[0]?.finish_reason).toBe(expected);
      // With include_usage, only the usage chunk (no choices) may follow it.
      expect(chunks.slice(chunks.indexOf(finishing[0]!) + 1).every((c) => c.choices.length === 0)).toBe(true);
      expect(chunks.at(-1)?.usage != null).toBe(includeUsage);
    }
  });
});

/** A provider whose streams send their events, then break off (closing or resetting the connection). */
async function breakingProvider(ending: 'end' | 'reset') {
  let calls = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on('end', () => {
      calls++;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(sse(textEvents('partial answer', 'end_turn', { stop: false }).slice(0, 3)), () => {
        if (ending === 'end') res.end();
        else res.destroy();
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls: () => calls,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('a stream that ends without message_stop', () => {
  it.each(['end', 'reset'] as const)(
    'makes the openai SDK raise, and a configured retry never runs it again (%s)',
    async (ending) => {
      const provider = await breakingProvider(ending);
      const own = await gatewayFor(provider.url);
      try {
        const sdk = new OpenAI({
          apiKey: GATEWAY_KEY,
          baseURL: `${own.url}/v1`,
          maxRetries: 0,
          defaultHeaders: {
            'x-gateway-config': JSON.stringify({ retry: { attempts: 3 } }),
          },
        });
        const stream = await sdk.chat.completions.create({ model: MODEL, stream: true, ...ask });
        const text: string[] = [];
        const error = await (async () => {
          for await (const chunk of stream) text.push(chunk.choices[0]?.delta.content ?? '');
        })().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(OpenAI.APIError);
        expect((error as Error).message).toContain('ended the stream early');
        expect(text.join('')).toBe('partial answer');
        expect(provider.calls()).toBe(1);
      } finally {
        await own.close();
        await provider.close();
      }
    },
  );
});

describe('request_timeout on native /v1/messages', () => {
  it('answers 504 upstream_timeout when the provider sends no headers within request_timeout', async () => {
    let received = 0;
    const silent = createServer((req) => {
      received++;
      req.resume();
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const silentUrl = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    // The gateway's own timeout is long: only request_timeout can end the wait in time.
    const own = await gatewayFor(silentUrl, { timeoutMs: 120_000 });
    try {
      const anthropic = new Anthropic({
        apiKey: GATEWAY_KEY,
        baseURL: own.url,
        maxRetries: 0,
        defaultHeaders: { 'x-gateway-config': JSON.stringify({ request_timeout: 100 }) },
      });
      const error = await anthropic.messages
        .create(
          { model: '@anthropic-test/claude-sonnet-4-5', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] },
          // A guard, not a synchronisation: without request_timeout the call would wait two minutes.
          { signal: AbortSignal.timeout(4_000) },
        )
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(Anthropic.APIError);
      expect((error as InstanceType<typeof Anthropic.APIError>).status).toBe(504);
      expect((error as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({
        type: 'error',
        error: { type: 'timeout_error' },
        code: 'upstream_timeout',
      });
      expect(received).toBe(1);
    } finally {
      await own.close();
      silent.closeAllConnections();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });
});

describe('PDF size limit at the byte', () => {
  const outcome = async (base64: string): Promise<string> => {
    try {
      await checkPdf(base64, 'messages[0].content[0]');
    } catch (error) {
      return (error as { code: string }).code;
    }
    return 'accepted';
  };
  const pdfOf = (bytes: number): Buffer => {
    const head = makePdf(1);
    return Buffer.concat([head, Buffer.alloc(bytes - head.length, 0x20)]);
  };

  it('accepts exactly 32 MiB and refuses 32 MiB + 1 byte, padded or not', async () => {
    expect(MAX_PDF_BYTES).toBe(32 * 1024 * 1024);
    const exact = pdfOf(MAX_PDF_BYTES).toString('base64');
    const over = pdfOf(MAX_PDF_BYTES + 1).toString('base64');
    expect(await outcome(exact)).toBe('accepted');
    expect(await outcome(exact.replace(/=+$/, ''))).toBe('accepted');
    expect(await outcome(over)).toBe('pdf_too_large');
    expect(await outcome(over.replace(/=+$/, ''))).toBe('pdf_too_large');
    expect(await outcome(pdfOf(MAX_PDF_BYTES + 2).toString('base64'))).toBe('pdf_too_large');
  });
});

describe('model selection', () => {
  it('refuses with 403 model_not_enabled a model not in a custom list without autoEnableNew', async () => {
    const before = mock.requests.length;
    for (const model of ['claude-opus-4-1', 'claude-sonnet-4-5-20250929', 'claude-future-9']) {
      const error = await client.chat.completions
        .create({ model: `@listed-only/${model}`, ...ask })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.PermissionDeniedError);
      expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe('model_not_enabled');

      const native = await new Anthropic({ apiKey: GATEWAY_KEY, baseURL: gateway.url, maxRetries: 0 }).messages
        .create({ model: `@listed-only/${model}`, ...ask })
        .catch((e: unknown) => e);
      expect(native).toBeInstanceOf(Anthropic.PermissionDeniedError);
      expect((native as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({ code: 'model_not_enabled' });
    }
    expect(mock.requests.length).toBe(before);

    mock.reply({ json: message([{ type: 'text', text: 'listed' }]) });
    const listed = await client.chat.completions.create({ model: '@listed-only/claude-sonnet-4-5', ...ask });
    expect(listed.choices[0]?.message.content).toBe('listed');
  });
});

describe('images for models without vision', () => {
  it('refuses an image_url part with 400 unsupported_input before calling upstream', async () => {
    const before = mock.requests.length;
    const withImage = (model: string) =>
      client.chat.completions.create({
        model,
        max_tokens: 10,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'What is this?' },
              { type: 'image_url', image_url: { url: PNG } },
            ],
          },
        ],
      });
    for (const model of ['claude-3-5-haiku-20241022', 'claude-3-5-haiku-latest', 'claude-2.1']) {
      const error = await withImage(`@anthropic-test/${model}`).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe('unsupported_input');
    }
    expect(mock.requests.length).toBe(before);

    mock.reply({ json: message([{ type: 'text', text: 'A pixel.' }]) });
    expect((await withImage(MODEL)).choices[0]?.message.content).toBe('A pixel.');
    expect(JSON.stringify(mock.last().json)).toContain('"type":"image"');
  });
});

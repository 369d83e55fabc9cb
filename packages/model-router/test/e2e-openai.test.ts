import OpenAI from 'openai';
import { providerUserId } from '../src';
import {
  GATEWAY_KEY,
  PROVIDER_KEY,
  gatewayFor,
  makePdf,
  message,
  mockAnthropic,
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
  gateway = await gatewayFor(mock.url);
  client = new OpenAI({ apiKey: GATEWAY_KEY, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
});

afterAll(async () => {
  await gateway.close();
  await mock.close();
});

describe('the openai SDK through /v1/chat/completions', () => {
  it('converts a text request and response, with system and developer prompts, sending only the catalog key', async () => {
    mock.reply({
      json: message([
        { type: 'text', text: 'Hello' },
        { type: 'text', text: ' there' },
      ]),
    });
    const completion = await client.chat.completions.create({
      model: MODEL,
      max_tokens: 100,
      temperature: 0.2,
      stop: 'END',
      user: 'user-7',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'developer', content: 'Answer in English.' },
        { role: 'user', content: 'Hi' },
      ],
    });
    expect(completion.choices[0]?.message.content).toBe('Hello there');
    expect(completion.choices[0]?.finish_reason).toBe('stop');
    expect(completion.object).toBe('chat.completion');
    const sent = mock.last();
    expect(sent.url).toBe('/v1/messages');
    expect(sent.json).toEqual({
      model: 'claude-sonnet-4-5',
      max_tokens: 100,
      temperature: 0.2,
      stop_sequences: ['END'],
      // The label is scoped to the caller (none here: the router is mounted without authentication).
      metadata: { user_id: providerUserId(undefined, 'user-7') },
      system: [
        { type: 'text', text: 'Be brief.' },
        { type: 'text', text: 'Answer in English.' },
      ],
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(sent.headers['x-api-key']).toBe(PROVIDER_KEY);
    expect(sent.headers['anthropic-version']).toBe('2023-06-01');
    expect(JSON.stringify(sent.headers)).not.toContain(GATEWAY_KEY);
  });

  it('sends images and PDFs (file parts and data URLs with parameters) as image and document blocks', async () => {
    mock.reply({ json: message([{ type: 'text', text: 'ok' }]) });
    const pdf = makePdf(2).toString('base64');
    await client.chat.completions.create({
      model: MODEL,
      max_tokens: 50,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Describe', cache_control: { type: 'ephemeral', ttl: '1h' } } as never,
            { type: 'image_url', image_url: { url: PNG } },
            { type: 'file', file: { file_data: pdf, filename: 'a.pdf' } },
            { type: 'image_url', image_url: { url: `data:application/pdf;name=x.pdf;base64,${pdf}` } },
          ],
        },
      ],
    });
    const content = (mock.last().json.messages as { content: unknown[] }[])[0]?.content;
    expect(content).toEqual([
      { type: 'text', text: 'Describe', cache_control: { type: 'ephemeral', ttl: '1h' } },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
      { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: pdf } },
      { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: pdf } },
    ]);
  });

  it('returns thinking and redacted thinking in content_blocks when strict compliance is off', async () => {
    mock.reply({
      json: message([
        { type: 'thinking', thinking: 'Hmm', signature: 'sig-1' },
        { type: 'redacted_thinking', data: 'enc-1' },
        { type: 'text', text: '42' },
      ]),
    });
    const raw = await client.chat.completions
      .create(
        {
          model: MODEL,
          max_tokens: 4000,
          thinking: { type: 'enabled', budget_tokens: 2000 },
          messages: [{ role: 'user', content: 'Q' }],
        } as never,
        { headers: { 'x-gateway-strict-open-ai-compliance': 'false' } },
      )
      .asResponse();
    const body = (await raw.json()) as { choices: { message: Record<string, unknown> }[] };
    expect(body.choices[0]?.message.content).toBe('42');
    expect(body.choices[0]?.message.content_blocks).toEqual([
      { type: 'thinking', thinking: 'Hmm', signature: 'sig-1' },
      { type: 'redacted_thinking', data: 'enc-1' },
      { type: 'text', text: '42' },
    ]);
    expect(mock.last().json.thinking).toEqual({ type: 'enabled', budget_tokens: 2000 });
  });

  it('keeps thinking out of strict responses, streaming and not', async () => {
    mock.reply({
      json: message([
        { type: 'thinking', thinking: 'Hmm', signature: 's' },
        { type: 'text', text: '42' },
      ]),
    });
    const strict = await client.chat.completions.create({
      model: MODEL,
      max_tokens: 4000,
      messages: [{ role: 'user', content: 'Q' }],
    });
    expect(strict.choices[0]?.message).not.toHaveProperty('content_blocks');
    mock.reply({ sse: thinkingEvents() });
    const chunks = [];
    for await (const chunk of await client.chat.completions.create({
      model: MODEL,
      max_tokens: 4000,
      stream: true,
      messages: [{ role: 'user', content: 'Q' }],
    }))
      chunks.push(chunk);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('The answer is 42.');
    expect(JSON.stringify(chunks)).not.toContain('Let me think');
    expect(JSON.stringify(chunks)).not.toContain('content_blocks');
  });

  it('streams thinking, signature and redacted thinking as content_blocks deltas when strict compliance is off', async () => {
    mock.reply({ sse: thinkingEvents() });
    const stream = await client.chat.completions.create(
      {
        model: MODEL,
        max_tokens: 4000,
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: 'user', content: 'Q' }],
      },
      { headers: { 'x-gateway-strict-open-ai-compliance': 'false' } },
    );
    const chunks: Record<string, unknown>[] = [];
    for await (const chunk of stream) chunks.push(chunk as never);
    const deltas = chunks.flatMap((c) =>
      ((c.choices as { delta: { content_blocks?: { delta: unknown }[] } }[])[0]?.delta.content_blocks ?? []).map(
        (b) => b.delta,
      ),
    );
    expect(deltas).toEqual([
      { type: 'thinking', thinking: 'Let me think' },
      { type: 'signature', signature: 'sig-abc' },
      { type: 'redacted_thinking', data: 'redacted-xyz' },
      { type: 'text', text: 'The answer' },
      { type: 'text', text: ' is 42.' },
    ]);
    const first = chunks[0] as { id: string; choices: { delta: { role?: string } }[] };
    expect(first.choices[0]?.delta.role).toBe('assistant');
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    const usageChunk = chunks.at(-1) as { choices: unknown[]; usage: Record<string, unknown> };
    expect(usageChunk.choices).toEqual([]);
    expect(usageChunk.usage).toEqual({
      prompt_tokens: 30,
      completion_tokens: 30,
      total_tokens: 60,
      prompt_tokens_details: { cached_tokens: 7 },
      cache_creation_input_tokens: 3,
      cache_read_input_tokens: 7,
    });
    expect((chunks.at(-2) as { choices: { finish_reason: string }[] }).choices[0]?.finish_reason).toBe('stop');
  });

  it('streams tool calls whose deltas reassemble, with stable indexes, ids and names first', async () => {
    mock.reply({ sse: toolEvents() });
    const stream = await client.chat.completions.create({
      model: MODEL,
      max_tokens: 500,
      stream: true,
      tools: [
        {
          type: 'function',
          function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
        },
      ],
      tool_choice: 'required',
      parallel_tool_calls: false,
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
    });
    const calls: { id?: string; name?: string; arguments: string }[] = [];
    let finish: string | null = null;
    let text = '';
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      text += choice?.delta.content ?? '';
      finish = choice?.finish_reason ?? finish;
      for (const call of choice?.delta.tool_calls ?? []) {
        const entry = (calls[call.index] ??= { arguments: '' });
        if (call.id) entry.id = call.id;
        if (call.function?.name) entry.name = call.function.name;
        entry.arguments += call.function?.arguments ?? '';
      }
    }
    expect(text).toBe('Checking.');
    expect(finish).toBe('tool_calls');
    expect(calls.map((c) => ({ ...c, arguments: JSON.parse(c.arguments) }))).toEqual([
      { id: 'toolu_01A', name: 'get_weather', arguments: { city: 'Paris' } },
      { id: 'toolu_01B', name: 'get_time', arguments: { tz: 'CET' } },
    ]);
    expect(mock.last().json.tool_choice).toEqual({ type: 'any', disable_parallel_tool_use: true });
    expect(mock.last().json.tools).toEqual([
      { name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } },
    ]);
  });

  it('sends thinking blocks back before tool_use in a tool-result round trip', async () => {
    mock.reply({ json: message([{ type: 'text', text: 'Sunny' }]) });
    await client.chat.completions.create({
      model: MODEL,
      max_tokens: 4000,
      thinking: { type: 'enabled', budget_tokens: 1024 },
      messages: [
        { role: 'user', content: 'Weather?' },
        {
          role: 'assistant',
          content: null,
          content_blocks: [
            { type: 'thinking', thinking: 'Need tool', signature: 'sig-t' },
            { type: 'redacted_thinking', data: 'r' },
          ],
          tool_calls: [
            { id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
            { id: 'toolu_2', type: 'function', function: { name: 'noop', arguments: '' } },
          ],
        } as never,
        { role: 'tool', tool_call_id: 'toolu_1', content: '18C' },
        { role: 'tool', tool_call_id: 'toolu_2', content: 'done' },
      ],
    } as never);
    expect(mock.last().json.messages).toEqual([
      { role: 'user', content: 'Weather?' },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'Need tool', signature: 'sig-t' },
          { type: 'redacted_thinking', data: 'r' },
          { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
          { type: 'tool_use', id: 'toolu_2', name: 'noop', input: {} },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: '18C' },
          { type: 'tool_result', tool_use_id: 'toolu_2', content: 'done' },
        ],
      },
    ]);
  });

  it('keeps cache_control with ttl on system blocks and merges beta headers', async () => {
    mock.reply({ json: message([{ type: 'text', text: 'ok' }]) });
    await client.chat.completions.create(
      {
        model: MODEL,
        max_tokens: 10,
        messages: [
          {
            role: 'system',
            content: [{ type: 'text', text: 'Long context', cache_control: { type: 'ephemeral', ttl: '5m' } } as never],
          },
          { role: 'user', content: 'Hi' },
        ],
      },
      {
        headers: {
          'x-gateway-anthropic-beta': 'pdfs-2024-09-25, prompt-caching-2024-07-31',
          'anthropic-beta': 'prompt-caching-2024-07-31,extended-cache-ttl-2025-04-11',
          'x-portkey-provider-beta': 'token-efficient-tools-2025-02-19',
          'x-gateway-anthropic-version': '2023-06-01',
        },
      },
    );
    expect(mock.last().json.system).toEqual([
      { type: 'text', text: 'Long context', cache_control: { type: 'ephemeral', ttl: '5m' } },
    ]);
    expect(String(mock.last().headers['anthropic-beta']).split(',').sort()).toEqual(
      [
        'extended-cache-ttl-2025-04-11',
        'pdfs-2024-09-25',
        'prompt-caching-2024-07-31',
        'token-efficient-tools-2025-02-19',
      ].sort(),
    );
  });

  it('maps refusal and max_tokens stop reasons, and usage with cache tokens', async () => {
    mock.reply(
      { json: message([{ type: 'text', text: '' }], { stop_reason: 'refusal' }) },
      {
        json: message([{ type: 'text', text: 'cut' }], {
          stop_reason: 'max_tokens',
          usage: { input_tokens: 4, output_tokens: 9, cache_creation_input_tokens: 100, cache_read_input_tokens: 50 },
        }),
      },
    );
    const refused = await client.chat.completions.create({
      model: MODEL,
      max_tokens: 10,
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(refused.choices[0]?.finish_reason).toBe('content_filter');
    const cut = await client.chat.completions.create({
      model: MODEL,
      max_tokens: 10,
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(cut.choices[0]?.finish_reason).toBe('length');
    expect(cut.usage).toMatchObject({
      prompt_tokens: 154,
      completion_tokens: 9,
      total_tokens: 163,
      prompt_tokens_details: { cached_tokens: 50 },
    });
  });

  it('passes a 429 back in the OpenAI error shape with retry-after', async () => {
    mock.reply({
      status: 429,
      headers: { 'retry-after': '17' },
      json: { type: 'error', error: { type: 'rate_limit_error', message: 'Slow down' } },
    });
    const error = await client.chat.completions
      .create({ model: MODEL, max_tokens: 10, messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    const apiError = error as InstanceType<typeof OpenAI.APIError>;
    expect(apiError.status).toBe(429);
    expect(apiError.headers?.get('retry-after')).toBe('17');
    expect(apiError.message).toContain('Slow down');
  });

  it('makes the SDK raise on a mid-stream error event', async () => {
    mock.reply({
      sse: [
        thinkingEvents()[0] as [string, unknown],
        ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
        [
          'content_block_delta',
          { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'partial' } },
        ],
        ['error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }],
      ],
    });
    const stream = await client.chat.completions.create({
      model: MODEL,
      max_tokens: 10,
      stream: true,
      messages: [{ role: 'user', content: 'x' }],
    });
    const received: string[] = [];
    await expect(
      (async () => {
        for await (const chunk of stream) received.push(chunk.choices[0]?.delta.content ?? '');
      })(),
    ).rejects.toThrow('Overloaded');
    expect(received.join('')).toBe('partial');
  });

  it('refuses image URLs, unsupported image types, missing max_tokens and bad thinking budgets before calling upstream', async () => {
    const before = mock.requests.length;
    const cases: [Record<string, unknown>, number, string][] = [
      [{ messages: [{ role: 'user', content: 'x' }] }, 400, 'max_tokens_required'],
      [
        {
          max_tokens: 5,
          messages: [
            { role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.com/a.png' } }] },
          ],
        },
        400,
        'image_url_not_supported',
      ],
      [
        {
          max_tokens: 5,
          messages: [
            { role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/bmp;base64,Qk0=' } }] },
          ],
        },
        400,
        'unsupported_image_type',
      ],
      [
        {
          max_tokens: 2000,
          thinking: { type: 'enabled', budget_tokens: 512 },
          messages: [{ role: 'user', content: 'x' }],
        },
        400,
        'invalid_request',
      ],
      [
        {
          max_tokens: 2000,
          thinking: { type: 'enabled', budget_tokens: 2000 },
          messages: [{ role: 'user', content: 'x' }],
        },
        400,
        'invalid_request',
      ],
      [
        {
          max_tokens: 5,
          messages: [
            { role: 'user', content: [{ type: 'file', file: { file_data: makePdf(101).toString('base64') } }] },
          ],
        },
        400,
        'pdf_too_many_pages',
      ],
      [
        {
          max_tokens: 5,
          messages: [
            {
              role: 'user',
              content: [{ type: 'file', file: { file_data: makePdf(1, { encrypted: true }).toString('base64') } }],
            },
          ],
        },
        400,
        'pdf_encrypted',
      ],
      [
        {
          max_tokens: 5,
          messages: [
            { role: 'user', content: [{ type: 'file', file: { file_data: Buffer.from('hello').toString('base64') } }] },
          ],
        },
        400,
        'invalid_pdf',
      ],
      [
        {
          model: '@anthropic-test/claude-3-haiku-20240307',
          max_tokens: 5,
          messages: [{ role: 'user', content: [{ type: 'file', file: { file_data: makePdf(1).toString('base64') } }] }],
        },
        400,
        'unsupported_input',
      ],
    ];
    for (const [body, status, code] of cases) {
      const response = await fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${GATEWAY_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: MODEL, ...body }),
      });
      expect(response.status).toBe(status);
      const json = (await response.json()) as {
        error: { code: string; type: string; param: unknown; message: string };
      };
      expect(json.error.code).toBe(code);
      expect(Object.keys(json.error).sort()).toEqual(['code', 'message', 'param', 'type']);
    }
    expect(mock.requests.length).toBe(before);
  });
});

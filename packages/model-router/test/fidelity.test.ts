import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { ChatStreamTranslator, toChatCompletion } from '../src';
import { GATEWAY_KEY, gatewayFor, message, mockAnthropic } from './support';

let mock: Awaited<ReturnType<typeof mockAnthropic>>;
let gateway: Awaited<ReturnType<typeof gatewayFor>>;
let client: OpenAI;
const MODEL = '@anthropic-test/claude-sonnet-4-5';
/** The dated release the provider reports for the alias the client asked for. */
const RELEASE = 'claude-sonnet-4-5-20250929';

const Weather = z.object({ city: z.string(), temperature_c: z.number(), conditions: z.array(z.string()) });
const weatherFormat = zodResponseFormat(Weather, 'weather');
const PARIS = { city: 'Paris', temperature_c: 21.5, conditions: ['sunny', 'dry'] };

beforeAll(async () => {
  mock = await mockAnthropic();
  gateway = await gatewayFor(mock.url);
  client = new OpenAI({ apiKey: GATEWAY_KEY, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
});

afterAll(async () => {
  await gateway.close();
  await mock.close();
});

/** A chat completion answer as JSON, success or error, read loosely. */
interface Answer {
  error?: { code: string; param: string | null; message: string };
  choices?: { message: { content: string | null } }[];
}

/** Posts a raw chat completion body (fields the SDK types do not know pass as they are). */
async function post(body: Record<string, unknown>) {
  const response = await fetch(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${GATEWAY_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'Hi' }], ...body }),
  });
  return { status: response.status, headers: response.headers, json: (await response.json()) as Answer };
}

/** Sends `body`, expects a 400 with `code` and `param`, and no upstream call. */
async function refused(body: Record<string, unknown>, code: string, param: string) {
  const before = mock.requests.length;
  const { status, json } = await post(body);
  expect({ status, code: json.error?.code, param: json.error?.param }).toEqual({ status: 400, code, param });
  expect(mock.requests.length).toBe(before);
  return json.error?.message ?? '';
}

/** An Anthropic stream whose only block is a tool_use whose input arrives in `pieces`. */
function toolStream(name: string, pieces: string[]): [string, unknown][] {
  return [
    [
      'message_start',
      {
        type: 'message_start',
        message: {
          id: 'msg_01JSON',
          type: 'message',
          role: 'assistant',
          content: [],
          model: RELEASE,
          stop_reason: null,
          usage: { input_tokens: 30, output_tokens: 1 },
        },
      },
    ],
    [
      'content_block_start',
      { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'toolu_J', name, input: {} } },
    ],
    ...pieces.map((partial_json): [string, unknown] => [
      'content_block_delta',
      { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json } },
    ]),
    ['content_block_stop', { type: 'content_block_stop', index: 0 }],
    [
      'message_delta',
      { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 20 } },
    ],
    ['message_stop', { type: 'message_stop' }],
  ];
}

describe('response_format (openai SDK parse with a zod schema)', () => {
  it('forces one tool whose input comes back as message.content, parsed, never as a tool call', async () => {
    mock.reply({
      json: message([{ type: 'tool_use', id: 'toolu_W', name: 'weather', input: PARIS }], {
        model: RELEASE,
        stop_reason: 'tool_use',
      }),
    });
    const { data, response } = await client.chat.completions
      .parse({
        model: MODEL,
        max_completion_tokens: 500,
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
        response_format: weatherFormat,
      })
      .withResponse();
    const choice = data.choices[0];
    expect(choice?.message.parsed).toEqual(PARIS);
    expect(JSON.parse(choice?.message.content ?? '')).toEqual(PARIS);
    expect(choice?.message.tool_calls ?? []).toEqual([]);
    expect(choice?.finish_reason).toBe('stop');
    expect(data.model).toBe(RELEASE);
    // zod's schemas are strict; the gateway forwards the schema but does not constrain decoding.
    expect(response.headers.get('x-gateway-ignored-params')).toBe('response_format.json_schema.strict');
    expect(mock.last().json).toEqual({
      model: 'claude-sonnet-4-5',
      max_tokens: 500,
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools: [
        {
          name: 'weather',
          description: 'Give the complete answer as the input of this tool, following its schema.',
          input_schema: weatherFormat.json_schema.schema,
        },
      ],
      tool_choice: { type: 'tool', name: 'weather' },
    });
  });

  it('streams the forced tool input as delta.content pieces, each chunk naming the reported model', async () => {
    mock.reply({
      sse: toolStream('weather', [
        '',
        '{"city": "Par',
        'is", "temperature_c": 21.5, ',
        '"conditions": ["sunny", "dry"]}',
      ]),
    });
    const stream = client.chat.completions.stream({
      model: MODEL,
      max_tokens: 500,
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      response_format: weatherFormat,
      stream_options: { include_usage: true },
    });
    const pieces: string[] = [];
    const models = new Set<string>();
    let toolCallChunks = 0;
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      models.add(chunk.model);
      const choice = chunk.choices[0];
      if (choice?.delta.content) pieces.push(choice.delta.content);
      if (choice?.delta.tool_calls) toolCallChunks++;
      if (choice?.finish_reason) finish = choice.finish_reason;
    }
    expect(pieces).toEqual(['{"city": "Par', 'is", "temperature_c": 21.5, ', '"conditions": ["sunny", "dry"]}']);
    expect(toolCallChunks).toBe(0);
    expect(finish).toBe('stop');
    expect([...models]).toEqual([RELEASE]);
    const final = await stream.finalChatCompletion();
    expect(final.choices[0]?.message.parsed).toEqual(PARIS);
    expect(mock.last().json).toMatchObject({ stream: true, tool_choice: { type: 'tool', name: 'weather' } });
  });

  it('answers json_object with a JSON object in content, and takes text as no format at all', async () => {
    mock.reply(
      {
        json: message([{ type: 'tool_use', id: 'toolu_O', name: 'json_response', input: { ok: true } }], {
          stop_reason: 'tool_use',
        }),
      },
      { json: message([{ type: 'text', text: 'plain' }]) },
    );
    const json = await client.chat.completions.create({
      model: MODEL,
      max_tokens: 50,
      messages: [{ role: 'user', content: 'Answer in JSON.' }],
      response_format: { type: 'json_object' },
    });
    expect(json.choices[0]?.message.content).toBe('{"ok":true}');
    expect(json.choices[0]?.message.tool_calls).toBeUndefined();
    expect(json.choices[0]?.finish_reason).toBe('stop');
    expect(mock.last().json.tools).toEqual([
      {
        name: 'json_response',
        description: 'Give the complete answer as a JSON object: the input of this tool.',
        input_schema: { type: 'object' },
      },
    ]);
    const { data, response } = await client.chat.completions
      .create({
        model: MODEL,
        max_tokens: 50,
        messages: [{ role: 'user', content: 'Hi' }],
        response_format: { type: 'text' },
      })
      .withResponse();
    expect(data.choices[0]?.message.content).toBe('plain');
    expect(mock.last().json).toEqual({
      model: 'claude-sonnet-4-5',
      max_tokens: 50,
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(response.headers.get('x-gateway-ignored-params')).toBeNull();
  });

  it('keeps a user tool call a tool call next to response_format when tool_choice is none', async () => {
    mock.reply({
      json: message([{ type: 'tool_use', id: 'toolu_W', name: 'weather', input: PARIS }], { stop_reason: 'tool_use' }),
    });
    const tool = { type: 'function' as const, function: { name: 'lookup', parameters: { type: 'object' } } };
    const { json } = await post({
      max_tokens: 100,
      tools: [tool],
      tool_choice: 'none',
      response_format: weatherFormat,
    });
    expect(json.choices?.[0]?.message.content).toBe(JSON.stringify(PARIS));
    expect((mock.last().json.tools as { name: string }[]).map((t) => t.name)).toEqual(['lookup', 'weather']);
    expect(mock.last().json.tool_choice).toEqual({ type: 'tool', name: 'weather' });
  });

  it('refuses formats Anthropic cannot give with 400 unsupported_response_format, before any upstream call', async () => {
    const arraySchema = { type: 'json_schema', json_schema: { name: 'list', schema: { type: 'array' } } };
    await refused(
      { max_tokens: 50, response_format: arraySchema },
      'unsupported_response_format',
      'response_format.json_schema.schema',
    );
    await refused(
      {
        max_tokens: 50,
        response_format: weatherFormat,
        tools: [{ type: 'function', function: { name: 'lookup' } }],
      },
      'unsupported_response_format',
      'response_format',
    );
    await refused(
      { max_tokens: 5000, reasoning_effort: 'low', response_format: { type: 'json_object' } },
      'unsupported_response_format',
      'response_format',
    );
    await refused(
      {
        max_tokens: 50,
        response_format: weatherFormat,
        tools: [{ type: 'function', function: { name: 'weather' } }],
        tool_choice: 'none',
      },
      'unsupported_response_format',
      'response_format.json_schema.name',
    );
    await refused(
      { max_tokens: 50, response_format: { type: 'grammar' } },
      'unsupported_response_format',
      'response_format',
    );
  });
});

describe('reasoning_effort', () => {
  it.each([
    ['low', 8000, { type: 'enabled', budget_tokens: 1024 }],
    ['medium', 8000, { type: 'enabled', budget_tokens: 4096 }],
    ['high', 32000, { type: 'enabled', budget_tokens: 16384 }],
    ['high', 5000, { type: 'enabled', budget_tokens: 4999 }],
    ['medium', 1025, { type: 'enabled', budget_tokens: 1024 }],
    ['minimal', 8000, undefined],
    ['none', 8000, undefined],
  ])('maps %s with max_tokens %d to thinking %j', async (effort, maxTokens, thinking) => {
    mock.reply({ json: message([{ type: 'text', text: 'ok' }]) });
    const completion = await client.chat.completions.create({
      model: MODEL,
      max_completion_tokens: maxTokens,
      reasoning_effort: effort as 'low',
      messages: [{ role: 'user', content: 'Think.' }],
    });
    expect(completion.choices[0]?.message.content).toBe('ok');
    expect(mock.last().json.thinking).toEqual(thinking);
    expect(mock.last().json.max_tokens).toBe(maxTokens);
  });

  it('refuses an effort whose budget cannot fit under max_tokens, and unknown efforts', async () => {
    const text = await refused({ max_tokens: 1024, reasoning_effort: 'low' }, 'unsupported_value', 'reasoning_effort');
    expect(text).toContain('max_tokens');
    await refused({ max_tokens: 4000, reasoning_effort: 'extreme' }, 'unsupported_value', 'reasoning_effort');
  });

  it('lets an explicit thinking object win, naming reasoning_effort as ignored', async () => {
    mock.reply({ json: message([{ type: 'text', text: 'ok' }]) });
    const { headers } = await post({
      max_tokens: 8000,
      reasoning_effort: 'high',
      thinking: { type: 'enabled', budget_tokens: 2000 },
    });
    expect(mock.last().json.thinking).toEqual({ type: 'enabled', budget_tokens: 2000 });
    expect(headers.get('x-gateway-ignored-params')).toBe('reasoning_effort');
  });

  it('refuses sampling and forced tools Anthropic does not take while thinking', async () => {
    await refused({ max_tokens: 8000, reasoning_effort: 'low', temperature: 0.3 }, 'unsupported_value', 'temperature');
    await refused({ max_tokens: 8000, reasoning_effort: 'low', top_p: 0.5 }, 'unsupported_value', 'top_p');
    await refused({ max_tokens: 8000, reasoning_effort: 'low', top_k: 5 }, 'unsupported_value', 'top_k');
    await refused(
      {
        max_tokens: 8000,
        reasoning_effort: 'low',
        tools: [{ type: 'function', function: { name: 'lookup' } }],
        tool_choice: 'required',
      },
      'unsupported_value',
      'tool_choice',
    );
    mock.reply({ json: message([{ type: 'text', text: 'ok' }]) });
    await post({ max_tokens: 8000, reasoning_effort: 'low', temperature: 1 });
    expect(mock.last().json).toMatchObject({ temperature: 1, thinking: { type: 'enabled', budget_tokens: 1024 } });
  });
});

describe('sampling and fields without an Anthropic meaning', () => {
  it('refuses temperature above 1 with 400 unsupported_value instead of passing on an upstream 400', async () => {
    const text = await refused({ max_tokens: 10, temperature: 1.5 }, 'unsupported_value', 'temperature');
    expect(text).toContain('0 to 1');
    await refused({ max_tokens: 10, temperature: 2.5 }, 'invalid_request', 'temperature');
  });

  it('sends temperature without top_p, and names every dropped field in x-gateway-ignored-params', async () => {
    mock.reply({ json: message([{ type: 'text', text: 'ok' }]) });
    const { data, response } = await client.chat.completions
      .create({
        model: MODEL,
        max_tokens: 100,
        temperature: 0.7,
        top_p: 0.9,
        presence_penalty: 0.5,
        frequency_penalty: 0.2,
        seed: 42,
        logprobs: true,
        top_logprobs: 2,
        logit_bias: { '50256': -100 },
        service_tier: 'auto',
        store: true,
        metadata: { app: 'test' },
        n: 1,
        messages: [
          { role: 'user', content: 'Hi', name: 'ann' },
          { role: 'assistant', content: 'Hello' },
          { role: 'user', content: 'Hi', name: 'bob' },
        ],
      })
      .withResponse();
    expect(data.choices[0]?.message.content).toBe('ok');
    expect(response.headers.get('x-gateway-ignored-params')?.split(', ').sort()).toEqual(
      [
        'frequency_penalty',
        'logit_bias',
        'logprobs',
        'messages[].name',
        'metadata',
        'presence_penalty',
        'seed',
        'service_tier',
        'store',
        'top_logprobs',
        'top_p',
      ].sort(),
    );
    expect(mock.last().json).toEqual({
      model: 'claude-sonnet-4-5',
      max_tokens: 100,
      temperature: 0.7,
      messages: [
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: [{ type: 'text', text: 'Hello' }] },
        { role: 'user', content: 'Hi' },
      ],
    });
  });

  it('refuses n > 1, blank stop sequences, audio output and legacy functions; passes any number of stop sequences', async () => {
    await refused({ max_tokens: 10, n: 2 }, 'invalid_request', 'n');
    await refused({ max_tokens: 10, stop: ['END', '\n'] }, 'unsupported_value', 'stop');
    await refused({ max_tokens: 10, stop: '' }, 'unsupported_value', 'stop');
    await refused({ max_tokens: 10, modalities: ['text', 'audio'] }, 'unsupported_value', 'modalities');
    await refused({ max_tokens: 10, audio: { voice: 'alloy', format: 'mp3' } }, 'unsupported_parameter', 'audio');
    await refused({ max_tokens: 10, functions: [{ name: 'f' }] }, 'unsupported_parameter', 'functions');
    mock.reply({ json: message([{ type: 'text', text: 'ok' }]) });
    await post({ max_tokens: 10, stop: ['a', 'b', 'c', 'd', 'e'], modalities: ['text'] });
    expect(mock.last().json.stop_sequences).toEqual(['a', 'b', 'c', 'd', 'e']);
  });

  it('takes max_completion_tokens over the deprecated max_tokens when both are sent', async () => {
    mock.reply({ json: message([{ type: 'text', text: 'ok' }]) });
    const { headers } = await post({ max_tokens: 100, max_completion_tokens: 300 });
    expect(mock.last().json.max_tokens).toBe(300);
    expect(headers.get('x-gateway-ignored-params')).toBe('max_tokens');
  });
});

describe('the model in responses', () => {
  it('names the model the provider reports, not the requested alias with its @slug/ prefix', async () => {
    mock.reply({ json: message([{ type: 'text', text: 'ok' }], { model: RELEASE }) });
    const completion = await client.chat.completions.create({
      model: MODEL,
      max_tokens: 10,
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(completion.model).toBe(RELEASE);
    expect(mock.last().json.model).toBe('claude-sonnet-4-5');
  });

  it('names it in every stream chunk, usage chunk included', async () => {
    mock.reply({
      sse: [
        [
          'message_start',
          {
            type: 'message_start',
            message: { id: 'msg_M', model: RELEASE, content: [], usage: { input_tokens: 3, output_tokens: 1 } },
          },
        ],
        ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
        ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hel' } }],
        ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'lo' } }],
        ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 2 } }],
        ['message_stop', { type: 'message_stop' }],
      ],
    });
    const stream = await client.chat.completions.create({
      model: MODEL,
      max_tokens: 10,
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'Hi' }],
    });
    const models: string[] = [];
    let text = '';
    for await (const chunk of stream) {
      models.push(chunk.model);
      text += chunk.choices[0]?.delta.content ?? '';
    }
    expect(text).toBe('Hello');
    expect(models.length).toBe(5);
    expect(new Set(models)).toEqual(new Set([RELEASE]));
  });
});

describe('history the provider would refuse', () => {
  it('forwards tool call arguments that are not a JSON object as {"_raw_arguments": …}', async () => {
    mock.reply({ json: message([{ type: 'text', text: 'ok' }]) });
    await client.chat.completions.create({
      model: MODEL,
      max_tokens: 10,
      messages: [
        { role: 'user', content: 'Look it up.' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"q": "par' } },
            { id: 'call_2', type: 'function', function: { name: 'lookup', arguments: '[1, 2]' } },
            { id: 'call_3', type: 'function', function: { name: 'lookup', arguments: '{"q":"ok"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'r1' },
        { role: 'tool', tool_call_id: 'call_2', content: 'r2' },
        { role: 'tool', tool_call_id: 'call_3', content: 'r3' },
      ],
    });
    const assistant = (mock.last().json.messages as { content: unknown }[])[1];
    expect(assistant?.content).toEqual([
      { type: 'tool_use', id: 'call_1', name: 'lookup', input: { _raw_arguments: '{"q": "par' } },
      { type: 'tool_use', id: 'call_2', name: 'lookup', input: { _raw_arguments: '[1, 2]' } },
      { type: 'tool_use', id: 'call_3', name: 'lookup', input: { q: 'ok' } },
    ]);
  });

  it('refuses images by https URL, says to send a base64 data URL, and never fetches the URL', async () => {
    let fetched = 0;
    const images: Server = createServer((_req, res) => {
      fetched++;
      res.writeHead(200, { 'content-type': 'image/png' }).end();
    });
    await new Promise<void>((resolve) => images.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(images.address() as AddressInfo).port}/a.png`;
      for (const imageUrl of [url, 'https://example.com/cat.png']) {
        const text = await refused(
          {
            max_tokens: 10,
            messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: imageUrl } }] }],
          },
          'image_url_not_supported',
          'messages[0].content[0].image_url.url',
        );
        expect(text).toContain('base64 data URL');
        expect(text).toContain('never fetches');
      }
      expect(fetched).toBe(0);
    } finally {
      images.closeAllConnections();
      await new Promise<void>((resolve) => images.close(() => resolve()));
    }
  });
});

describe('the response_format tool with strict compliance off', () => {
  it('shows its JSON as a text content block, streaming and not, and never as a tool call', () => {
    const answer = toChatCompletion(
      message([{ type: 'tool_use', id: 't', name: 'weather', input: PARIS }], { stop_reason: 'tool_use' }),
      { strict: false, model: 'claude-sonnet-4-5', jsonTool: 'weather' },
    ) as { choices: { message: Record<string, unknown>; finish_reason: string }[] };
    expect(answer.choices[0]?.message).toEqual({
      role: 'assistant',
      content: JSON.stringify(PARIS),
      refusal: null,
      content_blocks: [{ type: 'text', text: JSON.stringify(PARIS) }],
    });
    expect(answer.choices[0]?.finish_reason).toBe('stop');
    const translator = new ChatStreamTranslator({
      strict: false,
      includeUsage: false,
      model: 'm',
      jsonTool: 'weather',
    });
    const frames = toolStream('weather', ['{"a":', '1}'])
      .map(([event, data]) => translator.push(event, JSON.stringify(data)))
      .join('')
      .split('\n\n')
      .filter((frame) => frame !== '' && frame !== 'data: [DONE]')
      .map((frame) => JSON.parse(frame.slice('data: '.length)) as { model: string; choices: { delta: unknown }[] });
    expect(frames.map((frame) => frame.choices[0]?.delta)).toEqual([
      { role: 'assistant', content: '' },
      { content: '{"a":', content_blocks: [{ index: 0, delta: { type: 'text', text: '{"a":' } }] },
      { content: '1}', content_blocks: [{ index: 0, delta: { type: 'text', text: '1}' } }] },
      {},
    ]);
    expect(new Set(frames.map((frame) => frame.model))).toEqual(new Set([RELEASE]));
  });
});

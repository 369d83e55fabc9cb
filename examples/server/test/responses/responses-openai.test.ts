import OpenAI from 'openai';
import { newEncryptionKey } from '../catalog/catalog-support';
import { startGateway, writeConfig, type RunningGateway } from '../support';
import { events, message, RELEASE, startAnthropicScript, type AnthropicScript } from './responses-support';

// The Responses API through the whole gateway (dist/main.js, embedded catalog database) with the
// real openai SDK, against an Anthropic double that streams one event per chunk.

jest.setTimeout(120_000);

const KEY_A = 'gw-responses-key-A-0123456789abcdefAAAA';
const KEY_B = 'gw-responses-key-B-0123456789abcdefBBBB';
const MODEL = '@claude/claude-sonnet-4-5';
/** Signatures as Anthropic writes them: base64 with `+`, `/` and `=`, plus characters JSON escapes. */
const SIG_1 = 'EqQBCkYIBxgCKkA+/sig==\u2028"one"\\';
const SIG_2 = 'ErUBCkYIBxgCKkB+/sig==\u00e9"two"';

let anthropic: AnthropicScript;
let gateway: RunningGateway;
let alice: OpenAI;
let bob: OpenAI;

beforeAll(async () => {
  anthropic = await startAnthropicScript();
  gateway = await startGateway({
    GATEWAY_CONFIG: writeConfig({
      auth: {
        apiKeys: [
          { key: KEY_A, user: { user_id: 'u_alice' } },
          { key: KEY_B, user: { user_id: 'u_bob' } },
        ],
      },
      providers: [{ slug: 'claude', provider: 'anthropic', apiKey: 'sk-ant-responses-secret', baseUrl: anthropic.url }],
    }),
    GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
  });
  alice = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY_A, maxRetries: 0 });
  bob = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY_B, maxRetries: 0 });
});

afterAll(async () => {
  await gateway?.stop();
  await anthropic?.close();
});

const last = () => anthropic.received.at(-1)!.json;

const WEATHER_TOOL = {
  type: 'function' as const,
  name: 'weather',
  description: 'Weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  strict: false,
};

describe('POST /v1/responses with the openai SDK', () => {
  it('responses.create converts instructions, input and max_output_tokens and answers with the provider model and usage', async () => {
    anthropic.reply({ json: message([{ type: 'text', text: 'Bonjour' }]) });
    const response = await alice.responses.create({
      model: MODEL,
      instructions: 'Answer in French.',
      input: 'Say hello.',
      max_output_tokens: 100,
      temperature: 0.5,
    });
    expect(response.object).toBe('response');
    expect(response.id).toMatch(/^resp_[0-9a-f]{32}$/);
    expect(response.status).toBe('completed');
    expect(response.model).toBe(RELEASE);
    expect(response.output_text).toBe('Bonjour');
    expect(response.output[0]).toMatchObject({
      type: 'message',
      role: 'assistant',
      content: [{ type: 'output_text', text: 'Bonjour' }],
    });
    expect(response.usage).toMatchObject({
      input_tokens: 17,
      input_tokens_details: { cached_tokens: 3 },
      output_tokens: 7,
      total_tokens: 24,
    });
    expect(last()).toEqual({
      model: 'claude-sonnet-4-5',
      max_tokens: 100,
      system: [{ type: 'text', text: 'Answer in French.' }],
      messages: [{ role: 'user', content: 'Say hello.' }],
      temperature: 0.5,
    });
  });

  it('answers incomplete with reason max_output_tokens when the provider stops at max_tokens', async () => {
    anthropic.reply({ json: message([{ type: 'text', text: 'Bon' }], { stop_reason: 'max_tokens' }) });
    const response = await alice.responses.create({ model: MODEL, input: 'Say hello.', max_output_tokens: 1 });
    expect(response.status).toBe('incomplete');
    expect(response.incomplete_details).toEqual({ reason: 'max_output_tokens' });
  });

  it('responses.stream gets each event as its upstream event arrives, with increasing sequence numbers', async () => {
    anthropic.reply({ events: events([{ type: 'text', text: ['Bon', 'jour'] }]), holdBefore: 4 });
    const stream = alice.responses.stream({ model: MODEL, input: 'Say hello.', max_output_tokens: 50 });
    const seen: { type: string; sequence_number: number }[] = [];
    for await (const event of stream) {
      seen.push(event);
      // The provider holds its last events until the first text delta reached the client.
      if (event.type === 'response.output_text.delta' && event.delta === 'Bon') anthropic.release();
    }
    const final = await stream.finalResponse();
    expect(final.output_text).toBe('Bonjour');
    expect(final.status).toBe('completed');
    expect(seen.map((e) => e.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(seen.map((e) => e.sequence_number)).toEqual(seen.map((_e, i) => i));
    expect(last().stream).toBe(true);
  });

  it('streams tool calls as function_call items with argument deltas', async () => {
    anthropic.reply({
      events: events([{ type: 'tool_use', id: 'toolu_S1', name: 'weather', input: { city: 'Paris' } }], 'tool_use'),
    });
    const stream = alice.responses.stream({
      model: MODEL,
      input: 'Weather?',
      tools: [WEATHER_TOOL],
      max_output_tokens: 50,
    });
    const deltas: string[] = [];
    stream.on('response.function_call_arguments.delta', (event) => deltas.push(event.delta));
    const final = await stream.finalResponse();
    expect(deltas.join('')).toBe('{"city":"Paris"}');
    expect(final.output[0]).toMatchObject({
      type: 'function_call',
      call_id: 'toolu_S1',
      name: 'weather',
      arguments: '{"city":"Paris"}',
    });
    expect(last().tools).toEqual([
      { name: 'weather', description: 'Weather in a city', input_schema: WEATHER_TOOL.parameters },
    ]);
  });

  it('turns an upstream error mid-stream into an error event, so the SDK raises', async () => {
    const all = events([{ type: 'text', text: ['half'] }]);
    anthropic.reply({
      events: [
        ...all.slice(0, 3),
        ['error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }],
      ],
    });
    const stream = alice.responses.stream({ model: MODEL, input: 'Say hello.', max_output_tokens: 50 });
    await expect(stream.finalResponse()).rejects.toThrow(/Overloaded/);
  });

  it('retrieve and delete work for the caller who made the response; another caller and unknown ids get 404 response_not_found', async () => {
    anthropic.reply({ json: message([{ type: 'text', text: 'kept' }]) });
    const created = await alice.responses.create({ model: MODEL, input: 'keep this', max_output_tokens: 20 });
    const read = await alice.responses.retrieve(created.id);
    expect(read.id).toBe(created.id);
    expect(read.output_text).toBe('kept');
    for (const attempt of [() => bob.responses.retrieve(created.id), () => bob.responses.delete(created.id)]) {
      await expect(attempt()).rejects.toMatchObject({ status: 404, code: 'response_not_found' });
    }
    await expect(alice.responses.retrieve('resp_00000000000000000000000000000000')).rejects.toMatchObject({
      status: 404,
      code: 'response_not_found',
    });
    await alice.responses.delete(created.id);
    await expect(alice.responses.retrieve(created.id)).rejects.toMatchObject({
      status: 404,
      code: 'response_not_found',
    });
    // store: false keeps nothing.
    anthropic.reply({ json: message([{ type: 'text', text: 'gone' }]) });
    const unstored = await alice.responses.create({ model: MODEL, input: 'x', store: false, max_output_tokens: 20 });
    await expect(alice.responses.retrieve(unstored.id)).rejects.toMatchObject({ status: 404 });
  });

  it('lists a stored response input items in OpenAI list shape, paged, for its caller only', async () => {
    anthropic.reply(
      { json: message([{ type: 'text', text: 'first answer' }]) },
      { json: message([{ type: 'text', text: 'second answer' }]) },
    );
    const first = await alice.responses.create({ model: MODEL, input: 'first question', max_output_tokens: 20 });
    const second = await alice.responses.create({
      model: MODEL,
      previous_response_id: first.id,
      input: [
        { role: 'user', content: 'second question' },
        { role: 'user', content: [{ type: 'input_text', text: 'and more' }] },
      ],
      max_output_tokens: 20,
    });
    // Every page of two, newest first: the SDK follows has_more and last_id.
    const listed: { id: string; type: string; role?: string; content?: unknown }[] = [];
    for await (const item of alice.responses.inputItems.list(second.id, { limit: 2 })) listed.push(item as never);
    expect(listed.map((item) => item.content)).toEqual([
      [{ type: 'input_text', text: 'and more' }],
      [{ type: 'input_text', text: 'second question' }],
      [{ type: 'output_text', text: 'first answer', annotations: [], logprobs: [] }],
      [{ type: 'input_text', text: 'first question' }],
    ]);
    expect(new Set(listed.map((item) => item.id)).size).toBe(4);
    const page = await alice.responses.inputItems.list(first.id, { order: 'asc' });
    expect(page.data).toMatchObject([
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'first question' }] },
    ]);
    expect(page.has_more).toBe(false);
    await expect(bob.responses.inputItems.list(second.id)).rejects.toMatchObject({
      status: 404,
      code: 'response_not_found',
    });
    await expect(alice.responses.inputItems.list(second.id, { limit: 101 })).rejects.toMatchObject({
      status: 400,
      param: 'limit',
    });
  });

  it('refuses built-in tools and background mode with 400 unsupported_value', async () => {
    const before = anthropic.received.length;
    await expect(
      alice.responses.create({
        model: MODEL,
        input: 'news?',
        tools: [{ type: 'web_search_preview' }],
        max_output_tokens: 20,
      }),
    ).rejects.toMatchObject({ status: 400, code: 'unsupported_value', param: 'tools[0].type' });
    await expect(
      alice.responses.create({ model: MODEL, input: 'x', background: true, max_output_tokens: 20 }),
    ).rejects.toMatchObject({ status: 400, code: 'unsupported_value', param: 'background' });
    expect(anthropic.received.length).toBe(before);
  });

  it('names Responses fields in errors of the shared conversion (images, max_output_tokens)', async () => {
    await expect(
      alice.responses.create({
        model: MODEL,
        input: [
          { role: 'user', content: [{ type: 'input_image', image_url: 'https://example.com/a.png', detail: 'auto' }] },
        ],
        max_output_tokens: 20,
      }),
    ).rejects.toMatchObject({ status: 400, code: 'image_url_not_supported', param: 'input[0].content[0].image_url' });
    await expect(alice.responses.create({ model: MODEL, input: 'x' })).rejects.toMatchObject({
      status: 400,
      code: 'max_tokens_required',
      param: 'max_output_tokens',
    });
  });
});

/** The three answers of a tool conversation with thinking: two tool calls, each after thinking, then text. */
function thinkingToolAnswers() {
  anthropic.reply(
    {
      json: message(
        [
          { type: 'thinking', thinking: 'I need the weather.', signature: SIG_1 },
          { type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Paris' } },
        ],
        { stop_reason: 'tool_use' },
      ),
    },
    {
      events: events(
        [
          { type: 'thinking', thinking: 'Now Lyon.', signature: SIG_2 },
          { type: 'tool_use', id: 'toolu_2', name: 'weather', input: { city: 'Lyon' } },
        ],
        'tool_use',
      ),
    },
    { json: message([{ type: 'text', text: 'Sunny in both.' }]) },
  );
}

const THINKING_1 = { type: 'thinking', thinking: 'I need the weather.', signature: SIG_1 };
const THINKING_2 = { type: 'thinking', thinking: 'Now Lyon.', signature: SIG_2 };

/** The third turn's upstream messages: both earlier assistant turns with their thinking first, byte for byte. */
function expectThirdTurn() {
  const third = anthropic.received.at(-1)!;
  expect(third.json.messages).toEqual([
    { role: 'user', content: 'Weather in Paris and Lyon?' },
    {
      role: 'assistant',
      content: [THINKING_1, { type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Paris' } }],
    },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'sunny' }] },
    {
      role: 'assistant',
      content: [THINKING_2, { type: 'tool_use', id: 'toolu_2', name: 'weather', input: { city: 'Lyon' } }],
    },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_2', content: 'sunny too' }] },
  ]);
  // Byte for byte: the signatures as the provider wrote them in JSON.
  expect(third.body).toContain(JSON.stringify(SIG_1));
  expect(third.body).toContain(JSON.stringify(SIG_2));
  expect(third.json.thinking).toEqual({ type: 'enabled', budget_tokens: 4096 });
}

const BASE = {
  model: MODEL,
  tools: [WEATHER_TOOL],
  reasoning: { effort: 'medium' as const },
  max_output_tokens: 8000,
};

describe('multi-turn with tools and thinking', () => {
  it('stored: previous_response_id brings the earlier thinking blocks back with their signatures', async () => {
    thinkingToolAnswers();
    const first = await alice.responses.create({ ...BASE, input: 'Weather in Paris and Lyon?' });
    expect(first.output.map((i) => i.type)).toEqual(['reasoning', 'function_call']);
    // Without include, no encrypted_content reaches the client.
    expect(first.output[0]).not.toHaveProperty('encrypted_content');
    const call1 = first.output[1] as { call_id: string };
    const secondStream = alice.responses.stream({
      ...BASE,
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: call1.call_id, output: 'sunny' }],
    });
    const second = await secondStream.finalResponse();
    const call2 = second.output.find((i) => i.type === 'function_call') as { call_id: string };
    expect(call2.call_id).toBe('toolu_2');
    const third = await alice.responses.create({
      ...BASE,
      previous_response_id: second.id,
      input: [{ type: 'function_call_output', call_id: call2.call_id, output: 'sunny too' }],
    });
    expect(third.output_text).toBe('Sunny in both.');
    expectThirdTurn();
    // Another caller cannot continue alice's conversation.
    await expect(bob.responses.create({ ...BASE, previous_response_id: second.id, input: 'hi' })).rejects.toMatchObject(
      { status: 404, code: 'response_not_found', param: 'previous_response_id' },
    );
  });

  it('stateless: encrypted_content carries the thinking and its signature to later turns', async () => {
    thinkingToolAnswers();
    const stateless = { ...BASE, store: false, include: ['reasoning.encrypted_content' as const] };
    const input1 = [{ role: 'user' as const, content: 'Weather in Paris and Lyon?' }];
    const first = await alice.responses.create({ ...stateless, input: input1 });
    const reasoning = first.output[0] as { encrypted_content?: string; summary: unknown[] };
    expect(reasoning.encrypted_content).toMatch(/^gwr1\./);
    // The sealed thinking is not readable: neither the thinking nor the signature appears in it.
    expect(reasoning.encrypted_content).not.toContain('weather');
    const call1 = first.output[1] as { call_id: string };
    const input2 = [
      ...input1,
      ...first.output,
      { type: 'function_call_output' as const, call_id: call1.call_id, output: 'sunny' },
    ];
    const second = await alice.responses.stream({ ...stateless, input: input2 as never }).finalResponse();
    const call2 = second.output.find((i) => i.type === 'function_call') as { call_id: string };
    const input3 = [
      ...input2,
      ...second.output,
      { type: 'function_call_output' as const, call_id: call2.call_id, output: 'sunny too' },
    ];
    const third = await alice.responses.create({ ...stateless, input: input3 as never });
    expect(third.output_text).toBe('Sunny in both.');
    expectThirdTurn();
  });

  it('refuses a forged or altered encrypted_content, and one sealed for another caller, with 400 invalid_encrypted_content', async () => {
    anthropic.reply({
      json: message([
        { type: 'thinking', thinking: 'secret plan', signature: SIG_1 },
        { type: 'text', text: 'ok' },
      ]),
    });
    const stateless = { ...BASE, store: false, include: ['reasoning.encrypted_content' as const] };
    const first = await alice.responses.create({ ...stateless, input: 'think' });
    const reasoning = first.output[0] as { encrypted_content: string };
    const sealed = reasoning.encrypted_content;
    const altered = sealed.slice(0, -4) + (sealed.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    const forged =
      'gwr1.' +
      Buffer.from(JSON.stringify([{ type: 'thinking', thinking: 'x', signature: 'forged' }])).toString('base64url');
    const before = anthropic.received.length;
    for (const [client, content] of [
      [alice, altered],
      [alice, forged],
      [alice, 'opaque-openai-blob'],
      [bob, sealed],
    ] as const) {
      await expect(
        client.responses.create({
          ...stateless,
          input: [
            { role: 'user', content: 'think' },
            { ...reasoning, encrypted_content: content } as never,
            { role: 'user', content: 'again' },
          ],
        }),
      ).rejects.toMatchObject({ status: 400, code: 'invalid_encrypted_content', param: 'input[1].encrypted_content' });
    }
    expect(anthropic.received.length).toBe(before);
  });
});

describe('reasoning.summary', () => {
  const thinkingAnswer = () =>
    events([
      { type: 'thinking', thinking: 'Paris is the capital.', signature: SIG_1 },
      { type: 'text', text: 'Paris' },
    ]);
  const ask = {
    model: MODEL,
    input: 'Capital of France?',
    reasoning: { effort: 'low' as const },
    max_output_tokens: 4000,
  };

  it('fills the reasoning item summary with the thinking, streamed and not, only when the request asks for one', async () => {
    anthropic.reply({ events: thinkingAnswer() });
    const stream = alice.responses.stream({ ...ask, reasoning: { effort: 'low', summary: 'auto' } });
    const deltas: string[] = [];
    stream.on('response.reasoning_summary_text.delta', (event) => deltas.push(event.delta));
    const summarised = await stream.finalResponse();
    expect(deltas.join('')).toBe('Paris is the capital.');
    expect(summarised.output[0]).toMatchObject({
      type: 'reasoning',
      summary: [{ type: 'summary_text', text: 'Paris is the capital.' }],
    });
    expect(summarised.reasoning).toMatchObject({ summary: 'auto' });
    // The stored response is the one answered.
    expect((await alice.responses.retrieve(summarised.id)).output[0]).toEqual(summarised.output[0]);
    anthropic.reply({
      json: message([
        { type: 'thinking', thinking: 'Short.', signature: SIG_1 },
        { type: 'text', text: 'x' },
      ]),
    });
    const detailed = await alice.responses.create({ ...ask, reasoning: { effort: 'low', summary: 'detailed' } });
    expect(detailed.output[0]).toMatchObject({ summary: [{ type: 'summary_text', text: 'Short.' }] });

    // Not asked: the summary stays empty and no summary event is sent, as OpenAI does.
    anthropic.reply({ events: thinkingAnswer() });
    const quiet = alice.responses.stream(ask);
    const types: string[] = [];
    for await (const event of quiet) types.push(event.type);
    const plain = await quiet.finalResponse();
    expect(types.filter((type) => type.startsWith('response.reasoning_summary'))).toEqual([]);
    expect(plain.output[0]).toMatchObject({ type: 'reasoning', summary: [] });
    expect(JSON.stringify(plain)).not.toContain('Paris is the capital.');
    anthropic.reply({
      json: message([
        { type: 'thinking', thinking: 'Hidden.', signature: SIG_1 },
        { type: 'text', text: 'x' },
      ]),
    });
    const unstreamed = await alice.responses.create(ask);
    expect(unstreamed.output[0]).toMatchObject({ type: 'reasoning', summary: [] });
    expect(JSON.stringify(unstreamed)).not.toContain('Hidden.');
  });

  it('refuses a reasoning.summary OpenAI does not define with 400 unsupported_value', async () => {
    const before = anthropic.received.length;
    await expect(
      alice.responses.create({ ...ask, reasoning: { effort: 'low', summary: 'verbose' as never } }),
    ).rejects.toMatchObject({ status: 400, code: 'unsupported_value', param: 'reasoning.summary' });
    expect(anthropic.received.length).toBe(before);
  });
});

describe('one conversion core', () => {
  it('the same conversation through /v1/chat/completions and /v1/responses reaches the provider as the same request', async () => {
    const png = `data:image/png;base64,${Buffer.from('89504e470d0a1a0a', 'hex').toString('base64')}`;
    anthropic.reply({ json: message([{ type: 'text', text: 'a' }]) }, { json: message([{ type: 'text', text: 'b' }]) });
    const chat = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY_A}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: MODEL,
        max_completion_tokens: 300,
        temperature: 0.2,
        user: 'end-user-7',
        parallel_tool_calls: false,
        tool_choice: 'auto',
        tools: [
          {
            type: 'function',
            function: { name: 'weather', description: 'Weather in a city', parameters: WEATHER_TOOL.parameters },
          },
        ],
        stop: undefined,
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'developer', content: 'Use metric units.' },
          {
            role: 'user',
            content: [
              { type: 'text', text: 'What is this?' },
              { type: 'image_url', image_url: { url: png } },
            ],
          },
          {
            role: 'assistant',
            content: 'Let me check.',
            tool_calls: [
              { id: 'toolu_9', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } },
            ],
          },
          { role: 'tool', tool_call_id: 'toolu_9', content: 'cold' },
        ],
      }),
    });
    expect(chat.status).toBe(200);
    const viaChat = anthropic.received.at(-1)!.json;
    await alice.responses.create({
      model: MODEL,
      max_output_tokens: 300,
      temperature: 0.2,
      user: 'end-user-7',
      parallel_tool_calls: false,
      tool_choice: 'auto',
      tools: [WEATHER_TOOL],
      instructions: 'Be brief.',
      input: [
        { role: 'developer', content: 'Use metric units.' },
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'What is this?' },
            { type: 'input_image', image_url: png, detail: 'auto' },
          ],
        },
        {
          type: 'message',
          role: 'assistant',
          content: [{ type: 'output_text', text: 'Let me check.', annotations: [] }],
        } as never,
        { type: 'function_call', call_id: 'toolu_9', name: 'weather', arguments: '{"city":"Oslo"}' },
        { type: 'function_call_output', call_id: 'toolu_9', output: 'cold' },
      ],
    });
    const viaResponses = anthropic.received.at(-1)!.json;
    expect(viaResponses).toEqual(viaChat);
    expect(viaResponses.metadata).toEqual({ user_id: expect.stringMatching(/^[0-9a-f]{32}$/) });
  });
});

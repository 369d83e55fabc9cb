import { createOpenAI } from '@ai-sdk/openai';
import { ChatOpenAI } from '@langchain/openai';
import { generateObject, generateText, streamObject, streamText } from 'ai';
import { z } from 'zod';
import { GATEWAY_KEY, gatewayFor, message, mockAnthropic } from './support';

// The Vercel AI SDK (chat completions provider) and LangChain's ChatOpenAI, unmodified, through the
// gateway to the mock Anthropic API: structured output, reasoning effort and the reported model.

let mock: Awaited<ReturnType<typeof mockAnthropic>>;
let gateway: Awaited<ReturnType<typeof gatewayFor>>;
const MODEL = '@anthropic-test/claude-sonnet-4-5';
const RELEASE = 'claude-sonnet-4-5-20250929';
const Weather = z.object({ city: z.string(), temperature_c: z.number(), conditions: z.array(z.string()) });
const PARIS = { city: 'Paris', temperature_c: 21.5, conditions: ['sunny', 'dry'] };

beforeAll(async () => {
  mock = await mockAnthropic();
  gateway = await gatewayFor(mock.url);
});

afterAll(async () => {
  await gateway.close();
  await mock.close();
});

/** The provider's answer: `name`'s forced tool carrying PARIS. */
const forcedTool = (name: string) =>
  message([{ type: 'tool_use', id: 'toolu_F', name, input: PARIS }], { model: RELEASE, stop_reason: 'tool_use' });

const thinkingAnswer = () =>
  message(
    [
      { type: 'thinking', thinking: 'Hmm.', signature: 'sig' },
      { type: 'text', text: '42' },
    ],
    { model: RELEASE },
  );

const textStream = (): [string, unknown][] => [
  [
    'message_start',
    {
      type: 'message_start',
      message: { id: 'msg_S', model: RELEASE, content: [], usage: { input_tokens: 3, output_tokens: 1 } },
    },
  ],
  ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
  ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Bon' } }],
  ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'jour' } }],
  ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 2 } }],
  ['message_stop', { type: 'message_stop' }],
];

describe('Vercel AI SDK (createOpenAI().chat)', () => {
  const model = () => createOpenAI({ baseURL: `${gateway.url}/v1`, apiKey: GATEWAY_KEY }).chat(MODEL);

  it('generateObject gets the object from the forced tool, and the reported model', async () => {
    mock.reply({ json: forcedTool('response') });
    const result = await generateObject({
      model: model(),
      schema: Weather,
      prompt: 'Weather in Paris?',
      maxOutputTokens: 500,
      maxRetries: 0,
    });
    expect(result.object).toEqual(PARIS);
    expect(result.finishReason).toBe('stop');
    expect(result.response.modelId).toBe(RELEASE);
    const sent = mock.last().json;
    expect(sent.tool_choice).toEqual({ type: 'tool', name: 'response' });
    expect((sent.tools as { name: string; input_schema: { type: string } }[])[0]).toMatchObject({
      name: 'response',
      input_schema: { type: 'object' },
    });
    expect(sent.max_tokens).toBe(500);
  });

  it('streamObject builds the object from the streamed tool input', async () => {
    const pieces = ['{"city":"Par', 'is","temperature_c":21.5,', '"conditions":["sunny","dry"]}'];
    mock.reply({
      sse: [
        [
          'message_start',
          {
            type: 'message_start',
            message: { id: 'msg_O', model: RELEASE, content: [], usage: { input_tokens: 3, output_tokens: 1 } },
          },
        ],
        [
          'content_block_start',
          {
            type: 'content_block_start',
            index: 0,
            content_block: { type: 'tool_use', id: 'toolu_S', name: 'response', input: {} },
          },
        ],
        ...pieces.map((partial_json): [string, unknown] => [
          'content_block_delta',
          { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json } },
        ]),
        ['content_block_stop', { type: 'content_block_stop', index: 0 }],
        ['message_delta', { type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 9 } }],
        ['message_stop', { type: 'message_stop' }],
      ],
    });
    const result = streamObject({
      model: model(),
      schema: Weather,
      prompt: 'Weather in Paris?',
      maxOutputTokens: 500,
      maxRetries: 0,
    });
    const partials: unknown[] = [];
    for await (const partial of result.partialObjectStream) partials.push(partial);
    expect(partials.length).toBeGreaterThan(1);
    expect(await result.object).toEqual(PARIS);
    expect((await result.response).modelId).toBe(RELEASE);
    expect(mock.last().json).toMatchObject({ stream: true, tool_choice: { type: 'tool', name: 'response' } });
  });

  it('generateText with reasoningEffort sends extended thinking and returns the text', async () => {
    mock.reply({ json: thinkingAnswer() });
    const result = await generateText({
      model: model(),
      prompt: 'What is 6 × 7?',
      maxOutputTokens: 8000,
      maxRetries: 0,
      providerOptions: { openai: { reasoningEffort: 'medium' } },
    });
    expect(result.text).toBe('42');
    expect(mock.last().json.thinking).toEqual({ type: 'enabled', budget_tokens: 4096 });
    expect(result.response.modelId).toBe(RELEASE);
  });

  it('streamText streams the text and reports the provider model', async () => {
    mock.reply({ sse: textStream() });
    const result = streamText({ model: model(), prompt: 'Say hello in French.', maxOutputTokens: 20, maxRetries: 0 });
    let text = '';
    for await (const piece of result.textStream) text += piece;
    expect(text).toBe('Bonjour');
    expect((await result.response).modelId).toBe(RELEASE);
    expect(mock.last().json.stream).toBe(true);
  });
});

describe('LangChain ChatOpenAI', () => {
  const chat = (fields: Record<string, unknown> = {}) =>
    new ChatOpenAI({
      model: MODEL,
      apiKey: GATEWAY_KEY,
      configuration: { baseURL: `${gateway.url}/v1` },
      maxTokens: 500,
      maxRetries: 0,
      ...fields,
    });

  it('withStructuredOutput gets the parsed object from the forced tool', async () => {
    mock.reply({ json: forcedTool('weather') });
    const result = await chat().withStructuredOutput(Weather, { name: 'weather' }).invoke('Weather in Paris?');
    expect(result).toEqual(PARIS);
    expect(mock.last().json.tool_choice).toEqual({ type: 'tool', name: 'weather' });
  });

  it('reasoning effort becomes extended thinking; the reported model is in response_metadata', async () => {
    // ChatOpenAI sends `reasoning` only for OpenAI reasoning model names (o*, gpt-5): for Claude
    // models reasoning_effort goes in modelKwargs.
    mock.reply({ json: thinkingAnswer() });
    const answer = await chat({ maxTokens: 8000, modelKwargs: { reasoning_effort: 'low' } }).invoke('What is 6 × 7?');
    expect(answer.content).toBe('42');
    expect(mock.last().json.thinking).toEqual({ type: 'enabled', budget_tokens: 1024 });
    expect(answer.response_metadata.model_name).toBe(RELEASE);
  });

  it('streams with the reported model', async () => {
    mock.reply({ sse: textStream() });
    let text = '';
    const models = new Set<unknown>();
    for await (const chunk of await chat().stream('Say hello in French.')) {
      text += String(chunk.content);
      if (chunk.response_metadata.model_name !== undefined) models.add(chunk.response_metadata.model_name);
    }
    expect(text).toBe('Bonjour');
    expect([...models]).toEqual([RELEASE]);
  });
});

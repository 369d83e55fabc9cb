import { createOpenAI } from '@ai-sdk/openai';
import { generateObject, generateText, stepCountIs, streamText, tool } from 'ai';
import { z } from 'zod';
import { newEncryptionKey } from '../catalog/catalog-support';
import { startGateway, writeConfig, type RunningGateway } from '../support';
import { events, message, RELEASE, startAnthropicScript, type AnthropicScript } from './responses-support';

// The Vercel AI SDK's default OpenAI provider (`openai(modelId)`, which speaks /v1/responses)
// through the whole gateway to an Anthropic double that streams one event per chunk.

jest.setTimeout(120_000);

const KEY = 'gw-responses-aisdk-key-0123456789abcdef';
const MODEL = '@claude/claude-sonnet-4-5';
const SIGNATURE = 'EqQBCkYIBxgCKkA+/aisdk==';

let anthropic: AnthropicScript;
let gateway: RunningGateway;
let openai: ReturnType<typeof createOpenAI>;

beforeAll(async () => {
  anthropic = await startAnthropicScript();
  gateway = await startGateway({
    GATEWAY_CONFIG: writeConfig({
      auth: { apiKeys: [{ key: KEY, user: { user_id: 'u_aisdk' } }] },
      providers: [{ slug: 'claude', provider: 'anthropic', apiKey: 'sk-ant-aisdk-secret', baseUrl: anthropic.url }],
    }),
    GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
  });
  openai = createOpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY });
});

afterAll(async () => {
  await gateway?.stop();
  await anthropic?.close();
});

const PARIS = { city: 'Paris', temperature_c: 21.5 };

describe('Vercel AI SDK default provider openai(modelId) over /v1/responses', () => {
  it('generateText returns the text and the provider model', async () => {
    anthropic.reply({ json: message([{ type: 'text', text: 'Bonjour' }]) });
    const result = await generateText({
      model: openai(MODEL),
      prompt: 'Say hello.',
      maxOutputTokens: 50,
      maxRetries: 0,
    });
    expect(result.text).toBe('Bonjour');
    expect(result.response.modelId).toBe(RELEASE);
    expect(result.usage.inputTokens).toBe(17);
    expect(anthropic.received.at(-1)!.json).toMatchObject({ max_tokens: 50, messages: [{ role: 'user' }] });
  });

  it('streamText streams the text pieces', async () => {
    anthropic.reply({ events: events([{ type: 'text', text: ['Bon', 'jour', '!'] }]) });
    const result = streamText({ model: openai(MODEL), prompt: 'Say hello.', maxOutputTokens: 50, maxRetries: 0 });
    const pieces: string[] = [];
    for await (const piece of result.textStream) pieces.push(piece);
    expect(pieces.join('')).toBe('Bonjour!');
    expect(pieces.length).toBeGreaterThan(1);
    expect(await result.finishReason).toBe('stop');
  });

  it('generateObject gets the object through text.format json_schema (a forced tool upstream)', async () => {
    anthropic.reply({
      json: message([{ type: 'tool_use', id: 'toolu_J', name: 'response', input: PARIS }], { stop_reason: 'tool_use' }),
    });
    const result = await generateObject({
      model: openai(MODEL),
      schema: z.object({ city: z.string(), temperature_c: z.number() }),
      prompt: 'Weather in Paris?',
      maxOutputTokens: 200,
      maxRetries: 0,
    });
    expect(result.object).toEqual(PARIS);
    expect(anthropic.received.at(-1)!.json.tool_choice).toEqual({ type: 'tool', name: 'response' });
  });

  it('gives the thinking as reasoning text when reasoningSummary is set, streamed and not, and none otherwise', async () => {
    const thinking = [
      { type: 'thinking', thinking: 'Greeting in French.', signature: SIGNATURE },
      { type: 'text', text: 'Bonjour' },
    ];
    const options = (reasoningSummary?: string) => ({
      model: openai(MODEL),
      prompt: 'Say hello.',
      maxOutputTokens: 4000,
      maxRetries: 0,
      providerOptions: {
        openai: { reasoningEffort: 'low', forceReasoning: true, ...(reasoningSummary ? { reasoningSummary } : {}) },
      },
    });
    anthropic.reply({ json: message(thinking) });
    expect((await generateText(options('auto'))).reasoningText).toBe('Greeting in French.');
    expect(anthropic.received.at(-1)!.json.thinking).toEqual({ type: 'enabled', budget_tokens: 1024 });
    anthropic.reply({ events: events(thinking) });
    expect(await streamText(options('detailed')).reasoningText).toBe('Greeting in French.');
    anthropic.reply({ json: message(thinking) });
    const unasked = await generateText(options());
    expect(unasked.text).toBe('Bonjour');
    expect(unasked.reasoningText ?? '').toBe('');
  });

  it('runs tool calls over several steps, the thinking of each step going back with its signature', async () => {
    anthropic.reply(
      {
        events: events(
          [
            { type: 'thinking', thinking: 'Need weather.', signature: SIGNATURE },
            { type: 'tool_use', id: 'toolu_A', name: 'weather', input: { city: 'Paris' } },
          ],
          'tool_use',
        ),
      },
      { events: events([{ type: 'text', text: ['It is ', 'sunny.'] }]) },
    );
    const calls: string[] = [];
    const result = streamText({
      model: openai(MODEL),
      prompt: 'Weather in Paris?',
      maxOutputTokens: 8000,
      maxRetries: 0,
      providerOptions: { openai: { reasoningEffort: 'low', forceReasoning: true, systemMessageMode: 'system' } },
      tools: {
        weather: tool({
          description: 'Weather in a city',
          inputSchema: z.object({ city: z.string() }),
          execute: async ({ city }) => {
            calls.push(city);
            return { city, conditions: 'sunny' };
          },
        }),
      },
      stopWhen: stepCountIs(3),
    });
    expect(await result.text).toBe('It is sunny.');
    expect(calls).toEqual(['Paris']);
    const second = anthropic.received.at(-1)!.json as { messages: { role: string; content: unknown }[] };
    expect(anthropic.received.at(-2)!.json.thinking).toEqual({ type: 'enabled', budget_tokens: 1024 });
    expect(second.messages[1]).toEqual({
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'Need weather.', signature: SIGNATURE },
        { type: 'tool_use', id: 'toolu_A', name: 'weather', input: { city: 'Paris' } },
      ],
    });
    expect(second.messages[2]).toMatchObject({
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: 'toolu_A' }],
    });
  });
});

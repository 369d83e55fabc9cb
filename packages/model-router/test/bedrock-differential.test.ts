/**
 * Claude on Bedrock, differential: the same request through the `anthropic` provider (its mock
 * answering SSE) and through a `bedrock` provider (a Bedrock Runtime double answering the same
 * canned answer as AWS event-stream frames) must give the client identical content, on chat
 * completions (openai SDK), /v1/messages (@anthropic-ai/sdk) and /v1/responses (openai SDK),
 * streamed and not; and the two upstream bodies must be the same Messages body.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
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
import { bedrockProvider, framesOf, mockBedrockRuntime } from './bedrock-support';

let anthropicMock: Awaited<ReturnType<typeof mockAnthropic>>;
let bedrock: Awaited<ReturnType<typeof mockBedrockRuntime>>;
let gateway: Awaited<ReturnType<typeof gatewayFor>>;
let openai: OpenAI;
let anthropic: Anthropic;

const BEDROCK_ID = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
const MODELS = { anthropic: '@anthropic-test/claude-sonnet-4-5', bedrock: `@bedrock-test/${BEDROCK_ID}` } as const;
const PNG = 'data:image/png;base64,iVBORw0KGgo=';
const PDF = makePdf(1).toString('base64');
const BETA = { 'anthropic-beta': 'interleaved-thinking-2025-05-14,extended-cache-ttl-2025-04-11' };

beforeAll(async () => {
  anthropicMock = await mockAnthropic();
  bedrock = await mockBedrockRuntime();
  gateway = await gatewayFor(anthropicMock.url, {
    providers: [
      { slug: 'anthropic-test', provider: 'anthropic', apiKey: PROVIDER_KEY, baseUrl: anthropicMock.url },
      bedrockProvider(bedrock.url),
    ],
  });
  openai = new OpenAI({ apiKey: GATEWAY_KEY, baseURL: `${gateway.url}/v1`, maxRetries: 0, defaultHeaders: BETA });
  anthropic = new Anthropic({ apiKey: GATEWAY_KEY, baseURL: gateway.url, maxRetries: 0, defaultHeaders: BETA });
});

afterAll(async () => {
  await gateway.close();
  await bedrock.close();
  await anthropicMock.close();
});

/** A canned answer: a whole message, or the events of a stream. */
type Canned = { message: unknown } | { events: [string, unknown][] };

/**
 * Runs `call` once per provider on the same canned answer; returns what the client got from each,
 * after checking that Bedrock got the Messages body Anthropic got (less `model` and `stream`, plus
 * `anthropic_version` and `anthropic_beta`), SigV4-signed for service `bedrock`.
 */
async function differential<T>(
  canned: Canned,
  call: (model: string) => Promise<T>,
): Promise<{ anthropic: T; bedrock: T }> {
  if ('message' in canned) {
    anthropicMock.reply({ json: canned.message });
    bedrock.reply({ json: canned.message });
  } else {
    anthropicMock.reply({ sse: canned.events });
    bedrock.reply({ frames: framesOf(canned.events) });
  }
  const viaAnthropic = await call(MODELS.anthropic);
  const viaBedrock = await call(MODELS.bedrock);
  const sent = anthropicMock.last();
  const received = bedrock.last();
  const { model: _model, stream, ...rest } = sent.json;
  expect(received.signatureValid).toBe(true);
  expect(received.service).toBe('bedrock');
  expect(received.region).toBe('us-east-1');
  expect(received.url).toBe(
    `/model/${encodeURIComponent(BEDROCK_ID)}/${stream === true ? 'invoke-with-response-stream' : 'invoke'}`,
  );
  expect(received.headers['x-api-key']).toBeUndefined();
  expect(received.json).toEqual({
    anthropic_version: 'bedrock-2023-05-31',
    anthropic_beta: String(sent.headers['anthropic-beta']).split(','),
    ...rest,
  });
  return { anthropic: viaAnthropic, bedrock: viaBedrock };
}

/** Everything a stream gave, in order. */
async function collect<T>(stream: AsyncIterable<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of stream) items.push(item);
  return items;
}

/**
 * Chat completions answer with the model asked for and the second they were made at (`created`):
 * the two differ only there.
 */
function sameButModel(value: unknown): unknown {
  return JSON.parse(
    JSON.stringify(value)
      .replace(/"created":\d+/g, '"created":0')
      .split(JSON.stringify(MODELS.bedrock))
      .join('"<model>"')
      .split(JSON.stringify(BEDROCK_ID))
      .join('"<model>"')
      .split(JSON.stringify(MODELS.anthropic))
      .join('"<model>"')
      .split(JSON.stringify('claude-sonnet-4-5'))
      .join('"<model>"'),
  );
}

const chatRequest = (model: string) => ({
  model,
  max_tokens: 4096,
  user: 'user-7',
  tools: [
    {
      type: 'function' as const,
      function: {
        name: 'get_weather',
        parameters: { type: 'object', properties: { city: { type: 'string' } } },
      },
    },
  ],
  thinking: { type: 'enabled', budget_tokens: 2048 },
  messages: [
    {
      role: 'system' as const,
      content: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral', ttl: '1h' } } as never],
    },
    {
      role: 'user' as const,
      content: [
        { type: 'text' as const, text: 'What do these show?' },
        { type: 'image_url' as const, image_url: { url: PNG } },
        { type: 'file' as const, file: { file_data: PDF, filename: 'a.pdf' } },
      ],
    },
  ],
});

const answerWithEverything = message(
  [
    { type: 'thinking', thinking: 'Looking at both.', signature: 'sig-1' },
    { type: 'redacted_thinking', data: 'redacted-1' },
    { type: 'text', text: 'A chart and a page.' },
    { type: 'tool_use', id: 'toolu_01', name: 'get_weather', input: { city: 'Paris' } },
  ],
  {
    stop_reason: 'tool_use',
    usage: { input_tokens: 120, output_tokens: 40, cache_creation_input_tokens: 30, cache_read_input_tokens: 7 },
  },
);

describe('chat completions (openai SDK): the bedrock provider gives what the anthropic provider gives', () => {
  it('not streamed: thinking, tools, images, PDFs, cache_control, beta headers and usage', async () => {
    const got = await differential({ message: answerWithEverything }, (model) =>
      openai.chat.completions.create(chatRequest(model) as never),
    );
    expect(sameButModel(got.bedrock)).toEqual(sameButModel(got.anthropic));
    expect(got.bedrock.usage).toMatchObject({ prompt_tokens: 157, completion_tokens: 40 });
    expect(got.bedrock.choices[0]?.message.tool_calls?.[0]).toMatchObject({ function: { name: 'get_weather' } });
  });

  it.each([
    ['thinking', thinkingEvents()],
    ['tools', toolEvents()],
  ])('streamed (%s), with usage', async (_name, events) => {
    const got = await differential({ events }, async (model) =>
      collect(
        (await openai.chat.completions.create({
          ...(chatRequest(model) as object),
          stream: true,
          stream_options: { include_usage: true },
        } as never)) as unknown as AsyncIterable<unknown>,
      ),
    );
    expect(sameButModel(got.bedrock)).toEqual(sameButModel(got.anthropic));
    expect((got.bedrock as { usage?: unknown }[]).at(-1)?.usage).toBeDefined();
  });
});

const messagesRequest = (model: string) => ({
  model,
  max_tokens: 4096,
  thinking: { type: 'enabled' as const, budget_tokens: 2048 },
  system: [
    { type: 'text' as const, text: 'Be brief.', cache_control: { type: 'ephemeral' as const, ttl: '1h' as const } },
  ],
  tools: [{ name: 'get_weather', input_schema: { type: 'object' as const, properties: { city: { type: 'string' } } } }],
  messages: [
    {
      role: 'user' as const,
      content: [
        { type: 'text' as const, text: 'What do these show?' },
        {
          type: 'image' as const,
          source: { type: 'base64' as const, media_type: 'image/png' as const, data: 'iVBORw0KGgo=' },
        },
        {
          type: 'document' as const,
          source: { type: 'base64' as const, media_type: 'application/pdf' as const, data: PDF },
          cache_control: { type: 'ephemeral' as const },
        },
      ],
    },
  ],
});

describe('/v1/messages (@anthropic-ai/sdk): the bedrock provider gives what the anthropic provider gives', () => {
  it('not streamed', async () => {
    const got = await differential({ message: answerWithEverything }, (model) =>
      anthropic.messages.create(messagesRequest(model)),
    );
    expect(got.bedrock).toEqual(got.anthropic);
    expect(got.bedrock.usage).toMatchObject({ cache_read_input_tokens: 7, cache_creation_input_tokens: 30 });
  });

  it.each([
    ['thinking', thinkingEvents()],
    ['tools', toolEvents()],
  ])('streamed (%s): the same events and the same final message', async (_name, events) => {
    const got = await differential({ events }, async (model) => {
      const stream = anthropic.messages.stream(messagesRequest(model));
      const seen = await collect(stream);
      return { seen, final: await stream.finalMessage() };
    });
    expect(got.bedrock).toEqual(got.anthropic);
    // The SDK hides pings; every other event arrived.
    expect(got.bedrock.seen.length).toBe(events.filter(([name]) => name !== 'ping').length);
  });

  it('count_tokens goes to CountTokens with the foundation model id and answers input_tokens', async () => {
    anthropicMock.reply({ json: { input_tokens: 42 } });
    bedrock.reply({ json: { inputTokens: 42 } });
    const request = { messages: messagesRequest('').messages, system: messagesRequest('').system };
    const viaAnthropic = await anthropic.messages.countTokens({ model: MODELS.anthropic, ...request });
    const viaBedrock = await anthropic.messages.countTokens({ model: MODELS.bedrock, ...request });
    expect(viaBedrock).toEqual(viaAnthropic);
    const received = bedrock.last();
    expect(received.signatureValid).toBe(true);
    expect(received.url).toBe(`/model/${encodeURIComponent('anthropic.claude-sonnet-4-5-20250929-v1:0')}/count-tokens`);
    const invoke = JSON.parse(
      Buffer.from(
        (received.json as { input: { invokeModel: { body: string } } }).input.invokeModel.body,
        'base64',
      ).toString(),
    ) as Record<string, unknown>;
    const { model: _model, ...rest } = anthropicMock.last().json;
    expect(invoke).toEqual({
      anthropic_version: 'bedrock-2023-05-31',
      anthropic_beta: BETA['anthropic-beta'].split(','),
      max_tokens: 1,
      ...rest,
    });
  });
});

/** The Responses API's ids and times are the gateway's own, fresh per response. */
function withoutFreshIds(value: unknown): unknown {
  return JSON.parse(
    JSON.stringify(sameButModel(value))
      .replace(/"(resp|msg|rs|fc|item)_[A-Za-z0-9_-]+"/g, '"<id>"')
      .replace(/"created_at":\d+/g, '"created_at":0'),
  );
}

describe('/v1/responses (openai SDK): the bedrock provider gives what the anthropic provider gives', () => {
  const responsesRequest = (model: string) => ({
    model,
    max_output_tokens: 4096,
    instructions: 'Be brief.',
    tools: [
      {
        type: 'function' as const,
        name: 'get_weather',
        strict: false,
        parameters: { type: 'object', properties: { city: { type: 'string' } } },
      },
    ],
    input: [
      {
        role: 'user' as const,
        content: [
          { type: 'input_text' as const, text: 'What do these show?' },
          { type: 'input_image' as const, image_url: PNG, detail: 'auto' as const },
          { type: 'input_file' as const, file_data: `data:application/pdf;base64,${PDF}`, filename: 'a.pdf' },
        ],
      },
    ],
  });

  it('not streamed', async () => {
    const got = await differential({ message: answerWithEverything }, (model) =>
      openai.responses.create(responsesRequest(model)),
    );
    expect(withoutFreshIds(got.bedrock)).toEqual(withoutFreshIds(got.anthropic));
    expect(got.bedrock.usage).toMatchObject({ output_tokens: 40 });
  });

  it.each([
    ['thinking', thinkingEvents()],
    ['tools', toolEvents()],
  ])('streamed (%s)', async (_name, events) => {
    const got = await differential({ events }, async (model) =>
      collect(await openai.responses.create({ ...responsesRequest(model), stream: true })),
    );
    expect(withoutFreshIds(got.bedrock)).toEqual(withoutFreshIds(got.anthropic));
    expect((got.bedrock as { type: string }[]).at(-1)?.type).toBe('response.completed');
  });
});

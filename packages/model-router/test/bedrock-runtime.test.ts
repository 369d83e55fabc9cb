/**
 * Claude on Bedrock through the gateway: Bedrock's exceptions as the statuses an Anthropic client
 * gets, stream exceptions and broken frames as the stream's error event (never a crash), frames
 * split across writes, SigV4 over a chunked large body, model selection and the model list.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { GATEWAY_KEY, gatewayFor, message, thinkingEvents } from './support';
import { bedrockProvider, chunkFrame, exceptionFrame, framesOf, mockBedrockRuntime } from './bedrock-support';

let bedrock: Awaited<ReturnType<typeof mockBedrockRuntime>>;
let gateway: Awaited<ReturnType<typeof gatewayFor>>;
let openai: OpenAI;
let anthropic: Anthropic;

const BEDROCK_ID = 'anthropic.claude-haiku-4-5-20251001-v1:0';
const MODEL = `@bedrock-test/${BEDROCK_ID}`;

beforeAll(async () => {
  bedrock = await mockBedrockRuntime();
  gateway = await gatewayFor('http://127.0.0.1:9', {
    providers: [
      bedrockProvider(bedrock.url),
      bedrockProvider(bedrock.url, {
        slug: 'bedrock-custom',
        models: { mode: 'custom', models: ['us.anthropic.claude-sonnet-4-5-20250929-v1:0'], autoEnableNew: true },
      }),
    ],
  });
  openai = new OpenAI({ apiKey: GATEWAY_KEY, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
  anthropic = new Anthropic({ apiKey: GATEWAY_KEY, baseURL: gateway.url, maxRetries: 0 });
});

afterAll(async () => {
  await gateway.close();
  await bedrock.close();
});

const ask = (model = MODEL) => ({
  model,
  max_tokens: 100,
  messages: [{ role: 'user' as const, content: 'Hi' }],
});

describe('Bedrock exceptions answer what a client of the anthropic provider gets', () => {
  it.each([
    ['ThrottlingException', 429, 429, 'rate_limit_error'],
    ['ModelNotReadyException', 429, 429, 'rate_limit_error'],
    ['ServiceUnavailableException', 503, 503, 'overloaded_error'],
    ['ValidationException', 400, 400, 'invalid_request_error'],
    ['AccessDeniedException', 403, 403, 'permission_error'],
    ['ResourceNotFoundException', 404, 404, 'not_found_error'],
    ['ModelTimeoutException', 408, 504, 'timeout_error'],
    ['InternalServerException', 500, 500, 'api_error'],
    ['ModelErrorException', 424, 502, 'api_error'],
    ['UnrecognizedClientException', 403, 401, 'authentication_error'],
  ])('%s (Bedrock %i) → %i %s on /v1/messages and chat completions', async (exception, bedrockStatus, status, type) => {
    bedrock.reply({ exception, status: bedrockStatus, message: `${exception} says no` });
    const native = (await anthropic.messages.create(ask()).catch((e: unknown) => e)) as InstanceType<
      typeof Anthropic.APIError
    >;
    expect(native).toBeInstanceOf(Anthropic.APIError);
    expect(native.status).toBe(status);
    expect(native.error).toEqual({ type: 'error', error: { type, message: `${exception} says no` } });
    expect(native.headers?.get('request-id')).toBe('bedrock-req-1');

    bedrock.reply({ exception, status: bedrockStatus, message: `${exception} says no` });
    const chat = (await openai.chat.completions.create(ask()).catch((e: unknown) => e)) as InstanceType<
      typeof OpenAI.APIError
    >;
    expect(chat).toBeInstanceOf(OpenAI.APIError);
    expect(chat.status).toBe(status);
    expect(chat.message).toContain(`${exception} says no`);
  });
});

describe('Bedrock streams', () => {
  it.each(['bytes', 'halves'] as const)('decodes frames split across writes (%s)', async (split) => {
    bedrock.reply({ frames: framesOf(thinkingEvents()), split });
    const final = await anthropic.messages.stream(ask()).finalMessage();
    expect(final.content.at(-1)).toEqual({ type: 'text', text: 'The answer is 42.' });
    expect(final.usage).toMatchObject({ output_tokens: 30, cache_read_input_tokens: 7 });
    expect(bedrock.last().signatureValid).toBe(true);
  });

  it('a modelStreamErrorException mid-stream is an Anthropic error event: the SDKs raise', async () => {
    const [start, ...rest] = framesOf(thinkingEvents());
    bedrock.reply({ frames: [start as Buffer, exceptionFrame('modelStreamErrorException', 'model crashed'), ...rest] });
    const native = await anthropic.messages
      .stream(ask())
      .finalMessage()
      .catch((e: unknown) => e);
    expect(native).toBeInstanceOf(Anthropic.APIError);
    expect(String((native as Error).message)).toContain('model crashed');

    bedrock.reply({ frames: [start as Buffer, exceptionFrame('modelStreamErrorException', 'model crashed'), ...rest] });
    const chat = await (async () => {
      for await (const _chunk of await openai.chat.completions.create({ ...ask(), stream: true })) {
        // read on
      }
    })().catch((e: unknown) => e);
    expect(chat).toBeInstanceOf(OpenAI.APIError);
    expect(String((chat as Error).message)).toContain('model crashed');
  });

  it.each([
    [
      'a corrupt CRC',
      () => {
        const frames = framesOf(thinkingEvents());
        const second = Buffer.from(frames[1] as Buffer);
        second[second.length - 1] = (second[second.length - 1] as number) ^ 0xff;
        return [frames[0] as Buffer, second, ...frames.slice(2)];
      },
      'checksum',
    ],
    [
      'an oversized frame',
      () => {
        const prelude = Buffer.alloc(12);
        prelude.writeUInt32BE(64 * 1024 * 1024, 0);
        return [chunkFrame(thinkingEvents()[0]?.[1]), prelude, Buffer.alloc(4096)];
      },
      'larger than the gateway reads',
    ],
  ])('%s ends the stream with an error, and the gateway serves the next request', async (_what, frames, text) => {
    bedrock.reply({ frames: frames() });
    const native = await anthropic.messages
      .stream(ask())
      .finalMessage()
      .catch((e: unknown) => e);
    expect(native).toBeInstanceOf(Anthropic.APIError);
    expect(String((native as Error).message)).toContain(text);

    bedrock.reply({ frames: frames() });
    const chunks: unknown[] = [];
    const chat = await (async () => {
      for await (const chunk of await openai.chat.completions.create({ ...ask(), stream: true })) chunks.push(chunk);
    })().catch((e: unknown) => e);
    expect(chat).toBeInstanceOf(OpenAI.APIError);
    expect(String((chat as Error).message)).toContain(text);

    bedrock.reply({ json: message([{ type: 'text', text: 'still here' }]) });
    expect((await anthropic.messages.create(ask())).content).toEqual([{ type: 'text', text: 'still here' }]);
  });
});

describe('Bedrock streams that go silent', () => {
  let quiet: Awaited<ReturnType<typeof gatewayFor>>;
  beforeAll(async () => {
    quiet = await gatewayFor('http://127.0.0.1:9', {
      providers: [bedrockProvider(bedrock.url)],
      streamIdleTimeoutMs: 300,
    });
  });
  afterAll(() => quiet.close());

  it('end with the idle-timeout error event on both routes, and the Bedrock connection is closed', async () => {
    const start = framesOf(thinkingEvents()).slice(0, 3);
    bedrock.reply({ frames: start, hold: true });
    const native = await new Anthropic({ apiKey: GATEWAY_KEY, baseURL: quiet.url, maxRetries: 0 }).messages
      .stream(ask())
      .finalMessage()
      .catch((e: unknown) => e);
    expect(native).toBeInstanceOf(Anthropic.APIError);
    expect(String((native as Error).message)).toContain('sent nothing for 300 ms');
    await bedrock.closed.at(-1);

    bedrock.reply({ frames: start, hold: true });
    const chat = await (async () => {
      const client = new OpenAI({ apiKey: GATEWAY_KEY, baseURL: `${quiet.url}/v1`, maxRetries: 0 });
      for await (const _chunk of await client.chat.completions.create({ ...ask(), stream: true })) {
        // read on
      }
    })().catch((e: unknown) => e);
    expect(chat).toBeInstanceOf(OpenAI.APIError);
    expect(String((chat as Error).message)).toContain('sent nothing for 300 ms');
    await bedrock.closed.at(-1);
  });
});

describe('Bedrock requests', () => {
  it('signs a large body sent in chunks with its SHA-256 (x-amz-content-sha256)', async () => {
    bedrock.reply({ json: message([{ type: 'text', text: 'read it' }]) });
    const long = 'a'.repeat(1_200_000);
    const answer = await anthropic.messages.create({
      ...ask(),
      messages: [{ role: 'user', content: [{ type: 'text', text: long }] }],
    });
    expect(answer.content).toEqual([{ type: 'text', text: 'read it' }]);
    const received = bedrock.last();
    expect(received.headers['x-amz-content-sha256']).toMatch(/^[0-9a-f]{64}$/);
    expect(received.signatureValid).toBe(true);
    expect((received.json.messages as { content: { text: string }[] }[])[0]?.content[0]?.text).toBe(long);
  });

  it('refuses a model that is not an Anthropic model on Bedrock with 400 unsupported_model', async () => {
    const error = (await anthropic.messages
      .create(ask('@bedrock-test/meta.llama3-70b-instruct-v1:0'))
      .catch((e: unknown) => e)) as InstanceType<typeof Anthropic.APIError>;
    expect(error.status).toBe(400);
    expect((error.error as { code?: string }).code).toBe('unsupported_model');
    expect(bedrock.requests.at(-1)?.url).not.toContain('llama');
  });

  it('applies the model selection: listed, new (autoEnableNew) and known-but-unlisted models', async () => {
    bedrock.reply({ json: message([{ type: 'text', text: 'listed' }]) });
    await expect(
      anthropic.messages.create(ask('@bedrock-custom/us.anthropic.claude-sonnet-4-5-20250929-v1:0')),
    ).resolves.toMatchObject({ content: [{ text: 'listed' }] });
    const refused = (await anthropic.messages
      .create(ask('@bedrock-custom/anthropic.claude-3-haiku-20240307-v1:0'))
      .catch((e: unknown) => e)) as InstanceType<typeof Anthropic.APIError>;
    expect(refused.status).toBe(403);
    bedrock.reply({ json: message([{ type: 'text', text: 'new' }]) });
    await expect(
      anthropic.messages.create(ask('@bedrock-custom/global.anthropic.claude-opus-5-20260101-v1:0')),
    ).resolves.toMatchObject({ content: [{ text: 'new' }] });
  });

  it('lists Bedrock model ids on GET /v1/models', async () => {
    const all = await openai.models.list({ headers: { 'x-gateway-provider': '@bedrock-test' } });
    expect(all.data.map((m) => m.id)).toContain('us.anthropic.claude-sonnet-4-5-20250929-v1:0');
    const custom = await openai.models.list({ headers: { 'x-gateway-provider': '@bedrock-custom' } });
    expect(custom.data.map((m) => m.id)).toEqual(['us.anthropic.claude-sonnet-4-5-20250929-v1:0']);
  });
});

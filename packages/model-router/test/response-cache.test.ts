import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import express from 'express';
import OpenAI from 'openai';
import { Portkey } from 'portkey-ai';
import { modelRouter, type ModelRouterOptions } from '../src';
import { PROVIDER_KEY, message, mockAnthropic, thinkingEvents } from './support';

/** Callers by key: two keys of one user, another user, and a token caller. */
const CALLERS: Record<string, unknown> = {
  'key-alice-1': { method: 'api_key', subject: 'key:1', claims: { user_id: 'alice', sub: 'alice' } },
  'key-alice-2': { method: 'api_key', subject: 'key:2', claims: { user_id: 'alice', sub: 'alice' } },
  'key-bob': { method: 'api_key', subject: 'key:3', claims: { user_id: 'bob', sub: 'bob' } },
};

let mock: Awaited<ReturnType<typeof mockAnthropic>>;
let url: string;
let close: () => Promise<void>;
let clock = 1_000_000;

async function startGateway(upstream: string, options: Partial<ModelRouterOptions> = {}) {
  const app = express();
  app.use('/v1', (req, res, next) => {
    const key =
      req.headers['x-portkey-api-key'] ??
      req.headers['x-api-key'] ??
      req.headers.authorization?.replace(/^Bearer /, '');
    const identity = CALLERS[String(key)];
    if (!identity) return res.status(401).json({ error: { code: 'invalid_credentials' } });
    (req as unknown as { callerIdentity: unknown }).callerIdentity = identity;
    next();
  });
  const provider = (slug: string, cache?: unknown) => ({
    slug,
    provider: 'anthropic',
    apiKey: PROVIDER_KEY,
    baseUrl: upstream,
    ...(cache ? { cache } : {}),
  });
  app.use(
    '/v1',
    modelRouter({
      providers: [
        provider('cached'),
        provider('shared', { scope: 'shared' }),
        provider('off', { enabled: false }),
      ] as ModelRouterOptions['providers'],
      now: () => clock,
      ...options,
    }),
  );
  const server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

beforeAll(async () => {
  mock = await mockAnthropic();
  ({ url, close } = await startGateway(mock.url));
});

afterAll(async () => {
  await close();
  await mock.close();
});

let question = 0;
/** A body no other test asked, so each test starts with an empty cache. */
const fresh = (extra: Record<string, unknown> = {}) => ({
  model: '@cached/claude-sonnet-4-5',
  max_tokens: 64,
  messages: [{ role: 'user' as const, content: `Question ${++question}` }],
  ...extra,
});

const CACHE_HEADERS = { 'x-gateway-config': JSON.stringify({ cache: { mode: 'simple' } }) };

function openai(key = 'key-alice-1', headers: Record<string, string> = CACHE_HEADERS) {
  return new OpenAI({ apiKey: key, baseURL: `${url}/v1`, maxRetries: 0, defaultHeaders: headers });
}

/** A chat completion with the raw response, to read the cache status. */
async function complete(client: OpenAI, body: Record<string, unknown>) {
  const { data, response } = await client.chat.completions
    .create(body as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming)
    .withResponse();
  return { completion: data, status: response.headers.get('x-gateway-cache-status') };
}

describe('the response cache through the openai SDK (header form)', () => {
  it('answers a repeat from the cache without calling the provider; another user misses', async () => {
    mock.reply({ json: message([{ type: 'text', text: 'First answer' }]) });
    const body = fresh();
    const calls = mock.requests.length;
    const first = await complete(openai(), body);
    expect(first.status).toBe('MISS');
    const second = await complete(openai(), body);
    expect(second.status).toBe('HIT');
    expect(second.completion.choices[0]?.message.content).toBe('First answer');
    expect(second.completion.usage).toEqual(first.completion.usage);
    expect(mock.requests.length).toBe(calls + 1);
    // The same user through another key shares the entry.
    expect((await complete(openai('key-alice-2'), body)).status).toBe('HIT');
    // Another user with the same body goes to the provider.
    mock.reply({ json: message([{ type: 'text', text: "Bob's answer" }]) });
    const bob = await complete(openai('key-bob'), body);
    expect(bob.status).toBe('MISS');
    expect(bob.completion.choices[0]?.message.content).toBe("Bob's answer");
    expect(mock.requests.length).toBe(calls + 2);
  });

  it('shares entries between callers when the provider says scope shared', async () => {
    mock.reply({ json: message([{ type: 'text', text: 'Shared' }]) });
    const body = fresh({ model: '@shared/claude-sonnet-4-5' });
    expect((await complete(openai('key-alice-1'), body)).status).toBe('MISS');
    const calls = mock.requests.length;
    const bob = await complete(openai('key-bob'), body);
    expect(bob.status).toBe('HIT');
    expect(bob.completion.choices[0]?.message.content).toBe('Shared');
    expect(mock.requests.length).toBe(calls);
  });

  it('answers DISABLED when the provider turned caching off, and no status without a cache request', async () => {
    const body = fresh({ model: '@off/claude-sonnet-4-5' });
    expect((await complete(openai(), body)).status).toBe('DISABLED');
    expect((await complete(openai(), body)).status).toBe('DISABLED');
    expect((await complete(openai('key-alice-1', {}), fresh())).status).toBeNull();
  });

  it('force refresh calls the provider and stores the new answer', async () => {
    const body = fresh();
    mock.reply({ json: message([{ type: 'text', text: 'old' }]) });
    await complete(openai(), body);
    mock.reply({ json: message([{ type: 'text', text: 'new' }]) });
    const calls = mock.requests.length;
    const refreshed = await complete(
      openai('key-alice-1', { ...CACHE_HEADERS, 'x-gateway-cache-force-refresh': 'true' }),
      body,
    );
    expect(refreshed.status).toBe('REFRESH');
    expect(refreshed.completion.choices[0]?.message.content).toBe('new');
    expect(mock.requests.length).toBe(calls + 1);
    const after = await complete(openai(), body);
    expect(after.status).toBe('HIT');
    expect(after.completion.choices[0]?.message.content).toBe('new');
  });

  it('serves an entry only while it is younger than max_age', async () => {
    const headers = { 'x-gateway-config': JSON.stringify({ cache: { mode: 'simple', max_age: 60 } }) };
    const body = fresh();
    await complete(openai('key-alice-1', headers), body);
    clock += 59_000;
    expect((await complete(openai('key-alice-1', headers), body)).status).toBe('HIT');
    clock += 2_000;
    expect((await complete(openai('key-alice-1', headers), body)).status).toBe('MISS');
    // The header form with Cache-Control: max-age.
    const headerForm = { 'x-gateway-cache': 'simple', 'cache-control': 'max-age=5' };
    clock += 6_000;
    expect((await complete(openai('key-alice-1', headerForm), body)).status).toBe('MISS');
    expect((await complete(openai('key-alice-1', headerForm), body)).status).toBe('HIT');
  });

  it('hits whatever the order of the body keys; misses when temperature differs', async () => {
    const body = fresh({ temperature: 0.5, top_p: 0.9 });
    await complete(openai(), body);
    const reordered = Object.fromEntries(Object.entries(body).reverse());
    expect(Object.keys(reordered)[0]).not.toBe(Object.keys(body)[0]);
    expect((await complete(openai(), reordered)).status).toBe('HIT');
    expect((await complete(openai(), { ...body, temperature: 0.6 })).status).toBe('MISS');
  });

  it('refuses mode semantic (or any other) with 400 unsupported_value naming cache.mode', async () => {
    for (const headers of <Record<string, string>[]>[
      { 'x-gateway-config': JSON.stringify({ cache: { mode: 'semantic' } }) },
      { 'x-gateway-config': JSON.stringify({ cache: {} }) },
      { 'x-gateway-cache': 'semantic' },
    ]) {
      const calls = mock.requests.length;
      const error = await openai('key-alice-1', headers)
        .chat.completions.create(fresh())
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect((error as InstanceType<typeof OpenAI.BadRequestError>).code).toBe('unsupported_value');
      expect((error as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('cache.mode');
      expect(mock.requests.length).toBe(calls);
    }
    const error = (await openai('key-alice-1', {
      'x-gateway-config': JSON.stringify({ cache: { mode: 'simple', max_age: 0 } }),
    })
      .chat.completions.create(fresh())
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.BadRequestError>;
    expect(error.param).toBe('cache.max_age');
  });

  it('never stores an error answer or a refusal', async () => {
    const body = fresh();
    mock.reply({ status: 529, json: { type: 'error', error: { type: 'overloaded_error', message: 'busy' } } });
    await expect(openai().chat.completions.create(body)).rejects.toThrow();
    mock.reply({ json: message([{ type: 'text', text: 'no' }], { stop_reason: 'refusal' }) });
    expect((await complete(openai(), body)).status).toBe('MISS');
    mock.reply({ json: message([{ type: 'text', text: 'fine' }]) });
    expect((await complete(openai(), body)).status).toBe('MISS');
    expect((await complete(openai(), body)).status).toBe('HIT');
  });
});

describe('the response cache through the unmodified portkey-ai SDK (config form)', () => {
  const portkey = (key: string, extra: Record<string, unknown> = {}) =>
    new Portkey({
      apiKey: key,
      baseURL: `${url}/v1`,
      config: { cache: { mode: 'simple' } },
      ...extra,
    });

  it('hits on a repeat, misses for another user, refreshes with cacheForceRefresh', async () => {
    mock.reply({ json: message([{ type: 'text', text: 'Via portkey' }]) });
    const body = fresh({ model: 'claude-sonnet-4-5' });
    const create = (client: Portkey) =>
      client.chat.completions.create(body, { provider: '@cached' } as never) as unknown as Promise<{
        choices: { message: { content: string } }[];
      }>;
    const calls = mock.requests.length;
    const alice = portkey('key-alice-1', { provider: '@cached' });
    expect((await create(alice)).choices[0]?.message.content).toBe('Via portkey');
    expect((await create(alice)).choices[0]?.message.content).toBe('Via portkey');
    expect(mock.requests.length).toBe(calls + 1);
    mock.reply({ json: message([{ type: 'text', text: 'For bob' }]) });
    expect((await create(portkey('key-bob', { provider: '@cached' }))).choices[0]?.message.content).toBe('For bob');
    expect(mock.requests.length).toBe(calls + 2);
    mock.reply({ json: message([{ type: 'text', text: 'Refreshed' }]) });
    const refresh = portkey('key-alice-1', { provider: '@cached', cacheForceRefresh: true });
    expect((await create(refresh)).choices[0]?.message.content).toBe('Refreshed');
    expect(mock.requests.length).toBe(calls + 3);
    expect((await create(alice)).choices[0]?.message.content).toBe('Refreshed');
    expect(mock.requests.length).toBe(calls + 3);
    const sent = mock.requests.at(-1);
    expect(sent?.headers['x-portkey-config']).toBeUndefined();
  });

  it('refuses mode semantic with 400 unsupported_value', async () => {
    const client = new Portkey({
      apiKey: 'key-alice-1',
      baseURL: `${url}/v1`,
      provider: '@cached',
      config: { cache: { mode: 'semantic' } },
    });
    const calls = mock.requests.length;
    const error = (await (client.chat.completions.create(fresh()) as Promise<unknown>).catch((e: unknown) => e)) as {
      status: number;
      error?: unknown;
    };
    expect(error.status).toBe(400);
    expect(error.error).toMatchObject({ error: { code: 'unsupported_value', param: 'cache.mode' } });
    expect(mock.requests.length).toBe(calls);
  });
});

describe('streams and the cache', () => {
  const streamed = async (client: OpenAI, body: Record<string, unknown>) => {
    const { data, response } = await client.chat.completions
      .create({ ...body, stream: true, stream_options: { include_usage: true } } as never)
      .withResponse();
    let content = '';
    let finish: string | null = null;
    let usage: unknown;
    // Thinking, signature and text deltas joined per block: a replay may cut them into other pieces.
    const blocks: { index: number; delta: Record<string, string> }[] = [];
    for await (const chunk of data as unknown as AsyncIterable<OpenAI.ChatCompletionChunk>) {
      const choice = chunk.choices[0];
      content += choice?.delta.content ?? '';
      if (choice?.finish_reason) finish = choice.finish_reason;
      const extra = (choice?.delta as { content_blocks?: typeof blocks } | undefined)?.content_blocks;
      for (const piece of extra ?? []) {
        const last = blocks.at(-1);
        if (last && last.index === piece.index && last.delta.type === piece.delta.type && piece.delta.type === 'text') {
          last.delta = { ...last.delta, text: `${last.delta.text ?? ''}${piece.delta.text ?? ''}` };
        } else blocks.push(piece);
      }
      if (chunk.usage) usage = chunk.usage;
    }
    return { content, finish, usage, blocks, status: response.headers.get('x-gateway-cache-status') };
  };

  it('stores a streamed answer: a streamed repeat and a non-streamed repeat hit with the same content and usage', async () => {
    const client = openai('key-alice-1', { ...CACHE_HEADERS, 'x-gateway-strict-open-ai-compliance': 'false' });
    const body = fresh();
    mock.reply({ sse: thinkingEvents() });
    const calls = mock.requests.length;
    const miss = await streamed(client, body);
    expect(miss.status).toBe('MISS');
    expect(miss.content).toBe('The answer is 42.');
    const hit = await streamed(client, body);
    expect(hit.status).toBe('HIT');
    expect(hit).toEqual({ ...miss, status: 'HIT' });
    const json = await complete(client, body);
    expect(json.status).toBe('HIT');
    expect(json.completion.choices[0]?.message.content).toBe(miss.content);
    expect(json.completion.choices[0]?.finish_reason).toBe(miss.finish);
    expect(json.completion.usage).toEqual(miss.usage);
    expect((json.completion.choices[0]?.message as { content_blocks?: unknown[] }).content_blocks).toEqual([
      { type: 'thinking', thinking: 'Let me think', signature: 'sig-abc' },
      { type: 'redacted_thinking', data: 'redacted-xyz' },
      { type: 'text', text: 'The answer is 42.' },
    ]);
    expect(mock.requests.length).toBe(calls + 1);
  });

  it('serves a non-streamed answer to a streamed repeat', async () => {
    const client = openai();
    const body = fresh();
    mock.reply({ json: message([{ type: 'text', text: 'Stored as JSON' }], { stop_reason: 'max_tokens' }) });
    const first = await complete(client, body);
    const hit = await streamed(client, body);
    expect(hit.status).toBe('HIT');
    expect(hit.content).toBe('Stored as JSON');
    expect(hit.finish).toBe('length');
    expect(hit.usage).toEqual(first.completion.usage);
  });

  it('does not store a stream the provider cut short: the repeat reaches the provider', async () => {
    const client = openai();
    const body = fresh();
    const events = thinkingEvents();
    // Cut mid-text, and cut after the stop reason but before message_stop: neither is stored.
    mock.reply({ sse: events.slice(0, 10) });
    await expect(streamed(client, body)).rejects.toThrow();
    mock.reply({ sse: events.slice(0, -1) });
    await expect(streamed(client, body)).rejects.toThrow();
    mock.reply({ sse: events });
    const calls = mock.requests.length;
    const repeat = await streamed(client, body);
    expect(repeat.status).toBe('MISS');
    expect(repeat.content).toBe('The answer is 42.');
    expect(mock.requests.length).toBe(calls + 1);
  });
});

describe('native /v1/messages and the cache (Anthropic SDK)', () => {
  const anthropic = (key = 'key-alice-1') =>
    new Anthropic({ apiKey: key, baseURL: url, maxRetries: 0, defaultHeaders: CACHE_HEADERS });
  const ask = () => ({
    model: '@cached/claude-sonnet-4-5',
    max_tokens: 64,
    messages: [{ role: 'user' as const, content: `Native question ${++question}` }],
  });

  it('stores a streamed answer; streamed and non-streamed repeats hit with the same message', async () => {
    const body = ask();
    mock.reply({ sse: thinkingEvents() });
    const calls = mock.requests.length;
    const live = await anthropic().messages.stream(body).finalMessage();
    const { data: cached, response } = await anthropic().messages.stream(body).withResponse();
    expect(response.headers.get('x-gateway-cache-status')).toBe('HIT');
    const replayed = await cached.finalMessage();
    expect(replayed).toEqual(live);
    const json = await anthropic().messages.create(body);
    const { id, model, role, content, stop_reason, stop_sequence, usage } = live;
    expect(json).toEqual({ id, model, role, content, stop_reason, stop_sequence, usage, type: 'message' });
    expect(json.usage.output_tokens).toBe(30);
    expect(json.content[0]).toEqual({ type: 'thinking', thinking: 'Let me think', signature: 'sig-abc' });
    expect(mock.requests.length).toBe(calls + 1);
  });

  it('does not store a cut stream, nor a count_tokens answer', async () => {
    const body = ask();
    mock.reply({ sse: thinkingEvents().slice(0, 6) });
    await expect(anthropic().messages.stream(body).finalMessage()).rejects.toThrow();
    // Everything but message_stop: the SDK may accept it, the gateway does not store it.
    mock.reply({ sse: thinkingEvents().slice(0, -1) });
    await anthropic()
      .messages.stream(body)
      .finalMessage()
      .catch(() => undefined);
    mock.reply({ json: message([{ type: 'text', text: 'whole' }]) });
    const calls = mock.requests.length;
    const { response } = await anthropic().messages.create(body).withResponse();
    expect(response.headers.get('x-gateway-cache-status')).toBe('MISS');
    expect(mock.requests.length).toBe(calls + 1);
    const counted = await fetch(`${url}/v1/messages/count_tokens`, {
      method: 'POST',
      headers: { 'x-api-key': 'key-alice-1', 'content-type': 'application/json', ...CACHE_HEADERS },
      body: JSON.stringify(body),
    });
    expect(counted.headers.get('x-gateway-cache-status')).toBeNull();
  });
});

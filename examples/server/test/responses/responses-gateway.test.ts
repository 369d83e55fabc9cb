import OpenAI from 'openai';
import { adminClient, newAdminKey, newEncryptionKey } from '../catalog/catalog-support';
import { eventually } from '../observability/otel-support';
import { failedStart, startGateway, writeConfig, type RunningGateway } from '../support';
import { events, message, RELEASE, startAnthropicScript, type AnthropicScript } from './responses-support';

// /v1/responses takes part in the gateway's cross-cutting work as chat completions do: the
// response cache, access policies and request records; and GATEWAY_RESPONSES_DAYS is checked at
// start-up.

jest.setTimeout(120_000);

const ALICE_KEY = 'gw-responses-gw-key-A-0123456789abcdefAAAA';
const BOB_KEY = 'gw-responses-gw-key-B-0123456789abcdefBBBB';
const ADMIN_KEY = newAdminKey();
const MODEL = '@claude/claude-sonnet-4-5';
const CACHE = { 'x-gateway-config': JSON.stringify({ cache: { mode: 'simple', max_age: 600 } }) };

let anthropic: AnthropicScript;
let gateway: RunningGateway;
let alice: OpenAI;
let bob: OpenAI;
let admin: ReturnType<typeof adminClient>;

beforeAll(async () => {
  anthropic = await startAnthropicScript();
  gateway = await startGateway({
    GATEWAY_CONFIG: writeConfig({
      access: { mode: 'policies' },
      auth: {
        apiKeys: [
          { key: ALICE_KEY, user: { user_id: 'u_alice', groups: ['writers'] } },
          { key: BOB_KEY, user: { user_id: 'u_bob', groups: ['readers'] } },
        ],
      },
      providers: [{ slug: 'claude', provider: 'anthropic', apiKey: 'sk-ant-responses-gw', baseUrl: anthropic.url }],
      policies: [
        { slug: 'writers', subjects: { groups: ['writers'] }, allow: { models: ['@claude/claude-sonnet-*'] } },
        { slug: 'readers', subjects: { groups: ['readers'] }, allow: { models: ['@claude/claude-haiku-*'] } },
      ],
    }),
    GATEWAY_ADMIN_KEY: ADMIN_KEY,
    GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
  });
  alice = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: ALICE_KEY, maxRetries: 0 });
  bob = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: BOB_KEY, maxRetries: 0 });
  admin = adminClient(gateway.url, ADMIN_KEY);
});

afterAll(async () => {
  await gateway?.stop();
  await anthropic?.close();
});

/** A response's output without the ids (each response has its own). */
const withoutIds = (output: unknown[]) => output.map((item) => ({ ...(item as object), id: undefined }));

describe('the response cache on /v1/responses', () => {
  it('answers a repeated request from the cache with the same output, as JSON and as a stream', async () => {
    anthropic.reply({ json: message([{ type: 'text', text: 'Cached bonjour' }]) });
    const body = { model: MODEL, input: 'Say hello, cached.', max_output_tokens: 50 };
    const first = await alice.responses.create(body, { headers: CACHE }).withResponse();
    expect(first.response.headers.get('x-gateway-cache-status')).toBe('MISS');
    const calls = anthropic.received.length;

    const again = await alice.responses.create(body, { headers: CACHE }).withResponse();
    expect(again.response.headers.get('x-gateway-cache-status')).toBe('HIT');
    expect(again.data.id).not.toBe(first.data.id);
    expect(again.data.output_text).toBe('Cached bonjour');
    expect(withoutIds(again.data.output)).toEqual(withoutIds(first.data.output));
    expect(again.data.usage).toEqual(first.data.usage);

    const streamed = await alice.responses.create({ ...body, stream: true }, { headers: CACHE }).withResponse();
    expect(streamed.response.headers.get('x-gateway-cache-status')).toBe('HIT');
    const seen: { type: string; sequence_number: number; response?: OpenAI.Responses.Response }[] = [];
    for await (const event of streamed.data) seen.push(event);
    expect(seen.map((e) => e.sequence_number)).toEqual(seen.map((_e, i) => i));
    expect(seen.map((e) => e.type)).toContain('response.output_text.delta');
    const completed = seen.at(-1)!;
    expect(completed.type).toBe('response.completed');
    expect(completed.response!.output_text).toBe('Cached bonjour');
    expect(withoutIds(completed.response!.output)).toEqual(withoutIds(first.data.output));
    expect(anthropic.received.length).toBe(calls);
    // A response answered from the cache is stored like any other.
    expect((await alice.responses.retrieve(again.data.id)).output_text).toBe('Cached bonjour');
  });

  it('answers a repeated streamed request from the cache with the same events', async () => {
    anthropic.reply({ events: events([{ type: 'text', text: ['Streamed ', 'and ', 'cached'] }]) });
    const body = { model: MODEL, input: 'Stream, cached.', max_output_tokens: 50, stream: true as const };
    const read = async () => {
      const { data, response } = await alice.responses.create(body, { headers: CACHE }).withResponse();
      const seen: Record<string, unknown>[] = [];
      for await (const event of data) seen.push(event as unknown as Record<string, unknown>);
      return { status: response.headers.get('x-gateway-cache-status'), seen };
    };
    const miss = await read();
    const calls = anthropic.received.length;
    const hit = await read();
    expect([miss.status, hit.status]).toEqual(['MISS', 'HIT']);
    expect(anthropic.received.length).toBe(calls);
    const text = (seen: Record<string, unknown>[]) =>
      seen
        .filter((e) => e.type === 'response.output_text.delta')
        .map((e) => e.delta)
        .join('');
    expect(text(hit.seen)).toBe('Streamed and cached');
    expect(text(miss.seen)).toBe('Streamed and cached');
    const final = (seen: Record<string, unknown>[]) => seen.at(-1)!.response as OpenAI.Responses.Response;
    expect(final(hit.seen).status).toBe('completed');
    expect(withoutIds(final(hit.seen).output)).toEqual(withoutIds(final(miss.seen).output));
    expect(final(hit.seen).usage).toEqual(final(miss.seen).usage);
  });
});

describe('access policies on /v1/responses', () => {
  it('refuses a model the caller may not use with 403 access_denied naming the model, before the provider', async () => {
    const before = anthropic.received.length;
    await expect(bob.responses.create({ model: MODEL, input: 'hi', max_output_tokens: 10 })).rejects.toMatchObject({
      status: 403,
      code: 'access_denied',
      param: 'model',
    });
    await expect(
      bob.responses.create({ model: MODEL, input: 'hi', max_output_tokens: 10, stream: true }),
    ).rejects.toMatchObject({ status: 403, code: 'access_denied', param: 'model' });
    expect(anthropic.received.length).toBe(before);
    // The allowed model answers.
    anthropic.reply({ json: message([{ type: 'text', text: 'haiku' }]) });
    const allowed = await bob.responses.create({
      model: '@claude/claude-haiku-4-5',
      input: 'hi',
      max_output_tokens: 10,
    });
    expect(allowed.output_text).toBe('haiku');
  });
});

describe('request records of /v1/responses', () => {
  const recorded = async (requestId: string) => {
    let record: Record<string, unknown> | undefined;
    let text = '';
    await eventually(10_000, async () => {
      const page = await admin('GET', '/requests?user=u_alice&limit=50');
      text = page.text;
      record = page.body.data.find((r: { request_id: string }) => r.request_id === requestId);
      return record !== undefined;
    });
    return { record: record!, text };
  };

  it('records route, models and tokens of each call, streamed and not, never the input or the answer', async () => {
    const INPUT = 'RECORD-SECRET-INPUT-7f3a';
    const INSTRUCTIONS = 'RECORD-SECRET-INSTRUCTIONS-9c1e';
    anthropic.reply(
      { json: message([{ type: 'text', text: 'RECORD-SECRET-ANSWER-1' }]) },
      { events: events([{ type: 'text', text: ['RECORD-SECRET-', 'ANSWER-2'] }]) },
    );
    const plain = await alice.responses
      .create({ model: MODEL, instructions: INSTRUCTIONS, input: INPUT, max_output_tokens: 20 })
      .withResponse();
    const streamed = await alice.responses
      .create({ model: MODEL, instructions: INSTRUCTIONS, input: INPUT, max_output_tokens: 20, stream: true })
      .withResponse();
    for await (const _event of streamed.data);
    const first = await recorded(plain.response.headers.get('x-gateway-request-id')!);
    expect(first.record).toMatchObject({
      route: 'responses',
      method: 'POST',
      path: '/v1/responses',
      user_id: 'u_alice',
      provider: 'claude',
      model_requested: 'claude-sonnet-4-5',
      model_answered: RELEASE,
      status: 200,
      usage: { input_tokens: 12, output_tokens: 7, cache_creation_input_tokens: 2, cache_read_input_tokens: 3 },
    });
    const second = await recorded(streamed.response.headers.get('x-gateway-request-id')!);
    expect(second.record).toMatchObject({
      route: 'responses',
      model_requested: 'claude-sonnet-4-5',
      model_answered: RELEASE,
      status: 200,
      usage: { input_tokens: 12, output_tokens: 9 },
    });
    // Neither the stored input nor the answer is in a record or in the request log lines.
    const lines = gateway.logs.filter((line) => line.includes('"msg":"request"')).join('\n');
    expect(lines).toContain(plain.response.headers.get('x-gateway-request-id'));
    for (const text of [first.text, second.text, JSON.stringify(first.record), lines]) {
      expect(text).not.toContain('RECORD-SECRET');
    }
  });
});

describe('GATEWAY_RESPONSES_DAYS', () => {
  it.each([
    ['0', /^gateway: GATEWAY_RESPONSES_DAYS must be a whole number of at least 1, such as 30 \(got "0"\)\.$/],
    ['thirty', /^gateway: GATEWAY_RESPONSES_DAYS must be a whole number of at least 1, such as 30 /],
    ['3651', /^gateway: GATEWAY_RESPONSES_DAYS must be at most 3650, such as 30 \(got "3651"\)\.$/],
  ])('stops start-up with one line naming the variable and what to write for %s', async (value, expected) => {
    const { code, stderr } = await failedStart({
      GATEWAY_RESPONSES_DAYS: value,
      GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
    });
    expect(code).toBe(1);
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr.trim()).toMatch(expected);
  });
});

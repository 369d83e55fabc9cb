/**
 * Routing across targets (CONTRACT section 17): fallback, load balancing, nesting and named
 * configs, through the unmodified openai, @anthropic-ai/sdk and portkey-ai SDKs, against mock
 * providers whose status per request the test chooses and a Bedrock Runtime double.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { Portkey } from 'portkey-ai';
import { GATEWAY_KEY, PROVIDER_KEY, gatewayFor, message, mockAnthropic } from './support';
import { bedrockProvider, mockBedrockRuntime } from './bedrock-support';
import type { ModelResource } from '../src';

type Mock = Awaited<ReturnType<typeof mockAnthropic>>;
let primary: Mock;
let backup: Mock;
let third: Mock;
let bedrock: Awaited<ReturnType<typeof mockBedrockRuntime>>;
let gateway: Awaited<ReturnType<typeof gatewayFor>>;
let silent: Server;
let deadUrl: string;
/** Models the test's access rule refuses (`provider/model`). */
const denied = new Set<string>();
/** The load balancer's numbers: seeded, so a run is repeatable. */
let random = mulberry32(42);

const BEDROCK_ID = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
const NAMED: Record<string, Record<string, unknown>> = {
  'prod-fallback': {
    strategy: { mode: 'fallback' },
    targets: [{ provider: '@primary' }, { provider: '@backup' }],
  },
  'team-default': {
    strategy: { mode: 'fallback' },
    targets: [{ provider: '@backup' }, { provider: '@third' }],
  },
};

/** A seeded generator of numbers in [0, 1) (mulberry32). */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const listen = async (server: Server) => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
};

beforeAll(async () => {
  [primary, backup, third, bedrock] = await Promise.all([
    mockAnthropic(),
    mockAnthropic(),
    mockAnthropic(),
    mockBedrockRuntime(),
  ]);
  // A provider that takes requests and never answers them.
  silent = createServer(() => undefined);
  const silentUrl = await listen(silent);
  const closed = createServer();
  deadUrl = await listen(closed);
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  const anthropic = (slug: string, baseUrl: string) => ({
    slug,
    provider: 'anthropic' as const,
    apiKey: PROVIDER_KEY,
    baseUrl,
  });
  gateway = await gatewayFor(primary.url, {
    providers: [
      anthropic('primary', primary.url),
      anthropic('backup', backup.url),
      anthropic('third', third.url),
      anthropic('dead', deadUrl),
      anthropic('silent', silentUrl),
      bedrockProvider(bedrock.url),
    ],
    authorize: (_req, resource: ModelResource) => !denied.has(`${resource.provider}/${resource.model}`),
    configs: {
      resolve: (slug) => NAMED[slug],
      defaultSlug: (req) =>
        typeof req.headers['x-test-key-config'] === 'string' ? req.headers['x-test-key-config'] : undefined,
    },
    random: () => random(),
    // Cached answers are kept per caller: the test's requests are one caller.
    callerId: () => 'routing-test',
  });
});

afterAll(async () => {
  await gateway.close();
  silent.closeAllConnections();
  await new Promise<void>((resolve) => silent.close(() => resolve()));
  await Promise.all([primary.close(), backup.close(), third.close(), bedrock.close()]);
});

afterEach(() => denied.clear());

const overloaded = { status: 529, json: { type: 'error', error: { type: 'overloaded_error', message: 'busy' } } };
const answer = (text: string) => ({ json: message([{ type: 'text', text }]) });
const fallback = (targets: unknown[], strategy: Record<string, unknown> = {}) =>
  JSON.stringify({ strategy: { mode: 'fallback', ...strategy }, targets });
const counts = () => [primary, backup, third].map((mock) => mock.requests.length);
const since = (before: number[]) => counts().map((n, i) => n - (before[i] as number));

const openai = (config?: string, headers: Record<string, string> = {}) =>
  new OpenAI({
    apiKey: GATEWAY_KEY,
    baseURL: `${gateway.url}/v1`,
    maxRetries: 0,
    defaultHeaders: { ...(config !== undefined && { 'x-gateway-config': config }), ...headers },
  });
const anthropicSdk = (config: string) =>
  new Anthropic({
    apiKey: GATEWAY_KEY,
    baseURL: gateway.url,
    maxRetries: 0,
    defaultHeaders: { 'x-gateway-config': config },
  });

/** A chat completion through the openai SDK, with its response headers. */
async function chat(
  config: string | undefined,
  body: Record<string, unknown> = {},
  headers: Record<string, string> = {},
) {
  const { data, response } = await openai(config, headers)
    .chat.completions.create({
      model: 'claude-sonnet-4-5',
      max_tokens: 16,
      messages: [{ role: 'user', content: 'hi' }],
      ...body,
    } as never)
    .withResponse();
  const completion = data as unknown as { choices: { message: { content: string } }[]; model: string };
  return { text: completion.choices[0]?.message.content, model: completion.model, headers: response.headers };
}

/** The error an SDK call rejects with. */
const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected the call to fail');
    },
    (error: { status?: number; error?: unknown; headers?: Headers }) => error,
  );

describe('fallback', () => {
  it('tries the next target on 529 (Anthropic SDK, /v1/messages), naming the target that answered', async () => {
    primary.reply(overloaded);
    backup.reply(answer('from backup'));
    const before = counts();
    const { data, response } = await anthropicSdk(
      fallback([{ provider: '@primary' }, { provider: '@backup', override_params: { model: 'claude-haiku-4-5' } }]),
    )
      .messages.create({ model: 'claude-sonnet-4-5', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    expect(data.content).toEqual([{ type: 'text', text: 'from backup' }]);
    expect(response.headers.get('x-gateway-last-used-option-index')).toBe('1');
    expect(response.headers.get('x-gateway-provider-used')).toBe('backup');
    expect(since(before)).toEqual([1, 1, 0]);
    expect(primary.last().json.model).toBe('claude-sonnet-4-5');
    expect(backup.last().json.model).toBe('claude-haiku-4-5');
  });

  it('tries the next target on 503, and on 429 without waiting out its retry-after (openai SDK)', async () => {
    primary.reply({ status: 503, json: { type: 'error', error: { type: 'api_error', message: 'down' } } });
    backup.reply(answer('after 503'));
    expect((await chat(fallback([{ provider: '@primary' }, { provider: '@backup' }]))).text).toBe('after 503');
    primary.reply({
      status: 429,
      headers: { 'retry-after': '30' },
      json: { type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } },
    });
    backup.reply(answer('after 429'));
    const started = performance.now();
    const result = await chat(fallback([{ provider: '@primary' }, { provider: '@backup' }]));
    expect(result.text).toBe('after 429');
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it('tries the next target when a provider refuses the connection or does not answer in time', async () => {
    backup.reply(answer('after refused'));
    const refused = await chat(fallback([{ provider: '@dead' }, { provider: '@backup' }]));
    expect(refused.text).toBe('after refused');
    expect(refused.headers.get('x-gateway-provider-used')).toBe('backup');
    backup.reply(answer('after timeout'));
    const started = performance.now();
    const timedOut = await chat(fallback([{ provider: '@silent', request_timeout: 300 }, { provider: '@backup' }]));
    expect(timedOut.text).toBe('after timeout');
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it.each([
    [400, 'invalid_request_error'],
    [401, 'authentication_error'],
    [404, 'not_found_error'],
  ])('gives the client a %i, trying no other target', async (status, type) => {
    primary.reply({ status, json: { type: 'error', error: { type, message: 'no' } } });
    const before = counts();
    const error = await failure(chat(fallback([{ provider: '@primary' }, { provider: '@backup' }])));
    expect(error.status).toBe(status);
    expect(since(before)).toEqual([1, 0, 0]);
  });

  it('falls back on the statuses on_status_codes lists, and only those', async () => {
    primary.reply(overloaded);
    const before = counts();
    const kept = await failure(
      chat(fallback([{ provider: '@primary' }, { provider: '@backup' }], { on_status_codes: [500, 418] })),
    );
    expect(kept.status).toBe(529);
    expect(since(before)).toEqual([1, 0, 0]);
    primary.reply({ status: 418, json: { type: 'error', error: { type: 'api_error', message: 'teapot' } } });
    backup.reply(answer('after 418'));
    expect(
      (await chat(fallback([{ provider: '@primary' }, { provider: '@backup' }], { on_status_codes: [500, 418] }))).text,
    ).toBe('after 418');
  });

  it('gives the last attempt’s error when every target fails', async () => {
    primary.reply(overloaded);
    backup.reply({ status: 503, json: { type: 'error', error: { type: 'api_error', message: 'backup down' } } });
    const error = await failure(chat(fallback([{ provider: '@primary' }, { provider: '@backup' }])));
    expect(error.status).toBe(503);
    primary.reply(overloaded);
    const refused = await failure(chat(fallback([{ provider: '@primary' }, { provider: '@dead' }])));
    expect(refused.status).toBe(502);
    expect(refused.error).toMatchObject({ code: 'upstream_unreachable' });
  });

  it('falls back from a stream that fails before its first byte, never from one that fails after', async () => {
    const events: [string, unknown][] = [
      ['message_start', { type: 'message_start', message: { ...message([]), content: [] } }],
      ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
      [
        'content_block_delta',
        { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'streamed' } },
      ],
      ['content_block_stop', { type: 'content_block_stop', index: 0 }],
      ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 1 } }],
      ['message_stop', { type: 'message_stop' }],
    ];
    primary.reply(overloaded);
    backup.reply({ sse: events });
    const stream = await openai(fallback([{ provider: '@primary' }, { provider: '@backup' }])).chat.completions.create({
      model: 'claude-sonnet-4-5',
      max_tokens: 16,
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('streamed');
    // The first target's stream starts, then ends early: the client gets the stream's error, and
    // no other target is asked.
    primary.reply({ sse: events.slice(0, 3) });
    const before = counts();
    const cut = await openai(fallback([{ provider: '@primary' }, { provider: '@backup' }])).chat.completions.create({
      model: 'claude-sonnet-4-5',
      max_tokens: 16,
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    });
    const read = async () => {
      for await (const chunk of cut) void chunk;
    };
    await expect(read()).rejects.toThrow(/ended the stream early/);
    expect(since(before)).toEqual([1, 0, 0]);
  });

  it('falls back from Anthropic to Claude on Bedrock, with Bedrock’s model id', async () => {
    primary.reply(overloaded);
    bedrock.reply({ json: message([{ type: 'text', text: 'from bedrock' }]) });
    const result = await chat(
      fallback([{ provider: '@primary' }, { provider: '@bedrock-test', override_params: { model: BEDROCK_ID } }]),
    );
    expect(result.text).toBe('from bedrock');
    expect(result.headers.get('x-gateway-provider-used')).toBe('bedrock-test');
    expect(bedrock.last().url).toBe(`/model/${encodeURIComponent(BEDROCK_ID)}/invoke`);
    expect(bedrock.last().signatureValid).toBe(true);
    // And back: Bedrock's throttling is a 429, so Bedrock → Anthropic falls back as well.
    bedrock.reply({ exception: 'ThrottlingException', status: 429 });
    primary.reply(answer('from anthropic'));
    expect(
      (
        await chat(
          fallback([{ provider: '@bedrock-test', override_params: { model: BEDROCK_ID } }, { provider: '@primary' }]),
        )
      ).text,
    ).toBe('from anthropic');
  });

  it('routes /v1/responses, /v1/messages/count_tokens and streamed /v1/messages', async () => {
    primary.reply(overloaded);
    backup.reply(answer('responses via backup'));
    const config = fallback([{ provider: '@primary' }, { provider: '@backup' }]);
    const response = await openai(config).responses.create({
      model: 'claude-sonnet-4-5',
      input: 'hi',
      max_output_tokens: 16,
    });
    expect(response.output_text).toBe('responses via backup');
    primary.reply(overloaded);
    backup.reply({ json: { input_tokens: 42 } });
    const counted = await anthropicSdk(config).messages.countTokens({
      model: 'claude-sonnet-4-5',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(counted.input_tokens).toBe(42);
    primary.reply(overloaded);
    backup.reply({
      sse: [
        ['message_start', { type: 'message_start', message: { ...message([]), content: [] } }],
        ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 1 } }],
        ['message_stop', { type: 'message_stop' }],
      ],
    });
    const streamed = await anthropicSdk(config)
      .messages.stream({ model: 'claude-sonnet-4-5', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] })
      .finalMessage();
    expect(streamed.stop_reason).toBe('end_turn');
  });
});

describe('load balancing', () => {
  it('splits requests by weight within statistical bounds (seeded), and never picks a weight of 0', async () => {
    random = mulberry32(7);
    const config = JSON.stringify({
      strategy: { mode: 'loadbalance' },
      targets: [
        { provider: '@primary', weight: 3 },
        { provider: '@backup', weight: 1 },
        { provider: '@third', weight: 0 },
      ],
    });
    const before = counts();
    const client = openai(config);
    for (let batch = 0; batch < 4; batch++) {
      await Promise.all(
        Array.from({ length: 50 }, () =>
          client.chat.completions.create({
            model: 'claude-sonnet-4-5',
            max_tokens: 4,
            messages: [{ role: 'user', content: 'x' }],
          }),
        ),
      );
    }
    const [toPrimary, toBackup, toThird] = since(before) as [number, number, number];
    expect(toPrimary + toBackup).toBe(200);
    // 150 expected; the standard deviation of 200 draws at 3/4 is 6.1: ±5 of them. (1,000 draws
    // through the routing itself: test/unit/routing-engine.test.ts.)
    expect(toPrimary).toBeGreaterThan(119);
    expect(toPrimary).toBeLessThan(181);
    expect(toThird).toBe(0);
  });

  it('does not fall back within a loadbalance group, but an enclosing fallback does', async () => {
    random = () => 0; // the first of two equal weights
    primary.reply(overloaded);
    const before = counts();
    const alone = await failure(
      chat(
        JSON.stringify({
          strategy: { mode: 'loadbalance' },
          targets: [{ provider: '@primary' }, { provider: '@backup' }],
        }),
      ),
    );
    expect(alone.status).toBe(529);
    expect(since(before)).toEqual([1, 0, 0]);
    primary.reply(overloaded);
    third.reply(answer('outer fallback'));
    const nested = await chat(
      JSON.stringify({
        strategy: { mode: 'fallback' },
        targets: [
          { strategy: { mode: 'loadbalance' }, targets: [{ provider: '@primary' }, { provider: '@backup' }] },
          { provider: '@third' },
        ],
      }),
    );
    expect(nested.text).toBe('outer fallback');
    expect(nested.headers.get('x-gateway-last-used-option-index')).toBe('1');
    random = mulberry32(42);
  });
});

describe('nesting and override_params', () => {
  it('follows the contract’s example: fallback, then a weighted group of Bedrock and a backup, indexes dotted', async () => {
    random = () => 0.1; // the weight-3 target of the inner group
    const config = JSON.stringify({
      strategy: { mode: 'fallback', on_status_codes: [429, 500, 502, 503, 504, 529] },
      targets: [
        { provider: '@primary', override_params: { model: 'claude-sonnet-4-5', max_tokens: 64 } },
        {
          strategy: { mode: 'loadbalance' },
          targets: [
            { provider: '@bedrock-test', weight: 3, override_params: { model: BEDROCK_ID } },
            { provider: '@backup', weight: 1 },
          ],
        },
      ],
    });
    primary.reply(overloaded);
    bedrock.reply({ json: message([{ type: 'text', text: 'nested bedrock' }]) });
    const result = await chat(config, { model: 'anything' });
    expect(result.text).toBe('nested bedrock');
    expect(result.headers.get('x-gateway-last-used-option-index')).toBe('1.0');
    expect(primary.last().json).toMatchObject({ model: 'claude-sonnet-4-5', max_tokens: 64 });
    expect(bedrock.last().json.max_tokens).toBe(16);
    random = mulberry32(42);
  });

  it('reads a target three levels deep and refuses a fourth', async () => {
    third.reply(answer('deep'));
    const deep = {
      strategy: { mode: 'fallback' },
      targets: [
        {
          strategy: { mode: 'single' },
          targets: [{ strategy: { mode: 'single' }, targets: [{ provider: '@third' }] }],
        },
      ],
    };
    const result = await chat(JSON.stringify(deep));
    expect(result.headers.get('x-gateway-last-used-option-index')).toBe('0.0.0');
    const tooDeep = {
      strategy: { mode: 'fallback' },
      targets: [{ targets: [{ targets: [{ targets: [{ provider: '@third' }] }] }] }],
    };
    const error = await failure(chat(JSON.stringify(tooDeep)));
    expect(error.status).toBe(400);
    expect(error.error).toMatchObject({ code: 'invalid_config' });
  });

  it.each([
    [{ strategy: { mode: 'conditional' }, targets: [{ provider: '@primary' }] }, 'unsupported_value'],
    [{ strategy: { mode: 'fallback' }, targets: [{ provider: '@primary', api_key: 'sk-ant-x' }] }, 'invalid_config'],
    [{ strategy: { mode: 'fallback' }, targets: [] }, 'invalid_config'],
    [
      { strategy: { mode: 'fallback', on_status_codes: ['429'] }, targets: [{ provider: '@primary' }] },
      'invalid_config',
    ],
    [{ targets: [{ provider: '@primary', override_params: { stream: true } }] }, 'invalid_config'],
    [{ targets: [{ provider: '@primary', weight: -1 }] }, 'invalid_config'],
    [{ targets: [{ provider: '@primary', surprise: 1 }] }, 'invalid_config'],
    [{ provider: '@primary', targets: [{ provider: '@backup' }] }, 'invalid_config'],
  ])('refuses %j with 400 %s before any provider is called', async (config, code) => {
    const before = counts();
    const error = await failure(chat(JSON.stringify(config)));
    expect(error.status).toBe(400);
    expect(error.error).toMatchObject({ code });
    expect(since(before)).toEqual([0, 0, 0]);
  });
});

describe('named configs and policies', () => {
  it('uses a named config by slug, and a caller’s default when the request sends none', async () => {
    primary.reply(overloaded);
    backup.reply(answer('named'));
    const named = await chat('prod-fallback');
    expect(named.text).toBe('named');
    expect(named.headers.get('x-gateway-provider-used')).toBe('backup');
    backup.reply(answer('default of the key'));
    const byDefault = await chat(undefined, {}, { 'x-test-key-config': 'team-default' });
    expect(byDefault.headers.get('x-gateway-provider-used')).toBe('backup');
    // The request's own config wins over the caller's default.
    third.reply(answer('own config'));
    const own = await chat(
      JSON.stringify({ targets: [{ provider: '@third' }] }),
      {},
      { 'x-test-key-config': 'team-default' },
    );
    expect(own.text).toBe('own config');
    const unknown = await failure(chat('no-such-config'));
    expect(unknown.status).toBe(400);
    expect(unknown.error).toMatchObject({ code: 'invalid_config' });
  });

  it('uses a config the portkey-ai SDK sends in its config option', async () => {
    primary.reply(overloaded);
    backup.reply(answer('via portkey'));
    const client = new Portkey({
      apiKey: GATEWAY_KEY,
      baseURL: `${gateway.url}/v1`,
      config: { strategy: { mode: 'fallback' }, targets: [{ provider: '@primary' }, { provider: '@backup' }] },
    });
    const completion = (await client.chat.completions.create({
      model: 'claude-sonnet-4-5',
      max_tokens: 16,
      messages: [{ role: 'user', content: 'hi' }],
    })) as unknown as { choices: { message: { content: string } }[] };
    expect(completion.choices[0]?.message.content).toBe('via portkey');
  });

  it('skips a target the caller may not use, and refuses when none is left', async () => {
    denied.add('primary/claude-sonnet-4-5');
    backup.reply(answer('allowed one'));
    const before = counts();
    const result = await chat(fallback([{ provider: '@primary' }, { provider: '@backup' }]));
    expect(result.text).toBe('allowed one');
    expect(result.headers.get('x-gateway-last-used-option-index')).toBe('1');
    expect(since(before)).toEqual([0, 1, 0]);
    denied.add('backup/claude-sonnet-4-5');
    const none = await failure(chat(fallback([{ provider: '@primary' }, { provider: '@backup' }])));
    expect(none.status).toBe(403);
    expect(none.error).toMatchObject({ code: 'access_denied' });
    expect(since(before)).toEqual([0, 1, 0]);
    // A load balancer chooses among the targets the caller may use.
    random = () => 0;
    third.reply(answer('balanced to the allowed one'));
    const balanced = await chat(
      JSON.stringify({
        strategy: { mode: 'loadbalance' },
        targets: [{ provider: '@primary' }, { provider: '@third' }],
      }),
    );
    expect(balanced.text).toBe('balanced to the allowed one');
    random = mulberry32(42);
  });
});

describe('the response cache across targets', () => {
  it('keeps the answer under the first target’s key, whichever target gave it', async () => {
    const config = JSON.stringify({
      cache: { mode: 'simple' },
      strategy: { mode: 'fallback' },
      targets: [{ provider: '@primary' }, { provider: '@backup' }],
    });
    const body = { messages: [{ role: 'user', content: `cache across targets ${Date.now()}` }] };
    primary.reply(overloaded);
    backup.reply(answer('cached from backup'));
    const first = await chat(config, body);
    expect(first.headers.get('x-gateway-cache-status')).toBe('MISS');
    const before = counts();
    const again = await chat(config, body);
    expect(again.text).toBe('cached from backup');
    expect(again.headers.get('x-gateway-cache-status')).toBe('HIT');
    expect(again.headers.get('x-gateway-last-used-option-index')).toBe('0');
    expect(since(before)).toEqual([0, 0, 0]);
  });
});

import Anthropic from '@anthropic-ai/sdk';
import { Portkey } from 'portkey-ai';
import { GATEWAY_KEY, PROVIDER_KEY, gatewayFor, message, mockAnthropic, sse, thinkingEvents } from './support';

let mock: Awaited<ReturnType<typeof mockAnthropic>>;
let gateway: Awaited<ReturnType<typeof gatewayFor>>;

beforeAll(async () => {
  mock = await mockAnthropic();
  gateway = await gatewayFor(mock.url, {
    prompts: [
      {
        id: 'support-reply',
        provider: '@anthropic-test',
        model: 'claude-sonnet-4-5',
        max_tokens: 512,
        messages: [
          { role: 'system', content: 'You answer as {{persona}}.' },
          { role: 'user', content: [{ type: 'text', text: '{{question}}' }] },
        ],
      },
    ],
  });
});

afterAll(async () => {
  await gateway.close();
  await mock.close();
});

const anthropic = () => new Anthropic({ apiKey: GATEWAY_KEY, baseURL: gateway.url, maxRetries: 0 });

describe('the @anthropic-ai/sdk through /v1/messages', () => {
  it('creates a message with the @slug/ prefix removed and the catalog key upstream, never the gateway key', async () => {
    mock.reply({ json: message([{ type: 'text', text: 'Hi!' }]) });
    const result = await anthropic().messages.create({
      model: '@anthropic-test/claude-sonnet-4-5',
      max_tokens: 20,
      messages: [{ role: 'user', content: 'Hello' }],
    });
    expect(result.content).toEqual([{ type: 'text', text: 'Hi!' }]);
    const sent = mock.last();
    expect(sent.json).toEqual({
      model: 'claude-sonnet-4-5',
      max_tokens: 20,
      messages: [{ role: 'user', content: 'Hello' }],
    });
    expect(sent.headers['x-api-key']).toBe(PROVIDER_KEY);
    expect(JSON.stringify(sent.headers)).not.toContain(GATEWAY_KEY);
  });

  it('streams the upstream events unchanged and in order, with its beta header', async () => {
    mock.reply({ sse: thinkingEvents() });
    const events: unknown[] = [];
    const stream = await anthropic().beta.messages.create({
      model: '@anthropic-test/claude-sonnet-4-5',
      max_tokens: 4000,
      stream: true,
      messages: [{ role: 'user', content: 'Q' }],
      betas: ['interleaved-thinking-2025-05-14'],
    });
    for await (const event of stream) events.push(event);
    // The SDK itself drops `ping` events; the raw bytes are checked byte for byte below.
    expect(events).toEqual(
      thinkingEvents()
        .filter(([name]) => name !== 'ping')
        .map(([, data]) => data),
    );
    expect(mock.last().headers['anthropic-beta']).toBe('interleaved-thinking-2025-05-14');
  });

  it('passes the raw stream bytes through unchanged and keeps the query string (?beta=true)', async () => {
    mock.reply({ sse: thinkingEvents() });
    const response = await fetch(`${gateway.url}/v1/messages?beta=true`, {
      method: 'POST',
      headers: {
        'x-api-key': GATEWAY_KEY,
        'content-type': 'application/json',
        'x-gateway-provider': '@anthropic-test',
      },
      body: JSON.stringify({
        model: 'claude-sonnet-4-5',
        max_tokens: 10,
        stream: true,
        messages: [{ role: 'user', content: 'x' }],
      }),
    });
    expect(await response.text()).toBe(sse(thinkingEvents()));
    expect(mock.last().url).toBe('/v1/messages?beta=true');
  });

  it('counts tokens', async () => {
    mock.reply({ json: { input_tokens: 42 } });
    const count = await anthropic().messages.countTokens({
      model: '@anthropic-test/claude-sonnet-4-5',
      messages: [{ role: 'user', content: 'Hello' }],
    });
    expect(count.input_tokens).toBe(42);
    expect(mock.last().url).toBe('/v1/messages/count_tokens');
    expect(mock.last().json.model).toBe('claude-sonnet-4-5');
  });

  it('keeps upstream errors as they are, and answers its own in the Anthropic shape', async () => {
    mock.reply({
      status: 529,
      headers: { 'retry-after': '3' },
      json: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
    });
    const upstream = await fetch(`${gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': GATEWAY_KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ model: '@anthropic-test/claude-sonnet-4-5', max_tokens: 10, messages: [] }),
    });
    expect(upstream.status).toBe(529);
    expect(upstream.headers.get('retry-after')).toBe('3');
    expect(await upstream.json()).toEqual({
      type: 'error',
      error: { type: 'overloaded_error', message: 'Overloaded' },
    });
    const own = await fetch(`${gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': GATEWAY_KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ model: '@anthropic-test/claude-sonnet-4-5', messages: [] }),
    });
    expect(own.status).toBe(400);
    expect(await own.json()).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: 'max_tokens is required.' },
      code: 'max_tokens_required',
    });
  });
});

describe('large native bodies', () => {
  const document = (data: string) => ({
    model: '@anthropic-test/claude-sonnet-4-5',
    max_tokens: 5,
    messages: [
      {
        role: 'user',
        content: [
          { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data } },
          { type: 'text', text: 'Summarise "this" \u00e9t\u00e9.' },
        ],
      },
    ],
  });

  it('sends a multi-megabyte base64 document upstream byte for byte, with its exact length', async () => {
    const data = Buffer.alloc(3 * 1024 * 1024, 0x25).toString('base64');
    mock.reply({ json: message([{ type: 'text', text: 'read' }]) });
    const response = await fetch(`${gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': GATEWAY_KEY, 'content-type': 'application/json' },
      body: JSON.stringify(document(data)),
    });
    expect(response.status).toBe(200);
    const expected = JSON.stringify({ ...document(data), model: 'claude-sonnet-4-5' });
    expect(mock.last().body).toBe(expected);
    expect(Number(mock.last().headers['content-length'])).toBe(Buffer.byteLength(expected));
  });

  it('sends a body of unknown size (chunked) upstream as the same JSON', async () => {
    mock.reply({ json: message([{ type: 'text', text: 'read' }]) });
    const text = JSON.stringify(document('JVBERi0xLjQK'));
    const body = new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(text.slice(0, 40)));
        controller.enqueue(new TextEncoder().encode(text.slice(40)));
        controller.close();
      },
    });
    const response = await fetch(`${gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': GATEWAY_KEY, 'content-type': 'application/json' },
      body,
      duplex: 'half',
    } as RequestInit);
    expect(response.status).toBe(200);
    expect(mock.last().body).toBe(JSON.stringify({ ...document('JVBERi0xLjQK'), model: 'claude-sonnet-4-5' }));
  });
});

describe('the unmodified portkey-ai SDK', () => {
  it('makes a chat completion with provider @slug and strict compliance off', async () => {
    mock.reply({
      json: message([
        { type: 'thinking', thinking: 'hm', signature: 's' },
        { type: 'text', text: 'From portkey' },
      ]),
    });
    const portkey = new Portkey({
      apiKey: GATEWAY_KEY,
      baseURL: `${gateway.url}/v1`,
      provider: '@anthropic-test',
      strictOpenAiCompliance: false,
    });
    const completion = (await portkey.chat.completions.create({
      model: 'claude-sonnet-4-5',
      max_tokens: 50,
      messages: [{ role: 'user', content: 'Hi' }],
    })) as unknown as {
      choices: { message: { content: string; content_blocks?: unknown[] } }[];
    };
    expect(completion.choices[0]?.message.content).toBe('From portkey');
    expect(completion.choices[0]?.message.content_blocks).toHaveLength(2);
    expect(mock.last().json.model).toBe('claude-sonnet-4-5');
    expect(JSON.stringify(mock.last().headers)).not.toContain(GATEWAY_KEY);
  });
});

describe('catalog, prompts, config header and errors', () => {
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${gateway.url}/v1${path}`, {
      method: 'POST',
      headers: { 'x-gateway-api-key': GATEWAY_KEY, 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  const errorOf = async (response: Response) => ({
    status: response.status,
    ...((await response.json()) as { error: { code: string } }).error,
  });

  it.each([
    [
      'provider_required',
      { model: 'claude-sonnet-4-5', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] },
      {},
      400,
    ],
    [
      'unknown_provider',
      { model: '@nope/claude-sonnet-4-5', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] },
      {},
      400,
    ],
    [
      'unsupported_model',
      { model: '@kb/claude-sonnet-4-5', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] },
      {},
      400,
    ],
    [
      'model_not_enabled',
      { model: '@limited/claude-3-opus-20240229', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] },
      {},
      403,
    ],
    [
      'invalid_config',
      { model: '@anthropic-test/claude-sonnet-4-5', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] },
      { 'x-gateway-config': '{oops' },
      400,
    ],
    ['invalid_json', '{"model": ', {}, 400],
  ] as const)('answers %s', async (code, body, headers, status) => {
    expect(await errorOf(await post('/chat/completions', body, headers))).toMatchObject({ status, code });
  });

  it('answers 413 body_too_large past the body limit', async () => {
    const small = await gatewayFor(mock.url, { bodyLimit: 100 });
    const response = await fetch(`${small.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'x-gateway-api-key': GATEWAY_KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ padding: 'x'.repeat(500) }),
    });
    expect(await errorOf(response)).toMatchObject({ status: 413, code: 'body_too_large' });
    await small.close();
  });

  it('lets autoEnableNew pass models the gateway does not know yet', async () => {
    mock.reply({ json: message([{ type: 'text', text: 'new' }]) });
    const response = await post('/chat/completions', {
      model: '@limited/claude-future-9',
      max_tokens: 5,
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(response.status).toBe(200);
  });

  it('takes the provider from x-gateway-provider, x-portkey-provider or x-gateway-config', async () => {
    for (const headers of <Record<string, string>[]>[
      { 'x-gateway-provider': '@anthropic-test' },
      { 'x-portkey-provider': 'anthropic-test' },
      { 'x-gateway-config': '{"provider":"@anthropic-test"}' },
    ]) {
      mock.reply({ json: message([{ type: 'text', text: 'ok' }]) });
      expect(
        (
          await post(
            '/chat/completions',
            { model: 'claude-sonnet-4-5', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] },
            headers,
          )
        ).status,
      ).toBe(200);
    }
  });

  it('lists models per provider and across providers', async () => {
    const all = (await (
      await fetch(`${gateway.url}/v1/models`, { headers: { 'x-gateway-api-key': GATEWAY_KEY } })
    ).json()) as { object: string; data: { id: string }[] };
    expect(all.object).toBe('list');
    expect(all.data.map((m) => m.id)).toContain('@anthropic-test/claude-sonnet-4-5');
    expect(all.data.map((m) => m.id)).toContain('@limited/claude-sonnet-4-5');
    const one = (await (
      await fetch(`${gateway.url}/v1/models`, {
        headers: { 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-provider': '@limited' },
      })
    ).json()) as { data: { id: string }[] };
    expect(one.data.map((m) => m.id)).toEqual(['claude-sonnet-4-5']);
  });

  it('renders a stored prompt with variables, streaming and not; missing variables and unknown prompts are refused', async () => {
    mock.reply({ json: message([{ type: 'text', text: 'Sure' }]) });
    const response = await post('/prompts/support-reply/completions', {
      variables: { persona: 'a pirate', question: 'Where is my order?' },
      max_tokens: 64,
    });
    expect(
      ((await response.json()) as { choices: { message: { content: string } }[] }).choices[0]?.message.content,
    ).toBe('Sure');
    expect(mock.last().json).toMatchObject({
      model: 'claude-sonnet-4-5',
      max_tokens: 64,
      system: [{ type: 'text', text: 'You answer as a pirate.' }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Where is my order?' }] }],
    });
    mock.reply({ sse: thinkingEvents() });
    const streamed = await (
      await post('/prompts/support-reply/completions', { variables: { persona: 'p', question: 'q' }, stream: true })
    ).text();
    expect(streamed).toContain('"content":" is 42."');
    expect(streamed.trim().endsWith('data: [DONE]')).toBe(true);
    expect(
      await errorOf(await post('/prompts/support-reply/completions', { variables: { persona: 'x' } })),
    ).toMatchObject({ status: 400, code: 'missing_variable' });
    expect(await errorOf(await post('/prompts/nope/completions', {}))).toMatchObject({
      status: 404,
      code: 'prompt_not_found',
    });
  });
});

import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GATEWAY_KEY, gatewayFor, message, mockAnthropic } from './support';
import { retryDelay, MAX_RETRY_DELAY_MS } from '../src';

let mock: Awaited<ReturnType<typeof mockAnthropic>>;
let gateway: Awaited<ReturnType<typeof gatewayFor>>;

beforeAll(async () => {
  mock = await mockAnthropic();
  gateway = await gatewayFor(mock.url);
});

afterAll(async () => {
  await gateway.close();
  await mock.close();
});

const chat = (extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
  fetch(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'x-gateway-api-key': GATEWAY_KEY, 'content-type': 'application/json', ...headers },
    body: JSON.stringify({
      model: '@anthropic-test/claude-sonnet-4-5',
      max_tokens: 5,
      messages: [{ role: 'user', content: 'x' }],
      ...extra,
    }),
  });

describe('retries, timeouts and disconnects', () => {
  it('retries the listed statuses, honouring retry-after, then answers', async () => {
    const before = mock.requests.length;
    const overloaded = { type: 'error', error: { type: 'overloaded_error', message: 'busy' } };
    mock.reply(
      { status: 529, headers: { 'retry-after': '0' }, json: overloaded },
      { status: 503, headers: { 'retry-after': '0' }, json: overloaded },
      { json: message([{ type: 'text', text: 'third time' }]) },
    );
    const response = await chat(
      {},
      { 'x-gateway-config': JSON.stringify({ retry: { attempts: 2, on_status_codes: [503, 529] } }) },
    );
    expect(response.status).toBe(200);
    expect(
      ((await response.json()) as { choices: { message: { content: string } }[] }).choices[0]?.message.content,
    ).toBe('third time');
    expect(mock.requests.length - before).toBe(3);
  });

  it('does not retry statuses that are not listed, and stops after the attempts', async () => {
    const before = mock.requests.length;
    mock.reply({ status: 400, json: { type: 'error', error: { type: 'invalid_request_error', message: 'bad' } } });
    expect((await chat({}, { 'x-gateway-config': '{"retry":{"attempts":3,"on_status_codes":[429]}}' })).status).toBe(
      400,
    );
    expect(mock.requests.length - before).toBe(1);
    mock.reply(
      ...Array.from({ length: 2 }, () => ({
        status: 429,
        headers: { 'retry-after': '0' },
        json: { type: 'error', error: { type: 'rate_limit_error', message: 'slow' } },
      })),
    );
    const limited = await chat({}, { 'x-gateway-config': '{"retry":{"attempts":1}}' });
    expect(limited.status).toBe(429);
    expect(mock.requests.length - before).toBe(3);
  });

  it('computes backoff with jitter, and honours retry-after in seconds or as a date (capped)', () => {
    expect(retryDelay(1, undefined, () => 0.5)).toBe(125);
    expect(retryDelay(3, undefined, () => 0.999)).toBe(999);
    expect(retryDelay(1, '2', () => 0)).toBe(2000);
    expect(retryDelay(1, '100000', () => 0)).toBe(MAX_RETRY_DELAY_MS);
    expect(
      retryDelay(
        1,
        new Date(10_000).toUTCString(),
        () => 0,
        () => 5_000,
      ),
    ).toBe(5000);
  });

  it('answers 504 upstream_timeout after request_timeout, and 502 upstream_unreachable when the provider is down', async () => {
    mock.reply({ hang: true });
    const slow = await chat({ stream: true }, { 'x-gateway-config': '{"request_timeout":1}' });
    // The hanging mock sends headers at once: a stream that started is never retried or timed out by headers.
    expect(slow.status).toBe(200);
    await slow.body?.cancel();
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const silentUrl = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    const slowGateway = await gatewayFor(silentUrl);
    const timedOut = await fetch(`${slowGateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'x-gateway-api-key': GATEWAY_KEY,
        'content-type': 'application/json',
        'x-gateway-config': '{"request_timeout":150}',
      },
      body: JSON.stringify({
        model: '@anthropic-test/claude-sonnet-4-5',
        max_tokens: 5,
        messages: [{ role: 'user', content: 'x' }],
      }),
    });
    expect(timedOut.status).toBe(504);
    expect(((await timedOut.json()) as { error: { code: string } }).error.code).toBe('upstream_timeout');
    silent.closeAllConnections();
    silent.close();
    await slowGateway.close();
    const downGateway = await gatewayFor(silentUrl);
    const down = await fetch(`${downGateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': GATEWAY_KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ model: '@anthropic-test/claude-sonnet-4-5', max_tokens: 5, messages: [] }),
    });
    expect(down.status).toBe(502);
    expect(await down.json()).toMatchObject({ type: 'error', code: 'upstream_unreachable' });
    await downGateway.close();
  });

  it('keeps the provider connection when a stream ends after its message_stop', async () => {
    // A provider and gateway of its own, so that no other test's connections are in the pool.
    const provider = await mockAnthropic();
    const own = await gatewayFor(provider.url);
    const events: [string, unknown][] = [
      [
        'message_start',
        { type: 'message_start', message: { id: 'msg_keep', usage: { input_tokens: 1, output_tokens: 0 } } },
      ],
      ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 1 } }],
      ['message_stop', { type: 'message_stop' }],
    ];
    provider.reply({ sse: events, holdEnd: true }, { sse: events });
    const stream = () =>
      fetch(`${own.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'x-gateway-api-key': GATEWAY_KEY, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: '@anthropic-test/claude-sonnet-4-5',
          max_tokens: 5,
          stream: true,
          messages: [{ role: 'user', content: 'x' }],
        }),
      });
    // The client has its whole answer at message_stop; the provider's response ends afterwards.
    expect(await (await stream()).text()).toContain('data: [DONE]');
    await provider.endHeld();
    expect(await (await stream()).text()).toContain('data: [DONE]');
    expect(provider.requests.map((r) => r.connection)).toEqual([1, 1]);
    await own.close();
    await provider.close();
  });

  it('aborts the upstream request when the client disconnects mid-stream', async () => {
    mock.reply({ hang: true });
    const controller = new AbortController();
    const response = await chat({ stream: true }, {});
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).toContain('"role":"assistant"');
    controller.abort();
    await reader.cancel();
    await mock.closed.at(-1);
    expect(mock.closed.length).toBeGreaterThan(0);
  });
});

describe('a PDF over 32 MB through the route', () => {
  it('answers 413 pdf_too_large in the OpenAI shape, within the 50 MB body limit, without calling upstream', async () => {
    const before = mock.requests.length;
    const base64 = 'A'.repeat(Math.ceil(((32 * 1024 * 1024 + 16) * 4) / 3 / 4) * 4);
    const response = await chat({
      messages: [{ role: 'user', content: [{ type: 'file', file: { file_data: base64 } }] }],
    });
    expect(response.status).toBe(413);
    expect(await response.json()).toEqual({
      error: {
        message: 'The PDF is larger than 32 MB.',
        type: 'invalid_request_error',
        param: 'messages[0].content[0].file.file_data',
        code: 'pdf_too_large',
      },
    });
    expect(mock.requests.length).toBe(before);
  });
});

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { createModelRoutes, type ModelRouterOptions } from '../src';
import { GATEWAY_KEY, gatewayFor, sse } from './support';

/** A provider of the test's own: `answer` handles every request; the number of calls is counted. */
async function provider(answer: (req: IncomingMessage, res: ServerResponse) => void) {
  let calls = 0;
  const closed: Promise<void>[] = [];
  const server = createServer((req, res) => {
    calls++;
    closed.push(new Promise((resolve) => res.once('close', () => resolve())));
    req.resume();
    req.once('end', () => answer(req, res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls: () => calls,
    closed,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const START: [string, unknown][] = [
  [
    'message_start',
    { type: 'message_start', message: { id: 'msg_idle', usage: { input_tokens: 1, output_tokens: 0 } } },
  ],
  ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
  ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hel' } }],
];

/** Sends stream headers, then the events of `events` (maybe none), then nothing. */
const goesQuiet = (events: [string, unknown][]) => (_req: IncomingMessage, res: ServerResponse) => {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.flushHeaders();
  if (events.length > 0) res.write(sse(events));
};

const body = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    model: '@anthropic-test/claude-sonnet-4-5',
    max_tokens: 5,
    messages: [{ role: 'user', content: 'x' }],
    ...extra,
  });

describe('the idle timeout of provider streams', () => {
  it('is validated at the factory', () => {
    for (const bad of [0, -5, Number.NaN, Infinity, '60000']) {
      expect(() => createModelRoutes({ streamIdleTimeoutMs: bad as number })).toThrow(
        /streamIdleTimeoutMs must be a positive number of milliseconds/,
      );
    }
  });

  it.each([
    ['sends stream headers, then nothing', [] as [string, unknown][]],
    ['stops mid-stream', START],
  ])('ends a chat completion stream with an OpenAI error frame when the provider %s', async (_name, events) => {
    const upstream = await provider(goesQuiet(events));
    const gateway = await gatewayFor(upstream.url, { streamIdleTimeoutMs: 200 });
    const client = new OpenAI({ apiKey: GATEWAY_KEY, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
    const stream = await client.chat.completions.create({
      model: '@anthropic-test/claude-sonnet-4-5',
      max_tokens: 5,
      stream: true,
      messages: [{ role: 'user', content: 'x' }],
    });
    const received: string[] = [];
    await expect(
      (async () => {
        for await (const chunk of stream) received.push(chunk.choices[0]?.delta.content ?? '');
      })(),
    ).rejects.toThrow(/sent nothing for 200 ms/);
    expect(received.join('')).toBe(events.length > 0 ? 'Hel' : '');
    // The provider's connection is closed too.
    await upstream.closed[0];
    await gateway.close();
    await upstream.close();
  });

  it.each([
    ['sends stream headers, then nothing', [] as [string, unknown][]],
    ['stops mid-stream', START],
  ])('ends a native /v1/messages stream with an Anthropic error event when the provider %s', async (_name, events) => {
    const upstream = await provider(goesQuiet(events));
    const gateway = await gatewayFor(upstream.url, { streamIdleTimeoutMs: 200 });
    const response = await fetch(`${gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': GATEWAY_KEY, 'content-type': 'application/json', accept: 'text/event-stream' },
      body: body({ stream: true }),
    });
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text.startsWith(sse(events))).toBe(true);
    const tail = text.slice(sse(events).length);
    expect(tail).toMatch(/^event: error\ndata: (.*)\n\n$/);
    expect(JSON.parse(tail.split('\n')[1]?.slice('data: '.length) as string)).toEqual({
      type: 'error',
      error: { type: 'timeout_error', message: 'The provider sent nothing for 200 ms; the stream was ended.' },
    });
    await upstream.closed[0];
    await gateway.close();
    await upstream.close();
  });

  it('answers 504 upstream_timeout when a non-streamed answer stops midway', async () => {
    const upstream = await provider((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
      res.write('{"id":"msg_');
    });
    const gateway = await gatewayFor(upstream.url, { streamIdleTimeoutMs: 200 });
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'x-api-key': GATEWAY_KEY, 'content-type': 'application/json' },
      body: body(),
    });
    expect(response.status).toBe(504);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('upstream_timeout');
    await gateway.close();
    await upstream.close();
  });
});

describe('gateway limits on client-chosen retries', () => {
  const unavailable = (retryAfter: string) => (_req: IncomingMessage, res: ServerResponse) => {
    res.writeHead(503, { 'content-type': 'application/json', 'retry-after': retryAfter });
    res.end('{"type":"error","error":{"type":"api_error","message":"unavailable"}}');
  };
  const chat = (url: string) =>
    fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'x-api-key': GATEWAY_KEY,
        'content-type': 'application/json',
        'x-gateway-config': JSON.stringify({ retry: { attempts: 10, on_status_codes: [503] } }),
      },
      body: body(),
    });

  it('are validated at the factory', () => {
    for (const bad of [-1, 1.5, 11, Number.NaN]) {
      expect(() => createModelRoutes({ maxRetryAttempts: bad })).toThrow(/maxRetryAttempts must be a whole number/);
    }
    for (const bad of [0, -1, Infinity]) {
      expect(() => createModelRoutes({ maxRetryTimeMs: bad })).toThrow(/maxRetryTimeMs must be a positive number/);
    }
  });

  it.each([
    [{}, 4],
    [{ maxRetryAttempts: 1 }, 2],
    [{ maxRetryAttempts: 0 }, 1],
  ] as [Partial<ModelRouterOptions>, number][])(
    'gives a request asking for 10 retries at most maxRetryAttempts (%j: %i calls)',
    async (options, calls) => {
      const upstream = await provider(unavailable('0'));
      const gateway = await gatewayFor(upstream.url, options);
      const response = await chat(gateway.url);
      expect(response.status).toBe(503);
      expect(upstream.calls()).toBe(calls);
      await gateway.close();
      await upstream.close();
    },
  );

  it('starts no retry that would begin after maxRetryTimeMs', async () => {
    const upstream = await provider(unavailable('1'));
    const gateway = await gatewayFor(upstream.url, { maxRetryAttempts: 10, maxRetryTimeMs: 1500 });
    const started = performance.now();
    const response = await chat(gateway.url);
    expect(response.status).toBe(503);
    // Calls at 0 s and 1 s; the next would start at 2 s, after the 1.5 s budget.
    expect(upstream.calls()).toBe(2);
    expect(performance.now() - started).toBeLessThan(1500);
    await gateway.close();
    await upstream.close();
  });
});

describe('a client that disconnects while the gateway waits for the provider', () => {
  it('is not reported as an internal error, and the provider request is aborted', async () => {
    let received!: () => void;
    const waiting = new Promise<void>((resolve) => (received = resolve));
    // Never answers: tells the test it has the request.
    const upstream = await provider(() => received());
    const internalErrors: unknown[] = [];
    const routes = createModelRoutes({
      providers: [{ slug: 'anthropic-test', provider: 'anthropic', apiKey: 'sk-test', baseUrl: upstream.url }],
      onInternalError: (error) => internalErrors.push(error),
    });
    const handled: Promise<void>[] = [];
    const server = createServer((req, res) => {
      handled.push(
        (routes.match(req.method, '/chat/completions') as NonNullable<ReturnType<typeof routes.match>>)(req, res),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const controller = new AbortController();
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const answer = fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: body(),
      signal: controller.signal,
    }).catch((error: unknown) => error);
    // The provider got the request: the gateway is waiting for its headers.
    await waiting;
    controller.abort();
    await answer;
    await upstream.closed[0];
    await handled[0];
    expect(internalErrors).toEqual([]);
    server.closeAllConnections();
    server.close();
    await upstream.close();
  });
});

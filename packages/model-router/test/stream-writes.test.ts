import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { ChatStreamTranslator } from '../src';
import { GATEWAY_KEY, gatewayFor, sse } from './support';

jest.setTimeout(60_000);

/** A stream of `count` text deltas, with multi-byte text and a few deltas large enough to cross slices. */
function events(count: number): [string, unknown][] {
  const list: [string, unknown][] = [
    [
      'message_start',
      {
        type: 'message_start',
        message: {
          id: 'msg_w',
          type: 'message',
          role: 'assistant',
          model: 'claude-sonnet-4-5',
          content: [],
          usage: { input_tokens: 3, output_tokens: 1 },
        },
      },
    ],
    ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
  ];
  for (let i = 0; i < count; i++) {
    const text = i % 97 === 5 ? `é€😀"\\\n${'x'.repeat(20_000)}ü` : `token ${i} é€😀 `;
    list.push(['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } }]);
  }
  list.push(
    ['content_block_stop', { type: 'content_block_stop', index: 0 }],
    [
      'message_delta',
      {
        type: 'message_delta',
        delta: { stop_reason: 'end_turn', stop_sequence: null },
        usage: { output_tokens: count },
      },
    ],
    ['message_stop', { type: 'message_stop' }],
  );
  return list;
}

type Mode = 'trickle' | 'burst' | 'lockstep';

/**
 * An upstream that sends the stream as the test asks: `trickle` one event per write, each on its
 * own turn of the event loop (as a provider does); `burst` all events in one write; `lockstep`
 * one event, then the next only once the test has seen the previous one reach the client.
 */
async function upstream(list: [string, unknown][]) {
  let mode: Mode = 'trickle';
  let step: (() => void) | undefined;
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      let parts = list.map((e) => sse([e]));
      if (mode === 'burst') return res.end(parts.join(''));
      // In lockstep the first delta comes with the two events before it, the last three together.
      if (mode === 'lockstep') parts = [parts.slice(0, 3).join(''), ...parts.slice(3, -3), parts.slice(-3).join('')];
      let next = 0;
      const send = () => {
        const part = parts[next++] as string;
        if (next === parts.length) return res.end(part);
        res.write(part);
        if (mode === 'trickle') setImmediate(send);
        else step = send;
      };
      send();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    text: list.map((e) => sse([e])).join(''),
    setMode: (m: Mode) => (mode = m),
    /** Sends the next event of a `lockstep` stream. */
    step: () => step?.(),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Posts and collects the answer's body, the chunks it came in, and calls `onChunk` on each. */
function post(
  url: string,
  path: string,
  body: unknown,
  onChunk: (text: string) => void = () => undefined,
): Promise<{ text: string; chunks: number }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}${path}`,
      { method: 'POST', headers: { 'content-type': 'application/json', 'x-gateway-api-key': GATEWAY_KEY } },
      (res) => {
        const received: Buffer[] = [];
        res.on('data', (chunk: Buffer) => {
          received.push(chunk);
          onChunk(Buffer.concat(received).toString('utf8'));
        });
        res.on('end', () => resolve({ text: Buffer.concat(received).toString('utf8'), chunks: received.length }));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

const chatBody = {
  model: '@anthropic-test/claude-sonnet-4-5',
  max_tokens: 16,
  stream: true,
  messages: [{ role: 'user', content: 'hi' }],
};
const nativeBody = { ...chatBody, messages: [{ role: 'user', content: 'hi' }] };
const sameSecond = (text: string) => text.replace(/"created":\d+/g, '"created":0');

describe('stream writes', () => {
  const list = events(300);
  let up: Awaited<ReturnType<typeof upstream>>;
  let gateway: Awaited<ReturnType<typeof gatewayFor>>;
  beforeAll(async () => {
    up = await upstream(list);
    gateway = await gatewayFor(up.url);
  });
  afterAll(async () => {
    await gateway.close();
    await up.close();
  });

  it('writes a stream whose events come one per chunk in far fewer writes than events, with the same bytes as when they come at once', async () => {
    up.setMode('burst');
    const burstChat = await post(gateway.url, '/v1/chat/completions', chatBody);
    const burstNative = await post(gateway.url, '/v1/messages', nativeBody);
    up.setMode('trickle');
    const chat = await post(gateway.url, '/v1/chat/completions', chatBody);
    const native = await post(gateway.url, '/v1/messages', nativeBody);
    expect(native.text).toBe(up.text);
    expect(burstNative.text).toBe(up.text);
    expect(sameSecond(chat.text)).toBe(sameSecond(burstChat.text));
    expect(chat.text.split('\n\n').filter((f) => f.startsWith('data: {')).length).toBe(list.length - 3);
    expect(chat.text.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(chat.text).toContain(JSON.stringify(`é€😀"\\\n${'x'.repeat(20_000)}ü`));
    // 305 events: one write each would be 302 chunks (chat) and 305 (native).
    expect(chat.chunks).toBeLessThan(100);
    expect(native.chunks).toBeLessThan(100);
  });

  it('writes each event at once when the provider sends the next one only after it (no event is held back)', async () => {
    const lock = await upstream(events(3));
    lock.setMode('lockstep');
    const gw = await gatewayFor(lock.url);
    try {
      for (const [path, body] of [
        ['/v1/chat/completions', chatBody],
        ['/v1/messages', nativeBody],
      ] as const) {
        let seen = 0;
        // The provider sends its next event only once the client has the delta before it.
        const answer = post(gw.url, path, body, (text) => {
          while (seen < 3 && text.includes(`token ${seen} `)) {
            seen++;
            lock.step();
          }
        });
        const timeout = new Promise<never>((_, reject) =>
          setTimeout(() => reject(new Error(`${path}: an event was held back (${seen} seen)`)), 5_000).unref(),
        );
        const { text } = await Promise.race([answer, timeout]);
        expect(seen).toBe(3);
        expect(text).toContain(path === '/v1/messages' ? 'message_stop' : 'data: [DONE]');
      }
    } finally {
      await gw.close();
      await lock.close();
    }
  });
});

describe('text deltas converted without parsing', () => {
  const created = 1_700_000_000;
  const convert = (strict: boolean, data: string) => {
    const translator = new ChatStreamTranslator({ strict, includeUsage: false, model: 'm', created });
    translator.push(
      'message_start',
      JSON.stringify({ type: 'message_start', message: { id: 'msg_1', model: 'claude', usage: {} } }),
    );
    translator.push(
      'content_block_start',
      '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}',
    );
    return translator.push('content_block_delta', data);
  };

  it('gives the chunk of the parsed event for any text and index, however the provider escapes it', () => {
    /** The text as a JSON string with every UTF-16 unit escaped (`\u00e9`), as a provider may write it. */
    const escaped = (text: string) =>
      `"${Array.from({ length: text.length }, (_, i) => `\\u${text.charCodeAt(i).toString(16).padStart(4, '0')}`).join('')}"`;
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.nat(1_000_000), fc.boolean(), (text, index, strict) => {
        const delta = { type: 'text_delta', text };
        // As Anthropic writes it (the quick path when the text needs no escape), with its keys in
        // another order, and with every character escaped.
        const variants = [
          JSON.stringify({ type: 'content_block_delta', index, delta }),
          JSON.stringify({ index, delta, type: 'content_block_delta' }),
          `{"type":"content_block_delta","index":${index},"delta":{"type":"text_delta","text":${escaped(text)}}}`,
        ];
        for (const data of variants) {
          const out = convert(strict, data);
          const chunk = JSON.parse(out.slice('data: '.length)) as { id: string; model: string };
          const expected = {
            id: chunk.id,
            object: 'chat.completion.chunk',
            created,
            model: chunk.model,
            choices: [
              {
                index: 0,
                delta: strict
                  ? { content: text }
                  : { content: text, content_blocks: [{ index, delta: { type: 'text', text } }] },
                logprobs: null,
                finish_reason: null,
              },
            ],
          };
          expect(out).toBe(`data: ${JSON.stringify(expected)}\n\n`);
        }
      }),
      { numRuns: 500 },
    );
  });
});

describe('non-streamed native answers', () => {
  /**
   * An upstream whose JSON answer of `size` bytes (with its content-length) comes in two writes: the
   * first half, then the rest only once the test calls `release`.
   */
  async function halting(size: number) {
    let release: () => void = () => undefined;
    const server: Server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const text = `{"id":"msg_big","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"`;
        const tail = '"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}';
        const body = Buffer.from(text + 'x'.repeat(size - text.length - tail.length) + tail);
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
        res.write(body.subarray(0, size / 2));
        release = () => res.end(body.subarray(size / 2));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      release: () => release(),
      close: () => new Promise<void>((resolve) => server.close(() => resolve())),
    };
  }

  it('passes an answer over 1 MiB on as it comes; one of 1 MiB leaves whole, once it has arrived', async () => {
    for (const [size, passedBeforeEnd] of [
      [2 * 1024 * 1024, true],
      [1024 * 1024, false],
    ] as const) {
      const up = await halting(size);
      const gateway = await gatewayFor(up.url);
      try {
        let sawBytes = false;
        const answer = post(gateway.url, '/v1/messages', { ...nativeBody, stream: false }, () => (sawBytes = true));
        // The first half has reached the gateway well before this; the rest is held upstream.
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect([size, sawBytes]).toEqual([size, passedBeforeEnd]);
        up.release();
        const { text } = await answer;
        expect(text.length).toBe(size);
        expect(JSON.parse(text)).toMatchObject({ id: 'msg_big', stop_reason: 'end_turn' });
      } finally {
        await gateway.close();
        await up.close();
      }
    }
  });
});

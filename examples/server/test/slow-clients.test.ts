import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { failedStart, startGateway, writeConfig, type RunningGateway } from './support';

// Slow and numerous clients against the real gateway process (dist/main.js) with small limits:
// trickled headers and bodies are cut at their timeouts, one peer address cannot hold more than
// its share of connections, streamed answers outlive the request timeout, and /healthz stays
// fast for everyone else meanwhile.

jest.setTimeout(60_000);

const KEY = 'gw-slow-clients-key-0001';
const HEADERS_TIMEOUT_MS = 1_000;
const REQUEST_TIMEOUT_MS = 2_000;
const KEEP_ALIVE_TIMEOUT_MS = 500;
const PER_IP = 120;
/** How late past a limit a cut may come: Node looks for expired connections every 250 ms here. */
const SLACK_MS = 1_000;

let gateway: RunningGateway;
let provider: Server;
const trickles = new Set<NodeJS.Timeout>();
const sockets = new Set<Socket>();

beforeAll(async () => {
  // A provider whose stream pauses longer than the request timeout before it ends.
  provider = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const frame = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const message = {
        id: 'msg_slow',
        type: 'message',
        role: 'assistant',
        model: 'claude-sonnet-4-5',
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 1, output_tokens: 0 },
      };
      res.write(frame('message_start', { type: 'message_start', message }));
      res.write(
        frame('content_block_start', {
          type: 'content_block_start',
          index: 0,
          content_block: { type: 'text', text: '' },
        }),
      );
      setTimeout(() => {
        res.write(
          frame('content_block_delta', {
            type: 'content_block_delta',
            index: 0,
            delta: { type: 'text_delta', text: 'late' },
          }),
        );
        res.write(frame('content_block_stop', { type: 'content_block_stop', index: 0 }));
        res.write(
          frame('message_delta', {
            type: 'message_delta',
            delta: { stop_reason: 'end_turn', stop_sequence: null },
            usage: { output_tokens: 1 },
          }),
        );
        res.end(frame('message_stop', { type: 'message_stop' }));
      }, REQUEST_TIMEOUT_MS + 1_000);
    });
  });
  await new Promise<void>((resolve) => provider.listen(0, '127.0.0.1', resolve));
  const config = writeConfig({
    auth: { apiKeys: [{ key: KEY, user: { user_id: 'slow' } }] },
    providers: [
      {
        slug: 'claude',
        provider: 'anthropic',
        apiKey: 'sk-ant-slow-0002',
        baseUrl: `http://127.0.0.1:${(provider.address() as AddressInfo).port}`,
      },
    ],
  });
  gateway = await startGateway({
    GATEWAY_CONFIG: config,
    HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
    REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
    KEEP_ALIVE_TIMEOUT_MS: String(KEEP_ALIVE_TIMEOUT_MS),
    MAX_CONNECTIONS_PER_IP: String(PER_IP),
  });
});

afterEach(() => {
  for (const timer of trickles) clearInterval(timer);
  trickles.clear();
  for (const socket of sockets) socket.destroy();
  sockets.clear();
});

afterAll(async () => {
  await gateway?.stop();
  provider.closeAllConnections();
  await new Promise((resolve) => provider.close(resolve));
});

interface Opened {
  socket: Socket;
  /** Resolves when the gateway closed the socket: ms since it was opened, and what it answered. */
  closed: Promise<{ afterMs: number; answer: string }>;
}

/** Opens a connection (from `localAddress`, any 127.x address) and writes `first` once connected. */
function open(first: string, localAddress = '127.0.0.1'): Promise<Opened> {
  const { port } = new URL(gateway.url);
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const socket = connect({ port: Number(port), host: '127.0.0.1', localAddress });
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    let answer = '';
    socket.on('data', (c: Buffer) => (answer += c));
    const closed = new Promise<{ afterMs: number; answer: string }>((done) =>
      socket.once('close', () => done({ afterMs: performance.now() - started, answer })),
    );
    socket.once('connect', () => {
      socket.write(first);
      resolve({ socket, closed });
    });
    socket.once('error', (error) => {
      if (!socket.connecting) return;
      reject(error);
    });
  });
}

/** Writes `piece` every `everyMs` until the socket closes (the slow client's behaviour under test). */
function trickle(socket: Socket, piece: string, everyMs: number): void {
  const timer = setInterval(() => {
    if (socket.destroyed || socket.writableEnded) return void clearInterval(timer);
    socket.write(piece);
  }, everyMs);
  trickles.add(timer);
  socket.once('close', () => clearInterval(timer));
}

async function healthzMs(localAddress?: string): Promise<number> {
  const started = performance.now();
  const opened = await open('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n', localAddress);
  const { answer } = await opened.closed;
  expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 200 OK');
  return performance.now() - started;
}

const slowHeaders = 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n';
const slowBody =
  `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nx-gateway-api-key: ${KEY}\r\n` +
  'content-type: application/json\r\ncontent-length: 100000\r\n\r\n{"model":';

describe('slow clients', () => {
  it('a client trickling its headers is cut at HEADERS_TIMEOUT_MS', async () => {
    const { socket, closed } = await open(slowHeaders);
    trickle(socket, 'x-slow: 1\r\n', 100);
    const { afterMs, answer } = await closed;
    expect(afterMs).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 50);
    expect(afterMs).toBeLessThan(HEADERS_TIMEOUT_MS + SLACK_MS);
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('a client trickling its body is cut at REQUEST_TIMEOUT_MS', async () => {
    const { socket, closed } = await open(slowBody);
    trickle(socket, ' ', 100);
    const { afterMs, answer } = await closed;
    expect(afterMs).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 50);
    expect(afterMs).toBeLessThan(REQUEST_TIMEOUT_MS + SLACK_MS);
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('an idle keep-alive connection is closed after KEEP_ALIVE_TIMEOUT_MS', async () => {
    const { closed } = await open('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    const { afterMs, answer } = await closed;
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    // Node keeps an idle socket open up to 1 s past keepAliveTimeout.
    expect(afterMs).toBeGreaterThanOrEqual(KEEP_ALIVE_TIMEOUT_MS - 50);
    expect(afterMs).toBeLessThan(KEEP_ALIVE_TIMEOUT_MS + 1_000 + SLACK_MS);
  });

  it('answers /healthz within 100 ms while 100 sockets trickle headers and bodies', async () => {
    const held = await Promise.all(
      Array.from({ length: 100 }, async (_, i) => {
        const opened = await open(i % 2 === 0 ? slowHeaders : slowBody);
        trickle(opened.socket, i % 2 === 0 ? 'x-slow: 1\r\n' : ' ', 200);
        return opened;
      }),
    );
    const timings: number[] = [];
    for (let i = 0; i < 5; i++) timings.push(await healthzMs());
    expect(held.every((h) => !h.socket.destroyed)).toBe(true);
    // The median under 100 ms; one probe may wait on a busy CI machine's scheduler, not on the gateway.
    timings.sort((a, b) => a - b);
    expect(timings[2]).toBeLessThan(100);
    expect(timings[4]).toBeLessThan(500);
    // And every one of them is cut by its limit.
    const cuts = await Promise.all(held.map((h) => h.closed));
    expect(Math.max(...cuts.map((c) => c.afterMs))).toBeLessThan(REQUEST_TIMEOUT_MS + SLACK_MS);
  });

  it('refuses connections past MAX_CONNECTIONS_PER_IP from one address, and serves other addresses', async () => {
    const held = await Promise.all(Array.from({ length: PER_IP }, () => open(slowBody)));
    for (const h of held) trickle(h.socket, ' ', 200);
    // One more from the same address: closed at once, without an answer.
    const extra = await open('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
    const refused = await extra.closed;
    expect(refused.answer).toBe('');
    expect(refused.afterMs).toBeLessThan(HEADERS_TIMEOUT_MS);
    // Another address is served meanwhile.
    expect(await healthzMs('127.0.0.2')).toBeLessThan(100);
    expect(held.every((h) => !h.socket.destroyed)).toBe(true);
    for (const h of held) h.socket.destroy();
    await Promise.all(held.map((h) => h.closed));
    // Once they are gone, the address is served again: as soon as the gateway has seen them close
    // (a moment after this side did), within a second.
    const deadline = performance.now() + 1_000;
    let answer = '';
    while (performance.now() < deadline) {
      const opened = await open('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
      answer = (await opened.closed).answer;
      if (answer !== '') break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 200 OK');
  });

  it('does not cut a streamed answer that lasts longer than REQUEST_TIMEOUT_MS', async () => {
    const started = performance.now();
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'x-gateway-api-key': KEY, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: '@claude/claude-sonnet-4-5',
        max_tokens: 5,
        stream: true,
        messages: [{ role: 'user', content: 'slow' }],
      }),
    });
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(performance.now() - started).toBeGreaterThan(REQUEST_TIMEOUT_MS);
    expect(text).toContain('late');
    expect(text).toContain('data: [DONE]');
  });
});

describe('limits from the environment', () => {
  it.each([
    [{ HEADERS_TIMEOUT_MS: 'soon' }, 'HEADERS_TIMEOUT_MS must be a whole number'],
    [{ MAX_CONNECTIONS_PER_IP: '0' }, 'MAX_CONNECTIONS_PER_IP must be a whole number of at least 1'],
    [{ HEADERS_TIMEOUT_MS: '5000', REQUEST_TIMEOUT_MS: '1000' }, 'must not be more than REQUEST_TIMEOUT_MS'],
  ])('%j stops start-up with what to write', async (env, message) => {
    const { code, stderr } = await failedStart(env);
    expect(code).toBe(1);
    expect(stderr).toContain(message);
  });
});

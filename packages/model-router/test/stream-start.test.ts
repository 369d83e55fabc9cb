import { ServerResponse, createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { GATEWAY_KEY, gatewayFor, sse } from './support';

const MESSAGE_START: [string, unknown] = [
  'message_start',
  {
    type: 'message_start',
    message: { id: 'msg_start', model: 'claude-sonnet-4-5', usage: { input_tokens: 1, output_tokens: 0 } },
  },
];

/**
 * A provider whose stream starts as `start` says and then goes quiet: `with-event` sends its
 * headers and `message_start` in one write; `headers-only` sends its headers alone.
 */
async function quietProvider(start: 'with-event' | 'headers-only') {
  const responses = new Set<ServerResponse>();
  const server: Server = createServer((req, res) => {
    responses.add(res);
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (start === 'with-event') res.write(sse([MESSAGE_START]));
      else res.flushHeaders();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    /** Whether `res` is one of this provider's own responses. */
    owns: (res: unknown) => responses.has(res as ServerResponse),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Sends one streaming request over a raw socket; resolves with the first chunk the client reads. */
function firstChunk(url: string, path: string, body: string): Promise<string> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1');
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error('nothing arrived within 2 s'));
    }, 2000);
    socket.once('data', (chunk) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(chunk.toString('latin1'));
    });
    socket.once('error', reject);
    socket.write(
      `POST ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\nx-gateway-api-key: ${GATEWAY_KEY}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  });
}

const ROUTES = [
  {
    name: 'native /v1/messages',
    path: '/v1/messages',
    body: JSON.stringify({
      model: '@anthropic-test/claude-sonnet-4-5',
      max_tokens: 5,
      stream: true,
      messages: [{ role: 'user', content: 'x' }],
    }),
    firstEvent: 'event: message_start',
  },
  {
    name: 'chat completions',
    path: '/v1/chat/completions',
    body: JSON.stringify({
      model: '@anthropic-test/claude-sonnet-4-5',
      max_tokens: 5,
      stream: true,
      messages: [{ role: 'user', content: 'x' }],
    }),
    firstEvent: '"role":"assistant"',
  },
];

describe('the start of a streamed answer', () => {
  // Headers sent on their own are one more write, and one more wake-up of the client, before its
  // first event: counted on the gateway's side (a client may read both writes at once).
  let flushHeaders: jest.SpyInstance;
  beforeEach(() => (flushHeaders = jest.spyOn(ServerResponse.prototype, 'flushHeaders')));
  afterEach(() => flushHeaders.mockRestore());
  /** The gateway's calls of `flushHeaders` (the provider's own left out). */
  const gatewayFlushes = (upstream: { owns: (res: unknown) => boolean }) =>
    flushHeaders.mock.contexts.filter((res) => !upstream.owns(res)).length;

  for (const route of ROUTES) {
    it(`${route.name}: the headers leave in one packet with the first event when it came with the provider's headers`, async () => {
      const upstream = await quietProvider('with-event');
      const gateway = await gatewayFor(upstream.url);
      try {
        const chunk = await firstChunk(gateway.url, route.path, route.body);
        expect(chunk.startsWith('HTTP/1.1 200')).toBe(true);
        expect(chunk).toContain('text/event-stream');
        expect(chunk).toContain(route.firstEvent);
        expect(gatewayFlushes(upstream)).toBe(0);
      } finally {
        await gateway.close();
        await upstream.close();
      }
    });

    it(`${route.name}: the headers leave on their own, at once, when the provider sends no event yet`, async () => {
      const upstream = await quietProvider('headers-only');
      const gateway = await gatewayFor(upstream.url);
      try {
        const chunk = await firstChunk(gateway.url, route.path, route.body);
        expect(chunk.startsWith('HTTP/1.1 200')).toBe(true);
        expect(chunk).toContain('text/event-stream');
        expect(chunk).not.toContain('data:');
        expect(gatewayFlushes(upstream)).toBe(1);
      } finally {
        await gateway.close();
        await upstream.close();
      }
    });
  }
});

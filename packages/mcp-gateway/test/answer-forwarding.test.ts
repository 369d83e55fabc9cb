import { createServer, request as httpRequest, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { alice, setup } from './support';

/*
 * How an MCP server's answer reaches the client when nothing inspects it: an answer that is not an
 * event stream (a JSON-RPC response, an error) leaves whole with its headers and its length once it
 * has arrived, when it is at most 1 MiB (chunked or with a content-length); past that, and for an
 * event stream, it is piped as it comes. Either way the client gets the server's bytes.
 */

const MIB = 1024 * 1024;

let answer: (res: ServerResponse) => void = () => undefined;
const upstream = createServer((req, res) => {
  req.resume();
  req.on('end', () => answer(res));
});
let gateway: Awaited<ReturnType<typeof setup>>;

beforeAll(async () => {
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/mcp`;
  gateway = await setup({ apiKeys: [alice], mcpServers: [{ slug: 'plain', url }] });
});

afterAll(async () => {
  await gateway.close();
  upstream.closeAllConnections();
  await new Promise<void>((resolve) => upstream.close(() => resolve()));
});

interface Received {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  /** When each chunk arrived, in ms from the request. */
  arrivals: number[];
}

function call(onChunk?: (received: number) => void): Promise<Received> {
  const { port } = new URL(gateway.url);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = httpRequest({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/mcp/plain',
      headers: {
        'x-gateway-api-key': alice.key,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      const arrivals: number[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        arrivals.push(performance.now() - started);
        size += chunk.length;
        onChunk?.(size);
      });
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), arrivals }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}');
  });
}

/** A JSON-RPC result whose text makes it about `bytes` long. */
const resultOf = (bytes: number) =>
  Buffer.from(
    `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"${'x'.repeat(Math.max(0, bytes - 80))}"}]}}`,
  );

/** Writes `body` in `parts` chunks, each on its own turn of the event loop, then ends. */
function inChunks(res: ServerResponse, body: Buffer, parts: number) {
  const size = Math.ceil(body.length / parts);
  let at = 0;
  const next = () => {
    if (at >= body.length) return void res.end();
    res.write(body.subarray(at, at + size));
    at += size;
    setImmediate(next);
  };
  next();
}

describe('an MCP answer that is not an event stream', () => {
  it.each([
    ['chunked', false],
    ['with a content-length', true],
  ])('of a few KiB, %s, leaves whole with its length and the server’s own headers', async (_name, withLength) => {
    const body = resultOf(8 * 1024);
    answer = (res) => {
      res.writeHead(200, {
        'content-type': 'application/json',
        'mcp-session-id': 's-1',
        connection: 'keep-alive, x-hop',
        'x-hop': 'named by connection',
        ...(withLength ? { 'content-length': String(body.length) } : {}),
      });
      inChunks(res, body, 4);
    };
    const received = await call();
    expect(received.status).toBe(200);
    expect(received.body.equals(body)).toBe(true);
    expect(received.headers['content-length']).toBe(String(body.length));
    expect(received.headers['transfer-encoding']).toBeUndefined();
    expect(received.headers['mcp-session-id']).toBe('s-1');
    expect(received.headers['x-hop']).toBeUndefined();
  });

  it('past 1 MiB, chunked, is piped: the client has most of it before the server ends', async () => {
    const body = resultOf(3 * MIB);
    let lastMayGo!: () => void;
    const mayEnd = new Promise<void>((resolve) => (lastMayGo = resolve));
    answer = (res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(body.subarray(0, body.length - 100));
      void mayEnd.then(() => res.end(body.subarray(body.length - 100)));
    };
    const received = await call((size) => {
      if (size >= 2 * MIB) lastMayGo();
    });
    expect(received.body.equals(body)).toBe(true);
  });

  it.each([202, 204])('answered %i without a body reaches the client so', async (status) => {
    answer = (res) => res.writeHead(status).end();
    const received = await call();
    expect(received.status).toBe(status);
    expect(received.body).toHaveLength(0);
    if (status === 204) expect(received.headers['content-length']).toBeUndefined();
  });

  it('an event stream is still piped event by event', async () => {
    answer = (res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress"}\n\n');
      setTimeout(() => res.end('event: message\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\n\n'), 60);
    };
    const received = await call();
    expect(received.body.toString()).toContain('notifications/progress');
    // The first event reached the client well before the last.
    expect(received.arrivals.length).toBeGreaterThanOrEqual(2);
    expect((received.arrivals.at(-1) as number) - (received.arrivals[0] as number)).toBeGreaterThan(30);
  });
});

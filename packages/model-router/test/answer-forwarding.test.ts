import { createServer, request, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GATEWAY_KEY, gatewayFor } from './support';

// A non-streamed /v1/messages answer reaches the client byte for byte however the provider sends
// it: whole with its headers when it is at most 1 MiB (with a content-length or chunked, as a
// provider behind a CDN sends it), piped as it comes past that.

const MIB = 1024 * 1024;

/** How the provider answers: its JSON body, in chunks, with or without a content-length. */
let answer: (res: ServerResponse) => void = () => undefined;
const upstream = createServer((req, res) => {
  req.resume();
  req.on('end', () => answer(res));
});
let gateway: Awaited<ReturnType<typeof gatewayFor>>;

beforeAll(async () => {
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  gateway = await gatewayFor(`http://127.0.0.1:${(upstream.address() as AddressInfo).port}`);
});

afterAll(async () => {
  await gateway.close();
  upstream.closeAllConnections();
  await new Promise<void>((resolve) => upstream.close(() => resolve()));
});

/** A message whose text makes the JSON `bytes` long (about). */
function messageOf(bytes: number): Buffer {
  const head =
    '{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"';
  const tail = '"}],"usage":{"input_tokens":5,"output_tokens":7}}';
  return Buffer.from(`${head}${'x'.repeat(Math.max(0, bytes - head.length - tail.length))}${tail}`);
}

/** Writes `body` in `parts` chunks, each on its own turn of the event loop, then ends. */
function inChunks(res: ServerResponse, body: Buffer, parts: number, then?: () => void) {
  const size = Math.ceil(body.length / parts);
  let at = 0;
  const next = () => {
    if (at >= body.length) {
      res.end();
      then?.();
      return;
    }
    res.write(body.subarray(at, at + size));
    at += size;
    setImmediate(next);
  };
  next();
}

interface Received {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  /** Bytes the client had when the provider had sent everything but its last chunk. */
  beforeLast?: number;
}

function send(onChunk?: (received: number) => void): Promise<Received> {
  return new Promise((resolve, reject) => {
    const req = request(`${gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': GATEWAY_KEY },
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        size += chunk.length;
        onChunk?.(size);
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(JSON.stringify({ model: '@anthropic-test/claude-sonnet-4-5', max_tokens: 16, messages: [] }));
  });
}

describe('a non-streamed answer', () => {
  it.each([
    ['chunked, in 5 chunks', false, 5],
    ['chunked, in one chunk', false, 1],
    ['with a content-length, in 5 chunks', true, 5],
  ])('of a few KiB, %s, reaches the client whole, in one piece with its length', async (_name, withLength, parts) => {
    const body = messageOf(8 * 1024);
    answer = (res) => {
      res.writeHead(200, {
        'content-type': 'application/json',
        ...(withLength ? { 'content-length': String(body.length) } : {}),
      });
      inChunks(res, body, parts);
    };
    const received = await send();
    expect(received.status).toBe(200);
    expect(received.body.equals(body)).toBe(true);
    expect(received.headers['content-length']).toBe(String(body.length));
    expect(received.headers['transfer-encoding']).toBeUndefined();
  });

  it.each([
    ['chunked', false],
    ['with a content-length', true],
  ])('past 1 MiB, %s, is piped: the client has most of it before the provider ends', async (_name, withLength) => {
    const body = messageOf(3 * MIB);
    let sentAllButLast!: () => void;
    const allButLast = new Promise<void>((resolve) => (sentAllButLast = resolve));
    let lastMayGo!: () => void;
    const mayEnd = new Promise<void>((resolve) => (lastMayGo = resolve));
    answer = (res) => {
      res.writeHead(200, {
        'content-type': 'application/json',
        ...(withLength ? { 'content-length': String(body.length) } : {}),
      });
      // Everything but the last 100 bytes, then the rest once the client has had 2 MiB.
      res.write(body.subarray(0, body.length - 100), () => sentAllButLast());
      void mayEnd.then(() => res.end(body.subarray(body.length - 100)));
    };
    const received = await send((size) => {
      if (size >= 2 * MIB) lastMayGo();
    });
    await allButLast;
    expect(received.status).toBe(200);
    expect(received.body.equals(body)).toBe(true);
  });

  it('with an error status, chunked, reaches the client whole', async () => {
    const body = Buffer.from('{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}');
    answer = (res) => {
      res.writeHead(529, { 'content-type': 'application/json' });
      inChunks(res, body, 3);
    };
    const received = await send();
    expect(received.status).toBe(529);
    expect(received.body.equals(body)).toBe(true);
  });

  it('cut off midway by the provider leaves the client without a whole answer', async () => {
    const body = messageOf(8 * 1024);
    answer = (res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(body.subarray(0, 4096), () => res.destroy());
    };
    await expect(send()).rejects.toThrow();
  });
});

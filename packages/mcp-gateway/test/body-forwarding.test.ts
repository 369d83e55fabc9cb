import { channel } from 'node:diagnostics_channel';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { alice, recordingUpstream, setup } from './support';

/*
 * How an MCP request's body reaches the server when nothing inspects it: a small body (a
 * `content-length` of at most 64 KiB) is read whole and sent as one buffer, so undici writes it
 * with the headers instead of running its stream writer for the request; a larger or chunked body
 * is streamed. Either way the server gets the client's bytes and headers unchanged.
 */

/** What undici was handed as the body of each request it created (`undici:request:create`). */
const bodiesHanded: string[] = [];
const onCreate = (message: unknown) => {
  const body = (message as { request: { body: unknown } }).request.body;
  bodiesHanded.push(
    Buffer.isBuffer(body)
      ? 'buffer'
      : typeof body === 'string'
        ? 'string'
        : body === null || body === undefined
          ? 'none'
          : 'stream',
  );
};

let upstream: Awaited<ReturnType<typeof recordingUpstream>>;
let gateway: Awaited<ReturnType<typeof setup>>;

beforeAll(async () => {
  channel('undici:request:create').subscribe(onCreate);
  upstream = await recordingUpstream();
  gateway = await setup({ apiKeys: [alice], mcpServers: [{ slug: 'plain', url: `${upstream.url}/mcp` }] });
});

afterAll(async () => {
  channel('undici:request:create').unsubscribe(onCreate);
  await gateway.close();
  await upstream.close();
});

beforeEach(() => {
  bodiesHanded.length = 0;
  upstream.requests.length = 0;
});

/** POSTs `body` to the gateway's `plain` server, with a `content-length` unless `chunked`. */
function post(body: Buffer, contentType: string, chunked = false, method = 'POST'): Promise<number> {
  const { port } = new URL(gateway.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method,
        path: '/mcp/plain',
        headers: {
          'x-gateway-api-key': alice.key,
          'content-type': contentType,
          accept: 'application/json, text/event-stream',
          ...(chunked ? { 'transfer-encoding': 'chunked' } : { 'content-length': String(body.length) }),
        },
      },
      (res) => {
        res.resume();
        res.once('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.once('error', reject);
    if (chunked) {
      // Two chunks, so the body really is streamed in parts.
      req.write(body.subarray(0, 10));
      req.end(body.subarray(10));
    } else req.end(body);
  });
}

const call = (text: string) =>
  Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'whoami', text } }));

it('reads a small body whole and sends it as one buffer, with the client bytes and headers unchanged', async () => {
  const body = call('héllo — ünïcode');
  expect(await post(body, 'application/json; charset=utf-8')).toBe(200);
  expect(bodiesHanded).toEqual(['buffer']);
  const [seen] = upstream.requests;
  expect(seen?.body).toBe(body.toString());
  expect(seen?.headers['content-type']).toBe('application/json; charset=utf-8');
  expect(seen?.headers['content-length']).toBe(String(body.length));
  expect(seen?.headers['transfer-encoding']).toBeUndefined();
  // The record still names the call.
  expect(gateway.records.at(-1)).toMatchObject({ mcpMethod: 'tools/call', mcpTool: 'whoami' });
});

it('names the call of a body whose media type is written in another case, with parameters, and of a chunked body', async () => {
  // As the server reads it: `Application/JSON; Charset=UTF-8` is JSON (RFC 9110: case-insensitive).
  expect(await post(call('mixed case'), 'Application/JSON; Charset=UTF-8')).toBe(200);
  expect(gateway.records.at(-1)).toMatchObject({ mcpMethod: 'tools/call', mcpTool: 'whoami' });
  expect(await post(call('streamed'), 'APPLICATION/JSON', true)).toBe(200);
  expect(gateway.records.at(-1)).toMatchObject({ mcpMethod: 'tools/call', mcpTool: 'whoami' });
  // Not JSON: not named.
  expect(await post(call('as text'), 'text/plain')).toBe(200);
  expect(gateway.records.at(-1)?.mcpMethod).toBeUndefined();
});

it('reads a body of exactly 64 KiB whole, and streams one a byte longer', async () => {
  const fill = (length: number) => {
    const head = call('');
    return Buffer.concat([
      head.subarray(0, head.length - 3),
      Buffer.alloc(length - head.length, 'x'),
      Buffer.from('"}}'),
    ]);
  };
  const atLimit = fill(64 * 1024);
  expect(await post(atLimit, 'application/json')).toBe(200);
  const past = fill(64 * 1024 + 1);
  expect(await post(past, 'application/json')).toBe(200);
  expect(bodiesHanded).toEqual(['buffer', 'stream']);
  expect(upstream.requests.map((r) => r.body.length)).toEqual([atLimit.length, past.length]);
  expect(upstream.requests[1]?.body).toBe(past.toString());
});

it('streams a chunked body, and reads a small body of any content type as sent', async () => {
  const body = call('chunked');
  expect(await post(body, 'application/json', true)).toBe(200);
  const text = Buffer.from('not json at all');
  expect(await post(text, 'text/plain')).toBe(200);
  expect(bodiesHanded).toEqual(['stream', 'buffer']);
  expect(upstream.requests.map((r) => r.body)).toEqual([body.toString(), text.toString()]);
  expect(upstream.requests[1]?.headers['content-type']).toBe('text/plain');
});

it('leaves the body of a DELETE to its own proxy: only POST bodies are read ahead', async () => {
  // A DELETE goes through the proxy that streams the request; a body read ahead would reach the
  // server as headers only.
  const body = Buffer.from('{"reason":"done"}');
  expect(await post(body, 'application/json', false, 'DELETE')).toBe(200);
  expect(bodiesHanded).toEqual([]);
  expect(upstream.requests.map((r) => [r.method, r.body])).toEqual([['DELETE', body.toString()]]);
});

/** Sends the head of a POST with a 100-byte body and 17 bytes of it, then leaves. */
async function leaveMidBody(to: { url: string }, slug: string): Promise<void> {
  const { port } = new URL(to.url);
  const socket = connect(Number(port), '127.0.0.1');
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  const head =
    `POST /mcp/${slug} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
    `x-gateway-api-key: ${alice.key}\r\nContent-Length: 100\r\n\r\n`;
  socket.write(head + '{"jsonrpc":"2.0",');
  // Long enough for the gateway to authenticate and start reading the body.
  await new Promise((resolve) => setTimeout(resolve, 100));
  socket.destroy();
  // A call that still got through would be recorded by the upstream; give it the time to.
  await new Promise((resolve) => setTimeout(resolve, 100));
}

it('drops quietly a call whose client leaves before its small body is whole: nothing is sent, no error is raised', async () => {
  const errorsBefore = gateway.errors.length;
  await leaveMidBody(gateway, 'plain');
  expect(upstream.requests).toEqual([]);
  expect(bodiesHanded).toEqual([]);
  expect(gateway.errors.length).toBe(errorsBefore);
});

it('drops quietly the same call when a tool gate reads the body, and still refuses a body over its bound', async () => {
  const gated = await setup({
    apiKeys: [alice],
    mcpServers: [{ slug: 'gated', url: `${upstream.url}/mcp` }],
    forwarding: {
      authorize: () => ({
        allowed: true,
        tools: { namesOnly: true, listed: () => 'allowed', called: () => 'allowed' },
      }),
      maxInspectedBodyBytes: 1024,
    },
  });
  try {
    await leaveMidBody(gated, 'gated');
    expect(upstream.requests).toEqual([]);
    expect(gated.errors).toEqual([]);
    const { port } = new URL(gated.url);
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: '/mcp/gated',
          headers: { 'x-gateway-api-key': alice.key, 'content-type': 'application/json', 'content-length': 2048 },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.once('error', reject);
      req.end(Buffer.alloc(2048, ' '));
    });
    expect(status).toBe(413);
    expect(gated.errors).toHaveLength(1);
  } finally {
    await gated.close();
  }
});

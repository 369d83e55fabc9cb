import { createServer, request, type Server } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { deflateSync, gzipSync } from 'node:zlib';
import express from 'express';
import { createModelRoutes, modelRouter, parseBodyLimit, readJsonBody } from '../src';
import { GATEWAY_KEY, message, mockAnthropic } from './support';

// The model routes read their own JSON bodies. These tests serve createModelRoutes from a plain
// node:http server (no framework), and send bodies the way clients may: chunked, compressed,
// with a byte order mark, too large.

let mock: Awaited<ReturnType<typeof mockAnthropic>>;
let server: Server;
let port: number;

beforeAll(async () => {
  mock = await mockAnthropic();
  const routes = createModelRoutes({
    providers: [{ slug: 'p', provider: 'anthropic', apiKey: 'sk-ant-json-body', baseUrl: mock.url }],
    bodyLimit: '1kb',
  });
  server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] as string;
    const handler = path.startsWith('/v1/') ? routes.match(req.method, path.slice(3)) : undefined;
    if (handler) return void handler(req, res);
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await mock.close();
});

const CHAT = JSON.stringify({
  model: '@p/claude-sonnet-4-5',
  max_tokens: 5,
  messages: [{ role: 'user', content: 'hi' }],
});

/** Sends `parts` as separate writes; without `content-length` node:http sends them chunked. */
function send(parts: (string | Buffer)[], headers: Record<string, string> = {}) {
  return new Promise<{ status: number; body: Record<string, { code?: string; message?: string }> }>(
    (resolve, reject) => {
      const sent = { 'content-type': 'application/json', ...headers };
      const req = request(
        { host: '127.0.0.1', port, method: 'POST', path: '/v1/chat/completions', headers: sent },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode as number, body: JSON.parse(text) }));
        },
      );
      req.on('error', reject);
      for (const part of parts) req.write(part);
      req.end();
    },
  );
}

describe('JSON bodies of the model routes, served without a framework', () => {
  it('reads a chunked body in pieces', async () => {
    mock.reply({ json: message([{ type: 'text', text: 'chunked' }]) });
    const answer = await send([CHAT.slice(0, 10), CHAT.slice(10, 40), CHAT.slice(40)]);
    expect(answer.status).toBe(200);
    expect(JSON.stringify(answer.body)).toContain('chunked');
  });

  it('answers 413 body_too_large while reading a chunked body past the limit', async () => {
    const before = mock.requests.length;
    const answer = await send(['{"padding":"', 'x'.repeat(700), 'x'.repeat(700), '"}']);
    expect(answer.status).toBe(413);
    expect(answer.body.error?.code).toBe('body_too_large');
    expect(mock.requests.length).toBe(before);
  });

  it('answers 413 from content-length alone', async () => {
    const body = JSON.stringify({ padding: 'x'.repeat(2000) });
    const answer = await send([body], { 'content-length': String(Buffer.byteLength(body)) });
    expect(answer).toMatchObject({ status: 413, body: { error: { code: 'body_too_large' } } });
  });

  it('inflates gzip and deflate bodies, and applies the limit to the inflated size', async () => {
    const inflated = { json: message([{ type: 'text', text: 'inflated' }]) };
    mock.reply(inflated, inflated);
    expect((await send([gzipSync(CHAT)], { 'content-encoding': 'gzip' })).status).toBe(200);
    expect((await send([deflateSync(CHAT)], { 'content-encoding': 'deflate' })).status).toBe(200);
    // 1 KiB of limit; this compresses to a few dozen bytes and inflates to 5 KB.
    const bomb = gzipSync(JSON.stringify({ padding: 'x'.repeat(5000) }));
    expect(bomb.length).toBeLessThan(200);
    const answer = await send([bomb], { 'content-encoding': 'gzip' });
    expect(answer).toMatchObject({ status: 413, body: { error: { code: 'body_too_large' } } });
  });

  it('answers 400 invalid_json for a corrupt gzip body and 415 for an unknown encoding', async () => {
    const corrupt = await send([Buffer.from('not gzip at all')], { 'content-encoding': 'gzip' });
    expect(corrupt).toMatchObject({ status: 400, body: { error: { code: 'invalid_json' } } });
    const unknown = await send([CHAT], { 'content-encoding': 'compress' });
    expect(unknown).toMatchObject({ status: 415, body: { error: { code: 'unsupported_content_encoding' } } });
  });

  it('accepts a leading byte order mark, and reads an empty body as {}', async () => {
    mock.reply({ json: message([{ type: 'text', text: 'bom' }]) });
    expect((await send([`\ufeff${CHAT}`])).status).toBe(200);
    const empty = await send([]);
    // {} has no model: the request is well-formed JSON that names no provider.
    expect(empty).toMatchObject({ status: 400, body: { error: { code: 'provider_required' } } });
  });
});

describe('options of the body reader', () => {
  it('takes bytes or sizes, and explains a bad one', () => {
    expect(parseBodyLimit(undefined)).toBe(50 * 1024 * 1024);
    expect(parseBodyLimit(100)).toBe(100);
    expect(parseBodyLimit('1.5kb')).toBe(1536);
    expect(parseBodyLimit('2 MB')).toBe(2 * 1024 * 1024);
    expect(() => modelRouter({ bodyLimit: 'lots' })).toThrow(
      'bodyLimit must be a positive number of bytes or a size such as "50mb" (got lots).',
    );
    expect(() => createModelRoutes({ timeoutMs: -1 })).toThrow('timeoutMs must be a positive number');
  });

  it('uses a body that express.json() mounted before it already parsed', async () => {
    const app = express();
    app.use(express.json());
    app.use('/v1', modelRouter({ providers: [{ slug: 'p', provider: 'anthropic', apiKey: 'k', baseUrl: mock.url }] }));
    const host = createServer(app);
    await new Promise<void>((resolve) => host.listen(0, '127.0.0.1', resolve));
    mock.reply({ json: message([{ type: 'text', text: 'pre-parsed' }]) });
    const response = await fetch(`http://127.0.0.1:${(host.address() as AddressInfo).port}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': GATEWAY_KEY },
      body: CHAT,
    });
    expect(response.status).toBe(200);
    expect(JSON.stringify(await response.json())).toContain('pre-parsed');
    host.closeAllConnections();
    await new Promise((resolve) => host.close(resolve));
  });
});

describe('a client that hangs up in the middle of its body', () => {
  it.each([
    ['plain', ''],
    ['gzip', 'Content-Encoding: gzip\r\n'],
  ])('settles the read of a %s body with invalid_json', async (_name, encoding) => {
    let settled!: (outcome: unknown) => void;
    const outcome = new Promise((resolve) => (settled = resolve));
    const host = createServer((req) => {
      readJsonBody(req, 1024 * 1024).then(settled, settled);
    });
    await new Promise<void>((resolve) => host.listen(0, '127.0.0.1', resolve));
    const socket = connect((host.address() as AddressInfo).port, '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    const partial = encoding ? gzipSync(CHAT).subarray(0, 12) : Buffer.from(CHAT.slice(0, 12));
    socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${encoding}Content-Length: 500\r\n\r\n`,
    );
    socket.write(partial, () => socket.destroy());
    expect(await outcome).toMatchObject({ code: 'invalid_json', status: 400 });
    await new Promise((resolve) => host.close(resolve));
  });
});

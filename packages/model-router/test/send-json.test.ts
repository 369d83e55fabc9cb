import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { JSON_PIECE_LENGTH } from '@gw/upstream';
import { SEND_JSON_IN_PIECES_FROM, gatewayLocals, sendJson } from '../src/routes/respond';

describe('sendJson', () => {
  let server: Server;
  let port: number;
  let answer: (res: ServerResponse) => void;

  beforeAll(async () => {
    server = createServer((_req, res) => answer(res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  /** The answer `write` gives, and how many writes of the body it took. */
  async function answered(write: (res: ServerResponse) => void) {
    let writes = 0;
    let firstByteAt: number | undefined;
    answer = (res) => {
      const original = res.write.bind(res);
      res.write = ((...args: Parameters<typeof res.write>) => (writes++, original(...args))) as typeof res.write;
      res.setHeader('x-gateway-provider-used', 'anthropic');
      write(res);
      firstByteAt = gatewayLocals(res).firstByteAt;
    };
    const res = await fetch(`http://127.0.0.1:${port}/`);
    return { res, text: await res.text(), writes, firstByteAt };
  }

  it('answers a small body in one write, with its type, length and the headers set before', async () => {
    const body = { object: 'list', data: [{ id: 'claude', object: 'model' }] };
    const { res, text, writes, firstByteAt } = await answered((r) => sendJson(r, 201, body));
    expect(res.status).toBe(201);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(res.headers.get('x-gateway-provider-used')).toBe('anthropic');
    expect(text).toBe(JSON.stringify(body));
    expect(Number(res.headers.get('content-length'))).toBe(Buffer.byteLength(text));
    expect(writes).toBe(0);
    expect(typeof firstByteAt).toBe('number');
  });

  it('answers a large body in pieces, byte for byte the same JSON, with the same headers', async () => {
    const body = {
      object: 'list',
      data: Array.from({ length: 2000 }, (_, i) => ({ id: `@provider-${i}/modèle-${i}`, object: 'model', created: 0 })),
    };
    expect(JSON.stringify(body).length).toBeGreaterThan(SEND_JSON_IN_PIECES_FROM);
    const { res, text, writes, firstByteAt } = await answered((r) => sendJson(r, 200, body));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(res.headers.get('x-gateway-provider-used')).toBe('anthropic');
    expect(text).toBe(JSON.stringify(body));
    expect(Number(res.headers.get('content-length'))).toBe(Buffer.byteLength(text));
    expect(writes).toBeGreaterThanOrEqual(Math.floor(text.length / JSON_PIECE_LENGTH));
    expect(typeof firstByteAt).toBe('number');
  });
});

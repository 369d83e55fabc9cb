import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { JSON_PIECE_LENGTH } from '@gw/upstream';
import { FAST_LIST_METHODS, planFastList, serveFastList } from '../src/mcp/virtual-fast-list';

/** A one-request server whose handler answers with `serveFastList`; resolves to the raw answer. */
async function answered(list: () => Promise<object>, id: string | number = 7) {
  const server: Server = createServer((_req, res) => serveFastList(res, { method: 'tools/list', id }, list));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`, {
      method: 'POST',
      signal: AbortSignal.timeout(5_000),
    });
    return {
      status: res.status,
      type: res.headers.get('content-type'),
      length: res.headers.get('content-length'),
      text: await res.text(),
    };
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

describe('planFastList: the list requests a virtual server answers itself', () => {
  it.each([...FAST_LIST_METHODS])('takes %s with no parameters, a cursor or a _meta without progress', (method) => {
    expect(planFastList({ jsonrpc: '2.0', id: 1, method })).toEqual({ method, id: 1 });
    expect(planFastList({ jsonrpc: '2.0', id: 'a', method, params: { cursor: 'c' } })).toEqual({ method, id: 'a' });
    expect(planFastList({ jsonrpc: '2.0', id: 2, method, params: { _meta: { k: 1 } } })).toEqual({ method, id: 2 });
  });

  it.each([
    ['a batch', [{ jsonrpc: '2.0', id: 1, method: 'tools/list' }]],
    ['no jsonrpc', { id: 1, method: 'tools/list' }],
    ['a notification (no id)', { jsonrpc: '2.0', method: 'tools/list' }],
    ['a null id', { jsonrpc: '2.0', id: null, method: 'tools/list' }],
    ['another method', { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x' } }],
    ['parameters that are not an object', { jsonrpc: '2.0', id: 1, method: 'tools/list', params: [] }],
    ['a cursor that is not a string', { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { cursor: 3 } }],
    ['a _meta that is not an object', { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: 'x' } }],
    [
      'a progress token (its answer is a stream)',
      { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: { progressToken: 1 } } },
    ],
  ])('leaves %s to the SDK path', (_what, body) => {
    expect(planFastList(body)).toBeUndefined();
  });
});

describe('serveFastList: the answer, as the SDK server answers in JSON', () => {
  it('answers the result under the caller’s id, 200 application/json with its length', async () => {
    const answer = await answered(() => Promise.resolve({ tools: [{ name: 'a_x', inputSchema: { type: 'object' } }] }));
    expect(answer.status).toBe(200);
    expect(answer.type).toBe('application/json');
    expect(Number(answer.length)).toBe(Buffer.byteLength(answer.text));
    expect(JSON.parse(answer.text)).toEqual({
      jsonrpc: '2.0',
      id: 7,
      result: { tools: [{ name: 'a_x', inputSchema: { type: 'object' } }] },
    });
  });

  it('answers a list of any size whole, with its length (a large one written in pieces)', async () => {
    const tools = Array.from({ length: 600 }, (_, i) => ({
      name: `t_${i}`,
      description: `tool ${i} – ${'x'.repeat(80)}`,
    }));
    const answer = await answered(() => Promise.resolve({ tools }));
    expect(Buffer.byteLength(answer.text)).toBeGreaterThan(2 * JSON_PIECE_LENGTH);
    expect(Number(answer.length)).toBe(Buffer.byteLength(answer.text));
    expect(JSON.parse(answer.text)).toEqual({ jsonrpc: '2.0', id: 7, result: { tools } });
  });

  it('answers a failure as the SDK does: its code and data when it has them, else -32603 with its message', async () => {
    const coded = Object.assign(new Error('The gateway is not listening yet.'), { code: -32603, data: { code: 'x' } });
    expect(JSON.parse((await answered(() => Promise.reject(coded), 'k')).text)).toEqual({
      jsonrpc: '2.0',
      id: 'k',
      error: { code: -32603, message: 'The gateway is not listening yet.', data: { code: 'x' } },
    });
    expect(JSON.parse((await answered(() => Promise.reject(new Error('boom')))).text)).toEqual({
      jsonrpc: '2.0',
      id: 7,
      error: { code: -32603, message: 'boom' },
    });
    expect(
      JSON.parse((await answered(() => Promise.reject(Object.assign(new Error('m'), { code: -32601 })))).text),
    ).toEqual({ jsonrpc: '2.0', id: 7, error: { code: -32601, message: 'm' } });
  });
});

import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { JSON_PIECE_LENGTH, endWithJson, jsonPieces } from '../src';

/** A merged MCP tool list of `count` tools, of the size real servers list. */
function toolList(count: number) {
  return {
    result: {
      tools: Array.from({ length: count }, (_, i) => ({
        name: `a_tool_${i}`,
        description: `Looks up record kind ${i} by its id and returns its fields as JSON (tool ${i}).`,
        inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
      })),
    },
    jsonrpc: '2.0',
    id: 1,
  };
}

/** Values of every kind `JSON.stringify` reads, wrapped so that arrays and objects are opened. */
const anything = fc.anything({
  withBoxedValues: true,
  withDate: true,
  withMap: true,
  withSet: true,
  withNullPrototype: true,
  withSparseArray: true,
  withTypedArray: true,
  withObjectString: true,
  maxDepth: 3,
});
const opened = fc.oneof(
  anything,
  fc.array(anything, { minLength: 17, maxLength: 40 }),
  fc.record({ result: fc.dictionary(fc.string(), fc.oneof(anything, fc.array(anything, { minLength: 17 }))) }),
  fc.dictionary(fc.string(), fc.oneof(anything, fc.func(fc.anything()), fc.constant(undefined)), { minKeys: 1 }),
);

describe('jsonPieces', () => {
  it('joins to exactly what JSON.stringify writes, for values of every kind', () => {
    fc.assert(
      fc.property(opened, (value) => {
        fc.pre(JSON.stringify(value) !== undefined);
        expect(jsonPieces(value).join('')).toBe(JSON.stringify(value));
      }),
      { numRuns: 300 },
    );
  });

  it('leaves out what JSON.stringify leaves out of an object, and writes null for it in an array', () => {
    const skipped = { toJSON: () => undefined };
    const value = {
      a: undefined,
      b: () => 1,
      c: Symbol('c'),
      d: skipped,
      e: 1,
      f: [...Array.from({ length: 17 }, () => undefined), () => 1, Symbol('s'), skipped, new Date(0)],
      g: { h: undefined, i: 'two' },
    };
    expect(jsonPieces(value).join('')).toBe(JSON.stringify(value));
    expect(jsonPieces({ a: undefined, b: 2 }).join('')).toBe('{"b":2}');
    expect(jsonPieces({ a: 1, b: undefined }).join('')).toBe('{"a":1}');
  });

  it('keeps a large list answer in pieces no longer than JSON_PIECE_LENGTH', () => {
    const value = toolList(600);
    const pieces = jsonPieces(value);
    expect(pieces.join('')).toBe(JSON.stringify(value));
    const fewest = Math.ceil(JSON.stringify(value).length / JSON_PIECE_LENGTH);
    expect(pieces.length).toBeGreaterThanOrEqual(Math.max(fewest, 2));
    expect(pieces.length).toBeLessThanOrEqual(fewest + 1);
    for (const piece of pieces) expect(piece.length).toBeLessThanOrEqual(JSON_PIECE_LENGTH);
    // An array at the top, and one inside the object of the second level, alike.
    expect(jsonPieces(value.result.tools).every((piece) => piece.length <= JSON_PIECE_LENGTH)).toBe(true);
    expect(jsonPieces({ data: value.result.tools }).length).toBe(pieces.length);
  });

  it('writes a small value as one piece, and a value longer than a piece as one piece of its own', () => {
    expect(jsonPieces({ ok: true, items: [1, 2, 3] })).toEqual(['{"ok":true,"items":[1,2,3]}']);
    const long = 'x'.repeat(JSON_PIECE_LENGTH * 2);
    const pieces = jsonPieces({ a: 'b', long, c: [long, 1] });
    expect(pieces.join('')).toBe(JSON.stringify({ a: 'b', long, c: [long, 1] }));
    expect(pieces.some((piece) => piece.length > JSON_PIECE_LENGTH)).toBe(true);
  });

  it('opens plain objects of the first two levels only, and no object with toJSON', () => {
    const deep = { a: { b: { c: Array.from({ length: 2000 }, (_, i) => i) } } };
    // The third level is written whole: one piece for the whole array.
    expect(jsonPieces(deep)).toHaveLength(1);
    const withToJson = { toJSON: () => ({ items: Array.from({ length: 5000 }, (_, i) => `item ${i}`) }) };
    expect(jsonPieces(withToJson)).toHaveLength(1);
    expect(jsonPieces(withToJson).join('')).toBe(JSON.stringify(withToJson));
    const array = Object.assign(
      Array.from({ length: 5000 }, (_, i) => i),
      { toJSON: () => 'whole' },
    );
    expect(jsonPieces(array)).toEqual(['"whole"']);
  });

  it('refuses a value with no JSON text, and throws what JSON.stringify throws', () => {
    expect(() => jsonPieces(undefined)).toThrow(TypeError);
    expect(() => jsonPieces(() => 1)).toThrow('The value has no JSON text.');
    expect(() => jsonPieces(Symbol('s'))).toThrow(TypeError);
    const cycle: Record<string, unknown> = { list: [] };
    cycle.self = { back: cycle };
    expect(() => jsonPieces(cycle)).toThrow(TypeError);
    expect(() => jsonPieces({ n: 1n })).toThrow(TypeError);
  });
});

describe('endWithJson', () => {
  let server: Server;
  let port: number;
  let answer: (res: ServerResponse) => void;

  beforeAll(async () => {
    server = createServer((_req, res) => answer(res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  async function fetchAnswer(write: typeof answer) {
    answer = write;
    const res = await fetch(`http://127.0.0.1:${port}/`);
    return { res, bytes: Buffer.from(await res.arrayBuffer()) };
  }

  it('answers the status, the JSON type, the byte length and exactly the text', async () => {
    const value = toolList(600);
    // Two-byte text: the length is in bytes, not characters.
    value.result.tools[3]!.description = 'Löst Einträge auf — 記録を探す 🔎';
    const { res, bytes } = await fetchAnswer((r) => endWithJson(r, 200, value, { 'x-answer': 'list' }));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('x-answer')).toBe('list');
    expect(Number(res.headers.get('content-length'))).toBe(Buffer.byteLength(JSON.stringify(value)));
    expect(bytes.equals(Buffer.from(JSON.stringify(value)))).toBe(true);
  });

  it('keeps a content type the caller names, and answers a small value in one write', async () => {
    const calls: string[] = [];
    const { res, bytes } = await fetchAnswer((r) => {
      const write = r.write.bind(r);
      r.write = ((text: string) => (calls.push('write'), write(text))) as typeof r.write;
      endWithJson(r, 404, { error: { code: 'not_found' } }, { 'content-type': 'application/problem+json' });
    });
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(bytes.toString()).toBe('{"error":{"code":"not_found"}}');
    expect(calls).toEqual([]);
  });
});

import fc from 'fast-check';
import { chunkedJson, LARGE_STRING_CHARS } from '../src/core/streaming-json';

const bytesOf = (body: ReturnType<typeof chunkedJson>) => Buffer.concat([...body.chunks()]);

describe('chunkedJson', () => {
  it('produces exactly the bytes of JSON.stringify, with large base64 strings in pieces', () => {
    const pdf = Buffer.alloc(3 * LARGE_STRING_CHARS, 7).toString('base64');
    const value = {
      model: 'm',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'document', source: { data: pdf } },
            { type: 'text', text: 'é "quoted"' },
          ],
        },
      ],
      other: pdf,
    };
    const body = chunkedJson(value);
    const bytes = bytesOf(body);
    expect(bytes.equals(Buffer.from(JSON.stringify(value)))).toBe(true);
    expect(body.byteLength).toBe(bytes.length);
    expect([...body.chunks()].length).toBeGreaterThan(10);
    expect(bytesOf(body).equals(bytes)).toBe(true);
  });

  it('matches JSON.stringify for any JSON value (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const body = chunkedJson(value);
        const expected = Buffer.from(JSON.stringify(value));
        expect(bytesOf(body).equals(expected)).toBe(true);
        expect(body.byteLength).toBe(expected.length);
      }),
    );
  });
});

import { PassThrough, Readable } from 'node:stream';
import fc from 'fast-check';
import { UpstreamAbort, holdWhole } from '../src';

describe('UpstreamAbort', () => {
  it('emits abort once, and says so', () => {
    const abort = new UpstreamAbort();
    const heard: string[] = [];
    abort.on('abort', () => heard.push('abort'));
    expect(abort.aborted).toBe(false);
    abort.abort();
    abort.abort();
    expect(abort.aborted).toBe(true);
    expect(heard).toEqual(['abort']);
  });
});

/** What holdWhole handed over for `chunks` under `maxBytes`, and what was left flowing after. */
async function hand(chunks: Buffer[], maxBytes: number) {
  const body = Readable.from(chunks, { objectMode: false });
  let overflows = 0;
  const got = await new Promise<{ whole?: Buffer; held?: Buffer[]; rest: Buffer[]; grew?: boolean }>((resolve) => {
    holdWhole(
      body,
      maxBytes,
      (whole) => resolve({ whole, rest: [] }),
      (held) => {
        if (overflows++ > 0) return;
        const rest: Buffer[] = [];
        const sink = new PassThrough();
        sink.on('data', (chunk: Buffer) => rest.push(chunk));
        // The chunks handed over stay as they were handed: nothing is held after the overflow.
        const handed = held.length;
        sink.on('end', () => resolve({ held, rest, grew: held.length !== handed }));
        body.pipe(sink);
      },
    );
  });
  expect(overflows).toBeLessThanOrEqual(1);
  expect(got.grew ?? false).toBe(false);
  return got;
}

describe('holdWhole', () => {
  it('hands over one chunk as it is, and several joined', async () => {
    const one = Buffer.from('{"a":1}');
    expect((await hand([one], 100)).whole).toBe(one);
    expect((await hand([Buffer.from('{"a"'), Buffer.from(':1}')], 100)).whole?.toString()).toBe('{"a":1}');
    expect((await hand([], 100)).whole).toHaveLength(0);
  });

  it('holds exactly up to the bound, and overflows one byte past it', async () => {
    expect((await hand([Buffer.alloc(4), Buffer.alloc(6)], 10)).whole).toHaveLength(10);
    const past = await hand([Buffer.alloc(4), Buffer.alloc(7), Buffer.alloc(3)], 10);
    expect(past.whole).toBeUndefined();
    expect(past.held?.map((b) => b.length)).toEqual([4, 7]);
    expect(past.rest.reduce((n, b) => n + b.length, 0)).toBe(3);
  });

  it('loses, repeats and reorders no byte, wherever the bound falls (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.uint8Array({ minLength: 1, maxLength: 40 }), { maxLength: 12 }),
        fc.nat(300),
        async (parts, maxBytes) => {
          const chunks = parts.map((p) => Buffer.from(p));
          const sent = Buffer.concat(chunks);
          const got = await hand(chunks, maxBytes);
          const received = got.whole ?? Buffer.concat([...(got.held ?? []), ...got.rest]);
          expect(received.equals(sent)).toBe(true);
          expect(got.whole !== undefined).toBe(sent.length <= maxBytes);
        },
      ),
    );
  });

  it('calls neither when the body fails first', async () => {
    const body = new PassThrough();
    const calls: string[] = [];
    body.on('error', () => calls.push('error'));
    holdWhole(
      body,
      100,
      () => calls.push('whole'),
      () => calls.push('overflow'),
    );
    body.write('{"a"');
    body.destroy(new Error('reset'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toEqual(['error']);
  });
});

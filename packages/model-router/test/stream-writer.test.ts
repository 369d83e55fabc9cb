import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import {
  STREAM_FLUSH_BYTES,
  STREAM_FLUSH_MS,
  STREAM_SHORTEST_WAIT_MS,
  StreamWriter,
} from '../src/routes/stream-writer';

/** A client response that records its writes, and an upstream that records pause/resume. */
function parts() {
  const writes: string[] = [];
  const res = Object.assign(new EventEmitter(), {
    destroyed: false,
    headersSent: false,
    flushHeaders: jest.fn(() => {
      res.headersSent = true;
    }),
    write: (data: string | Buffer) => {
      res.headersSent = true;
      writes.push(data.toString());
      return true;
    },
    end: () => undefined,
  });
  const upstream = { pause: jest.fn(), resume: jest.fn() };
  const writer = new StreamWriter(res as unknown as ServerResponse, upstream as unknown as Readable, () => undefined);
  return { writes, writer, res };
}

describe('StreamWriter', () => {
  afterEach(() => jest.useRealTimers());

  it('writes the first event at once and holds the next ones for the window', () => {
    jest.useFakeTimers();
    const { writes, writer } = parts();
    writer.write('a');
    writer.write('b');
    writer.write('c');
    expect(writes).toEqual(['a']);
    jest.advanceTimersByTime(STREAM_FLUSH_MS);
    expect(writes).toEqual(['a', 'bc']);
  });

  it(`writes at once an event whose window would end within ${STREAM_SHORTEST_WAIT_MS} ms (a paced token is not delayed to the next timer tick)`, () => {
    jest.useFakeTimers();
    const { writes, writer } = parts();
    writer.write('a');
    jest.advanceTimersByTime(STREAM_FLUSH_MS - STREAM_SHORTEST_WAIT_MS / 2);
    writer.write('b');
    expect(writes).toEqual(['a', 'b']);
    jest.advanceTimersByTime(STREAM_FLUSH_MS - STREAM_SHORTEST_WAIT_MS * 2);
    writer.write('c');
    expect(writes).toEqual(['a', 'b']);
    jest.advanceTimersByTime(STREAM_SHORTEST_WAIT_MS * 2);
    expect(writes).toEqual(['a', 'b', 'c']);
  });

  it(`writes at once what is held when it reaches ${STREAM_FLUSH_BYTES} bytes, without waiting for the window`, () => {
    jest.useFakeTimers();
    const { writes, writer } = parts();
    writer.write('first');
    const piece = 'x'.repeat(STREAM_FLUSH_BYTES / 2);
    writer.write(piece);
    writer.write(piece.slice(1));
    expect(writes).toEqual(['first']);
    writer.write('y');
    expect(writes).toEqual(['first', `${piece}${piece.slice(1)}y`]);
  });

  it('open() leaves the headers to the first write of the same turn, and sends them alone on the next turn when none came', async () => {
    const first = parts();
    first.writer.open();
    first.writer.write('a');
    await new Promise((resolve) => setImmediate(resolve));
    expect(first.res.flushHeaders).not.toHaveBeenCalled();
    expect(first.writes).toEqual(['a']);

    const quiet = parts();
    quiet.writer.open();
    expect(quiet.res.flushHeaders).not.toHaveBeenCalled();
    await new Promise((resolve) => setImmediate(resolve));
    expect(quiet.res.flushHeaders).toHaveBeenCalledTimes(1);
    expect(quiet.writes).toEqual([]);
  });
});

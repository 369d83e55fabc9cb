import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- the sequencer is the CommonJS module jest loads
const TimedSequencer = require('../jest-sequencer.cjs') as {
  new (options: unknown): { sort(tests: FakeTest[]): FakeTest[]; timings: Record<string, number> };
  committedTimings(file: string): Record<string, number>;
};

interface FakeTest {
  path: string;
  context: {
    config: { cache: boolean; id: string; cacheDirectory: string };
    hasteFS: { getSize(path: string): number };
  };
  duration?: number;
}

const root = join(__dirname, '..', '..');
/** A test file as jest hands it to a sequencer, with no cache (a fresh clone) and the given size. */
function fresh(path: string, size: number): FakeTest {
  return {
    path: join(root, path),
    context: {
      config: { cache: false, id: 'x', cacheDirectory: tmpdir() },
      hasteFS: { getSize: () => size },
    },
  };
}

describe('the test sequencer', () => {
  it('runs the files of a fresh clone longest first by the committed timings, unknown ones before them', () => {
    const sequencer = new TimedSequencer({});
    sequencer.timings = { 'test/release/registry.test.ts': 220, 'a/quick.test.ts': 1, 'a/medium.test.ts': 30 };
    const order = sequencer
      .sort([
        fresh('a/quick.test.ts', 90_000),
        fresh('a/medium.test.ts', 100),
        fresh('a/new.test.ts', 10),
        fresh('test/release/registry.test.ts', 5_000),
      ])
      .map((test) => test.path.slice(root.length + 1));
    expect(order).toEqual(['a/new.test.ts', 'test/release/registry.test.ts', 'a/medium.test.ts', 'a/quick.test.ts']);
  });

  it('reads the timings file, and an unreadable one as no timings', () => {
    const dir = mkdtempSync(join(tmpdir(), 'jest-timings-'));
    writeFileSync(join(dir, 'ok.json'), '{"a.test.ts": 2.5}');
    writeFileSync(join(dir, 'bad.json'), '{');
    expect(TimedSequencer.committedTimings(join(dir, 'ok.json'))).toEqual({ 'a.test.ts': 2.5 });
    expect(TimedSequencer.committedTimings(join(dir, 'bad.json'))).toEqual({});
    expect(TimedSequencer.committedTimings(join(dir, 'none.json'))).toEqual({});
  });

  it('has a time for the release test, the longest file', () => {
    const timings = TimedSequencer.committedTimings(join(__dirname, '..', 'jest-timings.json'));
    expect(timings['test/release/registry.test.ts']).toBeGreaterThan(60);
  });
});

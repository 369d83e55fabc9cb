import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** `recordsKeptUp` of bench/features.mjs (ESM) for each reading, run in a module of its own. */
function keptUp(readings: object[]): boolean[] {
  const features = pathToFileURL(join(__dirname, '..', 'features.mjs')).href;
  const source = `import { recordsKeptUp } from ${JSON.stringify(features)};
process.stdout.write(JSON.stringify(${JSON.stringify(readings)}.map(recordsKeptUp)));`;
  return JSON.parse(
    execFileSync(process.execPath, ['--input-type=module', '-e', source], { encoding: 'utf8', timeout: 60_000 }),
  ) as boolean[];
}

// A full bench run's reading: 20,000 requests at 2,713/s, flushed every second.
const steady = {
  requests: 20_000,
  requestsPerSecond: 2713,
  firstHalfMaxQueued: 2406,
  secondHalfMaxQueued: 2959,
  queuedAtEnd: 349,
  written: 20_000,
  dropped: 0,
};

describe('the request-record queue at the bench rate', () => {
  it('keeps up when it holds at most one flush interval of records, drops none and writes all', () => {
    expect(keptUp([steady])).toEqual([true]);
  });

  it('falls behind when its peak grows past one interval, a backlog is left, or records are lost', () => {
    expect(
      keptUp([
        { ...steady, secondHalfMaxQueued: 6000 },
        { ...steady, queuedAtEnd: 4000 },
        { ...steady, dropped: 1 },
        { ...steady, written: 19_999 },
      ]),
    ).toEqual([false, false, false, false]);
  });
});

// The order jest runs test files in: longest first, so that no worker starts a long file while the
// other is almost done. Jest knows each file's last time from its cache (`node_modules/.cache/jest`);
// a fresh clone has none, and jest would then order by file size, which starts the release test
// (over three minutes) anywhere. Here a file with no time in the cache takes its time from
// `scripts/jest-timings.json` (seconds, from a fresh-clone CI run; `node scripts/jest-timings.mjs`
// writes it from the cache of a run). A file in neither runs first, largest first, as jest does.
/* eslint-disable @typescript-eslint/no-require-imports -- jest loads a sequencer as CommonJS */
const { relative, join } = require('node:path');
const { readFileSync } = require('node:fs');
const TestSequencer = require(require.resolve('@jest/test-sequencer', { paths: [require.resolve('jest')] })).default;

/** The repository root: test paths are named from it in the timings file. */
const ROOT = join(__dirname, '..');

/** Seconds a test file took in a recent CI run, by its path from the repository root. */
function committedTimings(file = join(__dirname, 'jest-timings.json')) {
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8'));
    return parsed && typeof parsed === 'object' ? parsed : {};
  } catch {
    return {};
  }
}

class TimedSequencer extends TestSequencer {
  timings = committedTimings();

  /** The file's last time in ms: jest's cache, else the committed timings, else unknown. */
  time(test) {
    const cached = super.time(test);
    if (cached !== undefined) return cached;
    const seconds = this.timings[relative(ROOT, test.path).split('\\').join('/')];
    return typeof seconds === 'number' && Number.isFinite(seconds) ? seconds * 1000 : undefined;
  }
}

module.exports = TimedSequencer;
module.exports.committedTimings = committedTimings;

// `node scripts/jest-timings.mjs [cache dir]`: writes scripts/jest-timings.json, each test file's
// time in seconds (rounded to 0.1) from jest's cache of the last run (default
// node_modules/.cache/jest), for scripts/jest-sequencer.cjs. Run it after a full `pnpm test`.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(fileURLToPath(import.meta.url), '..', '..');
const dir = process.argv[2] ?? join(root, 'node_modules', '.cache', 'jest');
const timings = {};
for (const name of readdirSync(dir).filter((n) => n.startsWith('perf-cache-'))) {
  const cache = JSON.parse(readFileSync(join(dir, name), 'utf8'));
  for (const [path, [, ms]] of Object.entries(cache)) {
    // A clone elsewhere names its files from its own root: keep the part inside the repository.
    const inside = path.startsWith(root)
      ? relative(root, path)
      : path.replace(/^.*?\/(?=(packages|examples|bench|scripts|test)\/)/, '');
    if (typeof ms === 'number') timings[inside] = Math.round(ms / 100) / 10;
  }
}
const sorted = Object.fromEntries(Object.entries(timings).sort(([a], [b]) => (a < b ? -1 : 1)));
writeFileSync(join(root, 'scripts', 'jest-timings.json'), `${JSON.stringify(sorted, null, 2)}\n`);
console.log(`${Object.keys(sorted).length} test files timed`);

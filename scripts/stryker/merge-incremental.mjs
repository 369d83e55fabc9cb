// @ts-check
/**
 * Merges the results of a Stryker run kept in another incremental file into the committed one:
 *
 *   node scripts/stryker/merge-incremental.mjs reports/stryker-incremental.json reports/other.json
 *
 * For running file groups side by side (`--incrementalFile reports/<group>.json` each), then
 * keeping one file. Every source file of the second report replaces the first's entry; test ids
 * (numbers per report) are renumbered through the test's file and name, so the mutants' coveredBy
 * and killedBy point at the same tests as before. A test file present in both keeps the second
 * report's source and tests (the newer run saw them).
 */
import { readFileSync, writeFileSync } from 'node:fs';

const [intoPath, fromPath] = process.argv.slice(2);
if (!intoPath || !fromPath) {
  console.error('usage: node scripts/stryker/merge-incremental.mjs <into.json> <from.json>');
  process.exit(2);
}
const into = JSON.parse(readFileSync(intoPath, 'utf8'));
const from = JSON.parse(readFileSync(fromPath, 'utf8'));

/** @param {any} report @returns {Map<string, string>} test id → "file\0name" */
function testNames(report) {
  const names = new Map();
  for (const [file, { tests }] of Object.entries(report.testFiles ?? {}))
    for (const test of tests) names.set(test.id, `${file}\0${test.name}`);
  return names;
}

const intoNames = testNames(into);
const fromNames = testNames(from);

// The merged test table: the second report's test files win; ids are renumbered from 0.
const testFiles = { ...into.testFiles, ...from.testFiles };
const idOf = new Map();
let next = 0;
for (const [file, entry] of Object.entries(testFiles)) {
  entry.tests = entry.tests.map((test) => {
    const key = `${file}\0${test.name}`;
    if (!idOf.has(key)) idOf.set(key, String(next++));
    return { ...test, id: idOf.get(key) };
  });
}

/** Maps a report's test ids to the merged ids (tests that no longer exist are dropped). */
const remap = (/** @type {Map<string,string>} */ names, /** @type {string[] | undefined} */ ids) =>
  ids?.map((id) => idOf.get(names.get(id))).filter((id) => id !== undefined);

const files = {};
for (const [report, names] of [
  [into, intoNames],
  [from, fromNames],
])
  for (const [path, file] of Object.entries(report.files)) {
    files[path] = {
      ...file,
      mutants: file.mutants.map((mutant) => ({
        ...mutant,
        ...(mutant.coveredBy ? { coveredBy: remap(names, mutant.coveredBy) } : {}),
        ...(mutant.killedBy ? { killedBy: remap(names, mutant.killedBy) } : {}),
      })),
    };
  }

writeFileSync(intoPath, JSON.stringify({ ...into, files, testFiles }));
console.log(
  `${intoPath}: ${Object.keys(files).length} source files, ${next} tests (${Object.keys(from.files).length} files from ${fromPath}).`,
);

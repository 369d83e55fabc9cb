// @ts-check
/**
 * Prints each file's mutation score from a Stryker report (the incremental file or
 * reports/mutation/mutation.json), and lists the survivors:
 *
 *   node scripts/stryker/scores.mjs [reports/stryker-incremental.json] [--survivors] [--min <score>]
 *
 * With `--min`, exits with 1 when any file scores below it (Stryker's own `break` threshold
 * applies to the score of all files together).
 *
 * Score = (killed + timeout) / (killed + timeout + survived + no coverage), as Stryker counts it.
 */
import { readFileSync } from 'node:fs';

const args = process.argv.slice(2);
const minIndex = args.indexOf('--min');
const min = minIndex === -1 ? undefined : Number(args[minIndex + 1]);
if (min !== undefined && !(min >= 0 && min <= 100))
  throw new TypeError('--min takes a score from 0 to 100, for example --min 90.');
const path =
  args.find((a, i) => !a.startsWith('--') && (minIndex === -1 || i !== minIndex + 1)) ??
  'reports/stryker-incremental.json';
const report = JSON.parse(readFileSync(path, 'utf8'));
const rows = [];
for (const [file, { mutants }] of Object.entries(report.files)) {
  const count = (/** @type {string} */ status) => mutants.filter((m) => m.status === status).length;
  const killed = count('Killed');
  const timeout = count('Timeout');
  const survived = count('Survived');
  const noCoverage = count('NoCoverage');
  const errors = count('CompileError');
  const ignored = count('Ignored');
  const detected = killed + timeout;
  const valid = detected + survived + noCoverage;
  const score = valid === 0 ? 100 : (100 * detected) / valid;
  rows.push({ file, killed, timeout, survived, noCoverage, errors, ignored, score: score.toFixed(2) });
  if (args.includes('--survivors'))
    for (const m of mutants.filter((m) => m.status === 'Survived' || m.status === 'NoCoverage'))
      console.log(
        `${m.status}\t${file}:${m.location.start.line}:${m.location.start.column}\t${m.mutatorName}\t${String(m.replacement).slice(0, 80).replace(/\s+/g, ' ')}`,
      );
}
console.table(rows);
if (min !== undefined) {
  const below = rows.filter((row) => Number(row.score) < min);
  if (below.length > 0) {
    console.error(`Mutation score below ${min} in: ${below.map((row) => `${row.file} (${row.score})`).join(', ')}`);
    process.exit(1);
  }
}

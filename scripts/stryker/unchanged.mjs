// @ts-check
/**
 * Says whether an incremental mutation run would reuse every result of the committed report, so
 * that `test:mutation:ci` can skip Stryker (instrumenting 25 files, loading the unit tests and a
 * dry run of all of them: two minutes of CPU on a 2-core machine) and read the report instead:
 *
 *   node scripts/stryker/unchanged.mjs [--root <dir>]
 *
 * Exit code 0: unchanged, nothing for Stryker to run. 1: something changed (what is printed), run
 * `stryker run --incremental`. The check is Stryker's own incremental diff, made stricter: every
 * mutated file and every unit test file has exactly the source the report recorded, the same files
 * on both sides (a test added or removed is a change), and the report was made by the installed
 * StrykerJS version (another version may mutate the same source differently).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative, sep } from 'node:path';
import { pathToFileURL } from 'node:url';

const args = process.argv.slice(2);
const rootIndex = args.indexOf('--root');
const root = rootIndex === -1 ? process.cwd() : args[rootIndex + 1];
if (root === undefined) throw new TypeError('--root takes a directory, for example --root .');

/** Files under `dir` (recursively) whose names end with `suffix`, as paths relative to `root`. */
function filesUnder(dir, suffix) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return filesUnder(path, suffix);
    return entry.name.endsWith(suffix) ? [relative(root, path).split(sep).join('/')] : [];
  });
}

/** The files a `mutate` pattern names: a path, or a `*` in its last segment (all the config uses). */
function expand(pattern) {
  const slash = pattern.lastIndexOf('/');
  const [dir, name] = [pattern.slice(0, slash), pattern.slice(slash + 1)];
  if (dir.includes('*')) throw new Error(`unchanged.mjs: a "*" outside the file name is not supported: ${pattern}`);
  if (!name.includes('*')) return existsSync(join(root, pattern)) ? [pattern] : [];
  const matcher = new RegExp(
    `^${name
      .split('*')
      .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('[^/]*')}$`,
  );
  return readdirSync(join(root, dir))
    .filter((file) => matcher.test(file) && statSync(join(root, dir, file)).isFile())
    .map((file) => `${dir}/${file}`);
}

/** What differs between the sources the report recorded and the files on disk (empty: nothing). */
function differences(recorded, paths, kind) {
  const found = [];
  const current = new Set(paths);
  for (const path of Object.keys(recorded)) if (!current.has(path)) found.push(`${kind} gone: ${path}`);
  for (const path of paths) {
    if (!Object.hasOwn(recorded, path)) found.push(`${kind} new: ${path}`);
    else if (readFileSync(join(root, path), 'utf8') !== recorded[path].source) found.push(`${kind} changed: ${path}`);
  }
  return found;
}

const { default: config, packages } = await import(pathToFileURL(join(root, 'stryker.config.mjs')).href);
const reportPath = join(root, config.incrementalFile);
const changes = [];
if (!existsSync(reportPath)) changes.push(`no report at ${config.incrementalFile}`);
else {
  const report = JSON.parse(readFileSync(reportPath, 'utf8'));
  const installed = createRequire(join(root, 'package.json'))('@stryker-mutator/core/package.json').version;
  if (report.framework?.version !== installed)
    changes.push(`the report was made by StrykerJS ${report.framework?.version}, ${installed} is installed`);
  const mutated = [...new Set(config.mutate.flatMap(expand))].sort();
  const tests = packages.flatMap((name) => filesUnder(join(root, 'packages', name, 'test', 'unit'), '.test.ts'));
  changes.push(...differences(report.files ?? {}, mutated, 'mutated file'));
  changes.push(...differences(report.testFiles ?? {}, tests, 'unit test file'));
}
if (changes.length > 0) {
  console.log(`Mutation report out of date (${changes.length}):\n  ${changes.slice(0, 20).join('\n  ')}`);
  process.exit(1);
}
console.log(`Mutation report up to date: every mutated file and unit test as ${config.incrementalFile} recorded them.`);

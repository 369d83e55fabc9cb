// @ts-check
/**
 * A StrykerJS test runner: the jest runner, but a mutant runs only the test FILES that hold the
 * tests covering it.
 *
 * The jest runner already filters by test name, yet it hands jest every test file related to the
 * mutated source (`--findRelatedTests`), and jest loads each of them (express, jose, the SDKs, the
 * servers of `beforeAll`) only to skip their tests. For a core file that every test file imports
 * indirectly, that was 15 files per mutant. The dry run knows each covering test's file, so this
 * runner passes exactly those files. Same results, measured in docs/testing.md.
 */
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { declareFactoryPlugin, PluginKind, tokens, commonTokens } from '@stryker-mutator/api/plugin';
import { strykerPlugins as jestPlugins } from '@stryker-mutator/jest-runner';

const jestPlugin = jestPlugins.find((plugin) => plugin.name === 'jest');
if (!jestPlugin || !('factory' in jestPlugin)) throw new Error('@stryker-mutator/jest-runner: no "jest" test runner.');
const jestFactory = jestPlugin.factory;

/** What the dry run saw (stryker.config.mjs names a file per Stryker run). */
const testsFile = process.env.GW_STRYKER_DRY_RUN_FILE ?? '.stryker-dry-run-tests.json';

/** A literal path as a jest test path pattern (a regular expression), anchored at its end. */
const pathPattern = (file) => `${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`;

/** @param {import('@stryker-mutator/api/plugin').Injector} injector */
function coveringFilesRunnerFactory(injector) {
  const runner = injector.injectFunction(/** @type {any} */ (jestFactory));
  /** Test id (full name) → the file that declares it, from the dry run. */
  const fileOfTest = new Map();
  /** Test id → its time in the dry run (ms). */
  const timeOfTest = new Map();
  /** @type {string[] | undefined} */
  let filesForNextRun;

  const adapter = runner.jestTestAdapter;
  const adapterRun = adapter.run.bind(adapter);
  adapter.run = (settings) =>
    adapterRun(filesForNextRun ? { ...settings, testFiles: filesForNextRun, fileNamesUnderTest: undefined } : settings);

  const dryRun = runner.dryRun.bind(runner);
  runner.dryRun = async (options) => {
    const result = await dryRun(options);
    if (result.status === 'complete') {
      for (const test of result.tests)
        if (test.fileName) {
          fileOfTest.set(test.id, test.fileName);
          timeOfTest.set(test.id, test.timeSpentMs);
        }
      // Only the first test runner does the dry run; the others (and a runner restarted after a
      // timeout) read what it saw from this file.
      writeFileSync(testsFile, JSON.stringify(result.tests.map((t) => [t.id, t.fileName, t.timeSpentMs])));
    }
    return result;
  };

  const mutantRun = runner.mutantRun.bind(runner);
  runner.mutantRun = async (options) => {
    if (fileOfTest.size === 0 && existsSync(testsFile))
      for (const [id, fileName, timeSpentMs] of JSON.parse(readFileSync(testsFile, 'utf8'))) {
        if (!fileName) continue;
        fileOfTest.set(id, fileName);
        timeOfTest.set(id, timeSpentMs);
      }
    const files = options.testFilter?.map((id) => fileOfTest.get(id));
    // Without a filter (or with a test the dry run did not see) the jest runner decides, as before.
    if (files && files.every(Boolean)) {
      // Cheapest file first (its covering tests' time in the dry run), for `bail` to stop early.
      const cost = new Map();
      options.testFilter.forEach((id, i) => cost.set(files[i], (cost.get(files[i]) ?? 0) + (timeOfTest.get(id) ?? 0)));
      const ordered = [...cost.keys()].sort((a, b) => cost.get(a) - cost.get(b));
      process.env.GW_STRYKER_FILE_ORDER = JSON.stringify(ordered);
      filesForNextRun = ordered.map(pathPattern);
    } else {
      delete process.env.GW_STRYKER_FILE_ORDER;
      filesForNextRun = undefined;
    }
    const started = performance.now();
    try {
      return await mutantRun(options);
    } finally {
      if (process.env.GW_STRYKER_TIMING)
        appendFileSync(
          process.env.GW_STRYKER_TIMING,
          `${options.activeMutant.id}\t${Math.round(performance.now() - started)}\t${filesForNextRun?.length ?? 'related'}\t${options.testFilter?.length ?? 'all'}\n`,
        );
      filesForNextRun = undefined;
    }
  };
  return runner;
}
coveringFilesRunnerFactory.inject = tokens(commonTokens.injector);

export const strykerPlugins = [
  declareFactoryPlugin(PluginKind.TestRunner, 'jest-covering-files', coveringFilesRunnerFactory),
];

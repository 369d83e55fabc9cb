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
import { declareFactoryPlugin, PluginKind, tokens, commonTokens } from '@stryker-mutator/api/plugin';
import { strykerPlugins as jestPlugins } from '@stryker-mutator/jest-runner';

const jestPlugin = jestPlugins.find((plugin) => plugin.name === 'jest');
if (!jestPlugin || !('factory' in jestPlugin)) throw new Error('@stryker-mutator/jest-runner: no "jest" test runner.');
const jestFactory = jestPlugin.factory;

/** A literal path as a jest test path pattern (a regular expression), anchored at its end. */
const pathPattern = (file) => `${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`;

/** @param {import('@stryker-mutator/api/plugin').Injector} injector */
function coveringFilesRunnerFactory(injector) {
  const runner = injector.injectFunction(/** @type {any} */ (jestFactory));
  /** Test id (full name) → the file that declares it, from the dry run. */
  const fileOfTest = new Map();
  /** @type {string[] | undefined} */
  let filesForNextRun;

  const adapter = runner.jestTestAdapter;
  const adapterRun = adapter.run.bind(adapter);
  adapter.run = (settings) =>
    adapterRun(filesForNextRun ? { ...settings, testFiles: filesForNextRun, fileNamesUnderTest: undefined } : settings);

  const dryRun = runner.dryRun.bind(runner);
  runner.dryRun = async (options) => {
    const result = await dryRun(options);
    if (result.status === 'complete')
      for (const test of result.tests) if (test.fileName) fileOfTest.set(test.id, test.fileName);
    return result;
  };

  const mutantRun = runner.mutantRun.bind(runner);
  runner.mutantRun = async (options) => {
    const files = options.testFilter?.map((id) => fileOfTest.get(id));
    // Without a filter (or with a test the dry run did not see) the jest runner decides, as before.
    filesForNextRun = files && files.every(Boolean) ? [...new Set(files)].map(pathPattern) : undefined;
    try {
      return await mutantRun(options);
    } finally {
      filesForNextRun = undefined;
    }
  };
  return runner;
}
coveringFilesRunnerFactory.inject = tokens(commonTokens.injector);

export const strykerPlugins = [
  declareFactoryPlugin(PluginKind.TestRunner, 'jest-covering-files', coveringFilesRunnerFactory),
];

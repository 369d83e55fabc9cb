// @ts-check
/**
 * A StrykerJS test runner for the unit tests (`packages/<pkg>/test/unit/*.test.ts`) that loads
 * every test file and the mutated sources ONCE per runner process, then runs the covering tests of
 * each mutant in that same process.
 *
 * The jest runner starts a jest run per mutant: a new module registry, every module loaded and
 * evaluated again, 1 to 5 s per mutant on a shared machine, however fast the tests. Stryker's
 * instrumented code reads the active mutant from a global at each call (mutant schemata), so a
 * module loaded once serves every mutant: only module-level code (static mutants, which
 * `ignoreStatic` leaves out) would need a reload. A mutant then costs what its tests cost.
 *
 * The unit tests use a subset of jest's API, provided here: describe / it / test (with .each,
 * .skip, .only ignored), beforeEach / afterEach / beforeAll / afterAll, `expect` (jest's own
 * package) and `jest.fn` / `jest.spyOn` / `jest.restoreAllMocks` (jest-mock). TypeScript is
 * transpiled with `typescript.transpileModule` (no type check: the checker does that). A test that
 * takes longer than 5 s fails, like jest's default timeout.
 */
import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative, resolve } from 'node:path';
import { declareFactoryPlugin, PluginKind, tokens, commonTokens } from '@stryker-mutator/api/plugin';
import {
  DryRunStatus,
  TestStatus,
  determineHitLimitReached,
  toMutantRunResult,
} from '@stryker-mutator/api/test-runner';

const require = createRequire(import.meta.url);
const jestRequire = createRequire(require.resolve('jest-circus', { paths: [require.resolve('jest')] }));
const { expect } = jestRequire('expect');
const { ModuleMocker } = jestRequire('jest-mock');
const ts = require('typescript');

/** The packages whose `test/unit` folders are run. */
const PACKAGES = ['jwks', 'identity-forwarding', 'mcp-gateway', 'sigv4-proxy', 'model-router'];
const TEST_TIMEOUT_MS = 5_000;

let tsHookInstalled = false;
/** Lets `require` load TypeScript (transpiled alone, CommonJS, as ts-jest with isolatedModules). */
function installTypeScriptHook() {
  if (tsHookInstalled) return;
  tsHookInstalled = true;
  const Module = require('node:module');
  Module._extensions['.ts'] = (module, filename) => {
    const source = require('node:fs').readFileSync(filename, 'utf8');
    const { outputText } = ts.transpileModule(source, {
      fileName: filename,
      compilerOptions: {
        module: ts.ModuleKind.CommonJS,
        target: ts.ScriptTarget.ES2022,
        esModuleInterop: true,
        experimentalDecorators: false,
        useDefineForClassFields: true,
        sourceMap: false,
        inlineSourceMap: false,
      },
    });
    module._compile(outputText, filename);
  };
}

/** Formats an `.each` title as jest does for the placeholders the tests use. */
function eachTitle(title, row, index) {
  const args = Array.isArray(row) ? row : [row];
  let i = 0;
  let name = title.replace(/%[sdijpo#%]/g, (placeholder) => {
    if (placeholder === '%%') return '%';
    if (placeholder === '%#') return String(index);
    const value = args[i++];
    if (placeholder === '%j' || placeholder === '%o' || placeholder === '%p') {
      try {
        return JSON.stringify(value);
      } catch {
        return String(value);
      }
    }
    return String(value);
  });
  if (!Array.isArray(row) && typeof row === 'object' && row !== null)
    name = name.replace(/\$([A-Za-z_][A-Za-z0-9_]*)/g, (_m, key) => String(row[key]));
  return name;
}

/** Collects the tests of the loaded files into a flat list, with their hooks. */
class Collector {
  constructor() {
    /** @type {{ id: string, name: string, fileName: string, fn: Function, before: Function[], after: Function[], suite: any }[]} */
    this.tests = [];
    /** @type {Set<string>} */
    this.ids = new Set();
    this.stack = [this.newSuite(undefined, '')];
    this.fileName = '';
  }
  newSuite(parent, name) {
    return { parent, name, beforeEach: [], afterEach: [], beforeAll: [], afterAll: [], tests: [], started: false };
  }
  get current() {
    return this.stack[this.stack.length - 1];
  }
  fullName(name) {
    return [...this.stack.map((s) => s.name), name].filter(Boolean).join(' ');
  }
  describe(name, fn) {
    const suite = this.newSuite(this.current, String(name));
    this.stack.push(suite);
    try {
      fn();
    } finally {
      this.stack.pop();
    }
  }
  test(name, fn) {
    const fullName = this.fullName(String(name));
    const suites = [...this.stack];
    let id = `${this.fileName} > ${fullName}`;
    for (let n = 2; this.ids.has(id); n++) id = `${this.fileName} > ${fullName} (${n})`;
    this.ids.add(id);
    this.tests.push({
      id,
      name: fullName,
      fileName: this.fileName,
      fn,
      suites,
    });
  }
  /** The jest globals, bound to this collector. */
  globals() {
    const withEach = (register) => {
      const f = (name, fn) => register(name, fn);
      f.each = (table) => (title, fn) =>
        table.forEach((row, index) =>
          register(eachTitle(String(title), row, index), () => (Array.isArray(row) ? fn(...row) : fn(row))),
        );
      f.skip = () => undefined;
      f.only = f;
      f.todo = () => undefined;
      return f;
    };
    const describe = withEach((name, fn) => this.describe(name, fn));
    const it = withEach((name, fn) => this.test(name, fn));
    return {
      describe,
      it,
      test: it,
      beforeEach: (fn) => this.current.beforeEach.push(fn),
      afterEach: (fn) => this.current.afterEach.push(fn),
      beforeAll: (fn) => this.current.beforeAll.push(fn),
      afterAll: (fn) => this.current.afterAll.push(fn),
    };
  }
}

/**
 * An error thrown outside any awaited code (an 'error' event nobody listens to, a rejection nobody
 * handles) fails the test that is running, as in jest, instead of ending the test runner process.
 */
let failRunningTest = (/** @type {unknown} */ _error) => {};
process.on('uncaughtException', (error) => failRunningTest(error));
process.on('unhandledRejection', (error) => failRunningTest(error));

/** Runs `fn` (sync, async or with a done callback) within the test timeout. */
async function call(fn) {
  let timer;
  try {
    await Promise.race([
      fn.length > 0 ? new Promise((resolve, reject) => fn((error) => (error ? reject(error) : resolve()))) : fn(),
      new Promise((_resolve, reject) => {
        timer = setTimeout(
          () => reject(new Error(`Exceeded timeout of ${TEST_TIMEOUT_MS} ms for a test.`)),
          TEST_TIMEOUT_MS,
        );
        failRunningTest = reject;
      }),
    ]);
  } finally {
    clearTimeout(timer);
    failRunningTest = () => {};
  }
}

function errorText(error) {
  return error instanceof Error ? `${error.message}\n${error.stack ?? ''}`.slice(0, 2000) : String(error);
}

/** @param {import('@stryker-mutator/api/logging').Logger} log */
function unitRunnerFactory(log) {
  /** @type {Collector | undefined} */
  let collector;
  let loadError;
  const ns = () => (globalThis.__stryker__ ??= {});

  function load() {
    if (collector) return;
    installTypeScriptHook();
    collector = new Collector();
    const mocker = new ModuleMocker(globalThis);
    const globals = {
      ...collector.globals(),
      expect,
      jest: {
        fn: mocker.fn.bind(mocker),
        spyOn: mocker.spyOn.bind(mocker),
        restoreAllMocks: mocker.restoreAllMocks.bind(mocker),
        clearAllMocks: mocker.clearAllMocks.bind(mocker),
        resetAllMocks: mocker.resetAllMocks.bind(mocker),
      },
    };
    Object.assign(globalThis, globals);
    process.env.NODE_ENV = 'test';
    const root = process.cwd();
    for (const name of PACKAGES) {
      const dir = join(root, 'packages', name, 'test', 'unit');
      let files = [];
      try {
        files = readdirSync(dir)
          .filter((f) => f.endsWith('.test.ts'))
          .sort();
      } catch {
        continue;
      }
      for (const file of files) {
        const path = resolve(dir, file);
        collector.fileName = relative(root, path);
        // A suite per file, so that a file's top-level hooks apply to its own tests only.
        collector.stack.push(collector.newSuite(collector.current, ''));
        try {
          require(path);
        } catch (error) {
          loadError = `${collector.fileName}: ${errorText(error)}`;
          log.error(`Cannot load ${collector.fileName}: ${errorText(error)}`);
          return;
        } finally {
          collector.stack.pop();
        }
      }
    }
    log.info(`Loaded ${collector.tests.length} unit tests once; each mutant runs its covering tests in this process.`);
  }

  /**
   * Runs the given tests (all when undefined), in file order, with their hooks. `bail` stops at
   * the first failure. beforeAll/afterAll run once per suite and run, around the suite's first
   * and after its last selected test.
   */
  async function run(selected, bail) {
    const results = [];
    const chosen = collector.tests.filter((t) => !selected || selected.has(t.id));
    const started = new Set();
    for (const [index, test] of chosen.entries()) {
      const t0 = performance.now();
      ns().currentTestId = test.id;
      let failure;
      try {
        for (const suite of test.suites)
          if (!started.has(suite)) {
            started.add(suite);
            for (const hook of suite.beforeAll) await call(hook);
          }
        for (const suite of test.suites) for (const hook of suite.beforeEach) await call(hook);
        try {
          await call(test.fn);
        } finally {
          for (const suite of [...test.suites].reverse())
            for (const hook of suite.afterEach) await call(hook).catch((error) => (failure ??= error));
        }
      } catch (error) {
        failure ??= error;
      }
      // afterAll of the suites the next selected test leaves
      const next = chosen[index + 1];
      for (const suite of [...test.suites].reverse()) {
        if (next && next.suites.includes(suite)) continue;
        if (!started.has(suite)) continue;
        for (const hook of suite.afterAll) await call(hook).catch(() => undefined);
        started.delete(suite);
      }
      ns().currentTestId = undefined;
      const base = {
        id: test.id,
        name: test.name,
        fileName: test.fileName,
        timeSpentMs: Math.round(performance.now() - t0),
      };
      if (failure === undefined) results.push({ ...base, status: TestStatus.Success });
      else {
        results.push({ ...base, status: TestStatus.Failed, failureMessage: errorText(failure) });
        if (bail) break;
      }
    }
    return results;
  }

  return {
    capabilities: () => ({ reloadEnvironment: false }),
    async init() {
      load();
    },
    async dryRun(options) {
      load();
      if (loadError) return { status: DryRunStatus.Error, errorMessage: loadError };
      const state = ns();
      // The instrumented files keep a reference to this object (from their first coverage call,
      // at load): reset its per-test part in place, never replace it.
      state.mutantCoverage ??= { static: {}, perTest: {} };
      state.mutantCoverage.perTest = {};
      const tests = await run(undefined, false);
      const result = { status: DryRunStatus.Complete, tests };
      if (options.coverageAnalysis !== 'off') result.mutantCoverage = state.mutantCoverage;
      return result;
    },
    async mutantRun(options) {
      load();
      if (loadError) return { status: 'error', errorMessage: loadError };
      const state = ns();
      state.activeMutant = options.activeMutant.id;
      state.hitLimit = options.hitLimit;
      state.hitCount = options.hitLimit ? 0 : undefined;
      try {
        const tests = await run(options.testFilter ? new Set(options.testFilter) : undefined, !options.disableBail);
        const timeout = determineHitLimitReached(state.hitCount, state.hitLimit);
        return toMutantRunResult(timeout ?? { status: DryRunStatus.Complete, tests }, options.disableBail);
      } finally {
        state.activeMutant = undefined;
        state.hitLimit = undefined;
        state.hitCount = undefined;
      }
    },
    async dispose() {},
  };
}
unitRunnerFactory.inject = tokens(commonTokens.logger);

export const strykerPlugins = [declareFactoryPlugin(PluginKind.TestRunner, 'gw-unit', unitRunnerFactory)];

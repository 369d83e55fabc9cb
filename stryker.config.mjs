// @ts-check
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Mutation testing of the security and conversion cores (docs/testing.md).
 *
 *   pnpm run test:mutation      every mutant, rewrites reports/stryker-incremental.json
 *   pnpm run test:mutation:ci   only mutants whose code or covering tests changed since
 *
 * Run `pnpm run build` first: the packages resolve each other through `dist`.
 */

/** The packages whose tests run; their tests cover every mutated file. */
const packages = ['jwks', 'identity-forwarding', 'sigv4-proxy', 'model-router'];

// jest.config.ts turns these into one flat project (see there). Inherited by the test runners.
process.env.GW_JEST_FLAT ??= packages.join(',');
// Where the test runner that does the dry run leaves each test's file for the other runners.
process.env.GW_STRYKER_DRY_RUN_FILE ??= join(tmpdir(), `gw-stryker-dry-run-${process.pid}.json`);

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
const config = {
  packageManager: 'pnpm',
  mutate: [
    'packages/jwks/src/core/verify.ts',
    'packages/jwks/src/core/key-sets.ts',
    'packages/jwks/src/core/signing-key.ts',
    'packages/jwks/src/core/signer.ts',
    'packages/identity-forwarding/src/core/header-policy.ts',
    'packages/identity-forwarding/src/core/credentials.ts',
    'packages/identity-forwarding/src/core/forwarder.ts',
    'packages/identity-forwarding/src/core/authenticator.ts',
    'packages/identity-forwarding/src/core/token-cache.ts',
    'packages/sigv4-proxy/src/core/signer.ts',
    'packages/sigv4-proxy/src/core/custom-host.ts',
    'packages/model-router/src/providers/anthropic/chat-request.ts',
    'packages/model-router/src/providers/anthropic/chat-response.ts',
    'packages/model-router/src/providers/anthropic/chat-stream.ts',
    'packages/model-router/src/core/input-checks/*.ts',
    'packages/model-router/src/core/cache/cache-key.ts',
  ],
  // Named explicitly: under pnpm, core cannot discover the `@stryker-mutator/*` plugins itself.
  plugins: [
    fileURLToPath(new URL('./scripts/stryker/jest-covering-files.mjs', import.meta.url)),
    '@stryker-mutator/jest-runner',
    '@stryker-mutator/typescript-checker',
  ],
  testRunner: 'jest-covering-files',
  jest: {
    projectType: 'custom',
    configFile: 'jest.config.ts',
    // Per mutant, only the test files that import the mutated file (then only the covering tests).
    enableFindRelatedTests: true,
    config: {
      // Stop at the first failing file (a killed mutant needs no more), cheapest files first.
      bail: 1,
      testSequencer: fileURLToPath(new URL('./scripts/stryker/file-order-sequencer.cjs', import.meta.url)),
      // Wall-clock tests measure the machine, not the code: instrumented code (every expression
      // behind a mutant switch) misses the 100 ms responsiveness probes and the 2 s PDF check
      // budget on 150,000 "/Type /Pages" whatever the mutant. Plain `jest` runs them.
      testNamePattern: '^(?!.*(within 100 ms|in linear time, within the budget)).*$',
    },
  },
  coverageAnalysis: 'perTest',
  // Module-level mutants (constant tables, regexes built once) run every test of the package:
  // a fifth of the mutants, three quarters of the time. Reported as ignored, not in the score.
  ignoreStatic: true,
  checkers: ['typescript'],
  tsconfigFile: 'tsconfig.json',
  typescriptChecker: { prioritizePerformanceOverAccuracy: true },
  thresholds: { high: 95, low: 90, break: 90 },
  incremental: true,
  incrementalFile: 'reports/stryker-incremental.json',
  // The machine is shared: one test runner by default; `--concurrency 2` overrides.
  concurrency: 1,
  timeoutMS: 10000,
  reporters: ['clear-text', 'progress', 'json', 'html'],
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  htmlReporter: { fileName: 'reports/mutation/mutation.html' },
  tempDirName: '.stryker-tmp',
  cleanTempDir: true,
  // Kept out of the sandbox (node_modules folders are symlinked into it, never copied).
  ignorePatterns: [
    'dist',
    'coverage',
    'reports',
    '.tmp',
    '*.tsbuildinfo',
    'bench/results.json',
    'bench/results.json.tmp',
    'docs',
    'examples/*/dist',
  ],
};

export default config;

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

/** The packages whose unit tests run; they cover every mutated file. */
export const packages = ['jwks', 'identity-forwarding', 'mcp-gateway', 'sigv4-proxy', 'model-router'];

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
    'packages/mcp-gateway/src/gate/tool-gate.ts',
    'packages/mcp-gateway/src/gate/tool-scan.ts',
    'packages/mcp-gateway/src/gate/sse-tool-filter.ts',
    'packages/mcp-gateway/src/gate/json-lines-tool-filter.ts',
    'packages/identity-forwarding/src/express/origin-guard.ts',
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
    fileURLToPath(new URL('./scripts/stryker/unit-runner.mjs', import.meta.url)),
    fileURLToPath(new URL('./scripts/stryker/jest-covering-files.mjs', import.meta.url)),
    '@stryker-mutator/jest-runner',
    '@stryker-mutator/typescript-checker',
  ],
  // The unit tests, loaded once per test runner process (scripts/stryker/unit-runner.mjs);
  // `--testRunner jest-covering-files` runs them through jest instead (a jest run per mutant).
  testRunner: 'gw-unit',
  jest: {
    projectType: 'custom',
    configFile: 'jest.config.ts',
    // Per mutant, only the test files that import the mutated file (then only the covering tests).
    enableFindRelatedTests: true,
    config: {
      // Only the unit tests (`test/unit/*.test.ts`): the pure cores called directly, no server, no
      // SDK, a few milliseconds per test. The integration tests cover the same files at 1 to 40 s
      // per mutant (docs/testing.md); plain `jest` still runs them all.
      testMatch: packages.map((name) => `<rootDir>/packages/${name}/test/unit/**/*.test.ts`),
      // Jest crawls only these folders on each run (one run per mutant).
      roots: packages.flatMap((name) => [`<rootDir>/packages/${name}/src`, `<rootDir>/packages/${name}/test/unit`]),
      // Stop at the first failing file (a killed mutant needs no more), cheapest files first.
      bail: 1,
      testSequencer: fileURLToPath(new URL('./scripts/stryker/file-order-sequencer.cjs', import.meta.url)),
    },
  },
  coverageAnalysis: 'perTest',
  // Module-level mutants (constant tables, regexes built once) run every test of the package:
  // a fifth of the mutants, three quarters of the time. Reported as ignored, not in the score.
  ignoreStatic: true,
  // No TypeScript checker: with the unit tests loaded once, type-checking each mutant took far
  // longer than testing it. A mutant that would not compile runs as the JavaScript it transpiles
  // to and is judged by the tests like any other. `--checkers typescript` puts it back
  // (scripts/stryker/tsconfig.json: the mutated packages and their unit tests only).
  checkers: [],
  tsconfigFile: 'scripts/stryker/tsconfig.json',
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

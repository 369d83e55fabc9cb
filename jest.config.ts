/**
 * @jest-config-loader ts-node
 * @jest-config-loader-options {"transpileOnly": true, "compilerOptions": {"module": "commonjs", "moduleResolution": "node10"}}
 */
// Loaded without type-checking (3 to 4 s of CPU per jest run otherwise): `pnpm run typecheck` checks this file.
import { availableParallelism } from 'node:os';
import type { Config } from 'jest';

/**
 * ESM-only dependencies that jest (a CommonJS module system) must transform.
 * At run time Node >= 20.19 loads them natively through require(esm).
 */
const esmOnly = ['jose', 'pkce-challenge', 'openid-client', 'oauth4webapi'];

const shared = {
  testEnvironment: 'node',
  // Transformed files kept with the dependencies, not in the run's temporary folder (jest-strict
  // gives each run its own, removed at its end): the Node 22 pass and later runs reuse the Node 20
  // run's transforms (jest keys them by content and config).
  cacheDirectory: `${__dirname}/node_modules/.cache/jest`,
  transform: {
    '^.+\\.[cm]?[tj]s$': ['ts-jest', { tsconfig: '<rootDir>/../../tsconfig.jest.json', diagnostics: false }],
  },
  // pnpm keeps packages under node_modules/.pnpm/<name>@<version>/node_modules/<name>.
  // (a scoped package's .pnpm folder is named with "+" for "/").
  transformIgnorePatterns: [
    `/node_modules/(?!(\\.pnpm/)?(${esmOnly.flatMap((n) => [n, n.replace('/', '\\+')]).join('|')})[@/])`,
    // The packages' builds are CommonJS already (tsc's output): nothing to transform.
    '/(packages/[^/]+|examples/server)/dist/',
  ],
  moduleFileExtensions: ['ts', 'js', 'mjs', 'cjs', 'json'],
  testMatch: ['<rootDir>/test/**/*.test.ts'],
} satisfies Config['projects'] extends (infer P)[] | undefined ? Exclude<P, string> : never;

const packageDirs = [
  'packages/tracing',
  'packages/upstream',
  'packages/access',
  'packages/jwks',
  'packages/identity-forwarding',
  'packages/mcp-gateway',
  'packages/sigv4-proxy',
  'packages/model-router',
  'packages/catalog',
  'packages/oauth',
  'packages/upstream-auth',
  'packages/console',
  'examples/server',
];

/**
 * `GW_JEST_FLAT=jwks,sigv4-proxy` runs those packages' tests as ONE top-level project instead of
 * `projects`. Mutation testing (stryker.config.mjs) sets it: StrykerJS's jest runner installs its
 * coverage-collecting test environment on the top-level config only, never inside `projects`.
 */
const flat = process.env.GW_JEST_FLAT?.split(',').filter(Boolean);

function flatConfig(names: readonly string[]): Config {
  const dirs = names.map((name) => {
    const dir = packageDirs.find((d) => d.split('/').pop() === name);
    if (!dir) throw new Error(`GW_JEST_FLAT: no package named "${name}".`);
    return dir;
  });
  return {
    ...shared,
    transform: {
      '^.+\\.[cm]?[tj]s$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.jest.json', diagnostics: false }],
    },
    roots: dirs.map((dir) => `<rootDir>/${dir}`),
    ...(dirs.some((dir) => sourceMapped.has(dir)) ? { moduleNameMapper: identityAndMcpSources('<rootDir>') } : {}),
    testMatch: dirs.map((dir) => `<rootDir>/${dir}/test/**/*.test.ts`),
  };
}

/**
 * `@gw/identity-forwarding` and `@gw/mcp-gateway` test each other's sources: the identity tests
 * forward through the proxy, and the proxy builds on `@gw/identity-forwarding/identity`. Both
 * names map to the sources, so a test loads one copy of each (one `IdentityForwardingError` class
 * for `instanceof`), not a source copy beside a built one. Other packages use what is published.
 */
const identityAndMcpSources = (root: string): Record<string, string> => ({
  '^@gw/identity-forwarding/identity$': `${root}/packages/identity-forwarding/src/index.ts`,
  '^@gw/mcp-gateway$': `${root}/packages/mcp-gateway/src/index.ts`,
});
const sourceMapped = new Set(['packages/identity-forwarding', 'packages/mcp-gateway']);

/**
 * Test files the Node 22 pass (`pnpm run test:node22`, which sets `GW_JEST_NODE22=1`) leaves out:
 * they call the packages' pure functions with plain values, and reach none of what differs between
 * Node 20 and 22 (no server or socket, no stream, zlib, key handling, `fetch`, SDK transport or
 * database): the same V8 semantics give the same results, and the Node 20 run covers them.
 * Everything else runs under both, and a new test file runs under both unless it is named here.
 * See docs/testing.md, "The Node 22 pass".
 */
const sameOnEveryNode = [
  'identity-forwarding/test/header-policy.property',
  'identity-forwarding/test/request-origin',
  'identity-forwarding/test/unit/(forwarder|header-policy|mcp-protocol-headers|origin-guard|token-cache-options)',
  'mcp-gateway/test/tool-gate',
  'mcp-gateway/test/unit/(json-lines-tool-filter|mcp-request-reading|sse-tool-filter|tool-gate|tool-scan)',
  'mcp-gateway/test/virtual/(pages|virtual-config)',
  'sigv4-proxy/test/mutation-custom-host',
  'sigv4-proxy/test/unit/(resolved-custom-hosts|sigv4-core)',
  'model-router/test/(cache-assembler|cache-key\\.property|property-convert|recorded-error-message|streaming-json)',
  'model-router/test/unit/(bedrock-model-ids|cache-key|chat-request|chat-response|input-checks|pdf-bytes)',
  'catalog/test/(admin-errors|config-records|openapi|secret-holders)',
  'console/test/sessions',
  'upstream/test/addresses',
  'upstream-auth/test/validate',
].map((file) => `/packages/${file}\\.test\\.ts$`);
const node22 = process.env.GW_JEST_NODE22 === '1';

const projects = packageDirs.map((dir) => ({
  ...shared,
  displayName: dir.split('/').pop(),
  rootDir: dir,
  ...(sourceMapped.has(dir) ? { moduleNameMapper: identityAndMcpSources('<rootDir>/../..') } : {}),
  ...(node22 ? { testPathIgnorePatterns: ['/node_modules/', ...sameOnEveryNode] } : {}),
}));

const config: Config = flat
  ? flatConfig(flat)
  : {
      reporters: ['default', '<rootDir>/scripts/jest-summary-reporter.cjs'],
      // Longest files first, from jest's cache or, in a fresh clone, from a recent run's times.
      testSequencer: '<rootDir>/scripts/jest-sequencer.cjs',
      // Two test files at a time even on two cores (jest's default would be one): most files wait
      // on the processes they start (gateways, databases, a browser, npm), not on the CPU.
      maxWorkers: Math.max(2, availableParallelism() - 1),
      // A test or hook that waits on real servers, keys and processes gets 30 s, not jest's 5 s: a
      // shared CI machine can be several times slower than a developer's (a hang still fails).
      testTimeout: 30_000,
      // A worker at the end of the run gets 10 s to exit, not jest's 500 ms: a worker that loaded
      // the embedded database (WebAssembly) can take longer than that to tear down on a busy
      // machine, and jest reports that as a leak. A handle left open still keeps it up past 10 s.
      workerGracefulExitTimeout: 10_000,
      projects: [
        ...projects,
        {
          // The published packages as adopters get them: a local registry, consumers outside the
          // repository, the docs' code blocks. Needs `npm run build` only for the snippet check.
          ...shared,
          displayName: 'release',
          rootDir: 'test/release',
          testMatch: ['<rootDir>/*.test.ts'],
          transform: {
            '^.+\\.[cm]?[tj]s$': ['ts-jest', { tsconfig: '<rootDir>/../../tsconfig.jest.json', diagnostics: false }],
          },
        },
        // The Kubernetes manifests (deploy/); the image itself is `pnpm run test:container`.
        { ...shared, displayName: 'container', rootDir: 'test/container', testMatch: ['<rootDir>/*.test.ts'] },
        // The repository's own scripts (scripts/): what CI runs around the tests.
        {
          ...shared,
          displayName: 'scripts',
          rootDir: 'scripts',
          testMatch: ['<rootDir>/test/*.test.ts'],
          transform: {
            '^.+\\.[cm]?[tj]s$': ['ts-jest', { tsconfig: '<rootDir>/../tsconfig.jest.json', diagnostics: false }],
          },
        },
        {
          ...shared,
          displayName: 'bench',
          rootDir: 'bench',
          transform: {
            '^.+\\.[cm]?[tj]s$': ['ts-jest', { tsconfig: '<rootDir>/../tsconfig.jest.json', diagnostics: false }],
          },
        },
      ],
    };

export default config;

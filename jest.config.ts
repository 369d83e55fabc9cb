import type { Config } from 'jest';

/**
 * ESM-only dependencies that jest (a CommonJS module system) must transform.
 * At run time Node >= 20.19 loads them natively through require(esm).
 */
const esmOnly = ['jose', 'pkce-challenge'];

const shared = {
  testEnvironment: 'node',
  transform: {
    '^.+\\.[cm]?[tj]s$': ['ts-jest', { tsconfig: '<rootDir>/../../tsconfig.jest.json', diagnostics: false }],
  },
  // pnpm keeps packages under node_modules/.pnpm/<name>@<version>/node_modules/<name>.
  // (a scoped package's .pnpm folder is named with "+" for "/").
  transformIgnorePatterns: [
    `/node_modules/(?!(\\.pnpm/)?(${esmOnly.flatMap((n) => [n, n.replace('/', '\\+')]).join('|')})[@/])`,
  ],
  moduleFileExtensions: ['ts', 'js', 'mjs', 'cjs', 'json'],
  testMatch: ['<rootDir>/test/**/*.test.ts'],
} satisfies Config['projects'] extends (infer P)[] | undefined ? Exclude<P, string> : never;

const projects = [
  'packages/jwks',
  'packages/identity-forwarding',
  'packages/sigv4-proxy',
  'packages/model-router',
  'packages/catalog',
  'packages/console',
  'examples/server',
].map((dir) => ({ ...shared, displayName: dir.split('/').pop(), rootDir: dir }));

const config: Config = {
  reporters: ['default', '<rootDir>/scripts/jest-summary-reporter.cjs'],
  projects: [
    ...projects,
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

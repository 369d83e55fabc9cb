// `pnpm run test:container`: builds the image and runs containers from it (test/container/image).
// Kept out of the main jest pass (jest.config.ts), which only validates the manifests: building
// the image takes minutes. .ci/run runs it when the image's inputs changed (inputs.sha256).
const esmOnly = ['jose', 'pkce-challenge', 'openid-client', 'oauth4webapi'];
module.exports = {
  rootDir: __dirname,
  displayName: 'container-image',
  testEnvironment: 'node',
  testMatch: ['<rootDir>/*.test.ts'],
  transform: {
    '^.+\\.[cm]?[tj]s$': ['ts-jest', { tsconfig: '<rootDir>/../../../tsconfig.jest.json', diagnostics: false }],
  },
  transformIgnorePatterns: [`/node_modules/(?!(\\.pnpm/)?(${esmOnly.join('|')})[@/])`],
  moduleFileExtensions: ['ts', 'js', 'mjs', 'cjs', 'json'],
  maxWorkers: 1,
  testTimeout: 300_000,
};

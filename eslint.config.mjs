import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', '**/coverage/**', '.tmp/**', 'reports/**', '.stryker-tmp/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        URL: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setImmediate: 'readonly',
        AbortController: 'readonly',
        TextEncoder: 'readonly',
        TextDecoder: 'readonly',
        performance: 'readonly',
        fetch: 'readonly',
        __dirname: 'readonly',
        require: 'readonly',
        module: 'writable',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': 'off',
    },
  },
  {
    // The request path looks things up by strings clients send (content codings, slugs, config keys,
    // query parameters): a plain object would answer "constructor" or "__proto__" from
    // Object.prototype. Lookup tables there are Maps or Sets; membership is Object.hasOwn.
    files: ['packages/*/src/**/*.ts', 'examples/server/src/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector:
            ':matches(Program, ExportNamedDeclaration) > VariableDeclaration > VariableDeclarator[init.type="ObjectExpression"] > Identifier TSTypeReference[typeName.name="Record"]',
          message:
            'A lookup table keyed by strings must be a Map (or a Set): a plain object answers names such as "constructor" from Object.prototype.',
        },
        {
          selector: 'BinaryExpression[operator="in"][left.type!="Literal"]',
          message:
            'Use Object.hasOwn(object, key) or a Map: `key in object` is true for "constructor" and "__proto__".',
        },
      ],
    },
  },
  {
    // Consumer code written the way adopters write it (require(), import() types), copied outside
    // the repository by test/release/registry.test.ts; and the Verdaccio launcher (CommonJS).
    files: ['test/release/consumer/**', 'test/release/*.cjs'],
    languageOptions: { globals: { test: 'readonly', expect: 'readonly' } },
    rules: {
      '@typescript-eslint/no-require-imports': 'off',
      '@typescript-eslint/consistent-type-imports': 'off',
    },
  },
);

import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

// scripts/stryker/unchanged.mjs lets test:mutation:ci skip Stryker when an incremental run would
// reuse every result of the committed report. Each change Stryker's incremental diff acts on must
// make it say "run".
const repo = join(__dirname, '..', '..');
const script = join(repo, 'scripts', 'stryker', 'unchanged.mjs');
const installedStryker = (
  JSON.parse(readFileSync(join(repo, 'node_modules', '@stryker-mutator', 'core', 'package.json'), 'utf8')) as {
    version: string;
  }
).version;

/** A repository of one package with two mutated files, two unit tests and a report of exactly them. */
function fixture(): string {
  const root = mkdtempSync(join(tmpdir(), 'stryker-unchanged-'));
  writeFileSync(join(root, 'package.json'), '{}');
  // The installed StrykerJS is resolved from the fixture's root, as from the repository's.
  mkdirSync(join(root, 'node_modules', '@stryker-mutator'), { recursive: true });
  cpSync(
    join(repo, 'node_modules', '@stryker-mutator', 'core', 'package.json'),
    join(root, 'node_modules', '@stryker-mutator', 'core', 'package.json'),
  );
  writeFileSync(
    join(root, 'stryker.config.mjs'),
    "export const packages = ['p'];\n" +
      "export default { mutate: ['packages/p/src/a.ts', 'packages/p/src/checks/*.ts'], incrementalFile: 'reports/incremental.json' };\n",
  );
  const files: Record<string, string> = {
    'packages/p/src/a.ts': 'export const a = 1;\n',
    'packages/p/src/checks/b.ts': 'export const b = 2;\n',
    'packages/p/test/unit/a.test.ts': 'test("a", () => {});\n',
    'packages/p/test/unit/nested/b.test.ts': 'test("b", () => {});\n',
  };
  for (const [path, source] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), source);
  }
  const entries = (prefix: string, key: 'mutants' | 'tests') =>
    Object.fromEntries(
      Object.entries(files)
        .filter(([path]) => path.startsWith(prefix))
        .map(([path, source]) => [path, { source, [key]: [] }]),
    );
  mkdirSync(join(root, 'reports'));
  writeFileSync(
    join(root, 'reports', 'incremental.json'),
    JSON.stringify({
      framework: { name: 'StrykerJS', version: installedStryker },
      files: entries('packages/p/src/', 'mutants'),
      testFiles: entries('packages/p/test/', 'tests'),
    }),
  );
  return root;
}

function check(root: string): { status: number | null; out: string } {
  const run = spawnSync(process.execPath, [script, '--root', root], { encoding: 'utf8', timeout: 30_000 });
  return { status: run.status, out: run.stdout + run.stderr };
}

describe('scripts/stryker/unchanged.mjs', () => {
  const roots: string[] = [];
  const make = () => {
    const root = fixture();
    roots.push(root);
    return root;
  };
  afterAll(() => {
    for (const root of roots) rmSync(root, { recursive: true, force: true });
  });

  it('says "up to date" when every file is as the report recorded it', () => {
    expect(check(make())).toEqual({ status: 0, out: expect.stringContaining('up to date') });
  });

  it.each([
    [
      'a mutated file changed',
      'mutated file changed: packages/p/src/a.ts',
      (root: string) => writeFileSync(join(root, 'packages/p/src/a.ts'), 'export const a = 2;\n'),
    ],
    [
      'a file the mutate pattern now matches',
      'mutated file new: packages/p/src/checks/c.ts',
      (root: string) => writeFileSync(join(root, 'packages/p/src/checks/c.ts'), 'export const c = 3;\n'),
    ],
    [
      'a mutated file gone',
      'mutated file gone: packages/p/src/checks/b.ts',
      (root: string) => rmSync(join(root, 'packages/p/src/checks/b.ts')),
    ],
    [
      'a unit test changed',
      'unit test file changed: packages/p/test/unit/nested/b.test.ts',
      (root: string) =>
        writeFileSync(
          join(root, 'packages/p/test/unit/nested/b.test.ts'),
          'test("b", () => { expect(1).toBe(1); });\n',
        ),
    ],
    [
      'a unit test added',
      'unit test file new: packages/p/test/unit/c.test.ts',
      (root: string) => writeFileSync(join(root, 'packages/p/test/unit/c.test.ts'), 'test("c", () => {});\n'),
    ],
    [
      'a unit test removed',
      'unit test file gone: packages/p/test/unit/a.test.ts',
      (root: string) => rmSync(join(root, 'packages/p/test/unit/a.test.ts')),
    ],
    [
      'a report of another StrykerJS version',
      'made by StrykerJS 0.0.1',
      (root: string) => {
        const path = join(root, 'reports', 'incremental.json');
        const report = JSON.parse(readFileSync(path, 'utf8')) as { framework: { version: string } };
        report.framework.version = '0.0.1';
        writeFileSync(path, JSON.stringify(report));
      },
    ],
    [
      'no report',
      'no report at reports/incremental.json',
      (root: string) => rmSync(join(root, 'reports', 'incremental.json')),
    ],
  ])('says "run" when %s', (_name, message, change) => {
    const root = make();
    change(root);
    const result = check(root);
    expect(result.status).toBe(1);
    expect(result.out).toContain(message);
  });

  it('finds the repository’s own report up to date or names what changed', () => {
    // The committed report is kept current with the code (docs/testing.md); either way the script runs cleanly.
    const result = check(repo);
    expect([0, 1]).toContain(result.status);
    expect(result.out).toMatch(/up to date|out of date/);
  });
});

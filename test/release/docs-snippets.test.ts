import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

// The code blocks of the README files and docs/*.md compile against the packages' types
// (scripts/check-doc-snippets.mjs; the packages must be built).
jest.setTimeout(180_000);

const root = resolve(__dirname, '..', '..');
const script = join(root, 'scripts', 'check-doc-snippets.mjs');

function check(files: string[] = []) {
  return spawnSync(process.execPath, [script, ...files], { cwd: root, encoding: 'utf8', timeout: 170_000 });
}

describe('the docs code blocks', () => {
  it('every ts/js block of the README files and docs/*.md compiles', () => {
    const result = check();
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(/\d+ code blocks checked, \d+ skipped, 0 problems/);
    expect(result.status).toBe(0);
  });

  it('names the file and line of a block that stops compiling, and honours fragment and skip comments', () => {
    mkdirSync(join(root, '.tmp'), { recursive: true });
    const dir = mkdtempSync(join(root, '.tmp', 'doc-snippets-test-'));
    try {
      const file = join(dir, 'README.md');
      writeFileSync(
        file,
        [
          '# Example',
          '',
          '```ts',
          "import { modelRouter } from '@gw/model-router';",
          "modelRouter({ providers: [{ slug: 'a', provider: 'anthropic', apiKey: 1 }] });",
          '```',
          '',
          '<!-- snippet: fragment',
          "import express from 'express';",
          'const app = express();',
          '-->',
          '',
          '```js',
          "app.get('/', (_req, res) => res.send('ok'));",
          '```',
          '',
          '<!-- snippet: skip: not code at all -->',
          '',
          '```ts',
          'this is not TypeScript',
          '```',
          '',
          '<!-- snippet: skip -->',
          '',
          '```typescript',
          'neither is this',
          '```',
          '',
        ].join('\n'),
      );
      const result = check([file]);
      expect(result.status).toBe(1);
      expect(result.stderr.trim().split('\n')).toHaveLength(2);
      expect(result.stderr).toMatch(/README\.md:5: TS2322: Type 'number' is not assignable to type 'string'/);
      expect(result.stderr).toMatch(/README\.md:26: a "snippet: skip" comment needs a reason/);
      expect(result.stdout).toMatch(/skipped .*README\.md:20: not code at all/);
      expect(result.stdout).toMatch(/2 code blocks checked, 1 skipped, 2 problems/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * Runs `code` as an ES module that imports the bench module `file` (bench/<file>) as `name` (the
 * bench is ESM; jest here is CommonJS) and answers what it printed as JSON.
 */
export function inBenchModule(file: string, name: string, code: string, timeoutMs = 50_000): unknown {
  const href = pathToFileURL(join(__dirname, '..', file)).href;
  const out = execFileSync(
    process.execPath,
    ['--input-type=module', '-e', `import * as ${name} from ${JSON.stringify(href)};\n${code}`],
    {
      encoding: 'utf8',
      timeout: timeoutMs,
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  return JSON.parse(out);
}

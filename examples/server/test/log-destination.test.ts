import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

jest.setTimeout(30_000);

const LOGGER = join(__dirname, '..', 'dist', 'observability', 'logger.js');

/**
 * A process that logs `count` lines through the gateway's stdout logger and, with the same clock,
 * through a logger writing to memory (pino's output for the same calls), then saves the latter
 * to `expected` and leaves as `ending` says: `exit` (process.exit at once: pino flushes at exit),
 * `idle` (after 600 ms of nothing: the flush timer) or `flush` (the logger's flush, then SIGKILL
 * once it called back: nothing runs at exit).
 */
function script(count: number, expected: string, ending: 'exit' | 'idle' | 'flush'): string {
  return `
    const { writeFileSync } = require('node:fs');
    const { createLogger } = require(${JSON.stringify(LOGGER)});
    Date.now = () => 1767225600000;
    let memory = '';
    const loggers = [createLogger('info'), createLogger('info', { write: (line) => { memory += line; } })];
    for (let i = 0; i < ${count}; i++)
      for (const logger of loggers)
        logger.info({ i, keyHint: '…7f3a', text: i % 7 === 0 ? 'Grüße 😀 ' + 'x'.repeat(i % 300) : 'plain', authorization: 'secret' }, 'request');
    writeFileSync(${JSON.stringify(expected)}, memory);
    if (${JSON.stringify(ending)} === 'exit') process.exit(0);
    if (${JSON.stringify(ending)} === 'flush') loggers[0].flush(() => process.kill(process.pid, 'SIGKILL'));
    else setTimeout(() => {}, 600);
  `;
}

async function run(count: number, ending: 'exit' | 'idle' | 'flush'): Promise<{ stdout: Buffer; expected: Buffer }> {
  const expected = join(mkdtempSync(join(tmpdir(), 'gw-log-')), 'expected.log');
  const child = spawn(process.execPath, ['-e', script(count, expected, ending)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const chunks: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
  const [code, signal] = await new Promise<[number | null, string | null]>((resolve) =>
    child.on('close', (exitCode, exitSignal) => resolve([exitCode, exitSignal])),
  );
  expect(ending === 'flush' ? signal : code).toBe(ending === 'flush' ? 'SIGKILL' : 0);
  return { stdout: Buffer.concat(chunks), expected: readFileSync(expected) };
}

describe('the stdout log destination', () => {
  it.each([
    ['pino flushes at exit', 2_000, 'exit'],
    ['the flush timer sends a batch below 32 KiB', 20, 'idle'],
    ["the logger's flush", 500, 'flush'],
  ] as const)(
    'writes the bytes pino writes, every line in order, multi-byte characters whole (%s)',
    async (_, count, ending) => {
      const { stdout, expected } = await run(count, ending);
      expect(stdout.length).toBeGreaterThan(0);
      expect(stdout.toString('utf8').split('\n')).toHaveLength(count + 1);
      expect(stdout.equals(expected)).toBe(true);
      expect(stdout.toString('utf8')).not.toContain('secret');
    },
  );
});

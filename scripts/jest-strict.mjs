// Runs jest and fails the run when a test leaves something open: a worker jest had to force
// exit, or a jest process that does not exit after its run. Jest itself only warns about both.
//   node scripts/jest-strict.mjs [jest arguments]
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const jestBin = fileURLToPath(new URL('../node_modules/jest/bin/jest.js', import.meta.url));
/** What jest prints when a test left a handle open (a socket, a timer, a server). */
const LEAKS = [
  'A worker process has failed to exit gracefully',
  'Jest did not exit one second after the test run has completed',
  'Jest has detected the following',
];
/** How long jest may stay up after saying it did not exit. */
const EXIT_GRACE_MS = 10_000;

/**
 * The run's temporary folder: every test's `mkdtemp(tmpdir())` (databases, configs, npm
 * consumers, browsers) lands in it through TMPDIR, and it is removed when jest ends, whatever the
 * tests left (a killed test cleans nothing up). `GW_KEEP_TEST_TMP=1` keeps it to look inside.
 */
const scratch = mkdtempSync(join(tmpdir(), 'gw-test-run-'));
// Others may pass through it, as through the system's folder: a PostgreSQL server a test starts
// as the `postgres` user keeps its data in a folder of its own in here.
chmodSync(scratch, 0o755);
const removeScratch = () => {
  if (process.env.GW_KEEP_TEST_TMP === '1') process.stderr.write(`jest-strict: temporary files kept in ${scratch}\n`);
  else rmSync(scratch, { recursive: true, force: true, maxRetries: 3 });
};
const child = spawn(
  process.execPath,
  ['--experimental-vm-modules', '--no-warnings=ExperimentalWarning', jestBin, ...process.argv.slice(2)],
  { stdio: ['inherit', 'inherit', 'pipe'], env: { ...process.env, TMPDIR: scratch } },
);
for (const signal of ['SIGINT', 'SIGTERM'])
  process.on(signal, () => {
    child.kill(signal);
  });
const seen = new Set();
let tail = '';
let killTimer;
child.stderr.on('data', (chunk) => {
  process.stderr.write(chunk);
  // Keep the end of the previous chunk: a message may span two chunks.
  const text = tail + chunk.toString('utf8');
  tail = text.slice(-200);
  for (const leak of LEAKS)
    if (text.includes(leak)) {
      seen.add(leak);
      if (leak.startsWith('Jest did not exit') && !killTimer)
        killTimer = setTimeout(() => child.kill('SIGKILL'), EXIT_GRACE_MS).unref();
    }
});
child.on('exit', (code, signal) => {
  removeScratch();
  if (seen.size > 0) {
    process.stderr.write(
      `\njest-strict: a test left a handle open (${[...seen].join('; ')}). ` +
        'Find it with `npx jest --detectOpenHandles <file>` and close it in the test or the code.\n',
    );
    process.exit(1);
  }
  process.exit(code ?? (signal ? 1 : 0));
});

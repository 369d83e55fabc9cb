// Runs scripts of the root package.json in the order given, as `npm run` does, without starting
// npm for each. Under `pnpm run`, pnpm exports its own settings as npm_config_* variables
// (verify-deps-before-run, npm-globalconfig, _jsr-registry, …) and a nested `npm run` printed an
// "Unknown env config" warning for each of them, every time. Warnings of the tools themselves
// (and of an `npm` a script starts on purpose) are untouched.
//   node scripts/run-scripts.mjs [--silent] build typecheck lint test --ci
// A word that starts with "-" is an argument of the script before it (`test --ci`); `--silent`
// first leaves out the "> name" lines.
//
// A step starts when the steps before it are done, except the steps in BESIDE: they write nothing
// the later steps read (`tsc --noEmit`, `eslint`, `prettier --check`, the mutation scores), so the
// steps after them start at the same time instead of waiting (in `check`: lint starts with build,
// whose output it does not read, on the core that single-threaded tsc leaves idle; typecheck and
// test start once build is done; the mutation run starts with the Node 22 pass, after test). Each of them writes its output in one block when it ends. The first script that fails
// ends the run with its exit code: a step beside others that fails stops the steps still running;
// a step that fails waits for the steps beside it still running, so that their output is shown too.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Scripts that write nothing the later steps read, with the niceness each runs at: the steps after
 * them do not wait for them. They run at the lowest priority: they take only the CPU the steps
 * beside them leave idle (jest's workers waiting on the servers, browsers and npm they start)
 * rather than taking it from them, and a core of their own once those are done. A jest run is never
 * one of them: its tests time servers and streams, and starved they time out.
 */
const BESIDE = new Map([
  ['typecheck', 19],
  ['lint', 19],
  ['test:mutation:ci', 19],
]);

const root = fileURLToPath(new URL('..', import.meta.url));
const { scripts = {} } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

const words = process.argv.slice(2);
const silent = words[0] === '--silent';
if (silent) words.shift();
/** @type {{ name: string, args: string[] }[]} */
const steps = [];
for (const word of words) {
  if (word.startsWith('-')) {
    const last = steps.at(-1);
    if (!last) throw new Error(`run-scripts: "${word}" comes before any script name.`);
    last.args.push(word);
  } else {
    if (typeof scripts[word] !== 'string') throw new Error(`run-scripts: package.json has no script "${word}".`);
    steps.push({ name: word, args: [] });
  }
}

const path = [join(root, 'node_modules', '.bin'), process.env.PATH ?? ''].join(delimiter);
/** @type {Set<import('node:child_process').ChildProcess>} */
const running = new Set();
/** Sends `signal` to a script's shell and everything it started (its own process group). */
function stop(child, signal) {
  try {
    process.kill(-(child.pid ?? 0), signal);
  } catch {
    // Already gone.
  }
}
for (const signal of ['SIGINT', 'SIGTERM'])
  process.on(signal, () => {
    for (const child of running) stop(child, signal);
    process.exit(signal === 'SIGINT' ? 130 : 143);
  });

/**
 * Starts one script in a shell. Its output goes straight through, or, with `collect`, into one
 * block written when it ends, at `niceness` (0: the priority of this process). Resolves with its
 * exit code.
 * @returns {Promise<number>}
 */
function run({ name, args }, collect, niceness = 0) {
  const command = [scripts[name], ...args].join(' ');
  const header = silent ? '' : `\n> ${name}\n> ${command}\n\n`;
  if (!collect) process.stdout.write(header);
  const lowPriority = niceness > 0 && process.platform !== 'win32';
  const child = spawn(
    lowPriority ? 'nice' : command,
    lowPriority ? ['-n', String(niceness), '/bin/sh', '-c', command] : [],
    {
      cwd: root,
      shell: !lowPriority,
      stdio: collect ? ['ignore', 'pipe', 'pipe'] : 'inherit',
      // A process group of its own, so that a failed check can stop a running step with its children.
      detached: true,
      env: { ...process.env, PATH: path, npm_lifecycle_event: name, npm_lifecycle_script: scripts[name] },
    },
  );
  running.add(child);
  /** @type {Buffer[]} */
  const output = [];
  child.stdout?.on('data', (chunk) => output.push(chunk));
  child.stderr?.on('data', (chunk) => output.push(chunk));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => {
      running.delete(child);
      if (collect) process.stdout.write(header + Buffer.concat(output).toString('utf8'));
      resolve(code ?? (signal ? 1 : 0));
    });
  });
}

/** Ends the run with `code`, stopping the scripts still running. */
function fail(code) {
  for (const child of running) stop(child, 'SIGTERM');
  process.exit(code);
}

/** @type {Promise<number>[]} */
const checks = [];
for (const step of steps) {
  if (BESIDE.has(step.name)) {
    checks.push(
      run(step, true, BESIDE.get(step.name)).then((code) => {
        if (code !== 0) fail(code);
        return code;
      }),
    );
    continue;
  }
  const code = await run(step, false);
  if (code !== 0) {
    await Promise.all(checks);
    process.exit(code);
  }
}
await Promise.all(checks);

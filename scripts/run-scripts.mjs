// Runs scripts of the root package.json one after another, as `npm run` does, without starting
// npm for each. Under `pnpm run`, pnpm exports its own settings as npm_config_* variables
// (verify-deps-before-run, npm-globalconfig, _jsr-registry, …) and a nested `npm run` printed an
// "Unknown env config" warning for each of them, every time. Warnings of the tools themselves
// (and of an `npm` a script starts on purpose) are untouched.
//   node scripts/run-scripts.mjs [--silent] build typecheck lint test --ci
// A word that starts with "-" is an argument of the script before it (`test --ci`); `--silent`
// first leaves out the "> name" lines. Stops at the first script that fails, with its exit code.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

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
for (const { name, args } of steps) {
  const command = [scripts[name], ...args].join(' ');
  if (!silent) process.stdout.write(`\n> ${name}\n> ${command}\n\n`);
  const result = spawnSync(command, {
    cwd: root,
    shell: true,
    stdio: 'inherit',
    env: { ...process.env, PATH: path, npm_lifecycle_event: name, npm_lifecycle_script: scripts[name] },
  });
  if (result.error) throw result.error;
  if (result.status !== 0) process.exit(result.status ?? 1);
}

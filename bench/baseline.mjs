// Gateways built from earlier commits, to measure what a feature costs requests that do not use
// it against the gateway before the feature existed. Each is exported with `git archive` into
// node_modules/.cache/gw-bench/<commit> (outside the tree, reused by later runs), installed from
// the pnpm store and built there.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The commits the bench compares against. `repair` lists files taken from a later commit: the
 * commit before the response cache does not compile as merged (a doc comment lost its opening
 * line in the merge of access policies and observability; the cache's merge restored it, and
 * changed nothing else in that file).
 */
export const BASELINES = {
  preCache: {
    commit: '867d5e80fcaa1530205c715ecc2cb3f020e34814',
    label: 'the commit before the response cache (867d5e8)',
    repair: { from: 'ee252e670349455e4213f27cb6a03f0b060d69cb', paths: ['packages/catalog/src/core/admin-api.ts'] },
  },
  preTracing: {
    commit: 'e8d8a04c86770f1d1be158bd51fdf9918c5533a4',
    label: 'the commit before tracing and request records (e8d8a04)',
  },
};

function run(command, args, cwd, timeout = 600_000) {
  const result = spawnSync(command, args, { cwd, encoding: 'utf8', timeout, maxBuffer: 64 * 1024 * 1024 });
  if (result.status !== 0) {
    const output = `${result.stdout ?? ''}${result.stderr ?? ''}`.trim().split('\n').slice(-5).join('\n');
    throw new Error(`${command} ${args.join(' ')} failed in ${cwd}: ${result.error?.message ?? output}`);
  }
  return result.stdout;
}

/**
 * Builds (once) the gateway of `baseline` and answers the path of its `main.js`, or throws saying
 * why it could not.
 */
export function buildBaseline(root, baseline) {
  const dir = join(root, 'node_modules', '.cache', 'gw-bench', baseline.commit);
  const main = join(dir, 'examples/server/dist/main.js');
  const done = join(dir, '.built');
  if (existsSync(done) && existsSync(main)) return main;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const archive = spawnSync('git', ['archive', '--format=tar', baseline.commit], {
    cwd: root,
    maxBuffer: 512 * 1024 * 1024,
  });
  if (archive.status !== 0) throw new Error(`git archive ${baseline.commit}: ${archive.stderr}`);
  const tar = spawnSync('tar', ['-x', '-C', dir], { input: archive.stdout });
  if (tar.status !== 0) throw new Error(`tar: ${tar.stderr}`);
  if (baseline.repair) {
    for (const path of baseline.repair.paths) {
      writeFileSync(join(dir, path), run('git', ['show', `${baseline.repair.from}:${path}`], root));
    }
  }
  const pnpm = ['-y', 'pnpm@10', 'install', '--frozen-lockfile', '--prefer-offline', '--reporter=silent'];
  run('npx', pnpm, dir);
  run('npm', ['run', 'build', '--silent'], dir);
  writeFileSync(done, `${new Date().toISOString()}\n`);
  return main;
}

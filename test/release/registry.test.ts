import type { ChildProcess, SpawnSyncReturns } from 'node:child_process';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';

// The release as an adopter meets it: every package published with `pnpm publish` to a real
// Verdaccio (its storage in a temp dir, the machine's npm registry as its uplink for everything
// that is not @gw/*), then consumers OUTSIDE the monorepo install from it with npm and run the
// packages from CommonJS, ESM, TypeScript (nodenext and bundler), jest and vitest with their
// default configs, on Express 5 and Express 4.
jest.setTimeout(600_000);

const root = resolve(__dirname, '..', '..');
const fixture = join(__dirname, 'consumer');
const packageDirs = readdirSync(join(root, 'packages')).filter((name) =>
  existsSync(join(root, 'packages', name, 'package.json')),
);
const packageNames = packageDirs.map((name) => `@gw/${name}`);
const timings: Record<string, number> = {};

/** The environment of every npm/pnpm child: no npm_config_* of whoever started jest, our own npmrc. */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!/^npm_/i.test(name) && !/^pnpm_/i.test(name)) env[name] = value;
  }
  return { ...env, ...extra };
}

function machineNpmConfig(name: string): string {
  const value = execFileSync('npm', ['config', 'get', name], {
    encoding: 'utf8',
    env: cleanEnv({}),
    stdio: ['ignore', 'pipe', 'ignore'],
  }).trim();
  return value === 'null' || value === 'undefined' ? '' : value;
}

function pnpmCommand(): [string, string[]] {
  const local = join(root, 'node_modules', 'pnpm', 'bin', 'pnpm.cjs');
  if (existsSync(local)) return [process.execPath, [local]];
  return ['npx', ['-y', 'pnpm@10']];
}

function timed<T>(label: string, work: () => T): T {
  const started = Date.now();
  try {
    return work();
  } finally {
    timings[label] = Date.now() - started;
  }
}

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): SpawnSyncReturns<string> {
  return spawnSync(command, args, { cwd, env, encoding: 'utf8', timeout: 300_000 });
}

function expectOk(result: SpawnSyncReturns<string>, what: string): string {
  if (result.status !== 0) throw new Error(`${what} failed (${result.status}):\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

let work: string;
let registry: string;
let verdaccio: ChildProcess | undefined;
let env: NodeJS.ProcessEnv;
/** npm with only the @gw scope on Verdaccio and the rest from the machine's registry and cache. */
let scopedEnv: NodeJS.ProcessEnv;
let pgliteTemplate: string;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'gw-release-'));
  const upstream = machineNpmConfig('registry') || 'https://registry.npmjs.org/';
  const cafile = machineNpmConfig('cafile');
  writeFileSync(
    join(work, 'verdaccio.yaml'),
    [
      `storage: ${JSON.stringify(join(work, 'storage'))}`,
      'auth:',
      '  htpasswd:',
      `    file: ${JSON.stringify(join(work, 'htpasswd'))}`,
      '    max_users: 1',
      'uplinks:',
      '  upstream:',
      `    url: ${JSON.stringify(upstream)}`,
      '    timeout: 60s',
      '    maxage: 30m',
      'packages:',
      // Never proxied: a same-named package on the public registry must not shadow ours.
      "  '@gw/*':",
      '    access: $all',
      '    publish: $authenticated',
      "  '**':",
      '    access: $all',
      '    proxy: upstream',
      'web:',
      '  enable: false',
      'log: { type: stdout, format: json, level: error }',
      '',
    ].join('\n'),
  );
  verdaccio = spawn(process.execPath, [join(__dirname, 'verdaccio-server.cjs'), join(work, 'verdaccio.yaml')], {
    cwd: work,
    env: cleanEnv(cafile ? { NODE_EXTRA_CA_CERTS: cafile } : {}),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const port = await new Promise<number>((resolvePort, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => reject(new Error(`Verdaccio did not start in 30 s:\n${out}\n${err}`)), 30_000);
    verdaccio!.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
    verdaccio!.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const line = out.split('\n').find((l) => l.startsWith('{"port":'));
      if (line) {
        clearTimeout(timer);
        resolvePort((JSON.parse(line) as { port: number }).port);
      }
    });
    verdaccio!.on('exit', (code) => reject(new Error(`Verdaccio exited (${code}):\n${out}\n${err}`)));
  });
  registry = `http://127.0.0.1:${port}/`;

  // A user for publishing: its token goes into a temp npmrc, never the user's.
  const user = await fetch(`${registry}-/user/org.couchdb.user:gw-release`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'gw-release', password: 'gw-release-password-1', type: 'user', roles: [] }),
  });
  const { token } = (await user.json()) as { token?: string };
  expect(user.status).toBe(201);
  expect(token).toBeTruthy();
  const npmrc = join(work, 'npmrc');
  writeFileSync(npmrc, `registry=${registry}\n//127.0.0.1:${port}/:_authToken=${token}\n`);
  writeFileSync(join(work, 'global-npmrc'), '');
  const scopedNpmrc = join(work, 'npmrc-scoped');
  writeFileSync(
    scopedNpmrc,
    `registry=${upstream}\n${cafile ? `cafile=${cafile}\n` : ''}@gw:registry=${registry}\n//127.0.0.1:${port}/:_authToken=${token}\n`,
  );
  env = cleanEnv({
    npm_config_userconfig: npmrc,
    npm_config_globalconfig: join(work, 'global-npmrc'),
    npm_config_registry: registry,
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    npm_config_update_notifier: 'false',
  });
  scopedEnv = {
    ...env,
    npm_config_userconfig: scopedNpmrc,
    npm_config_registry: upstream,
    npm_config_prefer_offline: 'true',
  };
}, 60_000);

afterAll(() => {
  verdaccio?.stdin?.end();
  verdaccio?.kill('SIGTERM');
  if (work) rmSync(work, { recursive: true, force: true });
  console.log(`release timings (ms): ${JSON.stringify(timings)}`);
});

describe('the release', () => {
  it('publishes every package with pnpm publish, workspace: ranges rewritten to versions', async () => {
    const [pnpm, pnpmArgs] = pnpmCommand();
    // `pnpm -r publish`: each package's prepack build, its tarball, workspace: ranges rewritten.
    const published = timed('pnpm -r publish', () =>
      expectOk(
        run(pnpm, [...pnpmArgs, '-r', 'publish', '--registry', registry, '--no-git-checks'], root, env),
        'pnpm -r publish',
      ),
    );
    for (const name of packageNames) expect(published).toContain(name);
    for (const name of packageNames) {
      const packument = (await (await fetch(`${registry}${name.replace('/', '%2f')}`)).json()) as {
        'dist-tags': { latest: string };
        versions: Record<string, { dependencies?: Record<string, string> }>;
      };
      const latest = packument.versions[packument['dist-tags'].latest]!;
      for (const [dependency, range] of Object.entries(latest.dependencies ?? {})) {
        expect(`${dependency}@${range}`).not.toMatch(/workspace:/);
        if (dependency.startsWith('@gw/')) {
          const own = JSON.parse(readFileSync(join(root, 'packages', dependency.slice(4), 'package.json'), 'utf8')) as {
            version: string;
          };
          expect(`${dependency}@${range}`).toBe(`${dependency}@^${own.version}`);
        }
      }
    }
  });

  let adopter: string;

  it('installs @gw/identity-forwarding ALONE into a fresh consumer, with @gw/jwks, @gw/options and @gw/tracing from the same registry', () => {
    adopter = mkdtempSync(join(tmpdir(), 'gw-adopter-'));
    writeFileSync(join(adopter, 'package.json'), JSON.stringify({ name: 'adopter', version: '1.0.0', private: true }));
    timed('npm install @gw/identity-forwarding', () =>
      expectOk(run('npm', ['install', '@gw/identity-forwarding'], adopter, env), 'npm install'),
    );
    const lock = JSON.parse(readFileSync(join(adopter, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { version?: string; resolved?: string }>;
    };
    for (const name of ['@gw/identity-forwarding', '@gw/jwks', '@gw/options', '@gw/tracing']) {
      const entry = lock.packages[`node_modules/${name}`];
      expect(entry?.resolved).toMatch(new RegExp(`^${registry.replace(/[.]/g, '\\.')}`));
    }
    // express (a peer) and the third-party dependencies came through Verdaccio's uplink.
    expect(lock.packages['node_modules/express']?.resolved).toMatch(/^http:\/\/127\.0\.0\.1:/);
    const loaded = expectOk(
      run(
        process.execPath,
        ['-e', "console.log(typeof require('@gw/identity-forwarding').identityForwarding)"],
        adopter,
        env,
      ),
      'require',
    );
    expect(loaded.trim()).toBe('function');
  });

  it('works from CommonJS, ESM, TypeScript (nodenext, bundler), jest and vitest on Express 5', () => {
    cpSync(fixture, adopter, { recursive: true });
    timed('npm install (matrix)', () =>
      expectOk(
        run(
          'npm',
          [
            'install',
            ...packageNames,
            'express@^5.1.0',
            '@types/express@^5.0.0',
            '@types/node@^20.19.0',
            'typescript@5.9.3',
            'aws4@^1.13.2',
            '@types/aws4@^1.11.6',
            'openai@^6.0.0',
            '@modelcontextprotocol/sdk@^1.32.0',
            'jest@^30.0.0',
            'vitest@^4.1.0',
          ],
          adopter,
          scopedEnv,
        ),
        'npm install',
      ),
    );
    pgliteTemplate = makePgliteTemplate(adopter);
    const runEnv = { ...env, GW_CONSUMER_PGLITE_TEMPLATE: pgliteTemplate, NO_COLOR: '1', FORCE_COLOR: '0' };
    const expected = JSON.parse(readFileSync(join(fixture, 'expected.json'), 'utf8')) as unknown;
    const tsc = join(adopter, 'node_modules', 'typescript', 'bin', 'tsc');
    timed('tsc nodenext', () =>
      expectOk(run(process.execPath, [tsc, '-p', 'tsconfig.nodenext.json'], adopter, env), 'tsc nodenext'),
    );
    timed('tsc bundler', () =>
      expectOk(run(process.execPath, [tsc, '-p', 'tsconfig.bundler.json'], adopter, env), 'tsc bundler'),
    );
    writeFileSync(join(adopter, 'out-bundler', 'package.json'), '{"type":"module"}\n');

    for (const entry of [
      'entry.cjs',
      'entry.mjs',
      join('out', 'entry-nodenext.js'),
      join('out-bundler', 'entry-bundler.js'),
    ]) {
      const result = timed(`run ${entry}`, () => run(process.execPath, [entry], adopter, runEnv));
      expect({ entry, stderr: result.stderr }).toEqual({ entry, stderr: '' });
      expect(JSON.parse(expectOk(result, entry))).toEqual(expected);
    }

    // jest 30 and vitest with their defaults: no config file, no "jest" key in package.json.
    expect(existsSync(join(adopter, 'jest.config.js'))).toBe(false);
    const jestRun = timed('jest', () =>
      // PGlite (under @gw/catalog) loads its WebAssembly through import(): jest needs Node's VM modules.
      run(
        process.execPath,
        ['--experimental-vm-modules', '--no-warnings', join('node_modules', 'jest', 'bin', 'jest.js'), '--ci', 'jest/'],
        adopter,
        runEnv,
      ),
    );
    expect(expectOk(jestRun, 'jest') + jestRun.stderr).toMatch(/Tests:\s+1 passed, 1 total/);
    const vitestRun = timed('vitest', () =>
      run(process.execPath, [join('node_modules', 'vitest', 'vitest.mjs'), 'run', 'vitest/'], adopter, runEnv),
    );
    expect(expectOk(vitestRun, 'vitest')).toMatch(/Tests\s+1 passed/);
  });

  it('ships no build info, and every source map next to the sources it names', () => {
    for (const name of packageNames) {
      const dir = join(adopter, 'node_modules', name);
      const files = listFiles(dir);
      expect(files.filter((f) => f.endsWith('.tsbuildinfo'))).toEqual([]);
      expect(files).toContain('package.json');
      expect(files).toContain('README.md');
      expect(files).toContain('CHANGELOG.md');
      // Source maps end in .js.map / .d.ts.map; PostgreSQL's pg_filenode.map in the prepared data directory is no source map.
      for (const map of files.filter((f) => f.endsWith('.js.map') || f.endsWith('.ts.map'))) {
        const { sources } = JSON.parse(readFileSync(join(dir, map), 'utf8')) as { sources: string[] };
        for (const source of sources) {
          expect(`${name}/${map} -> ${source}: ${existsSync(join(dir, dirname(map), source))}`).toMatch(/true$/);
        }
      }
    }
  });

  it('works on Express 4.21 with its types', () => {
    const express4 = join(work, 'express4');
    mkdirSync(express4);
    cpSync(fixture, express4, { recursive: true });
    writeFileSync(
      join(express4, 'package.json'),
      JSON.stringify({ name: 'adopter-express4', version: '1.0.0', private: true }),
    );
    timed('npm install (express 4)', () =>
      expectOk(
        run(
          'npm',
          [
            'install',
            ...packageNames,
            'express@~4.21.2',
            '@types/express@^4.17.21',
            '@types/node@^20.19.0',
            'typescript@5.9.3',
            'aws4@^1.13.2',
            '@types/aws4@^1.11.6',
            'openai@^6.0.0',
            '@modelcontextprotocol/sdk@^1.32.0',
          ],
          express4,
          scopedEnv,
        ),
        'npm install',
      ),
    );
    const installed = JSON.parse(readFileSync(join(express4, 'node_modules', 'express', 'package.json'), 'utf8')) as {
      version: string;
    };
    expect(installed.version).toMatch(/^4\.21\./);
    const expected = JSON.parse(readFileSync(join(fixture, 'expected.json'), 'utf8')) as unknown;
    const tsc = join(express4, 'node_modules', 'typescript', 'bin', 'tsc');
    timed('tsc nodenext (express 4)', () =>
      expectOk(
        run(process.execPath, [tsc, '-p', 'tsconfig.nodenext.json', '--skipLibCheck'], express4, env),
        'tsc nodenext (express 4)',
      ),
    );
    for (const entry of ['entry.cjs', join('out', 'entry-nodenext.js')]) {
      const result = timed(`run ${entry} (express 4)`, () =>
        run(process.execPath, [entry], express4, { ...env, GW_CONSUMER_PGLITE_TEMPLATE: pgliteTemplate }),
      );
      expect({ entry, stderr: result.stderr }).toEqual({ entry, stderr: '' });
      expect(JSON.parse(expectOk(result, entry))).toEqual(expected);
    }
  });
});

/**
 * A migrated PGlite data directory, kept in the temp dir per PGlite version: its first start runs
 * initdb (5-20 s), a copy of it starts in well under a second.
 */
function makePgliteTemplate(consumer: string): string {
  const { version } = JSON.parse(
    readFileSync(join(consumer, 'node_modules', '@electric-sql', 'pglite', 'package.json'), 'utf8'),
  ) as { version: string };
  const template = join(tmpdir(), `gw-consumer-pglite-${version}`);
  if (existsSync(join(template, 'PG_VERSION'))) return template;
  const staging = mkdtempSync(join(tmpdir(), 'gw-consumer-pglite-staging-'));
  const script =
    "const c = require('@gw/catalog');" +
    '(async () => { const db = await c.openEmbeddedDatabase(process.argv[1]); await c.migrate(db); await db.close(); })();';
  timed('pglite template', () =>
    expectOk(run(process.execPath, ['-e', script, staging], consumer, env), 'PGlite template'),
  );
  try {
    renameSync(staging, template);
  } catch {
    rmSync(staging, { recursive: true, force: true }); // another run made it first
  }
  return template;
}

function listFiles(dir: string, base = dir): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules') out.push(...listFiles(path, base));
    } else out.push(relative(base, path));
  }
  return out;
}

import type { ChildProcess } from 'node:child_process';
import { execFileSync, spawn } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
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

/**
 * pnpm as this Node and its script: the workspace's own when installed, else the pnpm 10 that runs
 * the tests (`pnpm run check` names its script in npm_execpath), else the one `npx pnpm@10` runs,
 * located once (through npx, each publish would start an npm process first; npx alone, asking the
 * registry for pnpm@10, cost about 6 CPU-s).
 */
function pnpmCommand(): [string, string[]] {
  const local = join(root, 'node_modules', 'pnpm', 'bin', 'pnpm.cjs');
  if (existsSync(local)) return [process.execPath, [local]];
  const running = process.env.npm_execpath;
  if (
    running &&
    /pnpm\.c?js$/.test(running) &&
    /^pnpm\/10\./.test(process.env.npm_config_user_agent ?? '') &&
    existsSync(running)
  ) {
    return [process.execPath, [running]];
  }
  const bin = execFileSync('npx', ['-y', '-p', 'pnpm@10', '-c', 'command -v pnpm'], {
    encoding: 'utf8',
    env: cleanEnv({}),
    stdio: ['ignore', 'pipe', 'ignore'],
  }).trim();
  return [process.execPath, [realpathSync(bin)]];
}

async function timed<T>(label: string, work: () => Promise<T>): Promise<T> {
  const started = Date.now();
  try {
    return await work();
  } finally {
    timings[label] = Date.now() - started;
  }
}

/** What a finished child printed, as spawnSync reports it. */
interface RunResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a command to its end without blocking this process, so that independent steps (the
 * packages' publishes, the consumers' installs, the entry points) run side by side. Killed after
 * 300 s, as the synchronous runs were.
 */
function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<RunResult> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => {
      stderr += `\n[killed after 300 s: ${command} ${args.join(' ')}]`;
      child.kill('SIGKILL');
    }, 300_000);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (status) => {
      clearTimeout(timer);
      resolveRun({ status, stdout, stderr });
    });
  });
}

function expectOk(result: RunResult, what: string): string {
  if (result.status !== 0) throw new Error(`${what} failed (${result.status}):\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

/**
 * A step later tests wait for, started as soon as what it needs is there. A test that fails
 * before awaiting it leaves no unhandled rejection behind.
 */
function started<T>(work: () => Promise<T>): Promise<T> {
  const promise = work();
  promise.catch(() => undefined);
  return promise;
}

let work: string;
let registry: string;
let verdaccio: ChildProcess | undefined;
/** npm with Verdaccio as its registry, anonymous (as adopters install). */
let env: NodeJS.ProcessEnv;
/** {@link env} with the publishing user's token. */
let publishEnv: NodeJS.ProcessEnv;
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
      // The publishing user's token is a JWT, checked by its signature (about 4 ms a request); a legacy
      // token is checked against the user's bcrypt hash on every request (about 80 ms).
      'security:',
      '  api:',
      '    jwt:',
      '      sign:',
      '        expiresIn: 2h',
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
  // Only the publish sends the token; the consumers install anonymously, as adopters do (Verdaccio
  // verifies a token on every request that carries it).
  const publishNpmrc = join(work, 'npmrc-publish');
  writeFileSync(publishNpmrc, `registry=${registry}\n//127.0.0.1:${port}/:_authToken=${token}\n`);
  const npmrc = join(work, 'npmrc');
  writeFileSync(npmrc, `registry=${registry}\n`);
  writeFileSync(join(work, 'global-npmrc'), '');
  const scopedNpmrc = join(work, 'npmrc-scoped');
  writeFileSync(scopedNpmrc, `registry=${upstream}\n${cafile ? `cafile=${cafile}\n` : ''}@gw:registry=${registry}\n`);
  env = cleanEnv({
    npm_config_userconfig: npmrc,
    npm_config_globalconfig: join(work, 'global-npmrc'),
    npm_config_registry: registry,
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    npm_config_update_notifier: 'false',
  });
  publishEnv = { ...env, npm_config_userconfig: publishNpmrc };
  scopedEnv = {
    ...env,
    npm_config_userconfig: scopedNpmrc,
    npm_config_registry: upstream,
    npm_config_prefer_offline: 'true',
  };
}, 60_000);

afterAll(async () => {
  // A test that failed early may leave an install running: let it end before its folder goes.
  aloneChecked?.();
  if (installs) await Promise.allSettled([installs.alone, installs.matrix]);
  verdaccio?.stdin?.end();
  verdaccio?.kill('SIGTERM');
  if (work) rmSync(work, { recursive: true, force: true });
  console.log(`release timings (ms): ${JSON.stringify(timings)}`);
});

/**
 * The consumers' installs, started by the publish test: the lone install at once, the matrix once
 * the lone install's test is done with the folder they share.
 */
let installs: { alone: Promise<string>; matrix: Promise<string> };
/** Called when the test of the lone install is done with its folder: the matrix installs into it next. */
let aloneChecked: (() => void) | undefined;

/** `npm install <packages>` in the folder `into`, started at once; resolves to that folder. */
function install(label: string, into: string, packages: string[], installEnv: NodeJS.ProcessEnv): Promise<string> {
  return started(() =>
    timed(label, async () => {
      expectOk(await run('npm', ['install', ...packages], into, installEnv), `npm install (${label})`);
      return into;
    }),
  );
}

const consumerTools = [
  '@types/node@^20.19.0',
  'typescript@5.9.3',
  'aws4@^1.13.2',
  '@types/aws4@^1.11.6',
  'openai@^6.0.0',
  '@modelcontextprotocol/sdk@^1.32.0',
];

describe('the release', () => {
  it('publishes every package with pnpm publish, workspace: ranges rewritten to versions', async () => {
    const [pnpm, pnpmArgs] = pnpmCommand();
    // `pnpm publish` of every package, in one pnpm process (`pnpm -r publish`: the same publish of
    // each package, one after the other in dependency order, as `changeset publish` runs them one
    // by one): the prepack build, the tarball, workspace: ranges rewritten to the versions in the
    // workspace. One pnpm instead of one per package: each pnpm start cost about 1.5 CPU-s.
    const published: string[] = [];
    await timed('pnpm publish (every package)', async () => {
      const result = await run(
        pnpm,
        [...pnpmArgs, '-r', '--filter', './packages/*', 'publish', '--registry', registry, '--no-git-checks'],
        root,
        publishEnv,
      );
      published.push(expectOk(result, 'pnpm -r publish (packages/*)') + result.stderr);
    });
    for (const name of packageNames) expect(published.join('\n')).toContain(name);
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

    // The consumers of the tests below: @gw/identity-forwarding alone, then the matrix in the same
    // folder (one install reused), then Express 4 in that folder again (the last test). npm mostly
    // waits on the registries and the disk, so the lone install starts here, beside the tests.
    // In the run's temp folder (removed after the tests; its installs weigh about 250 MB), outside the monorepo.
    const adopter = join(work, 'adopter');
    mkdirSync(adopter);
    writeFileSync(join(adopter, 'package.json'), JSON.stringify({ name: 'adopter', version: '1.0.0', private: true }));
    const alone = install('npm install @gw/identity-forwarding', adopter, ['@gw/identity-forwarding'], env);
    const aloneDone = new Promise<void>((resolveChecked) => (aloneChecked = resolveChecked));
    installs = {
      alone,
      matrix: started(async () => {
        await alone;
        await aloneDone;
        cpSync(fixture, adopter, { recursive: true });
        return install(
          'npm install (matrix)',
          adopter,
          [
            ...packageNames,
            'express@^5.1.0',
            '@types/express@^5.0.0',
            ...consumerTools,
            'jest@^30.0.0',
            'vitest@^4.1.0',
          ],
          scopedEnv,
        );
      }),
    };
  });

  it('installs @gw/identity-forwarding ALONE into a fresh consumer, with @gw/jwks, @gw/options and @gw/tracing from the same registry', async () => {
    try {
      const adopter = await installs.alone;
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
        await run(
          process.execPath,
          ['-e', "console.log(typeof require('@gw/identity-forwarding').identityForwarding)"],
          adopter,
          env,
        ),
        'require',
      );
      expect(loaded.trim()).toBe('function');
    } finally {
      aloneChecked?.();
    }
  });

  it('works from CommonJS, ESM, TypeScript (nodenext, bundler), jest and vitest on Express 5', async () => {
    const adopter = await installs.matrix;
    // The adopter's PGlite is the one @gw/catalog's prepared data directory was made for: its
    // first start copies that directory instead of running initdb (seconds of CPU, ~800 MB).
    const pglite = (
      JSON.parse(readFileSync(join(adopter, 'node_modules', '@electric-sql', 'pglite', 'package.json'), 'utf8')) as {
        version: string;
      }
    ).version;
    expect(
      existsSync(join(adopter, 'node_modules', '@gw', 'catalog', 'dist', 'pglite-data', pglite, 'PG_VERSION')),
    ).toBe(true);
    pgliteTemplate = await makePgliteTemplate(adopter);
    const runEnv = { ...env, GW_CONSUMER_PGLITE_TEMPLATE: pgliteTemplate, NO_COLOR: '1', FORCE_COLOR: '0' };
    const expected = JSON.parse(readFileSync(join(fixture, 'expected.json'), 'utf8')) as unknown;
    const tsc = join(adopter, 'node_modules', 'typescript', 'bin', 'tsc');
    // Two compilations of the same sources into two folders, in one tsc process: build mode keeps
    // the declaration files it parsed for the first project for the second (about 6 CPU-s less
    // than two processes side by side). Each project is compiled with its own options as
    // `tsc -p` does; an error in either fails the build.
    await timed('tsc nodenext + bundler', async () =>
      expectOk(
        await run(process.execPath, [tsc, '-b', 'tsconfig.nodenext.json', 'tsconfig.bundler.json'], adopter, env),
        'tsc -b nodenext bundler',
      ),
    );
    writeFileSync(join(adopter, 'out-bundler', 'package.json'), '{"type":"module"}\n');

    // Every entry point in a process of its own (mocks and gateway on ephemeral ports): side by side.
    const entries = [
      'entry.cjs',
      'entry.mjs',
      join('out', 'entry-nodenext.js'),
      join('out-bundler', 'entry-bundler.js'),
    ];
    const results = await Promise.all(
      entries.map((entry) => timed(`run ${entry}`, () => run(process.execPath, [entry], adopter, runEnv))),
    );
    entries.forEach((entry, i) => {
      expect({ entry, stderr: results[i]!.stderr }).toEqual({ entry, stderr: '' });
      expect(JSON.parse(expectOk(results[i]!, entry))).toEqual(expected);
    });

    // jest 30 and vitest with their defaults: no config file, no "jest" key in package.json.
    expect(existsSync(join(adopter, 'jest.config.js'))).toBe(false);
    const [jestRun, vitestRun] = await Promise.all([
      timed('jest', () =>
        // PGlite (under @gw/catalog) loads its WebAssembly through import(): jest needs Node's VM modules.
        run(
          process.execPath,
          [
            '--experimental-vm-modules',
            '--no-warnings',
            join('node_modules', 'jest', 'bin', 'jest.js'),
            '--ci',
            'jest/',
          ],
          adopter,
          runEnv,
        ),
      ),
      timed('vitest', () =>
        run(process.execPath, [join('node_modules', 'vitest', 'vitest.mjs'), 'run', 'vitest/'], adopter, runEnv),
      ),
    ]);
    expect(expectOk(jestRun, 'jest') + jestRun.stderr).toMatch(/Tests:\s+1 passed, 1 total/);
    expect(expectOk(vitestRun, 'vitest')).toMatch(/Tests\s+1 passed/);
  });

  it('loads every published package from CommonJS and from ESM', async () => {
    // The scenario drives the packages an adopter mounts; this loads all of them, the ones only
    // reached as dependencies (and a package new in the workspace) included.
    const adopter = await installs.matrix;
    const names = JSON.stringify(packageNames);
    const [required, imported] = await Promise.all([
      run(
        process.execPath,
        ['-e', `for (const name of ${names}) console.log(name, typeof require(name))`],
        adopter,
        env,
      ),
      run(
        process.execPath,
        ['--input-type=module', '-e', `for (const name of ${names}) console.log(name, typeof (await import(name)))`],
        adopter,
        env,
      ),
    ]);
    const loaded = packageNames.map((name) => `${name} object`).join('\n');
    expect({ stdout: required.stdout.trim(), stderr: required.stderr }).toEqual({ stdout: loaded, stderr: '' });
    expect({ stdout: imported.stdout.trim(), stderr: imported.stderr }).toEqual({ stdout: loaded, stderr: '' });
  });

  it('ships no build info, and every source map next to the sources it names', async () => {
    const adopter = await installs.matrix;
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

  it('works on Express 4.21 with its types', async () => {
    // The matrix's consumer, once its tests are done with it (this is the last test), moved to
    // Express 4 and its types as an adopter on Express 4 installs them: npm checks every package's
    // express peer range against 4.21 as it would in a fresh consumer. One tree instead of a second
    // one of about 250 MB (npm install about 14 CPU-s, @gw/catalog's 39 MB data directory again).
    const adopter = await installs.matrix;
    await timed('npm install (express 4)', async () =>
      expectOk(
        await run('npm', ['install', 'express@~4.21.2', '@types/express@^4.17.21'], adopter, scopedEnv),
        'npm install (express 4)',
      ),
    );
    const version = (name: string) =>
      (JSON.parse(readFileSync(join(adopter, 'node_modules', name, 'package.json'), 'utf8')) as { version: string })
        .version;
    expect(version('express')).toMatch(/^4\.21\./);
    expect(version('@types/express')).toMatch(/^4\./);
    const expected = JSON.parse(readFileSync(join(fixture, 'expected.json'), 'utf8')) as unknown;
    // Nothing compiled for Express 5 is left to run: tsc writes out/ again, against Express 4's types.
    rmSync(join(adopter, 'out'), { recursive: true, force: true });
    rmSync(join(adopter, 'out-bundler'), { recursive: true, force: true });
    const tsc = join(adopter, 'node_modules', 'typescript', 'bin', 'tsc');
    await timed('tsc nodenext (express 4)', async () =>
      expectOk(
        await run(process.execPath, [tsc, '-p', 'tsconfig.nodenext.json', '--skipLibCheck'], adopter, env),
        'tsc nodenext (express 4)',
      ),
    );
    // Express 4 at run time from CommonJS. The compiled TypeScript entry adds nothing here: it
    // loads express and the packages through the same require() (its interop helpers run on
    // Express 5 above, and Express 4 is CommonJS like 5); its types are what tsc just checked.
    const result = await timed('run entry.cjs (express 4)', () =>
      run(process.execPath, ['entry.cjs'], adopter, { ...env, GW_CONSUMER_PGLITE_TEMPLATE: pgliteTemplate }),
    );
    expect({ stderr: result.stderr }).toEqual({ stderr: '' });
    expect(JSON.parse(expectOk(result, 'entry.cjs (express 4)'))).toEqual(expected);
  });
});

/**
 * A migrated PGlite data directory, kept in the temp dir per PGlite version: its first start runs
 * initdb (5-20 s), a copy of it starts in well under a second. It holds the consumer's database
 * (`postgres`) only: initdb's `template0` and `template1`, which the scenario never opens, are
 * dropped, as in the gateway tests' template (examples/server/test/support.ts), so each entry
 * point copies and removes about 450 files instead of about 1,050.
 */
async function makePgliteTemplate(consumer: string): Promise<string> {
  const { version } = JSON.parse(
    readFileSync(join(consumer, 'node_modules', '@electric-sql', 'pglite', 'package.json'), 'utf8'),
  ) as { version: string };
  const template = join(tmpdir(), `gw-consumer-pglite-db-${version}`);
  if (existsSync(join(template, 'PG_VERSION'))) return template;
  const staging = mkdtempSync(join(tmpdir(), 'gw-consumer-pglite-staging-'));
  const onlyConsumerDatabase = ['template0', 'template1'].flatMap((name) => [
    `ALTER DATABASE ${name} IS_TEMPLATE false`,
    `DROP DATABASE ${name}`,
  ]);
  const script =
    "const c = require('@gw/catalog');" +
    '(async () => { const db = await c.openEmbeddedDatabase(process.argv[1]); await c.migrate(db);' +
    ` for (const sql of ${JSON.stringify([...onlyConsumerDatabase, 'CHECKPOINT'])}) await db.exec(sql);` +
    ' await db.close(); })();';
  await timed('pglite template', async () =>
    expectOk(await run(process.execPath, ['-e', script, staging], consumer, env), 'PGlite template'),
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

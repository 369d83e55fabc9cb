import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash, generateKeyPairSync } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const MAIN = join(__dirname, '..', 'dist', 'main.js');

/** How many keys of each size {@link rsaPem} has handed out in this test file. */
const rsaPemsGiven = new Map<number, number>();

/**
 * An RSA key pair (PEM) of `bits` bits (default 2048), a different one at each call of a test
 * file. Making a 2048-bit key costs about 0.14 CPU-s and the tests ask for about fifty a run, so
 * the n-th key of each size is kept in the temporary directory (`gw-test-rsa-<bits>-<n>-<uid>.json`,
 * throwaway test keys, readable by this user only) and read back by the next test files: within a
 * file every call still gets a key of its own.
 */
export function rsaPem(bits = 2048): { privateKey: string; publicKey: string } {
  const n = rsaPemsGiven.get(bits) ?? 0;
  rsaPemsGiven.set(bits, n + 1);
  const file = join(tmpdir(), `gw-test-rsa-${bits}-${n}-${process.getuid?.() ?? 'user'}.json`);
  try {
    const kept = JSON.parse(readFileSync(file, 'utf8')) as { privateKey?: unknown; publicKey?: unknown };
    if (typeof kept.privateKey === 'string' && typeof kept.publicKey === 'string')
      return { privateKey: kept.privateKey, publicKey: kept.publicKey };
  } catch {
    // Not made yet on this machine (or cut short): made below.
  }
  const pem = generateKeyPairSync('rsa', {
    modulusLength: bits,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  const partial = `${file}.${process.pid}`;
  writeFileSync(partial, JSON.stringify(pem), { mode: 0o600 });
  renameSync(partial, file);
  return pem;
}

/** Writes a config file in a fresh temporary folder and returns its path. */
export function writeConfig(config: unknown): string {
  const dir = mkdtempSync(join(tmpdir(), 'gateway-config-'));
  const file = join(dir, 'gateway.json');
  writeFileSync(file, typeof config === 'string' ? config : JSON.stringify(config));
  return file;
}

export interface RunningGateway {
  child: ChildProcess;
  url: string;
  logs: string[];
  exited: Promise<number | null>;
  stop: (signal?: NodeJS.Signals) => Promise<number | null>;
}

const CATALOG = join(__dirname, '..', '..', '..', 'packages', 'catalog');

/** initdb's template databases, which the tests' copies of the embedded database leave out. */
export const TEMPLATE_DATABASES = ['template0', 'template1'] as const;

/**
 * An embedded database directory initialised and migrated once per machine, PGlite version and
 * set of migrations. PGlite runs PostgreSQL's initdb in WebAssembly when it opens an empty
 * directory (seconds of CPU), and the migrations take about 0.2 s of every start that finds them
 * missing; copying a directory already migrated takes milliseconds. A gateway still runs any
 * migration the copy lacks, as on an upgrade.
 *
 * It holds the gateway's database (`postgres`) only: initdb's `template0` and `template1`, which
 * the gateway never opens, are dropped, so each test's copy is 25 MB instead of 39 MB (about half
 * the CPU of a copy: 0.15 s instead of 0.3 s). A gateway's own data directory keeps them.
 */
function pgliteTemplate(): string {
  const { version } = JSON.parse(
    readFileSync(join(CATALOG, 'node_modules', '@electric-sql', 'pglite', 'package.json'), 'utf8'),
  ) as { version: string };
  const migrations = createHash('sha256')
    .update(readFileSync(join(CATALOG, 'dist', 'core', 'migrations.js')))
    .digest('hex')
    .slice(0, 12);
  const template = join(tmpdir(), `gw-pglite-gateway-db-${version}-${migrations}`);
  if (existsSync(join(template, 'PG_VERSION'))) return template;
  const building = mkdtempSync(join(tmpdir(), 'gw-pglite-building-'));
  const catalog = `require(${JSON.stringify(join(CATALOG, 'dist', 'index.js'))})`;
  const onlyGatewayDatabase = TEMPLATE_DATABASES.flatMap((name) => [
    `ALTER DATABASE ${name} IS_TEMPLATE false`,
    `DROP DATABASE ${name}`,
  ]);
  const open = `const c = ${catalog}; c.openEmbeddedDatabase(${JSON.stringify(building)}).then(async (db) => { await c.migrate(db); for (const sql of ${JSON.stringify([...onlyGatewayDatabase, 'CHECKPOINT'])}) await db.exec(sql); await db.close(); })`;
  execFileSync(process.execPath, ['-e', open], { stdio: 'ignore', timeout: 120_000 });
  try {
    renameSync(building, template);
  } catch {
    // Another test worker made it first.
    rmSync(building, { recursive: true, force: true });
  }
  return template;
}

/** A new embedded database directory (a copy of {@link pgliteTemplate}), for `GATEWAY_DATA_DIR`. */
export function freshDataDir(prefix = 'gw-data-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  cpSync(pgliteTemplate(), dir, { recursive: true });
  return dir;
}

function baseEnv(extra: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info' };
  // Each gateway gets its own embedded catalog database unless the test names one.
  if (!Object.hasOwn(extra, 'GATEWAY_DATA_DIR') && !Object.hasOwn(extra, 'DATABASE_URL')) {
    env.GATEWAY_DATA_DIR = freshDataDir();
  }
  for (const [k, v] of Object.entries(extra)) if (v !== undefined) env[k] = v;
  return env;
}

/** Starts `node dist/main.js` and resolves once its "listening" log line names the URL. */
export function startGateway(
  env: Record<string, string | undefined> = {},
  /** A command that runs the gateway's `node dist/main.js` given as its last arguments (a cgroup's launcher). Default: none. */
  launcher: readonly string[] = [],
): Promise<RunningGateway> {
  const [command = process.execPath, ...args] = [...launcher, process.execPath, MAIN];
  const child = spawn(command, args, { env: baseEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  const logs: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    let buffer = '';
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk));
    child.stdout?.on('data', (chunk: Buffer) => {
      buffer += chunk;
      let newline: number;
      while ((newline = buffer.indexOf('\n')) !== -1) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        logs.push(line);
        const url = /"url":"(http:\/\/[^"]+)"/.exec(line)?.[1];
        if (url && line.includes('gateway listening')) {
          resolve({
            child,
            url,
            logs,
            exited,
            stop: (signal = 'SIGTERM') => {
              child.kill(signal);
              return exited;
            },
          });
        }
      }
    });
    void exited.then((code) => reject(new Error(`gateway exited with ${code}: ${stderr}`)));
  });
}

/** Runs `node dist/main.js` expecting it to fail at start-up; returns its exit code and stderr. */
export async function failedStart(
  env: Record<string, string | undefined>,
): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [MAIN], { env: baseEnv(env), stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, stderr };
}

let node22Binary: Promise<string> | undefined;

/** Where {@link node22} notes the binary's path for the next test files of this machine and user. */
const NODE22_NOTE = join(tmpdir(), `gw-node22-binary-${process.getuid?.() ?? 'user'}`);

/** `path` when it is a Node 22 binary that runs. */
function runsNode22(path: string): boolean {
  try {
    return execFileSync(path, ['-p', 'process.versions.node'], { encoding: 'utf8', timeout: 10_000 }).startsWith('22.');
  } catch {
    return false;
  }
}

/**
 * The path of a Node 22 binary, for tools that require it (the MCP conformance suite) while jest
 * runs on Node 20. `npx -y node@22` costs about 5 CPU-s of npm before the script starts, the
 * binary itself a few hundredths: the binary `npx` installs is asked for once, noted in the
 * temporary folder and run directly from then on (checked to be Node 22 and to run, else asked
 * for again).
 */
export function node22(): Promise<string> {
  node22Binary ??= (async () => {
    const noted = existsSync(NODE22_NOTE) ? readFileSync(NODE22_NOTE, 'utf8').trim() : '';
    if (noted !== '' && runsNode22(noted)) return noted;
    const path = await new Promise<string>((resolve, reject) => {
      // npx needs the registry settings of the environment (npm_config_*) to fetch node@22 the first time.
      execFile(
        'npx',
        ['-y', 'node@22', '-p', 'process.execPath'],
        { env: process.env, encoding: 'utf8', timeout: 120_000 },
        (error, stdout) => (error ? reject(error) : resolve(stdout.trim())),
      );
    });
    if (!runsNode22(path)) throw new Error(`npx -y node@22 named no Node 22 binary: "${path}"`);
    writeFileSync(NODE22_NOTE, path);
    return path;
  })();
  return node22Binary;
}

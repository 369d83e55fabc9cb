import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';

/** The machine's PostgreSQL server binaries (Debian's `postgresql` package), or a clear failure. */
export function postgresBin(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'postgres')))
    : [];
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0];
  if (!newest) {
    throw new Error(
      'No PostgreSQL server on this machine: the test command installs it (scripts/system-deps.sh runs `apt-get install -y postgresql`).',
    );
  }
  return join(root, newest, 'bin');
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** A PostgreSQL server of its own, on 127.0.0.1 and a free port, in a temporary directory. */
export interface RunningPostgres {
  url: string;
  /** Stops the server (its data stays, so `start` brings the same database back). */
  stop(): Promise<void>;
  /** Starts it again on the same port. */
  start(): Promise<void>;
  /** Stops it and removes its data. */
  destroy(): Promise<void>;
  /** Creates a fresh, empty database on this server; resolves with its URL. */
  createDatabase(): Promise<string>;
}

export async function startPostgres(): Promise<RunningPostgres> {
  const bin = postgresBin();
  const dir = mkdtempSync(join(tmpdir(), 'gw-pg-'));
  chmodSync(dir, 0o777);
  const data = join(dir, 'data');
  // PostgreSQL refuses to run as root; as root, it runs as the postgres user the package created.
  const asUser = process.getuid?.() === 0 ? ['runuser', '-u', 'postgres', '--'] : [];
  const run = (command: string, args: string[]) => {
    const [file, ...rest] = [...asUser, join(bin, command), ...args];
    return execFileSync(file as string, rest, { stdio: 'pipe' });
  };
  // A copy of a cluster initialised once per test run (the run's temporary folder) and server
  // version: initdb takes about 2 s of CPU, a copy a fifth of that.
  const template = join(tmpdir(), `gw-pg-template-${basename(dirname(bin))}`);
  if (!existsSync(join(template, 'data', 'PG_VERSION'))) {
    const building = mkdtempSync(join(tmpdir(), 'gw-pg-building-'));
    chmodSync(building, 0o777);
    run('initdb', ['-D', join(building, 'data'), '-U', 'gateway', '--auth=trust', '-E', 'UTF8', '--no-sync']);
    try {
      renameSync(building, template);
    } catch {
      // Another test worker made it first.
      rmSync(building, { recursive: true, force: true });
    }
  }
  // As the server's user, keeping the modes PostgreSQL checks (its data folder 0700).
  const [copy, ...copyArgs] = [...asUser, 'cp', '-a', join(template, 'data'), data];
  execFileSync(copy as string, copyArgs, { stdio: 'pipe' });
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async () => {
    const [file, ...rest] = [
      ...asUser,
      join(bin, 'postgres'),
      '-D',
      data,
      '-p',
      String(port),
      '-k',
      dir,
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'fsync=off',
    ];
    child = spawn(file as string, rest, { stdio: ['ignore', 'ignore', 'pipe'] });
    await new Promise<void>((resolve, reject) => {
      let log = '';
      const timer = setTimeout(() => reject(new Error(`PostgreSQL did not start: ${log}`)), 20_000);
      child?.stderr?.on('data', (chunk: Buffer) => {
        log += chunk;
        if (log.includes('ready to accept connections')) {
          clearTimeout(timer);
          resolve();
        }
      });
      child?.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`PostgreSQL exited with ${code}: ${log}`));
      });
    });
  };
  const stop = async () => {
    const running = child;
    if (!running || running.exitCode !== null) return;
    const exited = new Promise((resolve) => running.once('exit', resolve));
    // The server's own pid (runuser does not pass signals on): SIGINT is a fast shutdown.
    const pid = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    process.kill(pid, 'SIGINT');
    await exited;
  };
  await start();
  let databases = 0;
  return {
    url: `postgres://gateway@127.0.0.1:${port}/postgres`,
    createDatabase: async () => {
      const name = `gw_test_${process.pid}_${++databases}`;
      const { Client } = await import('pg');
      const client = new Client({ connectionString: `postgres://gateway@127.0.0.1:${port}/postgres` });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${name}`);
      } finally {
        await client.end();
      }
      return `postgres://gateway@127.0.0.1:${port}/${name}`;
    },
    stop,
    start,
    destroy: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openCatalogDatabase } from '../src/catalog/open-catalog';
import { startPostgres, type RunningPostgres } from '../../../packages/catalog/test/postgres';
import { startGateway, type RunningGateway } from './support';

/*
 * The gateway's memory at start-up (docs/operations.md, "Memory"). A container with a 512 MB
 * limit must survive the embedded database's first start: the test starts the gateway inside a
 * memory cgroup of its own with that limit (swap included), a child of the cgroup the test runs
 * in, as a container runtime would. An address-space or data rlimit cannot stand in for it: V8
 * and WebAssembly reserve gigabytes of address space up front, and plain `node -e 0` dies under
 * `prlimit --data=4G`. Where no cgroup can be created (not root, a read-only hierarchy), the
 * first start's peak resident memory (VmHWM, the kernel's exact peak) is held under the limit
 * instead, and the test says so.
 */

// The real PGlite, observed as it is loaded (hoisted above the imports, so loading it when the
// gateway's modules load counts too).
jest.mock('@electric-sql/pglite', () => {
  const seen = globalThis as { pgliteLoads?: number };
  seen.pgliteLoads = (seen.pgliteLoads ?? 0) + 1;
  return jest.requireActual('@electric-sql/pglite');
});
const pgliteLoads = () => (globalThis as { pgliteLoads?: number }).pgliteLoads ?? 0;

const MB = 1024 * 1024;
/** A container's limit that the first start must survive. */
const CONTAINER_LIMIT = 512 * MB;
const FIRST_START_PEAK = 300 * MB;
const SETTLED_EMBEDDED = 160 * MB;
const SETTLED_POSTGRES = 100 * MB;

function memory(pid: number): { peak: number; resident: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]) * 1024;
  return { peak: kb('VmHWM'), resident: kb('VmRSS') };
}

/** A memory cgroup (v1 or v2) of `limit` bytes, swap included, under the test's own; undefined where none can be made. */
function memoryCgroup(limit: number): { dir: string; peak(): number; oomKills(): number; remove(): void } | undefined {
  try {
    const lines = readFileSync('/proc/self/cgroup', 'utf8').split('\n');
    const v1 = lines.find((line) => /^\d+:memory:/.test(line));
    const name = `gw-memory-test-${randomBytes(4).toString('hex')}`;
    if (v1 && existsSync('/sys/fs/cgroup/memory')) {
      const dir = join('/sys/fs/cgroup/memory', v1.slice(v1.indexOf(':memory:') + ':memory:'.length), name);
      mkdirSync(dir);
      writeFileSync(join(dir, 'memory.limit_in_bytes'), String(limit));
      if (existsSync(join(dir, 'memory.memsw.limit_in_bytes')))
        writeFileSync(join(dir, 'memory.memsw.limit_in_bytes'), String(limit));
      return {
        dir,
        peak: () => Number(readFileSync(join(dir, 'memory.max_usage_in_bytes'), 'utf8')),
        oomKills: () => Number(/oom_kill (\d+)/.exec(readFileSync(join(dir, 'memory.oom_control'), 'utf8'))?.[1] ?? 0),
        remove: () => rmdirSync(dir),
      };
    }
    const v2 = lines.find((line) => line.startsWith('0::'));
    if (v2 && existsSync('/sys/fs/cgroup/cgroup.controllers')) {
      const dir = join('/sys/fs/cgroup', v2.slice(3), name);
      mkdirSync(dir);
      writeFileSync(join(dir, 'memory.max'), String(limit));
      if (existsSync(join(dir, 'memory.swap.max'))) writeFileSync(join(dir, 'memory.swap.max'), '0');
      return {
        dir,
        peak: () => (existsSync(join(dir, 'memory.peak')) ? Number(readFileSync(join(dir, 'memory.peak'), 'utf8')) : 0),
        oomKills: () => Number(/oom_kill (\d+)/.exec(readFileSync(join(dir, 'memory.events'), 'utf8'))?.[1] ?? 0),
        remove: () => rmdirSync(dir),
      };
    }
  } catch {
    // Not root, or the hierarchy is read-only: no cgroup here.
  }
  return undefined;
}

async function healthy(gateway: RunningGateway): Promise<void> {
  const res = await fetch(`${gateway.url}/healthz`, { signal: AbortSignal.timeout(5_000) });
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ status: 'ok' });
}

/** Resident memory once start-up has settled (its timers and first catalog reads done). */
async function settled(gateway: RunningGateway): Promise<number> {
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  return memory(gateway.child.pid as number).resident;
}

let postgres: RunningPostgres | undefined;
const running: RunningGateway[] = [];

afterAll(async () => {
  await Promise.all(running.map((gateway) => gateway.stop()));
  await postgres?.destroy();
});

describe.each([process.platform === 'linux' ? 'linux' : 'skip'])('memory at start-up (%s)', (platform) => {
  const run = platform === 'linux' ? it : it.skip;

  run(
    'the embedded database first start survives a 512 MB memory cgroup, peaks under 300 MB and settles under 160 MB',
    async () => {
      const dataDir = join(mkdtempSync(join(tmpdir(), 'gw-first-start-')), 'data');
      const cgroup = memoryCgroup(CONTAINER_LIMIT);
      if (!cgroup)
        console.warn(
          'memory.test: no memory cgroup can be created here (not root?); the first start is held by its VmHWM.',
        );
      // The launcher joins the cgroup, then becomes the gateway (same pid): every byte of the first start is charged to it.
      const launcher = cgroup ? ['sh', '-c', 'echo $$ > "$0/cgroup.procs" && exec "$@"', cgroup.dir] : [];
      try {
        const gateway = await startGateway({ GATEWAY_DATA_DIR: dataDir }, launcher);
        running.push(gateway);
        const atStart = memory(gateway.child.pid as number);
        expect(existsSync(join(dataDir, 'PG_VERSION'))).toBe(true);
        await healthy(gateway);
        expect(atStart.peak).toBeLessThan(CONTAINER_LIMIT);
        expect(atStart.peak).toBeLessThanOrEqual(FIRST_START_PEAK);
        expect(await settled(gateway)).toBeLessThanOrEqual(SETTLED_EMBEDDED);
        expect(memory(gateway.child.pid as number).peak).toBeLessThanOrEqual(FIRST_START_PEAK);
        if (cgroup) {
          // Inside the cgroup: nothing was killed, and the cgroup's own peak (page cache included) stayed under it.
          expect(cgroup.oomKills()).toBe(0);
          expect(cgroup.peak()).toBeLessThan(CONTAINER_LIMIT);
          await healthy(gateway);
        }
        await gateway.stop();
      } finally {
        cgroup?.remove();
      }
    },
    60_000,
  );

  run(
    'with DATABASE_URL the gateway never loads PGlite and settles under 100 MB',
    async () => {
      postgres = await startPostgres();
      const gateway = await startGateway({ DATABASE_URL: await postgres.createDatabase() });
      running.push(gateway);
      await healthy(gateway);
      expect(await settled(gateway)).toBeLessThanOrEqual(SETTLED_POSTGRES);
    },
    60_000,
  );
});

describe('PGlite is loaded only for the embedded database', () => {
  it('opening DATABASE_URL does not load it; the embedded database does', async () => {
    const remote = await openCatalogDatabase({ DATABASE_URL: 'postgres://gateway@127.0.0.1:1/none' });
    await remote.close();
    expect(pgliteLoads()).toBe(0);
    const embedded = await openCatalogDatabase({ GATEWAY_DATA_DIR: mkdtempSync(join(tmpdir(), 'gw-lazy-')) });
    await embedded.close();
    expect(pgliteLoads()).toBe(1);
  }, 60_000);
});

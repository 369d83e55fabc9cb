import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openCatalogDatabase } from '../src/catalog/open-catalog';
import { startPostgres, type RunningPostgres } from '../../../packages/catalog/test/postgres';
import { startGateway, type RunningGateway } from './support';

/*
 * The gateway's memory at start-up (docs/operations.md, "Memory"). A container with a 512 MB
 * limit must survive the embedded database's first start. Neither cgroup nor rlimit bounds fit a
 * test: a cgroup would be created inside the one the test runner itself runs in, and an address
 * space or data rlimit kills Node itself (V8 and WebAssembly reserve gigabytes of address space
 * up front; plain `node -e 0` dies under `prlimit --data=4G`). A cgroup counts resident memory, and
 * the kernel keeps the exact peak of it per process (VmHWM): the tests read that peak.
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
    'the embedded database first start peaks under 300 MB (a 512 MB container survives it) and settles under 160 MB',
    async () => {
      const dataDir = join(mkdtempSync(join(tmpdir(), 'gw-first-start-')), 'data');
      const gateway = await startGateway({ GATEWAY_DATA_DIR: dataDir });
      running.push(gateway);
      const atStart = memory(gateway.child.pid as number);
      expect(existsSync(join(dataDir, 'PG_VERSION'))).toBe(true);
      await healthy(gateway);
      expect(atStart.peak).toBeLessThan(CONTAINER_LIMIT);
      expect(atStart.peak).toBeLessThanOrEqual(FIRST_START_PEAK);
      expect(await settled(gateway)).toBeLessThanOrEqual(SETTLED_EMBEDDED);
      expect(memory(gateway.child.pid as number).peak).toBeLessThanOrEqual(FIRST_START_PEAK);
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

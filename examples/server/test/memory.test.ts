import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openCatalogDatabase } from '../src/catalog/open-catalog';
import { startFromEnvironment } from '../src/main';
import { startPostgres, type RunningPostgres } from '../../../packages/catalog/test/postgres';
import { startRedis, type RunningRedis } from './cache/cache-support';
import { rsaPem, startGateway, writeConfig, type RunningGateway } from './support';

/*
 * The gateway's memory at start-up (docs/operations.md, "Memory"). A container with a 512 MB
 * limit must survive the embedded database's first start: the test starts the gateway inside a
 * memory cgroup of its own with that limit (swap included), a child of the cgroup the test runs
 * in, as a container runtime would. An address-space or data rlimit cannot stand in for it: V8
 * and WebAssembly reserve gigabytes of address space up front, and plain `node -e 0` dies under
 * `prlimit --data=4G`. Where no cgroup can be created (not root, a read-only hierarchy), the
 * first start's peak resident memory (VmHWM, the kernel's exact peak) is held under the limit
 * instead, and the test says so. With `DATABASE_URL`, the benchmarks' production shape (REDIS_URL,
 * the bench's config and its 3,111 API keys) settles under 100 MB, and the modules of features
 * that are off are not loaded at all.
 */

// The real PGlite, observed as it is loaded (hoisted above the imports, so loading it when the
// gateway's modules load counts too): by `require` and by `import()`, as the catalog's build loads it.
const countPgliteLoad = () => {
  const seen = globalThis as { pgliteLoads?: number };
  seen.pgliteLoads = (seen.pgliteLoads ?? 0) + 1;
};
jest.mock('@electric-sql/pglite', () => {
  countPgliteLoad();
  return jest.requireActual('@electric-sql/pglite');
});
// (`unstable_mockModule` is jest's, for `import()`; @types/jest does not declare it.)
(jest as unknown as { unstable_mockModule: (name: string, factory: () => unknown) => void }).unstable_mockModule(
  '@electric-sql/pglite',
  () => {
    countPgliteLoad();
    return jest.requireActual('@electric-sql/pglite');
  },
);
const pgliteLoads = () => (globalThis as { pgliteLoads?: number }).pgliteLoads ?? 0;

// Modules a gateway loads only when the feature they serve is configured, observed the same way:
// the OpenTelemetry SDK (an OTLP endpoint), the MCP SDK's server (the development default's demo
// MCP server), the MCP SDK's client (virtual MCP servers) and @gw/oauth with openid-client (OAuth sign-in, the console's OpenID Provider sign-in).
jest.mock('@opentelemetry/sdk-trace', () => {
  const seen = globalThis as { lazyLoads?: Record<string, number> };
  seen.lazyLoads = { ...seen.lazyLoads, otel: (seen.lazyLoads?.otel ?? 0) + 1 };
  return jest.requireActual('@opentelemetry/sdk-trace');
});
jest.mock('@modelcontextprotocol/sdk/server/mcp.js', () => {
  const seen = globalThis as { lazyLoads?: Record<string, number> };
  seen.lazyLoads = { ...seen.lazyLoads, mcpServer: (seen.lazyLoads?.mcpServer ?? 0) + 1 };
  return jest.requireActual('@modelcontextprotocol/sdk/server/mcp.js');
});
jest.mock('@modelcontextprotocol/sdk/client/index.js', () => {
  const seen = globalThis as { lazyLoads?: Record<string, number> };
  seen.lazyLoads = { ...seen.lazyLoads, mcpClient: (seen.lazyLoads?.mcpClient ?? 0) + 1 };
  return jest.requireActual('@modelcontextprotocol/sdk/client/index.js');
});
jest.mock('@gw/oauth', () => {
  const seen = globalThis as { lazyLoads?: Record<string, number> };
  seen.lazyLoads = { ...seen.lazyLoads, oauth: (seen.lazyLoads?.oauth ?? 0) + 1 };
  return jest.requireActual('@gw/oauth');
});
const lazyLoads = () => ({
  otel: 0,
  mcpServer: 0,
  mcpClient: 0,
  oauth: 0,
  ...(globalThis as { lazyLoads?: object }).lazyLoads,
});

const MB = 1024 * 1024;
/** A container's limit that the first start must survive. */
const CONTAINER_LIMIT = 512 * MB;
const FIRST_START_PEAK = 300 * MB;
const SETTLED_EMBEDDED = 160 * MB;
const SETTLED_POSTGRES = 100 * MB;

/**
 * The production shape of the benchmarks (bench/shapes.mjs with bench/run.mjs's config): model
 * providers, a Bedrock integration, an MCP server with `jwt_header` (so a signing key), and 3,111
 * API keys in the config file (the full run's key count).
 */
function productionConfig(extra: Record<string, unknown> = {}): string {
  const upstream = 'http://127.0.0.1:9';
  return writeConfig({
    ...extra,
    auth: {
      apiKeys: [
        { key: 'gw-bench-key-000000', user: { user_id: 'bench' } },
        ...Array.from({ length: 100 }, (_, i) => ({
          key: `gw-bench-user-${String(i).padStart(6, '0')}`,
          user: { user_id: `u${i}`, email: `u${i}@example.com` },
        })),
        ...Array.from({ length: 3010 }, (_, i) => ({
          key: `gw-bench-miss-${String(i).padStart(6, '0')}`,
          user: { user_id: `m${i}` },
        })),
      ],
    },
    providers: [
      ...['', '/paced', '/burst', '/short'].map((path, i) => ({
        slug: ['bench', 'paced', 'burst', 'short'][i],
        provider: 'anthropic',
        apiKey: 'sk-bench',
        baseUrl: `${upstream}${path}`,
      })),
      {
        slug: 'kb',
        provider: 'bedrock',
        accessKeyId: 'AKIABENCH',
        secretAccessKey: 'bench-secret',
        region: 'us-east-1',
        allowedHosts: [upstream],
      },
    ],
    mcpServers: [{ slug: 'tools', url: `${upstream}/mcp`, user_identity_forwarding: { method: 'jwt_header' } }],
  });
}

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
let redis: RunningRedis | undefined;
const running: RunningGateway[] = [];

/** One PostgreSQL server for the tests of this file, started on first use. */
async function postgresServer(): Promise<RunningPostgres> {
  postgres ??= await startPostgres();
  return postgres;
}

afterAll(async () => {
  await Promise.all(running.map((gateway) => gateway.stop()));
  await postgres?.destroy();
  await redis?.stop();
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
      const gateway = await startGateway({ DATABASE_URL: await (await postgresServer()).createDatabase() });
      running.push(gateway);
      await healthy(gateway);
      expect(await settled(gateway)).toBeLessThanOrEqual(SETTLED_POSTGRES);
    },
    60_000,
  );

  run(
    "in the benchmarks' production shape (DATABASE_URL, REDIS_URL, providers, Bedrock, a jwt_header MCP server, 3,111 API keys) it settles under 100 MB",
    async () => {
      redis ??= await startRedis();
      const gateway = await startGateway({
        GATEWAY_CONFIG: productionConfig(),
        DATABASE_URL: await (await postgresServer()).createDatabase(),
        REDIS_URL: redis.url,
        JWT_PRIVATE_KEY: rsaPem().privateKey,
        NODE_ENV: 'production',
      });
      running.push(gateway);
      await healthy(gateway);
      expect(await settled(gateway)).toBeLessThanOrEqual(SETTLED_POSTGRES);
    },
    60_000,
  );
});

describe('modules loaded only for what is configured', () => {
  it("the production shape loads neither the OpenTelemetry SDK, the MCP SDK's server or client, nor @gw/oauth; each loads once its feature is on", async () => {
    redis ??= await startRedis();
    const env = {
      GATEWAY_CONFIG: productionConfig(),
      DATABASE_URL: await (await postgresServer()).createDatabase(),
      REDIS_URL: redis.url,
      JWT_PRIVATE_KEY: rsaPem().privateKey,
      NODE_ENV: 'production',
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'error',
    };
    const production = await startFromEnvironment(env);
    await production.stop();
    expect(lazyLoads()).toEqual({ otel: 0, mcpServer: 0, mcpClient: 0, oauth: 0 });
    // Nothing listens there: the spans of this start are dropped, and the start is not held up.
    const traced = await startFromEnvironment({ ...env, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' });
    await traced.stop();
    expect(lazyLoads()).toEqual({ otel: 1, mcpServer: 0, mcpClient: 0, oauth: 0 });
    const withOAuth = await startFromEnvironment({
      ...env,
      GATEWAY_CONFIG: productionConfig({ oauth: { login: { type: 'api_key' } } }),
      PUBLIC_BASE_URL: 'http://127.0.0.1:9',
    });
    await withOAuth.stop();
    expect(lazyLoads()).toEqual({ otel: 1, mcpServer: 0, mcpClient: 0, oauth: 1 });
    // The development default (no config file) starts its demo MCP server, which loads the MCP SDK's
    // server side with its first request (lazy-clients.test.ts), not at start.
    const { GATEWAY_CONFIG: _config, NODE_ENV: _production, ...developmentEnv } = env;
    const development = await startFromEnvironment(developmentEnv);
    await development.stop();
    expect(lazyLoads()).toEqual({ otel: 1, mcpServer: 0, mcpClient: 0, oauth: 1 });
    // A virtual MCP server brings the MCP SDK's client (its members are reached as an MCP client).
    const withVirtualServer = await startFromEnvironment({
      ...env,
      GATEWAY_CONFIG: productionConfig({ virtualServers: [{ slug: 'workbench', members: [{ server: 'tools' }] }] }),
    });
    await withVirtualServer.stop();
    expect(lazyLoads()).toEqual({ otel: 1, mcpServer: 0, mcpClient: 1, oauth: 1 });
  }, 60_000);
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

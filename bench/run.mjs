// `pnpm bench [--quick] [--smoke] [--peers] [--out DIR]`: the gateway against the direct path, side by side,
// in one run on this machine. Paired medians (A B A B), never a lone time.
import { spawn, spawnSync } from 'node:child_process';
import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import {
  benchScratch,
  clearScratch,
  closedLoop,
  currentRss,
  median,
  peakRss,
  percentile,
  processCpuMicros,
  removeWhenExited,
  resetPeakRss,
} from './lib.mjs';
import { targets, renderMarkdown } from './report.mjs';
import { microBenchmarks } from './micro.mjs';
import { listRecords, seedCatalog, seedStore } from './catalog-seed.mjs';
import { BASELINES, buildBaseline } from './baseline.mjs';
import { accessConfig, accessKey, probe, recordQueue, redisServerPath, sideBySide, startRedis } from './features.mjs';
import { STREAM_EVENTS, streamCpu, ttfbAmongStreams } from './streams.mjs';
import { scalingBenchmarks, scalingConfig } from './scaling.mjs';
import { peerBenchmarks } from './peers.mjs';
import { mcpAuthBenchmarks } from './mcp-auth.mjs';
import { SHAPES, renderShapes, shapeBenchmarks } from './shapes.mjs';
import { renderSaturation, saturationBenchmarks } from './saturation.mjs';
import { routingBenchmarks } from './routing.mjs';
import { VIRTUAL_MEMBERS, virtualBenchmarks, virtualServerConfig } from './virtual.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const args = process.argv.slice(2);
const smoke = args.includes('--smoke');
const quick = smoke || args.includes('--quick');
// Every temporary folder of this run (databases, configs, keys) in one, removed at the end. Smoke
// runs remove a gateway's data directory as soon as the gateway has exited, beside the rest of
// the run; full and quick runs only once the last figure is read (see removeWhenExited).
benchScratch('gateway-bench-run-', { removeEarly: smoke });
const outIndex = args.indexOf('--out');
const outDir = outIndex === -1 ? undefined : args[outIndex + 1];
const onlyIndex = args.indexOf('--only');
/**
 * `--only catalog,latency,load,routing,virtual,streams,pdf,features,access,limits,mcp-auth,scaling,peers,saturation,micro`: run those
 * sections alone (`access`: the access-policy rows of `features` only; `limits`: the limit-check
 * row of `features` only (Redis on loopback); `routing`: a two-target fallback against no config
 * and Claude on Bedrock against the `anthropic` provider (bench/routing.mjs); `virtual`: a virtual
 * MCP server of three members against its members' own endpoints (bench/virtual.mjs); `mcp-auth`: MCP tools/call
 * with an API key, an identity-provider token and a gateway OAuth access token)
 * and print their figures as JSON (no targets, nothing written unless `--out` is given): for
 * working on one part.
 */
const shapeIndex = args.indexOf('--shape');
/**
 * `--shape production`, `--shape embedded` or `--shape production,embedded`: the gateway in the
 * shapes operators run (bench/shapes.mjs) against the bare proxy, alone, with each target's
 * verdict; a full run measures both.
 */
const shapes = shapeIndex === -1 ? undefined : args[shapeIndex + 1]?.split(',');
if (shapes && (shapes.length === 0 || shapes.some((s) => !SHAPES.includes(s)))) {
  process.stderr.write(`bench: --shape takes ${SHAPES.join(', ')} (comma-separated)\n`);
  process.exit(2);
}
const shapeBaselineIndex = args.indexOf('--shape-baseline');
/**
 * `--shape-baseline <commit>`: each shape also runs on the gateway built from that commit (as
 * baseline.mjs builds earlier gateways), in the same rounds: before and after, measured together.
 */
const shapeBaselineCommit = shapeBaselineIndex === -1 ? undefined : args[shapeBaselineIndex + 1];
const only = onlyIndex === -1 ? (shapes ? new Set(['shapes']) : undefined) : new Set(args[onlyIndex + 1].split(','));
/** `--peers`: also measure a peer gateway beside this one (bench/peers.mjs; installed on first use). */
const peers = args.includes('--peers') || Boolean(only?.has('peers'));
// The shapes and the saturation searches start PostgreSQL and Redis: in full and quick runs, and
// smoke runs that ask for them.
const want = (section) =>
  section === 'peers'
    ? peers
    : section === 'shapes'
      ? Boolean(shapes) || only?.has('shapes') || (!only && !smoke)
      : section === 'saturation'
        ? Boolean(only?.has('saturation')) || (!only && !smoke)
        : !only || only.has(section);
const counts = smoke
  ? {
      latency: 15,
      cpu: 40,
      cpuWarm: 20,
      cpuRounds: 1,
      // The shapes' CPU rounds read at once: a smoke run checks the bench runs, not its figures.
      recordSettleMs: 0,
      // Paced streams (25 events 5 ms apart) take 0.13 s each, waiting: as few as still make
      // every row (a stream to warm up, two a round, two rounds).
      stream: 1,
      // One stream a connection: a smoke run's stream CPU rows are 0 or a few ticks either way.
      streamCpu: 10,
      streamBusy: 2,
      rounds: 2,
      idle: 2,
      misses: 20,
      warm: 20,
      catalog: { providers: 20, apiKeys: 100, adminProviders: 10, adminApiKeys: 20, rounds: 2, cpu: 40, cpuRounds: 1 },
      features: {
        latency: 15,
        rounds: 2,
        cpu: 40,
        cpuRounds: 1,
        warm: 20,
        cpuWarm: 20,
        records: 200,
        tracing: { cpu: 40, cpuWarm: 20, cpuRounds: 1 },
      },
    }
  : quick
    ? {
        latency: 200,
        cpu: 1000,
        cpuWarm: 1000,
        cpuRounds: 3,
        stream: 10,
        streamCpu: 30,
        streamBusy: 10,
        rounds: 3,
        idle: 20,
        misses: 100,
        warm: 200,
        catalog: {
          providers: 1000,
          apiKeys: 10000,
          adminProviders: 50,
          adminApiKeys: 100,
          rounds: 5,
          cpu: 5000,
          cpuRounds: 5,
        },
        features: {
          latency: 200,
          rounds: 3,
          cpu: 1000,
          cpuRounds: 3,
          warm: 200,
          cpuWarm: 1000,
          records: 6000,
          tracing: { cpu: 5000, cpuWarm: 5000, cpuRounds: 3 },
        },
      }
    : {
        latency: 1000,
        cpu: 3000,
        cpuWarm: 3000,
        cpuRounds: 5,
        stream: 30,
        streamCpu: 100,
        streamBusy: 20,
        rounds: 5,
        idle: 40,
        misses: 400,
        warm: 1000,
        catalog: {
          providers: 1000,
          apiKeys: 10000,
          adminProviders: 50,
          adminApiKeys: 100,
          rounds: 7,
          cpu: 10000,
          cpuRounds: 7,
        },
        features: {
          latency: 1000,
          rounds: 5,
          cpu: 3000,
          cpuRounds: 5,
          warm: 1000,
          cpuWarm: 3000,
          records: 20000,
          tracing: { cpu: 6000, cpuWarm: 6000, cpuRounds: 5 },
        },
      };
/**
 * `--cpu-requests N` and `--cpu-rounds N`: the requests of each CPU round (and of its warm-up) and
 * the number of rounds, overriding the mode's counts: CPU per request is read from `/proc` in 10 ms
 * ticks, so telling a 10 µs change apart needs rounds of several thousand requests.
 */
for (const [flag, keys] of [
  ['--cpu-requests', ['cpu', 'cpuWarm']],
  ['--cpu-rounds', ['cpuRounds']],
]) {
  const at = args.indexOf(flag);
  if (at === -1) continue;
  const value = Number(args[at + 1]);
  if (!Number.isInteger(value) || value < 1) {
    process.stderr.write(`bench: ${flag} takes a whole number of at least 1\n`);
    process.exit(2);
  }
  for (const key of keys) counts[key] = value;
}
/**
 * The routing rows' counts (bench/routing.mjs): the feature comparisons' latency rounds, and the
 * CPU rounds of the load section (so `--cpu-requests` and `--cpu-rounds` apply to them too).
 */
counts.routing = {
  latency: counts.features.latency,
  rounds: counts.features.rounds,
  warm: counts.features.warm,
  cpu: counts.cpu,
  cpuWarm: counts.cpuWarm,
  cpuRounds: counts.cpuRounds,
};
const GATEWAY_KEY = 'gw-bench-key-000000';

function startProcess(script, env = {}, nodeArgs = []) {
  const child = spawn(process.execPath, [...nodeArgs, script], {
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout });
    lines.on('line', (line) => {
      try {
        const parsed = JSON.parse(line);
        if (parsed.port) resolve({ child, port: parsed.port });
        else if (typeof parsed.msg === 'string' && parsed.msg.startsWith('gateway listening'))
          resolve({ child, port: Number(new URL(parsed.url).port) });
      } catch {
        // not a JSON line
      }
    });
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
  });
}

const mainJs = join(root, 'examples/server/dist/main.js');

/**
 * Starts a gateway (`main`: this build's `dist/main.js` by default, or an earlier build's) on
 * `env` (see `gatewayEnv`), its stdout drained. Its data directory is removed once it exits
 * (removeWhenExited), unless `keepData`: a later start uses it again.
 */
async function startGateway(env, { main = mainJs, keepData = false } = {}) {
  const proc = await startProcess(main, env);
  proc.child.stdout.resume();
  if (!keepData && env.GATEWAY_DATA_DIR) removeWhenExited(proc.child, env.GATEWAY_DATA_DIR);
  return proc;
}

function gatewayConfig(mockPort, missUsers) {
  const users = Array.from({ length: 100 }, (_, i) => ({
    key: `gw-bench-user-${String(i).padStart(6, '0')}`,
    user: { user_id: `u${i}`, email: `u${i}@example.com` },
  }));
  const misses = Array.from({ length: missUsers }, (_, i) => ({
    key: `gw-bench-miss-${String(i).padStart(6, '0')}`,
    user: { user_id: `m${i}` },
  }));
  return {
    auth: { apiKeys: [{ key: GATEWAY_KEY, user: { user_id: 'bench' } }, ...users, ...misses] },
    providers: [
      { slug: 'bench', provider: 'anthropic', apiKey: 'sk-bench', baseUrl: `http://127.0.0.1:${mockPort}` },
      // The same mock, whose streams leave 5 ms apart (`paced`) or all at once (`burst`): see mocks.mjs.
      { slug: 'paced', provider: 'anthropic', apiKey: 'sk-bench', baseUrl: `http://127.0.0.1:${mockPort}/paced` },
      { slug: 'burst', provider: 'anthropic', apiKey: 'sk-bench', baseUrl: `http://127.0.0.1:${mockPort}/burst` },
      // A short answer's stream, paced (`short`): the time-to-first-byte rows.
      { slug: 'short', provider: 'anthropic', apiKey: 'sk-bench', baseUrl: `http://127.0.0.1:${mockPort}/short` },
      {
        slug: 'kb',
        provider: 'bedrock',
        accessKeyId: 'AKIABENCH',
        secretAccessKey: 'bench-secret',
        region: 'us-east-1',
        allowedHosts: [`http://127.0.0.1:${mockPort}`],
      },
    ],
    mcpServers: [
      { slug: 'tools', url: `http://127.0.0.1:${mockPort}/mcp`, user_identity_forwarding: { method: 'jwt_header' } },
      // Two more members of the virtual server `toolbox` (bench/virtual.mjs), on the same mock.
      ...VIRTUAL_MEMBERS.slice(1).map((slug) => ({
        slug,
        url: `http://127.0.0.1:${mockPort}/mcp`,
        user_identity_forwarding: { method: 'jwt_header' },
      })),
    ],
    virtualServers: [virtualServerConfig()],
  };
}

/**
 * The same config without the records the catalog database holds instead: no providers and no
 * API keys (the MCP servers and everything else as they are).
 */
function catalogGatewayConfig(fileConfig) {
  const { providers: _providers, auth, ...rest } = fileConfig;
  const { apiKeys: _apiKeys, ...otherAuth } = auth ?? {};
  return Object.keys(otherAuth).length > 0 ? { ...rest, auth: otherAuth } : rest;
}

const summary = (values) => ({ median: median(values), min: Math.min(...values), max: Math.max(...values) });

const chatBody = JSON.stringify({
  model: '@bench/claude-sonnet-4-5',
  max_tokens: 64,
  messages: [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'Say something.' },
  ],
});
const anthropicBody = JSON.stringify({
  model: 'claude-sonnet-4-5',
  max_tokens: 64,
  system: [{ type: 'text', text: 'Be brief.' }],
  messages: [{ role: 'user', content: 'Say something.' }],
});
/**
 * The same request as `chatBody` through `/v1/responses` (`store: false`: the conversion alone, as
 * for chat completions; a stored response adds one database write). It reaches the provider as the
 * same Anthropic request.
 */
const responsesBody = JSON.stringify({
  model: '@bench/claude-sonnet-4-5',
  max_output_tokens: 64,
  instructions: 'Be brief.',
  input: 'Say something.',
  store: false,
});
const json = { 'content-type': 'application/json' };

/** Paired rounds: gateway then direct, `rounds` times, at one connection, after `warm` of each. */
async function paired(name, gateway, direct, n, rounds, warm = counts.warm) {
  await closedLoop(gateway, { connections: 1, count: warm });
  await closedLoop(direct, { connections: 1, count: warm });
  const added = [];
  const addedTtfb = [];
  const addedTokens = [];
  const gw = [];
  const dr = [];
  const tokensOf = (samples) => samples.map((s) => s.tokens).filter((t) => t !== undefined);
  for (let r = 0; r < rounds; r++) {
    const a = await closedLoop(gateway, { connections: 1, count: n });
    const b = await closedLoop(direct, { connections: 1, count: n });
    const [pa, pb] = [median(a.map((s) => s.total)), median(b.map((s) => s.total))];
    gw.push(pa);
    dr.push(pb);
    added.push(pa - pb);
    addedTtfb.push(median(a.map((s) => s.ttfb)) - median(b.map((s) => s.ttfb)));
    const [ta, tb] = [tokensOf(a), tokensOf(b)];
    if (ta.length > 0 && tb.length > 0) addedTokens.push(median(ta) - median(tb));
  }
  return {
    name,
    gatewayP50Micros: summary(gw),
    directP50Micros: summary(dr),
    addedP50Micros: summary(added),
    addedTtfbMicros: summary(addedTtfb),
    // Streams: how much later a text delta reached the client, on average over the stream.
    ...(addedTokens.length > 0 ? { addedTokenMicros: summary(addedTokens) } : {}),
  };
}

/** One reading of a process's CPU per request (µs) while `n` requests run over 10 connections. */
async function cpuReading(pid, target, n) {
  const before = processCpuMicros(pid);
  const samples = await closedLoop(target, { connections: 10, count: n });
  const totals = samples.map((s) => s.total);
  return { cpu: (processCpuMicros(pid) - before) / n, p50: median(totals), p99: percentile(totals, 99) };
}

/**
 * CPU per request under load, for several paths measured in interleaved rounds (A B C A B C),
 * so that every path meets the same machine. Each path is warmed first: a process's first few
 * thousand requests at 10 connections cost up to twice the steady figure while V8 optimises.
 * Reports the median round, with the lowest and highest.
 */
async function cpuUnderLoad(paths, n, warm, rounds) {
  for (const path of paths) await closedLoop(path.target, { connections: 10, count: warm });
  const readings = Object.fromEntries(paths.map((p) => [p.name, []]));
  for (let r = 0; r < rounds; r++) {
    for (const path of paths) readings[path.name].push(await cpuReading(path.pid, path.target, n));
  }
  const result = {};
  const bare = readings.bareProxy;
  for (const path of paths) {
    const list = readings[path.name];
    const cpus = list.map((x) => x.cpu);
    result[path.name] = {
      cpuMicrosPerRequest: median(cpus),
      cpuMin: Math.min(...cpus),
      cpuMax: Math.max(...cpus),
      p50Micros: median(list.map((x) => x.p50)),
      p99Micros: median(list.map((x) => x.p99)),
      // Each round's figure over the bare proxy's of the same round, when the bare proxy is measured.
      ...(bare ? { overBare: summary(cpus.map((cpu, r) => cpu / bare[r].cpu)) } : {}),
    };
  }
  return result;
}

/**
 * The gateway with its catalog in the database against the one with the config file, on the same
 * paths, in the same rounds: added p50 at 1 connection (the two gateways in alternating order,
 * then the direct path, each round) and CPU per request at 10 connections (alternating order
 * too). Each catalog figure is also given as a ratio to the file-config figure of its round.
 */
async function catalogComparison(paths, c) {
  const latency = {};
  const load = {};
  const orderOf = (r) => (r % 2 === 0 ? ['file', 'catalog'] : ['catalog', 'file']);
  // Both processes have just started: the same warm-up for each (V8 optimises over the first few
  // thousand requests).
  for (const path of paths) {
    for (const side of ['file', 'catalog']) {
      await closedLoop(path[side].target, { connections: 10, count: Math.max(c.cpu, counts.cpuWarm) });
    }
  }
  for (const path of paths) {
    for (const side of ['file', 'catalog']) await closedLoop(path[side].target, { connections: 1, count: counts.warm });
    await closedLoop(path.direct, { connections: 1, count: counts.warm });
  }
  const lat = Object.fromEntries(
    paths.map((p) => [
      p.name,
      { file: [], catalog: [], ratio: [], fileP50: [], catalogP50: [], fileMax: 0, catalogMax: 0 },
    ]),
  );
  for (let r = 0; r < c.rounds; r++) {
    for (const path of paths) {
      const p50 = {};
      const entry = lat[path.name];
      for (const side of orderOf(r)) {
        const totals = (await closedLoop(path[side].target, { connections: 1, count: counts.latency })).map(
          (x) => x.total,
        );
        p50[side] = median(totals);
        entry[`${side}Max`] = Math.max(entry[`${side}Max`], ...totals);
      }
      const direct = median(
        (await closedLoop(path.direct, { connections: 1, count: counts.latency })).map((x) => x.total),
      );
      entry.file.push(p50.file - direct);
      entry.catalog.push(p50.catalog - direct);
      entry.ratio.push((p50.catalog - direct) / (p50.file - direct));
      entry.fileP50.push(p50.file);
      entry.catalogP50.push(p50.catalog);
    }
  }
  for (const path of paths) {
    const entry = lat[path.name];
    latency[path.name] = {
      label: path.label,
      fileAddedP50Micros: summary(entry.file),
      catalogAddedP50Micros: summary(entry.catalog),
      fileP50Micros: median(entry.fileP50),
      catalogP50Micros: median(entry.catalogP50),
      fileMaxMicros: entry.fileMax,
      catalogMaxMicros: entry.catalogMax,
      ratio: summary(entry.ratio),
    };
  }

  for (const path of paths) {
    for (const side of ['file', 'catalog'])
      await closedLoop(path[side].target, { connections: 10, count: counts.cpuWarm });
  }
  const cpu = Object.fromEntries(paths.map((p) => [p.name, { file: [], catalog: [], ratio: [] }]));
  for (let r = 0; r < c.cpuRounds; r++) {
    for (const path of paths) {
      const reading = {};
      for (const side of orderOf(r)) reading[side] = await cpuReading(path[side].pid, path[side].target, c.cpu);
      const entry = cpu[path.name];
      entry.file.push(reading.file);
      entry.catalog.push(reading.catalog);
      entry.ratio.push(reading.catalog.cpu / reading.file.cpu);
    }
  }
  for (const path of paths) {
    const entry = cpu[path.name];
    const side = (list) => ({
      cpuMicrosPerRequest: summary(list.map((x) => x.cpu)),
      p50Micros: median(list.map((x) => x.p50)),
      p99Micros: median(list.map((x) => x.p99)),
    });
    load[path.name] = {
      label: path.label,
      file: side(entry.file),
      catalog: side(entry.catalog),
      ratio: summary(entry.ratio),
    };
  }
  return { latency, load };
}

/** Waits for a child process to exit (after a signal). */
function exited(child) {
  return child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve()
    : new Promise((resolve) => child.once('exit', resolve));
}

/**
 * A second gateway whose providers and API keys come from the catalog database: a part created
 * through its admin API, the rest in bulk through the catalog's store (see catalog-seed.mjs for
 * why), then the gateway started again on the full database. Resolves with the running gateway,
 * the caller key (one the admin API answered) and what the seeding took.
 */
async function startCatalogGateway({ dir, fileConfig, mockPort, privateKey }) {
  const c = counts.catalog;
  const configPath = join(dir, 'gateway-catalog.json');
  writeFileSync(configPath, JSON.stringify(catalogGatewayConfig(fileConfig)));
  const dataDir = mkdtempSync(join(tmpdir(), 'gw-bench-catalog-'));
  const adminKey = randomBytes(24).toString('base64url');
  const encryptionKey = randomBytes(32).toString('base64');
  const env = {
    GATEWAY_CONFIG: configPath,
    GATEWAY_DATA_DIR: dataDir,
    GATEWAY_ADMIN_KEY: adminKey,
    GATEWAY_ENCRYPTION_KEY: encryptionKey,
    JWT_PRIVATE_KEY: privateKey,
    PORT: '0',
    LOG_LEVEL: 'info',
    NODE_ENV: 'production',
  };
  const upstream = `http://127.0.0.1:${mockPort}`;
  const fileProviders = fileConfig.providers;
  const benchSlug = fileProviders.find((p) => p.provider !== 'bedrock').slug;
  const { provider: _bedrock, ...bedrock } = fileProviders.find((p) => p.provider === 'bedrock') ?? {};

  const seedThroughAdminApi = (port) =>
    seedCatalog({
      port,
      adminKey,
      upstream,
      providerSlug: benchSlug,
      bedrock: bedrock.slug ? bedrock : undefined,
      providers: c.adminProviders,
      apiKeys: c.adminApiKeys,
      concurrency: 8,
    });
  const seedThroughStore = () =>
    seedStore({
      root,
      dataDir,
      encryptionKey,
      upstream,
      providers: c.providers - c.adminProviders,
      apiKeys: c.apiKeys - c.adminApiKeys,
      firstProvider: c.adminProviders,
      firstUser: c.adminApiKeys,
    });
  let admin;
  let bulk;
  if (smoke) {
    // One gateway start instead of two: the store's part first (it migrates the empty database),
    // then the admin API's on the gateway that is measured (each admin write reloads its
    // snapshot). The two parts' slugs and users do not overlap, so the catalog holds the same.
    bulk = await seedThroughStore();
  } else {
    // Started again on the same database below: its data kept.
    const first = await startGateway(env, { keepData: true });
    try {
      admin = await seedThroughAdminApi(first.port);
    } finally {
      first.child.kill('SIGTERM');
      await exited(first.child);
    }
    bulk = await seedThroughStore();
  }
  globalThis.gc?.();
  const startedAt = process.hrtime.bigint();
  const gateway = await startGateway(env);
  const startupMillis = Number(process.hrtime.bigint() - startedAt) / 1e6;
  if (smoke) {
    try {
      admin = await seedThroughAdminApi(gateway.port);
    } catch (error) {
      gateway.child.kill('SIGTERM');
      throw error;
    }
  }
  const listedAt = process.hrtime.bigint();
  const keyList = await listRecords(gateway.port, adminKey, 'api-keys');
  const listApiKeysMillis = Number(process.hrtime.bigint() - listedAt) / 1e6;
  const providerList = await listRecords(gateway.port, adminKey, 'providers');
  const awsIntegrations = bedrock.slug ? 1 : 0;
  const expectedProviders = c.providers + awsIntegrations;
  if (
    keyList.object !== 'list' ||
    keyList.data.length !== c.apiKeys ||
    providerList.data.length !== expectedProviders
  ) {
    gateway.child.kill('SIGTERM');
    throw new Error(
      `the catalog holds ${providerList.data.length} providers and ${keyList.data.length} API keys, not ${expectedProviders} and ${c.apiKeys}`,
    );
  }
  const seeding = {
    providers: c.providers,
    awsIntegrations,
    apiKeys: c.apiKeys,
    adminApi: {
      providers: admin.providers - awsIntegrations,
      awsIntegrations,
      apiKeys: admin.apiKeys,
      concurrency: admin.concurrency,
      providersSeconds: admin.providersSeconds,
      apiKeysSeconds: admin.apiKeysSeconds,
      seconds: admin.seconds,
    },
    store: { providers: bulk.providers, apiKeys: bulk.apiKeys, seconds: bulk.seconds },
    seconds: admin.seconds + bulk.seconds,
    startupMillis,
    listApiKeysMillis,
  };
  process.stdout.write(
    `catalog seeded with ${expectedProviders} providers and ${c.apiKeys} API keys in ${seeding.seconds.toFixed(1)} s (${admin.providers} providers (the Bedrock one included) and ${admin.apiKeys} API keys through the admin API in ${admin.seconds.toFixed(1)} s, the rest through the store in ${bulk.seconds.toFixed(1)} s); restart ${startupMillis.toFixed(0)} ms\n`,
  );
  return { gateway, callerKey: admin.keys[Math.floor(admin.keys.length / 2)], seeding };
}

/** The environment of a gateway process on `configPath`, with its own empty data directory. */
function gatewayEnv(configPath, privateKey, extra = {}) {
  return {
    GATEWAY_CONFIG: configPath,
    GATEWAY_DATA_DIR: mkdtempSync(join(tmpdir(), 'gw-bench-data-')),
    JWT_PRIVATE_KEY: privateKey,
    PORT: '0',
    LOG_LEVEL: 'info',
    NODE_ENV: 'production',
    ...extra,
  };
}

/** Builds the earlier gateways (`BASELINES`) once; in smoke runs none (a build takes minutes). */
function prepareBaselines() {
  const out = {};
  for (const [name, baseline] of Object.entries(BASELINES)) {
    if (smoke) {
      out[name] = { label: baseline.label, skipped: 'not built in smoke runs' };
      continue;
    }
    const startedAt = Date.now();
    try {
      out[name] = { label: baseline.label, main: buildBaseline(root, baseline) };
      process.stdout.write(`baseline ${baseline.label} ready in ${((Date.now() - startedAt) / 1000).toFixed(0)} s\n`);
    } catch (error) {
      out[name] = { label: baseline.label, skipped: `could not be built: ${error.message.split('\n')[0]}` };
    }
  }
  return out;
}

/**
 * The response cache, access policies, tracing and request records, each against the bare proxy
 * of the same rounds (see features.mjs). Starts and stops the extra processes it needs.
 */
async function featureBenchmarks({
  mock,
  bare,
  gateway,
  configPath,
  fileConfig,
  benchConfig,
  dir,
  privateKey,
  baselines,
}) {
  const c = counts.features;
  const passThroughBody = JSON.stringify({ ...JSON.parse(anthropicBody), model: '@bench/claude-sonnet-4-5' });
  const mcpCall = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}';
  const toolsList = '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}';
  const cacheHeader = { 'x-gateway-config': '{"cache":{"mode":"simple","max_age":3600}}' };
  const on = (proc, key = GATEWAY_KEY) => ({
    pid: proc.child.pid,
    at: (path, body, headers = {}) => ({
      port: proc.port,
      path,
      body,
      headers: { ...json, 'x-gateway-api-key': key, ...headers },
    }),
  });
  const subject = (proc, label, path, body, headers, key) => ({
    label,
    pid: proc.child.pid,
    target: on(proc, key).at(path, body, headers),
  });
  const floor = (path, body) => ({ pid: bare.child.pid, target: { port: bare.port, path, body, headers: json } });
  const floorMessages = floor('/v1/messages', anthropicBody);
  const directMessages = { port: mock.port, path: '/v1/messages', body: anthropicBody, headers: json };
  const directMcp = (body) => ({ port: mock.port, path: '/mcp', body, headers: json });
  const started = [];
  /** Gateways (a data directory in `env`) and the OTLP receiver, stopped by `stop`. */
  const gateways = new Set();
  const start = async (main, env) => {
    let proc;
    if (env.GATEWAY_DATA_DIR) gateways.add((proc = await startGateway(env, { main })));
    else (proc = await startProcess(main, env)).child.stdout.resume();
    started.push(proc);
    return proc;
  };
  /** What gateways send to: a redis-server or the OTLP receiver. */
  const servesGateways = (proc) => !gateways.has(proc);
  /**
   * Stops what `start` started: the gateways at once, then what they send to (a gateway stopping
   * flushes its spans and records: with its receiver or Redis gone first it waits on them).
   */
  const stop = async () => {
    const procs = started.splice(0);
    for (const group of [procs.filter((p) => !servesGateways(p)), procs.filter(servesGateways)]) {
      for (const proc of group) proc.child.kill('SIGTERM');
      await Promise.all(group.map((proc) => exited(proc.child)));
    }
  };
  /**
   * Smoke runs only (they check that every row runs, not its figures): no second start of a
   * gateway on a config and environment a running one has. The bench's gateway (on `configPath`,
   * which then holds the open access config too) is the tracing rows' gateway without OTEL_*
   * variables and the access rows' open gateway (and its identical second); the redis-server and
   * the gateway on it of the Redis cache row, kept to the end, are the limits row's Redis and its
   * gateway without limits (the limited one then stores no records either), and that gateway,
   * started without request records, is the records row's (with REDIS_URL besides: a figure the
   * smoke run does not judge). Full and quick runs start every gateway of a comparison fresh (a
   * process's first few thousand requests cost more while V8 optimises).
   */
  const reuse = smoke ? {} : undefined;
  /** The environment of a gateway that stores no request records. */
  const noRecords = { GATEWAY_REQUEST_LOG_DAYS: '0' };
  const kept = [];
  const out = { cache: {}, access: {}, limits: {}, tracing: {}, baselines: {}, notes: [] };
  for (const [name, b] of Object.entries(baselines)) out.baselines[name] = { label: b.label, skipped: b.skipped };
  /** A second request of `target` must be answered from the cache. */
  const expectHit = async (target) => {
    let status;
    // The answer is stored once it has been sent: a request right after may still miss.
    for (let attempt = 0; attempt < 20 && status !== 'HIT'; attempt++) {
      status = (await probe(target)).headers.get('x-gateway-cache-status');
      if (status !== 'HIT') await new Promise((resolve) => setTimeout(resolve, 100));
    }
    if (status !== 'HIT')
      throw new Error(`a repeated cached request answered x-gateway-cache-status ${status}, not HIT`);
  };
  /** The response cache, the builds before it and before tracing, tracing, request records. */
  const cacheTracingRecords = async () => {
    // Response cache, in memory: the chat completion asked for with `cache` (a hit after the
    // first) against the same request without it, on the main gateway.
    process.stdout.write('features: response cache (memory)\n');
    await expectHit(on(gateway).at('/v1/chat/completions', chatBody, cacheHeader));
    Object.assign(
      out.cache,
      await sideBySide(
        [
          {
            name: 'memory',
            label: '/v1/chat/completions answered from the memory cache',
            a: subject(gateway, 'pass-through miss (no cache asked)', '/v1/chat/completions', chatBody),
            b: subject(gateway, 'memory hit', '/v1/chat/completions', chatBody, cacheHeader),
            floor: floorMessages,
            direct: directMessages,
          },
        ],
        c,
      ),
    );
    // Response cache in Redis: a gateway with REDIS_URL on a throwaway redis-server.
    const redisBinary = redisServerPath();
    if (redisBinary) {
      process.stdout.write('features: response cache (Redis)\n');
      const redis = await startRedis(redisBinary);
      started.push(redis);
      // Smoke runs: without request records too, to serve the tracing rows as well (see `reuse`).
      const shared = await start(
        mainJs,
        gatewayEnv(configPath, privateKey, { REDIS_URL: redis.url, ...(reuse ? noRecords : {}) }),
      );
      if (reuse) {
        // Kept for the limits row (see `reuse`).
        kept.push(...started.splice(0));
        Object.assign(reuse, { redis, redisGateway: shared });
      }
      await expectHit(on(shared).at('/v1/chat/completions', chatBody, cacheHeader));
      Object.assign(
        out.cache,
        await sideBySide(
          [
            {
              name: 'redis',
              label: '/v1/chat/completions answered from Redis',
              a: subject(shared, 'pass-through miss (no cache asked)', '/v1/chat/completions', chatBody),
              b: subject(shared, 'Redis hit', '/v1/chat/completions', chatBody, cacheHeader),
              floor: floorMessages,
              direct: directMessages,
            },
          ],
          c,
        ),
      );
      await stop();
    } else {
      out.cache.redisSkipped = 'redis-server is not installed (Debian: apt-get install redis-server); no Redis row';
    }
    // Requests without `cache` against the gateway built from the commit before the cache, and
    // the gateway without OTEL_* variables against the one before tracing. Each comparison starts
    // both gateways fresh, with the same config: V8 optimises over a process's first few thousand
    // requests, so the two sides must have served alike.
    // The tracing and records rows run rounds of several thousand requests (`c.tracing`): the
    // record writer flushes every second, and rounds of 1,000 held 0 or 1 flush and swung ±20%.
    const t = { ...c, ...c.tracing };
    for (const [name, paths, counts] of [
      [
        'preCache',
        [
          ['conversion', '/v1/chat/completions', chatBody],
          ['passThrough', '/v1/messages', passThroughBody],
        ],
        c,
      ],
      ['preTracing', [['passThrough', '/v1/messages', passThroughBody]], t],
    ]) {
      const baseline = baselines[name];
      if (!baseline.main) continue;
      process.stdout.write(`features: against ${baseline.label}\n`);
      const [before, current] = await Promise.all([
        start(baseline.main, gatewayEnv(configPath, privateKey)),
        start(mainJs, gatewayEnv(configPath, privateKey)),
      ]);
      out.baselines[name] = {
        label: baseline.label,
        ...(await sideBySide(
          paths.map(([path, route, body]) => ({
            name: path,
            label: `${route}${path === 'conversion' ? ' with conversion' : ' pass-through'}, no cache asked, no OTEL_* variables`,
            a: subject(before, baseline.label, route, body),
            b: subject(current, 'this gateway', route, body),
            floor: floorMessages,
            direct: directMessages,
          })),
          counts,
        )),
      };
      await stop();
    }
    // Tracing: a caller's traceparent, export to a local OTLP/HTTP receiver, and what storing the
    // request records costs (the same build with GATEWAY_REQUEST_LOG_DAYS=0 stores none): three
    // gateways started together.
    process.stdout.write('features: tracing\n');
    const receiver = await start(join(here, 'otlp-receiver.mjs'), {});
    // Smoke runs: the bench's own gateway is the one without OTEL_* variables (same config and
    // environment, the scaling keys aside; see `reuse`).
    const [current, exporting, notStored] = await Promise.all([
      reuse ? gateway : start(mainJs, gatewayEnv(configPath, privateKey)),
      start(
        mainJs,
        gatewayEnv(configPath, privateKey, { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${receiver.port}` }),
      ),
      reuse?.redisGateway ?? start(mainJs, gatewayEnv(configPath, privateKey, noRecords)),
    ]);
    const traceparent = () => ({
      ...on(current).at('/v1/messages', passThroughBody),
      headers: {
        ...on(current).at('/v1/messages', passThroughBody).headers,
        traceparent: `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01`,
      },
    });
    Object.assign(
      out.tracing,
      await sideBySide(
        [
          {
            name: 'traceparent',
            label: '/v1/messages pass-through, export off: with a caller traceparent against without',
            a: subject(current, 'without traceparent', '/v1/messages', passThroughBody),
            b: { label: 'with traceparent', pid: current.child.pid, target: traceparent },
            floor: floorMessages,
            direct: directMessages,
          },
          {
            name: 'exportOn',
            label: '/v1/messages pass-through: spans exported to a local OTLP/HTTP receiver against export off',
            a: subject(current, 'export off', '/v1/messages', passThroughBody),
            b: subject(exporting, 'export on', '/v1/messages', passThroughBody),
            floor: floorMessages,
            direct: directMessages,
          },
          {
            name: 'recordsStored',
            label: '/v1/messages pass-through: request records stored in the embedded database against none stored',
            a: subject(notStored, 'none stored (GATEWAY_REQUEST_LOG_DAYS=0)', '/v1/messages', passThroughBody),
            b: subject(current, 'stored', '/v1/messages', passThroughBody),
            floor: floorMessages,
            direct: directMessages,
          },
        ],
        t,
      ),
    );
    const stats = await fetch(`http://127.0.0.1:${receiver.port}/stats`, {
      signal: globalThis.AbortSignal.timeout(5000),
    });
    out.tracing.receiver = await stats.json();
    // Request records at the highest rate the bench drives (pass-through at 10 connections).
    process.stdout.write('features: request records\n');
    out.tracing.records = await recordQueue(current.port, on(current).at('/v1/messages', passThroughBody), c.records);
    await stop();
  };
  try {
    if (want('features')) await cacheTracingRecords();
    if (want('features') || want('access')) await accessPolicies();
    if (want('features') || want('limits')) await limitChecks();
  } finally {
    await stop();
    started.push(...kept.splice(0));
    await stop();
  }
  return out;

  /** Access policies: 100 policies and 1,000 API keys, `policies` mode against `open`. */
  async function accessPolicies() {
    process.stdout.write('features: access policies\n');
    const accessPath = (mode) => {
      const path = join(dir, `gateway-access-${mode}.json`);
      writeFileSync(path, JSON.stringify(accessConfig(fileConfig, mode)));
      return path;
    };
    // Smoke runs: the bench's gateway holds the open config (see `benchConfig`).
    const open = reuse ? gateway : await start(mainJs, gatewayEnv(accessPath('open'), privateKey));
    const policies = await start(mainJs, gatewayEnv(accessPath('policies'), privateKey));
    // A second open gateway, identical to the first: how far two identical gateways differ in
    // these rounds is the noise a 5 % target is read against.
    // Smoke runs compare the open gateway with itself: the rows' shape, not the noise's figure.
    const openAgain = reuse ? open : await start(mainJs, gatewayEnv(accessPath('open'), privateKey));
    const [caller, gated] = [accessKey(0), accessKey(50)];
    const listed = async (proc, key) =>
      (await probe(on(proc, key).at('/mcp/tools', toolsList))).body?.result?.tools?.length;
    const [whole, filtered] = [await listed(policies, caller), await listed(policies, gated)];
    if (whole !== 200 || filtered !== 100) {
      throw new Error(`tools/list listed ${whole} tools without a gate and ${filtered} with one, not 200 and 100`);
    }
    out.access.toolsListed = { withoutGate: whole, withGate: filtered };
    // A row comparing two gateways (each with its label) on pass-through or on an MCP call.
    const messagesRow = (name, label, [a, aLabel], [b, bLabel]) => ({
      name,
      label: `/v1/messages pass-through, ${label}`,
      a: subject(a, aLabel, '/v1/messages', passThroughBody, {}, caller),
      b: subject(b, bLabel, '/v1/messages', passThroughBody, {}, caller),
      floor: floorMessages,
      direct: directMessages,
    });
    const mcpRow = (name, label, [a, aLabel], [b, bLabel]) => ({
      name,
      label: `MCP tools/call, jwt_header, ${label}`,
      a: subject(a, aLabel, '/mcp/tools', mcpCall, {}, caller),
      b: subject(b, bLabel, '/mcp/tools', mcpCall, {}, caller),
      floor: floor('/mcp', mcpCall),
      direct: directMcp(mcpCall),
    });
    const openOne = [open, 'open'];
    const noise = 'open against a second identical open gateway (the noise)';
    const openTwo = [openAgain, 'open, second gateway'];
    Object.assign(
      out.access,
      await sideBySide(
        [
          messagesRow('passThrough', 'policies against open', openOne, [policies, 'policies']),
          mcpRow('mcpCall', 'policies against open', openOne, [policies, 'policies']),
          messagesRow('passThroughSame', noise, openOne, openTwo),
          mcpRow('mcpCallSame', noise, openOne, openTwo),
          {
            name: 'toolsList',
            label: 'MCP tools/list of 200 tools, policies mode: a caller with a tool gate against one without',
            a: subject(policies, 'no tool gate', '/mcp/tools', toolsList, {}, caller),
            b: subject(policies, 'tool gate (100 of 200 allowed)', '/mcp/tools', toolsList, {}, gated),
            floor: floor('/mcp', toolsList),
            direct: directMcp(toolsList),
          },
        ],
        c,
      ),
    );
  }

  /**
   * Limits (CONTRACT section 14): the same pass-through on two gateways sharing a redis-server on
   * loopback, one without limits and one whose caller has a limit of every kind (requests, tokens
   * and cost: one reservation script before the provider, one settlement script after).
   */
  async function limitChecks() {
    const redisBinary = redisServerPath();
    if (!redisBinary) {
      out.limits = {
        redisSkipped: 'redis-server is not installed (Debian: apt-get install redis-server); no limits row',
      };
      return;
    }
    process.stdout.write('features: limits (Redis on loopback)\n');
    const redis = reuse?.redis ?? (await startRedis(redisBinary));
    if (!reuse?.redis) started.push(redis);
    const limitsPath = join(dir, 'gateway-limits.json');
    const limit = {
      slug: 'bench-limit',
      subjects: { users: ['bench'] },
      per: 'each',
      requests_per_minute: 1_000_000,
      tokens_per_minute: 1_000_000_000,
      cost_usd_per_day: 1_000_000,
    };
    // Smoke runs: the config of the gateway without limits (`configPath`'s), as in full runs.
    writeFileSync(limitsPath, JSON.stringify({ ...(reuse ? benchConfig : fileConfig), limits: [limit] }));
    const [plain, limited] = await Promise.all([
      reuse?.redisGateway ?? start(mainJs, gatewayEnv(configPath, privateKey, { REDIS_URL: redis.url })),
      start(
        mainJs,
        gatewayEnv(limitsPath, privateKey, { REDIS_URL: redis.url, ...(reuse?.redisGateway ? noRecords : {}) }),
      ),
    ]);
    const checked = await probe(on(limited).at('/v1/messages', passThroughBody));
    if (checked.headers.get('x-ratelimit-limit-requests') !== String(limit.requests_per_minute))
      throw new Error('the limited gateway did not answer with x-ratelimit-limit-requests: its limit is not applied');
    out.limits = await sideBySide(
      [
        {
          name: 'redis',
          label:
            '/v1/messages pass-through: a limit check (requests, tokens, cost; Redis on loopback) against no limits',
          a: subject(plain, 'no limits', '/v1/messages', passThroughBody),
          b: subject(limited, 'one limit, Redis', '/v1/messages', passThroughBody),
          floor: floorMessages,
          direct: directMessages,
        },
      ],
      c,
    );
  }
}

/** PDF sizes of the memory rows: 1, 8 and 32 MB. */
const PDF_SIZES = [1, 8, 32].map((mb) => mb * 1024 * 1024);
/**
 * The PDF sizes this run measures: a smoke run takes the smallest alone (each size is a router
 * process of its own, and the 32 MB one alone moves 40+ MB of base64); the row is still made the
 * same way, from the same code.
 */
const pdfSizes = smoke ? PDF_SIZES.slice(0, 1) : PDF_SIZES;

/** A chat completion body with one PDF of `pdfBytes` bytes (base64 in a file part), a one-page PDF padded with spaces. */
function pdfChatBody(pdfBytes) {
  const header = Buffer.from(
    '%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj\n3 0 obj << /Type /Page /Parent 2 0 R >> endobj\n',
  );
  const pdf = Buffer.concat([header, Buffer.alloc(pdfBytes - header.length, 0x20)]).toString('base64');
  return JSON.stringify({
    model: '@bench/claude-sonnet-4-5',
    max_tokens: 16,
    messages: [{ role: 'user', content: [{ type: 'file', file: { file_data: pdf } }] }],
  });
}

/**
 * A process's resident memory once it has settled: sampled every 250 ms until five samples in a
 * row lie within 2 MB of each other (at most 20 s: a process still starting, its database
 * included, frees and takes memory for a while).
 */
async function settledRss(pid) {
  const samples = [];
  const until = Date.now() + 20_000;
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    samples.push(currentRss(pid));
    const last = samples.slice(-5);
    if ((last.length === 5 && Math.max(...last) - Math.min(...last) <= 2 * 1024 * 1024) || Date.now() > until)
      return last.at(-1);
  }
}

/**
 * Peak memory of PDF chat completions, one row per size, each in a process of its own started
 * for it: the gateway's model routes alone (bench/pdf-router.mjs, no catalog database, whose
 * freed memory a request would reuse), after a small chat completion and a 256 KB PDF (its code
 * loaded), a full garbage collection and its memory settled. The row's figure is the peak resident memory during the
 * PDF request (VmHWM reset just before it) over that idle memory, against the PDF's size.
 */
async function pdfMemory({ mockPort, warmUp }) {
  const rows = [];
  for (const pdfBytes of pdfSizes) {
    const body = pdfChatBody(pdfBytes);
    const router = await startProcess(join(here, 'pdf-router.mjs'), { UPSTREAM_PORT: String(mockPort) }, [
      '--expose-gc',
    ]);
    const target = (payload) => ({ port: router.port, path: '/v1/chat/completions', body: payload, headers: json });
    try {
      await closedLoop(target(warmUp), { connections: 1, count: 1 });
      await closedLoop(target(pdfChatBody(256 * 1024)), { connections: 1, count: 1 });
      const pid = router.child.pid;
      // Idle: the garbage of the warm-up collected, memory settled.
      await closedLoop({ port: router.port, path: '/gc', body: '', headers: {} }, { connections: 1, count: 1 });
      const idleRss = await settledRss(pid);
      const hwmReset = resetPeakRss(pid);
      const started = process.hrtime.bigint();
      await closedLoop(target(body), { connections: 1, count: 1 });
      const requestMillis = Number(process.hrtime.bigint() - started) / 1e6;
      const peak = peakRss(pid);
      rows.push({
        pdfBytes,
        requestMillis,
        rssBefore: idleRss,
        peakRss: peak,
        peakOverIdle: peak - idleRss,
        peakOverPdf: (peak - idleRss) / pdfBytes,
        hwmReset,
      });
    } finally {
      router.child.kill('SIGTERM');
    }
  }
  return rows;
}

async function main() {
  const started = Date.now();
  // Earlier gateways are built only for the feature comparisons that use them.
  const baselines = want('features') ? prepareBaselines() : {};
  const mock = await startProcess(join(here, 'mocks.mjs'));
  const bare = await startProcess(join(here, 'bare-proxy.mjs'), { TARGET_PORT: String(mock.port) });
  const dir = mkdtempSync(join(tmpdir(), 'gateway-bench-'));
  const configPath = join(dir, 'gateway.json');
  const fileConfig = gatewayConfig(mock.port, counts.warm + counts.misses * counts.rounds + 10);
  // A smoke run checks that every section runs, not its figures: its gateways on `configPath`
  // (the bench's own among them) also hold the scaling section's 1,000 API keys and the access
  // rows' open config (1,000 more keys, 100 policies, `access.mode` open), so that the bench's
  // gateway serves those sections too (see `reuse` in featureBenchmarks). Full and quick runs
  // start each of those gateways fresh on its own config, as they measure.
  const benchConfig = smoke ? accessConfig(scalingConfig(fileConfig), 'open') : fileConfig;
  writeFileSync(configPath, JSON.stringify(benchConfig));
  const { privateKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  // The bench's own gateway, for the sections that measure it (the shapes, mcp-auth, the peers
  // and the saturation searches start their own).
  const usesGateway =
    ['catalog', 'latency', 'load', 'routing', 'virtual', 'streams', 'features', 'access', 'limits'].some(want) ||
    (smoke && want('scaling'));
  const gateway = usesGateway ? await startGateway(gatewayEnv(configPath, privateKey)) : undefined;
  /**
   * A gateway on `config` (written to a file of its own), with `extra` environment; a new data
   * directory unless `extra` names one (then kept: a later start uses it again).
   */
  const startGatewayOn = async (config, extra = {}) => {
    const path = join(dir, `gateway-${randomBytes(4).toString('hex')}.json`);
    writeFileSync(path, JSON.stringify(config));
    return startGateway(gatewayEnv(path, privateKey, extra), { keepData: Boolean(extra.GATEWAY_DATA_DIR) });
  };
  const gw = (path, body, headers = {}) => ({
    port: gateway.port,
    path,
    body,
    headers: { ...json, 'x-gateway-api-key': GATEWAY_KEY, ...headers },
  });
  const direct = (path, body) => ({ port: mock.port, path, body, headers: json });
  const results = { scenarios: [], load: {}, streams: {}, catalog: {}, micro: {}, memory: {} };
  const streamChat = JSON.stringify({ ...JSON.parse(chatBody), stream: true });
  const streamDirect = JSON.stringify({ ...JSON.parse(anthropicBody), stream: true });
  const streamNative = JSON.stringify({ ...JSON.parse(streamDirect), model: '@bench/claude-sonnet-4-5' });
  const slugged = (slug) => JSON.stringify({ ...JSON.parse(streamChat), model: `@${slug}/claude-sonnet-4-5` });
  const streamResponses = JSON.stringify({ ...JSON.parse(responsesBody), stream: true });
  let catalogGateway;
  try {
    if (want('shapes')) {
      const shapeBaseline = shapeBaselineCommit && {
        label: `before: ${shapeBaselineCommit.slice(0, 7)}`,
        main: buildBaseline(root, {
          commit: spawnSync('git', ['rev-parse', shapeBaselineCommit], { cwd: root, encoding: 'utf8' }).stdout.trim(),
        }),
      };
      const passThroughBody = JSON.stringify({ ...JSON.parse(anthropicBody), model: '@bench/claude-sonnet-4-5' });
      const mcpCall = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}';
      const retrieveBody = '{"retrievalQuery":{"text":"How long do refunds take?"}}';
      const at = (port, path, body, headers = {}) => ({
        port,
        path,
        body,
        headers: { ...json, 'x-gateway-api-key': GATEWAY_KEY, ...headers },
      });
      const shortStream = JSON.stringify({ ...JSON.parse(anthropicBody), stream: true });
      results.shapes = await shapeBenchmarks({
        shapes: shapes ?? SHAPES,
        baseline: shapeBaseline,
        startGatewayWith: (extra, main = mainJs) => startGateway(gatewayEnv(configPath, privateKey, extra), { main }),
        bare,
        paths: (port) => ({
          passThrough: at(port, '/v1/messages', passThroughBody),
          conversion: at(port, '/v1/chat/completions', chatBody),
          mcpCached: at(port, '/mcp/tools', mcpCall, { 'x-gateway-api-key': 'gw-bench-user-000001' }),
          bedrock: at(port, '/v1/knowledgebases/KB1/retrieve', retrieveBody, {
            'x-gateway-provider': '@kb',
            'x-gateway-custom-host': `http://127.0.0.1:${mock.port}`,
          }),
        }),
        floors: {
          passThrough: { port: bare.port, path: '/v1/messages', body: anthropicBody, headers: json },
          conversion: { port: bare.port, path: '/v1/messages', body: anthropicBody, headers: json },
          mcpCached: { port: bare.port, path: '/mcp', body: mcpCall, headers: json },
          bedrock: { port: bare.port, path: '/knowledgebases/KB1/retrieve', body: retrieveBody, headers: json },
        },
        direct: {
          passThrough: direct('/v1/messages', anthropicBody),
          conversion: direct('/v1/messages', anthropicBody),
          mcpCached: direct('/mcp', mcpCall),
        },
        idle: {
          gateway: (port) =>
            at(port, '/v1/messages', JSON.stringify({ ...JSON.parse(shortStream), model: '@short/claude-sonnet-4-5' })),
          bare: { port: bare.port, path: '/short/v1/messages', body: shortStream, headers: json },
        },
        counts,
        log: (line) => process.stdout.write(`${line}\n`),
        // The contract's least per-request work on node:http (bench/contract-floor.mjs), in the
        // same rounds: the premise of the CPU and latency targets, measured.
        contractFloor: {
          start: async (extra) => {
            const proc = await startProcess(join(root, 'bench/contract-floor.mjs'), {
              TARGET_PORT: String(mock.port),
              API_KEYS: `${GATEWAY_KEY},gw-bench-user-000001`,
              JWT_PRIVATE_KEY: privateKey,
              ...extra,
            });
            proc.child.stdout.resume();
            return proc;
          },
          paths: (port) => ({
            passThrough: at(port, '/v1/messages', passThroughBody),
            mcpCached: at(port, '/mcp/tools', mcpCall, { 'x-gateway-api-key': 'gw-bench-user-000001' }),
            bedrock: at(port, '/v1/knowledgebases/KB1/retrieve', retrieveBody, {
              'x-gateway-provider': '@kb',
              'x-gateway-custom-host': `http://127.0.0.1:${mock.port}`,
            }),
          }),
        },
      });
      if (shapes) process.stdout.write(`${renderShapes(results.shapes, counts).join('\n')}\n`);
    }
    // The same gateway with its providers and API keys in the catalog database, against this one,
    // first: both processes then have served the same requests when they are compared.
    if (want('catalog')) {
      const catalog = await startCatalogGateway({ dir, fileConfig, mockPort: mock.port, privateKey });
      catalogGateway = catalog.gateway;
      const catalogPid = catalogGateway.child.pid;
      const cg = (path, body) => ({
        port: catalogGateway.port,
        path,
        body,
        headers: { ...json, 'x-gateway-api-key': catalog.callerKey },
      });
      const passThroughBody = JSON.stringify({ ...JSON.parse(anthropicBody), model: '@bench/claude-sonnet-4-5' });
      const comparison = await catalogComparison(
        [
          {
            name: 'passThrough',
            label: '/v1/messages pass-through',
            file: { pid: gateway.child.pid, target: gw('/v1/messages', passThroughBody) },
            catalog: { pid: catalogPid, target: cg('/v1/messages', passThroughBody) },
            direct: direct('/v1/messages', anthropicBody),
          },
          {
            name: 'conversion',
            label: '/v1/chat/completions with conversion',
            file: { pid: gateway.child.pid, target: gw('/v1/chat/completions', chatBody) },
            catalog: { pid: catalogPid, target: cg('/v1/chat/completions', chatBody) },
            direct: direct('/v1/messages', anthropicBody),
          },
        ],
        counts.catalog,
      );
      results.catalog = {
        ...catalog.seeding,
        ...comparison,
        rss: { file: currentRss(gateway.child.pid), catalog: currentRss(catalogPid), catalogPeak: peakRss(catalogPid) },
      };
      catalogGateway.child.kill('SIGTERM');
      await exited(catalogGateway.child);
      catalogGateway = undefined;
    }

    const n = counts.latency;
    const mcpBody = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}';
    const userKey = (i) => `gw-bench-user-${String(i % 100).padStart(6, '0')}`;
    const retrieve = '{"retrievalQuery":{"text":"How long do refunds take?"}}';
    const streamChat = JSON.stringify({ ...JSON.parse(chatBody), stream: true });
    const bedrockHeaders = { 'x-gateway-provider': '@kb', 'x-gateway-custom-host': `http://127.0.0.1:${mock.port}` };
    if (want('latency')) {
      results.scenarios.push(
        await paired(
          'bare node:http proxy (baseline), /v1/messages',
          { port: bare.port, path: '/v1/messages', body: anthropicBody, headers: json },
          direct('/v1/messages', anthropicBody),
          n,
          counts.rounds,
        ),
      );
      results.scenarios.push(
        await paired(
          '/v1/chat/completions, non-streaming, with conversion',
          gw('/v1/chat/completions', chatBody),
          direct('/v1/messages', anthropicBody),
          n,
          counts.rounds,
        ),
      );
      results.scenarios.push(
        await paired(
          '/v1/responses, non-streaming, with conversion',
          gw('/v1/responses', responsesBody),
          direct('/v1/messages', anthropicBody),
          n,
          counts.rounds,
        ),
      );
      results.scenarios.push(
        await paired(
          '/v1/messages pass-through',
          gw('/v1/messages', JSON.stringify({ ...JSON.parse(anthropicBody), model: '@bench/claude-sonnet-4-5' })),
          direct('/v1/messages', anthropicBody),
          n,
          counts.rounds,
        ),
      );
      results.scenarios.push(
        await paired(
          'MCP tools/call, jwt_header, cached tokens (100 users)',
          (i) => gw('/mcp/tools', mcpBody, { 'x-gateway-api-key': userKey(i) }),
          direct('/mcp', mcpBody),
          n,
          counts.rounds,
        ),
      );
      let miss = 0;
      const missKey = () => `gw-bench-miss-${String(miss++).padStart(6, '0')}`;
      results.scenarios.push(
        await paired(
          'MCP tools/call, jwt_header, forced misses (a new user per request)',
          () => gw('/mcp/tools', mcpBody, { 'x-gateway-api-key': missKey() }),
          direct('/mcp', mcpBody),
          counts.misses,
          counts.rounds,
        ),
      );
      results.scenarios.push(
        await paired(
          'signed Bedrock retrieve',
          gw('/v1/knowledgebases/KB1/retrieve', retrieve, bedrockHeaders),
          direct('/knowledgebases/KB1/retrieve', retrieve),
          n,
          counts.rounds,
        ),
      );
      // The mock sends each event of these streams as its own chunk, as a provider does.
      results.scenarios.push(
        await paired(
          'streaming conversion of 1,000 events, one event per chunk',
          gw('/v1/chat/completions', streamChat),
          direct('/v1/messages', streamDirect),
          counts.stream,
          counts.rounds,
          counts.stream,
        ),
      );
      results.scenarios.push(
        await paired(
          '/v1/responses streaming conversion of 1,000 events, one event per chunk',
          gw('/v1/responses', streamResponses),
          direct('/v1/messages', streamDirect),
          counts.stream,
          counts.rounds,
          counts.stream,
        ),
      );
      results.scenarios.push(
        await paired(
          'stream pass-through, /v1/messages, 1,000 events, one event per chunk',
          gw('/v1/messages', streamNative),
          direct('/v1/messages', streamDirect),
          counts.stream,
          counts.rounds,
          counts.stream,
        ),
      );
      // Time to first byte as a provider's stream has it: 25 events 5 ms apart. The bare proxy
      // carrying the same stream is the floor: between paced events every process sleeps, and
      // waking one more process costs a hop on this kind of machine far more than back to back.
      results.scenarios.push(
        await paired(
          'bare node:http proxy, paced stream, 25 events 5 ms apart',
          { port: bare.port, path: '/short/v1/messages', body: streamDirect, headers: json },
          direct('/short/v1/messages', streamDirect),
          counts.stream * 2,
          counts.rounds,
          counts.stream,
        ),
      );
      results.scenarios.push(
        await paired(
          'paced stream conversion, 25 events 5 ms apart',
          gw('/v1/chat/completions', slugged('short')),
          direct('/short/v1/messages', streamDirect),
          counts.stream * 2,
          counts.rounds,
          counts.stream,
        ),
      );
      results.scenarios.push(
        await paired(
          'paced stream pass-through, /v1/messages, 25 events 5 ms apart',
          gw('/v1/messages', JSON.stringify({ ...JSON.parse(streamDirect), model: '@short/claude-sonnet-4-5' })),
          direct('/short/v1/messages', streamDirect),
          counts.stream * 2,
          counts.rounds,
          counts.stream,
        ),
      );
    }

    const pid = gateway?.child.pid;
    if (want('load')) {
      Object.assign(
        results.load,
        await cpuUnderLoad(
          [
            { name: 'conversion', pid, target: gw('/v1/chat/completions', chatBody) },
            { name: 'responses', pid, target: gw('/v1/responses', responsesBody) },
            {
              name: 'passThrough',
              pid,
              target: gw(
                '/v1/messages',
                JSON.stringify({ ...JSON.parse(anthropicBody), model: '@bench/claude-sonnet-4-5' }),
              ),
            },
            { name: 'mcpCached', pid, target: gw('/mcp/tools', mcpBody, { 'x-gateway-api-key': userKey(1) }) },
            { name: 'bedrock', pid, target: gw('/v1/knowledgebases/KB1/retrieve', retrieve, bedrockHeaders) },
            {
              name: 'bareProxy',
              pid: bare.child.pid,
              target: { port: bare.port, path: '/v1/messages', body: anthropicBody, headers: json },
            },
          ],
          counts.cpu,
          counts.cpuWarm,
          counts.cpuRounds,
        ),
      );
    }

    if (want('routing')) {
      results.routing = await routingBenchmarks({
        gateway,
        bare,
        mock,
        at: gw,
        provider: 'bench',
        secondProvider: 'paced',
        bedrockSlug: 'kb',
        c: counts.routing,
        log: (line) => process.stdout.write(`${line}\n`),
      });
    }

    if (want('virtual')) {
      results.virtual = await virtualBenchmarks({
        gateway,
        bare,
        mock,
        at: gw,
        c: counts.routing,
        log: (line) => process.stdout.write(`${line}\n`),
      });
    }

    if (want('streams')) {
      // CPU per event at 10 connections: the bare proxy carrying the same stream is the floor.
      results.streams.cpu = await streamCpu(
        [
          {
            name: 'bareProxy',
            label: 'bare node:http proxy, /v1/messages stream',
            pid: bare.child.pid,
            target: { port: bare.port, path: '/v1/messages', body: streamDirect, headers: json },
          },
          {
            name: 'conversion',
            label: '/v1/chat/completions stream conversion, one event per chunk',
            pid,
            target: gw('/v1/chat/completions', streamChat),
          },
          {
            name: 'responses',
            label: '/v1/responses stream conversion, one event per chunk',
            pid,
            target: gw('/v1/responses', streamResponses),
          },
          {
            name: 'passThrough',
            label: '/v1/messages stream pass-through, one event per chunk',
            pid,
            target: gw('/v1/messages', streamNative),
          },
          {
            name: 'burst',
            label: '/v1/chat/completions stream conversion, all events in one chunk',
            pid,
            target: gw('/v1/chat/completions', slugged('burst')),
          },
        ],
        'bareProxy',
        { streams: counts.streamCpu, warm: counts.streamCpu, rounds: counts.cpuRounds },
      );
      const conversion = results.streams.cpu.conversion;
      results.load.stream = {
        cpuMicrosPerRequest: conversion.cpuMicrosPerEvent.median * STREAM_EVENTS,
        cpuMin: conversion.cpuMicrosPerEvent.min * STREAM_EVENTS,
        cpuMax: conversion.cpuMicrosPerEvent.max * STREAM_EVENTS,
        cpuMicrosPerEvent: conversion.cpuMicrosPerEvent.median,
        p50Micros: conversion.streamP50Micros,
      };
      // New streams (short, paced) among 10 paced ones the gateway keeps converting (an event
      // every 5 ms each).
      results.streams.amongBusy = await ttfbAmongStreams({
        busy: gw('/v1/chat/completions', slugged('paced')),
        gateway: gw('/v1/chat/completions', slugged('short')),
        direct: direct('/short/v1/messages', streamDirect),
        n: counts.streamBusy,
        rounds: counts.rounds,
      });
    }

    if (want('pdf')) {
      const rows = await pdfMemory({ mockPort: mock.port, warmUp: chatBody });
      results.memory.pdfRequests = rows;
      results.memory.pdfRequest = rows.at(-1);
    }
    if (gateway) results.memory.gatewayPeakRss = peakRss(pid);

    if (want('features') || want('access') || want('limits'))
      results.features = await featureBenchmarks({
        mock,
        bare,
        gateway,
        configPath,
        fileConfig,
        benchConfig,
        dir,
        privateKey,
        baselines,
      });
    if (want('mcp-auth')) {
      process.stdout.write('mcp-auth: MCP tools/call by credential\n');
      results.mcpAuth = await mcpAuthBenchmarks({
        mock,
        bare,
        rounds: counts.rounds,
        count: counts.latency,
        cpuCount: counts.cpu,
      });
    }
    const log = (line) => process.stdout.write(`${line}\n`);
    const mode = smoke ? 'smoke' : quick ? 'quick' : 'full';
    if (want('scaling')) {
      // Smoke runs: the bench's gateway, which holds the scaling keys (see `benchConfig`).
      const scaled = smoke ? gateway : await startGatewayOn(scalingConfig(fileConfig));
      try {
        results.scaling = await scalingBenchmarks({ gateway: scaled, bare, mock, mode, log });
      } finally {
        if (scaled !== gateway) {
          scaled.child.kill('SIGTERM');
          await exited(scaled.child);
        }
      }
    }
    // A gateway of its own for each: both are compared on processes that have served nothing else
    // (on a new database, or on `dataDir`'s).
    if (want('peers'))
      results.peers = await peerBenchmarks({
        startGateway: (config, dataDir) => startGatewayOn(config, dataDir ? { GATEWAY_DATA_DIR: dataDir } : {}),
        fileConfig,
        bare,
        mock,
        mode,
        log,
      });
    // The largest rate one core sustains (bench/saturation.mjs): its own mock (20 ms), bare proxy,
    // gateways and databases, pinned; the peer when the peers section runs or this one alone.
    if (want('saturation'))
      results.saturation = await saturationBenchmarks({
        startProcess,
        startGateway: startGatewayOn,
        gatewayConfig: (mockPort) => gatewayConfig(mockPort, 10),
        apiKey: GATEWAY_KEY,
        mcpKey: 'gw-bench-user-000001',
        withPortkey: peers || Boolean(only?.has('saturation')),
        mode,
        log,
      });
    if (results.saturation && only) process.stdout.write(`${renderSaturation(results.saturation).join('\n')}\n`);
  } finally {
    for (const p of [gateway, bare, mock, catalogGateway]) p?.child.kill('SIGTERM');
  }
  if (only) {
    const partial = JSON.stringify({ only: [...only], counts, ...results }, null, 2);
    if (outDir) {
      mkdirSync(outDir, { recursive: true });
      writeFileSync(join(outDir, 'results.json'), `${partial}\n`);
    }
    if (!want('micro')) {
      process.stdout.write(`${partial}\n`);
      return;
    }
  }
  results.micro = await microBenchmarks(quick, smoke, sign);
  if (only) {
    process.stdout.write(`${JSON.stringify({ micro: results.micro }, null, 2)}\n`);
    return;
  }
  results.memory.tokenCache = results.micro.tokenCacheMemory;
  const openssl = spawnSync('openssl', ['speed', '-seconds', smoke ? '1' : '2', 'rsa2048'], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  const opensslSign = /rsa 2048 bits\s+([\d.]+)s/.exec(openssl.stdout ?? '')?.[1];
  results.micro.opensslSignMicros = opensslSign ? Number(opensslSign) * 1e6 : null;

  const report = {
    date: new Date().toISOString(),
    mode: smoke ? 'smoke' : quick ? 'quick' : 'full',
    machine: { cpu: cpus()[0]?.model ?? 'unknown', cores: cpus().length, node: process.version },
    counts,
    ...results,
    durationSeconds: (Date.now() - started) / 1000,
  };
  report.targets = targets(report);
  const resultsPath = outDir ? join(outDir, 'results.json') : join(here, 'results.json');
  const docPath = outDir ? join(outDir, 'benchmarks.md') : join(root, 'docs', 'benchmarks.md');
  mkdirSync(dirname(resultsPath), { recursive: true });
  writeFileSync(resultsPath, `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(docPath, renderMarkdown(report));
  process.stdout.write(`${renderMarkdown(report)}\nwrote ${resultsPath} and ${docPath}\n`);
}

// The scratch folder emptied before exit, its folders at once (see clearScratch).
main()
  .then(clearScratch)
  .catch((error) => {
    process.stderr.write(`bench: ${error.stack ?? error}\n`);
    process.exit(1);
  });

// Saturation: the largest request rate one core sustains with a 20 ms upstream and p99 under
// 100 ms, for this gateway in the shapes operators run (production: PostgreSQL + Redis; embedded:
// PGlite), the bare node:http proxy and the open-source Portkey gateway, in the same run.
//
// Method:
// - each proxy process runs on core 1 (`taskset -a -p -c 1`, every thread of it, once started);
//   this driver, the mock upstream, PostgreSQL and redis-server on core 0 (the driver pins itself
//   first, and the processes it starts next inherit that core). Without `taskset` or a second
//   core nothing is pinned, and the result says so;
// - the mock answers each request 20 ms after it arrived (a timer: bench/mocks.mjs, MOCK_DELAY_MS);
// - open-loop load: request i leaves at start + i / rate whatever the answers, over a keep-alive
//   agent of rate × 100 ms sockets (at most 1,024), so that a proxy falling behind builds a queue
//   that shows; latency is read from the intended send time (no coordinated omission);
// - a step is a warm-up then a measured window at one rate; it passes when the window's p99 is
//   under 100 ms and no request failed (an error status, a reset, no answer within 5 s). A step
//   stops early once enough of its window came back late (or failed) that it cannot pass;
// - the search steps up geometrically from a start rate until a step fails, then bisects between
//   the last pass and the first fail to within 5 %: the figure is the last passing rate, with its
//   p50, p99 and the proxy's CPU (/proc) there;
// - the driver's own CPU and the mock's (the load side, on core 0) are read at every step: when
//   they took 90 % of their core at the bracketing steps, the figure is the driver's limit, not the
//   proxy's, and is reported as "≥ N (driver-limited)";
// - the subjects take turns in each round (rotating order), 3 rounds in full mode, 1 in quick and
//   smoke runs; each figure is the median round with the lowest and highest.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { probe, redisServerPath, startRedis } from './features.mjs';
import { percentile, processCpuMicros } from './lib.mjs';
import { PORTKEY, checkReachesMock, ensurePortkey, startPortkey } from './peers.mjs';
import { summary } from './scaling.mjs';
import { startPostgres } from './shapes.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const json = { 'content-type': 'application/json' };

/** The upstream's answer time, in ms (the mock's timer). */
export const UPSTREAM_DELAY_MS = 20;
/** The latency a rate must keep its p99 under, in µs. */
export const P99_LIMIT_MICROS = 100_000;
/** The most sockets the driver opens to one proxy. */
export const MAX_SOCKETS = 1024;
/**
 * The driver closes a keep-alive socket idle this long (ms): before any proxy's own keep-alive
 * timeout (5 s for this gateway and Portkey), so that it never sends on a socket the proxy is
 * closing (a reset that would count as the proxy's error).
 */
export const IDLE_SOCKET_MS = 2_000;
/** A request not answered within this time counts as an error (ms). */
export const REQUEST_TIMEOUT_MS = 5_000;
/**
 * The share of the driver's core (busy in all, or taken by the driver and the mock) at the first
 * failing step above which the failure is the driver's, not the proxy's.
 */
export const DRIVER_LIMIT_SHARE = 0.85;
/**
 * The share of either core that processes outside the bench took at the first failing step
 * (busy, less what the proxy, or the driver, the mock, PostgreSQL and redis-server took) above
 * which the failure is the machine's, not the proxy's: the figure is then a lower bound.
 */
export const OTHERS_LIMIT_SHARE = 0.25;
/** The proxy's share of its core at the first failing step from which the failure is its own. */
export const PROXY_LIMIT_SHARE = 0.85;
/** Before a search, the cores wait (at most `quietWaitMs`) until each is under this share busy. */
export const QUIET_SHARE = 0.25;
/**
 * A search that knows a figure of the subject (an earlier round's, or another path's) starts at
 * this share of it and steps up by `NEAR_FACTOR`: fewer steps to the same bracket.
 */
export const NEAR_START = 0.7;
export const NEAR_FACTOR = 1.3;
/**
 * This gateway limits open connections per client address (`MAX_CONNECTIONS_PER_IP`, default
 * 256); the driver, one address standing for many clients, opens up to `MAX_SOCKETS`.
 */
export const GATEWAY_ENV = { MAX_CONNECTIONS_PER_IP: String(MAX_SOCKETS) };
/** The core of the proxies, and the core of the driver, the mock and the databases. */
export const PROXY_CORE = 1;
export const DRIVER_CORE = 0;

/**
 * The counts of each mode. `windowMs`: the measured window of a step; `warmMs`: the warm-up before
 * it (`firstWarmMs` for a search's first step, the subject having idled); `startRate` and `factor`:
 * the geometric steps; `precision`: the bisection stops when the failing rate is within this
 * factor of the passing one; `maxRate` and `minRate`: the search's bounds (requests a second).
 */
export function saturationCounts(mode) {
  if (mode === 'smoke')
    return {
      rounds: 1,
      windowMs: 500,
      warmMs: 200,
      firstWarmMs: 300,
      startRate: 100,
      factor: 4,
      precision: 1.25,
      maxRate: 1600,
      minRate: 10,
      settleMs: 100,
      quietWaitMs: 1000,
      // Every path once, to check they all run.
      extraPathRounds: 1,
    };
  const quick = mode !== 'full';
  return {
    rounds: quick ? 1 : 3,
    windowMs: quick ? 1000 : 2000,
    warmMs: quick ? 300 : 500,
    firstWarmMs: quick ? 1000 : 1500,
    startRate: 400,
    factor: 2,
    precision: 1.05,
    maxRate: 25_600,
    minRate: 10,
    settleMs: quick ? 150 : 250,
    quietWaitMs: quick ? 1000 : 3000,
    // MCP tools/call and chat completions for the gateway's shapes: one round, in full (and smoke) runs.
    extraPathRounds: quick ? 0 : 1,
  };
}

/** The cores this process may run on (`taskset -p -c`), as taskset's list ("0,1" or "0-1"), or undefined. */
function affinityOf(pid) {
  const run = spawnSync('taskset', ['-p', '-c', String(pid)], { encoding: 'utf8', timeout: 5000 });
  if (run.status !== 0) return undefined;
  return /:\s*(\S+)\s*$/.exec(run.stdout.trim())?.[1];
}

/** Pins every thread of a process to `cores` (a taskset list); throws with taskset's words when it cannot. */
function pin(pid, cores) {
  const run = spawnSync('taskset', ['-a', '-p', '-c', String(cores), String(pid)], {
    encoding: 'utf8',
    timeout: 5000,
  });
  if (run.status !== 0)
    throw new Error(`taskset could not pin ${pid} to ${cores}: ${(run.stderr || run.error?.message || '').trim()}`);
}

/**
 * Whether processes can be pinned here: taskset present, two cores, and this process allowed on
 * both. Returns `{ pinned, note }`.
 */
export function pinningPlan() {
  const cores = cpus().length;
  const found = spawnSync('taskset', ['--version'], { encoding: 'utf8', timeout: 5000 });
  if (found.error || found.status !== 0)
    return {
      pinned: false,
      note: 'taskset is not installed (util-linux): nothing pinned, every process on every core',
    };
  if (cores < 2)
    return {
      pinned: false,
      note: `this machine has ${cores} core: nothing pinned, the driver shares the proxy's core`,
    };
  const own = affinityOf(process.pid);
  if (own === undefined) return { pinned: false, note: "taskset could not read this process's cores: nothing pinned" };
  return {
    pinned: true,
    note: `proxies on core ${PROXY_CORE}; driver, mock, PostgreSQL and redis-server on core ${DRIVER_CORE} (taskset)`,
    restore: own,
  };
}

/**
 * The driver's keep-alive agent for one subject: up to `MAX_SOCKETS` sockets (each step sets how
 * many it may use), idle ones closed after `idleMs` (default `IDLE_SOCKET_MS`; the bench always
 * uses the default, its test a shorter one).
 */
export function driverAgent(idleMs = IDLE_SOCKET_MS) {
  return new Agent({ keepAlive: true, maxSockets: MAX_SOCKETS, maxFreeSockets: MAX_SOCKETS, timeout: idleMs });
}

/** Busy and total jiffies of each core, from /proc/stat. */
function coreTimes() {
  const out = {};
  for (const line of readFileSync('/proc/stat', 'utf8').split('\n')) {
    const m = /^cpu(\d+)\s+(.*)$/.exec(line);
    if (!m) continue;
    const f = m[2].split(/\s+/).map(Number);
    const idle = f[3] + (f[4] ?? 0);
    const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
    out[m[1]] = { busy: total - idle, total };
  }
  return out;
}

/** CPU time (µs) of each process of `pids` still running, by pid. */
function cpuOfEach(pids) {
  const out = new Map();
  for (const pid of pids) {
    try {
      out.set(pid, processCpuMicros(pid));
    } catch {
      // ended between the listing and the reading
    }
  }
  return out;
}

/**
 * CPU readings at one instant: the proxy's and the mock's (µs), the driver's (µs), the side
 * processes' (`sidePids()`: PostgreSQL's and redis-server's, by pid), the cores'.
 */
function readCpu(proxyPid, mockPid, sidePids) {
  const own = process.cpuUsage();
  return {
    at: process.hrtime.bigint(),
    proxy: processCpuMicros(proxyPid),
    mock: processCpuMicros(mockPid),
    driver: own.user + own.system,
    side: cpuOfEach(sidePids?.() ?? []),
    cores: coreTimes(),
  };
}

/** The pids of the processes whose command line holds every one of `words` (PostgreSQL by its port). */
function pidsWith(words) {
  const out = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (words.every((w) => args.includes(w))) out.push(Number(entry));
    } catch {
      // ended meanwhile, or not ours to read
    }
  }
  return out;
}

/** A process's children (from /proc), or none when the kernel does not list them. */
function childrenOf(pid) {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/**
 * Waits until each core is under `QUIET_SHARE` busy over 300 ms (the bench's processes idle), at
 * most `maxMs`. Resolves with the time waited and the busiest core's share at the last reading.
 */
async function quietCores(maxMs) {
  const began = Date.now();
  for (;;) {
    const a = coreTimes();
    await new Promise((resolve) => setTimeout(resolve, 300));
    const b = coreTimes();
    const busiest = Math.max(
      ...Object.keys(b).map((k) =>
        a[k] && b[k].total > a[k].total ? (b[k].busy - a[k].busy) / (b[k].total - a[k].total) : 0,
      ),
    );
    const waited = Date.now() - began;
    if (busiest < QUIET_SHARE || waited >= maxMs) return { waitedMs: waited, busiest };
  }
}

/** Shares of a core between two readings: the proxy's, the driver's, the mock's, each core busy. */
function cpuBetween(a, b) {
  const wall = Number(b.at - a.at) / 1000;
  const share = (x) => (wall > 0 ? x / wall : null);
  const busy = (core) => {
    const [x, y] = [a.cores[core], b.cores[core]];
    return x && y && y.total > x.total ? (y.busy - x.busy) / (y.total - x.total) : null;
  };
  let side = 0;
  for (const [pid, micros] of b.side) if (a.side.has(pid)) side += micros - a.side.get(pid);
  return {
    proxy: share(b.proxy - a.proxy),
    driver: share(b.driver - a.driver),
    mock: share(b.mock - a.mock),
    side: share(side),
    driverCoreBusy: busy(String(DRIVER_CORE)),
    proxyCoreBusy: busy(String(PROXY_CORE)),
  };
}

/**
 * One open-loop step at `rate` requests a second: `warmMs` of warm-up, then `windowMs` measured.
 * Request i is due at start + i / rate; a 1 ms timer sends every due request. Resolves with the
 * window's p50 and p99 (µs from the intended send time), its errors, whether it passed, and the
 * CPU shares over the window (over the warm-up when the step stopped before its window).
 */
export async function openLoopStep(target, { rate, warmMs, windowMs, agent, proxyPid, mockPid, sidePids }) {
  agent.maxSockets = Math.min(MAX_SOCKETS, Math.max(8, Math.ceil((rate * P99_LIMIT_MICROS) / 1e6)));
  const interval = 1e9 / rate;
  const warmCount = Math.floor((rate * warmMs) / 1000);
  const windowCount = Math.max(1, Math.floor((rate * windowMs) / 1000));
  const total = warmCount + windowCount;
  // The window fails once more than this many of its requests came back late or failed.
  const allowedLate = windowCount - Math.floor(0.99 * windowCount) - 1;
  const latencies = new Float64Array(windowCount);
  let measured = 0;
  let windowLate = 0;
  let warmLate = 0;
  let errors = 0;
  let firstError;
  let sent = 0;
  let done = 0;
  let stopped = false;
  let stopReason;
  const pending = new Set();
  let lagMax = 0;
  const started = process.hrtime.bigint();
  let cpuStart = readCpu(proxyPid, mockPid, sidePids);
  let cpuEnd;
  const stop = (reason) => {
    if (stopped) return;
    stopped = true;
    stopReason = reason;
    cpuEnd = readCpu(proxyPid, mockPid, sidePids);
  };
  const finished = new Promise((resolveAll) => {
    const settle = () => {
      if (stopped && done === sent) resolveAll();
    };
    const sendOne = (i, intended) => {
      const inWindow = i >= warmCount;
      let over = false;
      const end = (ok, why) => {
        if (over) return;
        if (!ok) firstError ??= why;
        over = true;
        done++;
        pending.delete(req);
        const latency = Number(process.hrtime.bigint() - intended) / 1000;
        if (!ok) {
          errors++;
          if (inWindow) windowLate++;
          else warmLate++;
        } else if (inWindow) {
          latencies[measured++] = latency;
          if (latency >= P99_LIMIT_MICROS) windowLate++;
        } else if (latency >= P99_LIMIT_MICROS) warmLate++;
        if (!ok) stop('error');
        else if (inWindow && windowLate > allowedLate) stop('late');
        // Half the warm-up late: far past what the proxy carries (the window would fail at once).
        else if (!inWindow && warmLate > Math.max(5, warmCount / 2)) stop('late in warm-up');
        settle();
      };
      const req = request(
        { agent, host: '127.0.0.1', port: target.port, method: 'POST', path: target.path, headers: target.headers },
        (res) => {
          res.on('data', () => undefined);
          res.on('end', () => end(res.statusCode < 400, `status ${res.statusCode}`));
          res.on('error', (error) => end(false, error.code ?? error.message));
        },
      );
      pending.add(req);
      req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy(new Error('timeout')));
      req.on('error', (error) => end(false, error.code ?? error.message));
      req.end(target.body);
    };
    const tick = () => {
      if (stopped) return settle();
      const now = process.hrtime.bigint();
      const elapsed = Number(now - started);
      while (sent < total && sent * interval <= elapsed) {
        const intended = started + BigInt(Math.round(sent * interval));
        lagMax = Math.max(lagMax, Number(now - intended) / 1000);
        if (sent === warmCount) cpuStart = readCpu(proxyPid, mockPid, sidePids);
        sendOne(sent, intended);
        sent++;
      }
      if (sent >= total) {
        stop('done');
        settle();
      } else setTimeout(tick, 1);
    };
    tick();
  });
  // Every request ends within its timeout; what is left after it and a margin is torn down.
  let deadlineTimer;
  const deadline = new Promise((resolve) => {
    deadlineTimer = setTimeout(resolve, warmMs + windowMs + REQUEST_TIMEOUT_MS + 2000);
  });
  const outcome = await Promise.race([finished.then(() => 'done'), deadline.then(() => 'deadline')]);
  clearTimeout(deadlineTimer);
  if (outcome === 'deadline') {
    stop(stopReason ?? 'deadline');
    for (const req of pending) req.destroy(new Error('step deadline'));
    errors += pending.size;
  }
  const window = latencies.subarray(0, measured);
  const values = Array.from(window);
  const p99 = values.length > 0 ? percentile(values, 99) : null;
  const cpu = cpuBetween(cpuStart, cpuEnd ?? readCpu(proxyPid, mockPid, sidePids));
  const complete = measured + errors >= windowCount && stopReason === 'done';
  return {
    rate,
    requests: measured,
    errors,
    ...(firstError ? { firstError } : {}),
    p50Micros: values.length > 0 ? percentile(values, 50) : null,
    p99Micros: p99,
    stopped: stopReason,
    sendLagMaxMicros: lagMax,
    cpu,
    pass: complete && errors === 0 && p99 !== null && p99 < P99_LIMIT_MICROS,
  };
}

/** The load side's share of its core at a step (the driver's and the mock's CPU). */
const loadShare = (step) => (step?.cpu.driver ?? 0) + (step?.cpu.mock ?? 0);

/**
 * The largest share of a core that processes outside the bench took at a step: the proxy's core
 * less the proxy, the driver's core less the driver, the mock and the side processes.
 */
export const othersShare = (step) =>
  Math.max(
    (step?.cpu.proxyCoreBusy ?? 0) - (step?.cpu.proxy ?? 0),
    (step?.cpu.driverCoreBusy ?? 0) - loadShare(step) - (step?.cpu.side ?? 0),
  );

/**
 * The largest passing rate for one subject: geometric steps up from `startRate` by `factor` (down
 * when the first one fails) until the outcome changes, then bisection to within `precision`. With
 * a figure known (`near`), from `NEAR_START` of it by `NEAR_FACTOR`. At most `maxRate`: a subject
 * passing there is reported as capped. At the first failing step: the proxy's limit when it took
 * its core (`PROXY_LIMIT_SHARE`), else the machine's when other processes took a core
 * (`OTHERS_LIMIT_SHARE`), else the driver's when its core was busy (`DRIVER_LIMIT_SHARE`), else
 * the proxy's (its latency, not its CPU).
 */
export async function findCeiling(runStep, c, near) {
  const steps = [];
  let lo;
  let hi;
  const factor = near ? NEAR_FACTOR : c.factor;
  let rate = near ? Math.min(c.maxRate, Math.max(c.minRate, Math.round(near * NEAR_START))) : c.startRate;
  let first = true;
  const run = async (r) => {
    const step = await runStep(r, first ? c.firstWarmMs : c.warmMs);
    first = false;
    steps.push(step);
    await new Promise((resolve) => setTimeout(resolve, c.settleMs));
    return step;
  };
  // Up until a failure (or the cap).
  for (;;) {
    const step = await run(rate);
    if (step.pass) lo = step;
    else {
      hi = step;
      break;
    }
    if (rate >= c.maxRate) break;
    rate = Math.min(c.maxRate, Math.round(rate * factor));
  }
  // The first rate failed: down until one passes (or the floor).
  while (!lo && rate > c.minRate) {
    rate = Math.max(c.minRate, Math.round(rate / factor));
    const step = await run(rate);
    if (step.pass) lo = step;
    else hi = step;
  }
  // Bisect (geometrically) between the last pass and the first fail.
  while (lo && hi && hi.rate / lo.rate > c.precision) {
    const mid = Math.round(Math.sqrt(lo.rate * hi.rate));
    if (mid <= lo.rate || mid >= hi.rate) break;
    const step = await run(mid);
    if (step.pass) lo = step;
    else hi = step;
  }
  const limitedBy = !lo
    ? 'none passed'
    : !hi
      ? 'cap'
      : (hi.cpu.proxy ?? 0) >= PROXY_LIMIT_SHARE
        ? 'proxy'
        : othersShare(hi) >= OTHERS_LIMIT_SHARE
          ? 'contended'
          : loadShare(hi) >= DRIVER_LIMIT_SHARE || (hi.cpu.driverCoreBusy ?? 0) >= DRIVER_LIMIT_SHARE
            ? 'driver'
            : 'proxy';
  return {
    rate: lo?.rate ?? 0,
    limitedBy,
    at: lo ?? null,
    firstFail: hi ?? null,
    steps: steps.length,
  };
}

/** A step in a log line: p99, errors, why it stopped, the CPU shares. */
const describeStep = (step) =>
  step
    ? `others ${Math.round(othersShare(step) * 100)} %, p99 ${step.p99Micros === null ? '—' : `${(step.p99Micros / 1000).toFixed(1)} ms`}, ${step.errors} errors${step.firstError ? ` (${step.firstError})` : ''}, ${step.stopped}, proxy CPU ${Math.round((step.cpu.proxy ?? 0) * 100)} %,${step.cpu.side ? ` PostgreSQL + Redis ${Math.round(step.cpu.side * 100)} %,` : ''} driver + mock ${Math.round(loadShare(step) * 100)} %, cores busy: proxy's ${Math.round((step.cpu.proxyCoreBusy ?? 0) * 100)} %, driver's ${Math.round((step.cpu.driverCoreBusy ?? 0) * 100)} %, send lag ≤ ${((step.sendLagMaxMicros ?? 0) / 1000).toFixed(1)} ms`
    : '—';

/** The subjects in the order of round `r`, rotated so that none always goes first. */
const rotate = (list, r) => [...list.slice(r % list.length), ...list.slice(0, r % list.length)];

/** The paths measured, and which subjects carry each. */
const PATHS = {
  passThrough: '/v1/messages pass-through, non-streaming',
  mcpCached: 'MCP tools/call, jwt_header, cached token',
  conversion: '/v1/chat/completions, non-streaming, converted to /v1/messages',
};

const exited = (child) =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve()
    : new Promise((resolve) => child.once('exit', resolve));

/**
 * Runs the saturation searches. `startProcess(script, env)` starts a bench script (resolves
 * `{ child, port }`); `startGateway(config, env)` this gateway on a file config with extra
 * environment; `gatewayConfig(mockPort)` that config for a mock on `mockPort`; `apiKey` a caller
 * key of it and `mcpKey` one with an MCP identity; `withPortkey` whether the peer runs (installed
 * on first use: a failure to install leaves it out, with the reason).
 */
export async function saturationBenchmarks({
  startProcess,
  startGateway,
  gatewayConfig,
  apiKey,
  mcpKey,
  withPortkey,
  mode,
  log = () => undefined,
}) {
  const c = saturationCounts(mode);
  const began = Date.now();
  const plan = pinningPlan();
  const started = [];
  const infra = [];
  const out = {
    upstreamDelayMs: UPSTREAM_DELAY_MS,
    p99LimitMicros: P99_LIMIT_MICROS,
    pinned: plan.pinned,
    pinning: plan.note,
    counts: c,
    portkey: { included: false, label: PORTKEY.label, version: PORTKEY.version },
    paths: {},
  };
  log(`saturation: ${plan.note}`);
  try {
    if (plan.pinned) pin(process.pid, DRIVER_CORE);
    const toProxyCore = (proc) => {
      if (plan.pinned) pin(proc.child.pid, PROXY_CORE);
      return proc;
    };
    const keep = (proc) => {
      started.push(proc);
      return proc;
    };
    const mock = keep(await startProcess(join(here, 'mocks.mjs'), { MOCK_DELAY_MS: String(UPSTREAM_DELAY_MS) }));
    const bare = toProxyCore(
      keep(await startProcess(join(here, 'bare-proxy.mjs'), { TARGET_PORT: String(mock.port) })),
    );
    const config = gatewayConfig(mock.port);
    const subjects = [];
    // (a) production: PostgreSQL and redis-server of its own, on the driver's core.
    const redisBinary = redisServerPath();
    if (!redisBinary) throw new Error('the production shape needs redis-server (apt-get install -y redis-server)');
    const [postgres, redis] = await Promise.all([startPostgres(), startRedis(redisBinary)]);
    infra.push(postgres, { stop: async () => (redis.child.kill('SIGTERM'), exited(redis.child)) });
    // PostgreSQL's processes (the server, found by its port, and its children) and redis-server's:
    // their CPU is read with the production shape's steps.
    const postgresPort = new URL(postgres.url).port;
    const productionSide = () => {
      const servers = pidsWith(['-p', postgresPort]).filter((pid) => pid !== process.pid);
      return [...new Set([redis.child.pid, ...servers, ...servers.flatMap(childrenOf)])];
    };
    const production = toProxyCore(
      keep(await startGateway(config, { ...GATEWAY_ENV, DATABASE_URL: postgres.url, REDIS_URL: redis.url })),
    );
    // (b) embedded: an empty data directory (the first start creates the database).
    const embedded = toProxyCore(
      keep(
        await startGateway(config, {
          ...GATEWAY_ENV,
          GATEWAY_DATA_DIR: join(mkdtempSync(join(tmpdir(), 'gw-bench-sat-')), 'data'),
        }),
      ),
    );
    const native = {
      max_tokens: 64,
      system: [{ type: 'text', text: 'Be brief.' }],
      messages: [{ role: 'user', content: 'Say something.' }],
    };
    const conversation = {
      max_tokens: 64,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Say something.' },
      ],
    };
    const mcpCall = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}';
    const ours = (port) => ({
      passThrough: {
        port,
        path: '/v1/messages',
        body: JSON.stringify({ model: '@bench/claude-sonnet-4-5', ...native }),
        headers: { ...json, 'x-gateway-api-key': apiKey },
      },
      mcpCached: { port, path: '/mcp/tools', body: mcpCall, headers: { ...json, 'x-gateway-api-key': mcpKey } },
      conversion: {
        port,
        path: '/v1/chat/completions',
        body: JSON.stringify({ model: '@bench/claude-sonnet-4-5', ...conversation }),
        headers: { ...json, 'x-gateway-api-key': apiKey },
      },
    });
    subjects.push(
      {
        key: 'production',
        shape: 'production',
        label: 'this gateway, production (PostgreSQL + Redis, records stored, trace export off)',
        proc: production,
        sidePids: productionSide,
        targets: ours(production.port),
      },
      {
        key: 'embedded',
        shape: 'embedded',
        label: 'this gateway, embedded database (PGlite, records stored)',
        proc: embedded,
        targets: ours(embedded.port),
      },
      {
        key: 'bare',
        shape: 'bare proxy',
        label: 'bare node:http proxy',
        proc: bare,
        targets: {
          passThrough: {
            port: bare.port,
            path: '/v1/messages',
            body: JSON.stringify({ model: 'claude-sonnet-4-5', ...native }),
            headers: json,
          },
        },
      },
    );
    // (d) the peer, as the peers section starts it.
    if (withPortkey) {
      try {
        const server = ensurePortkey(log);
        const peer = toProxyCore(keep(await startPortkey(server)));
        // The peer reaches the mock as Anthropic; each path adds the key the way its API carries it.
        const toMock = {
          ...json,
          'x-portkey-provider': 'anthropic',
          'x-portkey-custom-host': `http://127.0.0.1:${mock.port}/v1`,
        };
        subjects.push({
          key: 'portkey',
          shape: 'Portkey',
          label: `${PORTKEY.label} ${PORTKEY.version}`,
          proc: peer,
          targets: {
            passThrough: {
              port: peer.port,
              path: '/v1/messages',
              body: JSON.stringify({ model: 'claude-sonnet-4-5', ...native }),
              headers: { ...toMock, 'x-api-key': 'sk-bench', 'anthropic-version': '2023-06-01' },
            },
            conversion: {
              port: peer.port,
              path: '/v1/chat/completions',
              body: JSON.stringify({ model: 'claude-sonnet-4-5', ...conversation }),
              headers: { ...toMock, authorization: 'Bearer sk-bench' },
            },
          },
        });
        out.portkey.included = true;
      } catch (error) {
        out.portkey.skipped = `could not be installed or started: ${error.message.split('\n')[0]}`;
        log(`saturation: ${PORTKEY.label} left out: ${out.portkey.skipped}`);
      }
    } else out.portkey.skipped = 'not asked for (the peers section does not run: --peers or --only saturation)';

    // Every subject answers with the mock's message (or the MCP result) before anything is measured.
    for (const s of subjects) {
      await checkReachesMock(s.label, [['messages', s.targets.passThrough]]);
      if (s.targets.conversion) await checkReachesMock(s.label, [['chatJson', s.targets.conversion]]);
      if (s.targets.mcpCached) {
        const { status, body } = await probe(s.targets.mcpCached);
        if (status !== 200 || body?.result?.content?.[0]?.text !== 'ok')
          throw new Error(`${s.label}: MCP tools/call answered ${status}: ${JSON.stringify(body).slice(0, 300)}`);
      }
    }
    log(`saturation: ${subjects.map((s) => s.key).join(', ')} reach the mock (${UPSTREAM_DELAY_MS} ms)`);

    const agents = new Map(subjects.map((s) => [s.key, driverAgent()]));
    const search = async (s, path, near) => {
      const quiet = await quietCores(c.quietWaitMs);
      const found = await findCeiling(
        (rate, warmMs) =>
          openLoopStep(s.targets[path], {
            rate,
            warmMs,
            windowMs: c.windowMs,
            agent: agents.get(s.key),
            proxyPid: s.proc.child.pid,
            mockPid: mock.child.pid,
            sidePids: s.sidePids,
          }),
        c,
        near,
      );
      return { ...found, quiet };
    };
    const paths = c.extraPathRounds > 0 ? Object.keys(PATHS) : ['passThrough'];
    try {
      for (const path of paths) {
        const those = subjects.filter((s) => s.targets[path]);
        const rounds = Object.fromEntries(those.map((s) => [s.key, []]));
        const roundCount = path === 'passThrough' ? c.rounds : c.extraPathRounds;
        for (let r = 0; r < roundCount; r++) {
          for (const s of rotate(those, r)) {
            // The subject's first figure on this path, else its pass-through figure: where to start.
            const known = rounds[s.key][0]?.rate || out.paths.passThrough?.subjects[s.key]?.rate.median;
            const found = await search(s, path, known > 0 ? known : undefined);
            rounds[s.key].push(found);
            log(
              `saturation: ${path} round ${r + 1}/${roundCount}, ${s.key}: ${found.limitedBy === 'proxy' ? '' : '≥ '}${found.rate}/s (${found.limitedBy}; ${describeStep(found.at)}; first fail ${found.firstFail ? `${found.firstFail.rate}/s: ${describeStep(found.firstFail)}` : 'none'}; ${found.steps} steps; waited ${found.quiet.waitedMs} ms for quiet cores)`,
            );
          }
        }
        out.paths[path] = summarise(PATHS[path], those, rounds, out.paths.passThrough);
      }
    } finally {
      for (const agent of agents.values()) agent.destroy();
    }
  } finally {
    for (const proc of started) proc.child.kill('SIGTERM');
    await Promise.all(started.map((proc) => exited(proc.child)));
    for (const i of infra) await i.stop();
    if (plan.pinned) {
      try {
        pin(process.pid, plan.restore);
      } catch (error) {
        log(`saturation: ${error.message}`);
      }
    }
  }
  out.durationSeconds = (Date.now() - began) / 1000;
  return out;
}

/**
 * One path's figures: per subject the rate found each round (median, lowest, highest), p50, p99
 * and CPU at it (median of rounds), how the search ended each round, and each subject's rate over
 * the bare proxy's and over Portkey's of the same round. On a path the bare proxy does not carry,
 * the ratio is to its pass-through figure (`passThrough`: that path's summary; median of rounds).
 */
export function summarise(label, subjects, rounds, passThrough) {
  const med = (list, f) => summary(list.map(f).filter((v) => v !== null && v !== undefined)).median;
  const result = { label, subjects: {} };
  for (const s of subjects) {
    const list = rounds[s.key];
    const count = (why) => list.filter((x) => x.limitedBy === why).length;
    // The bound most rounds share, when most are bounded by something else than the proxy.
    const bounds = ['driver', 'contended', 'cap'];
    const bounded = bounds.reduce((n, why) => n + count(why), 0) * 2 > list.length;
    const bound = bounded ? bounds.reduce((a, b) => (count(b) > count(a) ? b : a)) : null;
    const ratioTo = (other) => {
      if (rounds[other])
        return summary(list.map((x, i) => (rounds[other][i]?.rate > 0 ? x.rate / rounds[other][i].rate : null)));
      const floor = other === 'bare' ? passThrough?.subjects.bare?.rate.median : undefined;
      return floor > 0 ? { ...summary(list.map((x) => x.rate / floor)), toPassThrough: true } : null;
    };
    result.subjects[s.key] = {
      shape: s.shape,
      label: s.label,
      rate: summary(list.map((x) => x.rate)),
      // A figure most of whose rounds the driver (or the search's cap) bounded is a lower bound.
      lowerBound: bound,
      limitedBy: list.map((x) => x.limitedBy),
      p50Micros: med(list, (x) => x.at?.p50Micros),
      p99Micros: med(list, (x) => x.at?.p99Micros),
      proxyCpu: med(list, (x) => x.at?.cpu.proxy),
      driverCpu: med(list, (x) => x.at?.cpu.driver),
      mockCpu: med(list, (x) => x.at?.cpu.mock),
      sideCpu: med(list, (x) => x.at?.cpu.side),
      driverCoreBusy: med(list, (x) => x.at?.cpu.driverCoreBusy),
      proxyCoreBusy: med(list, (x) => x.at?.cpu.proxyCoreBusy),
      firstFailRate: med(list, (x) => x.firstFail?.rate),
      steps: list.map((x) => x.steps),
      overBare: s.key === 'bare' ? null : ratioTo('bare'),
      overPortkey: s.key === 'portkey' ? null : ratioTo('portkey'),
    };
  }
  return result;
}

const BOUND_NOTE = {
  driver: 'driver-limited',
  contended: 'cores shared with other processes',
  cap: "the search's cap",
};
const whole = (v) => Math.round(v).toLocaleString('en');
const fmtRate = (s, bound) =>
  s.median === null
    ? '—'
    : `${bound ? '≥ ' : ''}${whole(s.median)}/s${s.min === s.max ? '' : ` (${whole(s.min)} – ${whole(s.max)})`}${bound ? ` (${BOUND_NOTE[bound]})` : ''}`;
/** A ratio of two figures, either of which may be a lower bound: "≥", "≤", or "?" when both are. */
const fmtRatio = (r, top, bottom) => {
  if (!r || r.median === null) return '—';
  const sign = top && bottom ? '? ' : top ? '≥ ' : bottom ? '≤ ' : '';
  return `${sign}${r.median.toFixed(2)}×${r.min === r.max ? '' : ` (${r.min.toFixed(2)} – ${r.max.toFixed(2)})`}`;
};
const pct = (v) => (v === null || v === undefined ? '—' : `${Math.round(v * 100)} %`);
const msOf = (v) => (v === null || v === undefined ? '—' : `${(v / 1000).toFixed(1)} ms`);

/** How the figures were read, for the report. */
function method(result) {
  const c = result.counts;
  const rounds = (n) => `${n} round${n === 1 ? '' : 's'}`;
  return [
    `The largest request rate one core sustains with a ${result.upstreamDelayMs} ms upstream and p99 under ${result.p99LimitMicros / 1000} ms, in the same run for this gateway in both shapes, the bare node:http proxy and the peer gateway on \`/v1/messages\` pass-through (non-streaming; the mock answers like Anthropic, ${result.upstreamDelayMs} ms after each request, on a timer)${result.counts.extraPathRounds > 0 ? ', and for this gateway on MCP `tools/call` and `/v1/chat/completions` (converted; the peer too)' : ''}.`,
    result.pinned
      ? `Pinning: ${result.pinning}. Each proxy runs alone on its core while it is measured (the others idle).`
      : `**Not pinned**: ${result.pinning}; the figures share the machine with the driver.`,
    `Open-loop load: request i leaves at start + i / rate whatever the answers, over a keep-alive agent of rate × 100 ms sockets (at most ${MAX_SOCKETS}; this gateway runs with MAX_CONNECTIONS_PER_IP=${MAX_SOCKETS}, the driver standing for many clients); latency runs from each request's intended send time, so queueing shows.`,
    `A step is ${c.warmMs} ms of warm-up (${c.firstWarmMs} ms for a search's first) then ${c.windowMs} ms measured; it passes with p99 < ${result.p99LimitMicros / 1000} ms and no error (an error status, a reset, or no answer within ${REQUEST_TIMEOUT_MS / 1000} s), and stops early once it cannot pass. The search steps up ×${c.factor} from ${c.startRate}/s (a later round, or another path, from ${NEAR_START}× the subject's first figure, ×${NEAR_FACTOR}) until a step fails, then bisects between the last pass and the first fail to within ${Math.round((c.precision - 1) * 100)} %; the figure is the last passing rate, with its p50, p99 and CPU (/proc, share of one core over the window).`,
    `Before each search the cores must idle (each under ${Math.round(QUIET_SHARE * 100)} % busy, waiting at most ${c.quietWaitMs / 1000} s). "driver-limited": at the first failing step the driver's core was ≥ ${Math.round(DRIVER_LIMIT_SHARE * 100)} % busy (or the driver and the mock took that much); "cores shared with other processes": processes outside the bench took ≥ ${Math.round(OTHERS_LIMIT_SHARE * 100)} % of either core there (/proc/stat less the bench's processes, PostgreSQL's and redis-server's included); either way the figure is a lower bound of the proxy's. A proxy that took ≥ ${Math.round(PROXY_LIMIT_SHARE * 100)} % of its core at the first failing step is its own limit whatever else ran. ${rounds(c.rounds)} on pass-through${c.extraPathRounds > 0 ? ` and ${rounds(c.extraPathRounds)} on the other paths` : ''}, the subjects in rotating order; median round (lowest – highest); ratios are taken round by round (≤ or ≥ when one side is a lower bound).`,
  ].join(' ');
}

/** The saturation section of the report (markdown lines); empty when it did not run. */
export function renderSaturation(result) {
  if (!result?.paths) return [];
  const lines = ['## Saturation: one core, 20 ms upstream', '', method(result), ''];
  if (!result.portkey.included)
    lines.push(`${result.portkey.label} ${result.portkey.version}: not measured (${result.portkey.skipped}).`, '');
  for (const path of Object.values(result.paths)) {
    const bare = path.subjects.bare ?? result.paths.passThrough?.subjects.bare;
    const peer = path.subjects.portkey;
    lines.push(
      `### ${path.label}`,
      '',
      '| subject | shape | rate at p99 < 100 ms | p50 / p99 there | proxy CPU there | driver + mock CPU there | PostgreSQL + Redis CPU there | × bare proxy | × Portkey |',
      '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
      ...Object.values(path.subjects).map(
        (s) =>
          `| ${s.label} | ${s.shape} | ${fmtRate(s.rate, s.lowerBound)} | ${msOf(s.p50Micros)} / ${msOf(s.p99Micros)} | ${pct(s.proxyCpu)} | ${pct((s.driverCpu ?? 0) + (s.mockCpu ?? 0))} | ${s.shape === 'production' ? pct(s.sideCpu) : '—'} | ${bare ? `${fmtRatio(s.overBare, s.lowerBound, bare.lowerBound)}${s.overBare?.toPassThrough ? ' (its pass-through)' : ''}` : '—'} | ${peer ? fmtRatio(s.overPortkey, s.lowerBound, peer.lowerBound) : '—'} |`,
      ),
      '',
    );
  }
  return lines;
}

// Side-by-side measurements of the gateway's features: the response cache, access policies,
// tracing and request records. Every comparison runs two subjects (two gateways, or two kinds of
// request to one gateway) and the bare node:http proxy in the same interleaved rounds, so each
// figure comes with the floor it was measured against.
import { spawn, spawnSync } from 'node:child_process';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { closedLoop, median, percentile, processCpuMicros } from './lib.mjs';

const summary = (values) => ({ median: median(values), min: Math.min(...values), max: Math.max(...values) });
const p50 = async (target, count) => median((await closedLoop(target, { connections: 1, count })).map((s) => s.total));

/** The subjects of round `r` in turn: `[a, b, floor]` rotated, so that none always goes first. */
function rotation(r) {
  const sides = ['a', 'b', 'floor'];
  return [...sides.slice(r % 3), ...sides.slice(0, r % 3)];
}

/**
 * Two subjects `a` and `b` against the bare proxy (`floor`) and the mock upstream (`direct`) in
 * the same rounds. At 1 connection each round measures the p50 of a, b and the floor (in rotating
 * order), then of the direct path; at 10 connections each round reads the CPU per request of a, b
 * and the floor (rotating too). Reports medians of rounds with min – max, and per-round
 * differences and ratios:
 * - `added`: p50 minus the direct p50 of the same round (what the hop adds);
 * - `bMinusA`, `bMinusFloor`: p50 differences of the same round;
 * - `ratio.addedP50`: b's added p50 over a's; `ratio.cpu`: b's CPU per request over a's.
 *
 * A path: `{ name, label, a: { label, pid, target }, b: { label, pid, target }, floor: { pid, target }, direct }`.
 */
export async function sideBySide(paths, c) {
  for (const path of paths) {
    for (const side of ['a', 'b', 'floor']) await closedLoop(path[side].target, { connections: 10, count: c.cpuWarm });
    for (const side of ['a', 'b', 'floor']) await closedLoop(path[side].target, { connections: 1, count: c.warm });
  }
  const out = {};
  for (const path of paths) {
    const p = { a: [], b: [], floor: [], direct: [] };
    for (let r = 0; r < c.rounds; r++) {
      for (const side of rotation(r)) p[side].push(await p50(path[side].target, c.latency));
      p.direct.push(await p50(path.direct, c.latency));
    }
    const cpu = { a: [], b: [], floor: [] };
    for (let r = 0; r < c.cpuRounds; r++) {
      for (const side of rotation(r)) {
        const before = processCpuMicros(path[side].pid);
        await closedLoop(path[side].target, { connections: 10, count: c.cpu });
        cpu[side].push((processCpuMicros(path[side].pid) - before) / c.cpu);
      }
    }
    const rounds = p.a.map((_, i) => i);
    const cpuRounds = cpu.a.map((_, i) => i);
    out[path.name] = {
      label: path.label,
      a: path.a.label,
      b: path.b.label,
      p50Micros: { a: summary(p.a), b: summary(p.b), floor: summary(p.floor), direct: summary(p.direct) },
      addedP50Micros: {
        a: summary(rounds.map((i) => p.a[i] - p.direct[i])),
        b: summary(rounds.map((i) => p.b[i] - p.direct[i])),
        floor: summary(rounds.map((i) => p.floor[i] - p.direct[i])),
      },
      bMinusAMicros: summary(rounds.map((i) => p.b[i] - p.a[i])),
      bMinusFloorMicros: summary(rounds.map((i) => p.b[i] - p.floor[i])),
      cpuMicrosPerRequest: { a: summary(cpu.a), b: summary(cpu.b), floor: summary(cpu.floor) },
      ratio: {
        addedP50: summary(rounds.map((i) => (p.b[i] - p.direct[i]) / (p.a[i] - p.direct[i]))),
        cpu: summary(cpuRounds.map((i) => cpu.b[i] / cpu.a[i])),
        cpuOverFloor: summary(cpuRounds.map((i) => cpu.b[i] / cpu.floor[i])),
      },
    };
  }
  return out;
}

/** A free TCP port on 127.0.0.1. */
export async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Where `redis-server` is, or undefined when it is not installed (Debian: `apt-get install redis-server`). */
export function redisServerPath() {
  for (const candidate of ['/usr/bin/redis-server', '/usr/local/bin/redis-server']) {
    if (spawnSync(candidate, ['--version'], { timeout: 5000 }).status === 0) return candidate;
  }
  const found = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8', timeout: 5000 });
  return found.status === 0 && found.stdout.trim() ? found.stdout.trim() : undefined;
}

/** A throwaway redis-server on 127.0.0.1 and a free port, without persistence; resolves when it accepts. */
export async function startRedis(binary) {
  const port = await freePort();
  const child = spawn(binary, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('redis-server did not start within 10 s')), 10_000);
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line.includes('Ready to accept')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`redis-server exited with ${code}`)));
  });
  child.stdout.resume();
  return { child, port, url: `redis://127.0.0.1:${port}` };
}

/** The request-record figures of a gateway's `/metrics`. */
export function scrapeRecords(port) {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/metrics', timeout: 5000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => {
        const value = (name) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+]+)$`, 'm').exec(text)?.[1] ?? NaN);
        resolve({
          queued: value('gateway_request_records_queued'),
          written: value('gateway_request_records_written_total'),
          dropped: value('gateway_request_records_dropped_total'),
        });
      });
    });
    req.on('timeout', () => req.destroy(new Error('/metrics did not answer within 5 s')));
    req.on('error', reject);
    req.end();
  });
}

/** How often the gateway's request-record writer flushes its queue (its default, 1 s). */
const RECORD_FLUSH_SECONDS = 1;
/** Records in one insert of the writer (500). */
const RECORD_BATCH = 500;

/**
 * Whether the request-record queue kept up with the load `r` measured: nothing dropped, every
 * request written, and no backlog. The queue fills for one flush interval and empties at each
 * flush, so it holds up to a second's worth of records (2,700 at 2,700 requests a second) by
 * design; it grows when its peak in the second half of the load passes both its peak in the
 * first half and one interval's worth, or when more than one interval's worth is left at the end
 * (each plus one insert batch).
 */
export function recordsKeptUp(r) {
  const interval = Math.ceil(r.requestsPerSecond * RECORD_FLUSH_SECONDS);
  return (
    r.dropped === 0 &&
    r.written >= r.requests &&
    r.secondHalfMaxQueued <= Math.max(r.firstHalfMaxQueued, interval) + RECORD_BATCH &&
    r.queuedAtEnd <= interval + RECORD_BATCH
  );
}

/**
 * Request records at the bench's highest rate: `count` requests at 10 connections while
 * `/metrics` is read every `everyMs`; then waits (at most 10 s) for the queue to drain.
 * {@link recordsKeptUp} says whether the queue kept up.
 */
export async function recordQueue(port, target, count, everyMs = 250) {
  const start = await scrapeRecords(port);
  const samples = [];
  let loading = true;
  const sampler = (async () => {
    while (loading) {
      await new Promise((resolve) => setTimeout(resolve, everyMs));
      if (loading) samples.push((await scrapeRecords(port)).queued);
    }
  })();
  const started = process.hrtime.bigint();
  const totals = (await closedLoop(target, { connections: 10, count })).map((s) => s.total);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  loading = false;
  await sampler;
  const atEnd = await scrapeRecords(port);
  let drained = atEnd;
  const drainStarted = Date.now();
  while (drained.written - start.written < count && Date.now() - drainStarted < 10_000) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    drained = await scrapeRecords(port);
  }
  const half = Math.floor(samples.length / 2);
  const firstHalfMax = Math.max(0, ...samples.slice(0, half));
  const secondHalfMax = Math.max(0, ...samples.slice(half));
  const written = drained.written - start.written;
  const dropped = drained.dropped - start.dropped;
  const result = {
    requests: count,
    seconds,
    requestsPerSecond: count / seconds,
    p50Micros: median(totals),
    p99Micros: percentile(totals, 99),
    samples: samples.length,
    firstHalfMaxQueued: firstHalfMax,
    secondHalfMaxQueued: secondHalfMax,
    queuedAtEnd: atEnd.queued,
    drainMillis: Date.now() - drainStarted,
    written,
    dropped,
  };
  return { ...result, keptUp: recordsKeptUp(result) };
}

/**
 * The access-policy config: the gateway's config with 1,000 more API keys (each in one of 100
 * groups) and 100 policies naming those groups and ten users each (of the same group, so that each
 * caller's union is its group's policy); half allow the `tools` MCP
 * server whole, half only its tools `tool_0*` (100 of the mock's 200: a tool gate). Key 0 (group
 * `team-000`) may use every model and tool; key 50 (`team-050`) is gated.
 */
export function accessConfig(fileConfig, mode) {
  const keys = Array.from({ length: 1000 }, (_, i) => ({
    key: accessKey(i),
    user: {
      user_id: `acl-u${i}`,
      email: `acl-u${i}@example.com`,
      groups: [`team-${String(i % 100).padStart(3, '0')}`],
    },
  }));
  const policies = Array.from({ length: 100 }, (_, i) => ({
    slug: `team-${String(i).padStart(3, '0')}`,
    name: `Team ${i}`,
    subjects: {
      groups: [`team-${String(i).padStart(3, '0')}`],
      users: Array.from({ length: 10 }, (_, j) => `acl-u${i + 100 * j}`),
    },
    allow: {
      models: i % 2 === 0 ? ['@bench/claude-*'] : ['@bench/claude-sonnet-*', `@team-${i}/*`],
      mcpServers: i < 50 ? [{ server: 'tools' }] : [{ server: 'tools', tools: ['tool_0*', 'echo'] }],
      integrations: ['kb'],
    },
  }));
  return {
    ...fileConfig,
    auth: { ...fileConfig.auth, apiKeys: [...fileConfig.auth.apiKeys, ...keys] },
    access: { mode },
    policies,
  };
}

/** The API key of access caller `i` (see {@link accessConfig}). */
export function accessKey(i) {
  return `gw-bench-acl-${String(i).padStart(6, '0')}`;
}

/**
 * One request outside the measurements, to check that a subject does what its row says (a cache
 * hit is a hit, a tool gate filters): answers the status, the headers and the parsed JSON body.
 */
export async function probe(target) {
  const response = await fetch(`http://127.0.0.1:${target.port}${target.path}`, {
    method: 'POST',
    headers: target.headers,
    body: target.body,
    signal: globalThis.AbortSignal.timeout(10_000),
  });
  const text = await response.text();
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: response.status, headers: response.headers, body };
}

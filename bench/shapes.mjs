// The gateway in the shapes operators run it, each against the bare node:http proxy of the same
// rounds:
// - `production`: DATABASE_URL (a PostgreSQL server started here) and REDIS_URL (a redis-server
//   started here), request records stored (the default), trace export off;
// - `embedded`: the embedded database (PGlite) in a data directory, records stored there.
// Each shape's gateway starts on an empty database (its first start), then every figure is read in
// interleaved rounds (the shapes and the bare proxy in rotating order), reported as the median
// round with the lowest and highest, and checked against its target.
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closedLoop, median, peakRss, currentRss, processCpuMicros, removeWhenExited, send } from './lib.mjs';
import { freePort, redisServerPath, startRedis } from './features.mjs';

/** The shapes this runner knows, in the order they are measured. */
export const SHAPES = ['production', 'embedded'];

const summary = (values) => ({ median: median(values), min: Math.min(...values), max: Math.max(...values) });

/** The targets, per figure (ratios to the bare proxy of the same round; embedded: + 0.3 on latency). */
const CPU_TARGETS = { passThrough: 1.5, bedrock: 1.5, conversion: 1.7, mcpCached: 1.8 };
const LATENCY_TARGETS = { passThrough: 1.5, conversion: 1.7, mcpCached: 1.8 };
const EMBEDDED_LATENCY_EXTRA = 0.3;
/** The floor a path without one of its own is read against: the path whose work it extends. */
const FLOOR_STANDS_IN = { conversion: 'passThrough' };
const EMBEDDED_CPU_OVER_PRODUCTION_MICROS = 40;
/**
 * How long a CPU round waits, after its last answer, before reading the process's CPU: the gateway
 * (and the contract floor) write the round's request records once a second, so a round read at
 * its last answer would count that write only when the timer happened to fire inside it.
 */
const RECORD_WRITE_SETTLE_MS = 1_150;
const IDLE_TTFB_OVER_BARE_MICROS = 500;
const MEMORY_TARGETS_MB = {
  production: { settled: 100 },
  embedded: { firstStartPeak: 300, settled: 160 },
};

/**
 * A PostgreSQL server of its own on 127.0.0.1, as the catalog's tests start one
 * (packages/catalog/test/postgres.ts): initdb into a temporary directory, trust authentication,
 * fsync off; as root, run as the `postgres` user. Resolves with its URL and a stop function.
 */
export async function startPostgres() {
  const root = '/usr/lib/postgresql';
  const version = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(join(root, v, 'bin', 'postgres')))
        .sort((a, b) => Number(b) - Number(a))[0]
    : undefined;
  if (!version) throw new Error('no PostgreSQL server on this machine (apt-get install -y postgresql)');
  const bin = join(root, version, 'bin');
  const dir = mkdtempSync(join(tmpdir(), 'gw-bench-pg-'));
  chmodSync(dir, 0o777);
  const data = join(dir, 'data');
  const asUser = process.getuid?.() === 0 ? ['runuser', '-u', 'postgres', '--'] : [];
  const command = (file, args) => [...asUser, join(bin, file), ...args];
  const [initdb, ...initArgs] = command('initdb', [
    '-D',
    data,
    '-U',
    'gateway',
    '--auth=trust',
    '-E',
    'UTF8',
    '--no-sync',
  ]);
  execFileSync(initdb, initArgs, { stdio: 'pipe', timeout: 60_000 });
  const port = await freePort();
  const [file, ...args] = command('postgres', [
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
  ]);
  const child = spawn(file, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  removeWhenExited(child, dir);
  await new Promise((resolve, reject) => {
    let log = '';
    const timer = setTimeout(() => reject(new Error(`PostgreSQL did not start: ${log}`)), 20_000);
    child.stderr.on('data', (chunk) => {
      log += chunk;
      if (log.includes('ready to accept connections')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`PostgreSQL exited with ${code}: ${log}`)));
  });
  child.stderr.resume();
  return {
    url: `postgres://gateway@127.0.0.1:${port}/postgres`,
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      // The server's own pid (runuser does not pass signals on): SIGINT is a fast shutdown.
      const pid = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
      process.kill(pid, 'SIGINT');
      await exited;
    },
  };
}

/** Starts a gateway and reads its memory: the peak of its first start, and resident after 2 s. */
async function startShape(name, startGateway) {
  const started = Date.now();
  const proc = await startGateway();
  const startMillis = Date.now() - started;
  const firstStartPeak = peakRss(proc.child.pid);
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  return { name, proc, startMillis, firstStartPeak, settled: currentRss(proc.child.pid) };
}

/** The subjects in the order of round `r`, rotated so that none always goes first. */
const rotate = (list, r) => [...list.slice(r % list.length), ...list.slice(0, r % list.length)];

/** Median time to first byte of `n` requests, each sent after 20 ms without traffic. */
async function idleTtfb(target, n) {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const ttfbs = [];
  try {
    for (let i = 0; i < n; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      const sample = await send(agent, target);
      if (sample.status >= 400) throw new Error(`${target.path} answered ${sample.status}`);
      ttfbs.push(sample.ttfb);
    }
  } finally {
    agent.destroy();
  }
  return median(ttfbs);
}

/**
 * Runs the shapes side by side. `paths(port)` gives a shape gateway's targets by name; `floors`
 * the bare proxy's for the same names (the same upstream call); `direct` the mock's; `idle` the
 * paced stream whose first byte is timed after 20 ms idle (`gateway(port)`, `bare`).
 */
export async function shapeBenchmarks({
  shapes,
  startGatewayWith,
  bare,
  paths,
  floors,
  direct,
  idle,
  counts,
  log,
  baseline,
  contractFloor,
}) {
  const infra = [];
  const running = [];
  let floorSubject;
  // With a baseline (`{ label, main }`: an earlier build), each shape also runs on it, in the same
  // rounds: before and after, measured together.
  const builds = [
    { suffix: '', main: undefined },
    ...(baseline ? [{ suffix: ` (${baseline.label})`, main: baseline.main }] : []),
  ];
  try {
    for (const shape of shapes) {
      if (shape === 'production') {
        const redisBinary = redisServerPath();
        if (!redisBinary) throw new Error('the production shape needs redis-server (apt-get install -y redis-server)');
        const [postgres, redis] = await Promise.all([startPostgres(), startRedis(redisBinary)]);
        infra.push(postgres, { stop: async () => redis.child.kill('SIGTERM') });
        // The contract's floor (bench/contract-floor.mjs) stores its records in the same PostgreSQL.
        if (contractFloor) {
          const floorProc = await contractFloor.start({ DATABASE_URL: postgres.url });
          infra.push({ stop: async () => floorProc.child.kill('SIGTERM') });
          floorSubject = {
            name: 'contract floor',
            pid: floorProc.child.pid,
            targets: contractFloor.paths(floorProc.port),
          };
        }
        // Instances of one shape share its PostgreSQL and Redis, as instances of a deployment do.
        for (const build of builds)
          running.push(
            await startShape(shape + build.suffix, () =>
              startGatewayWith({ DATABASE_URL: postgres.url, REDIS_URL: redis.url }, build.main),
            ),
          );
      } else if (shape === 'embedded') {
        for (const build of builds) {
          // An empty data directory: the embedded database's first start.
          const dataDir = join(mkdtempSync(join(tmpdir(), 'gw-bench-shape-')), 'data');
          running.push(
            await startShape(shape + build.suffix, () => startGatewayWith({ GATEWAY_DATA_DIR: dataDir }, build.main)),
          );
        }
      } else throw new Error(`unknown shape "${shape}": one of ${SHAPES.join(', ')}`);
      log(`shape ${shape}: started in ${running.at(-1).startMillis} ms`);
    }
    const subjects = [
      ...running.map((s) => ({
        name: s.name,
        pid: s.proc.child.pid,
        targets: paths(s.proc.port),
        idleTarget: idle.gateway(s.proc.port),
      })),
      { name: 'bare', pid: bare.child.pid, targets: floors, idleTarget: idle.bare },
      ...(floorSubject ? [floorSubject] : []),
    ];
    const names = Object.keys(floors);
    // Warm-up: every path of every subject, as many requests as a round has.
    for (const subject of subjects)
      for (const name of names)
        if (subject.targets[name]) await closedLoop(subject.targets[name], { connections: 10, count: counts.cpuWarm });
    const settle = () => new Promise((resolve) => setTimeout(resolve, counts.recordSettleMs ?? RECORD_WRITE_SETTLE_MS));
    await settle();
    const cpu = Object.fromEntries(subjects.map((s) => [s.name, Object.fromEntries(names.map((n) => [n, []]))]));
    for (let r = 0; r < counts.cpuRounds; r++) {
      for (const name of names) {
        for (const subject of rotate(subjects, r)) {
          // The contract floor serves only some paths.
          if (!subject.targets[name]) continue;
          const before = processCpuMicros(subject.pid);
          await closedLoop(subject.targets[name], { connections: 10, count: counts.cpu });
          await settle();
          cpu[subject.name][name].push((processCpuMicros(subject.pid) - before) / counts.cpu);
        }
      }
      log(`shapes: CPU round ${r + 1}/${counts.cpuRounds}`);
    }
    const latencyNames = names.filter((n) => n in LATENCY_TARGETS);
    const p50 = Object.fromEntries(
      [...subjects, { name: 'direct' }].map((s) => [s.name, Object.fromEntries(latencyNames.map((n) => [n, []]))]),
    );
    const ttfb = Object.fromEntries(subjects.map((s) => [s.name, []]));
    for (let r = 0; r < counts.rounds; r++) {
      for (const name of latencyNames) {
        for (const subject of rotate(subjects, r)) {
          if (!subject.targets[name]) continue;
          const samples = await closedLoop(subject.targets[name], { connections: 1, count: counts.latency });
          p50[subject.name][name].push(median(samples.map((s) => s.total)));
        }
        const samples = await closedLoop(direct[name], { connections: 1, count: counts.latency });
        p50.direct[name].push(median(samples.map((s) => s.total)));
      }
      for (const subject of rotate(subjects, r))
        if (subject.idleTarget) ttfb[subject.name].push(await idleTtfb(subject.idleTarget, counts.idle));
      log(`shapes: latency round ${r + 1}/${counts.rounds}`);
    }

    const out = { shapes: {}, rows: [] };
    const row = (shape, figure, measured, floor, ratio, target, met) =>
      out.rows.push({ shape, figure, measured, floor, ratio, target, met });
    for (const s of running) {
      const memoryTargets = MEMORY_TARGETS_MB[s.name.split(' ')[0]];
      const result = {
        startMillis: s.startMillis,
        firstStartPeakBytes: s.firstStartPeak,
        settledBytes: s.settled,
        cpuMicrosPerRequest: {},
        addedP50Micros: {},
        idleTtfbMicros: summary(ttfb[s.name]),
      };
      out.shapes[s.name] = result;
      for (const name of names) {
        const mine = cpu[s.name][name];
        const floor = cpu.bare[name];
        const ratio = summary(mine.map((c, i) => c / floor[i]));
        result.cpuMicrosPerRequest[name] = { ...summary(mine), floor: summary(floor), overBare: ratio };
        row(
          s.name,
          `CPU per request, ${name}`,
          summary(mine),
          summary(floor),
          ratio,
          `≤ ${CPU_TARGETS[name]}× bare`,
          ratio.median <= CPU_TARGETS[name],
        );
      }
      for (const name of latencyNames) {
        const added = p50[s.name][name].map((v, i) => v - p50.direct[name][i]);
        const floorAdded = p50.bare[name].map((v, i) => v - p50.direct[name][i]);
        const ratio = summary(added.map((a, i) => a / floorAdded[i]));
        const target = LATENCY_TARGETS[name] + (s.name.startsWith('embedded') ? EMBEDDED_LATENCY_EXTRA : 0);
        result.addedP50Micros[name] = { ...summary(added), floor: summary(floorAdded), overBare: ratio };
        row(
          s.name,
          `added p50 at 1 connection, ${name}`,
          summary(added),
          summary(floorAdded),
          ratio,
          `≤ ${target.toFixed(1)}× bare`,
          ratio.median <= target,
        );
      }
      const overBare = ttfb[s.name].map((t, i) => t - ttfb.bare[i]);
      result.idleTtfbOverBareMicros = summary(overBare);
      row(
        s.name,
        'first byte of a paced stream after 20 ms idle',
        summary(ttfb[s.name]),
        summary(ttfb.bare),
        null,
        `≤ bare + ${IDLE_TTFB_OVER_BARE_MICROS / 1000} ms`,
        median(overBare) <= IDLE_TTFB_OVER_BARE_MICROS,
      );
      const mb = (bytes) => bytes / 1048576;
      if (memoryTargets.firstStartPeak !== undefined)
        row(
          s.name,
          'peak resident memory, first start (MB)',
          summary([mb(s.firstStartPeak)]),
          null,
          null,
          `≤ ${memoryTargets.firstStartPeak} MB`,
          mb(s.firstStartPeak) <= memoryTargets.firstStartPeak,
        );
      row(
        s.name,
        'resident memory 2 s after start (MB)',
        summary([mb(s.settled)]),
        null,
        null,
        `≤ ${memoryTargets.settled} MB`,
        mb(s.settled) <= memoryTargets.settled,
      );
      result.peakAfterRoundsBytes = peakRss(s.proc.child.pid);
    }
    if (out.shapes.production && out.shapes.embedded) {
      for (const name of names) {
        const diff = summary(cpu.embedded[name].map((c, i) => c - cpu.production[name][i]));
        out.shapes.embedded.cpuMicrosPerRequest[name].overProduction = diff;
        row(
          'embedded − production',
          `CPU per request, ${name}`,
          diff,
          null,
          null,
          `≤ +${EMBEDDED_CPU_OVER_PRODUCTION_MICROS} µs`,
          diff.median <= EMBEDDED_CPU_OVER_PRODUCTION_MICROS,
        );
      }
    }
    if (floorSubject) {
      // The premise of the CPU and latency targets, measured: what the contract's least work costs
      // over the bare proxy (same rounds).
      const floorCpu = cpu[floorSubject.name];
      const floorP50 = p50[floorSubject.name];
      // A path the floor does not serve is read against the floor of the path it extends:
      // conversion does all of pass-through's work, and converts.
      const floorPath = (have, name) =>
        have[name]?.length ? name : have[FLOOR_STANDS_IN[name]]?.length ? FLOOR_STANDS_IN[name] : undefined;
      out.contractFloor = {};
      for (const name of names.filter((n) => floorCpu[n].length > 0)) {
        row(
          'contract floor',
          `CPU per request, ${name}`,
          summary(floorCpu[name]),
          summary(cpu.bare[name]),
          summary(floorCpu[name].map((c, i) => c / cpu.bare[name][i])),
          '(premise)',
          null,
        );
        out.contractFloor[name] = {
          cpu: summary(floorCpu[name]),
          overBare: summary(floorCpu[name].map((c, i) => c / cpu.bare[name][i])),
        };
      }
      const added = (who, name) => p50[who][name].map((v, i) => v - p50.direct[name][i]);
      for (const name of latencyNames.filter((n) => floorP50[n].length > 0)) {
        const floor = added(floorSubject.name, name);
        const bareAdded = added('bare', name);
        row(
          'contract floor',
          `added p50 at 1 connection, ${name}`,
          summary(floor),
          summary(bareAdded),
          summary(floor.map((v, i) => v / bareAdded[i])),
          '(premise)',
          null,
        );
      }
      // The targets' intent, read against the premise measured: the same ratios over the contract
      // floor instead of the bare proxy (docs/decisions.md, "The footprint targets read against the
      // contract floor").
      for (const s of running) {
        const shape = s.name;
        if (shape === 'production')
          for (const name of names) {
            const base = floorPath(floorCpu, name);
            if (!base || !cpu[shape][name]?.length) continue;
            const ratio = summary(cpu[shape][name].map((c, i) => c / floorCpu[base][i]));
            out.contractFloor[name] = { ...out.contractFloor[name], productionOverFloor: ratio };
            row(
              shape,
              `CPU per request over the contract floor${base === name ? '' : ` (${base})`}, ${name}`,
              summary(cpu[shape][name]),
              summary(floorCpu[base]),
              ratio,
              `≤ ${CPU_TARGETS[name]}× floor`,
              ratio.median <= CPU_TARGETS[name],
            );
          }
        for (const name of latencyNames) {
          const base = floorPath(floorP50, name);
          if (!base || !p50[shape]?.[name]?.length) continue;
          const mine = added(shape, name);
          const floor = added(floorSubject.name, base);
          const ratio = summary(mine.map((v, i) => v / floor[i]));
          const target = LATENCY_TARGETS[name] + (shape.startsWith('embedded') ? EMBEDDED_LATENCY_EXTRA : 0);
          row(
            shape,
            `added p50 at 1 connection over the contract floor${base === name ? '' : ` (${base})`}, ${name}`,
            summary(mine),
            summary(floor),
            ratio,
            `≤ ${target.toFixed(1)}× floor`,
            ratio.median <= target,
          );
        }
      }
    }
    return out;
  } finally {
    for (const s of running) s.proc.child.kill('SIGTERM');
    await Promise.all(
      running.map(
        (s) =>
          new Promise((resolve) => (s.proc.child.exitCode !== null ? resolve() : s.proc.child.once('exit', resolve))),
      ),
    );
    for (const i of infra) await i.stop();
  }
}

const us = (v) => `${Math.round(v)} µs`;
const fmt = (s, unit) => {
  if (!s) return '—';
  const f = unit === 'MB' ? (v) => `${v.toFixed(0)} MB` : unit === 'ms' ? (v) => `${(v / 1000).toFixed(2)} ms` : us;
  return s.min === s.max ? f(s.median) : `${f(s.median)} (${f(s.min)} – ${f(s.max)})`;
};

/** The shapes' rows as a markdown section (every row names its shape). */
export function renderShapes(result, counts) {
  if (!result?.rows) return [];
  const unit = (figure) =>
    figure.includes('(MB)') ? 'MB' : figure.includes('first byte') || figure.includes('added p50') ? 'ms' : 'µs';
  return [
    '## The shapes operators run',
    '',
    `\`production\`: DATABASE_URL (PostgreSQL) and REDIS_URL (redis-server) started by the bench, request records stored, trace export off. \`embedded\`: the embedded database (PGlite), records stored there. Each gateway starts on an empty database; then the shapes and the bare node:http proxy take turns in the same rounds (CPU at 10 connections: ${counts.cpuRounds} rounds of ${counts.cpu} requests after ${counts.cpuWarm} to warm up, each read ${counts.recordSettleMs ?? RECORD_WRITE_SETTLE_MS} ms after its last answer so that it counts the writing of its request records; latency at 1 connection: ${counts.rounds} rounds of ${counts.latency}; first byte after 20 ms idle: ${counts.idle} streams a round). Median round (lowest – highest); ratios are taken round by round.`,
    '',
    '`contract floor` (bench/contract-floor.mjs) is the premise of the CPU and latency targets, measured in the same rounds: the least per-request work the contract makes any Node gateway do for a pass-through, an MCP call and a signed Bedrock call (the API key hashed and looked up, the body parsed to route its model and sent on re-serialized, or signed with SigV4 over its exact bytes for the allowed host, the answer parsed for its usage, a request id, a trace id and an upstream `traceparent`, an upstream deadline, the request counted for /metrics, one log line and one record batched into the same PostgreSQL), written straight on node:http with nothing else: no framework, no policies, limits, cache, spans, retries or error rendering. Its `(premise)` rows say what that work costs over the bare proxy: when it costs the target’s ratio by itself, no gateway that keeps the contract can meet the target as written. The rows `over the contract floor` read each target’s ratio against this floor instead of the bare proxy, in the same rounds (conversion against the pass-through floor, whose work it does and more): the target’s intent, that the gateway’s own machinery costs little beyond what the contract asks.',
    '',
    '| shape | figure | gateway | bare proxy (same rounds) | ratio | target | met |',
    '| --- | --- | --- | --- | --- | --- | --- |',
    ...result.rows.map(
      (r) =>
        `| ${r.shape} | ${r.figure} | ${fmt(r.measured, unit(r.figure))} | ${fmt(r.floor, unit(r.figure))} | ${r.ratio ? `${r.ratio.median.toFixed(2)}× (${r.ratio.min.toFixed(2)} – ${r.ratio.max.toFixed(2)})` : '—'} | ${r.target} | ${r.met === null ? '—' : r.met ? 'yes' : '**no**'} |`,
    ),
    '',
  ];
}

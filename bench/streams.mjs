// Stream measurements: what a stream costs the gateway when the provider sends it as a provider
// does (one event per chunk, see mocks.mjs), and how long a new stream waits for its first byte
// while other streams are being converted.
import { Agent, request } from 'node:http';
import { median, percentile, processCpuMicros, send } from './lib.mjs';

/** Events in each stream of the mock (1,000 deltas and the 5 events around them). */
export const STREAM_EVENTS = 1005;

const summary = (values) => ({ median: median(values), min: Math.min(...values), max: Math.max(...values) });

/** One request that settles when its answer ends or its connection closes (the background streams are cut off at the end). */
function openStream(agent, target) {
  return new Promise((resolve) => {
    const req = request(
      { agent, host: '127.0.0.1', port: target.port, method: 'POST', path: target.path, headers: target.headers },
      (res) => {
        res.on('data', () => undefined);
        res.on('error', () => undefined);
        res.once('close', resolve);
      },
    );
    req.on('error', resolve);
    // Cut off at the end: a reset socket is expected, not a failure of the bench.
    req.on('socket', (socket) => socket.on('error', () => undefined));
    req.end(target.body);
  });
}

/** Runs `count` requests from `connections` closed loops; resolves with their samples. */
async function loop(target, connections, count) {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const samples = [];
  let next = 0;
  const worker = async () => {
    while (next < count) {
      next++;
      const sample = await send(agent, target);
      if (sample.status >= 400) throw new Error(`${target.path} answered ${sample.status}`);
      samples.push(sample);
    }
  };
  await Promise.all(Array.from({ length: connections }, worker));
  agent.destroy();
  return samples;
}

/**
 * CPU per event (µs) of each path's process at 10 connections, in interleaved rounds (A B C A B
 * C) after a warm-up of `warm` streams each; with each path's figure over the `floor` path's of
 * the same round (the bare proxy carrying the same stream).
 */
export async function streamCpu(paths, floorName, { streams, warm, rounds }) {
  for (const path of paths) await loop(path.target, 10, warm);
  const cpu = Object.fromEntries(paths.map((p) => [p.name, []]));
  const p50 = Object.fromEntries(paths.map((p) => [p.name, []]));
  for (let r = 0; r < rounds; r++) {
    for (const path of paths) {
      const before = processCpuMicros(path.pid);
      const samples = await loop(path.target, 10, streams);
      cpu[path.name].push((processCpuMicros(path.pid) - before) / streams / STREAM_EVENTS);
      p50[path.name].push(median(samples.map((s) => s.total)));
    }
  }
  const result = {};
  for (const path of paths) {
    result[path.name] = {
      label: path.label,
      cpuMicrosPerEvent: summary(cpu[path.name]),
      overFloor: summary(cpu[path.name].map((v, r) => v / cpu[floorName][r])),
      streamP50Micros: median(p50[path.name]),
    };
  }
  return result;
}

/**
 * Time to first byte of new streams started while `busy` keeps 10 streams open (paced: an event
 * every 5 ms), through the gateway and straight to the mock in alternation, `n` of each per
 * round. "Added" is the gateway's median minus the mock's of the same round.
 */
export async function ttfbAmongStreams({ busy, gateway, direct, n, rounds }) {
  const agent = new Agent({ keepAlive: true, maxSockets: 10 });
  let stopping = false;
  let started = 0;
  const background = Array.from({ length: 10 }, async () => {
    while (!stopping) {
      started++;
      await openStream(agent, busy);
    }
  });
  // Every background stream is under way (its first events converted) before the first probe.
  while (started < 10) await new Promise((resolve) => setTimeout(resolve, 10));
  await new Promise((resolve) => setTimeout(resolve, 200));
  const probeAgent = new Agent({ keepAlive: true, maxSockets: 1 });
  const added = [];
  const gw = [];
  const dr = [];
  const worst = [];
  try {
    await send(probeAgent, gateway);
    await send(probeAgent, direct);
    for (let r = 0; r < rounds; r++) {
      const a = [];
      const b = [];
      for (let i = 0; i < n; i++) {
        a.push((await send(probeAgent, gateway)).ttfb);
        b.push((await send(probeAgent, direct)).ttfb);
      }
      gw.push(median(a));
      dr.push(median(b));
      added.push(median(a) - median(b));
      worst.push(percentile(a, 99));
    }
  } finally {
    stopping = true;
    agent.destroy();
    probeAgent.destroy();
    await Promise.all(background);
  }
  return {
    addedTtfbMicros: summary(added),
    gatewayTtfbMicros: summary(gw),
    directTtfbMicros: summary(dr),
    gatewayP99TtfbMicros: median(worst),
  };
}

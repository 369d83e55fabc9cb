// A peer gateway measured in the same run as this one (`pnpm bench --peers`): the open-source
// Portkey gateway, pinned in bench/peers/portkey/ (its own package.json and lockfile, outside the
// pnpm workspace, installed with `npm ci` on first use), pointed at the same mock upstream. Both
// gateways are fresh processes; they and the bare node:http proxy (the floor) are measured by the
// same driver in the same interleaved rounds, each round ending with the mock directly.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { freePort, probe } from './features.mjs';
import { currentRss, peakRss, resetPeakRss } from './lib.mjs';
import { addedPerRound, measureRounds, perRound, ratioPerRound, summary } from './scaling.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const json = { 'content-type': 'application/json' };

/** The peer gateway: where it is pinned and what it is. */
export const PORTKEY = {
  label: 'Portkey gateway (open source)',
  version: '1.15.2',
  dir: join(here, 'peers', 'portkey'),
};

/** Counts of the peer rounds by mode (the peer is not measured in smoke runs). */
export function peerCounts(mode) {
  return mode === 'full'
    ? { rounds: 5, latency: 500, cpu: 3000, warm: 3000, stream: 30, streamCpu: 100 }
    : { rounds: 3, latency: 200, cpu: 1000, warm: 1000, stream: 10, streamCpu: 30 };
}

const installedVersion = (dir, name) => {
  const file = join(dir, 'node_modules', name, 'package.json');
  return existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')).version : undefined;
};

/**
 * Installs the pinned peer with `npm ci` (scripts off: the package's postinstall only applies its
 * own development patches) unless the lockfile's versions are already there. Returns the path of
 * its Node server.
 */
export function ensurePortkey(log = () => undefined) {
  const { dir, version } = PORTKEY;
  const wanted = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).dependencies;
  const ready = () =>
    installedVersion(dir, '@portkey-ai/gateway') === version &&
    installedVersion(dir, '@hono/node-server') === wanted['@hono/node-server'];
  if (!ready()) {
    log(`peers: npm ci in ${dir}`);
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
    const run = spawnSync(npm, ['ci', '--ignore-scripts', '--no-audit', '--no-fund'], {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
      encoding: 'utf8',
      timeout: 600_000,
    });
    if (run.status !== 0 || !ready())
      throw new Error(
        `npm ci in ${dir} failed (${run.error?.message ?? `exit ${run.status}`}): ${(run.stderr ?? '').trim().split('\n').slice(-5).join(' | ')}`,
      );
  }
  return join(dir, 'node_modules', '@portkey-ai', 'gateway', 'build', 'start-server.js');
}

/**
 * Starts the peer's Node server (`build/start-server.js --port=N --headless`, NODE_ENV=production)
 * on a free port; resolves when it says it is ready (at most 30 s). It listens on every interface
 * (its start script takes no host); the bench only sends to 127.0.0.1.
 */
export async function startPortkey(server) {
  const port = await freePort();
  const child = spawn(process.execPath, [server, `--port=${port}`, '--headless'], {
    cwd: PORTKEY.dir,
    env: { PATH: process.env.PATH, NODE_ENV: 'production' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stderr = [];
  child.stderr.on('data', (c) => stderr.push(c));
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGTERM');
      reject(new Error('the Portkey gateway did not say it was ready within 30 s'));
    }, 30_000);
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line.includes('Ready for connections')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the Portkey gateway exited with ${code}: ${Buffer.concat(stderr).toString().slice(-500)}`));
    });
  });
  child.stdout.resume();
  return { child, port };
}

const exited = (child) =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve()
    : new Promise((resolve) => child.once('exit', resolve));

/** The mock's answer text (bench/mocks.mjs): a reply that carries it came from the mock. */
const MOCK_TEXT = 'The quick brown fox jumps over the lazy dog.';

/**
 * One request of each kind through a gateway, outside the measurements: the JSON answers carry
 * the mock's message and the stream its last event, or this throws.
 */
export async function checkReachesMock(label, paths) {
  for (const [name, target] of paths) {
    const { status, body } = await probe(target);
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    const ok = status === 200 && (name === 'chatStream' ? text.includes('token 999') : text.includes(MOCK_TEXT));
    if (!ok) throw new Error(`${label}: ${name} answered ${status} without the mock's answer: ${text.slice(0, 300)}`);
  }
}

/**
 * This gateway and the peer on the same mock, driver and rounds: chat completions (JSON and
 * stream) and native /v1/messages. At 1 connection each round measures this gateway, the peer
 * and the floor in rotating order, then the mock directly: p50 and p99 and what each adds over
 * the mock's. At 10 connections the same rotation reads CPU per request from /proc. Peak RSS
 * (VmHWM) of both processes over the rounds (reset once both had started), with each one's
 * start-up peak. Ratios are this gateway's figure over the peer's in the
 * same round (median of rounds, min – max).
 */
export async function peerBenchmarks({ startGateway, fileConfig, bare, mock, mode, log = () => undefined }) {
  const c = peerCounts(mode);
  const server = ensurePortkey(log);
  log(`peers: ${PORTKEY.label} ${PORTKEY.version}`);
  const peer = await startPortkey(server);
  let ours;
  try {
    // This gateway as it starts every time but the first: on a database an earlier start created
    // (creating it peaks near 800 MB once: docs/catalog.md), as the peer keeps no database.
    const dataDir = mkdtempSync(join(tmpdir(), 'gw-bench-data-'));
    const first = await startGateway(fileConfig, dataDir);
    first.child.kill('SIGTERM');
    await exited(first.child);
    ours = await startGateway(fileConfig, dataDir);
    const startRss = { ours: peakRss(ours.child.pid), peer: peakRss(peer.child.pid) };
    // The peaks compared are those of the rounds: a process's start-up (this gateway's embedded
    // database creating itself) is reported beside them, not as them.
    const peakSinceStart = resetPeakRss(ours.child.pid) && resetPeakRss(peer.child.pid);
    const upstream = `http://127.0.0.1:${mock.port}/v1`;
    const to = (proc, path, body, headers) => ({ port: proc.port, path, body, headers: { ...json, ...headers } });
    const oursAt = (path, body) => to(ours, path, body, { 'x-gateway-api-key': 'gw-bench-key-000000' });
    const peerAt = (path, body, auth) =>
      to(peer, path, body, { 'x-portkey-provider': 'anthropic', 'x-portkey-custom-host': upstream, ...auth });
    const conversation = {
      max_tokens: 64,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Say something.' },
      ],
    };
    const native = {
      max_tokens: 64,
      system: [{ type: 'text', text: 'Be brief.' }],
      messages: [{ role: 'user', content: 'Say something.' }],
    };
    const body = (model, extra, stream) => JSON.stringify({ model, ...extra, ...(stream ? { stream: true } : {}) });
    const bearer = { authorization: 'Bearer sk-bench' };
    const apiKey = { 'x-api-key': 'sk-bench', 'anthropic-version': '2023-06-01' };
    const paths = [
      {
        name: 'chatJson',
        label: '/v1/chat/completions, JSON (converted to and from /v1/messages)',
        ours: oursAt('/v1/chat/completions', body('@bench/claude-sonnet-4-5', conversation)),
        peer: peerAt('/v1/chat/completions', body('claude-sonnet-4-5', conversation), bearer),
        upstream: body('claude-sonnet-4-5', native),
        latency: c.latency,
        cpu: c.cpu,
      },
      {
        name: 'chatStream',
        label: `/v1/chat/completions, stream of 1,000 events (converted)`,
        ours: oursAt('/v1/chat/completions', body('@bench/claude-sonnet-4-5', conversation, true)),
        peer: peerAt('/v1/chat/completions', body('claude-sonnet-4-5', conversation, true), bearer),
        upstream: body('claude-sonnet-4-5', native, true),
        latency: c.stream,
        cpu: c.streamCpu,
      },
      {
        name: 'messages',
        label: '/v1/messages, native',
        ours: oursAt('/v1/messages', body('@bench/claude-sonnet-4-5', native)),
        peer: peerAt('/v1/messages', body('claude-sonnet-4-5', native), apiKey),
        upstream: body('claude-sonnet-4-5', native),
        latency: c.latency,
        cpu: c.cpu,
      },
    ];
    await checkReachesMock(
      PORTKEY.label,
      paths.map((p) => [p.name, p.peer]),
    );
    await checkReachesMock(
      'this gateway',
      paths.map((p) => [p.name, p.ours]),
    );
    log('peers: both gateways reach the mock');
    const out = {
      peer: { label: PORTKEY.label, package: '@portkey-ai/gateway', version: PORTKEY.version },
      counts: c,
      paths: {},
    };
    for (const p of paths) {
      log(`peers: ${p.label}`);
      const subjects = [
        { name: 'ours', pid: ours.child.pid, target: p.ours },
        { name: 'peer', pid: peer.child.pid, target: p.peer },
        {
          name: 'floor',
          pid: bare.child.pid,
          target: { port: bare.port, path: '/v1/messages', body: p.upstream, headers: json },
        },
      ];
      const direct = { target: { port: mock.port, path: '/v1/messages', body: p.upstream, headers: json } };
      const lat = await measureRounds(subjects, {
        rounds: c.rounds,
        connections: 1,
        count: p.latency,
        warm: p.latency,
        direct,
      });
      const cpu = await measureRounds(subjects, { rounds: c.rounds, connections: 10, count: p.cpu, warm: p.cpu });
      const side = (name) => ({
        p50Micros: summary(perRound(lat[name], 'p50')),
        p99Micros: summary(perRound(lat[name], 'p99')),
        addedP50Micros: summary(addedPerRound(lat[name], lat.direct, 'p50')),
        addedP99Micros: summary(addedPerRound(lat[name], lat.direct, 'p99')),
        addedTtfbP50Micros: summary(addedPerRound(lat[name], lat.direct, 'ttfbP50')),
        cpuMicrosPerRequest: summary(perRound(cpu[name], 'cpu')),
        loadP50Micros: summary(perRound(cpu[name], 'p50')),
        loadP99Micros: summary(perRound(cpu[name], 'p99')),
      });
      const oursOverPeer = (list, field, added) =>
        summary(
          ratioPerRound(
            added ? addedPerRound(list.ours, list.direct, field) : perRound(list.ours, field),
            added ? addedPerRound(list.peer, list.direct, field) : perRound(list.peer, field),
          ),
        );
      out.paths[p.name] = {
        label: p.label,
        ours: side('ours'),
        peer: side('peer'),
        floor: side('floor'),
        directP50Micros: summary(perRound(lat.direct, 'p50')),
        ratio: {
          addedP50: oursOverPeer(lat, 'p50', true),
          addedP99: oursOverPeer(lat, 'p99', true),
          cpu: oursOverPeer(cpu, 'cpu', false),
        },
      };
    }
    out.rss = {
      ours: { start: startRss.ours, peak: peakRss(ours.child.pid), end: currentRss(ours.child.pid) },
      peer: { start: startRss.peer, peak: peakRss(peer.child.pid), end: currentRss(peer.child.pid) },
      peakSinceStart,
    };
    out.rss.ratio = out.rss.ours.peak / out.rss.peer.peak;
    return out;
  } finally {
    for (const proc of [ours, peer]) {
      if (!proc) continue;
      proc.child.kill('SIGTERM');
      await exited(proc.child);
    }
  }
}

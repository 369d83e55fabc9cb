// `pnpm bench:cache [--quick]`: the response cache on this machine. A chat completion answered
// from the in-memory cache and from a local Redis, each against the same request passed through
// to the (mock) provider, in paired rounds (hit, pass-through, hit, pass-through…) at one
// connection, then CPU per request at 10 connections. Needs redis-server (scripts/system-deps.sh)
// for the Redis rows; without it they are skipped.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { closedLoop, median, percentile, processCpuMicros } from './lib.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const quick = process.argv.includes('--quick');
const counts = quick
  ? { latency: 200, rounds: 3, warm: 200, cpu: 1000 }
  : { latency: 1000, rounds: 5, warm: 1000, cpu: 3000 };
const KEY = 'gw-bench-cache-key-0000';
const REDIS = '/usr/bin/redis-server';

function startProcess(command, args, env = {}) {
  const child = spawn(command, args, { env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
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
    child.once('exit', (code) => reject(new Error(`${command} exited with ${code}`)));
  });
}

async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function startRedis() {
  const port = await freePort();
  const child = spawn(REDIS, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => line.includes('Ready to accept') && resolve());
    child.once('exit', (code) => reject(new Error(`redis-server exited with ${code}`)));
  });
  return { child, url: `redis://127.0.0.1:${port}` };
}

const summary = (values) => ({ median: median(values), min: Math.min(...values), max: Math.max(...values) });

/** Paired rounds at one connection: `a` then `b`, `rounds` times; p50 of each and their difference. */
async function paired(name, a, b) {
  await closedLoop(a, { connections: 1, count: counts.warm });
  await closedLoop(b, { connections: 1, count: counts.warm });
  const [pa, pb, diff] = [[], [], []];
  for (let r = 0; r < counts.rounds; r++) {
    const x = median((await closedLoop(a, { connections: 1, count: counts.latency })).map((s) => s.total));
    const y = median((await closedLoop(b, { connections: 1, count: counts.latency })).map((s) => s.total));
    pa.push(x);
    pb.push(y);
    diff.push(x - y);
  }
  return { name, hitP50Micros: summary(pa), passThroughP50Micros: summary(pb), differenceP50Micros: summary(diff) };
}

async function cpuPerRequest(pid, target) {
  await closedLoop(target, { connections: 10, count: counts.warm });
  const before = processCpuMicros(pid);
  const samples = await closedLoop(target, { connections: 10, count: counts.cpu });
  const totals = samples.map((s) => s.total);
  return {
    cpuMicrosPerRequest: (processCpuMicros(pid) - before) / counts.cpu,
    p50Micros: median(totals),
    p99Micros: percentile(totals, 99),
  };
}

async function main() {
  const mock = await startProcess(process.execPath, [join(here, 'mocks.mjs')]);
  const dir = mkdtempSync(join(tmpdir(), 'gateway-bench-cache-'));
  const configPath = join(dir, 'gateway.json');
  writeFileSync(
    configPath,
    JSON.stringify({
      auth: { apiKeys: [{ key: KEY, user: { user_id: 'bench' } }] },
      providers: [
        { slug: 'bench', provider: 'anthropic', apiKey: 'sk-bench', baseUrl: `http://127.0.0.1:${mock.port}` },
      ],
    }),
  );
  const main = join(root, 'examples/server/dist/main.js');
  const env = { GATEWAY_CONFIG: configPath, PORT: '0', LOG_LEVEL: 'info' };
  const processes = [mock];
  const results = {
    date: new Date().toISOString(),
    mode: quick ? 'quick' : 'full',
    machine: { cpu: cpus()[0]?.model, cores: cpus().length, node: process.version },
    counts,
    scenarios: [],
    load: {},
  };
  try {
    const memory = await startProcess(process.execPath, [main], {
      ...env,
      GATEWAY_DATA_DIR: mkdtempSync(join(tmpdir(), 'gw-bench-data-')),
    });
    processes.push(memory);
    memory.child.stdout.resume();
    const body = JSON.stringify({
      model: '@bench/claude-sonnet-4-5',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'Say something.' }],
    });
    const target = (port, cache) => ({
      port,
      path: '/v1/chat/completions',
      body,
      headers: {
        'content-type': 'application/json',
        'x-gateway-api-key': KEY,
        ...(cache ? { 'x-gateway-config': '{"cache":{"mode":"simple","max_age":3600}}' } : {}),
      },
    });
    results.scenarios.push(
      await paired(
        'memory hit vs pass-through miss (/v1/chat/completions)',
        target(memory.port, true),
        target(memory.port, false),
      ),
    );
    results.load.memoryHit = await cpuPerRequest(memory.child.pid, target(memory.port, true));
    results.load.passThrough = await cpuPerRequest(memory.child.pid, target(memory.port, false));
    if (existsSync(REDIS)) {
      const redis = await startRedis();
      processes.push(redis);
      const shared = await startProcess(process.execPath, [main], {
        ...env,
        REDIS_URL: redis.url,
        GATEWAY_DATA_DIR: mkdtempSync(join(tmpdir(), 'gw-bench-data-')),
      });
      processes.push(shared);
      shared.child.stdout.resume();
      results.scenarios.push(
        await paired(
          'Redis hit vs pass-through miss (/v1/chat/completions)',
          target(shared.port, true),
          target(shared.port, false),
        ),
      );
      results.load.redisHit = await cpuPerRequest(shared.child.pid, target(shared.port, true));
    } else {
      results.redis = 'skipped: /usr/bin/redis-server is missing (scripts/system-deps.sh installs it)';
    }
  } finally {
    for (const p of processes) p.child.kill('SIGTERM');
  }
  const us = (x) => `${(x / 1000).toFixed(3)} ms`;
  for (const s of results.scenarios) {
    process.stdout.write(
      `${s.name}: hit p50 ${us(s.hitP50Micros.median)}, pass-through p50 ${us(s.passThroughP50Micros.median)}, difference ${us(s.differenceP50Micros.median)} (${us(s.differenceP50Micros.min)} – ${us(s.differenceP50Micros.max)})\n`,
    );
  }
  for (const [name, l] of Object.entries(results.load)) {
    process.stdout.write(
      `${name} at 10 connections: ${l.cpuMicrosPerRequest.toFixed(0)} µs CPU/request, p50 ${us(l.p50Micros)}, p99 ${us(l.p99Micros)}\n`,
    );
  }
  writeFileSync(join(dir, 'cache-results.json'), JSON.stringify(results, null, 2));
  process.stdout.write(`${JSON.stringify(results)}\n`);
}

main().catch((error) => {
  process.stderr.write(`${error.stack ?? error}\n`);
  process.exit(1);
});

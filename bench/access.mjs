// The access rows of the feature benchmarks alone, quick to run while working on the access path:
// 100 policies and 1,000 API keys (see accessConfig in features.mjs), each figure beside the bare
// node:http proxy and the mock measured in the same interleaved rounds.
//
//   node bench/access.mjs [--rounds 5] [--count 300] [--cpu 1000] [--baseline <checkout>]
//
// With --baseline, the gateway built in that other checkout (its examples/server/dist) runs beside
// this one in the same rounds, so that a change is measured before and after on the same load.
// Prints JSON: per build, the tools/list gate's added p50 (gated caller minus ungated caller) and
// CPU per request, and MCP tools/call in `policies` mode against `open` (added p50 and CPU ratios).
import { spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { accessConfig, accessKey, probe } from './features.mjs';
import { benchScratch, closedLoop, median, processCpuMicros } from './lib.mjs';

// Every temporary folder of this run (databases, configs, keys) in one, removed at exit.
benchScratch('gateway-access-bench-run-');

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(name);
  return at === -1 ? fallback : args[at + 1];
};
const rounds = Number(option('--rounds', 5));
const count = Number(option('--count', 300));
const cpuCount = Number(option('--cpu', 1000));
const baseline = option('--baseline', undefined);

function startProcess(script, env = {}) {
  const child = spawn(process.execPath, [script], {
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
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

const summary = (values) => ({ median: median(values), min: Math.min(...values), max: Math.max(...values) });
const json = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const toolsList = '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}';
const mcpCall = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}';

const mock = await startProcess(join(here, 'mocks.mjs'));
const bare = await startProcess(join(here, 'bare-proxy.mjs'), { TARGET_PORT: String(mock.port) });
const dir = mkdtempSync(join(tmpdir(), 'gateway-access-bench-'));
const { privateKey } = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  publicKeyEncoding: { type: 'spki', format: 'pem' },
});
const fileConfig = {
  auth: { apiKeys: [{ key: 'gw-bench-key-000000', user: { user_id: 'bench' } }] },
  providers: [{ slug: 'bench', provider: 'anthropic', apiKey: 'sk-bench', baseUrl: `http://127.0.0.1:${mock.port}` }],
  mcpServers: [
    { slug: 'tools', url: `http://127.0.0.1:${mock.port}/mcp`, user_identity_forwarding: { method: 'jwt_header' } },
  ],
};
const started = [mock, bare];
const gateway = async (root, mode) => {
  const path = join(dir, `access-${mode}.json`);
  writeFileSync(path, JSON.stringify(accessConfig(fileConfig, mode)));
  const proc = await startProcess(join(root, 'examples/server/dist/main.js'), {
    GATEWAY_CONFIG: path,
    GATEWAY_DATA_DIR: mkdtempSync(join(tmpdir(), 'gw-access-bench-data-')),
    JWT_PRIVATE_KEY: privateKey,
    PORT: '0',
    LOG_LEVEL: 'info',
    NODE_ENV: 'production',
  });
  started.push(proc);
  return proc;
};

try {
  const builds = [{ name: 'current', root: join(here, '..') }];
  if (baseline !== undefined) builds.push({ name: 'baseline', root: resolve(baseline) });
  const [caller, gated] = [accessKey(0), accessKey(50)];
  const at = (proc, key, body) => ({
    pid: proc.child.pid,
    target: { port: proc.port, path: '/mcp/tools', body, headers: { ...json, 'x-gateway-api-key': key } },
  });
  const subjects = {};
  for (const build of builds) {
    const open = await gateway(build.root, 'open');
    const policies = await gateway(build.root, 'policies');
    const listed = async (key) => (await probe(at(policies, key, toolsList).target)).body?.result?.tools?.length;
    const [whole, filtered] = [await listed(caller), await listed(gated)];
    if (whole !== 200 || filtered !== 100) throw new Error(`${build.name}: listed ${whole} and ${filtered} tools`);
    subjects[`${build.name}.list.ungated`] = at(policies, caller, toolsList);
    subjects[`${build.name}.list.gated`] = at(policies, gated, toolsList);
    subjects[`${build.name}.call.open`] = at(open, caller, mcpCall);
    subjects[`${build.name}.call.policies`] = at(policies, caller, mcpCall);
  }
  const floorOf = (body) => ({ pid: bare.child.pid, target: { port: bare.port, path: '/mcp', body, headers: json } });
  subjects['floor.list'] = floorOf(toolsList);
  subjects['floor.call'] = floorOf(mcpCall);
  const direct = {
    list: { port: mock.port, path: '/mcp', body: toolsList, headers: json },
    call: { port: mock.port, path: '/mcp', body: mcpCall, headers: json },
  };
  const names = Object.keys(subjects);
  for (const name of names) await closedLoop(subjects[name].target, { connections: 10, count: cpuCount });
  const p50 = Object.fromEntries([...names, 'direct.list', 'direct.call'].map((n) => [n, []]));
  const cpu = Object.fromEntries(names.map((n) => [n, []]));
  for (let r = 0; r < rounds; r++) {
    // Every subject in every round, in an order rotated per round.
    const order = [...names.slice(r % names.length), ...names.slice(0, r % names.length)];
    for (const name of order) {
      p50[name].push(median((await closedLoop(subjects[name].target, { connections: 1, count })).map((s) => s.total)));
    }
    for (const kind of ['list', 'call'])
      p50[`direct.${kind}`].push(
        median((await closedLoop(direct[kind], { connections: 1, count })).map((s) => s.total)),
      );
    for (const name of order) {
      const before = processCpuMicros(subjects[name].pid);
      await closedLoop(subjects[name].target, { connections: 10, count: cpuCount });
      cpu[name].push((processCpuMicros(subjects[name].pid) - before) / cpuCount);
    }
  }
  const idx = [...Array(rounds).keys()];
  const out = { rounds, count, cpuCount, floor: {}, builds: {} };
  for (const kind of ['list', 'call']) {
    out.floor[kind] = {
      addedP50Micros: summary(idx.map((i) => p50[`floor.${kind}`][i] - p50[`direct.${kind}`][i])),
      cpuMicrosPerRequest: summary(cpu[`floor.${kind}`]),
    };
  }
  for (const build of builds) {
    const b = (n) => `${build.name}.${n}`;
    out.builds[build.name] = {
      toolsList: {
        gateAddsP50Micros: summary(idx.map((i) => p50[b('list.gated')][i] - p50[b('list.ungated')][i])),
        addedP50Micros: {
          ungated: summary(idx.map((i) => p50[b('list.ungated')][i] - p50['direct.list'][i])),
          gated: summary(idx.map((i) => p50[b('list.gated')][i] - p50['direct.list'][i])),
        },
        cpuMicrosPerRequest: { ungated: summary(cpu[b('list.ungated')]), gated: summary(cpu[b('list.gated')]) },
      },
      mcpCall: {
        addedP50Micros: {
          open: summary(idx.map((i) => p50[b('call.open')][i] - p50['direct.call'][i])),
          policies: summary(idx.map((i) => p50[b('call.policies')][i] - p50['direct.call'][i])),
        },
        ratio: {
          addedP50: summary(
            idx.map(
              (i) =>
                (p50[b('call.policies')][i] - p50['direct.call'][i]) / (p50[b('call.open')][i] - p50['direct.call'][i]),
            ),
          ),
          cpu: summary(idx.map((i) => cpu[b('call.policies')][i] / cpu[b('call.open')][i])),
        },
        cpuMicrosPerRequest: { open: summary(cpu[b('call.open')]), policies: summary(cpu[b('call.policies')]) },
      },
    };
  }
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
} finally {
  for (const proc of started) proc.child.kill('SIGTERM');
}

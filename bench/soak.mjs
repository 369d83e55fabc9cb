// `pnpm soak [--requests N]`: a bounded soak. 50,000 mixed requests (chat completions JSON and
// streamed, native messages, MCP calls, refusals, clients that hang up mid-stream) through the
// real gateway; its heap after a full collection and its open sockets must come back to within
// 10% of what they were after warm-up. Exits 1 when they do not.
import { fork, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { benchScratch } from './lib.mjs';

// Every temporary folder of this run (databases, configs, keys) in one, removed at exit.
benchScratch('gateway-soak-run-');

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const at = args.indexOf('--requests');
const total = at === -1 ? 50_000 : Number(args[at + 1]);
const KEY = 'gw-soak-key-00000001';

function startMock() {
  const child = spawn(process.execPath, [join(here, 'mocks.mjs')], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve) => {
    createInterface({ input: child.stdout }).once('line', (line) => resolve({ child, port: JSON.parse(line).port }));
  });
}

function startGateway(mockPort) {
  const dir = mkdtempSync(join(tmpdir(), 'gateway-soak-'));
  const config = join(dir, 'gateway.json');
  writeFileSync(
    config,
    JSON.stringify({
      auth: { apiKeys: [{ key: KEY, user: { user_id: 'soak' } }] },
      mcpServers: [
        {
          slug: 'tools',
          url: `http://127.0.0.1:${mockPort}/mcp`,
          user_identity_forwarding: { method: 'claims_header' },
        },
      ],
      providers: [
        { slug: 'soak', provider: 'anthropic', apiKey: 'sk-ant-soak', baseUrl: `http://127.0.0.1:${mockPort}` },
      ],
    }),
  );
  const child = fork(join(here, 'soak-gateway.mjs'), [], {
    execArgv: ['--expose-gc'],
    env: {
      PATH: process.env.PATH,
      GATEWAY_CONFIG: config,
      GATEWAY_DATA_DIR: mkdtempSync(join(tmpdir(), 'gw-soak-data-')),
      PORT: '0',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  return new Promise((resolve) => child.once('message', (m) => resolve({ child, port: m.port })));
}

const measure = (gateway) =>
  new Promise((resolve) => {
    gateway.child.once('message', resolve);
    gateway.child.send('measure');
  });

const json = { 'content-type': 'application/json', 'x-gateway-api-key': KEY };
const chat = (stream) =>
  JSON.stringify({
    model: '@soak/claude-sonnet-4-5',
    max_tokens: 20,
    stream,
    messages: [{ role: 'user', content: 'hi' }],
  });
const MIX = [
  { path: '/v1/chat/completions', body: chat(false), headers: json },
  { path: '/v1/chat/completions', body: chat(true), headers: json },
  { path: '/v1/messages', body: chat(false), headers: json },
  { path: '/mcp/tools', body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}', headers: json },
  { path: '/v1/chat/completions', body: chat(false), headers: { 'content-type': 'application/json' } },
  { path: '/v1/unknown', body: '{}', headers: json },
  { path: '/v1/chat/completions', body: '{"model":"@nope/x"', headers: json },
  { path: '/v1/chat/completions', body: chat(true), headers: json, hangUp: true },
];

function send(agent, port, target) {
  return new Promise((resolve) => {
    const req = request({ agent, host: '127.0.0.1', port, method: 'POST', path: target.path, headers: target.headers });
    req.on('response', (res) => {
      if (target.hangUp) {
        res.once('data', () => {
          req.destroy();
          resolve(res.statusCode);
        });
      } else {
        res.resume();
        res.on('end', () => resolve(res.statusCode));
      }
    });
    req.on('error', () => resolve(0));
    req.end(target.body);
  });
}

async function load(port, count) {
  const agent = new Agent({ keepAlive: true, maxSockets: 10 });
  let next = 0;
  const statuses = new Map();
  const worker = async () => {
    while (next < count) {
      const status = await send(agent, port, MIX[next++ % MIX.length]);
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
  };
  await Promise.all(Array.from({ length: 10 }, worker));
  agent.destroy();
  // Let the gateway see the closed sockets.
  await new Promise((resolve) => setTimeout(resolve, 500));
  return statuses;
}

const mock = await startMock();
const gateway = await startGateway(mock.port);
try {
  await load(gateway.port, 2_000);
  const before = await measure(gateway);
  const started = Date.now();
  const statuses = await load(gateway.port, total);
  const after = await measure(gateway);
  const heapRatio = after.heapUsed / before.heapUsed;
  const socketsOk = after.sockets <= Math.max(before.sockets * 1.1, before.sockets + 1);
  const result = {
    requests: total,
    seconds: (Date.now() - started) / 1000,
    statuses: Object.fromEntries(statuses),
    heapAfterGc: { before: before.heapUsed, after: after.heapUsed, ratio: Number(heapRatio.toFixed(3)) },
    openSockets: { before: before.sockets, after: after.sockets },
    clientConnections: { before: before.connections, after: after.connections },
    verdict: heapRatio <= 1.1 && socketsOk ? 'pass' : 'fail',
  };
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  process.exitCode = result.verdict === 'pass' ? 0 : 1;
} finally {
  gateway.child.kill('SIGTERM');
  mock.child.kill('SIGTERM');
}

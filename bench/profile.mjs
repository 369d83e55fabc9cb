// `node bench/profile.mjs [passThrough] [conversion] [mcp]`: the gateway in the production shape
// (PostgreSQL and Redis started here, records stored, export off) under `node --cpu-prof`, one gateway
// per path, 4,000 requests to warm up and 8,000 more at 10 connections; profiles in $PROFILE_DIR/<path> (default: the temp dir's gw-profiles),
// sampled every $PROFILE_INTERVAL_US µs (default 1000).
import { spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { closedLoop } from './lib.mjs';
import { startPostgres } from './shapes.mjs';
import { startRedis, redisServerPath } from './features.mjs';
function startProcess(script, env = {}, nodeArgs = []) {
  const child = spawn(process.execPath, [...nodeArgs, script], {
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      try {
        const p = JSON.parse(line);
        if (p.port) resolve({ child, port: p.port });
        else if (p.msg?.startsWith('gateway listening')) resolve({ child, port: Number(new URL(p.url).port) });
      } catch {
        // not a JSON line
      }
    });
  });
}
const mock = await startProcess(new URL('./mocks.mjs', import.meta.url).pathname);
const [pg, redis] = await Promise.all([startPostgres(), startRedis(redisServerPath())]);
const { privateKey } = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  publicKeyEncoding: { type: 'spki', format: 'pem' },
});
const dir = mkdtempSync(join(tmpdir(), 'gw-prof-'));
const cfg = {
  auth: { apiKeys: [{ key: 'gw-bench-key-000000', user: { user_id: 'bench' } }] },
  providers: [{ slug: 'bench', provider: 'anthropic', apiKey: 'sk-bench', baseUrl: `http://127.0.0.1:${mock.port}` }],
  mcpServers: [
    { slug: 'tools', url: `http://127.0.0.1:${mock.port}/mcp`, user_identity_forwarding: { method: 'jwt_header' } },
  ],
};
writeFileSync(join(dir, 'gw.json'), JSON.stringify(cfg));
const json = { 'content-type': 'application/json', 'x-gateway-api-key': 'gw-bench-key-000000' };
const anthropicBody = JSON.stringify({
  model: '@bench/claude-sonnet-4-5',
  max_tokens: 64,
  system: [{ type: 'text', text: 'Be brief.' }],
  messages: [{ role: 'user', content: 'Say something.' }],
});
const chatBody = JSON.stringify({
  model: '@bench/claude-sonnet-4-5',
  max_tokens: 64,
  messages: [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'Say something.' },
  ],
});
const mcpCall = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}';
const paths = {
  passThrough: ['/v1/messages', anthropicBody],
  conversion: ['/v1/chat/completions', chatBody],
  mcp: ['/mcp/tools', mcpCall],
};
const which = process.argv.slice(2).length ? process.argv.slice(2) : Object.keys(paths);
for (const name of which) {
  const profDir = join(process.env.PROFILE_DIR ?? join(tmpdir(), 'gw-profiles'), name);
  const gw = await startProcess(
    new URL('../examples/server/dist/main.js', import.meta.url).pathname,
    {
      GATEWAY_CONFIG: join(dir, 'gw.json'),
      DATABASE_URL: pg.url,
      REDIS_URL: redis.url,
      JWT_PRIVATE_KEY: privateKey,
      PORT: '0',
      LOG_LEVEL: 'info',
      NODE_ENV: 'production',
    },
    ['--cpu-prof', '--cpu-prof-dir', profDir, '--cpu-prof-interval', process.env.PROFILE_INTERVAL_US ?? '1000'],
  );
  gw.child.stdout.resume();
  const [path, body] = paths[name];
  await closedLoop({ port: gw.port, path, body, headers: json }, { connections: 10, count: 4000 });
  await closedLoop({ port: gw.port, path, body, headers: json }, { connections: 10, count: 8000 });
  gw.child.kill('SIGTERM');
  await new Promise((r) => gw.child.once('exit', r));
  console.log(name, readdirSync(profDir));
}
mock.child.kill();
redis.child.kill();
await pg.stop();

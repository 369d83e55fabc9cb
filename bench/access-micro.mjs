// In-process costs of the access path, for two builds side by side (this checkout and another
// one's dist, e.g. the commit before a change), in interleaved rounds, as CPU time per call:
// - the MCP authorize hook of an API-key caller (1,000 keys, 100 policies) in `open` and
//   `policies` mode, and of a caller with a tool gate;
// - filtering the bench mock's 200-tool `tools/list` answer (100 allowed) through that gate.
//
//   node bench/access-micro.mjs [--baseline <checkout>] [--rounds 7]
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { accessConfig } from './features.mjs';
import { BENCH_TOOLS as TOOLS, median } from './lib.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const option = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const rounds = Number(option('--rounds', 7));
const roots = { current: join(here, '..') };
if (option('--baseline') !== undefined) roots.baseline = resolve(option('--baseline'));

const answer = Buffer.from(`{"jsonrpc":"2.0","id":1,"result":${JSON.stringify({ tools: TOOLS })}}`);
const config = accessConfig({ auth: { apiKeys: [] } }, 'policies');

const builds = {};
for (const [name, root] of Object.entries(roots)) {
  const access = await import(join(root, 'packages/access/dist/index.js'));
  const gate = await import(join(root, 'packages/identity-forwarding/dist/core/tool-gate.js'));
  const { accessHooks } = await import(join(root, 'examples/server/dist/access/access-hooks.js'));
  const view = (mode) => ({
    access: access.compileAccess({ mode, policies: config.policies }),
    pinnedMcpServers: new Set(),
    apiKeyIds: new Map(),
  });
  // API-key identities: one frozen object per key, as the authenticator keeps them.
  const identities = config.auth.apiKeys.map((k, i) =>
    Object.freeze({
      method: 'api_key',
      subject: `key:${i}`,
      claims: { user_id: k.user.user_id, groups: k.user.groups },
    }),
  );
  const hooks = (mode) => {
    const v = view(mode);
    return accessHooks({ view: () => v, groupsClaim: 'groups' });
  };
  const [open, policies] = [hooks('open'), hooks('policies')];
  const gated = policies.mcp(identities[50], 'tools');
  if (gated.tools === undefined || policies.mcp(identities[0], 'tools').tools !== undefined) throw new Error('gate?');
  const ids = new Set(['n:1']);
  // Builds since the gate reads every answer take (body, gate); earlier ones also took the ids.
  const filter =
    gate.filterJsonBytes?.length === 2
      ? () => gate.filterJsonBytes(answer, gated.tools)
      : gate.filterJsonBytes
        ? () => gate.filterJsonBytes(answer, ids, gated.tools)
        : () => gate.filterJsonAnswer(answer.toString('utf8'), ids, gated.tools);
  let n = 0;
  builds[name] = {
    // Callers of the bench's ungated teams (0..49, 100..149, ...) in turn.
    'mcp open': () => open.mcp(identities[n++ % 50], 'tools'),
    'mcp policies': () => policies.mcp(identities[n++ % 50], 'tools'),
    'mcp policies, gated caller': () => policies.mcp(identities[50 + (n++ % 50)], 'tools'),
    'tools/list filter': filter,
  };
}

const perCall = (fn, count) => {
  const before = process.cpuUsage();
  for (let i = 0; i < count; i++) fn();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / count;
};
const counts = {
  'mcp open': 200_000,
  'mcp policies': 200_000,
  'mcp policies, gated caller': 200_000,
  'tools/list filter': 300,
};
const samples = {};
for (const cases of Object.values(builds)) for (const [c, fn] of Object.entries(cases)) perCall(fn, counts[c]);
for (let r = 0; r < rounds; r++) {
  const order = Object.keys(builds);
  if (r % 2 === 1) order.reverse();
  for (const b of order)
    for (const [c, fn] of Object.entries(builds[b])) (samples[`${b}: ${c}`] ??= []).push(perCall(fn, counts[c]));
}
const out = {};
for (const [k, v] of Object.entries(samples))
  out[k] = { medianMicros: +median(v).toFixed(3), min: +Math.min(...v).toFixed(3), max: +Math.max(...v).toFixed(3) };
process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);

// A virtual MCP server (CONTRACT section 16) of three members, `toolbox`, against its members' own
// endpoints on the bench's gateway, in the same interleaved rounds (issue #44's cost acceptance):
// - `list`: `tools/list` of the virtual server (three members of 200 tools each, asked in
//   parallel, merged with prefixes) against the slowest of the three members' own `tools/list`,
//   p50 at 1 connection, round by round;
// - `call`: a `tools/call` through the virtual server (B) against the same call on the member's
//   own endpoint (A), with the bare node:http proxy as the floor (features.mjs `sideBySide`): the
//   CPU per request of the gateway process at 10 connections, the member endpoint's work included
//   (handed in process: examples/server/src/mcp/virtual-fast-call.ts).
// Before anything is measured, one request of each subject must be answered as the row says.
import { probe, sideBySide } from './features.mjs';
import { closedLoop, median } from './lib.mjs';
import { ms, SIDE_BY_SIDE_HEAD, sideBySideLine, sideBySideTarget, spread } from './side-by-side-rows.mjs';

/** The members of `toolbox`, each an MCP server of the bench's gateway on the mock's `/mcp`. */
export const VIRTUAL_MEMBERS = ['tools', 'tools-b', 'tools-c'];

/** The virtual server's slug. */
export const VIRTUAL_SLUG = 'toolbox';

/** The `virtualServers` entry of the bench's config: each member with its own prefix (`a_`, `b_`, `c_`). */
export function virtualServerConfig() {
  return {
    slug: VIRTUAL_SLUG,
    name: 'Three members of 200 tools',
    members: VIRTUAL_MEMBERS.map((server, i) => ({ server, prefix: `${'abc'[i]}_` })),
  };
}

/** What an MCP client sends: a Streamable HTTP server answers JSON to it (the SDK refuses other requests `406`). */
const MCP_HEADERS = { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' };
const toolsList = '{"jsonrpc":"2.0","id":1,"method":"tools/list"}';
const call = (name) => JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: {} } });

const summary = (values) => ({ median: median(values), min: Math.min(...values), max: Math.max(...values) });
const p50 = async (target, count) => median((await closedLoop(target, { connections: 1, count })).map((s) => s.total));

/**
 * The virtual server's two comparisons. `at(path, body, headers)` is a request to the gateway with
 * the bench's API key. `c`: `{ latency, rounds, warm, cpu, cpuWarm, cpuRounds }`.
 */
export async function virtualBenchmarks({ gateway, bare, mock, at, c, log }) {
  const json = { 'content-type': 'application/json' };
  const members = VIRTUAL_MEMBERS.map((slug) => at(`/mcp/${slug}`, toolsList, MCP_HEADERS));
  const virtualList = at(`/mcp/${VIRTUAL_SLUG}`, toolsList, MCP_HEADERS);
  const ownCall = at('/mcp/tools', call('tool_000'), MCP_HEADERS);
  const virtualCall = at(`/mcp/${VIRTUAL_SLUG}`, call('a_tool_000'), MCP_HEADERS);

  // Each subject answers as its row says: 600 prefixed tools, and the member's call result.
  const listed = await probe(virtualList);
  const names = listed.body?.result?.tools?.map((t) => t.name) ?? [];
  if (listed.status !== 200 || names.length !== 600 || names[0] !== 'a_tool_000' || names[599] !== 'c_tool_199')
    throw new Error(
      `virtual: tools/list of ${VIRTUAL_SLUG} answered ${listed.status} ${JSON.stringify(listed.body).slice(0, 300)}`,
    );
  for (const [name, target] of [
    ['own', ownCall],
    ['virtual', virtualCall],
  ]) {
    const answer = await probe(target);
    if (answer.status !== 200 || answer.body?.result?.content?.[0]?.text !== 'ok')
      throw new Error(
        `virtual: the ${name} tools/call answered ${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}`,
      );
  }

  log(
    `virtual: tools/list of ${VIRTUAL_SLUG} (3 members) against its slowest member; tools/call against the member's own`,
  );
  for (const target of [...members, virtualList]) await closedLoop(target, { connections: 1, count: c.warm });
  const memberP50 = VIRTUAL_MEMBERS.map(() => []);
  const virtualP50 = [];
  const overSlowest = [];
  for (let r = 0; r < c.rounds; r++) {
    // Rotating order: the virtual server first in one round, last in the next.
    const order = [...Array(VIRTUAL_MEMBERS.length + 1).keys()];
    const rotated = [...order.slice(r % order.length), ...order.slice(0, r % order.length)];
    const round = [];
    for (const i of rotated) round[i] = await p50(i < VIRTUAL_MEMBERS.length ? members[i] : virtualList, c.latency);
    round.slice(0, -1).forEach((value, i) => memberP50[i].push(value));
    const virtual = round.at(-1);
    virtualP50.push(virtual);
    overSlowest.push(virtual - Math.max(...round.slice(0, -1)));
  }
  const list = {
    label: `tools/list of \`${VIRTUAL_SLUG}\` (three members of 200 tools, prefixed), against the slowest member's own \`tools/list\``,
    p50Micros: {
      virtual: summary(virtualP50),
      members: Object.fromEntries(VIRTUAL_MEMBERS.map((slug, i) => [slug, summary(memberP50[i])])),
    },
    overSlowestMemberMicros: summary(overSlowest),
  };

  const subject = (label, target) => ({ label, pid: gateway.child.pid, target });
  const { call: calls } = await sideBySide(
    [
      {
        name: 'call',
        label: `tools/call through \`${VIRTUAL_SLUG}\` (\`a_tool_000\`), against the same call on the member's own endpoint`,
        a: subject('/mcp/tools', ownCall),
        b: subject(`/mcp/${VIRTUAL_SLUG}`, virtualCall),
        floor: {
          pid: bare.child.pid,
          target: { port: bare.port, path: '/mcp', body: call('tool_000'), headers: json },
        },
        direct: { port: mock.port, path: '/mcp', body: call('tool_000'), headers: json },
      },
    ],
    c,
  );
  return { list, call: calls };
}

/** The virtual server's rows of the targets table (issue #44's cost acceptance). */
export function virtualTargets(virtual) {
  if (!virtual) return [];
  const { list, call } = virtual;
  const slowest = Math.max(...Object.values(list.p50Micros.members).map((m) => m.median));
  return [
    {
      metric: `virtual MCP server: tools/list of a virtual server of three members (200 tools each) answers within the slowest member's time + 2 ms, p50 at 1 connection, same gateway and rounds`,
      target: '≤ +2 ms',
      value: list.overSlowestMemberMicros.median / 1000,
      measured: `${spread(list.overSlowestMemberMicros, ms)} over the slowest member (${ms(list.p50Micros.virtual.median)} against ${ms(slowest)})`,
      floor: '—',
      ratio: '—',
      met: list.overSlowestMemberMicros.median <= 2000,
    },
    sideBySideTarget(
      `virtual MCP server: a tools/call through it, CPU per request against the same call on the member's own endpoint, 10 connections, same gateway and rounds`,
      '≤ 1.20×',
      1.2,
      call,
    ),
  ];
}

/** The virtual server's comparisons in full. */
export function virtualSection(report) {
  const v = report.virtual;
  if (!v) return [];
  const c = report.counts.routing;
  const { list, call } = v;
  return [
    `## Virtual MCP server of three members (embedded; ${c.rounds} rounds of ${c.latency} requests at 1 connection, ${c.cpuRounds} rounds of ${c.cpu} at 10 connections)`,
    '',
    `\`${VIRTUAL_SLUG}\` has three members, each an MCP server of the bench's gateway on the mock (200 tools), prefixed \`a_\`, \`b_\`, \`c_\`. The gateway hands each call, and each member's list page, in process to the member's own endpoint (its MCP proxy, with the caller's identity: no loopback request, no SDK client; the member session comes from a member client kept initialized per caller), so the call's CPU includes the member endpoint's checks, made once. Before measuring, the bench checks the list has 600 prefixed tools and the call answers the mock's result.`,
    '',
    '| comparison | p50 (median of rounds) | over the slowest member |',
    '| --- | --- | --- |',
    `| ${list.label} | ${ms(list.p50Micros.virtual.median)}; members ${Object.entries(list.p50Micros.members)
      .map(([slug, m]) => `${slug} ${ms(m.median)}`)
      .join(', ')} | ${spread(list.overSlowestMemberMicros, ms)} |`,
    '',
    ...SIDE_BY_SIDE_HEAD,
    sideBySideLine(call),
    '',
  ];
}

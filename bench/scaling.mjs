// How the gateway's cost grows with the work it is given: request bodies of 1 KB, 64 KB and 1 MB
// (long conversations: many messages), MCP tools/call with jwt_header for 10, 100 and 1,000
// distinct users, and 1, 10 and 100 concurrent streams. Every row is measured in the same
// interleaved rounds as the bare node:http proxy (the floor) and the mock directly, so each figure
// comes with the floor of its own round and the ratio to it (median of rounds, min – max).
import { closedLoop, median, percentile, processCpuMicros } from './lib.mjs';

/**
 * Median, min and max of the finite values (a ratio whose floor read 0 ticks is left out); all
 * null when there is none.
 */
export function summary(values) {
  const finite = values.filter((v) => Number.isFinite(v));
  if (finite.length === 0) return { median: null, min: null, max: null };
  return { median: median(finite), min: Math.min(...finite), max: Math.max(...finite) };
}
const json = { 'content-type': 'application/json' };

/** The body sizes of the scaling rows, in bytes (each body is at least this long). */
export const BODY_SIZES = [
  ['1 KB', 1024],
  ['64 KB', 64 * 1024],
  ['1 MB', 1024 * 1024],
];
/** How many distinct callers the MCP rows cycle through. */
export const MCP_USERS = [10, 100, 1000];
/** How many streams run at once in the stream rows. */
export const STREAM_CONCURRENCY = [1, 10, 100];
/** Events in each mock stream (bench/mocks.mjs sends 1,000 deltas). */
export const STREAM_EVENTS = 1000;

/**
 * Counts of the scaling section by mode: smoke (CI; the smallest step of each row only, to keep
 * the run short), quick and full.
 */
export function scalingCounts(mode) {
  if (mode === 'smoke')
    return {
      rounds: 1,
      latency: 5,
      cpu: 20,
      warm: 10,
      mcpLatency: 5,
      mcpCpu: 20,
      streamsPer: 1,
      minStreams: 2,
      steps: 1,
    };
  if (mode === 'quick')
    return {
      rounds: 3,
      latency: 100,
      cpu: 500,
      warm: 200,
      mcpLatency: 200,
      mcpCpu: 1000,
      streamsPer: 2,
      minStreams: 20,
      steps: 3,
    };
  return {
    rounds: 5,
    latency: 300,
    cpu: 1500,
    warm: 500,
    mcpLatency: 500,
    mcpCpu: 3000,
    streamsPer: 5,
    minStreams: 50,
    steps: 3,
  };
}

/** The API key of scaling caller `i` (1,000 of them are added to the gateway's config). */
export const scaleKey = (i) => `gw-bench-scale-${String(i).padStart(6, '0')}`;

/** The gateway config of the scaling rows: the bench's config with 1,000 more API keys. */
export function scalingConfig(fileConfig) {
  const keys = Array.from({ length: Math.max(...MCP_USERS) }, (_, i) => ({
    key: scaleKey(i),
    user: { user_id: `scale-u${i}`, email: `scale-u${i}@example.com` },
  }));
  return { ...fileConfig, auth: { ...fileConfig.auth, apiKeys: [...fileConfig.auth.apiKeys, ...keys] } };
}

/**
 * A conversation of at least `bytes` bytes of JSON: alternating user and assistant turns of about
 * 400 characters each, ending on a user turn. `shape` is `chat` (OpenAI, with a system message) or
 * `messages` (Anthropic, with `system`).
 */
export function conversationBody(bytes, shape, model) {
  const turn = (i) =>
    `Turn ${i}: ${'the quick brown fox jumps over the lazy dog and then it looks back at the river bank '.repeat(4)}`.slice(
      0,
      400,
    );
  const messages = [];
  const head = shape === 'chat' ? { model, max_tokens: 64 } : { model, max_tokens: 64, system: 'Be brief.' };
  const build = () =>
    JSON.stringify({
      ...head,
      messages: shape === 'chat' ? [{ role: 'system', content: 'Be brief.' }, ...messages] : messages,
    });
  // The length grows by each turn's JSON and a comma: counted, not rebuilt turn by turn.
  let length = build().length;
  // Bounded: 1 MB is about 2,500 turns of 400 characters.
  for (let i = 0; i < 100_000; i++) {
    const message = { role: i % 2 === 0 ? 'user' : 'assistant', content: turn(i) };
    length += JSON.stringify(message).length + (messages.length > 0 || shape === 'chat' ? 1 : 0);
    messages.push(message);
    if (i % 2 === 0 && length >= bytes) break;
  }
  const body = build();
  if (body.length !== length) throw new Error(`a conversation of ${body.length} bytes was counted as ${length}`);
  return { body, messages: messages.length };
}

/** One reading of `count` requests at `connections`: CPU per request of `pid`, and the latencies. */
async function reading({ pid, target }, connections, count) {
  const before = pid ? processCpuMicros(pid) : 0;
  const samples = await closedLoop(target, { connections, count });
  const totals = samples.map((s) => s.total);
  const ttfbs = samples.map((s) => s.ttfb);
  return {
    cpu: pid ? (processCpuMicros(pid) - before) / count : undefined,
    p50: median(totals),
    p99: percentile(totals, 99),
    ttfbP50: median(ttfbs),
    ttfbP99: percentile(ttfbs, 99),
  };
}

/**
 * Interleaved rounds: in round `r` the subjects in rotating order (none always goes first), each
 * `count` requests at `connections`, then the direct path when given. Subjects are warmed first
 * with `warm` requests each. `count` may be a number or a function of the subject.
 * A subject: `{ name, pid, target }` (target as closedLoop takes it). Returns the readings by name,
 * `direct` being the direct path's.
 */
export async function measureRounds(subjects, { rounds, connections, count, warm = 0, direct }) {
  const countOf = (s) => (typeof count === 'function' ? count(s) : count);
  for (const s of subjects) if (warm > 0) await closedLoop(s.target, { connections, count: warm });
  const readings = Object.fromEntries(subjects.map((s) => [s.name, []]));
  readings.direct = [];
  for (let r = 0; r < rounds; r++) {
    const shift = r % subjects.length;
    for (const s of [...subjects.slice(shift), ...subjects.slice(0, shift)])
      readings[s.name].push(await reading(s, connections, countOf(s)));
    if (direct) readings.direct.push(await reading({ target: direct.target }, connections, countOf(direct)));
  }
  return readings;
}

/** Per-round figures of a subject: `field` of each round, or minus the direct path's (`added`). */
export const perRound = (list, field) => list.map((x) => x[field]);
export const addedPerRound = (list, direct, field) => list.map((x, i) => x[field] - direct[i][field]);
export const ratioPerRound = (a, b) => a.map((x, i) => (b[i] > 0 ? x / b[i] : null));

/**
 * One row against the floor: p50 at 1 connection and what it adds over the mock (each round's
 * direct p50), CPU per request at 10 connections, and the ratios to the floor of the same rounds.
 */
function rowAgainstFloor(name, latency, cpu, floorName = 'floor') {
  const [lat, flat, dir] = [latency[name], latency[floorName], latency.direct];
  const added = addedPerRound(lat, dir, 'p50');
  const floorAdded = addedPerRound(flat, dir, 'p50');
  const cpus = perRound(cpu[name], 'cpu');
  const floorCpus = perRound(cpu[floorName], 'cpu');
  return {
    p50Micros: summary(perRound(lat, 'p50')),
    p99Micros: summary(perRound(lat, 'p99')),
    addedP50Micros: summary(added),
    cpuMicrosPerRequest: summary(cpus),
    floor: {
      p50Micros: summary(perRound(flat, 'p50')),
      addedP50Micros: summary(floorAdded),
      cpuMicrosPerRequest: summary(floorCpus),
    },
    directP50Micros: summary(perRound(dir, 'p50')),
    ratio: { addedP50: summary(ratioPerRound(added, floorAdded)), cpu: summary(ratioPerRound(cpus, floorCpus)) },
  };
}

/**
 * The scaling rows. `gateway` is a gateway process started on {@link scalingConfig} (the caller
 * starts and stops it), `bare` the bare proxy and `mock` the mock upstreams, each `{ child, port }`.
 */
export async function scalingBenchmarks({ gateway, bare, mock, mode, log = () => undefined }) {
  const c = scalingCounts(mode);
  const on = (proc, path, body, headers = {}) => ({ port: proc.port, path, body, headers: { ...json, ...headers } });
  const gw = (path, body, key = 'gw-bench-key-000000') => on(gateway, path, body, { 'x-gateway-api-key': key });
  const [gid, bid] = [gateway.child.pid, bare.child.pid];
  const out = { counts: c, bodies: {}, mcpUsers: {}, streams: {} };
  const [sizes, userCounts, concurrency] = [BODY_SIZES, MCP_USERS, STREAM_CONCURRENCY].map((list) =>
    list.slice(0, c.steps),
  );

  // Request bodies: chat completions and messages of each size, with the floor and the mock on
  // the Anthropic body of the same size.
  log('scaling: request bodies');
  for (const [label, bytes] of sizes) {
    const chat = conversationBody(bytes, 'chat', '@bench/claude-sonnet-4-5');
    const messages = conversationBody(bytes, 'messages', '@bench/claude-sonnet-4-5');
    const upstream = conversationBody(bytes, 'messages', 'claude-sonnet-4-5');
    const scale = Math.max(1, Math.round(bytes / (64 * 1024)));
    const latencyCount = Math.max(3, Math.round(c.latency / Math.min(scale, 10)));
    const cpuCount = Math.max(10, Math.round(c.cpu / Math.min(scale * 2, 20)));
    const subjects = [
      { name: 'chat', pid: gid, target: gw('/v1/chat/completions', chat.body) },
      { name: 'messages', pid: gid, target: gw('/v1/messages', messages.body) },
      { name: 'floor', pid: bid, target: on(bare, '/v1/messages', upstream.body) },
    ];
    const direct = { target: on(mock, '/v1/messages', upstream.body) };
    const latency = await measureRounds(subjects, {
      rounds: c.rounds,
      connections: 1,
      count: latencyCount,
      warm: Math.min(latencyCount, c.warm),
      direct,
    });
    const cpu = await measureRounds(subjects, {
      rounds: c.rounds,
      connections: 10,
      count: cpuCount,
      warm: Math.min(cpuCount, c.warm),
    });
    out.bodies[label] = {
      bytes: { chat: chat.body.length, messages: messages.body.length },
      messageCount: { chat: chat.messages + 1, messages: messages.messages },
      latencyCount,
      cpuCount,
      chat: rowAgainstFloor('chat', latency, cpu),
      messages: rowAgainstFloor('messages', latency, cpu),
    };
  }

  // MCP tools/call with jwt_header: each subject cycles through its own number of callers, all of
  // whose tokens are cached by the warm-up (the token cache holds 10,000).
  log('scaling: MCP callers');
  const mcpBody = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}';
  const cycling = (users) => {
    let next = 0;
    return () => gw('/mcp/tools', mcpBody, scaleKey(next++ % users));
  };
  const mcpSubjects = [
    ...userCounts.map((users) => ({ name: `u${users}`, pid: gid, target: cycling(users) })),
    { name: 'floor', pid: bid, target: on(bare, '/mcp', mcpBody) },
  ];
  for (const users of userCounts)
    await closedLoop(mcpSubjects.find((s) => s.name === `u${users}`).target, {
      connections: 10,
      count: users,
    });
  const mcpLatency = await measureRounds(mcpSubjects, {
    rounds: c.rounds,
    connections: 1,
    count: c.mcpLatency,
    warm: c.warm,
    direct: { target: on(mock, '/mcp', mcpBody) },
  });
  const mcpCpu = await measureRounds(mcpSubjects, { rounds: c.rounds, connections: 10, count: c.mcpCpu, warm: c.warm });
  for (const users of userCounts) out.mcpUsers[users] = rowAgainstFloor(`u${users}`, mcpLatency, mcpCpu);

  // Concurrent streams: chat completions converted from the mock's 1,000-event stream, against
  // the floor passing the same stream through; CPU per event and time to first byte.
  log('scaling: concurrent streams');
  const streamChat = JSON.stringify({
    model: '@bench/claude-sonnet-4-5',
    max_tokens: 64,
    stream: true,
    messages: [{ role: 'user', content: 'Say something.' }],
  });
  const streamUpstream = JSON.stringify({
    model: 'claude-sonnet-4-5',
    max_tokens: 64,
    stream: true,
    messages: [{ role: 'user', content: 'Say something.' }],
  });
  const streams = (concurrency) => Math.max(concurrency * c.streamsPer, c.minStreams);
  const streamRounds = Object.fromEntries(concurrency.map((n) => [n, { gateway: [], floor: [], direct: [] }]));
  for (const n of concurrency) {
    const subjects = [
      { name: 'gateway', pid: gid, target: gw('/v1/chat/completions', streamChat) },
      { name: 'floor', pid: bid, target: on(bare, '/v1/messages', streamUpstream) },
    ];
    for (const s of subjects) await closedLoop(s.target, { connections: n, count: streams(n) });
  }
  for (let r = 0; r < c.rounds; r++) {
    for (const n of concurrency) {
      const subjects = [
        { name: 'gateway', pid: gid, target: gw('/v1/chat/completions', streamChat) },
        { name: 'floor', pid: bid, target: on(bare, '/v1/messages', streamUpstream) },
      ];
      const round = await measureRounds(r % 2 === 0 ? subjects : subjects.reverse(), {
        rounds: 1,
        connections: n,
        count: streams(n),
        direct: { target: on(mock, '/v1/messages', streamUpstream) },
      });
      for (const side of ['gateway', 'floor', 'direct']) streamRounds[n][side].push(round[side][0]);
    }
  }
  for (const n of concurrency) {
    const { gateway: g, floor: f, direct: d } = streamRounds[n];
    const perEvent = (list) => list.map((x) => x.cpu / STREAM_EVENTS);
    out.streams[n] = {
      streams: streams(n),
      cpuMicrosPerEvent: summary(perEvent(g)),
      ttfbP50Micros: summary(perRound(g, 'ttfbP50')),
      ttfbP99Micros: summary(perRound(g, 'ttfbP99')),
      p50Micros: summary(perRound(g, 'p50')),
      floor: {
        cpuMicrosPerEvent: summary(perEvent(f)),
        ttfbP50Micros: summary(perRound(f, 'ttfbP50')),
        ttfbP99Micros: summary(perRound(f, 'ttfbP99')),
        p50Micros: summary(perRound(f, 'p50')),
      },
      direct: { ttfbP50Micros: summary(perRound(d, 'ttfbP50')), ttfbP99Micros: summary(perRound(d, 'ttfbP99')) },
      ratio: {
        cpu: summary(ratioPerRound(perEvent(g), perEvent(f))),
        ttfbP50: summary(ratioPerRound(perRound(g, 'ttfbP50'), perRound(f, 'ttfbP50'))),
      },
    };
  }
  return out;
}

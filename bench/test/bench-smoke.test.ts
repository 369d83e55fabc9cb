import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

jest.setTimeout(240_000);

describe('pnpm bench', () => {
  it('runs every scenario with tiny counts and writes a report of the expected shape', () => {
    const out = mkdtempSync(join(tmpdir(), 'bench-smoke-'));
    // The bench's own temporary folder (gateway databases, configs) goes in here, and must be
    // gone when it ends: a run leaves 100+ MB there otherwise.
    const temp = mkdtempSync(join(tmpdir(), 'bench-smoke-tmp-'));
    const run = spawnSync(
      process.execPath,
      ['--expose-gc', join(__dirname, '..', 'run.mjs'), '--smoke', '--out', out],
      { encoding: 'utf8', timeout: 230_000, env: { ...process.env, TMPDIR: temp } },
    );
    const left = readdirSync(temp);
    rmSync(temp, { recursive: true, force: true });
    expect(left).toEqual([]);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    const report = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8'));
    expect(report.mode).toBe('smoke');
    expect(report.scenarios.map((s: { name: string }) => s.name)).toEqual([
      'bare node:http proxy (baseline), /v1/messages',
      '/v1/chat/completions, non-streaming, with conversion',
      '/v1/responses, non-streaming, with conversion',
      '/v1/messages pass-through',
      'MCP tools/call, jwt_header, cached tokens (100 users)',
      'MCP tools/call, jwt_header, forced misses (a new user per request)',
      'signed Bedrock retrieve',
      'streaming conversion of 1,000 events, one event per chunk',
      '/v1/responses streaming conversion of 1,000 events, one event per chunk',
      'stream pass-through, /v1/messages, 1,000 events, one event per chunk',
      'bare node:http proxy, paced stream, 25 events 5 ms apart',
      'paced stream conversion, 25 events 5 ms apart',
      'paced stream pass-through, /v1/messages, 25 events 5 ms apart',
    ]);
    for (const scenario of report.scenarios) {
      for (const key of ['gatewayP50Micros', 'directP50Micros', 'addedP50Micros']) {
        expect(Object.keys(scenario[key]).sort()).toEqual(['max', 'median', 'min']);
      }
    }
    expect(Object.keys(report.load).sort()).toEqual([
      'bareProxy',
      'bedrock',
      'conversion',
      'mcpCached',
      'passThrough',
      'responses',
      'stream',
    ]);
    for (const path of ['bareProxy', 'bedrock', 'conversion', 'mcpCached', 'passThrough', 'responses']) {
      expect(Object.keys(report.load[path].overBare).sort()).toEqual(['max', 'median', 'min']);
    }
    expect(Object.keys(report.streams.cpu).sort()).toEqual([
      'bareProxy',
      'burst',
      'conversion',
      'passThrough',
      'responses',
    ]);
    // /v1/responses beside chat completions: CPU per event over the bare proxy's (per request: above).
    expect(Object.keys(report.streams.cpu.responses.overFloor).sort()).toEqual(['max', 'median', 'min']);
    for (const path of Object.values(report.streams.cpu) as { cpuMicrosPerEvent: { median: number } }[])
      // Smoke counts use a few ms of CPU, near the clock's 10 ms ticks: a figure, possibly 0.
      expect(path.cpuMicrosPerEvent.median).toBeGreaterThanOrEqual(0);
    expect(report.streams.amongBusy.gatewayTtfbMicros.median).toBeGreaterThan(0);
    expect(Object.keys(report.catalog.latency).sort()).toEqual(['conversion', 'passThrough']);
    expect(Object.keys(report.catalog.load).sort()).toEqual(['conversion', 'passThrough']);
    for (const path of ['conversion', 'passThrough']) {
      for (const part of [report.catalog.latency[path], report.catalog.load[path]]) {
        expect(Object.keys(part.ratio).sort()).toEqual(['max', 'median', 'min']);
        expect(part.ratio.median).toBeGreaterThan(0);
      }
    }
    expect(report.catalog.apiKeys).toBe(report.counts.catalog.apiKeys);
    expect(Object.keys(report.features.cache).sort()).toEqual(
      report.features.cache.redisSkipped ? ['memory', 'redisSkipped'] : ['memory', 'redis'],
    );
    expect(Object.keys(report.features.access).sort()).toEqual([
      'mcpCall',
      'mcpCallSame',
      'passThrough',
      'passThroughSame',
      'toolsList',
      'toolsListed',
    ]);
    expect(report.features.access.toolsListed).toEqual({ withoutGate: 200, withGate: 100 });
    // The cost of a limit check (Redis on loopback) beside no limits.
    expect(Object.keys(report.features.limits)).toEqual(
      report.features.limits.redisSkipped ? ['redisSkipped'] : ['redis'],
    );
    expect(Object.keys(report.features.tracing).sort()).toEqual([
      'exportOn',
      'receiver',
      'records',
      'recordsStored',
      'traceparent',
    ]);
    for (const comparison of [report.features.cache.memory, report.features.access.toolsList]) {
      expect(comparison.p50Micros.floor.median).toBeGreaterThan(0);
      // 40 requests of the bare proxy use about 2 ms of CPU, under one 10 ms tick: possibly 0.
      expect(comparison.cpuMicrosPerRequest.floor.median).toBeGreaterThanOrEqual(0);
    }
    expect(report.features.tracing.records.dropped).toBe(0);
    // Cost as work grows: smoke runs take the smallest step of each row, beside the floor.
    expect(Object.keys(report.scaling.bodies)).toEqual(['1 KB']);
    expect(Object.keys(report.scaling.mcpUsers)).toEqual(['10']);
    expect(Object.keys(report.scaling.streams)).toEqual(['1']);
    type Summary = { median: number };
    type Row = { p50Micros: Summary; floor: { p50Micros: Summary }; ratio: Record<string, Summary> };
    const bodies = Object.values(report.scaling.bodies) as { chat: Row; messages: Row }[];
    for (const row of [
      ...bodies.flatMap((b) => [b.chat, b.messages]),
      ...(Object.values(report.scaling.mcpUsers) as Row[]),
    ]) {
      expect(row.p50Micros.median).toBeGreaterThan(0);
      expect(row.floor.p50Micros.median).toBeGreaterThan(0);
      expect(Object.keys(row.ratio).sort()).toEqual(['addedP50', 'cpu']);
    }
    expect(report.scaling.bodies['1 KB'].bytes.chat).toBeGreaterThanOrEqual(1024);
    for (const row of Object.values(report.scaling.streams) as { ttfbP50Micros: Summary }[])
      expect(row.ttfbP50Micros.median).toBeGreaterThan(0);
    // MCP tools/call by credential: the gateway access token came through the OAuth endpoints and
    // each credential's call answered before the rounds.
    expect(report.mcpAuth.shape).toBe('embedded');
    expect(Object.keys(report.mcpAuth.paths)).toEqual([
      'apiKey',
      'identityProviderToken',
      'gatewayAccessToken',
      'upstreamOAuthToken',
      'bareProxy',
    ]);
    expect(Object.keys(report.mcpAuth.upstreamOAuthTokenOverJwtHeader).sort()).toEqual(['addedP50', 'cpu']);
    for (const path of Object.values(report.mcpAuth.paths) as { addedP50Micros: object }[])
      expect(Object.keys(path.addedP50Micros).sort()).toEqual(['max', 'median', 'min']);
    // The peer gateway is measured only with --peers (CI never installs it).
    expect(report.peers).toBeUndefined();
    // Routing across targets (a two-target fallback against no config) and Claude on Bedrock
    // (against the anthropic provider): each answered as its row says before the rounds; the
    // request without a config against itself (the noise the fallback's row is judged within).
    expect(Object.keys(report.routing)).toEqual(['fallback', 'bedrock', 'same']);
    for (const comparison of Object.values(report.routing) as {
      addedP50Micros: Record<string, object>;
      ratio: Record<string, object>;
    }[]) {
      expect(Object.keys(comparison.addedP50Micros).sort()).toEqual(['a', 'b', 'floor']);
      expect(Object.keys(comparison.ratio).sort()).toEqual(['addedP50', 'cpu', 'cpuOverFloor']);
    }
    // A virtual MCP server of three members: its tools/list against its slowest member, and a call
    // through it against the same call on the member's own endpoint.
    expect(Object.keys(report.virtual)).toEqual(['list', 'call']);
    expect(Object.keys(report.virtual.list.p50Micros.members)).toEqual(['tools', 'tools-b', 'tools-c']);
    expect(Object.keys(report.virtual.call.ratio).sort()).toEqual(['addedP50', 'cpu', 'cpuOverFloor']);
    expect(report.targets).toHaveLength(35);
    // A row is met or not, or says why it was not measured (smoke runs build no earlier gateway).
    for (const target of report.targets)
      expect(target.met === null ? target.measured : typeof target.met).toMatch(/^(boolean|not measured: .+)$/);
    const doc = readFileSync(join(out, 'benchmarks.md'), 'utf8');
    expect(doc).toContain('## Targets');
    expect(doc).toContain('## Cost as work grows');
    expect(doc).toContain('## MCP tools/call by credential');
    expect(doc).toContain('## Routing across targets and Claude on Bedrock');
    expect(doc).toContain('## Virtual MCP server of three members');
    expect(doc).toContain('Not measured in this run (no `--peers`).');
    for (const target of report.targets) expect(doc).toContain(target.metric);
  });
});

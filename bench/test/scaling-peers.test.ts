import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { inBenchModule } from './in-module';

const bench = join(__dirname, '..');

/** Runs `code` beside bench/scaling.mjs (its namespace as `scaling`) and answers what it printed as JSON. */
const inModule = (code: string): unknown => inBenchModule('scaling.mjs', 'scaling', code, 60000);

describe('scaling rows', () => {
  it('builds conversations of each size: alternating turns that end on the user', () => {
    type Built = { bytes: number; shape: string; body: string; messages: number };
    const built = inModule(`
      const out = [];
      for (const [, bytes] of scaling.BODY_SIZES)
        for (const shape of ['chat', 'messages']) out.push({ bytes, shape, ...scaling.conversationBody(bytes, shape, 'm') });
      process.stdout.write(JSON.stringify(out));
    `) as Built[];
    expect(built.map((b) => b.bytes)).toEqual([1024, 1024, 65536, 65536, 1048576, 1048576]);
    for (const { bytes, shape, body, messages } of built) {
      expect(body.length).toBeGreaterThanOrEqual(bytes);
      // At most one user and one assistant turn past the size.
      expect(body.length).toBeLessThan(bytes + 1000);
      const parsed = JSON.parse(body) as { messages: { role: string }[]; system?: string };
      const turns = shape === 'chat' ? parsed.messages.slice(1) : parsed.messages;
      if (shape === 'chat') expect(parsed.messages[0]?.role).toBe('system');
      else expect(parsed.system).toBe('Be brief.');
      expect(turns).toHaveLength(messages);
      turns.forEach((turn, i) => expect(turn.role).toBe(i % 2 === 0 ? 'user' : 'assistant'));
      expect(turns.at(-1)?.role).toBe('user');
    }
  });

  it('adds 1,000 distinct callers to the config and keeps its own keys', () => {
    const keys = inModule(`
      const config = scaling.scalingConfig({ auth: { apiKeys: [{ key: 'k', user: { user_id: 'u' } }] }, providers: [] });
      process.stdout.write(JSON.stringify(config.auth.apiKeys.map((k) => k.key)));
    `) as string[];
    expect(keys).toHaveLength(1001);
    expect(new Set(keys).size).toBe(1001);
    expect(keys).toContain('k');
  });

  it('leaves out a ratio whose floor read nothing, and says null when none is left', () => {
    expect(
      inModule(`process.stdout.write(JSON.stringify([
        scaling.ratioPerRound([2, 3, 0], [1, 0, 0]).map(String), scaling.summary([3, null, 1, 2]), scaling.summary([null, NaN]),
      ]));`),
    ).toEqual([['2', 'null', 'null'], { median: 2, min: 1, max: 3 }, { median: null, min: null, max: null }]);
  });

  it('rotates the subjects round by round, ends each round with the direct path, and reads CPU', () => {
    type Reading = { cpu?: number; p50: number; p99: number };
    const { seen, readings } = inModule(`
      import('node:http').then(async ({ createServer }) => {
        const seen = [];
        const server = createServer((req, res) => { seen.push(req.url); req.resume(); req.on('end', () => res.end('ok')); });
        await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
        const target = (path) => ({ port: server.address().port, path, body: '{}', headers: { 'content-type': 'application/json' } });
        const subjects = ['a', 'b', 'c'].map((name) => ({ name, pid: process.pid, target: target('/' + name) }));
        const readings = await scaling.measureRounds(subjects, { rounds: 3, connections: 1, count: 2, direct: { target: target('/direct') } });
        server.close();
        process.stdout.write(JSON.stringify({ seen, readings }));
      });
    `) as { seen: string[]; readings: Record<string, Reading[]> };
    const order = seen.filter((_path, i) => i % 2 === 0);
    expect(order).toEqual(['/a', '/b', '/c', '/direct', '/b', '/c', '/a', '/direct', '/c', '/a', '/b', '/direct']);
    for (const name of ['a', 'b', 'c']) {
      expect(readings[name]).toHaveLength(3);
      for (const r of readings[name] ?? []) {
        expect(r.cpu).toBeGreaterThanOrEqual(0);
        expect(r.p50).toBeGreaterThan(0);
        expect(r.p99).toBeGreaterThanOrEqual(r.p50);
      }
    }
    expect(readings.direct).toHaveLength(3);
    expect(readings.direct?.[0]?.cpu).toBeUndefined();
  });
});

describe('the peer gateway stays out of installs and CI', () => {
  const peer = join(bench, 'peers', 'portkey');
  const manifest = JSON.parse(readFileSync(join(peer, 'package.json'), 'utf8'));
  const lock = JSON.parse(readFileSync(join(peer, 'package-lock.json'), 'utf8'));

  it('is pinned at 1.15.2 with @hono/node-server 1.13.x, in its manifest and its lockfile', () => {
    expect(manifest.dependencies).toEqual({
      '@hono/node-server': expect.stringMatching(/^1\.13\.\d+$/),
      '@portkey-ai/gateway': '1.15.2',
    });
    expect(lock.packages['node_modules/@portkey-ai/gateway'].version).toBe('1.15.2');
    expect(lock.packages['node_modules/@hono/node-server'].version).toBe(manifest.dependencies['@hono/node-server']);
    // The lockfile names no registry: `npm ci` resolves from whichever one npm is set up with.
    expect(JSON.stringify(lock)).not.toMatch(/"resolved"/);
  });

  it('is outside the pnpm workspace, and its node_modules is ignored by git', () => {
    const workspace = readFileSync(join(bench, '..', 'pnpm-workspace.yaml'), 'utf8');
    expect(workspace).toMatch(/^\s+- '!bench\/peers\/\*\*'$/m);
    const ignored = execFileSync('git', ['check-ignore', join(peer, 'node_modules', 'x')], { encoding: 'utf8' });
    expect(ignored.trim()).not.toBe('');
  });
});

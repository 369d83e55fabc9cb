import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { node22, startGateway, writeConfig, type RunningGateway } from '../support';
import { startCredentialHop, type Listening } from './sdk-server';
import { startStatelessServer } from './stateless-server';

/**
 * The official MCP conformance suite's `server-stateless` scenario (revision 2026-07-28,
 * SEP-2575), under Node 22 as the suite requires, against a stateless server that answers
 * `subscriptions/listen` with newline-delimited JSON that never ends: directly, through the
 * gateway without a gate, and through it under a tool gate (access policies allowing the
 * scenario's `test_*` tools): every check passes through the gateway as it passes directly. The
 * three runs go at once (about 10 s in all), on the Node 22 binary itself rather than through `npx`.
 */
jest.setTimeout(120_000);

const CLI = join(
  __dirname,
  '..',
  '..',
  '..',
  '..',
  'node_modules',
  '@modelcontextprotocol',
  'conformance',
  'dist',
  'index.js',
);
const KEY = 'gw-stateless-key-0000001';

interface Check {
  id: string;
  status: string;
  errorMessage?: string;
}

let upstream: Listening;
let gateway: RunningGateway;
const hops: Listening[] = [];
const outputs: string[] = [];

beforeAll(async () => {
  upstream = await startStatelessServer();
  const server = (slug: string) => ({
    slug,
    url: upstream.url,
    user_identity_forwarding: { method: 'claims_header' },
  });
  gateway = await startGateway({
    GATEWAY_CONFIG: writeConfig({
      auth: { apiKeys: [{ key: KEY, user: { user_id: 'u-stateless' } }] },
      access: { mode: 'policies' },
      policies: [
        {
          slug: 'stateless',
          name: 'Conformance',
          subjects: { users: ['u-stateless'] },
          // `open` allows every tool (no gate); `gated` names them (the gate reads every message).
          allow: { mcpServers: [{ server: 'open' }, { server: 'gated', tools: ['test_*'] }] },
        },
      ],
      mcpServers: [server('open'), server('gated')],
    }),
  });
  for (const slug of ['open', 'gated'])
    hops.push(await startCredentialHop(`${gateway.url}/mcp/${slug}`, { 'x-gateway-api-key': KEY }));
});

afterAll(async () => {
  await gateway?.stop();
  await Promise.all([upstream?.close(), ...hops.map((h) => h.close())]);
  for (const dir of outputs) rmSync(dir, { recursive: true, force: true });
});

/** Runs the suite's `server-stateless` scenario against `url` under Node 22; resolves with its checks. */
async function runScenario(url: string): Promise<Check[]> {
  const output = mkdtempSync(join(tmpdir(), 'gw-stateless-'));
  outputs.push(output);
  const node = await node22();
  return new Promise((resolve, reject) => {
    const child = spawn(node, [CLI, 'server', '--url', url, '--scenario', 'server-stateless', '-o', output], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let log = '';
    child.stdout?.on('data', (c: Buffer) => (log = (log + c.toString()).slice(-20_000)));
    child.stderr?.on('data', (c: Buffer) => (log = (log + c.toString()).slice(-20_000)));
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      try {
        const entry = readdirSync(output).find((name) => name.startsWith('server-server-stateless-'));
        if (entry === undefined) throw new Error('no result');
        resolve(JSON.parse(readFileSync(join(output, entry, 'checks.json'), 'utf8')) as Check[]);
      } catch (error) {
        reject(new Error(`the conformance suite ran no scenario (exit ${code}, ${String(error)}):\n${log}`));
      }
    });
  });
}

/** Each check's outcome, by id (the id of a repeated check gets its index). */
function outcomes(checks: Check[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const check of checks) {
    let id = check.id;
    for (let n = 2; id in out; n++) id = `${check.id}#${n}`;
    out[id] = check.status === 'SUCCESS' ? check.status : `${check.status}: ${check.errorMessage ?? ''}`;
  }
  return out;
}

describe('MCP conformance suite, server-stateless (2026-07-28)', () => {
  it('passes directly, and through the gateway with and without a gate, listen streams of JSON lines included', async () => {
    const [direct, open, gated] = await Promise.all([
      runScenario(upstream.url),
      runScenario((hops[0] as Listening).url),
      runScenario((hops[1] as Listening).url),
    ]);
    const expected = outcomes(direct as Check[]);
    // The server passes the scenario: the subscription checks read its JSON lines.
    for (const id of [
      'sep-2575-server-sends-subscription-ack',
      'sep-2575-server-tags-subscription-id',
      'sep-2575-server-honors-notification-filter',
      'sep-2575-server-sends-tools-list-changed-on-subscription',
      'sep-2575-http-server-header-mismatch-400',
    ])
      expect({ id, status: expected[id] }).toEqual({ id, status: 'SUCCESS' });
    expect(Object.values(expected).filter((status) => status !== 'SUCCESS' && !status.startsWith('SKIPPED'))).toEqual(
      [],
    );
    expect({ through: 'open', checks: outcomes(open as Check[]) }).toEqual({ through: 'open', checks: expected });
    expect({ through: 'gated', checks: outcomes(gated as Check[]) }).toEqual({ through: 'gated', checks: expected });
  });
});

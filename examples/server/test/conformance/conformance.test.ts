import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { node22, startGateway, writeConfig, type RunningGateway } from '../support';
import { startIdentityProvider, type TestIdentityProvider } from '../mcp-2026/idp';
import { startCredentialHop, startSdkServer, type Listening } from './sdk-server';

/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned in the root
 * package.json), run under Node 22 as it requires, against an MCP SDK server directly and through
 * the gateway with each forwarding method: every scenario that passes directly passes through the
 * gateway. One suite process per target, all at once (about 4 s each), run by the Node 22 binary
 * itself rather than through `npx` (5 CPU-s of npm each).
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
const KEY = 'gw-conformance-key-000001';
/** Scenarios that need no particular tools, prompts or resources: the SDK server must pass them. */
const REQUIRED = ['server-initialize', 'ping', 'tools-list', 'logging-set-level', 'dns-rebinding-protection'];

interface Check {
  id: string;
  status: string;
  errorMessage?: string;
}

let sdk: Listening;
let idp: TestIdentityProvider;
let gateway: RunningGateway;
const hops: Listening[] = [];
const outputs: string[] = [];

beforeAll(async () => {
  [sdk, idp] = await Promise.all([startSdkServer(), startIdentityProvider()]);
  const server = (slug: string, method: string) => ({ slug, url: sdk.url, user_identity_forwarding: { method } });
  gateway = await startGateway({
    GATEWAY_CONFIG: writeConfig({
      auth: {
        apiKeys: [{ key: KEY, user: { user_id: 'u-conformance' } }],
        jwt_validation: { jwksUri: idp.jwksUri, issuer: idp.issuer, audience: 'gateway' },
      },
      mcpServers: [server('claims', 'claims_header'), server('jwt', 'jwt_header'), server('bearer', 'bearer')],
    }),
  });
});

afterAll(async () => {
  await gateway?.stop();
  await Promise.all([sdk?.close(), idp?.close(), ...hops.map((h) => h.close())]);
  for (const dir of outputs) rmSync(dir, { recursive: true, force: true });
});

/** Runs the suite's active server scenarios against `url` under Node 22; resolves with each scenario's checks. */
async function runSuite(url: string): Promise<Map<string, Check[]>> {
  const output = mkdtempSync(join(tmpdir(), 'gw-conformance-'));
  outputs.push(output);
  const node = await node22();
  return new Promise((resolve, reject) => {
    const child = spawn(node, [CLI, 'server', '--url', url, '-o', output], { stdio: ['ignore', 'pipe', 'pipe'] });
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
      const results = new Map<string, Check[]>();
      for (const entry of readdirSync(output)) {
        const scenario = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(entry)?.[1];
        if (scenario === undefined) continue;
        results.set(scenario, JSON.parse(readFileSync(join(output, entry, 'checks.json'), 'utf8')) as Check[]);
      }
      if (results.size === 0) reject(new Error(`the conformance suite ran no scenario (exit ${code}):\n${log}`));
      else resolve(results);
    });
  });
}

/** A scenario passes as the suite counts it: no check failed or warned. */
const passed = (checks: Check[]) => checks.every((c) => c.status !== 'FAILURE' && c.status !== 'WARNING');

describe('MCP conformance suite', () => {
  it('passes through the gateway, with every forwarding method, every scenario the SDK server passes directly', async () => {
    const credentials: Record<string, Record<string, string>> = {
      claims: { 'x-gateway-api-key': KEY },
      jwt: { 'x-gateway-api-key': KEY },
      bearer: { authorization: `Bearer ${idp.token({ sub: 'idp-conformance' })}` },
    };
    const targets: [string, string][] = [['direct', sdk.url]];
    for (const [slug, headers] of Object.entries(credentials)) {
      const hop = await startCredentialHop(`${gateway.url}/mcp/${slug}`, headers);
      hops.push(hop);
      targets.push([slug, hop.url]);
    }
    const results = await Promise.all(targets.map(([, url]) => runSuite(url)));
    const direct = results[0] as Map<string, Check[]>;
    const directPasses = [...direct].filter(([, checks]) => passed(checks)).map(([scenario]) => scenario);
    expect(directPasses).toEqual(expect.arrayContaining(REQUIRED));
    targets.slice(1).forEach(([slug], index) => {
      const through = results[index + 1] as Map<string, Check[]>;
      const failures = directPasses
        .filter((scenario) => !passed(through.get(scenario) ?? [{ id: scenario, status: 'FAILURE' }]))
        .map((scenario) => ({
          scenario,
          failed: (through.get(scenario) ?? [])
            .filter((c) => c.status !== 'SUCCESS')
            .map((c) => c.errorMessage ?? c.id),
        }));
      expect({ slug, failures }).toEqual({ slug, failures: [] });
    });
  });
});

import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { node22, rsaPem, startGateway, writeConfig, type RunningGateway } from '../support';
import { freePort, registerClient } from '../oauth/oauth-support';

jest.setTimeout(180_000);

const CHROMIUM = '/usr/bin/chromium';
const CLI = require.resolve('@modelcontextprotocol/conformance/dist/index.js');
const API_KEY = 'gw-conformance-signin-key-0001';

interface Check {
  id: string;
  status: string;
  errorMessage?: string;
}

/**
 * The official MCP conformance suite's `authorization` command against the gateway's
 * authorization server (CONTRACT section 11): its metadata scenario, and its
 * `authorization-code-grant` scenario as the suite sends it (PKCE, `state`, no `resource`, no
 * `scope`), the user's sign-in and consent done in headless Chromium at the URL the suite prints.
 */
describe('the conformance suite against the gateway as authorization server', () => {
  let gateway: RunningGateway;
  let browser: Browser;
  let base: string;
  const outputs: string[] = [];

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run scripts/system-deps.sh`);
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    [gateway, browser] = await Promise.all([
      startGateway({
        GATEWAY_CONFIG: writeConfig({
          auth: { apiKeys: [{ key: API_KEY, user: { user_id: 'u-conformance' } }] },
          mcpServers: [{ slug: 'tools', url: 'http://127.0.0.1:9/mcp' }],
          oauth: { login: { type: 'api_key' } },
        }),
        PORT: String(port),
        PUBLIC_BASE_URL: base,
        JWT_PRIVATE_KEY: rsaPem().privateKey,
      }),
      chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu'] }),
    ]);
  });

  afterAll(async () => {
    await browser?.close();
    await gateway?.stop();
    for (const dir of outputs) rmSync(dir, { recursive: true, force: true });
  });

  it('passes every check of the authorization scenarios, the sign-in done in a browser', async () => {
    const callbackPort = await freePort();
    const clientId = await registerClient(base, `http://127.0.0.1:${callbackPort}/callback`, 'conformance suite');
    const output = mkdtempSync(join(tmpdir(), 'gw-authorization-'));
    outputs.push(output);
    let log = '';
    // The suite needs Node 22: its binary itself, asked of npx once a run (support.ts node22()).
    const node = await node22();
    const exited = new Promise<number | null>((resolve, reject) => {
      const child = spawn(
        node,
        [CLI, 'authorization', '--url', base, '--client-id', clientId, '-p', String(callbackPort), '-o', output],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
      let signingIn = false;
      const read = (chunk: Buffer) => {
        log = (log + chunk.toString()).slice(-20_000);
        const url = /^(http:\/\/127\.0\.0\.1:\d+\/oauth\/authorize\?\S+)$/m.exec(log)?.[1];
        if (url === undefined || signingIn) return;
        signingIn = true;
        // The user: signs in with an API key, then allows the client on the consent page.
        void (async () => {
          const page = await browser.newPage();
          try {
            await page.goto(url);
            await page.fill('input[name="api_key"]', API_KEY);
            await Promise.all([page.waitForNavigation(), page.click('button[type="submit"]')]);
            expect(await page.content()).toContain(`${base}/mcp (every MCP server of this gateway)`);
            await Promise.all([
              page.waitForURL(/\/callback\?/, { waitUntil: 'commit' }).catch(() => undefined),
              page.click('button[value="allow"]'),
            ]);
          } finally {
            await page.close();
          }
        })().catch((error: unknown) => {
          log += `\nbrowser: ${String(error)}`;
          child.kill('SIGKILL');
        });
      };
      child.stdout?.on('data', read);
      child.stderr?.on('data', read);
      child.once('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        resolve(code);
      });
    });
    const code = await exited;
    const checks: Check[] = [];
    for (const entry of readdirSync(output))
      checks.push(...(JSON.parse(readFileSync(join(output, entry, 'checks.json'), 'utf8')) as Check[]));
    const ids = checks.map((c) => c.id);
    expect({ code, ids }).toMatchObject({ ids: expect.arrayContaining(['authorization-server-metadata']) });
    // The grant itself ran and passed (not skipped): the suite signed in through the browser.
    expect(checks.filter((c) => /code.grant|authorization-code/i.test(c.id)).map((c) => c.status)).toEqual(['SUCCESS']);
    const failed = checks.filter((c) => c.status === 'FAILURE');
    if (failed.length > 0) throw new Error(`failed checks: ${JSON.stringify(failed)}\n${log}`);
  });
});

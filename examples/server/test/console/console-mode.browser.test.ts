/**
 * The access mode switched in the console, against the real gateway (CONTRACT section 10): two
 * instances sharing PostgreSQL, the console of the first switches open → report → policies, and
 * a request to the second is allowed, recorded as would-deny (seen on the Requests page), then
 * refused. A mode fixed by GATEWAY_ACCESS_MODE is shown as such, with no switch. The console's
 * Test buttons are in no request list and no usage sum.
 */
import type { Browser, Page } from 'playwright-core';
import { startPostgres, type RunningPostgres } from '../../../../packages/catalog/test/postgres';
import { startGateway, writeConfig, type RunningGateway } from '../support';
import {
  adminClient,
  chat,
  newAdminKey,
  newEncryptionKey,
  startAnthropicDouble,
  within,
  type AnthropicDouble,
} from '../catalog/catalog-support';
import { goTo, launchConsoleBrowser, shot, signIn } from './browser-support';

jest.setTimeout(180_000);

const CALLER_KEY = 'gw-console-mode-caller-0001';
const HAIKU = '@anthropic/claude-haiku-4-5';

let postgres: RunningPostgres;
let anthropic: AnthropicDouble;
let a: RunningGateway;
let b: RunningGateway;
let adminKey: string;
let admin: ReturnType<typeof adminClient>;
let adminB: ReturnType<typeof adminClient>;
let env: Record<string, string>;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  [postgres, anthropic] = await Promise.all([startPostgres(), startAnthropicDouble()]);
  adminKey = newAdminKey();
  env = {
    DATABASE_URL: await postgres.createDatabase(),
    GATEWAY_CONFIG: writeConfig({
      auth: { apiKeys: [{ key: CALLER_KEY, user: { user_id: 'u-console-mode', groups: ['analysts'] } }] },
    }),
    GATEWAY_ADMIN_KEY: adminKey,
    GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
  };
  [a, b] = await Promise.all([startGateway(env), startGateway(env)]);
  admin = adminClient(a.url, adminKey);
  adminB = adminClient(b.url, adminKey);
  expect(
    (
      await admin('POST', '/providers', {
        provider: 'anthropic',
        slug: 'anthropic',
        name: 'Anthropic',
        apiKey: 'sk-ant-console-mode-0001',
        baseUrl: anthropic.url,
      })
    ).status,
  ).toBe(201);
  // A policy that names the caller for another model only: under "policies" haiku is refused.
  expect(
    (
      await admin('POST', '/policies', {
        slug: 'analysts',
        subjects: { groups: ['analysts'] },
        allow: { models: ['@anthropic/claude-sonnet-*'] },
      })
    ).status,
  ).toBe(201);
  ({ browser, page } = await launchConsoleBrowser());
  await signIn(page, a.url, adminKey);
});

afterAll(async () => {
  await browser?.close();
  await Promise.all([a?.stop(), b?.stop()]);
  await Promise.all([postgres?.destroy(), anthropic?.close()]);
});

/** Switches the access mode with the banner's select and Switch button, and waits for the new banner. */
async function switchMode(to: 'report' | 'policies', label: string): Promise<void> {
  const banner = page.getByRole('region', { name: 'Access mode' });
  await banner.getByLabel('Access mode', { exact: true }).selectOption(to);
  await banner.getByRole('button', { name: 'Switch' }).click();
  await page.getByRole('region', { name: 'Access mode' }).getByText(`Access mode: ${label}`).waitFor();
}

describe('the access mode, switched in the console, on two instances sharing PostgreSQL', () => {
  test('open by default: the banner says so, that 1 policy is not applied, and offers the switch', async () => {
    const banner = page.getByRole('region', { name: 'Access mode' });
    await banner.getByText('Access mode: Open').waitFor();
    await banner.getByText(/default: no mode has been set yet/).waitFor();
    await banner.getByText(/1 policy exists but is not applied/).waitFor();
    await banner.getByRole('button', { name: 'Switch' }).waitFor();
    expect((await chat(b.url, CALLER_KEY, HAIKU)).status).toBe(200);
    await shot(page, 'mode-open');
  });

  test('report: the other instance lets the request through and records it as would-deny, seen on the Requests page', async () => {
    await switchMode('report', 'Report');
    const banner = page.getByRole('region', { name: 'Access mode' });
    await banner.getByText(/Set in the console/).waitFor();
    await banner.getByText(/1 policy exists but is only reported, not enforced/).waitFor();
    await within(1_000, async () => (await adminB('GET', '/access/mode')).body.mode === 'report');
    const res = await fetch(`${b.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${CALLER_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: HAIKU, max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status).toBe(200);
    const requestId = res.headers.get('x-gateway-request-id') as string;
    await within(5_000, async () =>
      ((await admin('GET', '/requests?access=would_deny')).body.data as { request_id: string }[]).some(
        (r) => r.request_id === requestId,
      ),
    );
    await goTo(page, 'Requests');
    const row = page.getByRole('row').filter({ has: page.getByRole('button', { name: `Open request ${requestId}` }) });
    await row.getByText('would deny').waitFor();
    await row.getByRole('button', { name: `Open request ${requestId}` }).click();
    const detail = page.locator('#request-detail');
    await detail
      .getByText(/^Would be refused in policies mode \(let through in report mode\): .*claude-haiku-4-5/)
      .waitFor();
    await shot(page, 'mode-report-record');
  });

  test('policies: the other instance refuses within 1 s; the banner warns of nothing more', async () => {
    await switchMode('policies', 'Policies');
    expect(await page.getByRole('region', { name: 'Access mode' }).getByRole('note').count()).toBe(0);
    await within(1_000, async () => (await chat(b.url, CALLER_KEY, HAIKU)).status === 403);
    expect((await chat(b.url, CALLER_KEY, HAIKU)).body.error.code).toBe('access_denied');
    expect((await chat(b.url, CALLER_KEY, '@anthropic/claude-sonnet-4-5')).status).toBe(200);
    // The console of the second instance shows the same mode.
    const other = await browser.newPage();
    await signIn(other, b.url, adminKey);
    await other.getByRole('region', { name: 'Access mode' }).getByText('Access mode: Policies').waitFor();
    await other.close();
    const audit = await admin('GET', '/audit?record=settings/access-mode');
    expect(audit.body.data.map((e: { action: string }) => e.action)).toEqual(['update', 'create']);
  });

  test("the console's Test calls are in no request list and no usage sum", async () => {
    await goTo(page, 'Model catalog');
    const before = (await admin('GET', '/requests?limit=500')).body.data.length;
    await page.getByRole('button', { name: 'Test anthropic' }).click();
    await page.getByText(/^Works \(200\)/).waitFor();
    // A request after the test: once its record is stored, the test's would be too.
    const after = await chat(a.url, CALLER_KEY, '@anthropic/claude-sonnet-4-5');
    expect(after.status).toBe(200);
    await within(5_000, async () => (await admin('GET', '/requests?limit=500')).body.data.length > before);
    const records = (await admin('GET', '/requests?limit=500')).body.data as { user_id: string; path: string }[];
    expect(records.filter((r) => r.path === '/v1/messages/count_tokens')).toEqual([]);
    expect(records.filter((r) => r.user_id === 'gateway-console-test')).toEqual([]);
    const usage = (await admin('GET', '/usage?group_by=user')).body.data as { key: string }[];
    expect(usage.map((g) => g.key)).not.toContain('gateway-console-test');
    // The log line says it was the console's test.
    // Log lines leave in batches at most 1 s after they are written.
    const logged = () =>
      a.logs.some((line) => line.includes('"source":"console-test"') && line.includes('count_tokens'));
    for (let waited = 0; waited < 5_000 && !logged(); waited += 100) await new Promise((r) => setTimeout(r, 100));
    expect(logged()).toBe(true);
  });

  test('a mode fixed by GATEWAY_ACCESS_MODE is shown as fixed, with no switch', async () => {
    const fixed = await startGateway({ ...env, GATEWAY_ACCESS_MODE: 'report' });
    try {
      const other = await browser.newPage();
      await signIn(other, fixed.url, adminKey);
      const banner = other.getByRole('region', { name: 'Access mode' });
      await banner.getByText('Access mode: Report').waitFor();
      await banner.getByText(/Set by GATEWAY_ACCESS_MODE: it cannot be switched here/).waitFor();
      expect(await banner.getByRole('button', { name: 'Switch' }).count()).toBe(0);
      await other.close();
    } finally {
      await fixed.stop();
    }
  });
});

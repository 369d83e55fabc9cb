import type { Browser, BrowserContext, Page } from 'playwright-core';
import { rsaPem, startGateway, writeConfig, type RunningGateway } from '../support';
import { freePort, manualFlow, mcpPost, registerClient, startVerifyingMcpServer, within } from '../oauth/oauth-support';
import { axeViolations, goTo, launchConsoleBrowser, shot, signIn } from './browser-support';

/* eslint-disable @typescript-eslint/no-explicit-any */
declare const window: any;

jest.setTimeout(180_000);

const USER_KEY = 'gw-console-apps-user-key-0001';
const OTHER_KEY = 'gw-console-apps-other-key-0002';
const ADMIN_KEY = 'admin-console-apps-key-00000000001';
/** A client name as an attacker registers it: it must show as text, never run or load anything. */
const HOSTILE_NAME = '<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2">Evil & Co';

let mcp: Awaited<ReturnType<typeof startVerifyingMcpServer>>;
let gateway: RunningGateway;
let base: string;
let browser: Browser;
let context: BrowserContext;
let page: Page;

beforeAll(async () => {
  mcp = await startVerifyingMcpServer();
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  gateway = await startGateway({
    GATEWAY_CONFIG: writeConfig({
      auth: {
        apiKeys: [
          { key: USER_KEY, user: { user_id: 'u-apps', email: 'apps@example.com' } },
          { key: OTHER_KEY, user: { user_id: 'u-apps-other' } },
        ],
      },
      access: { mode: 'policies' },
      policies: [
        {
          slug: 'apps-users',
          subjects: { users: ['u-apps', 'u-apps-other'] },
          allow: { mcpServers: [{ server: 'a' }] },
        },
      ],
      mcpServers: [
        {
          slug: 'a',
          url: `${mcp.url}/mcp/a`,
          user_identity_forwarding: { method: 'claims_header', include_claims: ['sub', 'email'] },
        },
      ],
      oauth: { login: { type: 'api_key' } },
    }),
    PORT: String(port),
    PUBLIC_BASE_URL: base,
    JWT_PRIVATE_KEY: rsaPem().privateKey,
    GATEWAY_ADMIN_KEY: ADMIN_KEY,
  });
  ({ browser, context, page } = await launchConsoleBrowser());
  await signIn(page, base, ADMIN_KEY);
});

afterAll(async () => {
  await browser?.close();
  await gateway?.stop();
  await mcp?.close();
});

async function grantsOf(user: string): Promise<{ id: string; clientId: string; revokedAt: string | null }[]> {
  const response = await fetch(`${base}/admin/v1/oauth/grants?user=${user}`, {
    headers: { authorization: `Bearer ${ADMIN_KEY}` },
  });
  return ((await response.json()) as { data: { id: string; clientId: string; revokedAt: string | null }[] }).data;
}

describe('the Connected apps page', () => {
  it('shows a registered client and its grant, with a hostile client name as text, and revokes the grant: the token is refused within 1 s', async () => {
    const redirectUri = 'http://127.0.0.1:7/apps-callback';
    const clientId = await registerClient(base, redirectUri, HOSTILE_NAME);
    const flow = await manualFlow(base, USER_KEY, `${base}/mcp/a`, { clientId, redirectUri });
    expect((await mcpPost(base, 'a', flow.tokens.access_token)).status).toBe(200);

    await goTo(page, 'Connected apps');
    const clients = page.getByRole('table', { name: 'Clients' });
    const clientRow = clients.getByRole('row').filter({ hasText: clientId });
    expect(await clientRow.getByRole('cell').allInnerTexts()).toEqual([
      HOSTILE_NAME,
      clientId,
      '127.0.0.1:7',
      'Registered',
      expect.any(String),
    ]);
    // The name is text: no element came from it and nothing of it ran.
    expect(await page.locator('main script, main img').count()).toBe(0);
    expect(await page.evaluate(() => window.__xss)).toBeUndefined();

    const grants = page.getByRole('table', { name: 'Grants, newest first' });
    const grantRow = grants.getByRole('row').filter({ hasText: 'u-apps' });
    const cells = await grantRow.getByRole('cell').allInnerTexts();
    expect(cells.slice(0, 4)).toEqual([HOSTILE_NAME, 'u-apps', `${base}/mcp/a`, 'mcp']);
    expect(cells[5]).not.toBe('never');
    expect(cells[6]).toBe('Active');
    expect(await axeViolations(context, page)).toEqual([]);
    await shot(page, 'connected-apps');

    // The user filter shows one user's grants.
    await page.getByRole('form', { name: 'Filter grants' }).getByLabel('User id').fill('u-nobody');
    await page.getByRole('form', { name: 'Filter grants' }).getByRole('button', { name: 'Show' }).click();
    await page.getByText('u-nobody has no grants.').waitFor();
    await page.getByRole('form', { name: 'Filter grants' }).getByLabel('User id').fill('u-apps');
    await page.getByRole('form', { name: 'Filter grants' }).getByRole('button', { name: 'Show' }).click();
    const filtered = page.getByRole('table', { name: 'Grants of u-apps, newest first' });
    await filtered.waitFor();

    const dialogs: string[] = [];
    const onDialog = (dialog: { message(): string }) => dialogs.push(dialog.message());
    page.on('dialog', onDialog);
    await filtered.getByRole('button', { name: `Revoke the grant of ${HOSTILE_NAME} to u-apps` }).click();
    await filtered.getByRole('cell', { name: /^Revoked .*revoked_by_admin/ }).waitFor({ timeout: 1_000 });
    page.off('dialog', onDialog);
    expect(dialogs).toEqual([expect.stringMatching(/^Revoke the grant of .* to u-apps\? Its tokens stop working/)]);
    await within(1_000, async () => (await mcpPost(base, 'a', flow.tokens.access_token)).status === 401);
    expect(await filtered.getByRole('button', { name: /^Revoke/ }).count()).toBe(0);
    expect((await grantsOf('u-apps')).find((g) => g.clientId === clientId)?.revokedAt).not.toBeNull();
  });

  it('refuses a revoke without the CSRF token: the grant and its token stay', async () => {
    const flow = await manualFlow(base, OTHER_KEY, `${base}/mcp/a`);
    const grant = (await grantsOf('u-apps-other')).find((g) => g.clientId === flow.clientId);
    expect(grant).toBeDefined();
    // The browser's own session cookie, without (or with a wrong) x-csrf-token.
    for (const headers of [{}, { 'x-csrf-token': 'not-the-token' }] as Record<string, string>[]) {
      const answer = await context.request.delete(`${base}/console/api/oauth/grants/${grant?.id}`, { headers });
      expect(answer.status()).toBe(403);
      expect((await answer.json()).error.code).toBe('csrf_token_invalid');
    }
    expect((await grantsOf('u-apps-other')).find((g) => g.id === grant?.id)?.revokedAt).toBeNull();
    expect((await mcpPost(base, 'a', flow.tokens.access_token)).status).toBe(200);
    // Signed out, the route answers 401.
    const anonymous = await fetch(`${base}/console/api/oauth/clients`);
    expect(anonymous.status).toBe(401);
  });
});

describe('the Connected apps page without oauth', () => {
  let plain: RunningGateway;
  let plainBrowser: Browser;
  let plainPage: Page;

  beforeAll(async () => {
    plain = await startGateway({
      GATEWAY_CONFIG: writeConfig({ auth: { apiKeys: [{ key: USER_KEY, user: { user_id: 'u-apps' } }] } }),
      GATEWAY_ADMIN_KEY: ADMIN_KEY,
    });
    ({ browser: plainBrowser, page: plainPage } = await launchConsoleBrowser());
    await signIn(plainPage, plain.url, ADMIN_KEY);
  });

  afterAll(async () => {
    await plainBrowser?.close();
    await plain?.stop();
  });

  it('says OAuth is off, and the console route answers 404 oauth_disabled', async () => {
    await goTo(plainPage, 'Connected apps');
    await plainPage.getByText(/^OAuth is off: MCP clients cannot sign in at this gateway/).waitFor();
    expect(await plainPage.getByRole('table').count()).toBe(0);
    const answer = await plainPage.context().request.get(`${plain.url}/console/api/oauth/grants`);
    expect(answer.status()).toBe(404);
    expect((await answer.json()).error.code).toBe('oauth_disabled');
  });
});

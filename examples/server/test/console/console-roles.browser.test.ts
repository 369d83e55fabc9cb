/**
 * Named admins in the browser: the sign-in page offers "Sign in with <provider>" (panva's
 * oidc-provider on 127.0.0.1), the provider's callback opens the console signed in, and the page
 * follows the role: a viewer sees no control that changes anything (and the admin API refuses its
 * writes with 403 role_forbidden), an operator no gateway setting (the access mode switch, the
 * OAuth settings), an admin switches the mode and the audit page names the person.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { rsaPem, startGateway, writeConfig, type RunningGateway } from '../support';
import { freePort, startOidcProvider, type OidcProviderProcess } from '../oauth/oauth-support';
import {
  adminClient,
  newAdminKey,
  newEncryptionKey,
  startAnthropicDouble,
  type AnthropicDouble,
} from '../catalog/catalog-support';
import { goTo, launchConsoleBrowser, shot } from './browser-support';

jest.setTimeout(180_000);

const CLIENT_ID = 'gateway-console';
const CLIENT_SECRET = 'console-roles-browser-secret-5c1d';

let idp: OidcProviderProcess;
let anthropic: AnthropicDouble;
let gateway: RunningGateway;
let base: string;
let browser: Browser;

beforeAll(async () => {
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  [idp, anthropic] = await Promise.all([
    startOidcProvider({
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      redirectUri: `${base}/console/oidc/callback`,
    }),
    startAnthropicDouble(),
  ]);
  const adminKey = newAdminKey();
  gateway = await startGateway({
    GATEWAY_CONFIG: writeConfig({
      auth: { apiKeys: [{ key: 'gw-console-roles-browser-01', user: { user_id: 'u-1' } }] },
      adminRoles: { claim: 'preferred_username', admin: ['alice'], operator: ['olivia'], viewer: ['victor'] },
    }),
    PORT: String(port),
    PUBLIC_BASE_URL: base,
    JWT_PRIVATE_KEY: rsaPem().privateKey,
    GATEWAY_ADMIN_KEY: adminKey,
    GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
  });
  const admin = adminClient(base, adminKey);
  // The OpenID Provider settings live in the catalog (an admin setting an operator cannot change).
  // (Plain fetch: the OpenAPI document that adminClient checks against has no /oauth/settings.)
  const settings = await fetch(`${base}/admin/v1/oauth/settings`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      login: { type: 'oidc', issuer: idp.issuer, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET },
    }),
  });
  expect([settings.status, await settings.text()]).toEqual([200, expect.any(String)]);
  expect(
    (
      await admin('POST', '/providers', {
        provider: 'anthropic',
        slug: 'claude',
        name: 'Claude',
        apiKey: 'sk-ant-roles-browser-0001',
        baseUrl: anthropic.url,
      })
    ).status,
  ).toBe(201);
  expect(
    (await admin('POST', '/policies', { slug: 'team', subjects: { users: ['u-1'] }, allow: { models: ['*'] } })).status,
  ).toBe(201);
  ({ browser } = await launchConsoleBrowser());
});

afterAll(async () => {
  await browser?.close();
  await gateway?.stop();
  await Promise.all([idp?.stop(), anthropic?.close()]);
});

/**
 * Opens `hash` signed out, follows "Sign in with <provider>", signs in as `login` on the
 * provider's own pages, and waits for the console to open signed in on that page.
 */
async function signInAtProvider(
  login: string,
  hash: string,
  heading: string,
): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: 'en-US' });
  const page = await context.newPage();
  page.on('dialog', (dialog) => void dialog.accept());
  await page.goto(`${base}/console/${hash}`);
  const link = page.getByRole('link', { name: `Sign in with ${new URL(idp.issuer).host}` });
  await link.waitFor();
  expect(await link.getAttribute('href')).toBe('/console/oidc/start');
  expect(await page.locator('#nav').isVisible()).toBe(false);
  if (login === 'victor') await shot(page, 'roles-sign-in');
  await link.click();
  // The provider's own login and consent pages.
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill('any password');
  await page.locator('button[type="submit"]').click();
  await page.getByRole('button', { name: /continue/i }).click();
  await page.waitForURL(`${base}/console/${hash}`);
  await page.getByRole('heading', { level: 1, name: heading }).waitFor();
  return { context, page };
}

/** A console API call from the page, with the session's cookie and CSRF token. */
async function fromPage(
  page: Page,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; code?: string }> {
  return page.evaluate(
    async ([m, p, b]) => {
      const session = (await (await fetch('/console/session')).json()) as { csrfToken: string };
      const res = await fetch(`/console/api${p as string}`, {
        method: m as string,
        headers: { 'content-type': 'application/json', 'x-csrf-token': session.csrfToken },
        body: b === undefined ? undefined : JSON.stringify(b),
      });
      const answer = (await res.json()) as { error?: { code?: string } };
      return { status: res.status, code: answer.error?.code };
    },
    [method, path, body] as const,
  );
}

describe('the console signed in at the OpenID Provider, by role', () => {
  test('a viewer signs in with the provider link, back on the page it left, and sees no control that changes anything', async () => {
    const { context, page } = await signInAtProvider('victor', '#/keys', 'API keys');
    expect(await page.getByRole('navigation', { name: 'Sections' }).isVisible()).toBe(true);
    const banner = page.getByRole('region', { name: 'Access mode' });
    await banner.getByText('Access mode: Open').waitFor();
    expect(await banner.getByRole('button', { name: 'Switch' }).count()).toBe(0);
    expect(await page.getByRole('form', { name: 'Create an API key' }).count()).toBe(0);
    for (const section of ['Model catalog', 'MCP servers', 'Virtual servers', 'Prompts', 'Access', 'Connected apps']) {
      await goTo(page, section);
      // Only the filter and question forms remain, and no button that changes a record.
      const forms = await page.locator('main form').evaluateAll((fs) => fs.map((f) => f.getAttribute('aria-label')));
      expect([section, forms.filter((f) => !/^(Filter|Can this caller)/.test(String(f)))]).toEqual([section, []]);
      for (const name of [/^Edit /, /^Delete /, /^Revoke /, /^Test /, /^Rotate /, /^Approve /, 'Switch'])
        expect([section, String(name), await page.getByRole('button', { name }).count()]).toEqual([
          section,
          String(name),
          0,
        ]);
    }
    await goTo(page, 'Model catalog');
    await page.getByText('@claude', { exact: false }).first().waitFor();
    await shot(page, 'roles-viewer');
    // The admin API the page calls refuses its writes in any case.
    for (const [method, path, body] of [
      ['PUT', '/access/mode', { mode: 'policies' }],
      ['POST', '/api-keys', { user: { user_id: 'u-v' } }],
      ['DELETE', '/policies/team', undefined],
      ['POST', '/test/providers/claude', undefined],
    ] as const) {
      expect([method, path, await fromPage(page, method, path, body)]).toEqual([
        method,
        path,
        { status: 403, code: 'role_forbidden' },
      ]);
    }
    await context.close();
  });

  test('an operator changes records but not the access mode nor the OAuth settings', async () => {
    const { context, page } = await signInAtProvider('olivia', '#/models', 'Model catalog');
    await page.getByRole('form', { name: 'Add an Anthropic provider' }).waitFor();
    await page.getByRole('button', { name: 'Edit claude' }).waitFor();
    const banner = page.getByRole('region', { name: 'Access mode' });
    await banner.getByText('Only an admin can switch it.').waitFor();
    expect(await banner.getByRole('button', { name: 'Switch' }).count()).toBe(0);
    await goTo(page, 'Connected apps');
    await page.getByText('Only an admin can change them.').waitFor();
    expect(await page.getByRole('form', { name: 'Change OAuth settings' }).count()).toBe(0);
    expect(await fromPage(page, 'PUT', '/access/mode', { mode: 'report' })).toEqual({
      status: 403,
      code: 'role_forbidden',
    });
    await context.close();
  });

  test('an admin switches the mode in the console; the audit page names the person', async () => {
    const { context, page } = await signInAtProvider('alice', '#/models', 'Model catalog');
    const banner = page.getByRole('region', { name: 'Access mode' });
    await banner.getByLabel('Access mode', { exact: true }).selectOption('report');
    await banner.getByRole('button', { name: 'Switch' }).click();
    await page.getByRole('region', { name: 'Access mode' }).getByText('Access mode: Report').waitFor();
    await goTo(page, 'Audit log');
    await page.getByLabel('Record').fill('settings/access-mode');
    await page.getByRole('button', { name: 'Show' }).click();
    const row = page.getByRole('row').filter({ hasText: 'settings/access-mode' }).first();
    await row.getByText(`console:oidc:${idp.issuer}#alice`).waitFor();
    await shot(page, 'roles-audit');
    await context.close();
  });
});

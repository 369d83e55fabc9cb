/**
 * The console's MCP server form with `upstream_auth` (CONTRACT sections 8 and 15), in headless
 * Chromium against a real gateway: the type and its fields, secrets write-only (shown as hints,
 * never filled in), asked again when the URL moves, a static header map edited by name.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startGateway, writeConfig, type RunningGateway } from '../support';
import { goTo, launchConsoleBrowser, signIn } from '../console/browser-support';
import { newAdminKey, newEncryptionKey } from './catalog-support';

jest.setTimeout(180_000);

const SECRET = 'console-upstream-client-secret-7f3a';
let gateway: RunningGateway;
let adminKey: string;
let browser: Browser;
let context: BrowserContext;
let page: Page;

const adminApi = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(`${gateway.url}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
};

beforeAll(async () => {
  adminKey = newAdminKey();
  gateway = await startGateway({
    GATEWAY_CONFIG: writeConfig({}),
    GATEWAY_ADMIN_KEY: adminKey,
    GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
  });
  ({ browser, context, page } = await launchConsoleBrowser());
  await signIn(page, gateway.url, adminKey);
});

afterAll(async () => {
  await browser?.close();
  await gateway?.stop();
});

test('an MCP server gets upstream credentials in the console; secrets stay write-only', async () => {
  const created = await adminApi('POST', '/mcp-servers', {
    slug: 'tracker',
    url: 'https://mcp.tracker.example/mcp',
    upstream_auth: { type: 'oauth', scopes: ['read'], client: { client_id: 'gw-prod', client_secret: SECRET } },
  });
  expect(created.status).toBe(201);
  await goTo(page, 'MCP servers');
  const card = () => page.getByRole('listitem').filter({ has: page.getByRole('heading', { name: '/mcp/tracker' }) });
  await card().getByText('Upstream credentials: oauth').waitFor();
  await card().getByText('Client: gw-prod, secret …7f3a').waitFor();

  await page.getByRole('button', { name: 'Edit tracker' }).click();
  const form = page.getByRole('form', { name: 'Settings of /mcp/tracker' });
  expect(await form.getByLabel('Upstream credentials').inputValue()).toBe('oauth');
  expect(await form.getByLabel('Client id', { exact: false }).inputValue()).toBe('gw-prod');
  // Write-only: the stored secret is never put in the page.
  expect(await form.getByLabel('Client secret', { exact: false }).inputValue()).toBe('');
  expect(await page.content()).not.toContain(SECRET);
  // Moving the URL makes the secret required again, before anything is sent.
  await form.getByLabel('URL', { exact: false }).fill('https://mcp2.tracker.example/mcp');
  await form.getByText('Client secret (required)').waitFor();
  await form.getByRole('button', { name: 'Save server' }).click();
  await form.getByText('One field needs a value.').waitFor();
  await form.getByLabel('Client secret', { exact: false }).fill('renewed-client-secret-aaaa');
  await form.getByRole('button', { name: 'Save server' }).click();
  await card().getByText('Client: gw-prod, secret …aaaa').waitFor();
  await card().getByText('URL https://mcp2.tracker.example/mcp').waitFor();

  // Switched to shared service headers, written as "Name: value" lines.
  await page.getByRole('button', { name: 'Edit tracker' }).click();
  const again = page.getByRole('form', { name: 'Settings of /mcp/tracker' });
  await again.getByLabel('Upstream credentials').selectOption('static');
  await again.getByLabel('Service headers', { exact: false }).fill('X-Api-Key: service-key-1234');
  // Marked secret: a draft kept when the session ends leaves it out.
  expect(await again.getByLabel('Service headers', { exact: false }).getAttribute('data-secret')).toBe('');
  await again.getByRole('button', { name: 'Save server' }).click();
  await card().getByText('Upstream credentials: static').waitFor();
  await card().getByText('Headers: X-Api-Key …1234').waitFor();
  const stored = await adminApi('GET', '/mcp-servers/tracker');
  expect(JSON.parse(stored.text).upstream_auth).toEqual({ type: 'static', headers: { 'X-Api-Key': '…1234' } });
  for (const secret of [SECRET, 'renewed-client-secret-aaaa', 'service-key-1234'])
    expect(await page.content()).not.toContain(secret);

  // Back to none: upstream_auth is removed.
  await page.getByRole('button', { name: 'Edit tracker' }).click();
  const last = page.getByRole('form', { name: 'Settings of /mcp/tracker' });
  await last.getByLabel('Upstream credentials').selectOption('');
  await last.getByRole('button', { name: 'Save server' }).click();
  await card().getByText('Upstream credentials: none').waitFor();
  expect(context).toBeDefined();
});

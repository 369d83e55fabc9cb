import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startGateway, writeConfig, type RunningGateway } from '../support';
import { adminClient, newAdminKey, newEncryptionKey, startMcpDouble } from '../catalog/catalog-support';
import { axeViolations, goTo, launchConsoleBrowser, shot, signIn } from './browser-support';

// The console's "Virtual servers" page (CONTRACT sections 8 and 16) in headless Chromium: every
// write goes through the admin API, so what the page saves is what /admin/v1 answers.

jest.setTimeout(180_000);

let mcp: { url: string; close(): Promise<void> };
let gateway: RunningGateway;
let admin: ReturnType<typeof adminClient>;
let browser: Browser;
let context: BrowserContext;
let page: Page;

beforeAll(async () => {
  mcp = await startMcpDouble();
  const adminKey = newAdminKey();
  gateway = await startGateway({
    GATEWAY_CONFIG: writeConfig({
      mcpServers: [{ slug: 'tracker', url: mcp.url }],
      virtualServers: [{ slug: 'file-bench', name: 'From the file', members: [{ server: 'tracker' }] }],
    }),
    GATEWAY_ADMIN_KEY: adminKey,
    GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
  });
  admin = adminClient(gateway.url, adminKey);
  expect((await admin('POST', '/mcp-servers', { slug: 'crm', url: mcp.url })).status).toBe(201);
  ({ browser, context, page } = await launchConsoleBrowser());
  await signIn(page, gateway.url, adminKey);
});

afterAll(async () => {
  await browser?.close();
  await gateway?.stop();
  await mcp?.close();
});

test('virtual servers are created with their members, edited in place and deleted; refusals show beside the field', async () => {
  await goTo(page, 'Virtual servers');
  // The config file's is listed, read-only.
  await page.getByRole('list', { name: 'Members of file-bench' }).getByText('tracker: every tool').waitFor();
  expect(await page.getByRole('button', { name: 'Edit virtual server file-bench' }).count()).toBe(0);

  const form = page.getByRole('form', { name: 'Create a virtual server' });
  await form.getByLabel('Slug', { exact: false }).fill('workbench');
  await form.getByLabel('Name', { exact: true }).fill('Support');
  const first = form.getByRole('group', { name: 'Member 1' });
  await first.getByLabel('MCP server', { exact: false }).selectOption('tracker');
  await first.getByLabel('Prefix').fill('tracker_');
  await form.getByRole('button', { name: 'Add member' }).click();
  const second = form.getByRole('group', { name: 'Member 2' });
  await second.getByLabel('MCP server', { exact: false }).selectOption('crm');
  await second.getByLabel('Tools').fill('search_*\nget_ticket');
  await second.getByLabel('Renames').fill('get_ticket crm_ticket');
  await form.getByRole('button', { name: 'Create virtual server' }).click();
  // A rename line the page cannot read is refused beside the Renames of that member.
  const renames = second.getByLabel('Renames');
  await second.getByText('Write one rename a line, as own_name = public_name', { exact: false }).waitFor();
  expect(await renames.getAttribute('aria-invalid')).toBe('true');
  await renames.fill('get_ticket = crm_ticket');
  await form.getByRole('button', { name: 'Create virtual server' }).click();
  await page
    .getByRole('list', { name: 'Members of workbench' })
    .getByText('get_ticket → crm_ticket', { exact: false })
    .waitFor();
  expect((await admin('GET', '/virtual-servers/workbench')).body).toMatchObject({
    slug: 'workbench',
    name: 'Support',
    version: 1,
    members: [
      { server: 'tracker', prefix: 'tracker_' },
      { server: 'crm', tools: ['search_*', 'get_ticket'], rename: { get_ticket: 'crm_ticket' } },
    ],
  });
  expect(await axeViolations(context, page)).toEqual([]);
  await shot(page, 'pages-virtual-servers');

  // The admin API's refusals show beside the field they name: a slug an MCP server has, a bad timeout.
  const again = page.getByRole('form', { name: 'Create a virtual server' });
  await again.getByLabel('Slug', { exact: false }).fill('crm');
  const only = again.getByRole('group', { name: 'Member 1' });
  await only.getByLabel('MCP server', { exact: false }).selectOption('tracker');
  await again.getByRole('button', { name: 'Create virtual server' }).click();
  await again.getByText('(slug_taken)', { exact: false }).waitFor();
  expect(await again.getByLabel('Slug', { exact: false }).getAttribute('aria-invalid')).toBe('true');
  await again.getByLabel('Slug', { exact: false }).fill('other');
  await only.getByLabel('Timeout (ms)').fill('0');
  await again.getByRole('button', { name: 'Create virtual server' }).click();
  await again.getByText('(invalid_request)', { exact: false }).waitFor();
  expect(await only.getByLabel('Timeout (ms)').getAttribute('aria-invalid')).toBe('true');

  // Edited in place: the first member removed, the other's prefix set, the name removed.
  await page.getByRole('button', { name: 'Edit virtual server workbench' }).click();
  const edit = page.getByRole('form', { name: 'Edit virtual server workbench' });
  await edit.getByRole('button', { name: 'Remove member 1' }).click();
  const remaining = edit.getByRole('group', { name: 'Member 1' });
  expect(await remaining.getByLabel('MCP server', { exact: false }).inputValue()).toBe('crm');
  await remaining.getByLabel('Prefix').fill('crm_');
  await edit.getByLabel('Name', { exact: true }).fill('');
  await edit.getByRole('button', { name: 'Save virtual server' }).click();
  await page
    .getByRole('list', { name: 'Members of workbench' })
    .getByText('crm: prefix "crm_"', { exact: false })
    .waitFor();
  const saved = (await admin('GET', '/virtual-servers/workbench')).body;
  expect(saved).toMatchObject({
    version: 2,
    members: [
      { server: 'crm', prefix: 'crm_', tools: ['search_*', 'get_ticket'], rename: { get_ticket: 'crm_ticket' } },
    ],
  });
  expect(saved).not.toHaveProperty('name');

  // An MCP server a virtual server names is not deleted under it; the virtual server is.
  await goTo(page, 'MCP servers');
  await page.getByRole('button', { name: 'Delete MCP server crm' }).click();
  await page.getByRole('status').getByText('member of the virtual server "workbench"', { exact: false }).waitFor();
  expect((await admin('GET', '/mcp-servers/crm')).status).toBe(200);
  await goTo(page, 'Virtual servers');
  await page.getByRole('button', { name: 'Delete virtual server workbench' }).click();
  await page.getByRole('status').getByText('virtual server workbench removed.').waitFor();
  expect((await admin('GET', '/virtual-servers/workbench')).status).toBe(404);
});

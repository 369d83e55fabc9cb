import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startGateway, writeConfig, type RunningGateway } from '../support';
import {
  adminClient,
  chat,
  newAdminKey,
  newEncryptionKey,
  startAnthropicDouble,
  startMcpDouble,
  within,
  type AnthropicDouble,
} from '../catalog/catalog-support';
import { axeViolations, goTo, launchConsoleBrowser, shot, signIn } from './browser-support';

jest.setTimeout(180_000);

/* eslint-disable @typescript-eslint/no-explicit-any */
declare const sessionStorage: any;

const CALLER = 'gw-console-pages-caller-0001';
const PROVIDER_KEY = 'sk-ant-console-pages-secret-7f3a';
let first: AnthropicDouble;
let second: AnthropicDouble;
let mcpA: { url: string; close(): Promise<void> };
let mcpB: { url: string; close(): Promise<void> };
let gateway: RunningGateway;
let adminKey: string;
let admin: ReturnType<typeof adminClient>;
let browser: Browser;
let context: BrowserContext;
let page: Page;

beforeAll(async () => {
  [first, second, mcpA, mcpB] = await Promise.all([
    startAnthropicDouble(),
    startAnthropicDouble(),
    startMcpDouble(),
    startMcpDouble(),
  ]);
  adminKey = newAdminKey();
  gateway = await startGateway({
    GATEWAY_CONFIG: writeConfig({
      auth: {
        apiKeys: [{ key: CALLER, user: { user_id: 'u-pages' } }],
        // A bearer server needs identity-provider tokens; nothing is fetched from this address here.
        jwt_validation: { jwksUri: 'http://127.0.0.1:9/jwks.json', issuer: 'https://idp.example', audience: 'gw' },
      },
    }),
    GATEWAY_ADMIN_KEY: adminKey,
    GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
  });
  admin = adminClient(gateway.url, adminKey);
  ({ browser, context, page } = await launchConsoleBrowser());
  await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  await signIn(page, gateway.url, adminKey);
});

afterAll(async () => {
  await browser?.close();
  await gateway?.stop();
  await Promise.all([first?.close(), second?.close(), mcpA?.close(), mcpB?.close()]);
});

describe('the console pages', () => {
  // Each test starts signed in, also after one that ended on the sign-in page.
  beforeEach(async () => {
    if ((await page.getByLabel('Admin key').count()) > 0) await signIn(page, gateway.url, adminKey);
  });

  test('the signed-out page shows no navigation and no sign-out button', async () => {
    const fresh = await browser.newContext();
    const signedOut = await fresh.newPage();
    await signedOut.goto(`${gateway.url}/console/#/models`);
    await signedOut.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(await signedOut.locator('#nav').isVisible()).toBe(false);
    expect(await signedOut.getByRole('button', { name: 'Sign out' }).isVisible()).toBe(false);
    expect(await signedOut.getByRole('navigation', { name: 'Sections' }).count()).toBe(0);
    await fresh.close();
    expect(await page.getByRole('navigation', { name: 'Sections' }).isVisible()).toBe(true);
  });

  test('a form with three missing fields shows three errors, each beside its field', async () => {
    const form = page.getByRole('form', { name: 'Add an Anthropic provider' });
    await form.getByRole('button', { name: 'Add provider' }).click();
    await form.getByText('3 fields need a value.').waitFor();
    for (const label of ['Name', 'Slug', 'API key']) {
      const input = form.getByLabel(label, { exact: false }).first();
      expect(await input.getAttribute('aria-invalid')).toBe('true');
      const errorId = String(await input.getAttribute('aria-describedby'))
        .split(' ')
        .at(-1);
      expect(await form.locator(`[id="${errorId}"]`).textContent()).toMatch(/^Enter the /);
    }
  });

  test('"Chosen models" at creation saves a custom selection; the editor opens on it; only the ticked model is served', async () => {
    const form = page.getByRole('form', { name: 'Add an Anthropic provider' });
    await form.getByLabel('Name', { exact: false }).first().fill('Chosen');
    await form.getByLabel('Slug', { exact: false }).fill('chosen');
    await form.getByLabel('API key', { exact: false }).fill(PROVIDER_KEY);
    await form.getByLabel('Base URL').fill(first.url);
    await form.getByLabel('Models', { exact: true }).selectOption('custom');
    await form.getByRole('button', { name: 'Add provider' }).click();
    const editor = page.getByRole('form', { name: 'Model selection of @chosen' });
    await editor.waitFor();
    expect(await editor.getByLabel('Serve').inputValue()).toBe('custom');
    expect(await editor.getByLabel('claude-sonnet-4-5').isChecked()).toBe(false);
    // Leaving the editor unsaved enables nothing.
    expect((await chat(gateway.url, CALLER, '@chosen/claude-sonnet-4-5')).status).toBe(403);
    await editor.getByLabel('claude-haiku-4-5').check();
    await editor.getByRole('button', { name: 'Save models' }).click();
    await page.getByText('1 chosen model(s): claude-haiku-4-5').waitFor();
    expect((await chat(gateway.url, CALLER, '@chosen/claude-haiku-4-5')).status).toBe(200);
    expect((await chat(gateway.url, CALLER, '@chosen/claude-sonnet-4-5')).body.error.code).toBe('model_not_enabled');
  });

  test("a provider's base URL and default max_tokens are edited in place; requests never fail in between", async () => {
    const noMaxTokens = async () => {
      const res = await fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${CALLER}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: '@chosen/claude-haiku-4-5', messages: [{ role: 'user', content: 'hi' }] }),
      });
      return res.status;
    };
    expect(await noMaxTokens()).toBe(400);
    let running = true;
    const statuses: number[] = [];
    const traffic = (async () => {
      while (running) statuses.push((await chat(gateway.url, CALLER, '@chosen/claude-haiku-4-5')).status);
    })();
    await page.getByRole('button', { name: 'Edit chosen' }).click();
    const form = page.getByRole('form', { name: 'Settings of @chosen' });
    await form.getByLabel('Base URL').fill(second.url);
    // A new base URL receives the key: the form asks for it again (the admin API refuses it otherwise).
    await form.getByLabel('Default max_tokens').fill('0');
    await form.getByRole('button', { name: 'Save settings' }).click();
    await form.getByText('Enter the api key.').waitFor();
    expect(await form.getByLabel('API key (required)').isVisible()).toBe(true);
    await form.getByLabel('API key (required)').fill(PROVIDER_KEY);
    await form.getByRole('button', { name: 'Save settings' }).click();
    await form.getByText('Default max_tokens must be a whole number from 1 to 1000000.').waitFor();
    await form.getByLabel('Default max_tokens').fill('256');
    await form.getByRole('button', { name: 'Save settings' }).click();
    await page.getByText('Default max_tokens: 256').waitFor();
    await page.getByText(`Base URL ${second.url}`).waitFor();
    const before = second.keys.length;
    expect((await chat(gateway.url, CALLER, '@chosen/claude-haiku-4-5')).status).toBe(200);
    expect(second.keys.slice(before)).toContain(PROVIDER_KEY);
    running = false;
    await traffic;
    expect(statuses.length).toBeGreaterThan(0);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    expect(await noMaxTokens()).toBe(200);
  });

  test('friendly messages replace the raw validator text', async () => {
    await goTo(page, 'API keys');
    const form = page.getByRole('form', { name: 'Create an API key' });
    await form.getByLabel('User id').fill('u-friendly');
    await form.getByLabel('Groups').fill('x'.repeat(300));
    await form.getByRole('button', { name: 'Create key' }).click();
    await form.getByText(/must have at most 256 characters/).waitFor();
    expect(await form.textContent()).not.toMatch(/Too big: expected/);
  });

  test('the keys page shows id (copyable), name, user id, groups, expiry and last use; a key is created with a name', async () => {
    const form = page.getByRole('form', { name: 'Create an API key' });
    await form.getByLabel('Name', { exact: true }).fill('support bot');
    await form.getByLabel('User id').fill('u-bot');
    await form.getByLabel('Groups').fill('support, eu');
    await form.getByRole('button', { name: 'Create key' }).click();
    const key = await page.locator('#new-key').inputValue();
    expect((await chat(gateway.url, key, '@chosen/claude-haiku-4-5')).status).toBe(200);
    // The last use is written back within seconds (at most once a minute per key).
    let listed: any;
    await within(15_000, async () => {
      listed = (await admin('GET', '/api-keys')).body.data.find((k: any) => k.name === 'support bot');
      return typeof listed?.lastUsedAt === 'string';
    });
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'API keys' }).waitFor();
    const row = page.getByRole('row').filter({ hasText: 'support bot' });
    await row.getByText(listed.id, { exact: true }).waitFor();
    await row.getByRole('cell', { name: 'u-bot', exact: true }).waitFor();
    await row.getByRole('cell', { name: 'support, eu' }).waitFor();
    await row.getByRole('button', { name: `Copy key id ${listed.id}` }).click();
    expect(await page.evaluate(() => (globalThis as any).navigator.clipboard.readText())).toBe(listed.id);
    expect(await row.textContent()).not.toMatch(/\d{4}-\d{2}-\d{2}T/);
    expect(await row.locator('td[data-label="Last used"]').textContent()).not.toContain('never');
    expect(await row.locator('td[data-label="Expires"]').textContent()).toBe('never');
    await shot(page, 'pages-keys');
  });

  test('a key is created with a name and an expiry, listed with both', async () => {
    const form = page.getByRole('form', { name: 'Create an API key' });
    await form.getByLabel('Name', { exact: true }).fill('expiring bot');
    await form.getByLabel('User id').fill('u-expiring');
    await form.getByLabel('Expires').fill('2020-05-04T10:30');
    await form.getByRole('button', { name: 'Create key' }).click();
    await form.getByText('Choose a time in the future.').waitFor();
    await form.getByLabel('Expires').fill('2031-05-04T10:30');
    await form.getByRole('button', { name: 'Create key' }).click();
    await page.locator('#new-key').waitFor();
    const listed = (await admin('GET', '/api-keys')).body.data.find((k: any) => k.name === 'expiring bot');
    expect(listed.expiresAt).toBe(new Date('2031-05-04T10:30').toISOString());
    const row = page.getByRole('row').filter({ hasText: 'expiring bot' });
    await row.getByRole('cell', { name: /May 4, 2031/ }).waitFor();
    expect(await row.locator('td[data-label="Expires"]').textContent()).toBe(
      new Date('2031-05-04T10:30').toLocaleString('en-US', { dateStyle: 'medium', timeStyle: 'short' }),
    );
    // After a reload too: the expiry comes from the gateway, not from the form.
    await page.reload();
    await page
      .getByRole('row')
      .filter({ hasText: 'expiring bot' })
      .getByRole('cell', { name: /May 4, 2031/ })
      .waitFor();
  });

  test("an integration's region, allowed hosts and models are edited in place", async () => {
    await admin('POST', '/providers', {
      provider: 'bedrock',
      slug: 'kb',
      name: 'KB',
      accessKeyId: 'AKIAEXAMPLEPAGES0001',
      secretAccessKey: 'secret-pages-0001',
      region: 'us-east-1',
    });
    await goTo(page, 'Integrations');
    await page.getByRole('button', { name: 'Edit kb' }).click();
    const form = page.getByRole('form', { name: 'Settings of @kb' });
    await form.getByLabel('Default region', { exact: false }).fill('eu-west-1');
    await form
      .getByLabel('Allowed custom hosts')
      .fill('https://vpce-1.bedrock-agent-runtime.eu-west-1.vpce.amazonaws.com');
    await form.getByLabel('Models', { exact: true }).selectOption('custom');
    await form.getByLabel('Chosen models').fill('anthropic.claude-3-haiku');
    // New hosts receive the credentials: the form asks for them again.
    await form.getByRole('button', { name: 'Save settings' }).click();
    await form.getByText('Enter the access key id.').waitFor();
    await form.getByLabel('Access key id (required)').fill('AKIAEXAMPLEPAGES0002');
    await form.getByLabel('Secret access key (required)').fill('secret-pages-0002');
    await form.getByRole('button', { name: 'Save settings' }).click();
    await page.getByText('Region eu-west-1').waitFor();
    const stored = (await admin('GET', '/providers/kb')).body;
    expect(stored.region).toBe('eu-west-1');
    expect(stored.allowedHosts).toEqual(['https://vpce-1.bedrock-agent-runtime.eu-west-1.vpce.amazonaws.com']);
    expect(stored.models).toMatchObject({ mode: 'custom', models: ['anthropic.claude-3-haiku'] });
  });

  test("an MCP server's URL and forwarding are shown on its card and edited in place; a bearer server's Test says why it cannot run", async () => {
    await admin('POST', '/mcp-servers', { slug: 'moving', url: mcpA.url });
    await admin('POST', '/mcp-servers', {
      slug: 'passthrough',
      url: mcpB.url,
      user_identity_forwarding: { method: 'bearer' },
    });
    await goTo(page, 'MCP servers');
    const card = page.getByRole('listitem').filter({ has: page.getByRole('heading', { name: '/mcp/moving' }) });
    await card.getByText('Identity forwarding: none').waitFor();
    await card.getByText('Client headers forwarded: all but protected and hop-by-hop headers').waitFor();
    await mcpA.close();
    await page.getByRole('button', { name: 'Test moving' }).click();
    await card.getByText(/^Failed/).waitFor();
    await page.getByRole('button', { name: 'Edit moving' }).click();
    const form = page.getByRole('form', { name: 'Settings of /mcp/moving' });
    await form.getByLabel('URL', { exact: false }).fill(mcpB.url);
    await form.getByLabel('Identity forwarding').selectOption('claims_header');
    await form.getByLabel('Header name').fill('X-Caller');
    await form.getByLabel('Claims to include').fill('sub, email');
    await form.getByLabel('Forward client headers').selectOption('only');
    await form.getByLabel('Headers', { exact: true }).fill('x-trace');
    await form.getByRole('button', { name: 'Save server' }).click();
    const edited = page.getByRole('listitem').filter({ has: page.getByRole('heading', { name: '/mcp/moving' }) });
    await edited.getByText('Header: X-Caller').waitFor();
    await edited.getByText('Claims: sub, email').waitFor();
    await edited.getByText('Client headers forwarded: only x-trace').waitFor();
    await edited.getByText(`URL ${mcpB.url}`).waitFor();
    await page.getByRole('button', { name: 'Test moving' }).click();
    await edited.getByText('The MCP server answered initialize.').waitFor();
    const bearer = page.getByRole('listitem').filter({ has: page.getByRole('heading', { name: '/mcp/passthrough' }) });
    await bearer
      .getByText(/Test is not available here: this server receives the caller's own identity-provider token/)
      .waitFor();
    expect(await page.getByRole('button', { name: 'Test passthrough' }).count()).toBe(0);
    await shot(page, 'pages-mcp');
  });

  test('prompts are created and edited in place; the next render uses the change', async () => {
    await goTo(page, 'Prompts');
    const form = page.getByRole('form', { name: 'Create a prompt' });
    await form.getByLabel('Id (required)').fill('greet');
    await form.getByLabel('Provider', { exact: false }).fill('@chosen');
    await form.getByLabel('Model', { exact: false }).fill('claude-haiku-4-5');
    await form.getByLabel('User message', { exact: false }).fill('Say hello to {{name}}.');
    await form.getByRole('button', { name: 'Create prompt' }).click();
    await page.getByText('1 message(s); variables: name').waitFor();
    const render = () =>
      fetch(`${gateway.url}/v1/prompts/greet/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${CALLER}`, 'content-type': 'application/json' },
        body: JSON.stringify({ variables: { name: 'Ada' }, max_tokens: 8 }),
      }).then((r) => r.status);
    expect(await render()).toBe(200);
    await page.getByRole('button', { name: 'Edit prompt greet' }).click();
    const edit = page.getByRole('form', { name: 'Edit prompt greet' });
    await edit.getByLabel('System message').fill('You are {{persona}}.');
    await edit.getByRole('button', { name: 'Save prompt' }).click();
    await page.getByText('2 message(s); variables: persona, name').waitFor();
    // The changed template now needs the new variable.
    expect(await render()).toBe(400);
    await shot(page, 'pages-prompts');
  });

  test('named configs are created and edited in place as JSON; a key carries one, which then cannot be deleted', async () => {
    await goTo(page, 'Configs');
    const form = page.getByRole('form', { name: 'Create a config' });
    await form.getByLabel('Slug (required)').fill('canary');
    await form.getByLabel('Name', { exact: true }).fill('Canary route');
    await form.getByLabel('Config (JSON)', { exact: false }).fill('{"retry": ');
    await form.getByRole('button', { name: 'Create config' }).click();
    await form.getByText('The config is not valid JSON.').waitFor();
    // The gateway's own refusal, shown beside the field it names.
    let deep = '{}';
    for (let level = 0; level < 9; level++) deep = `{"next": ${deep}}`;
    await form.getByLabel('Config (JSON)', { exact: false }).fill(deep);
    await form.getByRole('button', { name: 'Create config' }).click();
    await form.getByText(/nested 10 levels deep, more than 8/).waitFor();
    await form.getByLabel('Config (JSON)', { exact: false }).fill('{"retry": {"attempts": 2}}');
    await form.getByRole('button', { name: 'Create config' }).click();
    await page.getByRole('heading', { level: 2, name: 'canary' }).waitFor();
    expect(JSON.parse(String(await page.getByLabel('Config canary', { exact: true }).textContent()))).toEqual({
      retry: { attempts: 2 },
    });
    await page.getByRole('button', { name: 'Edit config canary' }).click();
    const edit = page.getByRole('form', { name: 'Edit config canary' });
    await edit.getByLabel('Config (JSON)', { exact: false }).fill('{"targets": [{"provider": "@chosen"}]}');
    await edit.getByRole('button', { name: 'Save config' }).click();
    await page.getByLabel('Config canary', { exact: true }).getByText('"@chosen"').waitFor();
    expect((await admin('GET', '/configs/canary')).body).toMatchObject({
      name: 'Canary route',
      version: 2,
      config: { targets: [{ provider: '@chosen' }] },
    });
    expect(await axeViolations(context, page)).toEqual([]);
    await shot(page, 'pages-configs');

    await goTo(page, 'API keys');
    const keyForm = page.getByRole('form', { name: 'Create an API key' });
    await keyForm.getByLabel('Name', { exact: true }).fill('canary bot');
    await keyForm.getByLabel('User id').fill('u-canary');
    await keyForm.getByLabel('Config', { exact: true }).selectOption('canary');
    await keyForm.getByRole('button', { name: 'Create key' }).click();
    await page.locator('#new-key').waitFor();
    const row = page.getByRole('row').filter({ hasText: 'canary bot' });
    expect(await row.locator('td[data-label="Config"]').textContent()).toBe('canary');
    const listed = (await admin('GET', '/api-keys')).body.data.find((k: any) => k.name === 'canary bot');
    expect(listed.config).toBe('canary');

    await goTo(page, 'Configs');
    await page.getByRole('button', { name: 'Delete config canary' }).click();
    await page.getByRole('status').getByText(`used by API key ${listed.id}`, { exact: false }).waitFor();
    expect((await admin('GET', '/configs/canary')).status).toBe(200);
  });

  test('a form submitted after the session ended keeps its input; sign-in returns to the same page with it (never a secret)', async () => {
    await goTo(page, 'Model catalog');
    const form = page.getByRole('form', { name: 'Add an Anthropic provider' });
    await form.getByLabel('Name', { exact: false }).first().fill('After expiry');
    await form.getByLabel('Slug', { exact: false }).fill('after-expiry');
    await form.getByLabel('API key', { exact: false }).fill(PROVIDER_KEY);
    await form.getByLabel('Default max_tokens').fill('512');
    await context.clearCookies();
    await form.getByRole('button', { name: 'Add provider' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await page.getByText('Your session has ended: sign in to return to this page.').waitFor();
    expect(page.url()).toMatch(/#\/models$/);
    const stored = String(await page.evaluate(() => JSON.stringify(sessionStorage)));
    expect(stored).toContain('after-expiry');
    expect(stored).not.toContain(PROVIDER_KEY);
    await page.getByLabel('Admin key').fill(adminKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Model catalog' }).waitFor();
    const back = page.getByRole('form', { name: 'Add an Anthropic provider' });
    await back.getByText(/Your session had ended: your input is back/).waitFor();
    expect(await back.getByLabel('Name', { exact: false }).first().inputValue()).toBe('After expiry');
    expect(await back.getByLabel('Slug', { exact: false }).inputValue()).toBe('after-expiry');
    expect(await back.getByLabel('Default max_tokens').inputValue()).toBe('512');
    expect(await back.getByLabel('API key', { exact: false }).inputValue()).toBe('');
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
  });

  test('an edit form opened from a card comes back open after sign-in', async () => {
    await goTo(page, 'MCP servers');
    await page.getByRole('button', { name: 'Edit moving' }).click();
    const form = page.getByRole('form', { name: 'Settings of /mcp/moving' });
    await form.getByLabel('Header name').fill('X-Kept');
    await context.clearCookies();
    await form.getByRole('button', { name: 'Save server' }).click();
    await page.getByLabel('Admin key').fill(adminKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    const back = page.getByRole('form', { name: 'Settings of /mcp/moving' });
    await back.getByText(/your input is back/).waitFor();
    expect(await back.getByLabel('Header name').inputValue()).toBe('X-Kept');
    await back.getByRole('button', { name: 'Save server' }).click();
    await page.getByText('Header: X-Kept').waitFor();
  });

  test('dates are shown in the operator locale', async () => {
    const german = await browser.newContext({ locale: 'de-DE', timezoneId: 'Europe/Berlin' });
    const tab = await german.newPage();
    await signIn(tab, gateway.url, adminKey);
    await tab.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'API keys' }).click();
    const created = (await admin('GET', '/api-keys')).body.data.find((k: any) => k.name === 'support bot').createdAt;
    const shown = new Date(created).toLocaleString('de-DE', {
      dateStyle: 'medium',
      timeStyle: 'short',
      timeZone: 'Europe/Berlin',
    });
    const row = tab.getByRole('row').filter({ hasText: 'support bot' });
    await row.locator('td[data-label="Created"]').getByText(shown, { exact: true }).waitFor();
    expect(shown).toMatch(/^\d{2}\.\d{2}\.\d{4}, \d{2}:\d{2}$/);
    await german.close();
  });

  test('the request record shows provider, model, status and what access policies made of it', async () => {
    expect((await chat(gateway.url, CALLER, '@chosen/claude-sonnet-4-5')).status).toBe(403);
    await page.goto(`${gateway.url}/console/#/requests?status=403`);
    await page.getByRole('heading', { level: 1, name: 'Requests' }).waitFor();
    await page
      .getByRole('button', { name: /^Open request/ })
      .first()
      .click();
    const detail = page.locator('#request-detail');
    await detail.getByText('403 model_not_enabled').waitFor();
    await detail.getByText('Access', { exact: true }).waitFor();
    // The refused request keeps its provider, the model asked and the gateway's message.
    const fact = (term: string) => detail.locator(`dt:text-is("${term}") + dd`);
    expect(await fact('Provider').textContent()).toBe('chosen');
    expect(await fact('Model asked').textContent()).toBe('claude-sonnet-4-5');
    expect(await fact('Error message').textContent()).toMatch(/claude-sonnet-4-5/);
    // The list shows them too.
    const listed = page.getByRole('row').filter({ hasText: 'model_not_enabled' }).first();
    expect(await listed.locator('td').nth(2).textContent()).toBe('chosen');
    expect(await listed.locator('td').nth(3).textContent()).toBe('claude-sonnet-4-5');
  });

  test('the access mode shows on every page and switches open → report → policies', async () => {
    await admin('POST', '/policies', {
      slug: 'haiku-only',
      subjects: { users: ['someone-else'] },
      allow: { models: ['@chosen/claude-haiku-4-5'] },
    });
    await goTo(page, 'Model catalog');
    const banner = page.getByRole('region', { name: 'Access mode' });
    await banner.getByText('Access mode: Open').waitFor();
    await banner.getByText(/1 policy exists but is not applied/).waitFor();
    expect((await chat(gateway.url, CALLER, '@chosen/claude-haiku-4-5')).status).toBe(200);
    await banner.getByLabel('Access mode', { exact: true }).selectOption('report');
    await banner.getByRole('button', { name: 'Switch' }).click();
    await page.getByRole('region', { name: 'Access mode' }).getByText('Access mode: Report').waitFor();
    expect((await chat(gateway.url, CALLER, '@chosen/claude-haiku-4-5')).status).toBe(200);
    await goTo(page, 'Requests');
    await page.getByText('would deny').first().waitFor();
    await goTo(page, 'Usage');
    const again = page.getByRole('region', { name: 'Access mode' });
    await again.getByLabel('Access mode', { exact: true }).selectOption('policies');
    await again.getByRole('button', { name: 'Switch' }).click();
    await page.getByRole('region', { name: 'Access mode' }).getByText('Access mode: Policies').waitFor();
    expect((await chat(gateway.url, CALLER, '@chosen/claude-haiku-4-5')).status).toBe(403);
    await admin('PUT', '/access/mode', { mode: 'open' });
  });
});

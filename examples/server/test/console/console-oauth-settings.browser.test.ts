import type { Browser, BrowserContext, Page } from 'playwright-core';
import { rsaPem, startGateway, writeConfig, type RunningGateway } from '../support';
import { freePort, within } from '../oauth/oauth-support';
import { goTo, launchConsoleBrowser, signIn } from './browser-support';

jest.setTimeout(180_000);

const USER_KEY = 'gw-console-settings-user-key-0001';
const ADMIN_KEY = 'admin-console-settings-key-000000001';

let gateway: RunningGateway;
let base: string;
let browser: Browser;
let context: BrowserContext;
let page: Page;

beforeAll(async () => {
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  gateway = await startGateway({
    GATEWAY_CONFIG: writeConfig({ auth: { apiKeys: [{ key: USER_KEY, user: { user_id: 'u-settings' } }] } }),
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
});

const metadataStatus = async () => (await fetch(`${base}/.well-known/oauth-authorization-server`)).status;

describe('the OAuth settings on the Connected apps page', () => {
  it('shows OAuth off, turns on api_key login with the form, and turns it off again', async () => {
    await goTo(page, 'Connected apps');
    const section = page.getByRole('region', { name: 'OAuth settings' });
    await section.getByText('Source: OAuth is off.').waitFor();
    expect(await metadataStatus()).toBe(404);

    const form = section.getByRole('form', { name: 'Change OAuth settings' });
    await form.getByLabel('Login').selectOption('api_key');
    await form.getByLabel('Access token lifetime (seconds)').fill('600');
    await form.getByRole('button', { name: 'Save OAuth settings' }).click();
    await section.getByText('Source: Set here (stored in the catalog).').waitFor({ timeout: 5_000 });
    await section.getByText('Login: API key').waitFor();
    await section.getByText('Access token lifetime: 600 s').waitFor();
    expect(await within(1_000, async () => (await metadataStatus()) === 200)).toBeLessThanOrEqual(1_000);

    // An OpenID Provider login without a secret, with none stored, is refused beside the secret field.
    await form.getByLabel('Login').selectOption('oidc');
    await form.getByLabel('Issuer').fill('https://login.example.com');
    await form.getByLabel('Client id').fill('gw-console');
    await form.getByRole('button', { name: 'Save OAuth settings' }).click();
    await form.getByText(/login\.clientSecret is required.*\(invalid_request\)/).waitFor({ timeout: 5_000 });
    expect(await form.getByLabel('Client secret').getAttribute('aria-invalid')).toBe('true');

    const dialogs: string[] = [];
    const onDialog = (dialog: { message(): string }) => dialogs.push(dialog.message());
    page.on('dialog', onDialog);
    await section.getByRole('button', { name: 'Turn off OAuth' }).click();
    await section.getByText('Source: OAuth is off.').waitFor({ timeout: 5_000 });
    page.off('dialog', onDialog);
    expect(dialogs).toEqual([expect.stringMatching(/^Turn off OAuth\?/)]);
    expect(await within(1_000, async () => (await metadataStatus()) === 404)).toBeLessThanOrEqual(1_000);
  });

  it('refuses a settings change without the CSRF token', async () => {
    for (const headers of [{}, { 'x-csrf-token': 'not-the-token' }] as Record<string, string>[]) {
      const answer = await context.request.put(`${base}/console/api/oauth/settings`, {
        headers: { ...headers, 'content-type': 'application/json' },
        data: { login: { type: 'api_key' } },
      });
      expect(answer.status()).toBe(403);
      expect((await answer.json()).error.code).toBe('csrf_token_invalid');
    }
    expect(await metadataStatus()).toBe(404);
  });
});

/**
 * Regenerates the console's screenshots in docs/images/console: every page at 1280 and 390 px
 * wide, against a gateway started here with example records (an Anthropic stand-in on
 * 127.0.0.1, nothing from the network). Run it with `npx -y pnpm@10 run screenshots`; it is not
 * part of the test run. `SCREENSHOTS_ONLY=limits,usage` regenerates only the named images (both widths).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Page } from 'playwright-core';
import { rsaPem, startGateway, writeConfig } from '../support';
import { chat, newAdminKey, newEncryptionKey, startAnthropicDouble, startMcpDouble } from '../catalog/catalog-support';
import { freePort, startOidcProvider } from '../oauth/oauth-support';

const OUT = join(__dirname, '..', '..', '..', '..', 'docs', 'images', 'console');
const CALLER = 'gw-screenshots-caller-0001';
/** The images to write (`SCREENSHOTS_ONLY`, comma-separated names such as `limits,usage`); every one when unset. */
const ONLY = new Set(
  (process.env.SCREENSHOTS_ONLY ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean),
);
const WIDTHS: [number, string][] = [
  [1280, ''],
  [390, '-390px'],
];

async function main(): Promise<void> {
  mkdirSync(OUT, { recursive: true });
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  // An OpenID Provider on 127.0.0.1, so the sign-in page shows its "Sign in with" link.
  const oidc = { clientId: 'gateway-console', clientSecret: 'screenshots-oidc-secret-0001' };
  const [anthropic, mcp, idp] = await Promise.all([
    startAnthropicDouble(),
    startMcpDouble(),
    startOidcProvider({ ...oidc, redirectUri: `${base}/console/oidc/callback` }),
  ]);
  const adminKey = newAdminKey();
  const gateway = await startGateway({
    GATEWAY_CONFIG: writeConfig({
      auth: { apiKeys: [{ key: CALLER, user: { user_id: 'u-ada', email: 'ada@example.com', groups: ['support'] } }] },
      adminRoles: { claim: 'groups', admin: ['gateway-admins'], viewer: ['engineering'] },
    }),
    PORT: String(port),
    PUBLIC_BASE_URL: base,
    JWT_PRIVATE_KEY: rsaPem().privateKey,
    GATEWAY_ADMIN_KEY: adminKey,
    GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
  });
  const admin = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${gateway.url}/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (res.status >= 400 && res.status !== 404)
      throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    return res;
  };
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu'],
  });
  try {
    await admin('POST', '/providers', {
      provider: 'anthropic',
      slug: 'claude',
      name: 'Claude (production)',
      apiKey: 'sk-ant-screenshots-0000000000001234',
      baseUrl: anthropic.url,
      defaultMaxTokens: 1024,
      models: { mode: 'custom', models: ['claude-haiku-4-5', 'claude-sonnet-4-5'] },
      pricing: { 'claude-sonnet-4-5': { input: 3000, output: 15000, cacheWrite: 3750, cacheRead: 300 } },
    });
    await admin('POST', '/limits', {
      slug: 'support-daily',
      name: 'Support team',
      subjects: { groups: ['support'] },
      per: 'each',
      requests_per_minute: 60,
      tokens_per_minute: 200000,
      cost_usd_per_day: 25,
      cost_usd_per_month: 400,
    });
    await admin('POST', '/limits', {
      slug: 'everyone-monthly',
      subjects: { groups: ['support', 'sales'] },
      per: 'shared',
      cost_usd_per_month: 2000,
    });
    await admin('POST', '/providers', {
      provider: 'bedrock',
      slug: 'kb-eu',
      name: 'Knowledge bases (EU)',
      accessKeyId: 'AKIASCREENSHOTS00001',
      secretAccessKey: 'screenshots-secret-0000000000005678',
      region: 'eu-west-1',
    });
    await admin('POST', '/mcp-servers', {
      slug: 'crm',
      url: mcp.url,
      user_identity_forwarding: { method: 'claims_header', include_claims: ['sub', 'email', 'groups'] },
      forward_headers: { mode: 'all-except', headers: ['cookie'] },
      tool_pinning: true,
    });
    await admin('POST', '/prompts', {
      id: 'support-reply',
      provider: '@claude',
      model: 'claude-sonnet-4-5',
      max_tokens: 512,
      messages: [
        { role: 'system', content: 'You answer as {{persona}}.' },
        { role: 'user', content: '{{question}}' },
      ],
    });
    await admin('PUT', '/oauth/settings', { login: { type: 'oidc', issuer: idp.issuer, ...oidc } });
    await admin('POST', '/api-keys', { name: 'support bot', user: { user_id: 'u-bot', groups: ['support'] } });
    await admin('POST', '/api-keys', {
      name: 'quarterly report',
      user: { user_id: 'u-finance', groups: ['finance'] },
      expiresAt: new Date(Date.now() + 90 * 24 * 3600_000).toISOString(),
    });
    await admin('POST', '/policies', {
      slug: 'support',
      name: 'Support team',
      subjects: { groups: ['support'] },
      allow: { models: ['@claude/claude-haiku-*'], mcpServers: [{ server: 'crm', tools: ['search_*'] }] },
    });
    // Report mode: requests the policy would refuse go through, marked "would deny".
    await admin('PUT', '/access/mode', { mode: 'report' });
    for (const model of ['claude-haiku-4-5', 'claude-sonnet-4-5', 'claude-opus-4-1', 'claude-haiku-4-5'])
      await chat(gateway.url, CALLER, `@claude/${model}`);
    // Records are written in batches: wait until the last one is listed.
    for (let i = 0; i < 50; i++) {
      const listed = (await (await admin('GET', '/requests')).json()) as { data: unknown[] };
      if (listed.data.length >= 4) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }

    for (const [width, suffix] of WIDTHS) {
      const context = await browser.newContext({ viewport: { width, height: 900 }, locale: 'en-GB' });
      const page = await context.newPage();
      page.on('dialog', (dialog) => void dialog.accept());
      const shoot = async (name: string) => {
        if (ONLY.size > 0 && !ONLY.has(name)) return;
        await page.evaluate('document.getElementById("status").textContent = ""');
        await page.screenshot({ path: join(OUT, `${name}${suffix}.png`), fullPage: true });
      };
      await page.goto(`${gateway.url}/console/#/models`);
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();
      await page.getByRole('link', { name: /^Sign in with / }).waitFor();
      await shoot('sign-in');
      await page.getByLabel('Admin key').fill(adminKey);
      await page.getByRole('button', { name: 'Sign in' }).click();
      const visit = async (
        hash: string,
        title: string | RegExp,
        name: string,
        then?: (page: Page) => Promise<void>,
      ) => {
        await page.goto(`${gateway.url}/console/${hash}`);
        await page.getByRole('heading', { level: 1, name: title }).waitFor();
        await page.waitForTimeout(400);
        if (then) await then(page);
        await shoot(name);
      };
      await visit('#/models', 'Model catalog', 'model-catalog');
      await visit('#/models', 'Model catalog', 'model-selection', async (p) => {
        await p.getByRole('button', { name: 'Models of claude' }).click();
        await p.getByRole('form', { name: 'Model selection of @claude' }).waitFor();
      });
      await visit('#/models', 'Model catalog', 'provider-edit', async (p) => {
        await p.getByRole('button', { name: 'Edit claude' }).click();
        await p.getByRole('form', { name: 'Settings of @claude' }).waitFor();
      });
      await visit('#/integrations', 'Integrations', 'integrations');
      await visit('#/mcp', 'MCP servers', 'mcp-servers');
      await visit('#/prompts', 'Prompts', 'prompts');
      await visit('#/keys', 'API keys', 'api-keys');
      await visit('#/access', 'Access', 'access-explain');
      await visit('#/access?policy=support', /^Policy /, 'access-policy');
      await visit('#/requests', 'Requests', 'requests');
      // The record report mode marked: what policies would refuse, and why.
      await visit('#/requests', 'Requests', 'request-detail', async (p) => {
        await p
          .locator('tr')
          .filter({ hasText: 'would deny' })
          .getByRole('button', { name: /^Open request/ })
          .click();
        await p
          .locator('#request-detail')
          .getByText(/^Would be refused/)
          .waitFor();
      });
      // A request the gateway refused (403 model_not_enabled): provider, model and message kept.
      await visit('#/requests?status=403', 'Requests', 'request-refused', async (p) => {
        await p
          .getByRole('button', { name: /^Open request/ })
          .first()
          .click();
        await p.locator('#request-detail').getByText('model_not_enabled').first().waitFor();
      });
      await visit('#/usage', 'Usage', 'usage');
      await visit('#/usage?group_by=user', 'Usage', 'usage-cost');
      await visit('#/limits?user=u-ada', 'Limits', 'limits');
      await visit('#/limits', 'Limits', 'limit-edit', async (p) => {
        await p.getByRole('button', { name: 'Edit limit support-daily' }).click();
        await p.getByRole('form', { name: 'Edit limit support-daily' }).waitFor();
      });
      await visit('#/models', 'Model catalog', 'provider-pricing', async (p) => {
        await p.getByRole('button', { name: 'Edit claude' }).click();
        await p.getByRole('form', { name: 'Settings of @claude' }).waitFor();
      });
      await visit('#/apps', 'Connected apps', 'connected-apps');
      await visit('#/audit', 'Audit log', 'audit-log');
      await context.close();
    }
  } finally {
    await browser.close();
    await gateway.stop();
    await Promise.all([anthropic.close(), mcp.close(), idp.stop()]);
  }
}

main().then(
  () => console.log(`Screenshots written to ${OUT}`),
  (error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  },
);

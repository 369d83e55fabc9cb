import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import express from 'express';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import OpenAI from 'openai';
import { Portkey } from 'portkey-ai';
import { chromium, type Browser, type BrowserContext, type Page, type Response as PageResponse } from 'playwright-core';
import { CREDENTIALS, mockBedrock } from '../../../../packages/sigv4-proxy/test/support';
import { startGateway, writeConfig, type RunningGateway } from '../support';
import { newAdminKey, newEncryptionKey, startAnthropicDouble, type AnthropicDouble } from '../catalog/catalog-support';
import { axeRun, WRITE_SHOTS } from './browser-support';

jest.setTimeout(180_000);

/* eslint-disable @typescript-eslint/no-explicit-any */
declare const document: any, localStorage: any, sessionStorage: any;

const CHROMIUM = '/usr/bin/chromium';
const SHOTS = join(__dirname, '..', '..', 'test-output', 'console');
const CALLER = 'gw-console-browser-caller';
const PROVIDER_KEY = 'sk-ant-typed-into-the-form-9f8e';

let anthropic: AnthropicDouble;
let bedrock: Awaited<ReturnType<typeof mockBedrock>>;
let mcp: { url: string; verified: string[]; close(): void };
let gateway: RunningGateway;
let adminKey: string;
let browser: Browser;
let context: BrowserContext;
let page: Page;
/** Every response body the page received, to assert no secret ever came back. */
const responses: { request: string; text: string }[] = [];
const secrets: string[] = [
  PROVIDER_KEY,
  CREDENTIALS.accessKeyId,
  CREDENTIALS.secretAccessKey,
  CREDENTIALS.sessionToken,
];

/** An MCP server that verifies every forwarded `jwt_header` token against the gateway's JWKS. */
async function verifyingMcpServer(jwksUrl: () => string) {
  const { createRemoteJWKSet, jwtVerify } = await import('jose');
  const verified: string[] = [];
  const app = express();
  app.use(express.json());
  let selfUrl = '';
  app.all('/mcp', async (req, res) => {
    const server = new McpServer({ name: 'verifying', version: '1.0.0' });
    server.registerTool('whoami', { description: 'The verified caller' }, async () => {
      const token = String(req.headers['x-user-jwt'] ?? '');
      const { payload } = await jwtVerify(token, createRemoteJWKSet(new URL(jwksUrl())), {
        algorithms: ['RS256'],
        audience: selfUrl,
      });
      verified.push(String(payload.sub));
      return { content: [{ type: 'text', text: `verified ${String(payload.sub)}` }] };
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => void transport.close());
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  const listening = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => listening.once('listening', resolve));
  selfUrl = `http://127.0.0.1:${(listening.address() as { port: number }).port}/mcp`;
  return { url: selfUrl, verified, close: () => listening.close() };
}

/** A full-page screenshot, written only with `CONSOLE_SCREENSHOTS=1` (browser-support.ts). */
async function shot(name: string): Promise<void> {
  if (WRITE_SHOTS) await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

/** Runs axe-core in the page; returns the serious and critical violations. */
async function seriousViolations(): Promise<string[]> {
  return (await axeRun(context, page))
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.nodes.length})`);
}

async function goTo(section: string): Promise<void> {
  await page.getByRole('link', { name: section }).click();
  await page.getByRole('heading', { level: 1, name: section }).waitFor();
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      'No Chromium at /usr/bin/chromium: the test command installs it (scripts/system-deps.sh: apt-get install chromium).',
    );
  }
  mkdirSync(SHOTS, { recursive: true });
  anthropic = await startAnthropicDouble();
  bedrock = await mockBedrock((_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ retrievalResults: [{ content: { text: 'chunk' } }] }));
  });
  mcp = await verifyingMcpServer(() => `${gateway.url}/.well-known/jwks.json`);
  adminKey = newAdminKey();
  gateway = await startGateway({
    GATEWAY_CONFIG: writeConfig({
      auth: { apiKeys: [{ key: CALLER, user: { user_id: 'browser-caller', email: 'b@example.com' } }] },
    }),
    GATEWAY_ADMIN_KEY: adminKey,
    GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
  });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu'] });
  context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  page = await context.newPage();
  page.on('dialog', (dialog) => void dialog.accept());
  page.on('response', (response: PageResponse) => {
    void response.text().then(
      (text) => responses.push({ request: `${response.request().method()} ${new URL(response.url()).pathname}`, text }),
      () => undefined,
    );
  });
});

afterAll(async () => {
  await browser?.close();
  await gateway?.stop();
  await Promise.all([anthropic?.close(), bedrock?.close()]);
  mcp?.close();
});

describe('the console in a real Chromium', () => {
  it('sends a signed-out browser to sign-in, then signs in with the admin key', async () => {
    await page.goto(`${gateway.url}/console/#/models`);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await shot('sign-in');
    await page.getByLabel('Admin key').fill('not-the-admin-key-at-all-000');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('The admin credential is not valid.').waitFor();
    await page.getByLabel('Admin key').fill(adminKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Model catalog' }).waitFor();
    const cookies = await context.cookies();
    const session = cookies.find((c) => c.name === 'gw_console');
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/console' });
  });

  it('creates an Anthropic provider through the form; the openai SDK then gets an answer made with the typed key', async () => {
    const form = page.getByRole('form', { name: 'Add an Anthropic provider' });
    await form.getByLabel('Name').fill('Claude from the console');
    await form.getByLabel('Slug').fill('console-claude');
    await form.getByLabel('API key').fill(PROVIDER_KEY);
    await form.getByLabel('Base URL').fill(anthropic.url);
    await form.getByRole('button', { name: 'Add provider' }).click();
    await page.getByRole('heading', { name: 'Claude from the console (@console-claude)' }).waitFor();
    expect(await page.content()).toContain('…9f8e');
    const openai = new OpenAI({ apiKey: CALLER, baseURL: `${gateway.url}/v1` });
    const completion = await openai.chat.completions.create({
      model: '@console-claude/claude-sonnet-4-5',
      max_tokens: 8,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(completion.choices[0]?.message.content).toBe('hello from the double');
    expect(anthropic.keys.at(-1)).toBe(PROVIDER_KEY);
    await page.getByRole('button', { name: 'Test console-claude' }).click();
    await page.getByText(/Works \(200\)/).waitFor();
    await shot('model-catalog');
  });

  it('customises the model selection: an unticked model is refused; with auto-enable a model published later is served', async () => {
    const openai = new OpenAI({ apiKey: CALLER, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
    const ask = (model: string) =>
      openai.chat.completions.create({
        model: `@console-claude/${model}`,
        max_tokens: 8,
        messages: [{ role: 'user', content: 'hi' }],
      });

    await page.getByRole('button', { name: 'Models of console-claude' }).click();
    const editor = page.getByRole('form', { name: 'Model selection of @console-claude' });
    await editor.getByLabel('Serve').selectOption('custom');
    await editor.getByLabel('claude-opus-4-1').uncheck();
    await shot('model-selection');
    await editor.getByRole('button', { name: 'Save models' }).click();
    await page.getByText('2 chosen model(s): claude-haiku-4-5, claude-sonnet-4-5').waitFor();
    await expect(ask('claude-opus-4-1')).rejects.toMatchObject({ status: 403, code: 'model_not_enabled' });
    expect((await ask('claude-haiku-4-5')).choices[0]?.message.content).toBe('hello from the double');
    // A model the provider publishes only later is refused until auto-enable is on.
    await expect(ask('claude-next-5')).rejects.toMatchObject({ status: 403 });

    await page.getByRole('button', { name: 'Models of console-claude' }).click();
    const again = page.getByRole('form', { name: 'Model selection of @console-claude' });
    await again.getByLabel('Enable new models automatically').check();
    await again.getByRole('button', { name: 'Save models' }).click();
    await page.getByText('new models enabled automatically').waitFor();
    anthropic.models.push('claude-next-5');
    expect((await ask('claude-next-5')).choices[0]?.message.content).toBe('hello from the double');
    expect(anthropic.requestedModels.at(-1)).toBe('claude-next-5');
    // The unticked model stays refused: it existed when the selection was saved.
    await expect(ask('claude-opus-4-1')).rejects.toMatchObject({ status: 403 });
  });

  it("sets a provider's response cache from its page: off answers DISABLED, shared lets the answer be reused", async () => {
    const ask = async () =>
      (
        await fetch(`${gateway.url}/v1/chat/completions`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${CALLER}`,
            'content-type': 'application/json',
            'x-gateway-cache': 'simple',
          },
          body: JSON.stringify({
            model: '@console-claude/claude-sonnet-4-5',
            max_tokens: 8,
            messages: [{ role: 'user', content: 'cached?' }],
          }),
        })
      ).headers.get('x-gateway-cache-status');
    expect(await ask()).toBe('MISS');
    expect(await ask()).toBe('HIT');
    const set = async (mode: string, summary: string) => {
      await page.getByRole('button', { name: 'Response cache of console-claude' }).click();
      const form = page.getByRole('form', { name: 'Response cache of @console-claude' });
      await form.getByLabel('Response cache').selectOption(mode);
      await form.getByRole('button', { name: 'Save cache' }).click();
      await page.getByText(`Response cache: ${summary}`).waitFor();
    };
    await set('off', 'Off');
    expect(await ask()).toBe('DISABLED');
    await set('shared', 'On, answers shared by every caller');
    expect(await ask()).toBe('MISS');
    expect(await ask()).toBe('HIT');
  });

  it('creates a Bedrock integration with the spec fields; the portkey-ai SDK call is signed with the typed credentials', async () => {
    await goTo('Integrations');
    const form = page.getByRole('form', { name: 'Add an AWS Bedrock integration' });
    await form.getByLabel('Name').fill('Knowledge bases');
    await form.getByLabel('Slug').fill('console-kb');
    await form.getByLabel('Access key id').fill(CREDENTIALS.accessKeyId);
    await form.getByLabel('Secret access key').fill(CREDENTIALS.secretAccessKey);
    await form.getByLabel('Session token').fill(CREDENTIALS.sessionToken);
    await form.getByLabel('Default region').fill('us-east-1');
    await form.getByLabel('Allowed custom hosts').fill(bedrock.origin);
    await form.getByRole('button', { name: 'Add integration' }).click();
    await page.getByRole('heading', { name: 'Knowledge bases (@console-kb)' }).waitFor();
    await page.getByRole('button', { name: 'Test console-kb' }).click();
    await page.getByText(/Works \(200\): The upstream accepted the signed request/).waitFor();
    expect(bedrock.received.at(-1)?.signatureValid).toBe(true);
    await shot('integrations');
    const portkey = new Portkey({
      apiKey: CALLER,
      baseURL: `${gateway.url}/v1`,
      provider: '@console-kb',
      customHost: bedrock.origin,
    });
    const result = (await portkey.post('/knowledgebases/KB1/retrieve', {
      retrievalQuery: { text: 'refunds' },
    })) as unknown as {
      retrievalResults: { content: { text: string } }[];
    };
    expect(result.retrievalResults[0]?.content.text).toBe('chunk');
    const signed = bedrock.received.at(-1);
    expect(signed?.signatureValid).toBe(true);
    expect(String(signed?.headers.authorization)).toContain(`Credential=${CREDENTIALS.accessKeyId}/`);
    expect(signed?.headers['x-amz-security-token']).toBe(CREDENTIALS.sessionToken);
  });

  it('registers an MCP server with jwt_header; the MCP SDK calls a tool and the server verifies the token with the JWKS', async () => {
    await goTo('MCP servers');
    const form = page.getByRole('form', { name: 'Register an MCP server' });
    await form.getByLabel('Slug').fill('console-tools');
    await form.getByLabel('URL').fill(mcp.url);
    await form.getByLabel('Identity forwarding').selectOption('jwt_header');
    await form.getByLabel('Claims to include').fill('sub, email');
    await form.getByLabel('Token lifetime (seconds)').fill('120');
    await form.getByRole('button', { name: 'Register server' }).click();
    await page.getByRole('heading', { name: '/mcp/console-tools' }).waitFor();
    await page.getByText('Verification snippet', { exact: true }).click();
    expect(await page.locator('pre code').first().textContent()).toContain(`${gateway.url}/.well-known/jwks.json`);
    await shot('mcp-servers');
    const client = new Client({ name: 'console-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${gateway.url}/mcp/console-tools`), {
        requestInit: { headers: { 'x-api-key': CALLER } },
      }),
    );
    const answer = (await client.callTool({ name: 'whoami', arguments: {} })) as { content: { text: string }[] };
    expect(answer.content[0]?.text).toBe('verified browser-caller');
    await client.close();
    await page.getByRole('button', { name: 'Test console-tools' }).click();
    await page.getByText('The MCP server answered initialize.').waitFor();
  });

  it('shows a new API key once, then only its hint; the key works until it is revoked in the page', async () => {
    await goTo('API keys');
    const form = page.getByRole('form', { name: 'Create an API key' });
    await form.getByLabel('Name', { exact: true }).fill('browser key');
    await form.getByLabel('User id').fill('u-browser');
    await form.getByRole('button', { name: 'Create key' }).click();
    const key = await page.locator('#new-key').inputValue();
    expect(key).toMatch(/^gw-/);
    secrets.push(key);
    await shot('api-keys');
    const openai = new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
    const call = () =>
      openai.chat.completions.create({
        model: '@console-claude/claude-haiku-4-5',
        max_tokens: 8,
        messages: [{ role: 'user', content: 'hi' }],
      });
    expect((await call()).choices[0]?.message.content).toBe('hello from the double');

    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'API keys' }).waitFor();
    const html = await page.content();
    expect(html).not.toContain(key);
    expect(html).toContain(`…${key.slice(-4)}`);
    await page.getByRole('button', { name: 'Revoke the key of u-browser' }).click();
    await page.getByText('No API keys yet.').or(page.getByText('removed')).first().waitFor();
    await expect(call()).rejects.toMatchObject({ status: 401 });
  });

  it('lists the audit log, filtered by record', async () => {
    await goTo('Audit log');
    await page.getByLabel('Record').fill('providers/console-claude');
    await page.getByRole('button', { name: 'Show' }).click();
    // The unfiltered list stays on the page until the filtered one replaces it: its caption says which.
    await page.getByText('Changes of providers/console-claude, newest first').waitFor();
    await page
      .getByRole('cell', { name: /^console:admin-key:[0-9a-f]{8}$/ })
      .first()
      .waitFor();
    const rows = await page.locator('tbody tr').count();
    expect(rows).toBe(5); // create, two model selections, two cache settings
    await shot('audit-log');
  });

  it('never lets a secret reach the page, its network answers or its storage', async () => {
    const storage = await page.evaluate(() =>
      JSON.stringify({ local: { ...localStorage }, session: { ...sessionStorage } }),
    );
    const html = await page.content();
    for (const secret of secrets) {
      expect(html).not.toContain(secret);
      expect(storage).not.toContain(secret);
      // A new API key is answered once, by the POST that creates it (CONTRACT section 8); nothing else carries it.
      const carrying = responses.filter((r) => r.text.includes(secret)).map((r) => r.request);
      expect(carrying).toEqual(secret.startsWith('gw-') ? ['POST /console/api/api-keys'] : []);
    }
    const cookies = JSON.stringify(await context.cookies());
    for (const secret of secrets) expect(cookies).not.toContain(secret);
  });

  it('refuses writes without the CSRF token or from another origin', async () => {
    const cookie = (await context.cookies()).find((c) => c.name === 'gw_console')?.value as string;
    const post = (headers: Record<string, string>) =>
      fetch(`${gateway.url}/console/api/mcp-servers`, {
        method: 'POST',
        headers: { cookie: `gw_console=${cookie}`, 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ slug: 'forged', url: 'http://127.0.0.1:9/mcp' }),
      });
    const noToken = await post({});
    expect([noToken.status, ((await noToken.json()) as { error: { code: string } }).error.code]).toEqual([
      403,
      'csrf_token_invalid',
    ]);
    const csrf = (
      (await (
        await fetch(`${gateway.url}/console/session`, { headers: { cookie: `gw_console=${cookie}` } })
      ).json()) as {
        csrfToken: string;
      }
    ).csrfToken;
    const crossSite = await post({ 'x-csrf-token': csrf, origin: 'https://evil.example' });
    expect([crossSite.status, ((await crossSite.json()) as { error: { code: string } }).error.code]).toEqual([
      403,
      'cross_origin_refused',
    ]);
    const signedIn = await post({ 'x-csrf-token': csrf, origin: gateway.url });
    expect(signedIn.status).toBe(201);
    // The page itself sends the token: its writes worked above. Without a session nothing reads.
    expect((await fetch(`${gateway.url}/console/api/providers`)).status).toBe(401);
  });

  it('has no serious accessibility violations on any page, and works 360 px wide', async () => {
    for (const section of ['Model catalog', 'Integrations', 'MCP servers', 'API keys', 'Audit log']) {
      await goTo(section);
      expect({ section, violations: await seriousViolations() }).toEqual({ section, violations: [] });
    }
    await page.setViewportSize({ width: 360, height: 800 });
    await goTo('Model catalog');
    const overflow = await page.evaluate(
      () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
    );
    expect(overflow).toBeLessThanOrEqual(0);
    await shot('model-catalog-360px');
    await page.setViewportSize({ width: 1100, height: 900 });
  });

  it('works with the keyboard alone: sign in, move between sections, submit a form', async () => {
    // A browser of its own, signed out.
    const own = await browser.newContext({ viewport: { width: 1100, height: 900 } });
    const keyboard = await own.newPage();
    await keyboard.goto(`${gateway.url}/console/`);
    await keyboard.getByRole('heading', { name: 'Sign in' }).waitFor();
    const tabTo = async (matches: () => Promise<boolean>, most = 30) => {
      for (let i = 0; i < most; i++) {
        if (await matches()) return;
        await keyboard.keyboard.press('Tab');
      }
      throw new Error('not reachable with Tab');
    };
    const focusedLabel = () =>
      keyboard.evaluate(() => {
        const active = document.activeElement as { id?: string; textContent?: string } | null;
        const label = active?.id ? document.querySelector(`label[for="${active.id}"]`)?.textContent : undefined;
        return label ?? active?.textContent ?? '';
      });
    await tabTo(async () => (await focusedLabel()).startsWith('Admin key'));
    await keyboard.keyboard.type(adminKey);
    await keyboard.keyboard.press('Enter');
    await keyboard.getByRole('heading', { level: 1, name: 'Model catalog' }).waitFor();
    await tabTo(async () => (await focusedLabel()) === 'MCP servers');
    await keyboard.keyboard.press('Enter');
    await keyboard.getByRole('heading', { level: 1, name: 'MCP servers' }).waitFor();
    await tabTo(async () => (await focusedLabel()).startsWith('Slug'), 60);
    await keyboard.keyboard.type('typed-by-keyboard');
    await keyboard.keyboard.press('Tab');
    await keyboard.keyboard.type('http://127.0.0.1:9/mcp');
    await keyboard.keyboard.press('Enter');
    await keyboard.getByRole('heading', { name: '/mcp/typed-by-keyboard' }).waitFor();
    // A refused field gets its error beside it, and the focus.
    await tabTo(async () => (await focusedLabel()).startsWith('Slug'), 80);
    await keyboard.keyboard.type('typed-by-keyboard');
    await keyboard.keyboard.press('Tab');
    await keyboard.keyboard.type('not a url');
    await keyboard.keyboard.press('Enter');
    await keyboard.getByText(/url: must be an http\(s\) URL/).waitFor();
    expect(await focusedLabel()).toMatch(/^URL/);
    await own.close();
  });

  it('signs out: the session cookie no longer opens the admin API', async () => {
    const cookie = (await context.cookies()).find((c) => c.name === 'gw_console')?.value as string;
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(
      (await fetch(`${gateway.url}/console/api/providers`, { headers: { cookie: `gw_console=${cookie}` } })).status,
    ).toBe(401);
  });
});

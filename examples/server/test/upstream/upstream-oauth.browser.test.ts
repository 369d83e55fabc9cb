import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError, UrlElicitationRequiredError } from '@modelcontextprotocol/sdk/types.js';
import { chromium, type Browser, type BrowserContext } from 'playwright-core';
import { openPostgres } from '@gw/catalog';
import { startPostgres, type RunningPostgres } from '../../../../packages/catalog/test/postgres';
import { rsaPem, startGateway, writeConfig, type RunningGateway } from '../support';
import { adminClient } from '../catalog/catalog-support';
import { freePort, within } from '../oauth/oauth-support';
import { startHostedAuthorizationServer, startHostedMcpServer } from './upstream-support';

jest.setTimeout(180_000);

/** Debian's Chromium, installed by the test command (scripts/system-deps.sh). */
const CHROMIUM = '/usr/bin/chromium';
const ALICE_KEY = 'gw-upstream-alice-key-0001';
const BOB_KEY = 'gw-upstream-bob-key-00001';
const ADMIN_KEY = 'admin-upstream-oauth-000000000001';
const CLIENT_SECRET = `tracker-secret-${randomBytes(8).toString('hex')}`;
/** A shared service credential of a `static` server. */
const CRM_TOKEN = `crm-static-${randomBytes(12).toString('hex')}`;
/** The access tokens' lifetime at the hosted server's authorization server: refreshed 4 s before. */
const ACCESS_TOKEN_TTL = 8;

/** What a `-32042` answer carries. */
interface Elicitation {
  mode: string;
  elicitationId: string;
  url: string;
  message: string;
}

describe("an MCP server that takes each user's own token (upstream_auth oauth), two instances on PostgreSQL", () => {
  let postgres: RunningPostgres;
  let hosted: Awaited<ReturnType<typeof startHostedMcpServer>>;
  let as: Awaited<ReturnType<typeof startHostedAuthorizationServer>>;
  let a: RunningGateway;
  let b: RunningGateway;
  let browser: Browser;
  let base: string;
  let baseB: string;
  let databaseUrl: string;
  /** Each instance's PUBLIC_BASE_URL (its own address here). */
  const publicBaseOf = (gateway: RunningGateway) => (gateway === a ? base : baseB);

  beforeAll(async () => {
    if (!existsSync(CHROMIUM))
      throw new Error('No Chromium at /usr/bin/chromium: the test command installs it (scripts/system-deps.sh).');
    const [port, portB] = [await freePort(), await freePort()];
    base = `http://127.0.0.1:${port}`;
    baseB = `http://127.0.0.1:${portB}`;
    [postgres, hosted, browser] = await Promise.all([
      startPostgres(),
      startHostedMcpServer(),
      chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu'] }),
    ]);
    as = await startHostedAuthorizationServer({
      resource: hosted.resource,
      accessTokenTtl: ACCESS_TOKEN_TTL,
      clients: [
        {
          client_id: 'gw-prod',
          client_secret: CLIENT_SECRET,
          redirect_uris: [`${base}/oauth/upstream/callback`, `${baseB}/oauth/upstream/callback`],
        },
      ],
    });
    hosted.trust(as.issuer, `${as.issuer}/jwks`);
    databaseUrl = await postgres.createDatabase();
    const env = {
      DATABASE_URL: databaseUrl,
      GATEWAY_CONFIG: writeConfig({
        auth: {
          apiKeys: [
            { key: ALICE_KEY, user: { user_id: 'alice', email: 'alice@example.com' } },
            { key: BOB_KEY, user: { user_id: 'bob', email: 'bob@example.com' } },
          ],
        },
        mcpServers: [
          {
            slug: 'tracker',
            url: hosted.resource,
            upstream_auth: {
              type: 'oauth',
              scopes: ['read'],
              client: { client_id: 'gw-prod', client_secret: '${TRACKER_SECRET}' },
            },
          },
          {
            slug: 'crm',
            url: hosted.resource,
            upstream_auth: { type: 'static', headers: { Authorization: 'Bearer ${CRM_TOKEN}' } },
          },
        ],
        oauth: { login: { type: 'api_key' } },
      }),
      TRACKER_SECRET: CLIENT_SECRET,
      CRM_TOKEN,
      GATEWAY_ADMIN_KEY: ADMIN_KEY,
      GATEWAY_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      JWT_PRIVATE_KEY: rsaPem().privateKey,
      NODE_ENV: 'production',
    };
    a = await startGateway({ ...env, PORT: String(port), PUBLIC_BASE_URL: base });
    b = await startGateway({ ...env, PORT: String(portB), PUBLIC_BASE_URL: baseB });
  });

  afterAll(async () => {
    await browser?.close();
    await Promise.all([a?.stop(), b?.stop()]);
    await Promise.all([postgres?.destroy(), hosted?.close(), as?.stop()]);
  });

  /** An official MCP SDK client of `gateway`'s `/mcp/tracker` with `key`; rejects as `connect` does. */
  async function connectClient(gateway: RunningGateway, key: string): Promise<Client> {
    const client = new Client({ name: 'upstream-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${gateway.url}/mcp/tracker`), {
        requestInit: { headers: { 'x-gateway-api-key': key } },
      }),
    );
    return client;
  }

  /** The `-32042` the SDK client gets on `initialize`, with its elicitation. */
  async function connectionRequired(gateway: RunningGateway, key: string): Promise<Elicitation> {
    const error = await connectClient(gateway, key).then(
      () => undefined,
      (e: unknown) => e,
    );
    // The SDK reads the gateway's answer as MCP 2025-11-25's URL elicitation request.
    expect(error).toBeInstanceOf(UrlElicitationRequiredError);
    const [elicitation] = (error as UrlElicitationRequiredError).elicitations as Elicitation[];
    expect(elicitation?.mode).toBe('url');
    expect(elicitation?.url.startsWith(`${publicBaseOf(gateway)}/connect/tracker?request=`)).toBe(true);
    expect(elicitation?.message).toContain(elicitation?.url);
    return elicitation as Elicitation;
  }

  /** `whoami` through `gateway` as `key`: the upstream user the hosted server saw. */
  async function whoami(gateway: RunningGateway, key: string): Promise<string> {
    const client = await connectClient(gateway, key);
    try {
      const result = (await client.callTool({ name: 'whoami', arguments: {} })) as { content: { text: string }[] };
      return (JSON.parse(result.content[0]?.text as string) as { sub: string }).sub;
    } finally {
      await client.close();
    }
  }

  /**
   * Opens a connect link in a fresh browser: signs in at the gateway with `gatewayKey`, and, when
   * the gateway sends it on, at the hosted server's authorization server as `upstreamLogin`
   * (its login and consent pages). Resolves with the last page's status and text.
   */
  async function openConnectLink(
    url: string,
    gatewayKey: string,
    upstreamLogin: string,
    /** A browser context of the caller's (kept open); default a fresh one, closed after. */
    given?: BrowserContext,
  ): Promise<{ status: number; text: string; sawServerPage: boolean }> {
    const context = given ?? (await browser.newContext({ locale: 'en-US' }));
    try {
      const page = await context.newPage();
      let status = 0;
      page.on('response', (response) => {
        if (response.request().isNavigationRequest()) status = response.status();
      });
      await page.goto(url);
      // The gateway's sign-in (section 11's login, api_key).
      await page.locator('input[name="api_key"]').fill(gatewayKey);
      await page.locator('button[type="submit"]').click();
      // The gateway's "signed in" page goes on by itself to the link.
      await page.waitForURL((u) => u.pathname !== '/oauth/authorize/sign-in', { waitUntil: 'load', timeout: 15_000 });
      let sawServerPage = false;
      for (
        let step = 0;
        step < 4 &&
        new URL(page.url()).origin === as.issuer &&
        (await page.locator('button[type="submit"]').count()) > 0;
        step++
      ) {
        sawServerPage = true;
        if ((await page.locator('input[name="login"]').count()) > 0) {
          await page.locator('input[name="login"]').fill(upstreamLogin);
          await page.locator('input[name="password"]').fill('any password');
        }
        await Promise.all([
          // A navigation the test stops (a caught callback) ends the walk.
          page.waitForNavigation({ waitUntil: 'load' }).catch(() => undefined),
          page.locator('button[type="submit"]').click(),
        ]);
      }
      return {
        status,
        text: await page
          .locator('body')
          .innerText()
          .catch(() => ''),
        sawServerPage,
      };
    } finally {
      if (given === undefined) await context.close();
    }
  }

  /** The admin API of instance A (its answers checked against the OpenAPI document). */
  const admin = (method: string, path: string) => adminClient(a.url, ADMIN_KEY)(method, path);

  let link: Elicitation;

  it('asks a caller without a connection to connect, with a single-use link on the gateway (-32042, URL elicitation)', async () => {
    link = await connectionRequired(a, ALICE_KEY);
    // Its data as sent: the gateway's code beside the elicitations.
    const raw = await fetch(`${a.url}/mcp/tracker`, {
      method: 'POST',
      headers: {
        'x-gateway-api-key': ALICE_KEY,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
    });
    expect(raw.status).toBe(200);
    const answer = (await raw.json()) as {
      id: number;
      error: { code: number; data: { code: string; elicitations: Elicitation[] } };
    };
    expect(answer.id).toBe(9);
    expect(answer.error.code).toBe(-32042);
    expect(answer.error.data.code).toBe('connection_required');
    // The same link while it is unused: one per caller and server, not one per call.
    expect(answer.error.data.elicitations[0]?.url).toBe(link.url);
    expect(hosted.seen).toHaveLength(0);
  });

  it("refuses the link to another signed-in user, before the server's page, and stores nothing", async () => {
    const opened = await openConnectLink(link.url, BOB_KEY, 'bob-upstream');
    expect(opened.status).toBe(403);
    expect(opened.text).toContain('connection_user_mismatch');
    expect(opened.sawServerPage).toBe(false);
    expect((await admin('GET', '/mcp-servers/tracker/connections')).body.data).toEqual([]);
  });

  it("connects the caller who got the link, and the same client's calls then reach the server as the user's own upstream identity", async () => {
    const opened = await openConnectLink(link.url, ALICE_KEY, 'alice-upstream');
    expect(opened.sawServerPage).toBe(true);
    expect(opened.text).toContain('connected');
    expect(await whoami(a, ALICE_KEY)).toBe('alice-upstream');
    const seen = hosted.seen.filter((s) => s.sub !== undefined);
    expect(seen.length).toBeGreaterThan(0);
    // The server's own token, for the server: never a gateway credential.
    for (const request of seen) {
      expect(request.audience).toBe(hosted.resource);
      expect(request.clientId).toBe('gw-prod');
      expect(request.authorization).not.toContain(ALICE_KEY);
    }
    const connections = (await admin('GET', '/mcp-servers/tracker/connections')).body.data;
    expect(connections).toHaveLength(1);
    expect(connections[0]).toMatchObject({ user_id: 'alice', scopes: ['read'] });
    expect(JSON.stringify(connections)).not.toMatch(/eyJ/);
  });

  it('refuses the used link, and starts nothing', async () => {
    const opened = await openConnectLink(link.url, ALICE_KEY, 'alice-upstream');
    expect(opened.status).toBe(410);
    expect(opened.sawServerPage).toBe(false);
  });

  it('serves on instance B the connection made on A', async () => {
    expect(await whoami(b, ALICE_KEY)).toBe('alice-upstream');
  });

  it('refreshes the token once, with both instances serving calls at the moment of expiry', async () => {
    const before = (await as.stats()).token.refresh_token ?? 0;
    // Past the refresh point (half the lifetime), calls on both instances at once.
    await new Promise((resolve) => setTimeout(resolve, (ACCESS_TOKEN_TTL / 2) * 1000 + 200));
    const users = await Promise.all(Array.from({ length: 6 }, (_, i) => whoami(i % 2 === 0 ? a : b, ALICE_KEY)));
    expect(users).toEqual(Array(6).fill('alice-upstream'));
    const stats = await as.stats();
    expect((stats.token.refresh_token ?? 0) - before).toBe(1);
    expect(stats.refused.refresh_token ?? 0).toBe(0);
  });

  it('ends the connection when an administrator revokes it: the server revokes the token, the caller is asked again', async () => {
    const revocations = (await as.stats()).revocations;
    expect((await admin('DELETE', '/mcp-servers/tracker/connections/alice')).status).toBeLessThan(300);
    expect((await as.stats()).revocations).toBe(revocations + 1);
    await within(2_000, async () => {
      const answer = await connectClient(b, ALICE_KEY).then(
        async (client) => {
          await client.close();
          return 'connected';
        },
        (e: unknown) => (e instanceof McpError ? e.code : 'other'),
      );
      return answer === -32042;
    });
  });

  it('asks again when the server refuses the refresh', async () => {
    link = await connectionRequired(a, ALICE_KEY);
    const opened = await openConnectLink(link.url, ALICE_KEY, 'carol-upstream');
    expect(opened.text).toContain('connected');
    expect(await whoami(a, ALICE_KEY)).toBe('carol-upstream');
    await as.disable('carol-upstream');
    await new Promise((resolve) => setTimeout(resolve, (ACCESS_TOKEN_TTL / 2) * 1000 + 200));
    await connectionRequired(a, ALICE_KEY);
    expect((await as.stats()).refused.refresh_token).toBeGreaterThanOrEqual(1);
  });

  it('sends a static server its shared header, and keeps every upstream secret out of logs, answers, records, audit entries and the database', async () => {
    // The static server's header reaches it (the hosted server refuses it: not its JWT).
    const answer = await fetch(`${a.url}/mcp/crm`, {
      method: 'POST',
      headers: {
        'x-gateway-api-key': ALICE_KEY,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    await answer.text();
    expect(hosted.seen.some((s) => s.authorization === `Bearer ${CRM_TOKEN}`)).toBe(true);
    const crm = (await admin('GET', '/mcp-servers/crm')).body;
    expect(crm.upstream_auth.headers).toEqual({ Authorization: `…${CRM_TOKEN.slice(-4)}` });

    const stats = await as.stats();
    const accessTokens = [
      ...new Set(
        hosted.seen
          .map((s) => /^Bearer (.+)$/.exec(s.authorization ?? '')?.[1])
          .filter((t): t is string => t !== undefined && t !== CRM_TOKEN),
      ),
    ];
    expect(accessTokens.length).toBeGreaterThan(2);
    expect(stats.refreshTokens.length).toBeGreaterThan(2);
    const secrets = [CLIENT_SECRET, CRM_TOKEN, ...accessTokens, ...stats.refreshTokens];
    const places: Record<string, string> = {
      'logs of A': a.logs.join('\n'),
      'logs of B': b.logs.join('\n'),
      'MCP servers': JSON.stringify((await admin('GET', '/mcp-servers')).body),
      connections: JSON.stringify((await admin('GET', '/mcp-servers/tracker/connections')).body),
      audit: JSON.stringify((await admin('GET', '/audit')).body),
      'request records': JSON.stringify((await admin('GET', '/requests')).body),
    };
    const db = await openPostgres(databaseUrl);
    try {
      const tables = (
        await db.query<{ table_name: string }>(
          "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_name LIKE 'gw\\_%'",
        )
      ).map((row) => row.table_name);
      expect(tables).toEqual(expect.arrayContaining(['gw_upstream_connections', 'gw_records', 'gw_audit']));
      for (const table of tables) places[`table ${table}`] = JSON.stringify(await db.query(`SELECT * FROM ${table}`));
    } finally {
      await db.close();
    }
    // The audit log tells who connected and disconnected, and the refusals.
    expect(places.audit).toContain('upstream_connected');
    expect(places.audit).toContain('upstream_disconnected');
    expect(places.audit).toContain('upstream_refresh_refused');
    for (const [place, text] of Object.entries(places))
      for (const secret of secrets) expect([place, text.includes(secret)]).toEqual([place, false]);
  });

  it("lists the signed-in user's servers at /connect, connects ahead of time, and disconnects only through the page's own form; counts refreshes in /metrics", async () => {
    const context = await browser.newContext({ locale: 'en-US' });
    try {
      const page = await context.newPage();
      const opened = await page.goto(`${base}/connect`);
      // Never framed, nothing but its own style and forms.
      expect(opened?.headers()['content-security-policy']).toContain("frame-ancestors 'none'");
      await page.locator('input[name="api_key"]').fill(ALICE_KEY);
      await page.locator('button[type="submit"]').click();
      await page.waitForURL((u) => u.pathname === '/connect', { waitUntil: 'load', timeout: 15_000 });
      expect(await page.locator('body').innerText()).toContain('Not connected');
      // Connect ahead of time: the server's pages, then back to the gateway.
      await page.getByRole('link', { name: 'Connect' }).click();
      await page.waitForURL((u) => u.origin === as.issuer, { waitUntil: 'load', timeout: 15_000 });
      for (let step = 0; step < 4 && new URL(page.url()).origin === as.issuer; step++) {
        if ((await page.locator('input[name="login"]').count()) > 0) {
          await page.locator('input[name="login"]').fill('dave-upstream');
          await page.locator('input[name="password"]').fill('any password');
        }
        await Promise.all([
          page.waitForNavigation({ waitUntil: 'load' }).catch(() => undefined),
          page.locator('button[type="submit"]').click(),
        ]);
      }
      expect(await page.locator('body').innerText()).toContain('is connected');
      expect(await whoami(a, ALICE_KEY)).toBe('dave-upstream');
      await page.goto(`${base}/connect`);
      expect(await page.locator('body').innerText()).toContain('Connected');
      // A form posted without the page's token (another site's) is refused and disconnects nothing.
      const forged = await fetch(`${base}/connect/tracker/disconnect`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://evil.example' },
        body: 'csrf=forged',
        redirect: 'manual',
      });
      expect(forged.status).toBe(403);
      expect(
        (await admin('GET', '/mcp-servers/tracker/connections')).body.data.map((c: { user_id: string }) => c.user_id),
      ).toContain('alice');
      // A link whose request is not one of the gateway's starts nothing.
      expect(
        (await fetch(`${base}/connect/tracker?request=https%3A%2F%2Fevil.example%2F`, { redirect: 'manual' })).status,
      ).toBe(400);
      // The page's own button disconnects her, revoked at the server and audited as hers.
      const revocations = (await as.stats()).revocations;
      await page.getByRole('button', { name: 'Disconnect' }).click();
      await page.waitForURL((u) => u.pathname === '/connect', { waitUntil: 'load', timeout: 15_000 });
      expect(await page.locator('body').innerText()).toContain('Not connected');
      expect(
        (await admin('GET', '/mcp-servers/tracker/connections')).body.data.map((c: { user_id: string }) => c.user_id),
      ).not.toContain('alice');
      expect((await as.stats()).revocations).toBe(revocations + 1);
      const audit = (await admin('GET', '/audit')).body.data as { actor: string; action: string }[];
      expect(audit.find((entry) => entry.action === 'upstream_disconnected')?.actor).toBe('user:alice');
    } finally {
      await context.close();
    }
    // Each instance counts its own refreshes: the one that won the lock refreshed, the other reused.
    const metrics = (await Promise.all([a, b].map(async (g) => (await fetch(`${g.url}/metrics`)).text()))).join('\n');
    expect(metrics).toMatch(/gateway_upstream_token_refresh_total\{server="tracker",outcome="refreshed"\} [1-9]/);
    expect(metrics).toMatch(/gateway_upstream_token_refresh_total\{server="tracker",outcome="refused"\} [1-9]/);
  });
});

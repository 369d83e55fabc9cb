import { existsSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { chromium, type Browser, type Page } from 'playwright-core';
import { rsaPem, startGateway, writeConfig, type RunningGateway } from '../support';
import {
  MemoryOAuthProvider,
  freePort,
  mcpPost,
  startOidcProvider,
  startVerifyingMcpServer,
  tokenRequest,
} from './oauth-support';

jest.setTimeout(60_000);

/** Debian's Chromium, installed by the test command (scripts/system-deps.sh). */
const CHROMIUM = '/usr/bin/chromium';
const CLIENT_ID = 'mcp-gateway';
const CLIENT_SECRET = 'oauth-oidc-browser-client-secret-7d1e';
/** The MCP client's loopback redirect URI: the browser's request is caught (Chromium refuses port 7 outright). */
const CLIENT_REDIRECT = 'http://127.0.0.1:8123/sdk-callback';

/**
 * Sign-in at the company's OpenID Provider, in a real browser: the MCP SDK client's own OAuth flow
 * (discovery, dynamic registration), the authorization URL opened in headless Chromium, the
 * provider's login and consent pages, the gateway's consent page, the code caught at the client's
 * loopback redirect URI; then `tools/call` through a `jwt_header` server that verifies the
 * gateway's identity token and sees the provider's user.
 */
describe("OAuth sign-in at the company's OpenID Provider, in a browser", () => {
  let gateway: RunningGateway;
  let mcp: Awaited<ReturnType<typeof startVerifyingMcpServer>>;
  let idp: Awaited<ReturnType<typeof startOidcProvider>>;
  let browser: Browser;
  let base: string;
  /** Serves the client ID metadata document of a client that never registers. */
  let documents: Server;
  let documentOrigin = '';
  const documentsAsked: string[] = [];

  beforeAll(async () => {
    if (!existsSync(CHROMIUM))
      throw new Error(
        'No Chromium at /usr/bin/chromium: the test command installs it (scripts/system-deps.sh: apt-get install chromium).',
      );
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    documents = createHttpServer((req, res) => {
      documentsAsked.push(req.url ?? '');
      res.writeHead(req.url === '/client.json' ? 200 : 404, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          client_id: `${documentOrigin}/client.json`,
          client_name: 'Metadata document client',
          redirect_uris: [CLIENT_REDIRECT],
          token_endpoint_auth_method: 'none',
        }),
      );
    });
    await new Promise<void>((resolve) => documents.listen(0, '127.0.0.1', resolve));
    documentOrigin = `http://127.0.0.1:${(documents.address() as AddressInfo).port}`;
    [mcp, idp, browser] = await Promise.all([
      startVerifyingMcpServer(),
      startOidcProvider({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUri: `${base}/oauth/callback` }),
      chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu'] }),
    ]);
    gateway = await startGateway({
      GATEWAY_CONFIG: writeConfig({
        auth: { apiKeys: [{ key: 'gw-oidc-unused-key-0001', user: { user_id: 'u-unused' } }] },
        access: { mode: 'policies' },
        policies: [
          {
            slug: 'oidc-users',
            name: 'Signed in at the company provider',
            subjects: { users: ['alice', 'bob'] },
            allow: { models: ['*'], mcpServers: [{ server: 'a' }] },
          },
          {
            slug: 'mcp-admins',
            name: 'The provider group mcp-admins',
            subjects: { groups: ['mcp-admins'] },
            allow: { models: ['*'], mcpServers: [{ server: 'a' }] },
          },
        ],
        mcpServers: [
          {
            slug: 'a',
            url: `${mcp.url}/mcp/a`,
            user_identity_forwarding: { method: 'jwt_header', include_claims: ['sub', 'email'] },
          },
        ],
        oauth: {
          login: { type: 'oidc', issuer: idp.issuer, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET },
          allowedClientHosts: [documentOrigin],
        },
      }),
      PORT: String(port),
      PUBLIC_BASE_URL: base,
      JWT_PRIVATE_KEY: rsaPem().privateKey,
    });
    mcp.setJwksUrl(`${base}/.well-known/jwks.json`);
  });

  afterAll(async () => {
    await browser?.close();
    await gateway?.stop();
    await mcp?.close();
    await idp?.stop();
    documents?.closeAllConnections();
    await new Promise((resolve) => documents?.close(resolve));
  });

  /**
   * Opens `authorizationUrl` in a fresh browser context, signs in at the provider as `login`,
   * accepts the provider's consent when asked and approves the gateway's; resolves with the URL
   * the browser was sent to at the client's redirect URI (caught, never loaded), and the pages seen.
   */
  async function signInInBrowser(
    authorizationUrl: URL,
    login: string,
  ): Promise<{ callback: URL; gatewayConsent: string }> {
    const context = await browser.newContext({ locale: 'en-US' });
    try {
      let caught: (url: URL) => void = () => undefined;
      const callback = new Promise<URL>((resolve) => (caught = resolve));
      await context.route(`${CLIENT_REDIRECT}**`, async (route) => {
        caught(new URL(route.request().url()));
        await route.fulfill({ status: 200, contentType: 'text/plain', body: 'signed in' });
      });
      const page: Page = await context.newPage();
      await page.goto(authorizationUrl.href);
      // The provider's login page (oidc-provider's development interaction).
      expect(new URL(page.url()).origin).toBe(idp.issuer);
      await page.locator('input[name="login"]').fill(login);
      await page.locator('input[name="password"]').fill('any password');
      await page.locator('button[type="submit"]').click();
      // The provider's own consent, when it asks; then the gateway's consent page.
      await page.waitForURL((url) => url.origin === base || url.pathname.includes('/interaction/'), {
        timeout: 10_000,
      });
      for (let step = 0; step < 3 && new URL(page.url()).origin === idp.issuer; step++) {
        await page.locator('button[type="submit"]').click();
        await page.waitForLoadState();
      }
      await page.getByRole('button', { name: 'Allow' }).waitFor({ timeout: 10_000 });
      expect(new URL(page.url()).origin).toBe(base);
      const gatewayConsent = await page.content();
      await page.getByRole('button', { name: 'Allow' }).click();
      const url = await Promise.race([
        callback,
        new Promise<URL>((_, reject) =>
          setTimeout(() => reject(new Error(`no redirect to the client; the page is ${page.url()}`)), 10_000),
        ),
      ]);
      return { callback: url, gatewayConsent };
    } finally {
      await context.close();
    }
  }

  /**
   * The MCP SDK client's flow with `provider` (registered or not), signed in at the company's
   * provider as `login`; then `tools/call` through the `jwt_header` server. Checks that the server
   * sees the provider's user and never the gateway's token.
   */
  async function signInAndCallTool(provider: MemoryOAuthProvider, login: string): Promise<void> {
    const first = new StreamableHTTPClientTransport(new URL(`${base}/mcp/a`), { authProvider: provider });
    await expect(new Client({ name: 'sdk', version: '1.0.0' }).connect(first)).rejects.toThrow(UnauthorizedError);
    const authorizationUrl = provider.authorizationUrl as URL;
    expect(authorizationUrl.origin + authorizationUrl.pathname).toBe(`${base}/oauth/authorize`);

    const { callback, gatewayConsent } = await signInInBrowser(authorizationUrl, login);
    // The gateway's consent page names the user the provider signed in, and the resource.
    expect(gatewayConsent).toContain(login);
    expect(gatewayConsent).toContain(`${base}/mcp/a`);
    expect(callback.origin + callback.pathname).toBe(CLIENT_REDIRECT);
    expect(callback.searchParams.get('iss')).toBe(base);
    expect(callback.searchParams.get('state')).toBe(authorizationUrl.searchParams.get('state'));
    await first.finishAuth(callback.searchParams.get('code') as string);
    const accessToken = provider.tokens()?.access_token as string;
    expect(accessToken.split('.')).toHaveLength(3);

    const before = mcp.seen.length;
    const client = new Client({ name: 'sdk', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp/a`), { authProvider: provider }));
    const result = await client.callTool({ name: 'whoami', arguments: {} });
    await client.close();
    expect(JSON.parse((result.content as { text: string }[])[0]?.text as string)).toEqual({
      sub: login,
      claims: null,
    });
    await mcp.settled();
    const seen = mcp.seen.slice(before);
    expect(seen.length).toBeGreaterThan(0);
    for (const request of seen) {
      expect(request.verifiedSub).toBe(login);
      expect(request.verifiedEmail).toBe(`${login}@example.com`);
      // The gateway's access token never reaches the MCP server, in any header.
      expect(request.headers.authorization).toBeUndefined();
      expect(JSON.stringify(request.headers)).not.toContain(accessToken);
    }
    expect(gateway.logs.join('\n')).not.toContain(CLIENT_SECRET);
  }

  it("signs in at the provider through the MCP SDK client's flow with dynamic registration; the jwt_header server sees the provider's user, never the token", async () => {
    const provider = new MemoryOAuthProvider(CLIENT_REDIRECT);
    await signInAndCallTool(provider, 'alice');
    // Dynamic registration (RFC 7591) at the gateway.
    expect(provider.clientInformation()?.client_id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("signs in at the provider a client known by its client ID metadata document; the jwt_header server sees the provider's user", async () => {
    const clientId = `${documentOrigin}/client.json`;
    const provider = new MemoryOAuthProvider(CLIENT_REDIRECT);
    // The client identifies itself by its document's URL, so it never registers.
    provider.saveClientInformation({ client_id: clientId });
    await signInAndCallTool(provider, 'bob');
    expect(provider.authorizationUrl?.searchParams.get('client_id')).toBe(clientId);
    expect(documentsAsked).toContain('/client.json');
  });

  /** Changes an account at the company's provider, as its administrator would. */
  async function changeAccount(login: string, change: { groups?: string[]; disabled?: boolean }): Promise<void> {
    const answer = await fetch(`${idp.issuer}/test/accounts/${login}`, {
      method: 'POST',
      body: JSON.stringify(change),
      signal: AbortSignal.timeout(5_000),
    });
    expect(answer.status).toBe(204);
  }

  /** The claims of a gateway access token (a JWT), read without verifying (the gateway verifies it). */
  function tokenClaims(token: string): Record<string, unknown> {
    return JSON.parse(Buffer.from(token.split('.')[1] as string, 'base64url').toString('utf8')) as Record<
      string,
      unknown
    >;
  }

  it("renews the sign-in at the provider on each refresh: a user removed from a group loses it at the next refresh, a disabled one's refresh is refused", async () => {
    const provider = new MemoryOAuthProvider(CLIENT_REDIRECT);
    // carol is allowed only through the provider group mcp-admins.
    await signInAndCallTool(provider, 'carol');
    const clientId = provider.clientInformation()?.client_id as string;
    const first = provider.tokens() as { access_token: string; refresh_token: string };
    expect(tokenClaims(first.access_token).groups).toEqual(['engineering', 'mcp-admins']);
    // The provider's refresh token is kept only encrypted: no grant row holds it, nor a refresh token, in clear.
    expect(gateway.logs.join('\n')).not.toContain(first.refresh_token);

    // The provider's administrator removes carol from mcp-admins; the gateway's refresh reads her groups again.
    await changeAccount('carol', { groups: ['engineering'] });
    const refreshed = await tokenRequest(base, {
      grant_type: 'refresh_token',
      refresh_token: first.refresh_token,
      client_id: clientId,
    });
    expect(refreshed.status).toBe(200);
    const second = refreshed.body as { access_token: string; refresh_token: string };
    expect(tokenClaims(second.access_token).sub).toBe('carol');
    expect(tokenClaims(second.access_token).groups).toEqual(['engineering']);
    // The policy on mcp-admins no longer lets her in.
    expect((await mcpPost(base, 'a', second.access_token)).status).toBe(403);

    // The account is disabled at the provider: the gateway's refresh is refused and the grant ends.
    await changeAccount('carol', { disabled: true });
    const refused = await tokenRequest(base, {
      grant_type: 'refresh_token',
      refresh_token: second.refresh_token,
      client_id: clientId,
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe('invalid_grant');
    expect((await mcpPost(base, 'a', second.access_token)).status).toBe(401);
  });
});

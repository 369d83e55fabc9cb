import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { migrate, openPostgres, type CatalogDatabase } from '@gw/catalog';
import { SigningKey } from '@gw/jwks';
import { startPostgres, type RunningPostgres } from '../../catalog/test/postgres';
import {
  authorizeUrl,
  manualFlow,
  pkcePair,
  registerClient,
  signInAndConsent,
  tokenRequest,
} from '../../../examples/server/test/oauth/oauth-support';
import {
  AuthorizationServer,
  oauthMetadataHandler,
  oauthRoutes,
  redirectUriRegistered,
  resourceCovers,
  type AuthorizationServerOptions,
} from '../src';

jest.setTimeout(60_000);

const KEY = 'gw-package-user-key-01';

/** The authorization server's core and Express adapter on a real PostgreSQL, without the gateway around it. */
describe('AuthorizationServer', () => {
  let postgres: RunningPostgres;
  let db: CatalogDatabase;
  let http: Server;
  let base: string;
  let server: AuthorizationServer;
  const signingKey = SigningKey.generate();
  const options = (): AuthorizationServerOptions => ({
    publicBaseUrl: base,
    db,
    signingKey,
    pageSecret: Buffer.alloc(32, 7),
    login: {
      type: 'api_key',
      checkApiKey: async (key) =>
        key === KEY ? { sub: 'u-pkg', subject: 'api_key:key:0', claims: { sub: 'u-pkg' } } : undefined,
    },
    mcpServerSlugs: new Set(['a']),
  });

  /** What `onGrantRevoked` heard (the host ends the user's upstream connections with it). */
  const grantsRevoked: { id: string; userId: string }[] = [];

  beforeAll(async () => {
    postgres = await startPostgres();
    db = openPostgres(await postgres.createDatabase());
    await migrate(db);
    const app = express();
    http = createServer(app);
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
    server = new AuthorizationServer({
      ...options(),
      revocationRefreshMs: 200,
      onGrantRevoked: (grant) => grantsRevoked.push(grant),
    });
    await server.start();
    app.get('/.well-known/oauth-authorization-server', oauthMetadataHandler(server));
    app.use(
      '/oauth',
      oauthRoutes(server, {
        tokenRateLimit: { windowMs: 60_000, max: 12 },
        registerRateLimit: { windowMs: 60_000, max: 6 },
        signInRateLimit: { windowMs: 60_000, max: 3 },
      }),
    );
  });

  afterAll(async () => {
    await server?.stop();
    await new Promise((resolve) => http?.close(resolve));
    await db?.close();
    await postgres?.destroy();
  });

  it('validates its options with messages that say what to write', () => {
    expect(() => new AuthorizationServer({ ...options(), publicBaseUrl: 'gateway.example.com' })).toThrow(
      /publicBaseUrl \(PUBLIC_BASE_URL\) must be an origin such as "https:\/\/gateway.example.com"/,
    );
    expect(() => new AuthorizationServer({ ...options(), accessTokenTtlSeconds: 0 })).toThrow(
      /accessTokenTtlSeconds must be a whole number above 0, such as 3600/,
    );
    expect(() => new AuthorizationServer({ ...options(), scopesSupported: [] })).toThrow(/scopesSupported/);
    expect(() => new AuthorizationServer({ ...options(), unknown: 1 } as AuthorizationServerOptions)).toThrow(
      /unknown/,
    );
    expect(() => oauthRoutes(server, { tokenRateLimit: { windowMs: 0, max: 1 } })).toThrow(/\{ windowMs, max \}/);
  });

  it('refuses a code older than 60 s, and a resource other than the authorized one', async () => {
    const redirectUri = 'http://127.0.0.1:7/cb';
    const clientId = await registerClient(base, redirectUri);
    const issue = async () => {
      const { verifier, challenge } = pkcePair();
      const run = await signInAndConsent(
        authorizeUrl(base, {
          client_id: clientId,
          redirect_uri: redirectUri,
          code_challenge: challenge,
          code_challenge_method: 'S256',
          resource: `${base}/mcp/a`,
        }),
        KEY,
      );
      return { verifier, code: run.location?.searchParams.get('code') as string };
    };
    const old = await issue();
    await db.query("UPDATE gw_oauth_codes SET expires_at = now() - interval '1 second'");
    const expired = await tokenRequest(base, {
      grant_type: 'authorization_code',
      code: old.code,
      code_verifier: old.verifier,
      client_id: clientId,
      redirect_uri: redirectUri,
    });
    expect(expired.body).toMatchObject({
      error: 'invalid_grant',
      error_description: 'The authorization code has expired.',
    });
    const fresh = await issue();
    const elsewhere = await tokenRequest(base, {
      grant_type: 'authorization_code',
      code: fresh.code,
      code_verifier: fresh.verifier,
      client_id: clientId,
      redirect_uri: redirectUri,
      resource: `${base}/mcp`,
    });
    expect(elsewhere.body.error).toBe('invalid_target');
  });

  it('lets one of several concurrent uses of a code through, and revokes what it got', async () => {
    const redirectUri = 'http://127.0.0.1:7/race';
    const clientId = await registerClient(base, redirectUri);
    const { verifier, challenge } = pkcePair();
    const run = await signInAndConsent(
      authorizeUrl(base, {
        client_id: clientId,
        redirect_uri: redirectUri,
        code_challenge: challenge,
        code_challenge_method: 'S256',
        resource: `${base}/mcp/a`,
      }),
      KEY,
    );
    const code = run.location?.searchParams.get('code') as string;
    const answers = await Promise.all(
      Array.from({ length: 5 }, () =>
        tokenRequest(base, {
          grant_type: 'authorization_code',
          code,
          code_verifier: verifier,
          client_id: clientId,
          redirect_uri: redirectUri,
        }),
      ),
    );
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    expect(answers.filter((a) => a.body.error === 'invalid_grant')).toHaveLength(4);
    const [grant] = await db.query<{ revoked_reason: string }>(
      'SELECT revoked_reason FROM gw_oauth_grants WHERE client_id = $1',
      [clientId],
    );
    expect(grant?.revoked_reason).toBe('code_replay');
    // The host hears of it, with the grant's user.
    expect(grantsRevoked.map((g) => g.userId)).toContain('u-pkg');
  });

  it('stores codes and refresh tokens only as digests', async () => {
    const flow = await manualFlow(base, KEY, `${base}/mcp/a`);
    const dump = JSON.stringify([
      await db.query('SELECT * FROM gw_oauth_codes'),
      await db.query('SELECT * FROM gw_oauth_refresh_tokens'),
      await db.query('SELECT * FROM gw_oauth_grants'),
      await db.query('SELECT * FROM gw_audit'),
    ]);
    expect(dump).not.toContain(flow.code);
    expect(dump).not.toContain(flow.tokens.refresh_token);
    expect(dump).not.toContain(flow.tokens.access_token);
  });

  it('tells the host of a grant an administrator revokes, with its user, once', async () => {
    // The grant of the test before (no client registered here: registrations are rate limited).
    const [row] = await db.query<{ id: string }>(
      'SELECT id FROM gw_oauth_grants WHERE revoked_reason IS NULL ORDER BY created_at DESC LIMIT 1',
    );
    const before = grantsRevoked.length;
    expect(await server.revokeGrant(row?.id as string, 'admin:test', 'admin')).toBe(true);
    expect(await server.revokeGrant(row?.id as string, 'admin:test', 'admin')).toBe(false);
    expect(grantsRevoked.slice(before)).toEqual([{ id: row?.id, userId: 'u-pkg' }]);
  });

  it('purges codes and refresh tokens expired for more than a day', async () => {
    await db.query("UPDATE gw_oauth_codes SET expires_at = now() - interval '2 days'");
    const [before] = await db.query<{ n: string }>('SELECT count(*) AS n FROM gw_oauth_codes');
    expect(Number(before?.n)).toBeGreaterThan(0);
    await server.store.purgeExpired();
    const [after] = await db.query<{ n: string }>('SELECT count(*) AS n FROM gw_oauth_codes');
    expect(Number(after?.n)).toBe(0);
  });

  it('counts every grant as revoked until the revoked list has loaded once (fail closed)', async () => {
    const flow = await manualFlow(base, KEY, `${base}/mcp/a`);
    const cold = new AuthorizationServer(options());
    await expect(cold.tokens.verify(flow.tokens.access_token, `${base}/mcp/a`)).rejects.toMatchObject({
      code: 'token_revoked',
    });
    await cold.start();
    await expect(cold.tokens.verify(flow.tokens.access_token, `${base}/mcp/a`)).resolves.toMatchObject({
      claims: { sub: 'u-pkg', aud: `${base}/mcp/a` },
    });
    await cold.stop();
  });

  it("refuses tokens, and code and refresh exchanges, once the sign-in's API key no longer holds; a token without its sign-in too", async () => {
    const flow = await manualFlow(base, KEY, `${base}/mcp/a`);
    let holds = true;
    const login = options().login;
    const checked = new AuthorizationServer({
      ...options(),
      login: { ...login, type: 'api_key', signInHolds: (subject: string) => subject === 'api_key:key:0' && holds },
    } as AuthorizationServerOptions);
    await checked.start();
    try {
      await expect(checked.tokens.verify(flow.tokens.access_token, `${base}/mcp/a`)).resolves.toMatchObject({
        claims: { login: 'api_key:key:0' },
      });
      holds = false;
      await expect(checked.tokens.verify(flow.tokens.access_token, `${base}/mcp/a`)).rejects.toMatchObject({
        code: 'token_revoked',
      });
      // A token signed without a sign-in (as before this check existed) is refused whatever the key.
      holds = true;
      const [, payload] = flow.tokens.access_token.split('.');
      const claims = JSON.parse(Buffer.from(payload as string, 'base64url').toString()) as Record<string, unknown>;
      const unsigned = checked.tokens.sign({
        sub: 'u-pkg',
        resource: `${base}/mcp/a`,
        clientId: flow.clientId,
        scopes: ['mcp'],
        grantId: String(claims.gid),
        claims: {},
        login: undefined as unknown as string,
      });
      await expect(checked.tokens.verify(unsigned, `${base}/mcp/a`)).rejects.toMatchObject({ code: 'token_revoked' });
    } finally {
      await checked.stop();
    }
  });

  it('rate limits GET /oauth/authorize per client address (each may fetch a client document): a 429 page with retry-after', async () => {
    const app = express();
    app.use('/oauth', oauthRoutes(server, { authorizeRateLimit: { windowMs: 60_000, max: 5 } }));
    const limited = createServer(app);
    await new Promise<void>((resolve) => limited.listen(0, '127.0.0.1', resolve));
    try {
      const at = `http://127.0.0.1:${(limited.address() as AddressInfo).port}/oauth/authorize`;
      const statuses: number[] = [];
      let page: Response | undefined;
      for (let i = 0; i < 8; i++) {
        // Each names a new client ID metadata document: none of them fetched past the limit.
        page = await fetch(
          `${at}?response_type=code&client_id=${encodeURIComponent(`https://clients.example/${i}.json`)}`,
        );
        statuses.push(page.status);
        if (page.status !== 429) await page.arrayBuffer();
      }
      expect(statuses.slice(0, 5).every((status) => status !== 429)).toBe(true);
      expect(statuses.slice(5)).toEqual([429, 429, 429]);
      expect(Number(page?.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(page?.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
      expect(await page?.text()).toContain('too_many_authorization_requests');
    } finally {
      await new Promise((resolve) => limited.close(resolve));
    }
    expect(() => oauthRoutes(server, { authorizeRateLimit: { windowMs: 60_000, max: 0 } })).toThrow(
      /authorizeRateLimit/,
    );
  });

  it('slows down API-key guessing on the sign-in page: refused keys count, then a 429 page with retry-after', async () => {
    const redirectUri = 'http://127.0.0.1:7/guess';
    const clientId = await registerClient(base, redirectUri);
    const url = authorizeUrl(base, {
      client_id: clientId,
      redirect_uri: redirectUri,
      code_challenge: pkcePair().challenge,
      code_challenge_method: 'S256',
      resource: `${base}/mcp/a`,
    });
    // A successful sign-in does not count.
    expect((await signInAndConsent(url, KEY)).consent?.status).toBe(200);
    for (let i = 0; i < 4; i++) await signInAndConsent(url, `gw-guess-${i}-0000000`);
    const page = await fetch(`${base}/oauth/authorize/sign-in`, { method: 'POST' });
    expect(page.status).toBe(429);
    expect(Number(page.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await page.text()).toContain('too_many_sign_in_attempts');
    const audited = await db.query<{ n: string }>(
      "SELECT count(*) AS n FROM gw_audit WHERE action = 'oauth.sign_in_failed' AND slug = $1",
      [clientId],
    );
    expect(Number(audited[0]?.n)).toBe(3);
  });

  it('rate limits /oauth/register and /oauth/token per client address: 429 with retry-after, OAuth shape', async () => {
    const register = () =>
      fetch(`${base}/oauth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ redirect_uris: ['https://app.example/cb'] }),
      });
    let limited: Response | undefined;
    for (let i = 0; i < 8 && !limited; i++) {
      const response = await register();
      if (response.status === 429) limited = response;
    }
    expect(limited?.status).toBe(429);
    expect(Number(limited?.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await limited?.json()).toMatchObject({ error: 'too_many_requests' });
    let token: Awaited<ReturnType<typeof tokenRequest>> | undefined;
    for (let i = 0; i < 14; i++) {
      token = await tokenRequest(base, { grant_type: 'refresh_token', refresh_token: 'nope', client_id: 'nope' });
      if (token.status === 429) break;
    }
    expect(token?.status).toBe(429);
    expect(Number(token?.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('counts the limits by the address clientAddress gives (the client behind a trusted proxy), an IPv6 one by its /56', async () => {
    const app = express();
    app.use(
      '/oauth',
      oauthRoutes(server, {
        registerRateLimit: { windowMs: 60_000, max: 2 },
        // As the gateway wires it: the address its trusted load balancer forwards.
        clientAddress: (req) => String(req.headers['x-test-client'] ?? 'none'),
      }),
    );
    const proxied = createServer(app);
    await new Promise<void>((resolve) => proxied.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(proxied.address() as AddressInfo).port}/oauth/register`;
    const register = (client: string) =>
      fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-test-client': client },
        body: JSON.stringify({ redirect_uris: ['https://app.example/cb'] }),
      }).then((r) => r.status);
    try {
      expect([await register('203.0.113.1'), await register('203.0.113.1')]).toEqual([201, 201]);
      expect(await register('203.0.113.1')).toBe(429);
      // Another client behind the same proxy has its own count.
      expect(await register('203.0.113.2')).toBe(201);
      // Addresses of one IPv6 /56 count together.
      expect([await register('2001:db8:0:1::1'), await register('2001:db8:0:2::1')]).toEqual([201, 201]);
      expect(await register('2001:db8:0:3::1')).toBe(429);
      expect(() => oauthRoutes(server, { clientAddress: 'x-forwarded-for' as never })).toThrow(/must be a function/);
    } finally {
      proxied.closeAllConnections();
      await new Promise((resolve) => proxied.close(resolve));
    }
  });
});

describe('redirect URIs and resources', () => {
  it('matches registered redirect URIs exactly; a loopback port may differ only for metadata-document clients', () => {
    const registered = ['http://127.0.0.1:3000/cb', 'https://app.example/cb'];
    expect(redirectUriRegistered('https://app.example/cb', registered, false)).toBe(true);
    expect(redirectUriRegistered('https://app.example/cb/', registered, false)).toBe(false);
    expect(redirectUriRegistered('https://app.example:444/cb', registered, true)).toBe(false);
    expect(redirectUriRegistered('http://127.0.0.1:4000/cb', registered, false)).toBe(false);
    expect(redirectUriRegistered('http://127.0.0.1:4000/cb', registered, true)).toBe(true);
    expect(redirectUriRegistered('http://127.0.0.1:4000/other', registered, true)).toBe(false);
    expect(redirectUriRegistered('http://localhost:3000/cb', registered, true)).toBe(false);
  });

  it('lets a token for <base>/mcp serve every MCP server, and nothing else cross over', () => {
    const base = 'https://gw.example';
    expect(resourceCovers(`${base}/mcp/a`, `${base}/mcp/a`, base)).toBe(true);
    expect(resourceCovers(`${base}/mcp/a`, `${base}/mcp/b`, base)).toBe(false);
    expect(resourceCovers(`${base}/mcp`, `${base}/mcp/b`, base)).toBe(true);
    expect(resourceCovers(`${base}/mcp`, `${base}/v1`, base)).toBe(false);
    expect(resourceCovers(`${base}/v1`, `${base}/mcp/a`, base)).toBe(false);
    expect(resourceCovers(`${base}/mcp/a`, undefined, base)).toBe(false);
  });
});

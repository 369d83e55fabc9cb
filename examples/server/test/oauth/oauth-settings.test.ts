import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { startPostgres, type RunningPostgres } from '../../../../packages/catalog/test/postgres';
import { rsaPem, startGateway, writeConfig, type RunningGateway } from '../support';
import {
  authorizeUrl,
  freePort,
  mcpPost,
  pkcePair,
  registerClient,
  signInAndConsent,
  startVerifyingMcpServer,
  tokenRequest,
  within,
} from './oauth-support';

jest.setTimeout(120_000);

const USER_KEY = 'gw-oauth-settings-key-0001';
const ADMIN_KEY = 'admin-oauth-settings-0000000000001';

const admin = (url: string, method: string, body?: unknown) =>
  fetch(`${url}/admin/v1/oauth/settings`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

/**
 * The OAuth settings set through the admin API on one instance of two sharing PostgreSQL: the other
 * instance serves the authorization server within 1 s, without a restart, and stops when they are
 * removed.
 */
describe('OAuth settings in the catalog, applied on every instance', () => {
  let postgres: RunningPostgres;
  let mcp: Awaited<ReturnType<typeof startVerifyingMcpServer>>;
  let a: RunningGateway;
  let b: RunningGateway;
  let issuer: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    [postgres, mcp] = await Promise.all([startPostgres(), startVerifyingMcpServer()]);
    const portA = await freePort();
    issuer = `http://127.0.0.1:${portA}`;
    env = {
      DATABASE_URL: await postgres.createDatabase(),
      GATEWAY_CONFIG: writeConfig({
        auth: { apiKeys: [{ key: USER_KEY, user: { user_id: 'u-settings', email: 'settings@example.com' } }] },
        mcpServers: [
          {
            slug: 'a',
            url: `${mcp.url}/mcp/a`,
            user_identity_forwarding: { method: 'claims_header', include_claims: ['sub'] },
          },
        ],
      }),
      GATEWAY_ADMIN_KEY: ADMIN_KEY,
      GATEWAY_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      JWT_PRIVATE_KEY: rsaPem().privateKey,
      PUBLIC_BASE_URL: issuer,
      NODE_ENV: 'production',
    };
    a = await startGateway({ ...env, PORT: String(portA) });
    b = await startGateway(env);
  });

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await Promise.all([postgres?.destroy(), mcp?.close()]);
  });

  it('turns OAuth on from A for B within 1 s, and off everywhere with DELETE', async () => {
    expect((await fetch(`${b.url}/.well-known/oauth-authorization-server`)).status).toBe(404);
    expect(await (await admin(a.url, 'GET')).json()).toEqual({ source: 'none', enabled: false });

    const bad = await admin(a.url, 'PUT', { login: { type: 'oidc', issuer: 'https://login.example.com' } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: string } }).error.code).toBe('invalid_request');

    const put = await admin(a.url, 'PUT', { login: { type: 'api_key' }, accessTokenTtlSeconds: 600 });
    expect(put.status).toBe(200);
    expect(await put.json()).toMatchObject({ source: 'catalog', enabled: true, accessTokenTtlSeconds: 600 });

    const took = await within(
      1_000,
      async () => (await fetch(`${b.url}/.well-known/oauth-authorization-server`)).status === 200,
    );
    expect(took).toBeLessThanOrEqual(1_000);
    const metadata = (await (await fetch(`${b.url}/.well-known/oauth-authorization-server`)).json()) as {
      issuer: string;
    };
    expect(metadata.issuer).toBe(issuer);

    // B registers the client and issues its tokens (the sign-in pages are at PUBLIC_BASE_URL, A), which /mcp accepts.
    const redirectUri = 'http://127.0.0.1:7/settings-callback';
    const clientId = await registerClient(b.url, redirectUri, 'settings client');
    const { verifier, challenge } = pkcePair();
    const run = await signInAndConsent(
      authorizeUrl(a.url, {
        client_id: clientId,
        redirect_uri: redirectUri,
        code_challenge: challenge,
        code_challenge_method: 'S256',
        resource: `${issuer}/mcp/a`,
      }),
      USER_KEY,
    );
    const tokens = await tokenRequest(b.url, {
      grant_type: 'authorization_code',
      code: run.location?.searchParams.get('code') as string,
      code_verifier: verifier,
      client_id: clientId,
      redirect_uri: redirectUri,
    });
    expect(tokens.status).toBe(200);
    expect(tokens.body.expires_in).toBe(600);
    const accessToken = tokens.body.access_token as string;
    expect((await mcpPost(b.url, 'a', accessToken, new URL(issuer).host)).status).toBe(200);

    const off = await admin(a.url, 'DELETE');
    expect(off.status).toBe(200);
    const tookOff = await within(
      1_000,
      async () => (await fetch(`${b.url}/.well-known/oauth-authorization-server`)).status === 404,
    );
    expect(tookOff).toBeLessThanOrEqual(1_000);
    expect((await fetch(`${a.url}/.well-known/oauth-authorization-server`)).status).toBe(404);
    expect((await mcpPost(b.url, 'a', accessToken, new URL(issuer).host)).status).toBe(401);
    expect((await mcpPost(a.url, 'a', accessToken)).status).toBe(401);
  });

  it('keeps the client secret sealed: answered only as its hint', async () => {
    const put = await admin(a.url, 'PUT', {
      login: { type: 'oidc', issuer: 'https://login.example.com', clientId: 'gw', clientSecret: 'oidc-secret-value-1' },
    });
    expect(put.status).toBe(200);
    const text = await (await admin(b.url, 'GET')).text();
    expect(text).not.toContain('oidc-secret-value-1');
    expect(JSON.parse(text)).toMatchObject({ source: 'catalog', login: { type: 'oidc', clientId: 'gw' } });
    expect(JSON.parse(text).login.clientSecretHint).toEqual(expect.any(String));
    const client = new Client({ connectionString: env.DATABASE_URL });
    await client.connect();
    const { rows } = await client.query("SELECT data, secrets FROM gw_records WHERE kind = 'settings'");
    await client.end();
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows)).not.toContain('oidc-secret-value-1');
    expect((await admin(a.url, 'PUT', { enabled: false })).status).toBe(200);
  });

  it('answers a PUT body it cannot read as every admin route does: 413, 400 invalid_json, 415', async () => {
    const put = (body: string, type = 'application/json') =>
      fetch(`${a.url}/admin/v1/oauth/settings`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': type },
        body,
      });
    const codeOf = async (answer: Response) => [
      answer.status,
      ((await answer.json()) as { error: { code: string } }).error.code,
    ];
    expect(await codeOf(await put(JSON.stringify({ enabled: false, pad: 'x'.repeat(70_000) })))).toEqual([
      413,
      'body_too_large',
    ]);
    expect(await codeOf(await put('{"enabled": fal'))).toEqual([400, 'invalid_json']);
    expect(await codeOf(await put('{"enabled":false}', 'text/plain'))).toEqual([415, 'unsupported_media_type']);
  });

  it('keeps the stored client secret when an oidc PUT omits it, and refuses the omission otherwise', async () => {
    const oidc = { type: 'oidc', issuer: 'https://login.example.com', clientId: 'gw' };
    // Nothing stored: the secret is required.
    const first = await admin(a.url, 'PUT', { login: oidc });
    expect(first.status).toBe(400);
    expect(((await first.json()) as { error: { code: string; param: string } }).error).toMatchObject({
      code: 'invalid_request',
      param: 'login.clientSecret',
    });
    expect((await admin(a.url, 'PUT', { login: { ...oidc, clientSecret: 'oidc-secret-kept-2' } })).status).toBe(200);
    const hint = ((await (await admin(a.url, 'GET')).json()) as { login: { clientSecretHint: string } }).login
      .clientSecretHint;
    const kept = await admin(a.url, 'PUT', { login: { ...oidc, clientId: 'gw-2', clientSecret: '' } });
    expect(kept.status).toBe(200);
    expect(await kept.json()).toMatchObject({ login: { clientId: 'gw-2', clientSecretHint: hint } });
    const client = new Client({ connectionString: env.DATABASE_URL });
    await client.connect();
    const { rows } = await client.query("SELECT id FROM gw_records WHERE kind = 'settings' AND slug = 'oauth'");
    await client.end();
    expect(rows).toHaveLength(1);
    // The stored secret is the one in force: it is what the record opens to.
    const omitted = await admin(a.url, 'PUT', { login: { ...oidc, clientId: 'gw-3' } });
    expect(omitted.status).toBe(200);
    expect(await omitted.json()).toMatchObject({ login: { clientId: 'gw-3', clientSecretHint: hint } });
    // The stored secret goes only to the provider it was given for: another issuer needs it again.
    const elsewhere = await admin(a.url, 'PUT', { login: { ...oidc, issuer: 'https://attacker.example' } });
    expect(elsewhere.status).toBe(400);
    expect(((await elsewhere.json()) as { error: { code: string; param: string } }).error).toMatchObject({
      code: 'invalid_request',
      param: 'login.clientSecret',
    });
    expect(await (await admin(a.url, 'GET')).json()).toMatchObject({ login: { issuer: oidc.issuer } });
    // From an api_key login there is no secret to keep.
    expect((await admin(a.url, 'PUT', { login: { type: 'api_key' } })).status).toBe(200);
    const refused = await admin(a.url, 'PUT', { login: oidc });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: { param: string } }).error.param).toBe('login.clientSecret');
    expect((await admin(a.url, 'DELETE')).status).toBe(200);
  });

  it('refuses changes when the config file has an oauth object', async () => {
    const c = await startGateway({
      ...env,
      DATABASE_URL: await postgres.createDatabase(),
      GATEWAY_CONFIG: writeConfig({ oauth: { login: { type: 'api_key' } } }),
    });
    try {
      const put = await admin(c.url, 'PUT', { login: { type: 'api_key' } });
      expect(put.status).toBe(409);
      expect(((await put.json()) as { error: { code: string } }).error.code).toBe('managed_by_config_file');
      expect((await admin(c.url, 'DELETE')).status).toBe(409);
      expect(await (await admin(c.url, 'GET')).json()).toMatchObject({ source: 'config', enabled: true });
    } finally {
      await c.stop();
    }
  });
});

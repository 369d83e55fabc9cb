import { randomBytes } from 'node:crypto';
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

const USER_KEY = 'gw-oauth-ttl-key-Hs83Kq1Zp';
const ADMIN_KEY = 'admin-oauth-ttl-Xq7vLp2RzK9mWb4T';

/**
 * CONTRACT section 11, revocation: a revoked grant stays refused until every token issued from it
 * has expired, whatever `accessTokenTtlSeconds` says now. Instance A issues at 86,400 s; instance B
 * on the same database was started after the setting was lowered to 60 s. The clock is moved by
 * dating the revocation back 185 s in the database (past B's old window of 60 + 120 s), not by
 * sleeping.
 */
describe('OAuth revocation after the access token lifetime is lowered', () => {
  let postgres: RunningPostgres;
  let mcp: Awaited<ReturnType<typeof startVerifyingMcpServer>>;
  let a: RunningGateway;
  let b: RunningGateway;
  let issuer: string;
  let databaseUrl: string;

  beforeAll(async () => {
    [postgres, mcp] = await Promise.all([startPostgres(), startVerifyingMcpServer()]);
    const portA = await freePort();
    issuer = `http://127.0.0.1:${portA}`;
    databaseUrl = await postgres.createDatabase();
    const config = (accessTokenTtlSeconds: number) =>
      writeConfig({
        auth: { apiKeys: [{ key: USER_KEY, user: { user_id: 'u-ttl', email: 'ttl@example.com' } }] },
        mcpServers: [
          {
            slug: 'a',
            url: `${mcp.url}/mcp/a`,
            user_identity_forwarding: { method: 'claims_header', include_claims: ['sub'] },
          },
        ],
        oauth: { login: { type: 'api_key' }, accessTokenTtlSeconds },
      });
    const env = {
      DATABASE_URL: databaseUrl,
      GATEWAY_ADMIN_KEY: ADMIN_KEY,
      GATEWAY_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      JWT_PRIVATE_KEY: rsaPem().privateKey,
      PUBLIC_BASE_URL: issuer,
      NODE_ENV: 'production',
    };
    a = await startGateway({ ...env, GATEWAY_CONFIG: config(86_400), PORT: String(portA) });
    b = await startGateway({ ...env, GATEWAY_CONFIG: config(60) });
  });

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await Promise.all([postgres?.destroy(), mcp?.close()]);
  });

  it('refuses a token revoked 185 s ago on the instance whose lifetime is now 60 s', async () => {
    const redirectUri = 'http://127.0.0.1:7/ttl-callback';
    const clientId = await registerClient(a.url, redirectUri, 'ttl client');
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
    const tokens = await tokenRequest(a.url, {
      grant_type: 'authorization_code',
      code: run.location?.searchParams.get('code') as string,
      code_verifier: verifier,
      client_id: clientId,
      redirect_uri: redirectUri,
    });
    expect(tokens.status).toBe(200);
    expect(tokens.body.expires_in).toBe(86_400);
    const accessToken = tokens.body.access_token as string;
    const host = new URL(issuer).host;
    expect((await mcpPost(b.url, 'a', accessToken, host)).status).toBe(200);

    const listed = await fetch(`${a.url}/admin/v1/oauth/grants?user=u-ttl`, {
      headers: { authorization: `Bearer ${ADMIN_KEY}` },
    });
    const [grant] = ((await listed.json()) as { data: { id: string }[] }).data;
    const revoked = await fetch(`${a.url}/admin/v1/oauth/grants/${grant?.id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${ADMIN_KEY}` },
    });
    expect(revoked.status).toBe(200);
    expect(
      await within(2_000, async () => (await mcpPost(b.url, 'a', accessToken, host)).status === 401),
    ).toBeLessThanOrEqual(2_000);

    // 185 s later, as the database sees it; the token itself is good for a day.
    const { Client } = await import('pg');
    const db = new Client({ connectionString: databaseUrl });
    await db.connect();
    try {
      const moved = await db.query(
        "UPDATE gw_oauth_grants SET revoked_at = now() - interval '185 seconds' WHERE id = $1",
        [grant?.id],
      );
      expect(moved.rowCount).toBe(1);
    } finally {
      await db.end();
    }
    // B reloads its revocation list every 500 ms: over three reloads the token is never accepted
    // (the old window, 60 + 120 s, let it through on the first one).
    await expect(
      within(1_500, async () => (await mcpPost(b.url, 'a', accessToken, host)).status !== 401),
    ).rejects.toThrow('not within 1500 ms');
    expect((await mcpPost(a.url, 'a', accessToken)).status).toBe(401);
  });
});

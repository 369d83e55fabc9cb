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

const USER_KEY = 'gw-oauth-shared-key-0001';
const ADMIN_KEY = 'admin-oauth-shared-000000000000001';

/**
 * Two gateway instances on one PostgreSQL server behind one PUBLIC_BASE_URL: a code made on A is
 * exchanged on B, a token issued there works on both, refresh tokens rotate across them, and a grant
 * revoked on A is refused on B within 1 s.
 */
describe('OAuth grants shared by two instances on PostgreSQL', () => {
  let postgres: RunningPostgres;
  let mcp: Awaited<ReturnType<typeof startVerifyingMcpServer>>;
  let a: RunningGateway;
  let b: RunningGateway;
  let issuer: string;

  beforeAll(async () => {
    [postgres, mcp] = await Promise.all([startPostgres(), startVerifyingMcpServer()]);
    const portA = await freePort();
    issuer = `http://127.0.0.1:${portA}`;
    const env = {
      DATABASE_URL: await postgres.createDatabase(),
      GATEWAY_CONFIG: writeConfig({
        auth: { apiKeys: [{ key: USER_KEY, user: { user_id: 'u-shared', email: 'shared@example.com' } }] },
        mcpServers: [
          {
            slug: 'a',
            url: `${mcp.url}/mcp/a`,
            user_identity_forwarding: { method: 'claims_header', include_claims: ['sub'] },
          },
        ],
        oauth: { login: { type: 'api_key' } },
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

  it('accepts on B a grant made on A, and refuses it on B within 1 s of its revocation on A', async () => {
    const redirectUri = 'http://127.0.0.1:7/shared-callback';
    const clientId = await registerClient(a.url, redirectUri, 'shared client');
    const { verifier, challenge } = pkcePair();
    const resource = `${issuer}/mcp/a`;
    const run = await signInAndConsent(
      authorizeUrl(a.url, {
        client_id: clientId,
        redirect_uri: redirectUri,
        code_challenge: challenge,
        code_challenge_method: 'S256',
        resource,
      }),
      USER_KEY,
    );
    const code = run.location?.searchParams.get('code') as string;
    // The code made on A is exchanged on B.
    const tokens = await tokenRequest(b.url, {
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      client_id: clientId,
      redirect_uri: redirectUri,
    });
    expect(tokens.status).toBe(200);
    const accessToken = tokens.body.access_token as string;
    expect((await mcpPost(b.url, 'a', accessToken, new URL(issuer).host)).status).toBe(200);
    expect((await mcpPost(a.url, 'a', accessToken)).status).toBe(200);
    // Rotated on A; the old refresh token reused on B is refused.
    const rotated = await tokenRequest(a.url, {
      grant_type: 'refresh_token',
      refresh_token: tokens.body.refresh_token as string,
      client_id: clientId,
    });
    expect(rotated.status).toBe(200);
    const fresh = rotated.body.access_token as string;
    expect((await mcpPost(b.url, 'a', fresh, new URL(issuer).host)).status).toBe(200);

    const grants = await fetch(`${b.url}/admin/v1/oauth/grants?user=u-shared`, {
      headers: { authorization: `Bearer ${ADMIN_KEY}` },
    });
    const [grant] = ((await grants.json()) as { data: { id: string }[] }).data;
    const revoked = await fetch(`${a.url}/admin/v1/oauth/grants/${grant?.id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${ADMIN_KEY}` },
    });
    expect(revoked.status).toBe(200);
    const took = await within(
      1_000,
      async () => (await mcpPost(b.url, 'a', fresh, new URL(issuer).host)).status === 401,
    );
    expect(took).toBeLessThanOrEqual(1_000);
    expect((await mcpPost(b.url, 'a', accessToken, new URL(issuer).host)).status).toBe(401);
  });
});

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { rsaPem, startGateway, writeConfig, type RunningGateway } from '../support';
import {
  CookieJar,
  MemoryOAuthProvider,
  authorizeUrl,
  freePort,
  hiddenFields,
  manualFlow,
  mcpPost,
  pkcePair,
  registerClient,
  signInAndConsent,
  startVerifyingMcpServer,
  tokenRequest,
  within,
} from './oauth-support';

jest.setTimeout(90_000);

const USER_KEY = 'gw-oauth-user-key-0001';
const OTHER_KEY = 'gw-oauth-other-key-0002';
const NO_POLICY_KEY = 'gw-oauth-nopolicy-key-0003';
const ADMIN_KEY = 'admin-oauth-test-key-000000000001';

/**
 * The gateway as the OAuth authorization server of MCP clients (CONTRACT section 11), end to end:
 * the official MCP SDK client's own OAuth flow through API-key sign-in and consent, a `jwt_header`
 * MCP server whose verifier sees the user, and each attack of the contract's list.
 */
describe('the gateway as OAuth authorization server', () => {
  let gateway: RunningGateway;
  let mcp: Awaited<ReturnType<typeof startVerifyingMcpServer>>;
  let base: string;

  beforeAll(async () => {
    mcp = await startVerifyingMcpServer();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    const config = {
      auth: {
        apiKeys: [
          { key: USER_KEY, user: { user_id: 'u-oauth', email: 'oauth@example.com', groups: ['eng'] } },
          { key: OTHER_KEY, user: { user_id: 'u-other', email: 'other@example.com' } },
          { key: NO_POLICY_KEY, user: { user_id: 'u-nopolicy' } },
        ],
        // Needed by the `bearer` server; no token of this provider is used here.
        jwt_validation: {
          jwksUri: 'http://127.0.0.1:9/jwks.json',
          issuer: 'https://idp.example.com/',
          audience: 'gateway',
        },
      },
      access: { mode: 'policies' },
      policies: [
        {
          slug: 'oauth-users',
          name: 'OAuth users',
          subjects: { users: ['u-oauth', 'u-other'] },
          allow: { models: ['*'], mcpServers: [{ server: 'a' }, { server: 'b' }, { server: 'c' }] },
        },
      ],
      mcpServers: [
        {
          slug: 'a',
          url: `${mcp.url}/mcp/a`,
          user_identity_forwarding: { method: 'jwt_header', include_claims: ['sub', 'email'] },
        },
        {
          slug: 'b',
          url: `${mcp.url}/mcp/b`,
          user_identity_forwarding: { method: 'claims_header', include_claims: ['sub', 'email', 'groups'] },
        },
        { slug: 'c', url: `${mcp.url}/mcp/c`, user_identity_forwarding: { method: 'bearer' } },
      ],
      oauth: { login: { type: 'api_key' } },
    };
    gateway = await startGateway({
      GATEWAY_CONFIG: writeConfig(config),
      PORT: String(port),
      PUBLIC_BASE_URL: base,
      JWT_PRIVATE_KEY: rsaPem().privateKey,
      GATEWAY_ADMIN_KEY: ADMIN_KEY,
      // The users' group: an identity-provider token with it would be an admin credential.
      GATEWAY_ADMIN_CLAIM: 'groups=eng',
    });
    mcp.setJwksUrl(`${base}/.well-known/jwks.json`);
  });

  afterAll(async () => {
    await gateway?.stop();
    await mcp?.close();
  });

  const admin = async (method: string, path: string) => {
    const response = await fetch(`${base}/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_KEY}` },
    });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    return { status: response.status, body: (await response.json()) as any };
  };

  it('publishes RFC 8414 metadata with exactly the fields of section 11, and RFC 9728 metadata naming itself', async () => {
    const metadata = await (await fetch(`${base}/.well-known/oauth-authorization-server`)).json();
    expect(metadata).toEqual({
      issuer: base,
      authorization_endpoint: `${base}/oauth/authorize`,
      token_endpoint: `${base}/oauth/token`,
      registration_endpoint: `${base}/oauth/register`,
      revocation_endpoint: `${base}/oauth/revoke`,
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['none'],
      client_id_metadata_document_supported: true,
      scopes_supported: ['mcp'],
      authorization_response_iss_parameter_supported: true,
    });
    const resource = await (await fetch(`${base}/.well-known/oauth-protected-resource/mcp/a`)).json();
    expect(resource).toEqual({
      resource: `${base}/mcp/a`,
      authorization_servers: [base],
      bearer_methods_supported: ['header'],
    });
    const challenge = await mcpPost(base, 'a', '');
    expect(challenge.status).toBe(401);
  });

  it("runs the MCP SDK client's own OAuth flow: discovery from the 401, registration, sign-in, consent, token, tools/call through jwt_header", async () => {
    const provider = new MemoryOAuthProvider('http://127.0.0.1:7/sdk-callback');
    const first = new StreamableHTTPClientTransport(new URL(`${base}/mcp/a`), { authProvider: provider });
    await expect(new Client({ name: 'sdk', version: '1.0.0' }).connect(first)).rejects.toThrow(UnauthorizedError);
    const authorizationUrl = provider.authorizationUrl as URL;
    expect(authorizationUrl.origin + authorizationUrl.pathname).toBe(`${base}/oauth/authorize`);
    expect(authorizationUrl.searchParams.get('resource')).toBe(`${base}/mcp/a`);
    expect(authorizationUrl.searchParams.get('code_challenge_method')).toBe('S256');
    expect(provider.clientInformation()?.client_id).toMatch(/^[0-9a-f-]{36}$/);

    const run = await signInAndConsent(authorizationUrl, USER_KEY);
    expect(run.signIn?.status).toBe(200);
    expect(run.consent?.status).toBe(200);
    // The consent page names the client, its redirect host, the resource and the scopes.
    expect(run.consentHtml).toContain('SDK test client');
    expect(run.consentHtml).toContain('127.0.0.1:7');
    expect(run.consentHtml).toContain(`${base}/mcp/a`);
    expect(run.consentHtml).toContain('mcp');
    const location = run.location as URL;
    expect(location.origin + location.pathname).toBe('http://127.0.0.1:7/sdk-callback');
    // RFC 9207: the issuer on the redirect is this gateway's (mix-up defence).
    expect(location.searchParams.get('iss')).toBe(base);
    expect(location.searchParams.get('state')).toBe(authorizationUrl.searchParams.get('state'));
    await first.finishAuth(location.searchParams.get('code') as string);
    const accessToken = provider.tokens()?.access_token as string;
    expect(accessToken.split('.')).toHaveLength(3);

    const seenBefore = mcp.seen.length;
    const client = new Client({ name: 'sdk', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp/a`), { authProvider: provider }));
    const result = await client.callTool({ name: 'whoami', arguments: {} });
    await client.close();
    const text = (result.content as { text: string }[])[0]?.text as string;
    expect(JSON.parse(text)).toEqual({ sub: 'u-oauth', claims: null });
    await mcp.settled();
    const seen = mcp.seen.slice(seenBefore);
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.every((r) => r.verifiedSub === 'u-oauth' && r.verifiedEmail === 'oauth@example.com')).toBe(true);
    // The gateway's token never reaches the MCP server, in any header.
    for (const request of seen) {
      expect(request.headers.authorization).toBeUndefined();
      expect(JSON.stringify(request.headers)).not.toContain(accessToken);
    }
  });

  it('forwards claims_header from a token for every MCP server, refuses a bearer server, and records the request', async () => {
    const flow = await manualFlow(base, USER_KEY, `${base}/mcp`);
    const before = mcp.seen.length;
    expect((await mcpPost(base, 'b', flow.tokens.access_token)).status).toBe(200);
    expect(JSON.parse(mcp.seen[before]?.claimsHeader as string)).toEqual({
      sub: 'u-oauth',
      email: 'oauth@example.com',
      groups: ['eng'],
    });
    const bearer = await mcpPost(base, 'c', flow.tokens.access_token);
    expect(bearer.status).toBe(401);
    expect(JSON.parse(bearer.body).error.code).toBe('identity_token_required');
    await within(5_000, async () => {
      const records = await admin('GET', '/requests?user=u-oauth');
      return records.body.data?.some((r: { path?: string; route?: string }) => JSON.stringify(r).includes('/mcp/b'));
    });
  });

  it('applies access policies to the user a token stands for', async () => {
    const flow = await manualFlow(base, NO_POLICY_KEY, `${base}/mcp/a`);
    const denied = await mcpPost(base, 'a', flow.tokens.access_token);
    expect(denied.status).toBe(403);
    expect(JSON.parse(denied.body).error.code).toBe('access_denied');
  });

  it('refuses a token for /mcp/a at /mcp/b (401 invalid_credentials, error="invalid_token") and at /v1', async () => {
    const flow = await manualFlow(base, USER_KEY, `${base}/mcp/a`);
    expect((await mcpPost(base, 'a', flow.tokens.access_token)).status).toBe(200);
    const elsewhere = await mcpPost(base, 'b', flow.tokens.access_token);
    expect(elsewhere.status).toBe(401);
    expect(JSON.parse(elsewhere.body).error.code).toBe('invalid_credentials');
    expect(elsewhere.challenge).toContain('error="invalid_token"');
    expect(elsewhere.challenge).toContain(`resource_metadata="${base}/.well-known/oauth-protected-resource/mcp/b"`);
    const v1 = await fetch(`${base}/v1/models`, { headers: { authorization: `Bearer ${flow.tokens.access_token}` } });
    expect(v1.status).toBe(401);
    const v1Flow = await manualFlow(base, USER_KEY, `${base}/v1`);
    const models = await fetch(`${base}/v1/models`, {
      headers: { authorization: `Bearer ${v1Flow.tokens.access_token}` },
    });
    expect(models.status).toBe(200);
    expect((await mcpPost(base, 'a', v1Flow.tokens.access_token)).status).toBe(401);
  });

  it("never takes the gateway's own access token as an admin credential, whatever claims it carries", async () => {
    // u-oauth's groups include the admin claim's value; an MCP client holding its token is no admin.
    const v1Flow = await manualFlow(base, USER_KEY, `${base}/v1`);
    for (const path of ['/admin/v1/providers', '/admin/v1/api-keys']) {
      const answer = await fetch(`${base}${path}`, {
        headers: { authorization: `Bearer ${v1Flow.tokens.access_token}` },
      });
      expect([401, 403]).toContain(answer.status);
    }
  });

  describe('the authorization request is refused on the gateway error page, never redirected', () => {
    let clientId: string;
    const redirectUri = 'http://127.0.0.1:7/attack-callback';
    beforeAll(async () => {
      clientId = await registerClient(base, redirectUri, 'attack target');
    });
    const open = async (params: Record<string, string | undefined>) => {
      const response = await fetch(
        authorizeUrl(base, { client_id: clientId, redirect_uri: redirectUri, resource: `${base}/mcp/a`, ...params }),
        { redirect: 'manual' },
      );
      return {
        status: response.status,
        location: response.headers.get('location'),
        html: await response.text(),
        csp: response.headers.get('content-security-policy'),
      };
    };

    it.each([
      ['no PKCE', {}, 'pkce_required'],
      ['plain PKCE', { code_challenge: pkcePair().verifier, code_challenge_method: 'plain' }, 'pkce_required'],
      ['a challenge without a method', { code_challenge: pkcePair().challenge }, 'pkce_required'],
      [
        'an unregistered redirect URI',
        {
          redirect_uri: 'https://attacker.example/cb',
          code_challenge: pkcePair().challenge,
          code_challenge_method: 'S256',
        },
        'redirect_uri_mismatch',
      ],
      [
        'an unknown client',
        { client_id: 'no-such-client', code_challenge: pkcePair().challenge, code_challenge_method: 'S256' },
        'unknown_client',
      ],
      [
        'a resource the gateway does not protect',
        {
          resource: 'https://elsewhere.example/mcp',
          code_challenge: pkcePair().challenge,
          code_challenge_method: 'S256',
        },
        'invalid_target',
      ],
      [
        'an unknown MCP server',
        { resource: `${base}/mcp/nope`, code_challenge: pkcePair().challenge, code_challenge_method: 'S256' },
        'invalid_target',
      ],
    ])('%s', async (_name, params, code) => {
      const answer = await open(params as Record<string, string>);
      expect(answer.status).toBe(400);
      expect(answer.location).toBeNull();
      expect(answer.html).toContain(code);
      expect(answer.html).not.toContain('attacker.example');
      expect(answer.csp).toContain("frame-ancestors 'none'");
    });
  });

  it('takes a request without resource (and without scope) as every MCP server, never /v1 or the admin API', async () => {
    const redirectUri = 'http://127.0.0.1:7/no-resource';
    const clientId = await registerClient(base, redirectUri, 'pre-8707 client');
    const { verifier, challenge } = pkcePair();
    const run = await signInAndConsent(
      authorizeUrl(base, {
        client_id: clientId,
        redirect_uri: redirectUri,
        code_challenge: challenge,
        code_challenge_method: 'S256',
        state: 'no-resource',
      }),
      USER_KEY,
    );
    // The consent page says what the grant is for.
    expect(run.consentHtml).toContain(`${base}/mcp (every MCP server of this gateway)`);
    const code = run.location?.searchParams.get('code');
    expect(run.location?.searchParams.get('state')).toBe('no-resource');
    expect(run.location?.searchParams.get('iss')).toBe(base);
    const answer = await tokenRequest(base, {
      grant_type: 'authorization_code',
      code: code as string,
      code_verifier: verifier,
      client_id: clientId,
      redirect_uri: redirectUri,
    });
    expect(answer.status).toBe(200);
    const token = answer.body.access_token as string;
    const payload = JSON.parse(Buffer.from(token.split('.')[1] as string, 'base64url').toString()) as { aud: string };
    expect(payload.aud).toBe(`${base}/mcp`);
    expect((await mcpPost(base, 'a', token)).status).toBe(200);
    expect((await mcpPost(base, 'b', token)).status).toBe(200);
    const models = await fetch(`${base}/v1/models`, { headers: { authorization: `Bearer ${token}` } });
    expect(models.status).toBe(401);
    const adminAnswer = await fetch(`${base}/admin/v1/providers`, { headers: { authorization: `Bearer ${token}` } });
    expect([401, 403]).toContain(adminAnswer.status);
  });

  it('refuses a wrong verifier, a replayed code (revoking what the first use got), and a code for another client or redirect URI', async () => {
    const redirectUri = 'http://127.0.0.1:7/code-callback';
    const clientId = await registerClient(base, redirectUri, 'code client');
    const otherClient = await registerClient(base, redirectUri, 'other client');
    const start = async () => {
      const { verifier, challenge } = pkcePair();
      const run = await signInAndConsent(
        authorizeUrl(base, {
          client_id: clientId,
          redirect_uri: redirectUri,
          code_challenge: challenge,
          code_challenge_method: 'S256',
          resource: `${base}/mcp/a`,
        }),
        USER_KEY,
      );
      return { verifier, code: run.location?.searchParams.get('code') as string };
    };
    const exchange = (code: string, verifier: string, extra: Record<string, string> = {}) =>
      tokenRequest(base, {
        grant_type: 'authorization_code',
        code,
        code_verifier: verifier,
        client_id: clientId,
        redirect_uri: redirectUri,
        ...extra,
      });

    const wrong = await start();
    const wrongVerifier = await exchange(wrong.code, pkcePair().verifier);
    expect(wrongVerifier.status).toBe(400);
    expect(wrongVerifier.body.error).toBe('invalid_grant');

    const forOther = await start();
    expect((await exchange(forOther.code, forOther.verifier, { client_id: otherClient })).body.error).toBe(
      'invalid_grant',
    );
    expect(
      (await exchange(forOther.code, forOther.verifier, { redirect_uri: 'http://127.0.0.1:7/other' })).body.error,
    ).toBe('invalid_grant');

    const replayed = await start();
    const firstUse = await exchange(replayed.code, replayed.verifier);
    expect(firstUse.status).toBe(200);
    expect(firstUse.body).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: 'mcp' });
    expect((await mcpPost(base, 'a', firstUse.body.access_token as string)).status).toBe(200);
    const secondUse = await exchange(replayed.code, replayed.verifier);
    expect(secondUse.status).toBe(400);
    expect(secondUse.body.error).toBe('invalid_grant');
    await within(1_500, async () => (await mcpPost(base, 'a', firstUse.body.access_token as string)).status === 401);
  });

  it('rotates refresh tokens; a reused one revokes the whole family', async () => {
    const flow = await manualFlow(base, USER_KEY, `${base}/mcp/a`);
    const refresh = (token: string) =>
      tokenRequest(base, { grant_type: 'refresh_token', refresh_token: token, client_id: flow.clientId });
    const second = await refresh(flow.tokens.refresh_token);
    expect(second.status).toBe(200);
    expect(second.body.refresh_token).not.toBe(flow.tokens.refresh_token);
    expect((await mcpPost(base, 'a', second.body.access_token as string)).status).toBe(200);
    const reuse = await refresh(flow.tokens.refresh_token);
    expect(reuse.status).toBe(400);
    expect(reuse.body).toMatchObject({ error: 'invalid_grant' });
    expect((await refresh(second.body.refresh_token as string)).body.error).toBe('invalid_grant');
    await within(1_500, async () => (await mcpPost(base, 'a', second.body.access_token as string)).status === 401);
    const grants = await admin('GET', '/oauth/grants?user=u-oauth');
    const revoked = grants.body.data.find((g: { clientId: string }) => g.clientId === flow.clientId);
    expect(revoked.revokedReason).toBe('refresh_token_reuse');
  });

  it('ends a grant with the API key it was signed in with: tokens refused, refresh refused, the grant revoked', async () => {
    const created = await fetch(`${base}/admin/v1/api-keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ user: { user_id: 'u-oauth', email: 'oauth@example.com' } }),
    });
    expect(created.status).toBe(201);
    const key = (await created.json()) as { id: string; key: string };
    const flow = await manualFlow(base, key.key, `${base}/mcp/a`);
    const second = await tokenRequest(base, {
      grant_type: 'refresh_token',
      refresh_token: flow.tokens.refresh_token,
      client_id: flow.clientId,
    });
    expect(second.status).toBe(200);
    expect((await mcpPost(base, 'a', flow.tokens.access_token)).status).toBe(200);

    expect((await admin('DELETE', `/api-keys/${key.id}`)).status).toBe(200);
    // The next request after the revocation's answer: the token ends with its key.
    expect((await mcpPost(base, 'a', second.body.access_token as string)).status).toBe(401);
    const refresh = await tokenRequest(base, {
      grant_type: 'refresh_token',
      refresh_token: second.body.refresh_token as string,
      client_id: flow.clientId,
    });
    expect(refresh.status).toBe(400);
    expect(refresh.body.error).toBe('invalid_grant');
    const grants = await admin('GET', '/oauth/grants?user=u-oauth');
    const ended = grants.body.data.find((g: { clientId: string }) => g.clientId === flow.clientId);
    expect(ended.revokedReason).toBe('sign_in_ended');
    // A key from the config file still signs in: only the revoked key's grants end.
    expect(
      (await mcpPost(base, 'a', (await manualFlow(base, USER_KEY, `${base}/mcp/a`)).tokens.access_token)).status,
    ).toBe(200);
  });

  it('ends a grant when the API key it was signed in with expires', async () => {
    const expiresAt = new Date(Date.now() + 3_000);
    const created = await fetch(`${base}/admin/v1/api-keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ user: { user_id: 'u-oauth' }, expiresAt: expiresAt.toISOString() }),
    });
    expect(created.status).toBe(201);
    const flow = await manualFlow(base, ((await created.json()) as { key: string }).key, `${base}/mcp/a`);
    expect((await mcpPost(base, 'a', flow.tokens.access_token)).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, expiresAt.getTime() - Date.now()) + 100));
    expect((await mcpPost(base, 'a', flow.tokens.access_token)).status).toBe(401);
    const refresh = await tokenRequest(base, {
      grant_type: 'refresh_token',
      refresh_token: flow.tokens.refresh_token,
      client_id: flow.clientId,
    });
    expect(refresh.body.error).toBe('invalid_grant');
  });

  it('asks consent once per user and client, again when the resource grows; a client cannot skip or forge it', async () => {
    const redirectUri = 'http://127.0.0.1:7/consent-callback';
    const clientId = await registerClient(base, redirectUri, 'consent client');
    const jar = new CookieJar();
    const url = (resource: string) =>
      authorizeUrl(base, {
        client_id: clientId,
        redirect_uri: redirectUri,
        code_challenge: pkcePair().challenge,
        code_challenge_method: 'S256',
        resource,
        state: 's',
      });
    // Signed in, but not consented: the consent page, however often the client asks.
    const signedIn = await signInAndConsent(url(`${base}/mcp/a`), USER_KEY, { jar, decision: 'deny' });
    expect(signedIn.location?.searchParams.get('error')).toBe('access_denied');
    expect(signedIn.location?.searchParams.get('iss')).toBe(base);
    const again = await fetch(url(`${base}/mcp/a`), { redirect: 'manual', headers: { cookie: jar.header() } });
    expect(again.status).toBe(200);
    const consentHtml = await again.text();
    expect(consentHtml).toContain('name="decision"');
    const fields = hiddenFields(consentHtml);
    const postConsent = (body: Record<string, string>, headers: Record<string, string> = {}) =>
      fetch(`${base}/oauth/authorize/consent`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: jar.header(), ...headers },
        body: new URLSearchParams(body).toString(),
      });
    // Skipped: no CSRF token; forged: from another site, or without the user's sign-in cookie.
    expect((await postConsent({ request: fields.request as string, decision: 'allow' })).status).toBe(403);
    expect((await postConsent({ ...fields, decision: 'allow' }, { origin: 'https://attacker.example' })).status).toBe(
      403,
    );
    const noCookie = await fetch(`${base}/oauth/authorize/consent`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ ...fields, decision: 'allow' }).toString(),
    });
    expect(noCookie.status).toBe(403);
    // An altered request (another resource) does not open.
    const altered = JSON.parse(Buffer.from((fields.request as string).split('.')[0] as string, 'base64url').toString());
    altered.v.resource = `${base}/mcp`;
    const forgedRequest = `${Buffer.from(JSON.stringify(altered)).toString('base64url')}.${(fields.request as string).split('.')[1]}`;
    expect((await postConsent({ ...fields, request: forgedRequest, decision: 'allow' })).status).toBe(400);
    // Consented: the next request for the same resource is answered at once; a new resource asks again.
    const allowed = await postConsent({ ...fields, decision: 'allow' });
    expect(allowed.status).toBe(302);
    expect(new URL(allowed.headers.get('location') as string).searchParams.get('code')).toBeTruthy();
    const direct = await fetch(url(`${base}/mcp/a`), { redirect: 'manual', headers: { cookie: jar.header() } });
    expect(direct.status).toBe(302);
    const grown = await fetch(url(`${base}/mcp/b`), { redirect: 'manual', headers: { cookie: jar.header() } });
    expect(grown.status).toBe(200);
    expect(await grown.text()).toContain('name="decision"');
    // Another user is asked for their own consent.
    const other = await signInAndConsent(url(`${base}/mcp/a`), OTHER_KEY, { decision: 'deny' });
    expect(other.consent?.status).toBe(200);
  });

  it('serves the pages with a strict CSP, never framed, and refuses a wrong API key on the sign-in page', async () => {
    const redirectUri = 'http://127.0.0.1:7/page-callback';
    const clientId = await registerClient(base, redirectUri, '<script>alert(1)</script>');
    const run = await signInAndConsent(
      authorizeUrl(base, {
        client_id: clientId,
        redirect_uri: redirectUri,
        code_challenge: pkcePair().challenge,
        code_challenge_method: 'S256',
        resource: `${base}/mcp/a`,
      }),
      'gw-not-a-key-000000',
    );
    const csp = run.signIn?.headers.get('content-security-policy') as string;
    expect(csp).toMatch(/default-src 'none'/);
    expect(csp).toMatch(/frame-ancestors 'none'/);
    expect(csp).not.toContain('unsafe-inline');
    expect(run.signIn?.headers.get('x-frame-options')).toBe('DENY');
    expect(run.signInHtml).not.toContain('<script>');
    expect(run.location).toBeUndefined();
  });

  it('registers only public clients with https or loopback http redirect URIs, errors in the OAuth shape', async () => {
    const register = (body: unknown) =>
      fetch(`${base}/oauth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const http = await register({ redirect_uris: ['http://evil.example/cb'] });
    expect(http.status).toBe(400);
    expect(await http.json()).toMatchObject({ error: 'invalid_client_metadata' });
    const secret = await register({
      redirect_uris: ['https://app.example/cb'],
      token_endpoint_auth_method: 'client_secret_basic',
    });
    expect(secret.status).toBe(201);
    const registered = (await secret.json()) as {
      token_endpoint_auth_method: string;
      client_secret?: string;
      client_id: string;
    };
    expect(registered.token_endpoint_auth_method).toBe('none');
    expect(registered.client_secret).toBeUndefined();
    const bad = await tokenRequest(base, { grant_type: 'password', client_id: registered.client_id });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('unsupported_grant_type');
  });

  it('lists clients and grants for operators, revokes a grant everywhere within 1 s, and audits without tokens', async () => {
    const flow = await manualFlow(base, OTHER_KEY, `${base}/mcp/a`);
    expect((await mcpPost(base, 'a', flow.tokens.access_token)).status).toBe(200);
    const clients = await admin('GET', '/oauth/clients');
    expect(clients.body.data.some((c: { client_id: string }) => c.client_id === flow.clientId)).toBe(true);
    const grants = await admin('GET', '/oauth/grants?user=u-other');
    const grant = grants.body.data.find((g: { clientId: string }) => g.clientId === flow.clientId);
    expect(grant).toMatchObject({ user: 'u-other', resource: `${base}/mcp/a`, scopes: ['mcp'], revokedAt: null });
    expect(grant.lastUsedAt).not.toBeNull();
    const denied = await fetch(`${base}/admin/v1/oauth/grants`, { headers: { authorization: `Bearer ${OTHER_KEY}` } });
    expect(denied.status).toBe(403);
    expect((await admin('DELETE', `/oauth/grants/${grant.id}`)).status).toBe(200);
    await within(1_000, async () => (await mcpPost(base, 'a', flow.tokens.access_token)).status === 401);
    const refresh = await tokenRequest(base, {
      grant_type: 'refresh_token',
      refresh_token: flow.tokens.refresh_token,
      client_id: flow.clientId,
    });
    expect(refresh.body.error).toBe('invalid_grant');
    const audit = await admin('GET', `/audit?record=oauth-grants/${grant.id}`);
    const actions = audit.body.data.map((e: { action: string }) => e.action);
    expect(actions).toEqual(expect.arrayContaining(['oauth.code_issued', 'oauth.token_issued', 'oauth.revoke']));
    const everything = JSON.stringify((await admin('GET', '/audit')).body);
    expect(everything).toContain('oauth.sign_in');
    expect(everything).toContain('oauth.consent');
    expect(everything).not.toContain(flow.tokens.access_token);
    expect(everything).not.toContain(flow.tokens.refresh_token);
    expect(everything).not.toContain(flow.code);
    expect(everything).not.toContain(OTHER_KEY);
    expect(gateway.logs.join('\n')).not.toContain(flow.tokens.refresh_token);
  });

  it('revokes through /oauth/revoke (RFC 7009)', async () => {
    const flow = await manualFlow(base, USER_KEY, `${base}/mcp/a`);
    const response = await fetch(`${base}/oauth/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: flow.tokens.refresh_token, client_id: flow.clientId }).toString(),
    });
    expect(response.status).toBe(200);
    await within(1_000, async () => (await mcpPost(base, 'a', flow.tokens.access_token)).status === 401);
  });
});

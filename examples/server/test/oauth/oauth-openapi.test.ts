import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { OPENAPI_DOCUMENT_PATH, expectMatchesOpenApi, findOperation } from '../../../../packages/catalog/test/openapi';
import { rsaPem, startGateway, writeConfig, type RunningGateway } from '../support';
import { freePort, manualFlow, startOidcProvider, type OidcProviderProcess } from './oauth-support';

jest.setTimeout(120_000);

const USER_KEY = 'gw-oauth-openapi-key-0001';
const ADMIN_KEY = 'admin-oauth-openapi-000000000001';
const OIDC_SECRET = 'oauth-openapi-oidc-secret-4b7e';

interface Answer {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

const document = JSON.parse(readFileSync(OPENAPI_DOCUMENT_PATH, 'utf8')) as {
  paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
};

/** The statuses the document lists for the operation of `method path` (not counting `default`). */
function documentedStatuses(method: string, path: string): string[] {
  const operation = findOperation(method, path);
  if (!operation) throw new Error(`${method} ${path}: no such operation in the OpenAPI document.`);
  const responses = document.paths[operation.path]?.[method.toLowerCase()]?.responses ?? {};
  return Object.keys(responses).filter((status) => status !== 'default');
}

/**
 * Calls `method path` of the admin API (as the admin unless `key` is null) and checks the answer
 * against the admin API's OpenAPI document (its status listed explicitly, its body matching that
 * response's schema) before the test looks at it.
 */
async function call(base: string, method: string, path: string, body?: unknown, key: string | null = ADMIN_KEY) {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (key !== null) headers.authorization = `Bearer ${key}`;
  const response = await fetch(`${base}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  const answer: Answer = { status: response.status, body: text === '' ? undefined : JSON.parse(text) };
  // Every status the route answers is listed, not left to the `default` response.
  expect([`${method} ${path}`, documentedStatuses(method, path)]).toEqual([
    `${method} ${path}`,
    expect.arrayContaining([String(answer.status)]),
  ]);
  expectMatchesOpenApi(method, path, answer.status, answer.body);
  return answer;
}

/**
 * The OAuth operator routes of the admin API (CONTRACT sections 8 and 11) answer what the admin
 * API's OpenAPI document says, success and errors alike, on a running gateway: the settings set
 * through the API (catalog) and from the config file, the registered and metadata-document
 * clients, and the grants of a user who signed in and consented.
 */
describe('the OAuth operator routes against the OpenAPI document', () => {
  let gateway: RunningGateway;
  let fromFile: RunningGateway;
  let idp: OidcProviderProcess;
  let documents: Server;
  let documentOrigin: string;
  let base: string;

  beforeAll(async () => {
    documents = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          client_id: `${documentOrigin}${req.url ?? ''}`,
          client_name: 'Metadata document client',
          redirect_uris: ['http://127.0.0.1:7/document-callback'],
          token_endpoint_auth_method: 'none',
        }),
      );
    });
    await new Promise<void>((resolve) => documents.listen(0, '127.0.0.1', resolve));
    documentOrigin = `http://127.0.0.1:${(documents.address() as AddressInfo).port}`;
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    const config = {
      auth: { apiKeys: [{ key: USER_KEY, user: { user_id: 'u-openapi', email: 'openapi@example.com' } }] },
      // Never called: the grants name it as their resource.
      mcpServers: [{ slug: 'a', url: 'http://127.0.0.1:9/mcp/a' }],
    };
    const env = {
      GATEWAY_ADMIN_KEY: ADMIN_KEY,
      GATEWAY_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      JWT_PRIVATE_KEY: rsaPem().privateKey,
      NODE_ENV: 'production',
    };
    const otherPort = await freePort();
    const otherBase = `http://127.0.0.1:${otherPort}`;
    idp = await startOidcProvider({
      clientId: 'gateway',
      clientSecret: OIDC_SECRET,
      redirectUri: `${otherBase}/oauth/callback`,
    });
    [gateway, fromFile] = await Promise.all([
      startGateway({ ...env, GATEWAY_CONFIG: writeConfig(config), PORT: String(port), PUBLIC_BASE_URL: base }),
      startGateway({
        ...env,
        GATEWAY_CONFIG: writeConfig({
          ...config,
          oauth: {
            login: { type: 'oidc', issuer: idp.issuer, clientId: 'gateway', clientSecret: OIDC_SECRET },
            accessTokenTtlSeconds: 900,
          },
        }),
        PORT: String(otherPort),
        PUBLIC_BASE_URL: otherBase,
      }),
    ]);
  });

  afterAll(async () => {
    await Promise.all([gateway?.stop(), fromFile?.stop(), idp?.stop()]);
    await new Promise<void>((resolve) => (documents ? documents.close(() => resolve()) : resolve()));
  });

  it('GET, PUT and DELETE /admin/v1/oauth/settings: the settings in force, their changes and errors', async () => {
    const settings = '/admin/v1/oauth/settings';
    expect(await call(base, 'GET', settings)).toEqual({ status: 200, body: { source: 'none', enabled: false } });
    expect((await call(base, 'GET', settings, undefined, null)).body.error.code).toBe('missing_credentials');
    expect((await call(base, 'GET', settings, undefined, 'not-the-admin-key-0000000000')).status).toBe(401);

    const invalid = await call(base, 'PUT', settings, { login: { type: 'oidc', issuer: 'https://login.example.com' } });
    expect(invalid.status).toBe(400);
    expect(invalid.body.error).toMatchObject({ code: 'invalid_request', param: 'login.clientSecret' });
    const short = await call(base, 'PUT', settings, { login: { type: 'api_key' }, accessTokenTtlSeconds: 5 });
    expect(short.body.error).toMatchObject({ code: 'invalid_request', param: 'accessTokenTtlSeconds' });
    const extra = await call(base, 'PUT', settings, { enabled: false, login: { type: 'api_key' } });
    expect([extra.status, extra.body.error.code]).toEqual([400, 'invalid_request']);
    expect((await call(base, 'PUT', settings, { login: { type: 'api_key' } }, null)).status).toBe(401);

    const oidc = await call(base, 'PUT', settings, {
      enabled: true,
      login: { type: 'oidc', issuer: idp.issuer, clientId: 'gateway', clientSecret: OIDC_SECRET, scopes: ['openid'] },
      refreshTokenTtlSeconds: 3600,
    });
    expect(oidc.status).toBe(200);
    expect(oidc.body).toMatchObject({ source: 'catalog', version: 1, login: { clientSecretHint: '…4b7e' } });
    expect(JSON.stringify(oidc.body)).not.toContain(OIDC_SECRET);

    const apiKey = await call(base, 'PUT', settings, {
      login: { type: 'api_key' },
      accessTokenTtlSeconds: 600,
      allowedClientHosts: [documentOrigin],
    });
    expect(apiKey.body).toMatchObject({ source: 'catalog', version: 2, login: { type: 'api_key' } });
    expect(await call(base, 'GET', settings)).toEqual(apiKey);

    // The config file's `oauth` object: answered with the secret's hint, changes refused.
    const file = await call(fromFile.url, 'GET', settings);
    expect(file.body).toEqual({
      source: 'config',
      enabled: true,
      accessTokenTtlSeconds: 900,
      login: { type: 'oidc', issuer: idp.issuer, clientId: 'gateway', clientSecretHint: '…4b7e' },
    });
    for (const [method, body] of [
      ['PUT', { login: { type: 'api_key' } }],
      ['DELETE', undefined],
    ] as const) {
      const refused = await call(fromFile.url, method, settings, body);
      expect([refused.status, refused.body.error.code]).toEqual([409, 'managed_by_config_file']);
    }
    expect((await call(base, 'DELETE', settings, undefined, null)).status).toBe(401);
  });

  it('GET /admin/v1/oauth/clients, GET /admin/v1/oauth/grants, GET and DELETE /admin/v1/oauth/grants/{id}', async () => {
    const registered = await manualFlow(base, USER_KEY, `${base}/mcp/a`);
    const documentClient = `${documentOrigin}/client.json`;
    await manualFlow(base, USER_KEY, `${base}/mcp`, {
      clientId: documentClient,
      redirectUri: 'http://127.0.0.1:7/document-callback',
    });

    const clients = await call(base, 'GET', '/admin/v1/oauth/clients');
    expect(clients.status).toBe(200);
    expect(clients.body.data).toEqual([
      expect.objectContaining({ client_id: registered.clientId, metadata_document: false }),
      { client_id: documentClient, redirect_uris: [], metadata_document: true, created_at: expect.any(String) },
    ]);
    expect((await call(base, 'GET', '/admin/v1/oauth/clients', undefined, null)).status).toBe(401);

    const all = await call(base, 'GET', '/admin/v1/oauth/grants');
    expect(all.body.data).toHaveLength(2);
    const mine = await call(base, 'GET', '/admin/v1/oauth/grants?user=u-openapi');
    expect(mine.body.data.map((g: { clientId: string }) => g.clientId).sort()).toEqual(
      [registered.clientId, documentClient].sort(),
    );
    expect((await call(base, 'GET', '/admin/v1/oauth/grants?user=nobody')).body).toEqual({
      object: 'list',
      data: [],
    });
    const empty = await call(base, 'GET', '/admin/v1/oauth/grants?user=');
    expect([empty.status, empty.body.error.param]).toEqual([400, 'user']);
    expect((await call(base, 'GET', `/admin/v1/oauth/grants?user=${'u'.repeat(257)}`)).status).toBe(400);
    expect((await call(base, 'GET', '/admin/v1/oauth/grants', undefined, null)).status).toBe(401);

    const grant = mine.body.data.find((g: { clientId: string }) => g.clientId === registered.clientId);
    expect(grant).toMatchObject({ user: 'u-openapi', resource: `${base}/mcp/a`, revokedAt: null });
    const path = `/admin/v1/oauth/grants/${grant.id}`;
    expect(await call(base, 'GET', path)).toEqual({ status: 200, body: grant });
    expect((await call(base, 'DELETE', path, undefined, null)).status).toBe(401);
    const revoked = await call(base, 'DELETE', path);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ id: grant.id, revokedReason: 'revoked_by_admin' });
    // A second DELETE answers the grant as it was revoked.
    expect(await call(base, 'DELETE', path)).toEqual(revoked);
    for (const id of [randomUUID(), 'not-a-uuid']) {
      const missing = await call(base, 'DELETE', `/admin/v1/oauth/grants/${id}`);
      expect([missing.status, missing.body.error.code]).toEqual([404, 'not_found']);
      expect((await call(base, 'GET', `/admin/v1/oauth/grants/${id}`)).status).toBe(404);
    }
  });

  it('answers oauth_disabled for the clients and grants once OAuth is off, as the console does, to admins only', async () => {
    const off = await call(base, 'DELETE', '/admin/v1/oauth/settings');
    expect(off).toEqual({ status: 200, body: { source: 'none', enabled: false } });
    // Nothing to delete is no error.
    expect((await call(base, 'DELETE', '/admin/v1/oauth/settings')).status).toBe(200);
    for (const path of ['/admin/v1/oauth/clients', '/admin/v1/oauth/grants']) {
      const answer = await call(base, 'GET', path);
      expect([answer.status, answer.body.error.code]).toEqual([404, 'oauth_disabled']);
      expect((await call(base, 'GET', path, undefined, null)).status).toBe(401);
    }
  });
});

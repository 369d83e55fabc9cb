import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { PGlite } from '@electric-sql/pglite';
import { startPostgres, type RunningPostgres } from '../../../../packages/catalog/test/postgres';
import { startGateway, writeConfig, type RunningGateway } from '../support';
import {
  adminClient,
  chat,
  newAdminKey,
  newEncryptionKey,
  startAnthropicDouble,
  startMcpDouble,
  type AnthropicDouble,
} from './catalog-support';

jest.setTimeout(120_000);

const PROVIDER_KEY = 'sk-ant-admin-test-provider-key-7f3a';
const ROTATED_KEY = 'sk-ant-admin-test-rotated-key-1c9d';
const AWS_SECRET = 'aws-admin-test/secret+access-key-9b2c';
const AWS_KEY_ID = 'AKIAADMINTESTKEY4E1F';
const SESSION_TOKEN = 'session-token-admin-test-5d1e';
const CONFIG_PROVIDER_KEY = 'sk-ant-config-file-key-2a2a';
const CONFIG_API_KEY = 'gw-config-file-caller-key';

let postgres: RunningPostgres;
let anthropic: AnthropicDouble;
let mcpDouble: { url: string; close(): Promise<void> };

beforeAll(async () => {
  [postgres, anthropic, mcpDouble] = await Promise.all([startPostgres(), startAnthropicDouble(), startMcpDouble()]);
});

afterAll(async () => {
  await Promise.all([postgres?.destroy(), anthropic?.close(), mcpDouble?.close()]);
});

function configFile(): string {
  return writeConfig({
    auth: { apiKeys: [{ key: CONFIG_API_KEY, user: { user_id: 'config-user' } }] },
    providers: [{ slug: 'from-config', provider: 'anthropic', apiKey: CONFIG_PROVIDER_KEY, baseUrl: anthropic.url }],
    mcpServers: [{ slug: 'config-mcp', url: mcpDouble.url }],
  });
}

const engines: [string, () => Promise<Record<string, string>>][] = [
  ['the embedded database', async () => ({ GATEWAY_DATA_DIR: mkdtempSync(join(tmpdir(), 'gw-admin-')) })],
  ['PostgreSQL', async () => ({ DATABASE_URL: await postgres.createDatabase() })],
];

describe.each(engines)('the admin API on %s', (_name, database) => {
  let env: Record<string, string>;
  let gateway: RunningGateway;
  const answers: string[] = [];
  let admin: ReturnType<typeof adminClient>;

  beforeAll(async () => {
    env = {
      ...(await database()),
      GATEWAY_CONFIG: configFile(),
      GATEWAY_ADMIN_KEY: newAdminKey(),
      GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
      LOG_LEVEL: 'debug',
    };
    gateway = await startGateway(env);
    admin = adminClient(gateway.url, env.GATEWAY_ADMIN_KEY as string, answers);
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  it('refuses callers without the admin credential: 401 without one, 403 for a /v1 API key', async () => {
    expect((await admin('GET', '/providers', undefined, {})).body.error.code).toBe('missing_credentials');
    const wrong = await admin('GET', '/providers', undefined, { authorization: 'Bearer not-the-admin-key' });
    expect([wrong.status, wrong.body.error.code]).toEqual([401, 'invalid_credentials']);
    const apiKeyHeaders: Record<string, string>[] = [
      { authorization: `Bearer ${CONFIG_API_KEY}` },
      { 'x-api-key': CONFIG_API_KEY },
    ];
    for (const headers of apiKeyHeaders) {
      const refused = await admin('GET', '/providers', undefined, headers);
      expect([refused.status, refused.body.error.code]).toEqual([403, 'admin_required']);
    }
  });

  it('creates a provider that serves the next chat completion, rotates its key, refuses a stale version', async () => {
    const created = await admin('POST', '/providers', {
      slug: 'claude',
      name: 'Claude',
      provider: 'anthropic',
      apiKey: PROVIDER_KEY,
      baseUrl: anthropic.url,
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ slug: 'claude', version: 1, source: 'admin', apiKeyHint: '…7f3a' });
    const key = await admin('POST', '/api-keys', { user: { user_id: 'u-1', email: 'u1@example.com' }, name: 'ci' });
    expect(key.status).toBe(201);
    expect(key.body.key).toMatch(/^gw-/);

    const first = await chat(gateway.url, key.body.key, '@claude/claude-sonnet-4-5');
    expect(first.status).toBe(200);
    expect(anthropic.keys.at(-1)).toBe(PROVIDER_KEY);

    const rotated = await admin('PATCH', '/providers/claude', { version: 1, apiKey: ROTATED_KEY });
    expect(rotated.body).toMatchObject({ version: 2, apiKeyHint: '…1c9d', name: 'Claude' });
    expect((await chat(gateway.url, key.body.key, '@claude/claude-sonnet-4-5')).status).toBe(200);
    expect(anthropic.keys.at(-1)).toBe(ROTATED_KEY);

    const stale = await admin('PATCH', '/providers/claude', { version: 1, name: 'Again' });
    expect([stale.status, stale.body.error.code, stale.body.error.param]).toEqual([409, 'version_conflict', 'version']);
    // A PATCH that leaves the secret out keeps it.
    await admin('PATCH', '/providers/claude', { version: 2, name: 'Claude 2' });
    expect((await chat(gateway.url, key.body.key, '@claude/claude-sonnet-4-5')).status).toBe(200);
    expect(anthropic.keys.at(-1)).toBe(ROTATED_KEY);
  });

  it('revokes an API key from the next request', async () => {
    const key = await admin('POST', '/api-keys', { user: { user_id: 'u-revoked' } });
    expect((await chat(gateway.url, key.body.key, '@from-config/claude-sonnet-4-5')).status).toBe(200);
    const listed = await admin('GET', '/api-keys');
    const entry = listed.body.data.find((k: { id: string }) => k.id === key.body.id);
    expect(entry).toMatchObject({ keyHint: `…${key.body.key.slice(-4)}`, source: 'admin' });
    expect(JSON.stringify(listed.body)).not.toContain(key.body.key);
    const revoked = await admin('DELETE', `/api-keys/${key.body.id}`);
    expect(revoked.body).toEqual({ id: key.body.id, object: 'api_key', deleted: true });
    const refused = await chat(gateway.url, key.body.key, '@from-config/claude-sonnet-4-5');
    expect([refused.status, refused.body.error.code]).toEqual([401, 'invalid_credentials']);
    expect((await admin('DELETE', `/api-keys/${key.body.id}`)).status).toBe(404);
  });

  it('adds and removes an MCP server: 404 mcp_server_not_found once deleted', async () => {
    const created = await admin('POST', '/mcp-servers', {
      slug: 'tools',
      url: mcpDouble.url,
      user_identity_forwarding: { method: 'claims_header' },
    });
    expect(created.status).toBe(201);
    const call = () =>
      fetch(`${gateway.url}/mcp/tools`, {
        method: 'POST',
        headers: { 'x-api-key': CONFIG_API_KEY, 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'ping' }),
      });
    const served = await call();
    expect(served.status).toBe(200);
    expect(await served.json()).toMatchObject({ id: 7 });
    await admin('DELETE', '/mcp-servers/tools');
    const gone = await call();
    expect([gone.status, ((await gone.json()) as { error: { code: string } }).error.code]).toEqual([
      404,
      'mcp_server_not_found',
    ]);
  });

  it('lets a call in flight finish when its MCP server is deleted', async () => {
    await admin('POST', '/mcp-servers', { slug: 'streaming', url: mcpDouble.url });
    const stream = await fetch(`${gateway.url}/mcp/streaming`, {
      headers: { 'x-api-key': CONFIG_API_KEY, accept: 'text/event-stream' },
    });
    expect(stream.status).toBe(200);
    const reader = (stream.body as ReadableStream<Uint8Array>).getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).toContain('"n":1');
    expect((await admin('DELETE', '/mcp-servers/streaming')).status).toBe(200);
    const refused = await fetch(`${gateway.url}/mcp/streaming`, {
      headers: { 'x-api-key': CONFIG_API_KEY, accept: 'text/event-stream' },
    });
    expect(refused.status).toBe(404);
    let rest = '';
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      rest += new TextDecoder().decode(chunk.value);
    }
    expect(rest).toContain('"n":3');
  });

  it.each([
    ['providers', 'crud-p', { provider: 'anthropic', apiKey: 'sk-ant-crud-0000' }, { name: 'Renamed' }],
    ['mcp-servers', 'crud-m', { url: 'http://127.0.0.1:9/mcp' }, { jwt_audience: 'aud' }],
    [
      'prompts',
      'crud-q',
      { provider: '@from-config', model: 'claude-haiku-4-5', messages: [{ role: 'user', content: 'x' }] },
      { max_tokens: 9 },
    ],
  ])('lists, reads, changes and deletes %s', async (kind, slug, fields, change) => {
    const name = kind === 'prompts' ? 'id' : 'slug';
    expect((await admin('POST', `/${kind}`, { [name]: slug, ...fields })).status).toBe(201);
    const listed = await admin('GET', `/${kind}`);
    expect(listed.body.data.some((r: Record<string, unknown>) => r[name] === slug)).toBe(true);
    const read = await admin('GET', `/${kind}/${slug}`);
    const changed = await admin('PATCH', `/${kind}/${slug}`, { version: read.body.version, ...change });
    expect(changed.body).toMatchObject({ ...change, version: read.body.version + 1 });
    expect((await admin('DELETE', `/${kind}/${slug}`)).body).toMatchObject({ deleted: true });
    expect((await admin('GET', `/${kind}/${slug}`)).status).toBe(404);
    const audit = await admin('GET', `/audit?record=${kind}/${slug}`);
    expect(audit.body.data.map((e: { action: string }) => e.action)).toEqual(['delete', 'update', 'create']);
  });

  it('reads one API key by id, never with its key', async () => {
    const created = await admin('POST', '/api-keys', { user: { user_id: 'by-id' } });
    const read = await admin('GET', `/api-keys/${created.body.id}`);
    expect(read.body).toMatchObject({ id: created.body.id, user: { user_id: 'by-id' }, source: 'admin' });
    expect(read.text).not.toContain(created.body.key);
    // Only its name and expiry change: the key and its user never do (revoke it and create another).
    const renamed = await admin('PATCH', `/api-keys/${created.body.id}`, { version: 1, name: 'laptop' });
    expect(renamed.body).toMatchObject({ version: 2, name: 'laptop', user: { user_id: 'by-id' }, expiresAt: null });
    const user = await admin('PATCH', `/api-keys/${created.body.id}`, { version: 2, user: { user_id: 'other' } });
    expect([user.status, user.body.error.param]).toEqual([400, 'user']);
    const put = await fetch(`${gateway.url}/admin/v1/api-keys/${created.body.id}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${env.GATEWAY_ADMIN_KEY}`, 'content-type': 'application/json' },
      body: '{"version":2}',
    });
    expect([put.status, put.headers.get('allow')]).toEqual([405, 'GET, PATCH, DELETE']);
  });

  it('stores prompts and serves them', async () => {
    const prompt = await admin('POST', '/prompts', {
      id: 'greet',
      provider: '@from-config',
      model: 'claude-sonnet-4-5',
      max_tokens: 32,
      messages: [{ role: 'user', content: 'Say hi to {{name}}' }],
    });
    expect(prompt.status).toBe(201);
    expect(prompt.body.id).toBe('greet');
    const res = await fetch(`${gateway.url}/v1/prompts/greet/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${CONFIG_API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ variables: { name: 'Ada' } }),
    });
    expect(res.status).toBe(200);
    expect((await admin('GET', '/prompts/greet')).body.messages).toHaveLength(1);
  });

  it('keeps AWS secrets write-only and answers hints', async () => {
    const created = await admin('POST', '/providers', {
      slug: 'kb',
      name: 'Knowledge bases',
      provider: 'bedrock',
      accessKeyId: AWS_KEY_ID,
      secretAccessKey: AWS_SECRET,
      sessionToken: SESSION_TOKEN,
      region: 'us-east-1',
      allowedHosts: ['http://127.0.0.1:9'],
    });
    expect(created.body).toMatchObject({
      accessKeyIdHint: '…4E1F',
      secretAccessKeyHint: '…9b2c',
      sessionTokenHint: '…5d1e',
    });
    const read = await admin('GET', '/providers/kb');
    expect(read.body).not.toHaveProperty('secretAccessKey');
  });

  it('shows config-file records read-only', async () => {
    const list = await admin('GET', '/providers');
    const fromConfig = list.body.data.find((p: { slug: string }) => p.slug === 'from-config');
    expect(fromConfig).toMatchObject({ source: 'config', apiKeyHint: '…2a2a', version: 1 });
    const patch = await admin('PATCH', '/providers/from-config', { version: 1, name: 'x' });
    expect([patch.status, patch.body.error.code]).toEqual([409, 'managed_by_config_file']);
    const del = await admin('DELETE', '/mcp-servers/config-mcp');
    expect([del.status, del.body.error.code]).toEqual([409, 'managed_by_config_file']);
    const taken = await admin('POST', '/providers', {
      slug: 'from-config',
      provider: 'anthropic',
      apiKey: 'sk-ant-whatever',
    });
    expect([taken.status, taken.body.error.code, taken.body.error.param]).toEqual([409, 'slug_taken', 'slug']);
    const again = await admin('POST', '/providers', { slug: 'claude', provider: 'anthropic', apiKey: 'sk-ant-x' });
    expect([again.status, again.body.error.code]).toEqual([409, 'slug_taken']);
    const keys = await admin('GET', '/api-keys');
    expect(keys.body.data.find((k: { source: string }) => k.source === 'config')).toMatchObject({
      keyHint: `…${CONFIG_API_KEY.slice(-4)}`,
    });
  });

  it.each([
    [{ slug: 'x1', provider: 'anthropic' }, 'apiKey'],
    [{ slug: 'x2', provider: 'openai', apiKey: 'k' }, 'provider'],
    [{ slug: '@bad', provider: 'anthropic', apiKey: 'k' }, 'slug'],
    [{ slug: 'x3', provider: 'anthropic', apiKey: 'k', baseUrl: 'not a url' }, 'baseUrl'],
    [{ slug: 'x4', provider: 'anthropic', apiKey: 'k', base_url: 'http://a' }, 'base_url'],
    [{ slug: 'x5', provider: 'anthropic', apiKey: 'k', models: { mode: 'some' } }, 'models.mode'],
    [{ slug: 'x6', provider: 'bedrock', accessKeyId: 'a', secretAccessKey: 'b', region: 'moon' }, 'region'],
  ])('refuses an invalid provider %j naming %s', async (body, param) => {
    const refused = await admin('POST', '/providers', body);
    expect([refused.status, refused.body.error.code, refused.body.error.param]).toEqual([
      400,
      'invalid_request',
      param,
    ]);
  });

  it('refuses what the request path would refuse, bodies that are not JSON, and unknown records', async () => {
    const bearer = await admin('POST', '/mcp-servers', {
      slug: 'needs-idp',
      url: mcpDouble.url,
      user_identity_forwarding: { method: 'bearer' },
    });
    expect([bearer.status, bearer.body.error.code, bearer.body.error.param]).toEqual([
      400,
      'invalid_request',
      'user_identity_forwarding.method',
    ]);
    const hosts = await admin('POST', '/providers', {
      slug: 'bad-hosts',
      provider: 'bedrock',
      accessKeyId: 'AKIA0000',
      secretAccessKey: 'secret',
      region: 'us-east-1',
      allowedHosts: ['https://vpce.example.com/path'],
    });
    expect([hosts.status, hosts.body.error.param]).toEqual([400, 'allowedHosts']);
    const res = await fetch(`${gateway.url}/admin/v1/providers`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.GATEWAY_ADMIN_KEY}`, 'content-type': 'application/json' },
      body: '{"slug":',
    });
    expect([res.status, ((await res.json()) as { error: { code: string } }).error.code]).toEqual([400, 'invalid_json']);
    const plain = await fetch(`${gateway.url}/admin/v1/providers`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.GATEWAY_ADMIN_KEY}`, 'content-type': 'text/plain' },
      body: '{}',
    });
    expect(plain.status).toBe(415);
    expect((await admin('GET', '/providers/nope')).body.error.code).toBe('not_found');
    expect((await admin('GET', '/audit?record=bad')).body.error.param).toBe('record');
    expect((await admin('GET', '/audit?limit=501')).body.error.param).toBe('limit');
    const deep = await admin('POST', '/prompts', {
      id: 'deep',
      provider: '@from-config',
      model: 'm',
      messages: [{ role: 'user', content: JSON.parse(`${'['.repeat(40)}${']'.repeat(40)}`) }],
    });
    expect([deep.status, deep.body.error.code]).toEqual([400, 'invalid_request']);
    const large = await admin('POST', '/prompts', {
      id: 'large',
      provider: '@from-config',
      model: 'm',
      messages: [{ role: 'user', content: 'x'.repeat(1024 * 1024) }],
    });
    expect([large.status, large.body.error.code]).toEqual([413, 'body_too_large']);
  });

  it("lists a provider's models with enabled per model", async () => {
    await admin('POST', '/providers', {
      slug: 'picky',
      provider: 'anthropic',
      apiKey: 'sk-ant-picky-0000',
      baseUrl: anthropic.url,
      models: { mode: 'custom', models: ['claude-haiku-4-5'], autoEnableNew: false },
    });
    const models = await admin('GET', '/providers/picky/models');
    expect(models.status).toBe(200);
    const byId = new Map(models.body.data.map((m: { id: string; enabled: boolean }) => [m.id, m.enabled]));
    expect(byId.get('claude-haiku-4-5')).toBe(true);
    expect(byId.get('claude-sonnet-4-5')).toBe(false);
  });

  it('settles 200 concurrent updates of one record on one winner per version, with an audit line each', async () => {
    const created = await admin('POST', '/mcp-servers', { slug: 'raced', url: mcpDouble.url });
    const version = created.body.version as number;
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        admin('PATCH', '/mcp-servers/raced', { version, jwt_audience: `aud-${i}` }),
      ),
    );
    const won = results.filter((r) => r.status === 200);
    expect(won).toHaveLength(1);
    expect(results.filter((r) => r.status === 409 && r.body.error.code === 'version_conflict')).toHaveLength(199);
    const audit = await admin('GET', '/audit?record=mcp-servers/raced');
    expect(audit.body.data.map((e: { action: string; version: number }) => [e.action, e.version])).toEqual([
      ['update', version + 1],
      ['create', version],
    ]);
    expect(audit.body.data[0]).toMatchObject({
      actor: expect.stringMatching(/^admin-key:[0-9a-f]{8}$/),
      fields: ['jwt_audience'],
    });
  });

  it('keeps every secret out of answers, the audit log and the logs, and survives a restart', async () => {
    const audit = await admin('GET', '/audit?limit=500');
    expect(audit.body.data.length).toBeGreaterThan(5);
    const secrets = [PROVIDER_KEY, ROTATED_KEY, AWS_SECRET, AWS_KEY_ID, SESSION_TOKEN, CONFIG_PROVIDER_KEY];
    for (const secret of secrets) {
      for (const text of answers) expect(text).not.toContain(secret);
      for (const line of gateway.logs) expect(line).not.toContain(secret);
    }
    expect(gateway.logs.join('\n')).not.toContain(env.GATEWAY_ADMIN_KEY);

    await gateway.stop();
    gateway = await startGateway(env);
    admin = adminClient(gateway.url, env.GATEWAY_ADMIN_KEY as string, answers);
    expect((await admin('GET', '/providers/claude')).body).toMatchObject({ version: 3, name: 'Claude 2' });
    const key = await admin('POST', '/api-keys', { user: { user_id: 'after-restart' } });
    expect((await chat(gateway.url, key.body.key, '@claude/claude-sonnet-4-5')).status).toBe(200);
    expect(anthropic.keys.at(-1)).toBe(ROTATED_KEY);
  });

  // The last test of the describe: PostgreSQL is read beside the running gateway; the embedded
  // database only once the gateway has stopped (one process at a time), which it then stays.
  it("holds only ciphertext in the database's rows", async () => {
    let rows: unknown[];
    if (env.DATABASE_URL) {
      const client = new Client({ connectionString: env.DATABASE_URL });
      await client.connect();
      rows = [
        ...(await client.query('SELECT * FROM gw_records')).rows,
        ...(await client.query('SELECT * FROM gw_audit')).rows,
      ];
      await client.end();
    } else {
      await gateway.stop();
      const db = await PGlite.create(env.GATEWAY_DATA_DIR as string);
      rows = [...(await db.query('SELECT * FROM gw_records')).rows, ...(await db.query('SELECT * FROM gw_audit')).rows];
      await db.close();
    }
    const dump = JSON.stringify(rows);
    expect(dump).toContain('"apiKey":"v2.');
    for (const secret of [PROVIDER_KEY, ROTATED_KEY, AWS_SECRET, AWS_KEY_ID, SESSION_TOKEN]) {
      expect(dump).not.toContain(secret);
    }
  });
});

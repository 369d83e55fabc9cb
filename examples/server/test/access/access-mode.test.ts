/**
 * The access mode lives in the catalog and changes live (CONTRACT section 10): open → report →
 * policies through the admin API, on two instances sharing PostgreSQL. API keys expire; refused
 * requests' records keep what the operator needs.
 */
import { startPostgres, type RunningPostgres } from '../../../../packages/catalog/test/postgres';
import { startGateway, writeConfig, type RunningGateway } from '../support';
import {
  adminClient,
  chat,
  newAdminKey,
  newEncryptionKey,
  startAnthropicDouble,
  startMcpDouble,
  within,
  type AnthropicDouble,
} from '../catalog/catalog-support';

jest.setTimeout(120_000);

const CALLER_KEY = 'gw-access-mode-caller-0001';
const HAIKU = '@anthropic/claude-haiku-4-5';

async function mcpCall(base: string, apiKey: string, server: string): Promise<number> {
  const res = await fetch(`${base}/mcp/${server}`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${apiKey}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      host: new URL(base).host,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'lookup', arguments: {} } }),
  });
  await res.arrayBuffer();
  return res.status;
}

describe('the access mode, switched through the admin API on two instances sharing PostgreSQL', () => {
  let postgres: RunningPostgres;
  let anthropic: AnthropicDouble;
  let mcpDouble: { url: string; close(): Promise<void> };
  let a: RunningGateway;
  let b: RunningGateway;
  let admin: ReturnType<typeof adminClient>;
  let adminB: ReturnType<typeof adminClient>;

  beforeAll(async () => {
    [postgres, anthropic, mcpDouble] = await Promise.all([startPostgres(), startAnthropicDouble(), startMcpDouble()]);
    const adminKey = newAdminKey();
    const env = {
      DATABASE_URL: await postgres.createDatabase(),
      GATEWAY_CONFIG: writeConfig({
        auth: { apiKeys: [{ key: CALLER_KEY, user: { user_id: 'u-mode', groups: ['analysts'] } }] },
        providers: [{ slug: 'anthropic', provider: 'anthropic', apiKey: 'sk-ant-mode-0001', baseUrl: anthropic.url }],
        mcpServers: [{ slug: 'crm', url: mcpDouble.url }],
      }),
      GATEWAY_ADMIN_KEY: adminKey,
      GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
    };
    a = await startGateway(env);
    b = await startGateway(env);
    admin = adminClient(a.url, adminKey);
    adminB = adminClient(b.url, adminKey);
    // A policy that names the caller for another model only: under "policies" haiku is refused.
    expect(
      (
        await admin('POST', '/policies', {
          slug: 'analysts',
          subjects: { groups: ['analysts'] },
          allow: { models: ['@anthropic/claude-sonnet-*'] },
        })
      ).status,
    ).toBe(201);
  });

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await Promise.all([postgres?.destroy(), anthropic?.close(), mcpDouble?.close()]);
  });

  it('is open by default, says so, and warns that the policies are not applied', async () => {
    const mode = await admin('GET', '/access/mode');
    expect(mode.status).toBe(200);
    expect(mode.body).toMatchObject({ mode: 'open', source: 'default', changeable: true, policiesApplied: false });
    expect(mode.body.policies).toBe(1);
    expect((await chat(b.url, CALLER_KEY, HAIKU)).status).toBe(200);
  });

  it('report lets the request through on the other instance within 1 s, recorded as would_deny', async () => {
    const set = await admin('PUT', '/access/mode', { mode: 'report' });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ mode: 'report', source: 'catalog', policiesApplied: false });
    // Applied on b within 1 s: the request goes through, and its record says policies would refuse it.
    await within(1_000, async () => (await adminB('GET', '/access/mode')).body.mode === 'report');
    const res = await fetch(`${b.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${CALLER_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: HAIKU, max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status).toBe(200);
    const requestId = res.headers.get('x-gateway-request-id');
    // MCP: a server no policy grants is let through too, and marked.
    expect(await mcpCall(b.url, CALLER_KEY, 'crm')).toBe(200);
    let records: { request_id: string; route: string; access: string | null; access_reason: string | null }[] = [];
    await within(5_000, async () => {
      records = (await adminB('GET', '/requests?access=would_deny')).body.data;
      return records.some((r) => r.route === 'mcp') && records.some((r) => r.request_id === requestId);
    });
    const model = records.find((r) => r.request_id === requestId);
    expect(model).toMatchObject({ access: 'would_deny', route: 'chat' });
    expect(model?.access_reason).toContain('@anthropic/claude-haiku-4-5');
    expect(records.find((r) => r.route === 'mcp')?.access_reason).toContain('mcp:crm');
    // An allowed request is not marked.
    expect((await chat(b.url, CALLER_KEY, '@anthropic/claude-sonnet-4-5')).status).toBe(200);
    // A log line and a metric say so too.
    expect(b.logs.some((line) => line.includes('policies would refuse this request'))).toBe(true);
    const metrics = await (await fetch(`${b.url}/metrics`)).text();
    expect(metrics).toMatch(/gateway_access_would_deny_total\{route="chat"\} [1-9]/);
  });

  it('policies refuses on the other instance within 1 s; the audit names the change', async () => {
    expect((await admin('PUT', '/access/mode', { mode: 'policies' })).body.policiesApplied).toBe(true);
    await within(1_000, async () => (await chat(b.url, CALLER_KEY, HAIKU)).status === 403);
    expect((await chat(b.url, CALLER_KEY, HAIKU)).body.error.code).toBe('access_denied');
    expect((await chat(b.url, CALLER_KEY, '@anthropic/claude-sonnet-4-5')).status).toBe(200);
    expect(await mcpCall(b.url, CALLER_KEY, 'crm')).toBe(403);
    const audit = await admin('GET', '/audit?record=settings/access-mode');
    expect(audit.body.data.map((e: { action: string }) => e.action)).toEqual(['update', 'create']);
    expect(audit.body.data[0].actor).toMatch(/^admin-key:/);
  });

  it('refuses a mode that is not one', async () => {
    const bad = await admin('PUT', '/access/mode', { mode: 'enforce' });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 'invalid_request', param: 'mode' });
    expect((await admin('PUT', '/access/mode', { mode: 'open', extra: 1 })).status).toBe(400);
  });
});

describe('a mode fixed by GATEWAY_ACCESS_MODE', () => {
  let gateway: RunningGateway;
  let admin: ReturnType<typeof adminClient>;
  beforeAll(async () => {
    const adminKey = newAdminKey();
    gateway = await startGateway({
      GATEWAY_CONFIG: writeConfig({ auth: { apiKeys: [{ key: CALLER_KEY, user: { user_id: 'u-mode' } }] } }),
      GATEWAY_ACCESS_MODE: 'report',
      GATEWAY_ADMIN_KEY: adminKey,
      GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
    });
    admin = adminClient(gateway.url, adminKey);
  });
  afterAll(async () => {
    await gateway?.stop();
  });

  it('cannot be changed through the admin API, and GET says where it comes from', async () => {
    expect((await admin('GET', '/access/mode')).body).toMatchObject({
      mode: 'report',
      source: 'environment',
      changeable: false,
    });
    const put = await admin('PUT', '/access/mode', { mode: 'open' });
    expect(put.status).toBe(409);
    expect(put.body.error.code).toBe('managed_by_config_file');
  });
});

describe('API keys with an expiry, and the records of refused requests', () => {
  let anthropic: AnthropicDouble;
  let gateway: RunningGateway;
  let admin: ReturnType<typeof adminClient>;
  beforeAll(async () => {
    anthropic = await startAnthropicDouble();
    const adminKey = newAdminKey();
    gateway = await startGateway({
      GATEWAY_CONFIG: writeConfig({
        providers: [
          {
            slug: 'chosen',
            provider: 'anthropic',
            apiKey: 'sk-ant-chosen-0001',
            baseUrl: anthropic.url,
            models: { mode: 'custom', models: ['claude-haiku-4-5'] },
          },
        ],
      }),
      GATEWAY_ADMIN_KEY: adminKey,
      GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
    });
    admin = adminClient(gateway.url, adminKey);
  });
  afterAll(async () => {
    await gateway?.stop();
    await anthropic?.close();
  });

  it('an expired key is 401 invalid_credentials; the list shows name, user, expiry and last use', async () => {
    const past = await admin('POST', '/api-keys', { user: { user_id: 'u-1' }, expiresAt: '2020-01-01T00:00:00Z' });
    expect(past.status).toBe(400);
    expect(past.body.error.param).toBe('expiresAt');
    const soon = new Date(Date.now() + 2_500).toISOString();
    const created = await admin('POST', '/api-keys', {
      name: 'ci runner',
      user: { user_id: 'u-1', groups: ['ci'] },
      expiresAt: soon,
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'ci runner', expiresAt: soon, lastUsedAt: null });
    const key = created.body.key as string;
    expect((await chat(gateway.url, key, '@chosen/claude-haiku-4-5')).status).toBe(200);
    let listed: { id: string; lastUsedAt: string | null; user: unknown; keyHint: string }[] = [];
    await within(10_000, async () => {
      listed = (await admin('GET', '/api-keys')).body.data;
      return listed.some((k) => k.id === created.body.id && k.lastUsedAt !== null);
    });
    expect(listed.find((k) => k.id === created.body.id)).toMatchObject({
      user: { user_id: 'u-1', groups: ['ci'] },
      keyHint: created.body.keyHint,
    });
    await within(5_000, async () => (await chat(gateway.url, key, '@chosen/claude-haiku-4-5')).status === 401);
    const expired = await chat(gateway.url, key, '@chosen/claude-haiku-4-5');
    expect(expired.body.error.code).toBe('invalid_credentials');
    // A later expiry (PATCH) makes it work again.
    const patched = await admin('PATCH', `/api-keys/${created.body.id}`, {
      version: created.body.version,
      name: 'ci runner 2',
      expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
    });
    expect(patched.status).toBe(200);
    expect(patched.body.name).toBe('ci runner 2');
    expect((await chat(gateway.url, key, '@chosen/claude-haiku-4-5')).status).toBe(200);
    expect(
      (await admin('PATCH', `/api-keys/${created.body.id}`, { version: patched.body.version, user: {} })).status,
    ).toBe(400);
  });

  it('a request refused with 403 model_not_enabled keeps its provider, model and message', async () => {
    const made = await admin('POST', '/api-keys', { user: { user_id: 'u-2' } });
    const res = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${made.body.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: '@chosen/claude-opus-4-1',
        max_tokens: 16,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    });
    expect(res.status).toBe(403);
    const requestId = res.headers.get('x-gateway-request-id');
    let record: Record<string, unknown> | undefined;
    await within(5_000, async () => {
      record = (await admin('GET', '/requests?status=403')).body.data.find(
        (r: { request_id: string }) => r.request_id === requestId,
      );
      return record !== undefined;
    });
    expect(record).toMatchObject({
      provider: 'chosen',
      model_requested: 'claude-opus-4-1',
      error_code: 'model_not_enabled',
    });
    expect(record?.error_message).toContain('claude-opus-4-1');
  });
});

import { startPostgres, type RunningPostgres } from '../../../../packages/catalog/test/postgres';
import { startGateway, writeConfig, type RunningGateway } from '../support';
import {
  adminClient,
  chat,
  newAdminKey,
  newEncryptionKey,
  startAnthropicDouble,
  within,
  type AnthropicDouble,
} from './catalog-support';

jest.setTimeout(120_000);

/**
 * Two gateway processes on one PostgreSQL server, as behind a load balancer: a change made through
 * either reaches the other within 1 s; without the database both keep serving their last catalog
 * and say so on /healthz; when it returns, they catch up.
 */
describe('two gateway instances sharing PostgreSQL', () => {
  let postgres: RunningPostgres;
  let anthropic: AnthropicDouble;
  let a: RunningGateway;
  let b: RunningGateway;
  let adminA: ReturnType<typeof adminClient>;
  let adminB: ReturnType<typeof adminClient>;
  let callerKey: string;

  beforeAll(async () => {
    [postgres, anthropic] = await Promise.all([startPostgres(), startAnthropicDouble()]);
    const env = {
      DATABASE_URL: await postgres.createDatabase(),
      GATEWAY_CONFIG: writeConfig({}),
      GATEWAY_ADMIN_KEY: newAdminKey(),
      GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
      NODE_ENV: 'production',
      JWT_PRIVATE_KEY: undefined,
    };
    a = await startGateway(env);
    b = await startGateway(env);
    adminA = adminClient(a.url, env.GATEWAY_ADMIN_KEY);
    adminB = adminClient(b.url, env.GATEWAY_ADMIN_KEY);
  });

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await Promise.all([postgres?.destroy(), anthropic?.close()]);
  });

  it('serves through B, within 1 s, a provider and an API key created through A', async () => {
    await adminA('POST', '/providers', {
      slug: 'shared',
      provider: 'anthropic',
      apiKey: 'sk-ant-shared-first-0001',
      baseUrl: anthropic.url,
    });
    callerKey = (await adminA('POST', '/api-keys', { user: { user_id: 'u-shared' } })).body.key;
    const took = await within(
      1_000,
      async () => (await chat(b.url, callerKey, '@shared/claude-haiku-4-5')).status === 200,
    );
    expect(took).toBeLessThan(1_000);
    expect(anthropic.keys.at(-1)).toBe('sk-ant-shared-first-0001');
  });

  it('uses on A, within 1 s, a key rotated through B', async () => {
    const current = (await adminB('GET', '/providers/shared')).body.version;
    await adminB('PATCH', '/providers/shared', { version: current, apiKey: 'sk-ant-shared-rotated-0002' });
    await within(1_000, async () => {
      await chat(a.url, callerKey, '@shared/claude-haiku-4-5');
      return anthropic.keys.at(-1) === 'sk-ant-shared-rotated-0002';
    });
  });

  it('refuses on B, within 1 s, an API key revoked through A', async () => {
    const key = await adminA('POST', '/api-keys', { user: { user_id: 'u-revoked' } });
    await within(1_000, async () => (await chat(b.url, key.body.key, '@shared/claude-haiku-4-5')).status === 200);
    await adminA('DELETE', `/api-keys/${key.body.id}`);
    await within(1_000, async () => (await chat(b.url, key.body.key, '@shared/claude-haiku-4-5')).status === 401);
  });

  it('serves on B, within 1 s, a named config created through A, and forgets it within 1 s once deleted', async () => {
    /** The named configs B serves, as its /metrics counts them. */
    const configsOnB = async () =>
      Number(
        /^gateway_catalog_records\{kind="configs"\} (\d+)$/m.exec(await (await fetch(`${b.url}/metrics`)).text())?.[1],
      );
    expect(await configsOnB()).toBe(0);
    const created = await adminA('POST', '/configs', { slug: 'shared-cfg', config: { retry: { attempts: 2 } } });
    expect(created.status).toBe(201);
    expect(await within(1_000, async () => (await configsOnB()) === 1)).toBeLessThan(1_000);
    expect((await adminA('DELETE', '/configs/shared-cfg')).status).toBe(200);
    await within(1_000, async () => (await configsOnB()) === 0);
  });

  it('keeps serving without the database, reports degraded, and catches up when it returns', async () => {
    await postgres.stop();
    for (const gateway of [a, b]) {
      await within(10_000, async () => {
        const health = (await (await fetch(`${gateway.url}/healthz`)).json()) as { status: string };
        return health.status === 'degraded';
      });
      const health = await fetch(`${gateway.url}/healthz`);
      expect(health.status).toBe(200);
      expect((await chat(gateway.url, callerKey, '@shared/claude-haiku-4-5')).status).toBe(200);
      const metrics = await (await fetch(`${gateway.url}/metrics`)).text();
      expect(metrics).toMatch(/^gateway_catalog_degraded 1$/m);
    }
    for (const gateway of [a, b]) {
      await within(2_000, async () => gateway.logs.some((l) => l.includes('catalog database unreachable')));
      expect(gateway.logs.filter((l) => l.includes('catalog database unreachable'))).toHaveLength(1);
    }
    const refused = await adminA('POST', '/providers', { slug: 'later', provider: 'anthropic', apiKey: 'sk-ant-x' });
    expect([refused.status, refused.body.error.code]).toEqual([503, 'catalog_unavailable']);

    await postgres.start();
    // A change made through A once the database is back reaches B.
    await within(15_000, async () => {
      const created = await adminA('POST', '/providers', {
        slug: 'after-outage',
        provider: 'anthropic',
        apiKey: 'sk-ant-after-outage-0003',
        baseUrl: anthropic.url,
      });
      return created.status === 201;
    });
    await within(5_000, async () => (await chat(b.url, callerKey, '@after-outage/claude-haiku-4-5')).status === 200);
    for (const gateway of [a, b]) {
      await within(5_000, async () => {
        const health = (await (await fetch(`${gateway.url}/healthz`)).json()) as { status: string };
        return health.status === 'ok';
      });
      await within(2_000, async () => gateway.logs.some((l) => l.includes('catalog database reachable again')));
    }
  });
});

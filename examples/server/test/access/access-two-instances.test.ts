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
} from '../catalog/catalog-support';

jest.setTimeout(120_000);

const CALLER_KEY = 'gw-access-shared-caller-0001';

describe('a policy changed on one instance sharing PostgreSQL', () => {
  let postgres: RunningPostgres;
  let anthropic: AnthropicDouble;
  let a: RunningGateway;
  let b: RunningGateway;

  beforeAll(async () => {
    [postgres, anthropic] = await Promise.all([startPostgres(), startAnthropicDouble()]);
    const env = {
      DATABASE_URL: await postgres.createDatabase(),
      GATEWAY_CONFIG: writeConfig({
        auth: { apiKeys: [{ key: CALLER_KEY, user: { user_id: 'u-shared', groups: ['analysts'] } }] },
        providers: [{ slug: 'anthropic', provider: 'anthropic', apiKey: 'sk-ant-shared-0001', baseUrl: anthropic.url }],
      }),
      GATEWAY_ACCESS_MODE: 'policies',
      GATEWAY_ADMIN_KEY: newAdminKey(),
      GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
    };
    a = await startGateway(env);
    b = await startGateway(env);
    const admin = adminClient(a.url, env.GATEWAY_ADMIN_KEY);
    expect((await chat(b.url, CALLER_KEY, '@anthropic/claude-haiku-4-5')).status).toBe(403);
    await admin('POST', '/policies', {
      slug: 'analysts',
      subjects: { groups: ['analysts'] },
      allow: { models: ['@anthropic/claude-haiku-*'] },
    });
  });

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await Promise.all([postgres?.destroy(), anthropic?.close()]);
  });

  it('applies on the other instance within 1 s', async () => {
    expect((await chat(a.url, CALLER_KEY, '@anthropic/claude-haiku-4-5')).status).toBe(200);
    await within(1_000, async () => (await chat(b.url, CALLER_KEY, '@anthropic/claude-haiku-4-5')).status === 200);
    expect((await chat(b.url, CALLER_KEY, '@anthropic/claude-sonnet-4-5')).status).toBe(403);
  });
});

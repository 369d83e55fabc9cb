import { adminClient, newAdminKey, newEncryptionKey } from '../catalog/catalog-support';
import { startGateway, writeConfig, type RunningGateway } from '../support';
import { eventually, startProviderDouble, type ProviderDouble } from './otel-support';

jest.setTimeout(120_000);

const API_KEY = 'gw-redaction-key-0123456789abcdef';
const ADMIN_KEY = newAdminKey();
/** Credentials a client put in its metadata: none may be kept, in the log line or the stored record. */
const SECRETS = {
  authorization: 'Bearer sk-live-redaction-0001',
  'X-Api-Key': 'sk-live-redaction-0002',
  client_secret: 'sk-live-redaction-0003',
  refreshToken: 'sk-live-redaction-0004',
  DB_PASSWORD: 'sk-live-redaction-0005',
};

let provider: ProviderDouble;
let gateway: RunningGateway;
let admin: ReturnType<typeof adminClient>;
const answers: string[] = [];

beforeAll(async () => {
  provider = await startProviderDouble();
  gateway = await startGateway({
    GATEWAY_CONFIG: writeConfig({
      auth: { apiKeys: [{ key: API_KEY, user: { user_id: 'u_redact' } }] },
      providers: [
        { slug: 'claude', provider: 'anthropic', apiKey: 'sk-ant-redaction-upstream', baseUrl: provider.url },
      ],
    }),
    GATEWAY_ADMIN_KEY: ADMIN_KEY,
    GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
  });
  admin = adminClient(gateway.url, ADMIN_KEY, answers);
});

afterAll(async () => {
  await gateway?.stop();
  await provider?.close();
});

describe('request metadata', () => {
  it('is redacted once, before the log line and the stored record: a value under a credential-named key is never kept', async () => {
    const res = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${API_KEY}`,
        'content-type': 'application/json',
        'x-gateway-metadata': JSON.stringify({ team: 'search', ...SECRETS }),
      },
      body: JSON.stringify({
        model: '@claude/claude-sonnet-4-5',
        max_tokens: 8,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    });
    expect(res.status).toBe(200);
    const requestId = res.headers.get('x-gateway-request-id') as string;
    const expected = {
      team: 'search',
      authorization: '[redacted]',
      'X-Api-Key': '[redacted]',
      client_secret: '[redacted]',
      refreshToken: '[redacted]',
      DB_PASSWORD: '[redacted]',
    };

    let stored: { metadata?: unknown } | undefined;
    await eventually(10_000, async () => {
      const page = await admin('GET', '/requests?user=u_redact');
      stored = page.body.data.find((r: { request_id: string }) => r.request_id === requestId);
      return stored !== undefined;
    });
    expect(stored?.metadata).toEqual(expected);
    // Filtering on a redacted value finds nothing: it is not kept.
    const filtered = await admin(
      'GET',
      `/requests?metadata.authorization=${encodeURIComponent(SECRETS.authorization)}`,
    );
    expect(filtered.body.data).toEqual([]);

    const line = gateway.logs.find((l) => l.includes(`"requestId":"${requestId}"`) && l.includes('"msg":"request"'));
    expect(line).toBeDefined();
    expect(JSON.parse(line as string).metadata).toEqual(expected);

    for (const secret of Object.values(SECRETS)) {
      expect(gateway.logs.filter((l) => l.includes(secret))).toEqual([]);
      expect(answers.filter((a) => a.includes(secret))).toEqual([]);
    }
  });
});

describe('admin list limits', () => {
  it.each(['/requests', '/audit'])('%s takes limit=500 and refuses limit=501 naming limit', async (path) => {
    const most = await admin('GET', `${path}?limit=500`);
    expect(most.status).toBe(200);
    expect(most.body.object).toBe('list');
    for (const limit of ['501', '0', '-1', '1.5', 'many']) {
      const over = await admin('GET', `${path}?limit=${limit}`);
      expect([limit, over.status, over.body.error?.code, over.body.error?.param]).toEqual([
        limit,
        400,
        'invalid_request',
        'limit',
      ]);
    }
  });
});

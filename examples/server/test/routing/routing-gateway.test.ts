/**
 * Routing across targets in the full gateway (CONTRACT section 17): an Anthropic → Bedrock
 * fallback is recorded attempt by attempt, priced on the target that answered, settled once
 * against the caller's limits, and traced with one span per attempt.
 */
import Anthropic from '@anthropic-ai/sdk';
import { adminClient, newAdminKey, newEncryptionKey, within } from '../catalog/catalog-support';
import { freshDataDir, startGateway, writeConfig, type RunningGateway } from '../support';
import { startOtlpReceiver, type OtlpReceiver } from '../observability/otel-support';
import { AWS_CREDENTIALS, mockBedrockRuntime } from '../../../../packages/model-router/test/bedrock-support';
import { message, mockAnthropic } from '../../../../packages/model-router/test/support';
import { parseConfig } from '../../src/config/load';

jest.setTimeout(120_000);

const KEY = 'gw-routing-key-0123456789abcdef';
const DEFAULT_KEY = 'gw-routing-default-0123456789ab';
const ADMIN_KEY = newAdminKey();
const BEDROCK_ID = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';

let primary: Awaited<ReturnType<typeof mockAnthropic>>;
let backup: Awaited<ReturnType<typeof mockAnthropic>>;
let bedrock: Awaited<ReturnType<typeof mockBedrockRuntime>>;
let receiver: OtlpReceiver;
let gateway: RunningGateway;
let admin: ReturnType<typeof adminClient>;

beforeAll(async () => {
  [primary, backup, bedrock, receiver] = await Promise.all([
    mockAnthropic(),
    mockAnthropic(),
    mockBedrockRuntime(),
    startOtlpReceiver(),
  ]);
  gateway = await startGateway({
    GATEWAY_CONFIG: writeConfig({
      auth: {
        apiKeys: [
          { key: KEY, user: { user_id: 'u-route' } },
          { key: DEFAULT_KEY, user: { user_id: 'u-default' }, config: 'file-fallback' },
        ],
      },
      configs: [
        {
          slug: 'file-fallback',
          config: { strategy: { mode: 'fallback' }, targets: [{ provider: '@primary' }, { provider: '@backup' }] },
        },
      ],
      providers: [
        { slug: 'primary', provider: 'anthropic', apiKey: 'sk-ant-routing-secret-01', baseUrl: primary.url },
        { slug: 'backup', provider: 'anthropic', apiKey: 'sk-ant-routing-secret-02', baseUrl: backup.url },
        { slug: 'aws', provider: 'bedrock', ...AWS_CREDENTIALS, region: 'us-east-1', allowedHosts: [bedrock.url] },
      ],
      limits: [
        { slug: 'route-limit', subjects: { users: ['u-route'] }, tokens_per_minute: 1_000_000, cost_usd_per_day: 100 },
      ],
    }),
    GATEWAY_DATA_DIR: freshDataDir('gw-routing-'),
    GATEWAY_ADMIN_KEY: ADMIN_KEY,
    GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_BSP_SCHEDULE_DELAY: '100',
  });
  admin = adminClient(gateway.url, ADMIN_KEY);
});

afterAll(async () => {
  await gateway?.stop();
  await Promise.all([primary?.close(), backup?.close(), bedrock?.close(), receiver?.close()]);
});

const FALLBACK = JSON.stringify({
  strategy: { mode: 'fallback' },
  targets: [{ provider: '@primary' }, { provider: '@aws', override_params: { model: BEDROCK_ID } }],
});

describe('an Anthropic → Bedrock fallback in the gateway', () => {
  it('answers from Bedrock, records both attempts, prices and settles the answering target once, and traces each attempt', async () => {
    primary.reply({ status: 529, json: { type: 'error', error: { type: 'overloaded_error', message: 'busy' } } });
    const usage = {
      input_tokens: 1000,
      output_tokens: 200,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    };
    bedrock.reply({ json: message([{ type: 'text', text: 'from bedrock' }], { usage }) });
    const anthropic = new Anthropic({
      apiKey: KEY,
      baseURL: gateway.url,
      maxRetries: 0,
      defaultHeaders: { 'x-gateway-config': FALLBACK },
    });
    const { data, response } = await anthropic.messages
      .create({ model: 'claude-sonnet-4-5', max_tokens: 300, messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    expect(data.content).toEqual([{ type: 'text', text: 'from bedrock' }]);
    expect(response.headers.get('x-gateway-last-used-option-index')).toBe('1');
    expect(response.headers.get('x-gateway-provider-used')).toBe('aws');
    expect(bedrock.last().signatureValid).toBe(true);

    await within(10_000, async () => (await admin('GET', '/requests?user=u-route')).body.data.length === 1);
    const [record] = (await admin('GET', '/requests?user=u-route')).body.data as Record<string, unknown>[];
    expect(record).toMatchObject({ provider: 'aws', model_requested: BEDROCK_ID, status: 200 });
    expect(record?.attempts).toEqual([
      { index: '0', provider: 'primary', model: 'claude-sonnet-4-5', status: 529, ms: expect.any(Number) },
      { index: '1', provider: 'aws', model: BEDROCK_ID, status: 200, ms: expect.any(Number), answered: true },
    ]);
    // claude-sonnet-4-5 (the model the Bedrock id names): $3 in and $15 out per million tokens.
    const cost = (1000 * 3 + 200 * 15) / 1e6;
    expect(record?.cost_usd).toBeCloseTo(cost, 12);
    // Reserved once before the first target, settled once to what the answering target used.
    const status = (await admin('GET', '/limits/route-limit/status?user=u-route')).body;
    expect(status.tokens_per_minute.used).toBe(1200);
    expect(status.cost_usd_per_day.spent).toBeCloseTo(cost, 12);

    const traceId = response.headers.get('x-gateway-trace-id');
    await within(10_000, async () => receiver.spans.filter((s) => s.traceId === traceId && s.kind === 3).length >= 2);
    const attempts = receiver.spans.filter((s) => s.traceId === traceId && s.kind === 3);
    expect(attempts.map((s) => [s.attributes['gateway.provider.slug'], s.attributes['error.type']])).toEqual([
      ['primary', '529'],
      ['aws', undefined],
    ]);
  });
});

describe('named configs in the gateway', () => {
  const overloaded = { status: 529, json: { type: 'error', error: { type: 'overloaded_error', message: 'busy' } } };
  const chat = (key: string, headers: Record<string, string> = {}) =>
    fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }),
    });

  it('serves a config made through the admin API by its slug, and refuses one no request could use', async () => {
    const refused = await admin('POST', '/configs', {
      slug: 'broken',
      config: { strategy: { mode: 'fallback' }, targets: [{ provider: '@primary', weight: -1 }] },
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: 'invalid_request', param: 'config' });
    expect(refused.body.error.message).toMatch(/targets\[0\]: weight/);
    const made = await admin('POST', '/configs', {
      slug: 'admin-fallback',
      name: 'Primary, then the backup',
      config: { strategy: { mode: 'fallback' }, targets: [{ provider: '@primary' }, { provider: '@backup' }] },
    });
    expect(made.status).toBe(201);
    primary.reply(overloaded);
    backup.reply({ json: message([{ type: 'text', text: 'named by the header' }]) });
    await within(5_000, async () => (await chat(KEY, { 'x-gateway-config': 'admin-fallback' })).status === 200);
    expect(backup.last().json.model).toBe('claude-sonnet-4-5');
  });

  it('uses an API key’s config when its request sends none', async () => {
    primary.reply(overloaded);
    backup.reply({ json: message([{ type: 'text', text: 'the key’s default' }]) });
    const response = await chat(DEFAULT_KEY);
    expect(response.status).toBe(200);
    expect(response.headers.get('x-gateway-provider-used')).toBe('backup');
    expect(
      ((await response.json()) as { choices: { message: { content: string } }[] }).choices[0]?.message.content,
    ).toBe('the key’s default');
    // The key of no config names no target: its request without a provider is refused as before.
    expect((await chat(KEY)).status).toBe(400);
  });
});

describe('named configs in the config file', () => {
  it('refuses at start-up a config no request could use, saying where', () => {
    expect(() =>
      parseConfig(
        { configs: [{ slug: 'bad', config: { strategy: { mode: 'conditional' }, targets: [{ provider: '@a' }] } }] },
        {},
      ),
    ).toThrow(/configs\[0\]\.config: strategy\.mode "conditional" is not served/);
  });
});

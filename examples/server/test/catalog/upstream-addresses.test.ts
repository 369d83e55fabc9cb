import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SecretBox, migrate, openEmbeddedDatabase, secretContext, secretHint } from '@gw/catalog';
import type { ProviderEntry } from '@gw/model-router';
import type { CatalogView } from '../../src/catalog/catalog-view';
import { testRecord } from '../../src/catalog/record-tests';
import { failedStart, freshDataDir, startGateway, writeConfig, type RunningGateway } from '../support';
import { adminClient, chat, newAdminKey, newEncryptionKey } from './catalog-support';

jest.setTimeout(120_000);

const CALLER = 'gw-upstream-addresses-caller';
const STORED_KEY = 'sk-ant-stored-before-the-check-9f1e';
const config = (extra: Record<string, unknown> = {}) =>
  writeConfig({ auth: { apiKeys: [{ key: CALLER, user: { user_id: 'caller' } }] }, ...extra });

/** Spellings of link-local and metadata addresses, each of which the gateway refuses as an upstream. */
const FORBIDDEN = [
  'http://169.254.169.254/latest/meta-data/',
  'http://2852039166/',
  'http://0xA9FEA9FE/',
  'http://0251.0376.0251.0376/',
  'http://[::ffff:169.254.169.254]/',
  'http://[fe80::a9fe:a9fe]/',
  'http://[fd00:ec2::254]/',
  'http://metadata.google.internal./computeMetadata/v1/',
  'HTTP://METADATA.GOOGLE.INTERNAL/',
];

describe('link-local and metadata upstream addresses', () => {
  let gateway: RunningGateway | undefined;
  let stored: string;
  const encryptionKey = newEncryptionKey();
  const adminKey = newAdminKey();

  beforeAll(async () => {
    // A provider stored before the check existed, pointing at the metadata address, with its key
    // sealed as the gateway seals it: written into the database directly.
    stored = freshDataDir('gw-addresses-');
    const db = await openEmbeddedDatabase(stored);
    try {
      await migrate(db);
      const box = new SecretBox(Buffer.from(encryptionKey, 'base64'));
      const id = randomUUID();
      const data = { slug: 'legacy-meta', provider: 'anthropic', baseUrl: 'http://169.254.169.254/' };
      const apiKey = box.seal(STORED_KEY, secretContext({ kind: 'providers', id, version: 1, field: 'apiKey', data }));
      await db.query(
        `INSERT INTO gw_records (kind, id, slug, version, data, secrets, hints, created_at, updated_at)
         VALUES ('providers', $1, 'legacy-meta', 1, $2, $3, $4, now(), now())`,
        [id, JSON.stringify(data), JSON.stringify({ apiKey }), JSON.stringify({ apiKey: secretHint(STORED_KEY) })],
      );
    } finally {
      await db.close();
    }
    gateway = await startGateway({
      GATEWAY_CONFIG: config(),
      GATEWAY_DATA_DIR: stored,
      GATEWAY_ADMIN_KEY: adminKey,
      GATEWAY_ENCRYPTION_KEY: encryptionKey,
    });
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  it.each(FORBIDDEN)('are refused by the admin API (the console’s back end) as baseUrl and url: %s', async (url) => {
    const admin = adminClient((gateway as RunningGateway).url, adminKey);
    const provider = await admin('POST', '/providers', {
      slug: 'p',
      provider: 'anthropic',
      apiKey: 'sk-x',
      baseUrl: url,
    });
    expect([provider.status, provider.body.error.code, provider.body.error.param]).toEqual([
      400,
      'invalid_request',
      'baseUrl',
    ]);
    const server = await admin('POST', '/mcp-servers', { slug: 'm', url });
    expect([server.status, server.body.error.code, server.body.error.param]).toEqual([400, 'invalid_request', 'url']);
  });

  it('are refused on PATCH too, and in an integration’s allowedHosts', async () => {
    const admin = adminClient((gateway as RunningGateway).url, adminKey);
    const created = await admin('POST', '/providers', {
      slug: 'fine',
      provider: 'anthropic',
      apiKey: 'sk-fine',
      baseUrl: 'http://127.0.0.1:9/',
    });
    expect(created.status).toBe(201);
    const patched = await admin('PATCH', '/providers/fine', { version: 1, baseUrl: 'http://169.254.170.2/' });
    expect([patched.status, patched.body.error.param]).toEqual([400, 'baseUrl']);
    const integration = await admin('POST', '/providers', {
      slug: 'kb',
      provider: 'bedrock',
      accessKeyId: 'AKIAADDRESSES0001',
      secretAccessKey: 'secret',
      region: 'us-east-1',
      allowedHosts: ['http://169.254.169.254'],
    });
    expect([integration.status, integration.body.error.param]).toEqual([400, 'allowedHosts.0']);
  });

  it('leave a record stored before the check out of service: its key is never sent there', async () => {
    const running = gateway as RunningGateway;
    expect(
      running.logs.some(
        (l) =>
          l.includes('providers/legacy-meta is not served') &&
          l.includes('baseUrl must not be a link-local or cloud metadata address'),
      ),
    ).toBe(true);
    const answer = await chat(running.url, CALLER, '@legacy-meta/claude-sonnet-4-5');
    expect(answer.status).toBeGreaterThanOrEqual(400);
    expect(JSON.stringify(answer.body)).not.toContain(STORED_KEY);
  });

  it.each([
    [
      'baseUrl',
      { providers: [{ slug: 'meta', provider: 'anthropic', apiKey: 'sk-x', baseUrl: 'http://2852039166/' }] },
    ],
    ['url', { mcpServers: [{ slug: 'meta', url: 'http://metadata.google.internal./' }] }],
  ])('stop start-up from the config file, naming %s', async (field, extra) => {
    const { code, stderr } = await failedStart({ GATEWAY_CONFIG: config(extra), GATEWAY_DATA_DIR: freshDataDir() });
    expect(code).not.toBe(0);
    expect(stderr).toContain(field);
    expect(stderr).toMatch(/link-local or cloud metadata address|cloud metadata address/);
  });
});

describe("the console's Test button", () => {
  let server: Server;
  let requests = 0;
  let base: string;

  beforeAll(async () => {
    // Stands in for the gateway's own listener: any request the test would make arrives here.
    server = createServer((_req, res) => {
      requests++;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"input_tokens":1}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const view = (baseUrl: string): CatalogView =>
    ({
      modelProviders: new Map([['p', { slug: 'p', baseUrl, models: { mode: 'all' } } as unknown as ProviderEntry]]),
      awsIntegrations: new Map(),
      mcpServers: [{ slug: 'm', url: baseUrl }],
      mcpSlugs: new Set(['m']),
    }) as unknown as CatalogView;

  it('never calls out for a record whose address is link-local or metadata', async () => {
    for (const kind of ['providers', 'mcp-servers'] as const) {
      const outcome = await testRecord(
        base,
        'console-key',
        view('http://[::ffff:169.254.169.254]/'),
        kind,
        kind === 'providers' ? 'p' : 'm',
      );
      expect(outcome).toMatchObject({ ok: false, status: 400, code: 'invalid_request' });
      expect(outcome.message).toContain('must not be a link-local or cloud metadata address');
    }
    expect(requests).toBe(0);
    // A record with an allowed address is tested as before.
    expect(await testRecord(base, 'console-key', view('http://127.0.0.1:9/'), 'providers', 'p')).toMatchObject({
      ok: true,
    });
    expect(requests).toBe(1);
  });
});

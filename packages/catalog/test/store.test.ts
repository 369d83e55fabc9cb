import {
  CatalogStore,
  LiveCatalog,
  SecretBox,
  MIGRATIONS,
  migrate,
  openEmbeddedDatabase,
  openPostgres,
  type CatalogDatabase,
} from '../src';
import { catalogEngines } from './engines';

jest.setTimeout(60_000);

const PROVIDER_KEY = 'sk-ant-catalog-provider-secret-7f3a';
const AWS_SECRET = 'aws/catalog+secret/key-9b2c';
const SESSION_TOKEN = 'session-token-catalog-5d1e';
const box = new SecretBox(Buffer.alloc(32, 7));

const { engines: ENGINES, embeddedFolder } = catalogEngines('gw-catalog-', async (postgres) => {
  const db = openPostgres(postgres.url);
  await db.exec('DROP TABLE IF EXISTS gw_records, gw_audit, gw_mcp_tools, gw_requests, gw_schema_migrations');
  return db;
});

describe.each(ENGINES)('the catalog store on %s', (_name, open) => {
  let db: CatalogDatabase;
  let store: CatalogStore;

  beforeAll(async () => {
    db = await open();
    expect(await migrate(db)).toEqual(MIGRATIONS.map((m) => m.version));
    expect(await migrate(db)).toEqual([]);
    store = new CatalogStore(db, box);
  });

  afterAll(async () => {
    await db.close();
  });

  it('creates, reads, updates and deletes providers; secrets are answered only as hints', async () => {
    const created = await store.create(
      'providers',
      { slug: 'claude', name: 'Claude', provider: 'anthropic', apiKey: PROVIDER_KEY },
      'admin',
    );
    expect(created).toMatchObject({ slug: 'claude', version: 1, source: 'admin', apiKeyHint: '…7f3a' });
    expect(JSON.stringify(created)).not.toContain(PROVIDER_KEY);
    const bedrock = await store.create(
      'providers',
      {
        slug: 'kb',
        name: 'KB',
        provider: 'bedrock',
        accessKeyId: 'AKIACATALOG0001',
        secretAccessKey: AWS_SECRET,
        sessionToken: SESSION_TOKEN,
        region: 'us-east-1',
      },
      'admin',
    );
    expect(bedrock).toMatchObject({
      secretAccessKeyHint: '…9b2c',
      sessionTokenHint: '…5d1e',
      accessKeyIdHint: '…0001',
    });
    const updated = await store.update('providers', 'claude', { version: 1, name: 'Claude 2' }, 'admin');
    expect(updated).toMatchObject({ name: 'Claude 2', version: 2, apiKeyHint: '…7f3a' });
    // A secret left out of a PATCH keeps the stored one.
    const opened = (await store.loadAll()).find((r) => r.slug === 'claude');
    expect(opened?.secrets.apiKey).toBe(PROVIDER_KEY);
    await expect(store.update('providers', 'claude', { version: 1, name: 'stale' }, 'admin')).rejects.toMatchObject({
      code: 'version_conflict',
      status: 409,
    });
    await expect(
      store.create('providers', { slug: 'claude', provider: 'anthropic', apiKey: 'x' }, 'admin'),
    ).rejects.toMatchObject({ code: 'slug_taken', status: 409 });
    await store.delete('providers', 'kb', 'admin');
    await expect(store.get('providers', 'kb')).rejects.toMatchObject({ code: 'not_found', status: 404 });
  });

  it('refuses a change of a routing field that does not give the secrets again (400 invalid_request naming the first)', async () => {
    await store.create(
      'providers',
      { slug: 'moved', provider: 'anthropic', apiKey: PROVIDER_KEY, baseUrl: 'http://127.0.0.1:9/' },
      'operator',
    );
    const move = store.update('providers', 'moved', { version: 1, baseUrl: 'http://127.0.0.1:10/' }, 'operator');
    await expect(move).rejects.toMatchObject({
      code: 'invalid_request',
      status: 400,
      param: 'apiKey',
      message: 'Changing baseUrl sends the stored secrets to a new place: give apiKey again in the same change.',
    });
    // The same value again is no change; the secret is kept.
    await store.update('providers', 'moved', { version: 1, baseUrl: 'http://127.0.0.1:9/', name: 'Same' }, 'operator');
    const moved = await store.update(
      'providers',
      'moved',
      { version: 2, baseUrl: 'http://127.0.0.1:10/', apiKey: 'sk-ant-moved-key-0001' },
      'operator',
    );
    expect(moved).toMatchObject({ version: 3, baseUrl: 'http://127.0.0.1:10/', apiKeyHint: '…0001' });
    expect((await store.getOpened('providers', 'moved'))?.secrets).toEqual({ apiKey: 'sk-ant-moved-key-0001' });
    await store.create(
      'providers',
      {
        slug: 'moved-kb',
        provider: 'bedrock',
        accessKeyId: 'AKIAMOVED0001',
        secretAccessKey: AWS_SECRET,
        region: 'us-east-1',
      },
      'operator',
    );
    // Only the secrets the record holds are asked for (no session token here).
    const region = store.update(
      'providers',
      'moved-kb',
      { version: 1, region: 'eu-west-1', accessKeyId: 'AKIAMOVED0002' },
      'operator',
    );
    await expect(region).rejects.toMatchObject({ param: 'secretAccessKey' });
    const given = { accessKeyId: 'AKIAMOVED0002', secretAccessKey: 'moved/secret' };
    await store.update('providers', 'moved-kb', { version: 1, allowedHosts: ['http://127.0.0.1:11'], ...given }, 'o');
    await store.delete('providers', 'moved', 'operator');
    await store.delete('providers', 'moved-kb', 'operator');
  });

  it('stores only ciphertext: no secret appears in any row of any table', async () => {
    const key = await store.create('api-keys', { user: { user_id: 'u-1' } }, 'admin');
    expect(key.key).toMatch(/^gw-/);
    // Every table of the catalog, including those later migrations add.
    const tables = (
      await db.query<{ table_name: string }>(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_name LIKE 'gw\\_%'",
      )
    ).map((row) => row.table_name);
    expect(tables).toEqual(expect.arrayContaining(['gw_records', 'gw_audit', 'gw_mcp_tools', 'gw_requests']));
    for (const table of tables) {
      const rows = JSON.stringify(await db.query(`SELECT * FROM ${table}`));
      for (const secret of [PROVIDER_KEY, AWS_SECRET, SESSION_TOKEN, key.key as string]) {
        expect([table, rows.includes(secret)]).toEqual([table, false]);
      }
    }
    expect(JSON.stringify(await store.list('api-keys'))).not.toContain(key.key as string);
  });

  it('refuses invalid fields by name', async () => {
    await expect(store.create('providers', { slug: 'x', provider: 'openai' }, 'admin')).rejects.toMatchObject({
      code: 'invalid_request',
      param: 'provider',
    });
    await expect(
      store.create('providers', { slug: 'x', provider: 'anthropic', apiKey: 'k', baseURL: 'http://x' }, 'admin'),
    ).rejects.toMatchObject({ code: 'invalid_request', param: 'baseURL' });
    await expect(
      store.create('mcp-servers', { slug: '@bad', url: 'http://127.0.0.1/mcp' }, 'admin'),
    ).rejects.toMatchObject({ code: 'invalid_request', param: 'slug' });
  });

  it('gives exactly one winner per version under 200 concurrent updates, with a consistent audit log', async () => {
    await store.create('mcp-servers', { slug: 'race', url: 'http://127.0.0.1:9/mcp' }, 'admin');
    const outcomes = await Promise.allSettled(
      Array.from({ length: 200 }, (_, i) =>
        store.update('mcp-servers', 'race', { version: 1, jwt_audience: `aud-${i}` }, `admin-${i}`),
      ),
    );
    const winners = outcomes.filter((o) => o.status === 'fulfilled');
    expect(winners).toHaveLength(1);
    expect(
      outcomes
        .filter((o) => o.status === 'rejected')
        .every((o) => (o.reason as { code: string }).code === 'version_conflict'),
    ).toBe(true);
    const log = await store.auditLog('mcp-servers/race');
    expect(log.map((e) => [e.action, e.version])).toEqual([
      ['update', 2],
      ['create', 1],
    ]);
    expect(JSON.stringify(await store.auditLog())).not.toContain(PROVIDER_KEY);
  });

  it('keeps a live snapshot that follows writes, atomically', async () => {
    const live = new LiveCatalog(db, store, { reloadIntervalMs: 60_000 });
    await live.start();
    const before = live.snapshot;
    const changed = new Promise<void>((resolve) => {
      const check = setInterval(() => {
        if (live.snapshot !== before) {
          clearInterval(check);
          resolve();
        }
      }, 5);
    });
    await store.create(
      'prompts',
      { id: 'greet', provider: '@claude', model: 'm', messages: [{ role: 'user', content: 'hi' }] },
      'admin',
    );
    await changed;
    expect(live.snapshot.records.get('prompts')?.get('greet')?.data.model).toBe('m');
    expect(before.records.get('prompts')?.get('greet')).toBeUndefined();
    await live.stop();
  });
});

describe('secrets under a new encryption key', () => {
  it('open with the previous key and are re-sealed under the new one', async () => {
    const db = await openEmbeddedDatabase(embeddedFolder());
    await migrate(db);
    const oldBox = new SecretBox(Buffer.alloc(32, 1));
    await new CatalogStore(db, oldBox).create(
      'providers',
      { slug: 'p', provider: 'anthropic', apiKey: PROVIDER_KEY },
      'admin',
    );
    const rotated = new CatalogStore(db, new SecretBox(Buffer.alloc(32, 2), [Buffer.alloc(32, 1)]));
    expect(await rotated.reseal()).toBe(1);
    expect(await rotated.reseal()).toBe(0);
    const onlyNew = new CatalogStore(db, new SecretBox(Buffer.alloc(32, 2)));
    expect((await onlyNew.loadAll())[0]?.secrets.apiKey).toBe(PROVIDER_KEY);
    await expect(new CatalogStore(db, oldBox).loadAll()).rejects.toMatchObject({ code: 'secret_unreadable' });
    await db.close();
  });
});

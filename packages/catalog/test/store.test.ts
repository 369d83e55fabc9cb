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

/** An object `levels` deep: `{ next: { next: … {} } }`. */
function nested(levels: number): Record<string, unknown> {
  let value: Record<string, unknown> = {};
  for (let level = 1; level < levels; level++) value = { next: value };
  return value;
}

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

  it('stores named configs: created, read, changed and deleted, each change audited', async () => {
    const config = { strategy: { mode: 'fallback' }, targets: [{ provider: '@a' }, { provider: '@b' }] };
    const created = await store.create('configs', { slug: 'cfg-crud', name: 'Fallback', config }, 'admin');
    expect(created).toMatchObject({ slug: 'cfg-crud', name: 'Fallback', config, version: 1, source: 'admin' });
    expect(await store.get('configs', 'cfg-crud')).toEqual(created);
    const changed = await store.update('configs', 'cfg-crud', { version: 1, name: null, config: { retry: {} } }, 'b');
    expect(changed).toMatchObject({ version: 2, config: { retry: {} } });
    expect(changed).not.toHaveProperty('name');
    await expect(store.update('configs', 'cfg-crud', { version: 2, slug: 'other' }, 'b')).rejects.toMatchObject({
      code: 'invalid_request',
      param: 'slug',
    });
    await store.delete('configs', 'cfg-crud', 'c');
    await expect(store.get('configs', 'cfg-crud')).rejects.toMatchObject({ code: 'not_found' });
    expect((await store.auditLog('configs/cfg-crud')).map((e) => [e.action, e.actor])).toEqual([
      ['delete', 'c'],
      ['update', 'b'],
      ['create', 'admin'],
    ]);
  });

  it.each([
    ['not an object', [1, 2], 'config: must be a JSON object'],
    ['null', null, 'config: must be a JSON object'],
    ['nested 9 levels', nested(9), 'nested 9 levels deep, more than 8'],
    [
      '16 KiB and 1 byte',
      { text: 'x'.repeat(16 * 1024 + 1 - '{"text":""}'.length) },
      'larger than 16384 bytes as JSON',
    ],
  ])('refuses a named config whose config is %s, naming config', async (_what, config, message) => {
    const refused = store.create('configs', { slug: 'cfg-bad', config }, 'admin');
    await expect(refused).rejects.toMatchObject({ code: 'invalid_request', status: 400, param: 'config' });
    await expect(refused).rejects.toThrow(message);
  });

  it('accepts a named config 8 levels deep and one of exactly 16 KiB; refuses a missing config or unknown field', async () => {
    const deepest = nested(8);
    await expect(store.create('configs', { slug: 'cfg-deep', config: deepest }, 'admin')).resolves.toMatchObject({
      config: deepest,
    });
    const exact = { text: 'x'.repeat(16 * 1024 - '{"text":""}'.length) };
    expect(Buffer.byteLength(JSON.stringify(exact))).toBe(16 * 1024);
    await expect(store.create('configs', { slug: 'cfg-16k', config: exact }, 'admin')).resolves.toBeDefined();
    await expect(store.create('configs', { slug: 'cfg-none' }, 'admin')).rejects.toMatchObject({ param: 'config' });
    await expect(store.create('configs', { slug: 'cfg-x', config: {}, targets: [] }, 'admin')).rejects.toMatchObject({
      param: 'targets',
    });
    await expect(store.create('configs', { slug: '@cfg', config: {} }, 'admin')).rejects.toMatchObject({
      param: 'slug',
    });
  });

  it('refuses an API key whose config names no named config, and deleting a config a key names (409 config_in_use)', async () => {
    await expect(
      store.create('api-keys', { user: { user_id: 'u-cfg' }, config: 'cfg-missing' }, 'admin'),
    ).rejects.toMatchObject({ code: 'invalid_request', status: 400, param: 'config' });
    await expect(
      store.create('api-keys', { user: { user_id: 'u-cfg' }, config: 'cfg-missing' }, 'admin'),
    ).rejects.toThrow('no named config "cfg-missing"');
    await expect(store.create('api-keys', { user: {}, config: 'bad slug' }, 'admin')).rejects.toMatchObject({
      param: 'config',
    });
    await store.create('configs', { slug: 'cfg-used', config: { retry: { attempts: 2 } } }, 'admin');
    await store.create('configs', { slug: 'cfg-spare', config: {} }, 'admin');
    const key = await store.create('api-keys', { user: { user_id: 'u-cfg' }, name: 'Laptop', config: 'cfg-used' }, 'a');
    expect(key).toMatchObject({ config: 'cfg-used' });
    const refused = store.delete('configs', 'cfg-used', 'admin');
    await expect(refused).rejects.toMatchObject({ code: 'config_in_use', status: 409 });
    await expect(refused).rejects.toThrow(`API key ${key.id} ("Laptop")`);
    // Refused as a whole: the config is still there, and no audit line says otherwise.
    await expect(store.get('configs', 'cfg-used')).resolves.toMatchObject({ version: 1 });
    expect((await store.auditLog('configs/cfg-used')).map((e) => e.action)).toEqual(['create']);
    // A change of the key's config is checked the same way; null removes it, freeing the config.
    await expect(
      store.update('api-keys', key.id, { version: 1, config: 'cfg-missing' }, 'admin'),
    ).rejects.toMatchObject({ code: 'invalid_request', param: 'config' });
    const moved = await store.update('api-keys', key.id, { version: 1, config: 'cfg-spare' }, 'admin');
    expect(moved).toMatchObject({ version: 2, config: 'cfg-spare' });
    await store.delete('configs', 'cfg-used', 'admin');
    await expect(store.delete('configs', 'cfg-spare', 'admin')).rejects.toMatchObject({ code: 'config_in_use' });
    const freed = await store.update('api-keys', key.id, { version: 2, config: null }, 'admin');
    expect(freed).not.toHaveProperty('config');
    await store.delete('configs', 'cfg-spare', 'admin');
  });

  it("accepts an API key naming a config the store does not hold but the host vouches for (the config file's)", async () => {
    const withFile = new CatalogStore(db, box, {
      recordOutsideStore: (kind, slug) => kind === 'configs' && slug === 'from-file',
    });
    await expect(
      withFile.create('api-keys', { user: { user_id: 'u-file' }, config: 'from-file' }, 'admin'),
    ).resolves.toMatchObject({ config: 'from-file' });
    await expect(store.create('api-keys', { user: {}, config: 'from-file' }, 'admin')).rejects.toMatchObject({
      param: 'config',
    });
  });

  it('never leaves an API key naming a deleted config when keys and the delete race', async () => {
    for (let round = 0; round < 10; round++) {
      const slug = `cfg-race-${round}`;
      await store.create('configs', { slug, config: {} }, 'admin');
      const outcomes = await Promise.allSettled([
        store.create('api-keys', { user: { user_id: `u-race-${round}` }, config: slug }, 'admin'),
        store.delete('configs', slug, 'admin'),
        store.create('api-keys', { user: { user_id: `u-race-${round}b` }, config: slug }, 'admin'),
      ]);
      const keys = outcomes.filter((o, i) => i !== 1 && o.status === 'fulfilled').length;
      const deleted = outcomes[1].status === 'fulfilled';
      // Either the config is gone and no key names it, or it stayed because a key does.
      expect(deleted ? keys === 0 : keys > 0).toBe(true);
      const configExists = (await store.list('configs')).some((c) => c.slug === slug);
      const naming = (await store.list('api-keys')).filter((k) => k.config === slug).length;
      expect([configExists, naming > 0 ? configExists : true]).toEqual([!deleted, true]);
    }
  });

  it('stores virtual servers whose members are MCP servers; refuses a missing member and deleting a member (409 server_in_use)', async () => {
    await store.create('mcp-servers', { slug: 'vs-tracker', url: 'http://127.0.0.1:9/mcp' }, 'admin');
    await store.create('mcp-servers', { slug: 'vs-crm', url: 'http://127.0.0.1:9/mcp' }, 'admin');
    const members = [
      { server: 'vs-tracker', prefix: 'tracker_' },
      { server: 'vs-crm', tools: ['search_*'], rename: { get_ticket: 'crm_ticket' }, timeout_ms: 2000 },
    ];
    const created = await store.create('virtual-servers', { slug: 'vs-bench', name: 'Bench', members }, 'admin');
    expect(created).toMatchObject({ slug: 'vs-bench', name: 'Bench', members, version: 1, source: 'admin' });
    const missing = store.create('virtual-servers', { slug: 'vs-2', members: [{ server: 'vs-none' }] }, 'admin');
    await expect(missing).rejects.toMatchObject({ code: 'invalid_request', status: 400, param: 'members.0.server' });
    await expect(missing).rejects.toThrow('no MCP server "vs-none"');
    await expect(
      store.update('virtual-servers', 'vs-bench', { version: 1, members: [...members, { server: 'vs-none' }] }, 'a'),
    ).rejects.toMatchObject({ code: 'invalid_request', param: 'members.2.server' });
    for (const [body, param] of [
      [{ slug: 'vs-3', members: [] }, 'members'],
      [{ slug: 'vs-3' }, 'members'],
      [{ slug: 'vs-3', members: [{ server: 'vs-crm', extra: 1 }] }, 'members.0.extra'],
      [{ slug: 'vs-3', members: [{ server: 'vs-crm', timeout_ms: 0 }] }, 'members.0.timeout_ms'],
      [{ slug: 'vs-3', members: [{ server: 'vs-crm', prefix: 'a b' }] }, 'members.0.prefix'],
    ] as const)
      await expect(store.create('virtual-servers', body, 'admin')).rejects.toMatchObject({ param });
    const refused = store.delete('mcp-servers', 'vs-crm', 'admin');
    await expect(refused).rejects.toMatchObject({ code: 'server_in_use', status: 409 });
    await expect(refused).rejects.toThrow('member of the virtual server "vs-bench"');
    await expect(store.get('mcp-servers', 'vs-crm')).resolves.toMatchObject({ version: 1 });
    const renamed = await store.update(
      'virtual-servers',
      'vs-bench',
      { version: 1, name: null, members: [members[0]] },
      'b',
    );
    expect(renamed).toMatchObject({ version: 2, members: [members[0]] });
    expect(renamed).not.toHaveProperty('name');
    await store.delete('mcp-servers', 'vs-crm', 'admin');
    await store.delete('virtual-servers', 'vs-bench', 'admin');
    await store.delete('mcp-servers', 'vs-tracker', 'admin');
    expect((await store.auditLog('virtual-servers/vs-bench')).map((e) => e.action)).toEqual([
      'delete',
      'update',
      'create',
    ]);
  });

  it('keeps MCP servers and virtual servers in one namespace of slugs, in both directions (409 slug_taken)', async () => {
    await store.create('mcp-servers', { slug: 'ns-server', url: 'http://127.0.0.1:9/mcp' }, 'admin');
    const asVirtual = store.create('virtual-servers', { slug: 'ns-server', members: [{ server: 'ns-server' }] }, 'a');
    await expect(asVirtual).rejects.toMatchObject({ code: 'slug_taken', status: 409, param: 'slug' });
    await expect(asVirtual).rejects.toThrow('used by an MCP server');
    await store.create('virtual-servers', { slug: 'ns-virtual', members: [{ server: 'ns-server' }] }, 'admin');
    const asServer = store.create('mcp-servers', { slug: 'ns-virtual', url: 'http://127.0.0.1:9/mcp' }, 'admin');
    await expect(asServer).rejects.toMatchObject({ code: 'slug_taken', status: 409, param: 'slug' });
    await expect(asServer).rejects.toThrow('used by a virtual MCP server');
    // The config file's (vouched for by the host) count too, both ways, and may be members.
    const withFile = new CatalogStore(db, box, {
      recordOutsideStore: (kind, slug) =>
        (kind === 'mcp-servers' && slug === 'file-server') || (kind === 'virtual-servers' && slug === 'file-virtual'),
    });
    await expect(
      withFile.create('virtual-servers', { slug: 'file-server', members: [{ server: 'ns-server' }] }, 'a'),
    ).rejects.toMatchObject({ code: 'slug_taken' });
    await expect(
      withFile.create('mcp-servers', { slug: 'file-virtual', url: 'http://127.0.0.1:9/mcp' }, 'a'),
    ).rejects.toMatchObject({ code: 'slug_taken' });
    await expect(
      withFile.create('virtual-servers', { slug: 'ns-file', members: [{ server: 'file-server' }] }, 'a'),
    ).resolves.toMatchObject({ members: [{ server: 'file-server' }] });
    await store.delete('virtual-servers', 'ns-file', 'a');
    await store.delete('virtual-servers', 'ns-virtual', 'a');
    await store.delete('mcp-servers', 'ns-server', 'a');
  });

  it('never leaves a virtual server naming a deleted MCP server, nor two kinds on one slug, when writes race', async () => {
    for (let round = 0; round < 10; round++) {
      const server = `race-member-${round}`;
      await store.create('mcp-servers', { slug: server, url: 'http://127.0.0.1:9/mcp' }, 'admin');
      const outcomes = await Promise.allSettled([
        store.create('virtual-servers', { slug: `race-v-${round}`, members: [{ server }] }, 'admin'),
        store.delete('mcp-servers', server, 'admin'),
        store.create('mcp-servers', { slug: `race-v-${round}`, url: 'http://127.0.0.1:9/mcp' }, 'admin'),
      ]);
      const virtualMade = outcomes[0].status === 'fulfilled';
      const deleted = outcomes[1].status === 'fulfilled';
      // Either the member is gone and no virtual server names it, or it stayed because one does.
      expect(virtualMade && deleted).toBe(false);
      // One slug, one kind: never both.
      expect(virtualMade && outcomes[2].status === 'fulfilled').toBe(false);
      const servers = (await store.list('mcp-servers')).map((r) => String(r.slug));
      const virtuals = await store.list('virtual-servers');
      for (const v of virtuals) for (const m of v.members as { server: string }[]) expect(servers).toContain(m.server);
      for (const v of virtuals) await store.delete('virtual-servers', String(v.slug), 'admin');
      for (const slug of servers.filter((s) => s.startsWith('race-'))) await store.delete('mcp-servers', slug, 'a');
    }
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

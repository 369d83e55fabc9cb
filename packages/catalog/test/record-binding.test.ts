import { createCipheriv, randomBytes } from 'node:crypto';
import {
  CatalogStore,
  LiveCatalog,
  SecretBox,
  ToolPins,
  forbiddenUpstreamAddress,
  migrate,
  openPostgres,
  toolDigest,
  validateInput,
  type CatalogDatabase,
  type ListedTool,
} from '../src';
import { catalogEngines } from './engines';

jest.setTimeout(60_000);

const KEY = Buffer.alloc(32, 11);
const PROVIDER_KEY = 'sk-ant-bound-secret-0001';

const { engines: ENGINES } = catalogEngines('gw-binding-', async (postgres) => {
  const db = openPostgres(postgres.url);
  await db.exec(
    'DROP TABLE IF EXISTS gw_records, gw_audit, gw_mcp_tools, gw_requests, gw_schema_migrations, gw_secret_sealing',
  );
  return db;
});

const lookup: ListedTool = {
  name: 'lookup',
  title: 'Look up',
  description: 'Looks a thing up.',
  inputSchema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
  annotations: { readOnlyHint: false },
};

describe('the digest of a pinned tool', () => {
  it('covers the whole tool: a new title, an annotation or only the input schema changes it', () => {
    const digest = toolDigest(lookup);
    expect(digest).toMatch(/^sha256-tool:[0-9a-f]{64}$/);
    expect(toolDigest({ ...lookup, title: 'Look anything up' })).not.toBe(digest);
    expect(toolDigest({ ...lookup, annotations: { readOnlyHint: true } })).not.toBe(digest);
    expect(toolDigest({ ...lookup, inputSchema: { type: 'object', properties: { q: { type: 'number' } } } })).not.toBe(
      digest,
    );
    expect(toolDigest({ ...lookup, outputSchema: { type: 'object' } })).not.toBe(digest);
    expect(toolDigest({ ...lookup, _meta: { 'com.example/ui': 'x' } })).not.toBe(digest);
    expect(toolDigest({ ...lookup, icons: [{ src: 'https://example.com/i.png' }] })).not.toBe(digest);
  });

  it('does not depend on key order, at any depth', () => {
    const reordered: ListedTool = {
      annotations: { readOnlyHint: false },
      inputSchema: { required: ['q'], properties: { q: { type: 'string' } }, type: 'object' },
      description: 'Looks a thing up.',
      title: 'Look up',
      name: 'lookup',
    };
    expect(toolDigest(reordered)).toBe(toolDigest(lookup));
  });

  it('still covers values nested deeper than the sorted depth', () => {
    const deep = (leaf: unknown) => {
      let value: unknown = leaf;
      for (let i = 0; i < 100; i++) value = { a: value };
      return { name: 'deep', inputSchema: value };
    };
    expect(toolDigest(deep('x'))).not.toBe(toolDigest(deep('y')));
  });
});

/** A value sealed the way earlier gateways did: `v1`, bound only to `<kind>/<slug>/<field>`. */
function legacySeal(plaintext: string, context: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', KEY, iv);
  cipher.setAAD(Buffer.from(context));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return ['v1', SecretBox.keyIdOf(KEY), iv, cipher.getAuthTag(), ciphertext]
    .map((part) => (typeof part === 'string' ? part : part.toString('base64url')))
    .join('.');
}

describe.each(ENGINES)('records and tools on %s', (_name, open) => {
  let db: CatalogDatabase;
  let store: CatalogStore;

  beforeAll(async () => {
    db = await open();
    await migrate(db);
    store = new CatalogStore(db, new SecretBox(KEY));
  });

  afterAll(async () => {
    await db.close();
  });

  const secretsOf = async (slug: string) =>
    (await db.query<{ secrets: Record<string, string> }>('SELECT secrets FROM gw_records WHERE slug = $1', [slug]))[0]
      ?.secrets as Record<string, string>;
  const setSecrets = (slug: string, secrets: Record<string, string>) =>
    db.query('UPDATE gw_records SET secrets = $1 WHERE slug = $2', [JSON.stringify(secrets), slug]);
  const unreadable = async () => {
    const refused: string[] = [];
    await store.loadAll((kind, slug) => refused.push(`${kind}/${slug}`));
    return refused;
  };

  it('seals secrets bound to their record: another field, record or version, or a changed baseUrl, does not open', async () => {
    await store.upgradeSealing();
    await store.create(
      'providers',
      {
        slug: 'kb',
        provider: 'bedrock',
        accessKeyId: 'AKIABINDING0001',
        secretAccessKey: 'aws/binding+secret',
        region: 'us-east-1',
      },
      'admin',
    );
    await store.create(
      'providers',
      { slug: 'claude', provider: 'anthropic', apiKey: PROVIDER_KEY, baseUrl: 'https://api.anthropic.com' },
      'admin',
    );
    await store.create('providers', { slug: 'other', provider: 'anthropic', apiKey: 'sk-ant-other-0002' }, 'admin');
    expect(await unreadable()).toEqual([]);

    // Moved to another field of the same record.
    const kb = await secretsOf('kb');
    await setSecrets('kb', { accessKeyId: kb.secretAccessKey as string, secretAccessKey: kb.accessKeyId as string });
    expect(await unreadable()).toEqual(['providers/kb']);
    await setSecrets('kb', kb);

    // Copied from an older version of the same record (with the slug unchanged).
    const v1 = await secretsOf('claude');
    await store.update('providers', 'claude', { version: 1, name: 'Claude' }, 'admin');
    expect(await unreadable()).toEqual([]);
    const v2 = await secretsOf('claude');
    await setSecrets('claude', v1);
    expect(await unreadable()).toEqual(['providers/claude']);
    await setSecrets('claude', v2);

    // Copied into another record, even one at the same version with the same routing fields.
    const other = await secretsOf('other');
    await setSecrets('other', v2);
    expect(await unreadable()).toEqual(['providers/other']);
    await setSecrets('other', other);
    await store.create('providers', { slug: 'twin', provider: 'anthropic', apiKey: 'sk-ant-twin-0004' }, 'admin');
    const twin = await secretsOf('twin');
    await setSecrets('twin', other);
    expect(await unreadable()).toEqual(['providers/twin']);
    await setSecrets('twin', twin);
    expect(await unreadable()).toEqual([]);

    // The row's baseUrl pointed elsewhere without sealing again: the secret refuses to open, and
    // the live catalog leaves the provider out (reported), rather than sending the key there.
    await db.query(
      `UPDATE gw_records SET data = jsonb_set(data, '{baseUrl}', '"https://attacker.example"') WHERE slug = 'claude'`,
    );
    const reported: string[] = [];
    const live = new LiveCatalog(db, store, { onUnreadable: (kind, slug) => reported.push(`${kind}/${slug}`) });
    await live.start();
    try {
      expect(reported).toEqual(['providers/claude']);
      expect(live.snapshot.records.get('providers')?.has('claude')).toBe(false);
      expect(live.snapshot.records.get('providers')?.get('other')?.secrets.apiKey).toBe('sk-ant-other-0002');
    } finally {
      await live.stop();
    }
    // A PATCH that gives the secret again mends the record; one that does not is refused clearly.
    await expect(store.update('providers', 'claude', { version: 2, name: 'x' }, 'admin')).rejects.toMatchObject({
      code: 'secret_unreadable',
    });
    await store.update('providers', 'claude', { version: 2, apiKey: 'sk-ant-new-0003' }, 'admin');
    expect((await store.loadAll()).find((r) => r.slug === 'claude')?.secrets.apiKey).toBe('sk-ant-new-0003');
  });

  it('upgrades secrets of the earlier form once, at start-up; a v1 value written later never opens', async () => {
    await db.query('DELETE FROM gw_secret_sealing');
    await store.create('providers', { slug: 'legacy', provider: 'anthropic', apiKey: 'placeholder' }, 'admin');
    await setSecrets('legacy', { apiKey: legacySeal(PROVIDER_KEY, 'providers/legacy/apiKey') });
    expect(await unreadable()).toEqual(['providers/legacy']);
    expect(await store.upgradeSealing()).toEqual({ upgraded: 1, unreadable: [] });
    expect((await secretsOf('legacy')).apiKey).toMatch(/^v2\./);
    expect((await store.loadAll()).find((r) => r.slug === 'legacy')?.secrets.apiKey).toBe(PROVIDER_KEY);
    // Done once: a v1 value written into a row afterwards is not upgraded and does not open.
    await setSecrets('legacy', { apiKey: legacySeal(PROVIDER_KEY, 'providers/legacy/apiKey') });
    expect(await store.upgradeSealing()).toEqual({ upgraded: 0, unreadable: [] });
    expect(await unreadable()).toEqual(['providers/legacy']);
  });

  it('approves a pinned tool only under the digest reviewed, and audits who approved which digest', async () => {
    const pins = new ToolPins(db);
    await pins.start(0);
    try {
      expect(pins.listed('crm', lookup)).toBe('held');
      const [seen] = await pins.list('crm');
      expect(seen).toMatchObject({ name: 'lookup', status: 'held', currentDigest: toolDigest(lookup) });
      // The server changes the tool between the admin's look and the click.
      const changed = { ...lookup, annotations: { readOnlyHint: false, destructiveHint: true } };
      expect(pins.listed('crm', changed)).toBe('held');
      await expect(pins.approve('crm', 'lookup', toolDigest(lookup), 'alice')).rejects.toMatchObject({
        status: 409,
        code: 'digest_changed',
      });
      expect(pins.called('crm', 'lookup')).toBe('held');
      expect((await pins.list('crm'))[0]).toMatchObject({ status: 'held', approvedDigest: null });
      await expect(pins.approve('crm', 'lookup', '', 'alice')).rejects.toMatchObject({
        status: 400,
        code: 'invalid_request',
        param: 'digest',
      });
      await expect(pins.approve('crm', 'nope', toolDigest(lookup), 'alice')).rejects.toMatchObject({ status: 404 });

      const approved = await pins.approve('crm', 'lookup', toolDigest(changed), 'alice');
      expect(approved).toMatchObject({ status: 'approved', approvedDigest: toolDigest(changed), approvedBy: 'alice' });
      expect(pins.called('crm', 'lookup')).toBe('approved');
      const [line] = await store.auditLog('mcp-servers/crm', 1);
      expect(line).toMatchObject({
        actor: 'alice',
        action: 'approve_tool',
        fields: [`tools.lookup@${toolDigest(changed)}`],
      });
      // Only the title changes: held again.
      expect(pins.listed('crm', { ...changed, title: 'Look up and delete' })).toBe('held');
      expect(pins.called('crm', 'lookup')).toBe('held');
    } finally {
      await pins.stop();
    }
  });

  it('holds tools approved under the digest of earlier gateways (description and input schema only)', async () => {
    const old = `sha256:${'ab'.repeat(32)}`;
    await db.query(
      `INSERT INTO gw_mcp_tools (server, name, seen_digest, approved_digest, first_seen_at, seen_at, approved_at, approved_by)
       VALUES ('legacy', 'lookup', $1, $1, now(), now(), now(), 'admin')`,
      [old],
    );
    const pins = new ToolPins(db);
    await pins.start(0);
    try {
      expect(pins.called('legacy', 'lookup')).toBe('held');
      expect((await pins.list('legacy'))[0]).toMatchObject({ status: 'held', approvedDigest: old });
      expect(pins.listed('legacy', lookup)).toBe('held');
    } finally {
      await pins.stop();
    }
  });
});

describe('upstream addresses', () => {
  it.each([
    'http://169.254.169.254/latest/meta-data',
    'http://2852039166/',
    'http://0xa9fea9fe/',
    'http://0251.0376.0251.0376/',
    'http://169.254.169.254./',
    'http://[::ffff:169.254.169.254]/',
    'http://[fe80::1]/',
    'http://[FD00:EC2::254]/',
    'http://metadata.google.internal/computeMetadata/v1/',
    'http://METADATA.GOOGLE.INTERNAL./',
  ])('refuses %s as a baseUrl and an MCP url, naming the field', (url) => {
    expect(forbiddenUpstreamAddress(url)).toBeDefined();
    expect(() => validateInput('providers', { slug: 'p', provider: 'anthropic', apiKey: 'k', baseUrl: url })).toThrow(
      expect.objectContaining({ code: 'invalid_request', param: 'baseUrl' }),
    );
    expect(() => validateInput('mcp-servers', { slug: 'm', url })).toThrow(
      expect.objectContaining({ code: 'invalid_request', param: 'url' }),
    );
  });

  it.each(['https://api.anthropic.com', 'http://127.0.0.1:8080', 'http://10.1.2.3/', 'http://[::1]:9000/mcp'])(
    'accepts %s (loopback and private addresses included)',
    (url) => {
      expect(forbiddenUpstreamAddress(url)).toBeUndefined();
      expect(() => validateInput('mcp-servers', { slug: 'm', url })).not.toThrow();
    },
  );

  it("refuses a metadata address among an AWS integration's allowedHosts", () => {
    expect(() =>
      validateInput('providers', {
        slug: 'kb',
        provider: 'bedrock',
        accessKeyId: 'a',
        secretAccessKey: 'b',
        region: 'us-east-1',
        allowedHosts: ['169.254.169.254'],
      }),
    ).toThrow(expect.objectContaining({ param: 'allowedHosts.0' }));
  });
});

import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { Authenticator, type GatewayIdentity } from '@gw/identity-forwarding';
import type { CatalogSnapshot, OpenedRecord, RecordKind } from '@gw/catalog';
import { buildCatalogView } from '../../src/catalog/catalog-view';
import { apiKeyConfigSlug, namedConfig } from '../../src/catalog/named-configs';
import { parseConfig } from '../../src/config/load';
import { startGateway, writeConfig, type RunningGateway } from '../support';
import { adminClient, newAdminKey, newEncryptionKey } from './catalog-support';

jest.setTimeout(120_000);

const FILE_KEY = 'gw-named-config-file-key-0001';
const FALLBACK = {
  strategy: { mode: 'fallback' },
  targets: [{ provider: '@anthropic-prod' }, { provider: '@anthropic-backup' }],
};
const FILE_CONFIG = {
  configs: [{ slug: 'file-cfg', name: 'From the file', config: FALLBACK }],
  auth: { apiKeys: [{ key: FILE_KEY, user: { user_id: 'file-user' }, config: 'file-cfg' }] },
};

/** The configs count the gateway's /metrics reports (`gateway_catalog_records{kind="configs"}`). */
async function configsCount(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  return Number(/^gateway_catalog_records\{kind="configs"\} (\d+)$/m.exec(text)?.[1] ?? NaN);
}

describe('named configs through the admin API (CONTRACT section 17)', () => {
  let gateway: RunningGateway;
  let admin: ReturnType<typeof adminClient>;

  beforeAll(async () => {
    const env = {
      GATEWAY_CONFIG: writeConfig(FILE_CONFIG),
      GATEWAY_ADMIN_KEY: newAdminKey(),
      GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
    };
    gateway = await startGateway(env);
    admin = adminClient(gateway.url, env.GATEWAY_ADMIN_KEY);
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  it('creates, reads, lists, changes and deletes a named config, served from the next request on', async () => {
    expect(await configsCount(gateway.url)).toBe(1);
    const created = await admin('POST', '/configs', {
      slug: 'canary',
      name: 'Canary',
      config: { retry: { attempts: 2 } },
    });
    expect([created.status, created.body]).toEqual([
      201,
      expect.objectContaining({ slug: 'canary', name: 'Canary', config: { retry: { attempts: 2 } }, version: 1 }),
    ]);
    expect(await configsCount(gateway.url)).toBe(2);
    expect((await admin('GET', '/configs/canary')).body).toEqual(created.body);
    const list = await admin('GET', '/configs');
    expect(list.body.data.map((c: { slug: string; source: string }) => [c.slug, c.source])).toEqual([
      ['file-cfg', 'config'],
      ['canary', 'admin'],
    ]);
    const changed = await admin('PATCH', '/configs/canary', { version: 1, config: FALLBACK });
    expect([changed.status, changed.body.version, changed.body.config]).toEqual([200, 2, FALLBACK]);
    const stale = await admin('PATCH', '/configs/canary', { version: 1, name: 'x' });
    expect([stale.status, stale.body.error.code]).toEqual([409, 'version_conflict']);
    const audit = await admin('GET', '/audit?record=configs/canary');
    expect(audit.body.data.map((e: { action: string }) => e.action)).toEqual(['update', 'create']);
    const deleted = await admin('DELETE', '/configs/canary');
    expect([deleted.status, deleted.body]).toEqual([200, { id: created.body.id, object: 'config', deleted: true }]);
    expect(await configsCount(gateway.url)).toBe(1);
    expect((await admin('GET', '/configs/canary')).status).toBe(404);
  });

  it.each([
    ['a list', { slug: 'c1', config: [1] }, 'config', 'config: must be a JSON object'],
    ['a string', { slug: 'c2', config: 'fallback' }, 'config', 'config: must be a JSON object'],
    ['no config', { slug: 'c3' }, 'config', 'config:'],
    ['over 16 KiB', { slug: 'c4', config: { text: 'x'.repeat(17_000) } }, 'config', 'larger than 16384 bytes'],
    [
      '9 levels deep',
      { slug: 'c5', config: { a: { b: { c: { d: { e: { f: { g: { h: {} } } } } } } } } },
      'config',
      'more than 8',
    ],
    ['a bad slug', { slug: '@c6', config: {} }, 'slug', 'slug:'],
    ['an unknown field', { slug: 'c7', config: {}, targets: [] }, 'targets', 'Unknown field "targets"'],
  ])('refuses a named config with %s: 400 invalid_request naming the field', async (_what, body, param, message) => {
    const refused = await admin('POST', '/configs', body);
    expect([refused.status, refused.body.error.code, refused.body.error.param]).toEqual([
      400,
      'invalid_request',
      param,
    ]);
    expect(refused.body.error.message).toContain(message);
  });

  it("keeps the config file's named configs read-only and their slugs taken", async () => {
    const read = await admin('GET', '/configs/file-cfg');
    expect(read.body).toMatchObject({ source: 'config', name: 'From the file', config: FALLBACK });
    for (const [method, body] of [
      ['PATCH', { version: 1, name: 'x' }],
      ['DELETE', undefined],
    ] as const) {
      const refused = await admin(method, '/configs/file-cfg', body);
      expect([refused.status, refused.body.error.code]).toEqual([409, 'managed_by_config_file']);
    }
    const taken = await admin('POST', '/configs', { slug: 'file-cfg', config: {} });
    expect([taken.status, taken.body.error.code, taken.body.error.param]).toEqual([409, 'slug_taken', 'slug']);
    const keys = await admin('GET', '/api-keys');
    expect(keys.body.data.find((k: { source: string }) => k.source === 'config')).toMatchObject({ config: 'file-cfg' });
  });

  it("checks an API key's config when the key is written, and refuses to delete a config a key names (409 config_in_use)", async () => {
    const missing = await admin('POST', '/api-keys', { user: { user_id: 'u-1' }, config: 'nope' });
    expect([missing.status, missing.body.error.code, missing.body.error.param]).toEqual([
      400,
      'invalid_request',
      'config',
    ]);
    expect(missing.body.error.message).toContain('"nope"');
    const ofFile = await admin('POST', '/api-keys', { user: { user_id: 'u-1' }, config: 'file-cfg' });
    expect([ofFile.status, ofFile.body.config]).toEqual([201, 'file-cfg']);
    await admin('POST', '/configs', { slug: 'in-use', config: FALLBACK });
    const key = await admin('POST', '/api-keys', { user: { user_id: 'u-2' }, name: 'CI', config: 'in-use' });
    expect([key.status, key.body.config]).toEqual([201, 'in-use']);
    const refused = await admin('DELETE', '/configs/in-use');
    expect([refused.status, refused.body.error.code]).toEqual([409, 'config_in_use']);
    expect(refused.body.error.message).toContain(key.body.id);
    const movedToMissing = await admin('PATCH', `/api-keys/${key.body.id}`, { version: 1, config: 'gone' });
    expect([movedToMissing.status, movedToMissing.body.error.param]).toEqual([400, 'config']);
    const cleared = await admin('PATCH', `/api-keys/${key.body.id}`, { version: 1, config: null });
    expect([cleared.status, cleared.body.config]).toEqual([200, undefined]);
    expect((await admin('DELETE', '/configs/in-use')).status).toBe(200);
  });
});

describe('the config file\'s "configs"', () => {
  it('loads configs, and a key of the file naming one of them', () => {
    const config = parseConfig(FILE_CONFIG, {});
    expect(config.configs).toEqual(FILE_CONFIG.configs);
    expect(config.auth?.apiKeys?.[0]?.config).toBe('file-cfg');
  });

  it.each([
    [
      'a config that is a list',
      { configs: [{ slug: 'a', config: [] }] },
      /^config configs\[0\]\.config: must be a JSON object/,
    ],
    ['no config', { configs: [{ slug: 'a' }] }, /^config configs\[0\]\.config: /],
    ['a bad slug', { configs: [{ slug: 'a b', config: {} }] }, /^config configs\[0\]\.slug: must be letters, digits/],
    ['an unknown field', { configs: [{ slug: 'a', config: {}, x: 1 }] }, 'config configs[0]: unknown field "x".'],
    [
      'a config over 16 KiB',
      { configs: [{ slug: 'a', config: { t: 'x'.repeat(17_000) } }] },
      /larger than 16384 bytes/,
    ],
    [
      'a repeated slug',
      {
        configs: [
          { slug: 'a', config: {} },
          { slug: 'a', config: {} },
        ],
      },
      'config configs[1]: repeats the config slug "a".',
    ],
    [
      'a key naming a config the file lacks',
      { auth: { apiKeys: [{ key: FILE_KEY, user: {}, config: 'missing' }] } },
      'config auth.apiKeys[0].config: names no entry of "configs": add {"slug": "missing", "config": {…}} to the top-level "configs" list, or remove "config".',
    ],
  ])('refuses %s, saying what to write', (_what, raw, message) => {
    expect(() => parseConfig(raw, {})).toThrow(message);
  });
});

describe('namedConfig and apiKeyConfigSlug (what the model router reads)', () => {
  /** A record of the database's snapshot. */
  const record = (kind: RecordKind, slug: string, data: Record<string, unknown>): OpenedRecord => ({
    kind,
    id: slug,
    slug,
    version: 1,
    data,
    secrets: {},
  });
  const snapshot = (records: OpenedRecord[]): CatalogSnapshot => {
    const byKind = new Map<RecordKind, Map<string, OpenedRecord>>();
    for (const r of records) {
      if (!byKind.has(r.kind)) byKind.set(r.kind, new Map());
      byKind.get(r.kind)?.set(r.slug, r);
    }
    return { records: byKind, loadedAt: new Date() };
  };
  const DB_KEY = 'gw-named-config-db-key-0002';
  const PLAIN_KEY = 'gw-named-config-plain-key-3';
  const sha = (key: string) => createHash('sha256').update(key).digest('hex');
  const view = buildCatalogView(
    parseConfig(FILE_CONFIG, {}),
    snapshot([
      record('configs', 'db-cfg', { slug: 'db-cfg', config: { retry: { attempts: 3 } } }),
      record('configs', 'file-cfg', { slug: 'file-cfg', config: { shadowed: true } }),
      record('api-keys', 'key-db', { keySha256: sha(DB_KEY), user: { user_id: 'u-db' }, config: 'db-cfg' }),
      record('api-keys', 'key-plain', { keySha256: sha(PLAIN_KEY), user: { user_id: 'u-plain' } }),
    ]),
  );
  const requestAs = async (key: string | undefined): Promise<IncomingMessage> => {
    const req = {} as IncomingMessage & { callerIdentity?: GatewayIdentity };
    if (key !== undefined)
      req.callerIdentity = await new Authenticator({ apiKeys: view.apiKeys }).authenticate(['x-api-key', key]);
    return req;
  };

  it("answers each named config by slug, the config file's winning over the database's", () => {
    expect(namedConfig(view, 'file-cfg')).toEqual(FALLBACK);
    expect(namedConfig(view, 'db-cfg')).toEqual({ retry: { attempts: 3 } });
    expect(namedConfig(view, 'nope')).toBeUndefined();
    // Shared by every request of the snapshot: frozen through and through.
    expect(Object.isFrozen(namedConfig(view, 'db-cfg'))).toBe(true);
    expect(Object.isFrozen(namedConfig(view, 'db-cfg')?.retry)).toBe(true);
    expect(Object.isFrozen((namedConfig(view, 'file-cfg')?.targets as object[])[1])).toBe(true);
    expect(view.counts.get('configs')).toBe(2);
  });

  it('answers the config slug of the API key that authenticated the request, whichever source the key comes from', async () => {
    expect(apiKeyConfigSlug(await requestAs(FILE_KEY))).toBe('file-cfg');
    expect(apiKeyConfigSlug(await requestAs(DB_KEY))).toBe('db-cfg');
    expect(apiKeyConfigSlug(await requestAs(PLAIN_KEY))).toBeUndefined();
    expect(apiKeyConfigSlug(await requestAs(undefined))).toBeUndefined();
    const token = {
      callerIdentity: { method: 'identity_token', subject: 'idp:x', claims: {}, apiKeyConfig: 'db-cfg' },
    };
    expect(apiKeyConfigSlug(token as unknown as IncomingMessage)).toBeUndefined();
  });
});

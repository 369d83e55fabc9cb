import { ConfigRecords, configApiKeyId } from '../src';

describe("the config file's API key records", () => {
  const entries = [
    { key: 'gw-config-key-alpha-0001', user: { user_id: 'alice' } },
    { keySha256: 'ab'.repeat(32), user: { user_id: 'bob' } },
  ];

  it('finds a config key id that the catalog database also holds (the start-up clash), and none otherwise', () => {
    const records = new ConfigRecords({ apiKeys: entries });
    const bob = configApiKeyId(entries[1]!);
    expect(bob).toBe(`config-${'ab'.repeat(8)}`);
    expect(records.apiKeyIdIn(new Set(['key_db_1', bob]))).toBe(bob);
    expect(records.apiKeyIdIn(new Set(['key_db_1']))).toBeUndefined();
    expect(records.apiKeyIdIn(new Set())).toBeUndefined();
  });

  it('lists each key with its id, user and hint, never the key, when they are first read', () => {
    const records = new ConfigRecords({ apiKeys: entries }, new Date('2026-11-27T10:00:00Z'));
    const alice = configApiKeyId(entries[0]!);
    expect(records.has('api-keys', alice)).toBe(true);
    expect(records.get('api-keys', alice)).toMatchObject({
      id: alice,
      source: 'config',
      version: 1,
      createdAt: '2026-11-27T10:00:00.000Z',
      user: { user_id: 'alice' },
    });
    expect(records.list('api-keys').map((r) => r.id)).toEqual([alice, configApiKeyId(entries[1]!)]);
    expect(JSON.stringify(records.list('api-keys'))).not.toContain('gw-config-key-alpha-0001');
    expect(records.list('providers')).toEqual([]);
  });
});

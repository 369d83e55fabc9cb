import { randomBytes } from 'node:crypto';
import {
  DatabaseResponsesStore,
  SecretBox,
  SecretUnreadableError,
  migrate,
  openPostgres,
  type CatalogDatabase,
} from '../src';
import { catalogEngines } from './engines';

jest.setTimeout(120_000);

const { engines } = catalogEngines('gw-responses-', async (postgres) => openPostgres(await postgres.createDatabase()));

const STORED = {
  response: { id: 'resp_1', object: 'response', output_text: 'the answer is PLAINTEXT-ANSWER' },
  items: [{ type: 'message', role: 'user', content: 'PLAINTEXT-QUESTION' }],
};

describe.each(engines)('stored responses on %s', (_name, open) => {
  let db: CatalogDatabase;
  let store: DatabaseResponsesStore;
  const box = new SecretBox(randomBytes(32));

  beforeAll(async () => {
    db = await open();
    await migrate(db);
    store = new DatabaseResponsesStore({ db, box });
  });

  afterAll(async () => {
    store.close();
    await db.close();
  });

  it('keeps each response sealed at rest, readable by its owner only', async () => {
    await store.put('owner-a', 'resp_1', STORED);
    expect(await store.get('owner-a', 'resp_1')).toEqual(STORED);
    expect(await store.get('owner-b', 'resp_1')).toBeUndefined();
    expect(await store.get('owner-a', 'resp_2')).toBeUndefined();
    const rows = await db.query<Record<string, unknown>>('SELECT * FROM gw_responses');
    const text = JSON.stringify(rows);
    expect(text).not.toContain('PLAINTEXT');
    expect(rows[0]).toMatchObject({ id: 'resp_1', owner: 'owner-a' });
  });

  it("does not open a row moved to another owner, and deletes only the owner's", async () => {
    await store.put('owner-a', 'resp_3', STORED);
    await db.query(`UPDATE gw_responses SET owner = 'owner-b' WHERE id = 'resp_3'`);
    await expect(store.get('owner-b', 'resp_3')).rejects.toBeInstanceOf(SecretUnreadableError);
    expect(await store.delete('owner-a', 'resp_3')).toBe(false);
    expect(await store.delete('owner-b', 'resp_3')).toBe(true);
    expect(await store.delete('owner-b', 'resp_3')).toBe(false);
  });

  it('never reads an expired response and purges it', async () => {
    await store.put('owner-a', 'resp_old', STORED);
    await db.query(`UPDATE gw_responses SET expires_at = now() - interval '1 second' WHERE id = 'resp_old'`);
    expect(await store.get('owner-a', 'resp_old')).toBeUndefined();
    await store.deleteExpired();
    expect(await db.query(`SELECT id FROM gw_responses WHERE id = 'resp_old'`)).toEqual([]);
    // A new store (kept 30 days by default) sets expires_at about 30 days ahead.
    const [row] = await db.query<{ days: number }>(
      `SELECT extract(epoch FROM expires_at - now()) / 86400 AS days FROM gw_responses WHERE id = 'resp_1'`,
    );
    expect(Number(row!.days)).toBeGreaterThan(29.9);
  });

  it('validates its options with messages that say what to write', () => {
    expect(() => new DatabaseResponsesStore({ db, box, retentionDays: 0 })).toThrow(
      /retentionDays must be a whole number of days/,
    );
    expect(() => new DatabaseResponsesStore({ db } as never)).toThrow(/needs \{ box \}/);
  });
});

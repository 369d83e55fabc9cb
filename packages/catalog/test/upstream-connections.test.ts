import { createHash, randomBytes } from 'node:crypto';
import type { StoredConnection, UpstreamConnectionStore } from '@gw/upstream-auth';
import {
  SecretBox,
  SecretUnreadableError,
  createUpstreamConnectionStore,
  migrate,
  openPostgres,
  type CatalogDatabase,
} from '../src';
import { catalogEngines } from './engines';

jest.setTimeout(120_000);

/** The URL of the database the PostgreSQL engine opened last (a second store opens its own pool on it). */
let lastPostgresUrl: string | undefined;
const { engines } = catalogEngines('gw-upstream-', async (postgres) => {
  lastPostgresUrl = await postgres.createDatabase();
  return openPostgres(lastPostgresUrl);
});

const HOUR = 3_600_000;

function connection(userId: string, server: string, overrides: Partial<StoredConnection> = {}): StoredConnection {
  return {
    userId,
    server,
    issuer: 'https://as.tracker.example',
    clientId: 'gw-prod',
    accessToken: `AT-PLAINTEXT-${userId}-${server}`,
    refreshToken: `RT-PLAINTEXT-${userId}-${server}`,
    expiresAt: Date.now() + HOUR,
    scopes: ['read', 'write'],
    createdAt: Date.now(),
    ...overrides,
  };
}

/** Every row of the upstream tables, as one text (what a database reader sees). */
async function rawTables(db: CatalogDatabase): Promise<string> {
  const tables = [
    'gw_upstream_connections',
    'gw_upstream_connect_requests',
    'gw_upstream_pending',
    'gw_upstream_clients',
  ];
  const rows = await Promise.all(tables.map((table) => db.query(`SELECT * FROM ${table}`)));
  return JSON.stringify(rows);
}

/** Resolves when `check` holds, polled every 10 ms; rejects after `timeoutMs`. */
async function until(check: () => Promise<boolean> | boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe.each(engines)('upstream connections on %s', (name, open) => {
  let db: CatalogDatabase;
  let store: UpstreamConnectionStore;
  const box = new SecretBox(randomBytes(32));

  beforeAll(async () => {
    db = await open();
    await migrate(db);
    store = createUpstreamConnectionStore(db, box);
  });

  afterAll(async () => {
    await db.close();
  });

  it('keeps tokens, verifiers, states, link ids and client secrets sealed or digested in every row', async () => {
    await store.saveConnection(connection('alice', 'tracker'));
    await store.createConnectRequest({
      id: 'REQ-PLAINTEXT-1',
      userId: 'alice',
      server: 'tracker',
      expiresAt: Date.now() + 600_000,
    });
    await store.savePendingAuthorization({
      state: 'STATE-PLAINTEXT-1',
      codeVerifier: 'VERIFIER-PLAINTEXT-1',
      userId: 'alice',
      server: 'tracker',
      issuer: 'https://as.tracker.example',
      clientId: 'gw-prod',
      expiresAt: Date.now() + 600_000,
    });
    await store.saveRegisteredClient({
      server: 'tracker',
      issuer: 'https://as.tracker.example',
      clientId: 'dyn-1',
      clientSecret: 'CLIENT-SECRET-PLAINTEXT',
      tokenEndpointAuthMethod: 'client_secret_basic',
    });
    const raw = await rawTables(db);
    expect(raw).not.toContain('PLAINTEXT');
    // What lists show is in clear.
    expect(raw).toContain('https://as.tracker.example');
    expect(await store.getConnection('alice', 'tracker')).toEqual(
      connection('alice', 'tracker', {
        expiresAt: expect.any(Number) as unknown as number,
        createdAt: expect.any(Number) as unknown as number,
      }),
    );
    expect(await store.getRegisteredClient('tracker', 'https://as.tracker.example')).toEqual({
      server: 'tracker',
      issuer: 'https://as.tracker.example',
      clientId: 'dyn-1',
      clientSecret: 'CLIENT-SECRET-PLAINTEXT',
      tokenEndpointAuthMethod: 'client_secret_basic',
    });
    expect(await store.getRegisteredClient('tracker', 'https://other.example')).toBeUndefined();
  });

  it('binds the tokens to their user, server, issuer and client: a row moved does not open', async () => {
    await store.saveConnection(connection('bob', 'tracker'));
    await store.saveConnection(connection('bob', 'crm'));
    // Bob's tracker tokens copied into Carol's row, and into Bob's crm row.
    await db.query(
      `INSERT INTO gw_upstream_connections (user_id, server, issuer, client_id, scopes, sealed_tokens, created_at)
       SELECT 'carol', server, issuer, client_id, scopes, sealed_tokens, created_at FROM gw_upstream_connections
       WHERE user_id = 'bob' AND server = 'tracker'`,
    );
    await expect(store.getConnection('carol', 'tracker')).rejects.toBeInstanceOf(SecretUnreadableError);
    await db.query(
      `UPDATE gw_upstream_connections SET sealed_tokens =
         (SELECT sealed_tokens FROM gw_upstream_connections WHERE user_id = 'bob' AND server = 'tracker')
       WHERE user_id = 'bob' AND server = 'crm'`,
    );
    await expect(store.getConnection('bob', 'crm')).rejects.toBeInstanceOf(SecretUnreadableError);
    await db.query(
      `UPDATE gw_upstream_connections SET issuer = 'https://evil.example' WHERE user_id = 'bob' AND server = 'tracker'`,
    );
    await expect(store.getConnection('bob', 'tracker')).rejects.toThrow(/does not open/);
    // A registered client's secret moved to another server's registration does not open either.
    await db.query(
      `INSERT INTO gw_upstream_clients (server, issuer, client_id, sealed_secret, token_endpoint_auth_method)
       SELECT 'crm', issuer, client_id, sealed_secret, token_endpoint_auth_method FROM gw_upstream_clients WHERE server = 'tracker'`,
    );
    await expect(store.getRegisteredClient('crm', 'https://as.tracker.example')).rejects.toBeInstanceOf(
      SecretUnreadableError,
    );
    await db.query(`DELETE FROM gw_upstream_connections WHERE user_id IN ('bob', 'carol')`);
  });

  it('uses a connect request once, for its user only, before it expires', async () => {
    const now = Date.now();
    const request = { id: 'req-a', userId: 'alice', server: 'tracker', expiresAt: now + 600_000 };
    await store.createConnectRequest(request);
    // Another user is refused and does not use it up.
    expect(await store.useConnectRequest('req-a', 'mallory', now)).toEqual({ outcome: 'user_mismatch' });
    expect(await store.useConnectRequest('req-a', 'alice', now)).toEqual({ outcome: 'used_now', request });
    expect(await store.useConnectRequest('req-a', 'alice', now)).toEqual({ outcome: 'already_used' });
    expect(await store.useConnectRequest('req-unknown', 'alice', now)).toEqual({ outcome: 'unknown' });
    await store.createConnectRequest({ ...request, id: 'req-b', expiresAt: now + 1000 });
    expect(await store.useConnectRequest('req-b', 'alice', now + 1000)).toEqual({ outcome: 'expired' });
    expect(await store.useConnectRequest('req-b', 'mallory', now + 1000)).toEqual({ outcome: 'expired' });
    // Racing uses of one id by its user: exactly one wins.
    await store.createConnectRequest({ ...request, id: 'req-c' });
    const outcomes = await Promise.all(
      Array.from({ length: 8 }, () => store.useConnectRequest('req-c', 'alice', now).then((use) => use.outcome)),
    );
    expect(outcomes.filter((outcome) => outcome === 'used_now')).toHaveLength(1);
  });

  it('deletes expired connect requests and pending authorizations as new ones are written', async () => {
    await store.createConnectRequest({
      id: 'req-old',
      userId: 'alice',
      server: 'tracker',
      expiresAt: Date.now() - 2 * HOUR,
    });
    const pendingOld = {
      state: 'state-old',
      codeVerifier: 'v-old',
      userId: 'alice',
      server: 'tracker',
      issuer: 'https://as.tracker.example',
      clientId: 'gw-prod',
      expiresAt: Date.now() - 1000,
    };
    await store.savePendingAuthorization(pendingOld);
    await store.createConnectRequest({
      id: 'req-new',
      userId: 'alice',
      server: 'tracker',
      expiresAt: Date.now() + 600_000,
    });
    await store.savePendingAuthorization({ ...pendingOld, state: 'state-new', expiresAt: Date.now() + 600_000 });
    expect(await store.useConnectRequest('req-old', 'alice', Date.now())).toEqual({ outcome: 'unknown' });
    expect(await db.query('SELECT 1 FROM gw_upstream_pending WHERE expires_at < now()')).toEqual([]);
  });

  it('hands a pending authorization out once, never an expired one, and not under another state', async () => {
    const pending = {
      state: 'state-1',
      codeVerifier: 'verifier-1',
      userId: 'alice',
      server: 'tracker',
      issuer: 'https://as.tracker.example',
      clientId: 'gw-prod',
      expiresAt: Date.now() + 600_000,
    };
    await store.savePendingAuthorization(pending);
    const taken = await Promise.all([1, 2, 3].map(() => store.takePendingAuthorization('state-1', Date.now())));
    expect(taken.filter((t) => t !== undefined)).toEqual([pending]);
    await store.savePendingAuthorization({ ...pending, state: 'state-2', expiresAt: Date.now() + 500 });
    expect(await store.takePendingAuthorization('state-2', Date.now() + 500)).toBeUndefined();
    expect(await db.query(`SELECT 1 FROM gw_upstream_pending WHERE expires_at > now() + interval '1 hour'`)).toEqual(
      [],
    );
    // A verifier moved to another state's row does not open.
    await store.savePendingAuthorization({ ...pending, state: 'state-3' });
    await store.savePendingAuthorization({ ...pending, state: 'state-4', codeVerifier: 'verifier-4' });
    const sha = (value: string) => createHash('sha256').update(value).digest('hex');
    await db.query(
      `UPDATE gw_upstream_pending SET sealed_verifier =
         (SELECT sealed_verifier FROM gw_upstream_pending WHERE state_sha256 = $1) WHERE state_sha256 = $2`,
      [sha('state-3'), sha('state-4')],
    );
    await expect(store.takePendingAuthorization('state-4', Date.now())).rejects.toBeInstanceOf(SecretUnreadableError);
    expect(await store.takePendingAuthorization('state-3', Date.now())).toMatchObject({ codeVerifier: 'verifier-1' });
  });

  it('lists connections of a server oldest first, page by page, and of a user, without tokens', async () => {
    const t0 = Date.UTC(2030, 0, 1);
    for (const [i, user] of ['u3', 'u1', 'u2'].entries())
      await store.saveConnection(connection(user, 'wiki', { createdAt: t0 + i * 1000, lastRefreshedAt: t0 + 5000 }));
    const first = await store.listConnections('wiki', { limit: 2 });
    expect(first.map((c) => c.userId)).toEqual(['u3', 'u1']);
    const next = await store.listConnections('wiki', { limit: 2, after: 'u1' });
    expect(next.map((c) => c.userId)).toEqual(['u2']);
    expect(JSON.stringify([...first, ...next])).not.toContain('PLAINTEXT');
    expect(first[0]).toEqual({
      userId: 'u3',
      server: 'wiki',
      issuer: 'https://as.tracker.example',
      clientId: 'gw-prod',
      scopes: ['read', 'write'],
      createdAt: t0,
      expiresAt: expect.any(Number),
      lastRefreshedAt: t0 + 5000,
    });
    expect((await store.listUserConnections('u1')).map((c) => c.server)).toEqual(['wiki']);
    expect((await store.deleteUserConnections('u1')).map((c) => c.accessToken)).toEqual(['AT-PLAINTEXT-u1-wiki']);
    expect(await store.deleteConnection('u2', 'wiki')).toMatchObject({ refreshToken: 'RT-PLAINTEXT-u2-wiki' });
    expect(await store.deleteConnection('u2', 'wiki')).toBeUndefined();
  });

  it('announces saves and deletes to another store on the same database', async () => {
    // On PostgreSQL a second pool (another instance); the embedded database has one instance, one handle.
    const otherDb = name === 'PostgreSQL' ? openPostgres(lastPostgresUrl as string) : db;
    const other = createUpstreamConnectionStore(otherDb, box);
    const seen: string[] = [];
    const stop = await other.onConnectionChange((userId, server) => seen.push(`${userId}/${server}`));
    try {
      await store.saveConnection(connection('dave', 'tracker'));
      await store.deleteConnection('dave', 'tracker');
      await until(() => seen.length >= 2, 'two notifications');
      expect(seen).toEqual(['dave/tracker', 'dave/tracker']);
    } finally {
      await stop();
      if (otherDb !== db) await otherDb.close();
    }
  });

  it('runs the work of concurrent refresh locks of one connection one at a time, each seeing the last result', async () => {
    await store.saveConnection(connection('erin', 'tracker', { accessToken: 'old' }));
    let refreshes = 0;
    const refresh = () =>
      store.withRefreshLock('erin', 'tracker', async (current) => {
        if (current?.accessToken !== 'old') return { result: `reused ${current?.accessToken}` };
        refreshes++;
        await new Promise((resolve) => setImmediate(resolve));
        return { save: { ...current, accessToken: 'new', lastRefreshedAt: Date.now() }, result: 'refreshed' };
      });
    const results = await Promise.all([refresh(), refresh(), refresh()]);
    expect(refreshes).toBe(1);
    expect(results.sort()).toEqual(['refreshed', 'reused new', 'reused new']);
    // A work that throws changes nothing and does not hold the lock.
    await expect(
      store.withRefreshLock('erin', 'tracker', async () => {
        throw new Error('refresh failed');
      }),
    ).rejects.toThrow('refresh failed');
    expect(await store.withRefreshLock('erin', 'tracker', async () => ({ remove: true, result: 'gone' }))).toBe('gone');
    expect(await store.getConnection('erin', 'tracker')).toBeUndefined();
  });
});

describe('the refresh lock across two instances on one PostgreSQL', () => {
  const { engines: postgresOnly } = { engines: engines.filter(([name]) => name === 'PostgreSQL') };
  let first: CatalogDatabase;
  let second: CatalogDatabase;
  const box = new SecretBox(randomBytes(32));

  beforeAll(async () => {
    first = await (postgresOnly[0] as [string, () => Promise<CatalogDatabase>])[1]();
    await migrate(first);
    second = openPostgres(lastPostgresUrl as string);
  });

  afterAll(async () => {
    await first.close();
    await second.close();
  });

  it('runs the refresh once: the instance that waited sees the refreshed tokens', async () => {
    const a = createUpstreamConnectionStore(first, box);
    const b = createUpstreamConnectionStore(second, box);
    await a.saveConnection(connection('frank', 'tracker', { accessToken: 'old', refreshToken: 'rt-1' }));
    const presented: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let aHolds!: () => void;
    const aStarted = new Promise<void>((resolve) => (aHolds = resolve));
    const work = (wait: boolean) => async (current: StoredConnection | undefined) => {
      if (current === undefined) return { result: 'none' };
      if (current.accessToken !== 'old') return { result: `used ${current.accessToken}` };
      presented.push(current.refreshToken as string);
      if (wait) {
        aHolds();
        await held;
      }
      return {
        save: { ...current, accessToken: 'new', refreshToken: 'rt-2', lastRefreshedAt: Date.now() },
        result: 'refreshed',
      };
    };
    const fromA = a.withRefreshLock('frank', 'tracker', work(true));
    await aStarted;
    const fromB = b.withRefreshLock('frank', 'tracker', work(false));
    // B's transaction is waiting on the lock A holds (seen in pg_locks) before A is let go.
    await until(async () => {
      const rows = await first.query("SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted");
      return rows.length > 0;
    }, "the second instance's wait for the lock");
    release();
    expect(await Promise.all([fromA, fromB])).toEqual(['refreshed', 'used new']);
    expect(presented).toEqual(['rt-1']);
    expect(await b.getConnection('frank', 'tracker')).toMatchObject({ accessToken: 'new', refreshToken: 'rt-2' });
  });
});

import type { IncomingMessage } from 'node:http';
import {
  AdminAccess,
  DatabaseConsoleSessionStore,
  SignInThrottle,
  TooManyAttemptsError,
  adminKeyWeakness,
  checkAdminKeyStrength,
  clientAddress,
  migrate,
  openPostgres,
  trustedProxySet,
  type CatalogDatabase,
} from '../src';
import { catalogEngines } from './engines';

jest.setTimeout(60_000);

const KEY = 'sign-in-test-admin-key-Zq8vN2rLw5Kp';

function tokenAccess() {
  return new AdminAccess({
    adminClaim: { claim: 'groups', value: 'gateway-admin' },
    verifyToken: async (token) => JSON.parse(Buffer.from(token.split('.')[1] as string, 'base64url').toString()),
    throttle: false,
  });
}
const token = (claims: Record<string, unknown>) =>
  `e30.${Buffer.from(JSON.stringify({ iss: 'https://idp.test/', sub: 'ops-1', exp: 4e9, ...claims })).toString('base64url')}.sig`;
const bearer = (credential: string) => ({ authorization: `Bearer ${credential}` });

describe('the admin claim', () => {
  it.each([
    ['a string', 'not-gateway-admin'],
    ['a string', 'gateway-admin-x'],
    ['a string', 'gateway-admins'],
    ['a string', 'gateway-admin,eng'],
    ['a string', ' gateway-admin'],
    ['a list', ['not-gateway-admin', 'eng']],
    ['a list', ['gateway-admin-x']],
    ['a list', ['gateway-admin,eng']],
    ['a list', [['gateway-admin']]],
  ])('given as %s, is matched whole: %j is not "gateway-admin"', async (_form, groups) => {
    await expect(tokenAccess().authorize(bearer(token({ groups })))).rejects.toMatchObject({
      status: 403,
      code: 'admin_required',
    });
  });

  it.each([['gateway-admin'], [['eng', 'gateway-admin']]])(
    'accepts %j, naming the actor token:<iss>#<sub>',
    async (groups) => {
      const principal = await tokenAccess().authorize(bearer(token({ groups })));
      expect(principal.actor).toBe('token:https://idp.test/#ops-1');
      expect(principal.credential).toMatchObject({
        kind: 'token',
        issuer: 'https://idp.test/',
        subject: 'ops-1',
        expiresAt: 4e12,
      });
    },
  );
});

describe('admin key actors', () => {
  it('names each admin key by the start of its fingerprint, never by the key', async () => {
    const one = await new AdminAccess({ adminKey: KEY }).authorize(bearer(KEY));
    const other = `${KEY.slice(0, -1)}X`;
    const two = await new AdminAccess({ adminKey: other }).authorize(bearer(other));
    expect(one.actor).toMatch(/^admin-key:[0-9a-f]{8}$/);
    expect(two.actor).toMatch(/^admin-key:[0-9a-f]{8}$/);
    expect(one.actor).not.toBe(two.actor);
    expect(await new AdminAccess({ adminKey: KEY }).authorize(bearer(KEY))).toEqual(one);
    expect(JSON.stringify(one)).not.toContain(KEY);
  });
});

describe('admin key strength', () => {
  it.each([
    'aaaaaaaaaaaaaaaaaaaaaaaaaaaa',
    'passwordpasswordpassword',
    '123456789012345678901234',
    'abcdefghijklmnopqrstuvwxyz',
    'abababababababababababab',
    'passwordpassword12345678',
  ])('refuses %s, saying how to generate one', (key) => {
    expect(() => checkAdminKeyStrength(key)).toThrow(/GATEWAY_ADMIN_KEY is too easy to guess .*crypto\.randomBytes/);
  });

  it('refuses a short key as before, and takes random keys and the keys of the examples', () => {
    expect(() => checkAdminKeyStrength('short')).toThrow(/GATEWAY_ADMIN_KEY must be at least 24 characters/);
    for (const key of [
      KEY,
      'consumer-admin-key-0123456789abcdef',
      'admin-key-of-the-option-table',
      '5f0c8e2a9b7d4c1e3a6f8b0d', // 24 hex characters
      'gw-admin-Q2xhdWRlIGlzIGhlbHBmdWwh',
    ]) {
      expect([key, adminKeyWeakness(key)]).toEqual([key, undefined]);
    }
  });
});

describe('SignInThrottle', () => {
  it('lets five failures pass, then makes the address wait 1 s, doubling, up to the longest wait', () => {
    let now = 0;
    const throttle = new SignInThrottle({ now: () => now, maxDelayMs: 4_000 });
    for (let i = 0; i < 6; i++) throttle.begin('10.0.0.1');
    expect(() => throttle.begin('10.0.0.1')).toThrow(TooManyAttemptsError);
    throttle.begin('10.0.0.2');
    const waits: number[] = [];
    for (let i = 0; i < 4; i++) {
      try {
        throttle.begin('10.0.0.1');
      } catch (error) {
        waits.push((error as TooManyAttemptsError).retryAfterSeconds);
        now += (error as TooManyAttemptsError).retryAfterSeconds * 1000;
        throttle.begin('10.0.0.1');
      }
    }
    expect(waits).toEqual([1, 2, 4, 4]);
    throttle.succeeded('10.0.0.1');
    throttle.begin('10.0.0.1');
  });

  it('counts IPv6 addresses per /64, and remembers at most maxAddresses', () => {
    const throttle = new SignInThrottle({ freeAttempts: 1, maxAddresses: 100 });
    throttle.begin('2001:db8:1:2::1');
    throttle.begin('2001:db8:1:2:ffff::9');
    expect(() => throttle.begin('2001:0db8:0001:0002:0:0:0:7')).toThrow(TooManyAttemptsError);
    throttle.begin('2001:db8:1:3::1');
    for (let i = 0; i < 1000; i++) throttle.begin(`10.1.${i >> 8}.${i & 255}`);
    expect(throttle.size).toBe(100);
  });

  it('refuses bad options with what to write', () => {
    expect(() => new SignInThrottle({ freeAttempts: -1 })).toThrow(/freeAttempts must be a whole number of at least 0/);
    expect(() => new SignInThrottle({ max_addresses: 5 } as never)).toThrow(/did you mean "maxAddresses"/);
    expect(() => new AdminAccess({ throttle: {} as never })).toThrow(/throttle must be a SignInThrottle/);
  });
});

describe('clientAddress', () => {
  const req = (remoteAddress: string, forwarded?: string) =>
    ({
      socket: { remoteAddress },
      headers: forwarded === undefined ? {} : { 'x-forwarded-for': forwarded },
    }) as unknown as IncomingMessage;
  const proxies = trustedProxySet(['10.0.0.5', '10.0.0.6']);

  it('is the socket peer unless that peer is a trusted proxy', () => {
    expect(clientAddress(req('::ffff:203.0.113.9', '198.51.100.1'), proxies)).toBe('203.0.113.9');
    expect(clientAddress(req('203.0.113.9', '198.51.100.1'))).toBe('203.0.113.9');
  });

  it('behind trusted proxies, is the right-most forwarded address that is not one of them', () => {
    expect(clientAddress(req('10.0.0.5', '198.51.100.1'), proxies)).toBe('198.51.100.1');
    expect(clientAddress(req('10.0.0.5', '1.2.3.4, 198.51.100.1, 10.0.0.6'), proxies)).toBe('198.51.100.1');
    expect(clientAddress(req('10.0.0.5', 'forged, 198.51.100.1'), proxies)).toBe('198.51.100.1');
    expect(clientAddress(req('10.0.0.5', 'not-an-address'), proxies)).toBe('10.0.0.5');
    expect(clientAddress(req('10.0.0.5'), proxies)).toBe('10.0.0.5');
  });
});

describe.each(catalogEngines('gw-sign-in-', async (postgres) => openPostgres(await postgres.createDatabase())).engines)(
  'console sessions on %s',
  (_name, open) => {
    let db: CatalogDatabase;
    beforeAll(async () => {
      db = await open();
      await migrate(db);
    });
    afterAll(async () => {
      await db?.close();
    });

    it('stores, finds, touches and revokes a session, with its sign-in and sign-out in the audit log', async () => {
      const store = new DatabaseConsoleSessionStore(db);
      const at = Date.UTC(2030, 0, 1);
      const row = {
        idHash: 'a'.repeat(64),
        actor: 'console:admin-key:0123abcd',
        credential: 'mac-of-the-fingerprint',
        tokenIssuer: null,
        tokenSubject: null,
        tokenExpiresAt: null,
        createdAt: at,
        lastSeenAt: at,
        expiresAt: at + 60_000,
        revoked: false,
      };
      const event = { via: 'console', actor: row.actor, address: '198.51.100.7' } as const;
      await store.create(row, { ...event, action: 'sign_in' });
      expect(await store.find(row.idHash)).toEqual(row);
      await store.touch(row.idHash, at + 5_000);
      await store.touch(row.idHash, at + 1_000);
      expect((await store.find(row.idHash))?.lastSeenAt).toBe(at + 5_000);
      await store.revoke(row.idHash, { ...event, action: 'sign_out' });
      await store.revoke(row.idHash, { ...event, action: 'sign_out' });
      expect((await store.find(row.idHash))?.revoked).toBe(true);
      expect(await store.find('b'.repeat(64))).toBeUndefined();
      await store.recordSignIn({
        action: 'sign_in_failed',
        via: 'admin-api',
        actor: 'anonymous',
        address: '198.51.100.8',
        code: 'invalid_credentials',
      });
      const audit = await db.query<{ action: string; kind: string; slug: string; fields: string[] }>(
        'SELECT action, kind, slug, fields FROM gw_audit ORDER BY id',
      );
      expect(audit).toEqual([
        { action: 'sign_in', kind: 'console', slug: '198.51.100.7', fields: [] },
        { action: 'sign_out', kind: 'console', slug: '198.51.100.7', fields: [] },
        { action: 'sign_in_failed', kind: 'admin-api', slug: '198.51.100.8', fields: ['invalid_credentials'] },
      ]);
    });
  },
);

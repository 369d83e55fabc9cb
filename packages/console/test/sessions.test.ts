import { AdminAccess, MemoryConsoleSessionStore, type SignInAuditEvent } from '@gw/catalog';
import { ConsoleSessions, readCookie } from '../src';

const secret = Buffer.alloc(32, 9);
const KEY = 'sessions-test-admin-key-Zq8vN2rLw5Kp';
const access = new AdminAccess({ adminKey: KEY });

async function principal() {
  return access.authorize({ authorization: `Bearer ${KEY}` });
}

describe('console sessions', () => {
  it('reads back a session it created, with a CSRF token only it accepts', async () => {
    const sessions = new ConsoleSessions({ secret });
    const { session, cookie } = await sessions.create(await principal(), '127.0.0.1');
    expect(await sessions.read(cookie, access)).toMatchObject({ actor: session.actor, id: session.id });
    const token = sessions.csrfToken(session);
    expect(sessions.checkCsrf(session, token)).toBe(true);
    expect(sessions.checkCsrf(session, `${token}x`)).toBe(false);
    expect(sessions.checkCsrf(session, undefined)).toBe(false);
    const other = (await sessions.create(await principal(), '127.0.0.1')).session;
    expect(sessions.checkCsrf(other, token)).toBe(false);
  });

  it('refuses a forged, altered, unknown, expired or signed-out cookie', async () => {
    let now = 1_000_000;
    const events: SignInAuditEvent[] = [];
    const store = new MemoryConsoleSessionStore((event) => events.push(event));
    const sessions = new ConsoleSessions({ secret, lifetimeMs: 60_000, store, now: () => now, cacheMs: 0 });
    const { session, cookie } = await sessions.create(await principal(), '10.0.0.1');
    const [id, mac] = cookie.split('.') as [string, string];
    // One character changed (the first: the last of a base64url value may hold only padding bits,
    // and a random one may already be the replacement).
    const altered = (text: string) => `${text.startsWith('A') ? 'B' : 'A'}${text.slice(1)}`;
    expect(await sessions.read(`${altered(id)}.${mac}`, access)).toBeUndefined();
    expect(await sessions.read(`${id}.${altered(mac)}`, access)).toBeUndefined();
    expect(await new ConsoleSessions({ secret: Buffer.alloc(32, 1), store }).read(cookie, access)).toBeUndefined();
    expect(
      await new ConsoleSessions({ secret, store: new MemoryConsoleSessionStore() }).read(cookie, access),
    ).toBeUndefined();
    expect(await sessions.read('no-dot', access)).toBeUndefined();
    expect(await sessions.read('x'.repeat(2000), access)).toBeUndefined();
    now += 60_000;
    expect(await sessions.read(cookie, access)).toBeUndefined();
    now -= 30_000;
    expect(await sessions.read(cookie, access)).toBeDefined();
    await sessions.revoke(session, '10.0.0.1');
    expect(await sessions.read(cookie, access)).toBeUndefined();
    expect(events.map((e) => [e.action, e.address])).toEqual([
      ['sign_in', '10.0.0.1'],
      ['sign_out', '10.0.0.1'],
    ]);
  });

  it('refuses bad options with what to write, and reads one cookie among several', () => {
    expect(() => new ConsoleSessions({ secret: Buffer.alloc(16) })).toThrow(/at least 32 bytes/);
    expect(() => new ConsoleSessions({ secret, idleTimeoutMs: 0 })).toThrow(/idleTimeoutMs must be a positive/);
    expect(() => new ConsoleSessions({ secret, cacheMs: 5_000 })).toThrow(
      /cacheMs must be a whole number .* 0 to 1000/,
    );
    expect(() => new ConsoleSessions({ secret, store: {} as never })).toThrow(/store must be a ConsoleSessionStore/);
    expect(readCookie('a=1; gw_console=abc.def; b=2', 'gw_console')).toBe('abc.def');
    expect(readCookie('gw_consolex=1', 'gw_console')).toBeUndefined();
  });
});

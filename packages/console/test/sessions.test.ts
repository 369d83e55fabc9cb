import { ConsoleSessions, readCookie } from '../src';

const secret = Buffer.alloc(32, 9);

describe('console sessions', () => {
  it('reads back a session it created, with a CSRF token only it accepts', () => {
    const sessions = new ConsoleSessions({ secret });
    const { session, cookie } = sessions.create('console:admin-key');
    expect(sessions.read(cookie)).toEqual(session);
    const token = sessions.csrfToken(session);
    expect(sessions.checkCsrf(session, token)).toBe(true);
    expect(sessions.checkCsrf(session, `${token}x`)).toBe(false);
    expect(sessions.checkCsrf(session, undefined)).toBe(false);
    const other = sessions.create('console:admin-key').session;
    expect(sessions.checkCsrf(other, token)).toBe(false);
  });

  it('refuses a forged, altered, expired or signed-out cookie', () => {
    let now = 1_000_000;
    const sessions = new ConsoleSessions({ secret, lifetimeMs: 60_000, now: () => now });
    const { session, cookie } = sessions.create('console:admin-key');
    const [payload, mac] = cookie.split('.') as [string, string];
    const forged = Buffer.from(JSON.stringify(['console:someone-else', now + 60_000, session.nonce])).toString(
      'base64url',
    );
    expect(sessions.read(`${forged}.${mac}`)).toBeUndefined();
    expect(sessions.read(`${payload}.${mac.slice(0, -1)}A`)).toBeUndefined();
    expect(new ConsoleSessions({ secret: Buffer.alloc(32, 1) }).read(cookie)).toBeUndefined();
    expect(sessions.read('no-dot')).toBeUndefined();
    expect(sessions.read('x'.repeat(2000))).toBeUndefined();
    now += 60_000;
    expect(sessions.read(cookie)).toBeUndefined();
    now -= 30_000;
    expect(sessions.read(cookie)).toBeDefined();
    sessions.revoke(session);
    expect(sessions.read(cookie)).toBeUndefined();
  });

  it('refuses a short secret, and reads one cookie among several', () => {
    expect(() => new ConsoleSessions({ secret: Buffer.alloc(16) })).toThrow(/at least 32 bytes/);
    expect(readCookie('a=1; gw_console=abc.def; b=2', 'gw_console')).toBe('abc.def');
    expect(readCookie('gw_consolex=1', 'gw_console')).toBeUndefined();
  });
});

import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AdminAccess, createAdminApi, withAdminPrincipal } from '@gw/catalog';
import {
  call,
  embeddedCatalog,
  signIn,
  startConsole,
  testToken,
  verifyTestToken,
  type ConsoleInstance,
} from './support';

jest.setTimeout(60_000);

const prompt = (id: string) => ({
  id,
  provider: 'anthropic',
  model: 'claude-sonnet-4-5',
  messages: [{ role: 'user', content: 'Hello {{name}}' }],
});
const newKey = () => `console-admin-${randomBytes(18).toString('base64url')}`;
let catalog: Awaited<ReturnType<typeof embeddedCatalog>>;
const instances: ConsoleInstance[] = [];
let now = Date.now();
const clock = () => now;

beforeAll(async () => {
  catalog = await embeddedCatalog();
});
afterEach(async () => {
  await Promise.all(instances.splice(0).map((i) => i.close()));
  now = Date.now();
});
afterAll(async () => {
  await catalog?.close();
});

async function instance(...args: Parameters<typeof startConsole> extends [unknown, ...infer R] ? R : never) {
  const started = await startConsole(catalog, ...args);
  instances.push(started);
  return started;
}

const session = (base: string, cookie: string) => call(base, 'GET', '/console/session', { headers: { cookie } });

describe('console sessions kept in the catalog database', () => {
  it('ends a session left unused for its idle lifetime, and any session at its absolute lifetime', async () => {
    const key = newKey();
    const a = await instance(
      { adminKey: key },
      { now: clock, sessionIdleTimeoutMs: 60_000, sessionLifetimeMs: 300_000 },
    );
    const idle = await signIn(a.base, key);
    now += 59_000;
    expect((await session(a.base, idle.cookie)).status).toBe(200);
    now += 59_000; // used 59 s ago: still within its idle lifetime
    expect((await session(a.base, idle.cookie)).status).toBe(200);
    now += 60_000;
    const ended = await session(a.base, idle.cookie);
    expect([ended.status, ended.body.error.code]).toEqual([401, 'missing_credentials']);

    const busy = await signIn(a.base, key);
    const start = now;
    while (now - start < 299_000) {
      now = Math.min(now + 50_000, start + 299_000);
      expect((await session(a.base, busy.cookie)).status).toBe(200);
    }
    now = start + 300_000;
    expect((await session(a.base, busy.cookie)).status).toBe(401);
  });

  it('refuses on instance B, within 1 s, a session signed out on instance A', async () => {
    const key = newKey();
    const [a, b] = [await instance({ adminKey: key }), await instance({ adminKey: key })];
    const signed = await signIn(a.base, key);
    expect((await session(b.base, signed.cookie)).status).toBe(200);
    const out = await call(a.base, 'DELETE', '/console/session', {
      headers: { cookie: signed.cookie, 'x-csrf-token': signed.csrf },
    });
    expect(out.status).toBe(200);
    const signedOutAt = Date.now();
    let status = 200;
    while (status === 200 && Date.now() - signedOutAt < 2_000) {
      status = (await session(b.base, signed.cookie)).status;
      if (status === 200) await new Promise((r) => setTimeout(r, 50));
    }
    expect(status).toBe(401);
    expect(Date.now() - signedOutAt).toBeLessThanOrEqual(1_100);
    expect((await call(b.base, 'GET', '/console/api/providers', { headers: { cookie: signed.cookie } })).status).toBe(
      401,
    );
  });

  it('ends every session when the admin key changes, and answers admin_disabled when there is none', async () => {
    const key = newKey();
    const signed = await signIn((await instance({ adminKey: key })).base, key);
    // The same database after a restart with another key, and after one without any.
    const rotated = await instance({ adminKey: newKey() });
    expect((await session(rotated.base, signed.cookie)).status).toBe(401);
    expect(
      (await call(rotated.base, 'GET', '/console/api/providers', { headers: { cookie: signed.cookie } })).status,
    ).toBe(401);
    const none = await instance({});
    for (const path of ['/console/session', '/console/api/providers']) {
      const answer = await call(none.base, 'GET', path, { headers: { cookie: signed.cookie } });
      expect([answer.status, answer.body.error.code]).toEqual([403, 'admin_disabled']);
    }
    const create = await call(none.base, 'POST', '/console/api/api-keys', {
      headers: { cookie: signed.cookie, 'x-csrf-token': signed.csrf },
      body: { user: { user_id: 'u-1' } },
    });
    expect([create.status, create.body.error.code]).toEqual([403, 'admin_disabled']);
    // Ended for good, on every instance: going back to the first key does not bring it back.
    expect((await session((await instance({ adminKey: key })).base, signed.cookie)).status).toBe(401);
  });

  it('the admin API refuses a principal the host vouches for when admin access is disabled', async () => {
    const api = createAdminApi({ store: catalog.store, access: new AdminAccess({}) });
    const req = { method: 'GET', headers: {}, socket: { remoteAddress: '127.0.0.1' } } as unknown as IncomingMessage;
    withAdminPrincipal(req, { actor: 'console:admin-key:00000000' });
    const answer: { status?: number; body?: string } = {};
    const res = {
      headersSent: false,
      statusCode: 200,
      setHeader: () => undefined,
      end(this: { statusCode: number }, text: string) {
        answer.status = this.statusCode;
        answer.body = text;
      },
    } as unknown as ServerResponse;
    await api(req, res, '/api-keys');
    expect(answer.status).toBe(403);
    expect(JSON.parse(answer.body as string).error.code).toBe('admin_disabled');
  });

  it('ends a session opened with an identity-provider token at the token expiry', async () => {
    const access = {
      adminClaim: { claim: 'groups', value: 'gateway-admin' },
      verifyToken: verifyTestToken(clock),
    };
    const a = await instance(access, { now: clock });
    const token = testToken({
      iss: 'https://idp.test/',
      sub: 'ops-1',
      groups: ['gateway-admin'],
      exp: Math.floor(now / 1000) + 120,
    });
    const signed = await signIn(a.base, token);
    expect(signed.actor).toBe('console:token:https://idp.test/#ops-1');
    expect(Date.parse(signed.answer.body.expiresAt)).toBe(Math.floor(now / 1000) * 1000 + 120_000);
    now = Math.floor(now / 1000) * 1000 + 119_000;
    expect((await session(a.base, signed.cookie)).status).toBe(200);
    now += 1_000;
    expect((await session(a.base, signed.cookie)).status).toBe(401);

    const noExpiry = await call(a.base, 'POST', '/console/session', {
      body: { credential: testToken({ iss: 'https://idp.test/', sub: 'ops-2', groups: ['gateway-admin'] }) },
    });
    expect([noExpiry.status, noExpiry.body.error.code]).toEqual([401, 'invalid_credentials']);
    // A changed admin claim rule ends token sessions too.
    const again = await signIn(
      a.base,
      testToken({ iss: 'i', sub: 's', groups: ['gateway-admin'], exp: now / 1000 + 600 }),
    );
    const other = await instance(
      { adminClaim: { claim: 'groups', value: 'other-admins' }, verifyToken: verifyTestToken(clock) },
      { now: clock },
    );
    expect((await session(other.base, again.cookie)).status).toBe(401);
  });

  it('names each admin key as an actor of its own, writes sign-ins, refusals and sign-outs to the audit log, never a credential', async () => {
    const [key, otherKey] = [newKey(), newKey()];
    const a = await instance({ adminKey: key });
    const b = await instance({ adminKey: otherKey });
    const first = await signIn(a.base, key);
    const second = await signIn(b.base, otherKey);
    expect(first.actor).toMatch(/^console:admin-key:[0-9a-f]{8}$/);
    expect(second.actor).toMatch(/^console:admin-key:[0-9a-f]{8}$/);
    expect(first.actor).not.toBe(second.actor);
    const wrong = `wrong-${randomBytes(18).toString('base64url')}`;
    expect((await call(a.base, 'POST', '/console/session', { body: { credential: wrong } })).status).toBe(401);
    await call(a.base, 'DELETE', '/console/session', { headers: { cookie: first.cookie, 'x-csrf-token': first.csrf } });
    // A write through the console names the console session's actor.
    await call(b.base, 'POST', '/console/api/prompts', {
      headers: { cookie: second.cookie, 'x-csrf-token': second.csrf },
      body: prompt('audited'),
    });
    let log: Awaited<ReturnType<typeof catalog.store.auditLog>> = [];
    for (let i = 0; i < 20 && !log.some((e) => (e.action as string) === 'sign_in_failed'); i++) {
      log = await catalog.store.auditLog(undefined, 50);
      await new Promise((r) => setTimeout(r, 25));
    }
    const mine = log.filter((e) => e.record === 'console/127.0.0.1');
    expect(mine.map((e) => [e.action, e.actor])).toEqual(
      expect.arrayContaining([
        ['sign_in', first.actor],
        ['sign_in', second.actor],
        ['sign_out', first.actor],
        ['sign_in_failed', 'anonymous'],
      ]),
    );
    expect(mine.find((e) => (e.action as string) === 'sign_in_failed')?.fields).toEqual(['invalid_credentials']);
    const promptLog = await catalog.store.auditLog('prompts/audited');
    expect(promptLog[0]?.actor).toBe(second.actor);
    const everything =
      JSON.stringify(await catalog.db.query('SELECT * FROM gw_audit')) +
      JSON.stringify(await catalog.db.query('SELECT * FROM gw_console_sessions'));
    for (const secret of [key, otherKey, wrong, first.cookie.split('=')[1] as string, first.csrf]) {
      expect(everything).not.toContain(secret);
      expect(everything).not.toContain((secret.split('.')[0] as string).slice(0, 20));
    }
  });
});

import { randomBytes } from 'node:crypto';
import { AdminAccess, createAdminApi } from '@gw/catalog';
import { createConsole, type ConsoleOAuthAdminRequest } from '../src';
import { SESSION_SECRET, call, embeddedCatalog, signIn, startConsole, type ConsoleInstance } from './support';

jest.setTimeout(60_000);

const KEY = `console-admin-${randomBytes(18).toString('base64url')}`;
let catalog: Awaited<ReturnType<typeof embeddedCatalog>>;
let withOAuth: ConsoleInstance;
let withoutOAuth: ConsoleInstance;
const seen: ConsoleOAuthAdminRequest[] = [];

beforeAll(async () => {
  catalog = await embeddedCatalog();
  withOAuth = await startConsole(
    catalog,
    { adminKey: KEY, throttle: false },
    {
      oauthAdmin: async (request) => {
        seen.push(request);
        return { status: 200, body: { object: 'list', data: [{ path: request.path }] } };
      },
    },
  );
  withoutOAuth = await startConsole(catalog, { adminKey: KEY, throttle: false });
});
afterAll(async () => {
  await withOAuth?.close();
  await withoutOAuth?.close();
  await catalog?.close();
});

describe("the console's OAuth operator routes (/console/api/oauth/…)", () => {
  it('refuses an oauthAdmin that is not a function when the console is created', () => {
    const access = new AdminAccess({ adminKey: KEY, throttle: false });
    const adminApi = createAdminApi({ store: catalog.store, access });
    expect(() => createConsole({ access, adminApi, sessionSecret: SESSION_SECRET, oauthAdmin: 'on' as never })).toThrow(
      /oauthAdmin must be a function/,
    );
  });

  it('passes the method, the path below /oauth, the query and the signed-in admin; the session says oauth is on', async () => {
    const signed = await signIn(withOAuth.base, KEY);
    expect(signed.answer.body.oauth).toBe(true);
    const answer = await call(withOAuth.base, 'GET', '/console/api/oauth/grants?user=u%201', {
      headers: { cookie: signed.cookie },
    });
    expect([answer.status, answer.body.data]).toEqual([200, [{ path: '/grants' }]]);
    const request = seen.at(-1) as ConsoleOAuthAdminRequest;
    expect([request.method, request.path, request.query.get('user'), request.actor]).toEqual([
      'GET',
      '/grants',
      'u 1',
      signed.actor,
    ]);
  });

  it('needs a session, and the CSRF token for a revoke, before anything reaches the OAuth routes', async () => {
    const signed = await signIn(withOAuth.base, KEY);
    const before = seen.length;
    const path = '/console/api/oauth/grants/00000000-0000-4000-8000-000000000000';
    expect((await call(withOAuth.base, 'GET', '/console/api/oauth/clients')).status).toBe(401);
    for (const headers of [
      { cookie: signed.cookie },
      { cookie: signed.cookie, 'x-csrf-token': `${signed.csrf}x` },
    ] as Record<string, string>[]) {
      const refused = await call(withOAuth.base, 'DELETE', path, { headers });
      expect([refused.status, refused.body.error.code]).toEqual([403, 'csrf_token_invalid']);
    }
    expect(seen.length).toBe(before);
    const done = await call(withOAuth.base, 'DELETE', path, {
      headers: { cookie: signed.cookie, 'x-csrf-token': signed.csrf },
    });
    expect(done.status).toBe(200);
    expect(seen.at(-1)?.method).toBe('DELETE');
  });

  it('answers 404 oauth_disabled without oauthAdmin, and the session says oauth is off', async () => {
    const signed = await signIn(withoutOAuth.base, KEY);
    expect(signed.answer.body.oauth).toBe(false);
    const answer = await call(withoutOAuth.base, 'GET', '/console/api/oauth/clients', {
      headers: { cookie: signed.cookie },
    });
    expect([answer.status, answer.body.error.code]).toEqual([404, 'oauth_disabled']);
  });
});

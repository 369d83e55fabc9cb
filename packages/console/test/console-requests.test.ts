import { randomBytes } from 'node:crypto';
import { SignInThrottle } from '@gw/catalog';
import { call, embeddedCatalog, signIn, startConsole, type ConsoleInstance } from './support';

jest.setTimeout(60_000);

const KEY = `console-admin-${randomBytes(18).toString('base64url')}`;
let catalog: Awaited<ReturnType<typeof embeddedCatalog>>;
let gateway: ConsoleInstance;
let signed: Awaited<ReturnType<typeof signIn>>;

beforeAll(async () => {
  catalog = await embeddedCatalog();
  gateway = await startConsole(catalog, { adminKey: KEY, throttle: false });
  signed = await signIn(gateway.base, KEY);
});
afterAll(async () => {
  await gateway?.close();
  await catalog?.close();
});

const prompt = (id: string) => ({
  id,
  provider: 'anthropic',
  model: 'claude-sonnet-4-5',
  messages: [{ role: 'user', content: 'Hello {{name}}' }],
});

/** Each state-changing console call, with a body the admin API takes. */
const CHANGES: [string, string, unknown][] = [
  ['POST', '/console/api/prompts', prompt('csrf-probe')],
  ['PATCH', '/console/api/prompts/csrf-probe', { version: 1, model: 'claude-haiku-4-5' }],
  ['DELETE', '/console/api/prompts/csrf-probe', undefined],
];

describe('console requests', () => {
  it.each(CHANGES)('%s %s needs the session CSRF token', async (method, path, body) => {
    for (const token of [undefined, '', `${signed.csrf}x`, signed.csrf.slice(0, -1)]) {
      const refused = await call(gateway.base, method, path, {
        headers: { cookie: signed.cookie, ...(token === undefined ? {} : { 'x-csrf-token': token }) },
        body,
      });
      expect([refused.status, refused.body.error?.code]).toEqual([403, 'csrf_token_invalid']);
    }
    const done = await call(gateway.base, method, path, {
      headers: { cookie: signed.cookie, 'x-csrf-token': signed.csrf },
      body,
    });
    expect(done.status).toBeLessThan(300);
  });

  it('signing out needs the CSRF token too', async () => {
    const other = await signIn(gateway.base, KEY);
    const refused = await call(gateway.base, 'DELETE', '/console/session', { headers: { cookie: other.cookie } });
    expect([refused.status, refused.body.error.code]).toEqual([403, 'csrf_token_invalid']);
    expect((await call(gateway.base, 'GET', '/console/session', { headers: { cookie: other.cookie } })).status).toBe(
      200,
    );
  });

  it('compares whole origins: a look-alike host or another scheme is refused', async () => {
    const host = new URL(gateway.base).host;
    const lookAlikes = [
      `http://${host}.evil.com`,
      `http://${host}@evil.com`,
      `https://${host}`,
      `http://${host.split(':')[0]}`,
      `http://${host}/`,
      `HTTP://${host}x`,
      'null',
    ];
    for (const origin of lookAlikes) {
      const answer = await call(gateway.base, 'POST', '/console/api/prompts', {
        headers: { cookie: signed.cookie, 'x-csrf-token': signed.csrf, origin },
        body: prompt('from-elsewhere'),
      });
      expect([origin, answer.status, answer.body.error?.code]).toEqual([origin, 403, 'cross_origin_refused']);
    }
    const sameSite = await call(gateway.base, 'POST', '/console/api/prompts', {
      headers: { cookie: signed.cookie, 'x-csrf-token': signed.csrf, origin: gateway.base },
      body: prompt('from-here'),
    });
    expect(sameSite.status).toBe(201);
    const crossSite = await call(gateway.base, 'POST', '/console/api/prompts', {
      headers: { cookie: signed.cookie, 'x-csrf-token': signed.csrf, 'sec-fetch-site': 'cross-site' },
      body: prompt('cross-site'),
    });
    expect(crossSite.status).toBe(403);
  });

  it('answers 400 invalid_path, not 500, for a test path with bad percent-encoding', async () => {
    for (const slug of ['%E0%A4%A', '%', 'a%zz', '%C0%80']) {
      const answer = await call(gateway.base, 'POST', `/console/api/test/providers/${slug}`, {
        headers: { cookie: signed.cookie, 'x-csrf-token': signed.csrf },
      });
      expect([slug, answer.status, answer.body.error?.code]).toEqual([slug, 400, 'invalid_path']);
    }
    const fine = await call(gateway.base, 'POST', '/console/api/test/providers/claude%2Dprod', {
      headers: { cookie: signed.cookie, 'x-csrf-token': signed.csrf },
    });
    expect(fine.status).toBe(200);
  });
});

describe('failed sign-ins', () => {
  it('are slowed down per address after five: 429 too_many_attempts with retry-after, growing, the right key refused meanwhile', async () => {
    let now = Date.now();
    const throttled = await startConsole(catalog, {
      adminKey: KEY,
      throttle: new SignInThrottle({ now: () => now }),
    });
    try {
      const attempt = (credential: string) =>
        call(throttled.base, 'POST', '/console/session', { body: { credential } });
      for (let i = 0; i < 5; i++) expect((await attempt(`wrong-key-${i}-${'x'.repeat(20)}`)).status).toBe(401);
      // The sixth is still answered, and starts a wait of 1 s.
      expect((await attempt(`wrong-key-5-${'x'.repeat(20)}`)).status).toBe(401);
      let refused = await attempt(KEY);
      expect([refused.status, refused.body.error.code, refused.headers['retry-after']]).toEqual([
        429,
        'too_many_attempts',
        '1',
      ]);
      now += 1_000;
      expect((await attempt(`wrong-key-6-${'x'.repeat(20)}`)).status).toBe(401);
      refused = await attempt(KEY);
      expect([refused.status, refused.headers['retry-after']]).toEqual([429, '2']);
      now += 2_000;
      expect((await attempt(KEY)).status).toBe(200);
      // A success forgets the address's failures.
      expect((await attempt(`wrong-key-7-${'x'.repeat(20)}`)).status).toBe(401);

      // The admin API's bearer credential counts the same way.
      const started = Date.now();
      const statuses: number[] = [];
      for (let i = 0; i < 200; i++) {
        const answer = await call(throttled.base, 'GET', '/admin/v1/providers', {
          headers: { authorization: `Bearer wrong-admin-key-${i}-${'y'.repeat(16)}` },
        });
        statuses.push(answer.status);
        if (answer.status === 429) expect(answer.headers['retry-after']).toMatch(/^\d+$/);
      }
      expect(statuses.slice(0, 4)).toEqual([401, 401, 401, 401]);
      expect(statuses.filter((s) => s === 401).length).toBeLessThanOrEqual(5);
      expect(statuses.at(-1)).toBe(429);
      expect(Date.now() - started).toBeLessThan(30_000);
    } finally {
      await throttled.close();
    }
  });
});

describe("the page script's modules", () => {
  it('serves each module of lib/ and pages/ as JavaScript under the CSP, and nothing else by that route', async () => {
    for (const path of ['/console/console.js', '/console/lib/forms.js', '/console/pages/keys.js']) {
      const answer = await call(gateway.base, 'GET', path);
      expect({ path, status: answer.status }).toEqual({ path, status: 200 });
      expect(answer.headers['content-type']).toBe('text/javascript; charset=utf-8');
      expect(answer.headers['content-security-policy']).toContain("script-src 'self'");
    }
    const entry = await call(gateway.base, 'GET', '/console/console.js');
    expect(String(entry.body)).toContain("from './pages/keys.js'");
    for (const path of [
      '/console/pages/nope.js',
      '/console/pages/keys.ts',
      '/console/other/keys.js',
      '/console/lib/Forms.js',
    ]) {
      const answer = await call(gateway.base, 'GET', path);
      expect({ path, status: answer.status }).toEqual({ path, status: 404 });
    }
    expect(
      (await call(gateway.base, 'POST', '/console/lib/forms.js', { headers: { cookie: signed.cookie } })).status,
    ).toBe(405);
  });
});

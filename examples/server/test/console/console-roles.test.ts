/**
 * Named admins: the console signs in at the company's OpenID Provider (panva's oidc-provider on
 * 127.0.0.1) with the same `oauth.login` settings as the OAuth sign-in, roles mapped from a claim
 * (`adminRoles`), enforced by the admin API the console calls; the audit names the person.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rsaPem, startGateway, writeConfig, type RunningGateway } from '../support';
import { CookieJar, freePort, startOidcProvider, type OidcProviderProcess } from '../oauth/oauth-support';
import { newAdminKey, newEncryptionKey } from '../catalog/catalog-support';
import { expectMatchesOpenApi } from '../../../../packages/catalog/test/openapi';

jest.setTimeout(90_000);

const CLIENT_ID = 'gateway-console';
const CLIENT_SECRET = 'console-roles-client-secret-3b9e';

/**
 * Plays the browser from the provider's authorization URL: signs in as `login` on its login form,
 * approves its consent form, and stops at the redirect back to `callbackPrefix`. At most 20 steps.
 */
async function signInAtProvider(login: string, authorizationUrl: string, callbackPrefix: string): Promise<URL> {
  const cookies = new Map<string, string>();
  let request: { url: string; init: RequestInit } = { url: authorizationUrl, init: { method: 'GET' } };
  for (let step = 0; step < 20; step++) {
    const res = await fetch(request.url, {
      ...request.init,
      redirect: 'manual',
      headers: {
        ...(request.init.headers as Record<string, string>),
        cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; '),
      },
    });
    for (const set of res.headers.getSetCookie()) {
      const [pair] = set.split(';');
      const eq = (pair as string).indexOf('=');
      const value = (pair as string).slice(eq + 1).trim();
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(set)) cookies.delete((pair as string).slice(0, eq).trim());
      else cookies.set((pair as string).slice(0, eq).trim(), value);
    }
    const location = res.headers.get('location');
    if (res.status >= 300 && res.status < 400 && location) {
      await res.arrayBuffer();
      const next = new URL(location, request.url);
      if (next.href.startsWith(callbackPrefix)) return next;
      request = { url: next.href, init: { method: 'GET' } };
      continue;
    }
    const html = await res.text();
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    const prompt = /name="prompt" value="([^"]+)"/.exec(html)?.[1];
    if (res.status !== 200 || !action || !prompt) throw new Error(`unexpected provider page (${res.status})`);
    const form = new URLSearchParams({ prompt });
    if (prompt === 'login') {
      form.set('login', login);
      form.set('password', 'any password');
    }
    request = {
      url: new URL(action.replace(/&amp;/g, '&'), request.url).href,
      init: { method: 'POST', body: form.toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } },
    };
  }
  throw new Error('the sign-in did not come back within 20 steps');
}

describe('console sign-in at the OpenID Provider, with roles', () => {
  let idp: OidcProviderProcess;
  let gateway: RunningGateway;
  let base: string;
  const adminKey = newAdminKey();

  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    idp = await startOidcProvider({
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      redirectUri: `${base}/console/oidc/callback`,
    });
    gateway = await startGateway({
      GATEWAY_CONFIG: writeConfig({
        auth: { apiKeys: [{ key: 'gw-console-roles-caller-01', user: { user_id: 'u-1' } }] },
        oauth: { login: { type: 'oidc', issuer: idp.issuer, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET } },
        adminRoles: { claim: 'preferred_username', admin: ['alice'], operator: ['olivia'], viewer: ['victor'] },
      }),
      PORT: String(port),
      PUBLIC_BASE_URL: base,
      JWT_PRIVATE_KEY: rsaPem().privateKey,
      GATEWAY_ADMIN_KEY: adminKey,
      GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
    });
  });

  afterAll(async () => {
    await gateway?.stop();
    await idp?.stop();
  });

  /** Signs `login` in to the console; the cookie jar and the session's answer. */
  async function signIn(login: string): Promise<{ jar: CookieJar; session: Record<string, string> }> {
    const jar = new CookieJar();
    const start = await fetch(`${base}/console/oidc/start`, { redirect: 'manual' });
    expect(start.status).toBe(303);
    jar.take(start);
    const callback = await signInAtProvider(
      login,
      start.headers.get('location') as string,
      `${base}/console/oidc/callback`,
    );
    const back = await fetch(callback, { redirect: 'manual', headers: { cookie: jar.header() } });
    jar.take(back);
    if (back.status !== 303) return { jar, session: { status: String(back.status), page: await back.text() } };
    expect(back.headers.get('location')).toBe('/console/');
    const session = (await (
      await fetch(`${base}/console/session`, { headers: { cookie: jar.header() } })
    ).json()) as Record<string, string>;
    return { jar, session };
  }

  /** A console API call as the signed-in person (with the session's CSRF token). */
  async function call(
    who: { jar: CookieJar; session: Record<string, string> },
    method: string,
    path: string,
    body?: unknown,
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
  ): Promise<{ status: number; body: any }> {
    const res = await fetch(`${base}/console/api${path}`, {
      method,
      headers: {
        cookie: who.jar.header(),
        'x-csrf-token': who.session.csrfToken as string,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    const parsed = text === '' ? undefined : JSON.parse(text);
    if (!path.startsWith('/oauth')) expectMatchesOpenApi(method, `/admin/v1${path.split('?')[0]}`, res.status, parsed);
    return { status: res.status, body: parsed };
  }

  it('says the provider sign-in is on, for the sign-in page', async () => {
    const answer = await (await fetch(`${base}/console/oidc`)).json();
    expect(answer).toEqual({ enabled: true, name: new URL(idp.issuer).host, startUrl: '/console/oidc/start' });
  });

  it('a viewer reads but changes nothing (403 role_forbidden)', async () => {
    const victor = await signIn('victor');
    expect(victor.session).toMatchObject({
      signedIn: true,
      role: 'viewer',
      actor: `console:oidc:${idp.issuer}#victor`,
    });
    expect((await call(victor, 'GET', '/providers')).status).toBe(200);
    expect((await call(victor, 'GET', '/access/mode')).status).toBe(200);
    for (const [method, path, body] of [
      ['POST', '/policies', { slug: 'v', subjects: { users: ['u'] }, allow: { models: ['*'] } }],
      ['POST', '/api-keys', { user: { user_id: 'u-v' } }],
      ['PUT', '/access/mode', { mode: 'policies' }],
      ['DELETE', '/api-keys/config-0000', undefined],
    ] as const) {
      const answer = await call(victor, method, path, body);
      expect([method, path, answer.status, answer.body.error.code]).toEqual([method, path, 403, 'role_forbidden']);
    }
    const oauth = await call(victor, 'PUT', '/oauth/settings', { login: { type: 'api_key' } });
    expect([oauth.status, oauth.body.error.code]).toEqual([403, 'role_forbidden']);
  });

  it('an operator changes the catalog but not the gateway settings', async () => {
    const olivia = await signIn('olivia');
    expect(olivia.session.role).toBe('operator');
    const created = await call(olivia, 'POST', '/policies', {
      slug: 'olivias',
      subjects: { users: ['u-1'] },
      allow: { models: ['*'] },
    });
    expect(created.status).toBe(201);
    const mode = await call(olivia, 'PUT', '/access/mode', { mode: 'report' });
    expect([mode.status, mode.body.error.code]).toEqual([403, 'role_forbidden']);
    const oauth = await call(olivia, 'PUT', '/oauth/settings', { login: { type: 'api_key' } });
    expect([oauth.status, oauth.body.error.code]).toEqual([403, 'role_forbidden']);
    // The audit names the person who signed in.
    const audit = await call(olivia, 'GET', '/audit?record=policies/olivias');
    expect(audit.body.data[0]).toMatchObject({ action: 'create', actor: `console:oidc:${idp.issuer}#olivia` });
  });

  it('an operator cannot send a stored provider key or AWS secret to a host of their choosing', async () => {
    // Two hosts on 127.0.0.1 that record every request's headers: the one the key was given for, and another.
    const seen: Record<'sealedFor' | 'other', string[]> = { sealedFor: [], other: [] };
    const listen = (name: keyof typeof seen) => {
      const server = createServer((req, res) => {
        seen[name].push(JSON.stringify(req.headers));
        req.resume();
        req.on('end', () => {
          res.setHeader('content-type', 'application/json');
          res.end(JSON.stringify({ input_tokens: 3 }));
        });
      });
      return new Promise<Server>((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
    };
    const hosts = { sealedFor: await listen('sealedFor'), other: await listen('other') };
    const urlOf = (server: Server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const KEY = 'sk-ant-admin-only-secret-7d1c';
    const AWS_SECRET = 'aws/admin-only+secret/7d1c';
    try {
      const asAdmin = (method: string, path: string, body?: unknown) =>
        fetch(`${base}/admin/v1${path}`, {
          method,
          headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
      expect(
        (
          await asAdmin('POST', '/providers', {
            slug: 'walk-claude',
            provider: 'anthropic',
            apiKey: KEY,
            baseUrl: urlOf(hosts.sealedFor),
          })
        ).status,
      ).toBe(201);
      expect(
        (
          await asAdmin('POST', '/providers', {
            slug: 'walk-kb',
            provider: 'bedrock',
            accessKeyId: 'AKIAWALKADMINONLY',
            secretAccessKey: AWS_SECRET,
            region: 'us-east-1',
            allowedHosts: [urlOf(hosts.sealedFor)],
          })
        ).status,
      ).toBe(201);
      const olivia = await signIn('olivia');
      // Each field that says where the secrets go, changed alone: refused, naming the secret to give again.
      const moves: [string, Record<string, unknown>, string][] = [
        ['walk-claude', { baseUrl: urlOf(hosts.other) }, 'apiKey'],
        ['walk-kb', { allowedHosts: [urlOf(hosts.other)] }, 'accessKeyId'],
        ['walk-kb', { region: 'eu-west-3' }, 'accessKeyId'],
      ];
      for (const [slug, change, secret] of moves) {
        const refused = await call(olivia, 'PATCH', `/providers/${slug}`, { version: 1, ...change });
        expect([refused.status, refused.body.error.code, refused.body.error.param]).toEqual([
          400,
          'invalid_request',
          secret,
        ]);
      }
      // The operator's Test calls still reach only the host the secrets were given for.
      await runTest(olivia, 'walk-claude');
      await runTest(olivia, 'walk-kb');
      expect(seen.sealedFor.some((h) => h.includes(KEY))).toBe(true);
      expect(seen.other).toEqual([]);
      // With a key of their own, the operator may point the provider anywhere: only that key goes there.
      const own = await call(olivia, 'PATCH', '/providers/walk-claude', {
        version: 1,
        baseUrl: urlOf(hosts.other),
        apiKey: 'sk-ant-operators-own-key-0001',
      });
      expect(own.status).toBe(200);
      await runTest(olivia, 'walk-claude');
      expect(seen.other.some((h) => h.includes('sk-ant-operators-own-key-0001'))).toBe(true);
      expect(seen.other.join('\n')).not.toContain(KEY);
      expect(seen.other.join('\n')).not.toContain(AWS_SECRET);
    } finally {
      await asAdminDelete(['walk-claude', 'walk-kb']);
      hosts.sealedFor.close();
      hosts.other.close();
    }
  });

  /** The console's Test button for a provider, as `who`. */
  const runTest = (who: { jar: CookieJar; session: Record<string, string> }, slug: string) =>
    fetch(`${base}/console/api/test/providers/${slug}`, {
      method: 'POST',
      headers: { cookie: who.jar.header(), 'x-csrf-token': who.session.csrfToken as string },
    }).then((res) => res.text());

  const asAdminDelete = async (slugs: string[]) => {
    for (const slug of slugs)
      await fetch(`${base}/admin/v1/providers/${slug}`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${adminKey}` },
      });
  };

  it('an admin changes the gateway settings, named in the audit', async () => {
    const alice = await signIn('alice');
    expect(alice.session.role).toBe('admin');
    const mode = await call(alice, 'PUT', '/access/mode', { mode: 'report' });
    expect(mode.status).toBe(200);
    const audit = await call(alice, 'GET', '/audit?record=settings/access-mode');
    expect(audit.body.data[0].actor).toBe(`console:oidc:${idp.issuer}#alice`);
  });

  it('someone the claim gives no role gets no session', async () => {
    const mallory = await signIn('mallory');
    expect(mallory.session.status).toBe('403');
    expect(mallory.session.page).toContain('role_required');
    expect(mallory.jar.header()).not.toContain('gw_console=');
  });

  it('a callback without a started sign-in is refused', async () => {
    const res = await fetch(`${base}/console/oidc/callback?code=x&state=y`, { redirect: 'manual' });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('login_state_mismatch');
  });
});

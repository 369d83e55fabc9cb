/**
 * The gateway's sign-in at a real OpenID Provider (panva's oidc-provider, run on 127.0.0.1 by
 * oidc-login-provider.mjs), its login and consent pages driven with plain HTTP form posts.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { OidcLogin, OidcLoginError, callerClaimsFromIdToken, type OidcLoginOptions } from '../src';

const REDIRECT_URI = 'http://127.0.0.1:9/oauth/callback';
const CLIENT_ID = 'gateway';
const CLIENT_SECRET = 'oidc-login-test-client-secret-5f2c';

interface ProviderProcess {
  issuer: string;
  stop(): Promise<void>;
}

const running: ProviderProcess[] = [];

async function startProvider(extra: { wrongKey?: boolean; idTokenClaims?: boolean } = {}): Promise<ProviderProcess> {
  const options = { clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUri: REDIRECT_URI, ...extra };
  const child: ChildProcessWithoutNullStreams = spawn(
    process.execPath,
    [join(__dirname, 'oidc-login-provider.mjs'), JSON.stringify(options)],
    {
      stdio: 'pipe',
    },
  );
  child.stderr.resume();
  const issuer = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the OpenID Provider did not start within 15 s')), 15_000);
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const line = out.split('\n')[0];
      if (out.includes('\n') && line) {
        clearTimeout(timer);
        resolve((JSON.parse(line) as { issuer: string }).issuer);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the OpenID Provider exited with ${String(code)}`));
    });
  });
  const provider: ProviderProcess = {
    issuer,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.stdin.end();
        child.kill();
      }),
  };
  running.push(provider);
  return provider;
}

function loginFor(issuer: string, extra: Partial<OidcLoginOptions> = {}): OidcLogin {
  return new OidcLogin({
    issuer,
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    redirectUri: REDIRECT_URI,
    allowInsecureIssuer: true,
    timeoutMs: 3000,
    ...extra,
  });
}

/**
 * Plays the user's browser: follows the provider's redirects with its cookies, signs in as
 * `user` on the development login form and approves the consent form, and stops at the redirect
 * to the gateway's callback, which it returns. At most 20 steps.
 */
async function signInAs(user: string, authorizationUrl: string): Promise<URL> {
  const cookies = new Map<string, string>();
  let request: { url: string; init: RequestInit } = { url: authorizationUrl, init: { method: 'GET' } };
  for (let step = 0; step < 20; step++) {
    const cookie = [...cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const res = await fetch(request.url, {
      ...request.init,
      redirect: 'manual',
      headers: { ...(request.init.headers as Record<string, string>), cookie },
    });
    for (const set of res.headers.getSetCookie()) {
      const [pair] = set.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(set)) cookies.delete(name);
      else cookies.set(name, value);
    }
    const location = res.headers.get('location');
    if (res.status >= 300 && res.status < 400 && location) {
      await res.arrayBuffer();
      const next = new URL(location, request.url);
      if (next.href.startsWith(REDIRECT_URI)) return next;
      request = { url: next.href, init: { method: 'GET' } };
      continue;
    }
    const html = await res.text();
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    const prompt = /name="prompt" value="([^"]+)"/.exec(html)?.[1];
    if (res.status !== 200 || !action || !prompt)
      throw new Error(`unexpected provider page (${res.status}): ${html.slice(0, 300)}`);
    const form = new URLSearchParams({ prompt });
    if (prompt === 'login') {
      form.set('login', user);
      form.set('password', 'any password');
    }
    request = {
      url: new URL(action.replace(/&amp;/g, '&'), request.url).href,
      init: { method: 'POST', body: form.toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } },
    };
  }
  throw new Error('the sign-in did not reach the callback within 20 steps');
}

async function expectLoginError(promise: Promise<unknown>, code: OidcLoginError['code']): Promise<OidcLoginError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(OidcLoginError);
  expect((err as OidcLoginError).code).toBe(code);
  const text = `${(err as Error).message} ${JSON.stringify(err)}`;
  expect(text).not.toContain(CLIENT_SECRET);
  return err as OidcLoginError;
}

afterAll(async () => {
  await Promise.all(running.map((p) => p.stop()));
});

describe('OidcLogin against a real OpenID Provider', () => {
  let provider: ProviderProcess;
  beforeAll(async () => {
    provider = await startProvider();
  });

  it('signs a user in with code + PKCE S256 and returns the verified claims, email and groups from userinfo', async () => {
    const login = loginFor(provider.issuer);
    const { url, state } = await login.start();
    const authorization = new URL(url);
    expect(authorization.origin).toBe(provider.issuer);
    expect(authorization.searchParams.get('response_type')).toBe('code');
    expect(authorization.searchParams.get('client_id')).toBe(CLIENT_ID);
    expect(authorization.searchParams.get('redirect_uri')).toBe(REDIRECT_URI);
    expect(authorization.searchParams.get('scope')).toBe('openid email profile');
    expect(authorization.searchParams.get('state')).toBe(state.state);
    expect(authorization.searchParams.get('nonce')).toBe(state.nonce);
    expect(authorization.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorization.searchParams.get('code_challenge')).toBe(
      createHash('sha256').update(state.codeVerifier).digest('base64url'),
    );
    expect(url).not.toContain(CLIENT_SECRET);

    const callback = await signInAs('alice', url);
    const claims = await login.finish(callback, state);
    expect(claims).toMatchObject({
      iss: provider.issuer,
      aud: CLIENT_ID,
      sub: 'alice',
      nonce: state.nonce,
      email: 'alice@example.com',
      preferred_username: 'alice',
      groups: ['engineering', 'mcp-admins'],
    });
    expect(callerClaimsFromIdToken(claims, 'groups')).toEqual({
      sub: 'alice',
      username: 'alice',
      preferred_username: 'alice',
      email: 'alice@example.com',
      email_verified: true,
      name: 'User alice',
      groups: ['engineering', 'mcp-admins'],
    });
  });

  it('refuses a callback whose state is not the sign-in state, before any token request', async () => {
    const login = loginFor(provider.issuer);
    const { url, state } = await login.start();
    const callback = await signInAs('bob', url);
    const forged = new URL(callback);
    forged.searchParams.set('state', `${state.state}x`);
    await expectLoginError(login.finish(forged, state), 'login_state_mismatch');
    const missing = new URL(callback);
    missing.searchParams.delete('state');
    await expectLoginError(login.finish(missing, state), 'login_state_mismatch');
    // The code was not spent by the refused callbacks: the genuine one still signs in.
    await expect(login.finish(callback, state)).resolves.toMatchObject({ sub: 'bob' });
  });

  it("refuses an ID token whose nonce is not the sign-in's nonce", async () => {
    const login = loginFor(provider.issuer);
    const { url, state } = await login.start();
    const callback = await signInAs('carol', url);
    const err = await expectLoginError(
      login.finish(callback, { ...state, nonce: 'another-nonce-value' }),
      'login_failed',
    );
    expect(err.status).toBe(401);
    expect(err.message).not.toContain(callback.searchParams.get('code')!);
  });

  it('sends the PKCE verifier: a wrong verifier is refused by the provider', async () => {
    const login = loginFor(provider.issuer);
    const { url, state } = await login.start();
    const callback = await signInAs('dave', url);
    const err = await expectLoginError(
      login.finish(callback, { ...state, codeVerifier: 'x'.repeat(43) }),
      'login_failed',
    );
    expect(err.message).toContain('invalid_grant');
  });

  it('refuses a sign-in started more than 10 minutes ago', async () => {
    const login = loginFor(provider.issuer);
    const { url, state } = await login.start();
    const callback = await signInAs('erin', url);
    await expectLoginError(
      login.finish(callback, { ...state, createdAt: Date.now() - 10 * 60 * 1000 - 1000 }),
      'login_state_expired',
    );
  });

  it('reports an error answer of the provider (access denied) as login_failed with its error code', async () => {
    const login = loginFor(provider.issuer);
    const { state } = await login.start();
    const callback = new URL(REDIRECT_URI);
    callback.searchParams.set('error', 'access_denied');
    callback.searchParams.set('state', state.state);
    callback.searchParams.set('iss', provider.issuer);
    const err = await expectLoginError(login.finish(callback, state), 'login_failed');
    expect(err.message).toContain('access_denied');
  });
});

describe('OidcLogin ID token verification', () => {
  it('refuses an ID token signed by a key the provider does not publish', async () => {
    const provider = await startProvider({ wrongKey: true });
    const login = loginFor(provider.issuer);
    const { url, state } = await login.start();
    const callback = await signInAs('mallory', url);
    await expectLoginError(login.finish(callback, state), 'login_failed');
  });

  it('takes email and groups from the ID token when the provider puts them there', async () => {
    const provider = await startProvider({ idTokenClaims: true });
    const login = loginFor(provider.issuer);
    const { url, state } = await login.start();
    const claims = await login.finish(await signInAs('frank', url), state);
    expect(claims).toMatchObject({ sub: 'frank', email: 'frank@example.com', groups: ['engineering', 'mcp-admins'] });
  });
});

describe('OidcLogin when the provider is down', () => {
  let silent: Server;
  const sockets = new Set<Socket>();
  beforeAll(async () => {
    // Accepts connections and never answers.
    silent = createServer((socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => silent.close(() => resolve()));
  });

  it('answers provider_unreachable within the timeout when the provider does not answer', async () => {
    const { port } = silent.address() as { port: number };
    const login = loginFor(`http://127.0.0.1:${port}`, { timeoutMs: 500 });
    const started = Date.now();
    const err = await expectLoginError(login.start(), 'provider_unreachable');
    expect(Date.now() - started).toBeLessThan(2500);
    expect(err.status).toBe(502);
  });

  it('answers provider_unreachable when nothing listens, in the middle of a sign-in and at discovery', async () => {
    const provider = await startProvider();
    const login = loginFor(provider.issuer);
    const { url, state } = await login.start();
    const callback = await signInAs('grace', url);
    await provider.stop();
    await expectLoginError(login.finish(callback, state), 'provider_unreachable');

    const closed = loginFor(provider.issuer);
    await expectLoginError(closed.start(), 'provider_unreachable');
  });
});

describe('OidcLogin options', () => {
  const base: OidcLoginOptions = {
    issuer: 'https://login.example.com',
    clientId: 'gateway',
    clientSecret: 'secret',
    redirectUri: 'https://gw.example.com/oauth/callback',
  };

  it.each<[string, Partial<OidcLoginOptions> & Record<string, unknown>, RegExp]>([
    ['an http issuer', { issuer: 'http://login.example.com' }, /`issuer` must be an https URL/],
    ['a missing issuer', { issuer: '' }, /`issuer` is required/],
    ['a relative redirect URI', { redirectUri: '/oauth/callback' }, /`redirectUri` must be an absolute URL/],
    [
      'an http redirect URI off loopback',
      { redirectUri: 'http://gw.example.com/oauth/callback' },
      /`redirectUri` must be https/,
    ],
    ['no client secret', { clientSecret: '' }, /`clientSecret` is required/],
    ['no client id', { clientId: ' ' }, /`clientId` is required/],
    ['scopes without openid', { scopes: ['email'] }, /must include "openid"/],
    ['a scope with a space', { scopes: ['openid email'] }, /without spaces/],
    ['a timeout in seconds', { timeoutMs: 5 }, /`timeoutMs` must be a whole number of milliseconds/],
    ['a misspelt option', { clientSecrets: 'x' }, /unknown option `clientSecrets`/],
  ])('refuses %s with a message that says what to write', (_name, change, message) => {
    expect(() => new OidcLogin({ ...base, ...change } as OidcLoginOptions)).toThrow(message);
  });

  it('never shows the client secret when the instance is logged or serialised', () => {
    const login = new OidcLogin({ ...base, clientSecret: 'very-secret-value' });
    expect(JSON.stringify(login)).not.toContain('very-secret-value');
    expect(inspect(login, { showHidden: true, depth: 5 })).not.toContain('very-secret-value');
  });
});

describe('callerClaimsFromIdToken', () => {
  it('takes username from preferred_username, groups from the configured claim and drops protocol claims', () => {
    const claims = {
      iss: 'https://op',
      aud: 'gw',
      exp: 1,
      iat: 1,
      nonce: 'n',
      azp: 'gw',
      sub: 'u1',
      preferred_username: 'ada',
      roles: 'a, b c',
      groups: ['ignored'],
      org_id: 'o1',
    };
    expect(callerClaimsFromIdToken(claims, 'roles')).toEqual({
      sub: 'u1',
      preferred_username: 'ada',
      username: 'ada',
      roles: 'a, b c',
      groups: ['a', 'b', 'c'],
      org_id: 'o1',
    });
    expect(callerClaimsFromIdToken({ sub: 'u2', username: 'own', preferred_username: 'other' }, 'groups')).toEqual({
      sub: 'u2',
      username: 'own',
      preferred_username: 'other',
    });
    expect(
      callerClaimsFromIdToken({ sub: 'u3', groups: Array.from({ length: 300 }, (_, i) => `g${i}`) }, 'groups').groups,
    ).toHaveLength(256);
  });
});

/**
 * The gateway's sign-in at a real OpenID Provider (panva's oidc-provider, run on 127.0.0.1 by
 * oidc-login-provider.mjs), its login and consent pages driven with plain HTTP form posts.
 */
import { createHash } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import { inspect } from 'node:util';
import { OidcLogin, OidcLoginError, callerClaimsFromIdToken, type OidcLoginOptions } from '../src';
import {
  signInAs as signInAtProvider,
  startProvider as startProviderProcess,
  type ProviderProcess,
} from './oidc-provider-support';

const REDIRECT_URI = 'http://127.0.0.1:9/oauth/callback';
const CLIENT_ID = 'gateway';
const CLIENT_SECRET = 'oidc-login-test-client-secret-5f2c';

const running: ProviderProcess[] = [];

async function startProvider(extra: { wrongKey?: boolean; idTokenClaims?: boolean } = {}): Promise<ProviderProcess> {
  const provider = await startProviderProcess({
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    redirectUri: REDIRECT_URI,
    ...extra,
  });
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

/** The user's browser at the provider, up to the gateway's callback. */
function signInAs(user: string, authorizationUrl: string): Promise<URL> {
  return signInAtProvider(user, authorizationUrl, REDIRECT_URI);
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

  it("returns the provider's access token and when it expires, from the sign-in and from each renewal", async () => {
    const login = loginFor(provider.issuer);
    const { url, state } = await login.start();
    const callback = await signInAs('erin', url);
    const before = Date.now();
    const signIn = await login.finishWithTokens(callback, state);
    const after = Date.now();
    // The provider's token answer says expires_in 3600 (its default): the expiry is that from now.
    expect(typeof signIn.accessToken).toBe('string');
    expect(signIn.accessToken.length).toBeGreaterThan(20);
    expect(signIn.accessTokenExpiresAt).toBeGreaterThanOrEqual(before + 3_599_000);
    expect(signIn.accessTokenExpiresAt).toBeLessThanOrEqual(after + 3_600_000);
    // The provider accepts it: its userinfo answers for that user.
    const userinfo = await fetch(`${provider.issuer}/me`, {
      headers: { authorization: `Bearer ${signIn.accessToken}` },
    });
    expect(userinfo.status).toBe(200);
    expect(((await userinfo.json()) as { sub: string }).sub).toBe('erin');
    const renewed = await login.renew(signIn.refreshToken!, 'erin');
    expect(renewed.accessToken).not.toBe(signIn.accessToken);
    expect(renewed.accessTokenExpiresAt).toBeGreaterThanOrEqual(after + 3_599_000);
    const again = await fetch(`${provider.issuer}/me`, { headers: { authorization: `Bearer ${renewed.accessToken}` } });
    expect(again.status).toBe(200);
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

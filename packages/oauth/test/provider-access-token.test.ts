/**
 * The OpenID Provider's access token kept with a grant (CONTRACT section 15 `token_exchange`: a
 * caller signed in through section 11 with `login.type: "oidc"` uses the provider's access token
 * of that sign-in, kept sealed with the grant, refreshed with the provider's refresh token), with a
 * real OpenID Provider (oidc-provider, rotating refresh tokens) and a real PostgreSQL shared by two
 * authorization servers, as two gateway instances share it.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { SecretBox, migrate, openEmbeddedDatabase, openPostgres, type CatalogDatabase } from '@gw/catalog';
import { SigningKey } from '@gw/jwks';
import { startPostgres, type RunningPostgres } from '../../catalog/test/postgres';
import {
  CookieJar,
  authorizeUrl,
  pkcePair,
  registerClient,
  signInAndConsent,
  tokenRequest,
} from '../../../examples/server/test/oauth/oauth-support';
import {
  AuthorizationServer,
  IdentityTokenUnavailableError,
  OidcLogin,
  oauthRoutes,
  openProviderTokens,
  providerTokensContext,
  sealProviderTokens,
  userFromIdTokenClaims,
  type AuthorizationServerOptions,
  type ProviderTokens,
  type RedirectLoginMethod,
} from '../src';
import { signInAs, startProvider, type ProviderProcess } from './oidc-provider-support';

jest.setTimeout(90_000);

const CLIENT_ID = 'gateway';
const CLIENT_SECRET = 'provider-access-token-test-secret-71d3';
const CLIENT_REDIRECT = 'http://127.0.0.1:7/callback';

describe("the provider's access token of an OpenID sign-in, kept with the grant", () => {
  let postgres: RunningPostgres;
  let dbA: CatalogDatabase;
  let dbB: CatalogDatabase;
  let http: Server;
  let base: string;
  let provider: ProviderProcess;
  let serverA: AuthorizationServer;
  let serverB: AuthorizationServer;
  const box = new SecretBox(randomBytes(32));
  /** When set, the provider's access token of a sign-in is replaced by one this long (a large JWT). */
  let inflatedAccessTokenChars: number | undefined;
  const signingKey = SigningKey.generate();

  /** The gateway's OpenID login method, as examples/server builds it (one OidcLogin per instance). */
  function oidcLoginMethod(): RedirectLoginMethod {
    const oidc = new OidcLogin({
      issuer: provider.issuer,
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      redirectUri: `${base}/oauth/callback`,
      allowInsecureIssuer: true,
      timeoutMs: 5000,
    });
    return {
      type: 'oidc',
      start: async () => {
        const { url, state } = await oidc.start();
        return { url, state: { ...state } };
      },
      finish: (url, state) => oidc.finish(url, state as never),
      finishWithTokens: async (url, state) => {
        const signIn = await oidc.finishWithTokens(url, state as never);
        return inflatedAccessTokenChars === undefined
          ? signIn
          : { ...signIn, accessToken: 'a'.repeat(inflatedAccessTokenChars) };
      },
      renew: (refreshToken, sub) => oidc.renew(refreshToken, sub),
      toUser: (claims) => userFromIdTokenClaims(provider.issuer, claims),
    };
  }

  const options = (db: CatalogDatabase): AuthorizationServerOptions => ({
    publicBaseUrl: base,
    db,
    signingKey,
    pageSecret: Buffer.alloc(32, 9),
    login: oidcLoginMethod(),
    mcpServerSlugs: new Set(['a']),
    loginTokenBox: box,
    revocationRefreshMs: 200,
  });

  beforeAll(async () => {
    postgres = await startPostgres();
    const url = await postgres.createDatabase();
    dbA = openPostgres(url);
    dbB = openPostgres(url);
    await migrate(dbA);
    const app = express();
    http = createServer(app);
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
    provider = await startProvider({
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      redirectUri: `${base}/oauth/callback`,
      rotateRefreshTokens: true,
      // This account's access tokens live 20 s: less than the 30 s the gateway wants left.
      accessTokenTtls: { 'short-lived': 20 },
    });
    serverA = new AuthorizationServer(options(dbA));
    serverB = new AuthorizationServer(options(dbB));
    await serverA.start();
    await serverB.start();
    app.use('/oauth', oauthRoutes(serverA));
  });

  afterAll(async () => {
    await serverA?.stop();
    await serverB?.stop();
    await new Promise((resolve) => http?.close(resolve));
    await provider?.stop();
    await dbA?.close();
    await dbB?.close();
    await postgres?.destroy();
  });

  /** Token requests the provider has handled, by grant type. */
  async function providerTokenRequests(): Promise<Record<string, number>> {
    return (await (await fetch(`${provider.issuer}/test/token-requests`)).json()) as Record<string, number>;
  }
  const refreshesAtProvider = async () => (await providerTokenRequests()).refresh_token ?? 0;

  /** Whether the provider accepts `accessToken` (its userinfo answers for `user`). */
  async function providerAccepts(accessToken: string, user: string): Promise<boolean> {
    const res = await fetch(`${provider.issuer}/me`, { headers: { authorization: `Bearer ${accessToken}` } });
    return res.status === 200 && ((await res.json()) as { sub?: string }).sub === user;
  }

  /**
   * A client's whole authorization as `user`: the gateway's authorize page, the sign-in at the
   * provider, the consent, the code exchange. Resolves with the grant id and the gateway's tokens.
   */
  async function signedInGrant(
    user: string,
  ): Promise<{ grantId: string; clientId: string; refreshToken: string; callbackCookies: string[] }> {
    const clientId = await registerClient(base, CLIENT_REDIRECT);
    const { verifier, challenge } = pkcePair();
    const jar = new CookieJar();
    const resource = `${base}/mcp/a`;
    const authorize = await fetch(
      authorizeUrl(base, {
        client_id: clientId,
        redirect_uri: CLIENT_REDIRECT,
        code_challenge: challenge,
        code_challenge_method: 'S256',
        state: 's',
        resource,
      }),
      { redirect: 'manual' },
    );
    jar.take(authorize);
    expect(authorize.status).toBe(302);
    const callback = await signInAs(user, authorize.headers.get('location')!, `${base}/oauth/callback`);
    const run = await signInAndConsent(callback, '', { jar });
    const code = run.location?.searchParams.get('code');
    if (!code) throw new Error(`no code: ${run.consentHtml?.slice(0, 300) ?? 'no consent page'}`);
    const answer = await tokenRequest(base, {
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      client_id: clientId,
      redirect_uri: CLIENT_REDIRECT,
      resource,
    });
    expect(answer.status).toBe(200);
    const token = answer.body.access_token as string;
    const payload = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as { gid: string };
    return {
      grantId: payload.gid,
      clientId,
      refreshToken: answer.body.refresh_token as string,
      callbackCookies: run.consent?.headers.getSetCookie() ?? [],
    };
  }

  async function storedValue(grantId: string): Promise<string | null> {
    const [row] = await dbA.query<{ login_tokens: string | null }>(
      'SELECT login_tokens FROM gw_oauth_grants WHERE id = $1',
      [grantId],
    );
    return row!.login_tokens;
  }

  /** The grant's provider tokens, decrypted (as only the gateway can). */
  async function storedTokens(grantId: string, user: string): Promise<ProviderTokens> {
    return openProviderTokens(box, `oidc:${provider.issuer}|${user}`, (await storedValue(grantId))!);
  }

  /** Rewrites the grant's kept access token as expiring at `expiresAt` (the time has come). */
  async function expireKeptAccessToken(grantId: string, user: string, expiresAt = Date.now() - 1000): Promise<void> {
    const tokens = await storedTokens(grantId, user);
    const sealed = sealProviderTokens(box, `oidc:${provider.issuer}|${user}`, {
      ...tokens,
      accessTokenExpiresAt: expiresAt,
    });
    await dbA.query('UPDATE gw_oauth_grants SET login_tokens = $2 WHERE id = $1', [grantId, sealed]);
  }

  it("keeps the provider's refresh and access tokens sealed with the grant: no token in clear in any row", async () => {
    const { grantId } = await signedInGrant('alice');
    const tokens = await storedTokens(grantId, 'alice');
    expect(typeof tokens.refreshToken).toBe('string');
    expect(typeof tokens.accessToken).toBe('string');
    expect(tokens.accessTokenExpiresAt).toBeGreaterThan(Date.now() + 3_500_000);
    expect(await providerAccepts(tokens.accessToken!, 'alice')).toBe(true);
    // Neither token appears in any column of any grant, nor in the audit log.
    const rows = await dbA.query<{ row: string }>(
      `SELECT row_to_json(g)::text AS row FROM gw_oauth_grants g
       UNION ALL SELECT row_to_json(a)::text FROM gw_audit a`,
    );
    expect(rows.length).toBeGreaterThan(1);
    for (const { row } of rows) {
      expect(row).not.toContain(tokens.refreshToken);
      expect(row).not.toContain(tokens.accessToken);
    }
    // Bound to the user's sign-in: the value does not open for another user.
    const sealed = (await storedValue(grantId))!;
    expect(() => openProviderTokens(box, `oidc:${provider.issuer}|mallory`, sealed)).toThrow();
  });

  it('uses the kept access token as is while more than 30 s of it remain, on every instance, without asking the provider', async () => {
    const { grantId } = await signedInGrant('bob');
    const kept = await storedTokens(grantId, 'bob');
    const before = await refreshesAtProvider();
    expect(await serverA.providerAccessToken(grantId)).toBe(kept.accessToken);
    expect(await serverB.providerAccessToken(grantId)).toBe(kept.accessToken);
    // 31 s left: still used.
    await expireKeptAccessToken(grantId, 'bob', Date.now() + 31_000);
    expect(await serverA.providerAccessToken(grantId)).toBe(kept.accessToken);
    expect(await refreshesAtProvider()).toBe(before);
  });

  it("renews the access token with the provider's refresh token once 30 s or less remain, keeps both new tokens, then reuses the new one", async () => {
    const { grantId } = await signedInGrant('carol');
    const kept = await storedTokens(grantId, 'carol');
    await expireKeptAccessToken(grantId, 'carol', Date.now() + 29_000);
    const before = await refreshesAtProvider();
    const renewed = await serverA.providerAccessToken(grantId);
    expect(renewed).toBeDefined();
    expect(renewed).not.toBe(kept.accessToken);
    expect(await providerAccepts(renewed!, 'carol')).toBe(true);
    expect(await refreshesAtProvider()).toBe(before + 1);
    const now = await storedTokens(grantId, 'carol');
    expect(now.accessToken).toBe(renewed);
    // The provider rotates refresh tokens: the new one is kept (the old one is spent).
    expect(now.refreshToken).not.toBe(kept.refreshToken);
    expect(await serverB.providerAccessToken(grantId)).toBe(renewed);
    expect(await refreshesAtProvider()).toBe(before + 1);
    // Expired again: renewed with the rotated refresh token (the spent one would be refused).
    await expireKeptAccessToken(grantId, 'carol');
    const third = await serverB.providerAccessToken(grantId);
    expect(third).not.toBe(renewed);
    expect(await providerAccepts(third!, 'carol')).toBe(true);
    expect(await refreshesAtProvider()).toBe(before + 2);
  });

  it("reads the expiry from the provider's answer: an access token issued for 20 s is renewed at once", async () => {
    const { grantId } = await signedInGrant('short-lived');
    const kept = await storedTokens(grantId, 'short-lived');
    expect(kept.accessTokenExpiresAt! - Date.now()).toBeLessThanOrEqual(20_000);
    const before = await refreshesAtProvider();
    const token = await serverA.providerAccessToken(grantId);
    expect(token).not.toBe(kept.accessToken);
    expect(await providerAccepts(token!, 'short-lived')).toBe(true);
    expect(await refreshesAtProvider()).toBe(before + 1);
  });

  it('opens a value of the earlier format (the refresh token alone) as having no access token yet, for token exchange and for the gateway refresh', async () => {
    const { grantId, clientId, refreshToken } = await signedInGrant('dave');
    const kept = await storedTokens(grantId, 'dave');
    const context = providerTokensContext(`oidc:${provider.issuer}|dave`);
    await dbA.query('UPDATE gw_oauth_grants SET login_tokens = $2 WHERE id = $1', [
      grantId,
      box.seal(kept.refreshToken!, context),
    ]);
    expect(await storedTokens(grantId, 'dave')).toEqual({ refreshToken: kept.refreshToken });
    const before = await refreshesAtProvider();
    const token = await serverA.providerAccessToken(grantId);
    expect(await providerAccepts(token!, 'dave')).toBe(true);
    expect(await refreshesAtProvider()).toBe(before + 1);
    expect((await storedTokens(grantId, 'dave')).accessToken).toBe(token);
    // Again in the earlier format: the gateway's own refresh renews the sign-in from it too.
    await dbA.query('UPDATE gw_oauth_grants SET login_tokens = $2 WHERE id = $1', [
      grantId,
      box.seal((await storedTokens(grantId, 'dave')).refreshToken!, context),
    ]);
    const refreshed = await tokenRequest(base, {
      grant_type: 'refresh_token',
      refresh_token: refreshToken,
      client_id: clientId,
    });
    expect(refreshed.status).toBe(200);
    const after = await storedTokens(grantId, 'dave');
    expect(await providerAccepts(after.accessToken!, 'dave')).toBe(true);
    expect(await serverB.providerAccessToken(grantId)).toBe(after.accessToken);
  });

  it("keeps the provider's tokens current on each refresh of the gateway's token", async () => {
    const { grantId, clientId, refreshToken } = await signedInGrant('erin');
    const kept = await storedTokens(grantId, 'erin');
    const before = await refreshesAtProvider();
    const refreshed = await tokenRequest(base, {
      grant_type: 'refresh_token',
      refresh_token: refreshToken,
      client_id: clientId,
    });
    expect(refreshed.status).toBe(200);
    expect(await refreshesAtProvider()).toBe(before + 1);
    const now = await storedTokens(grantId, 'erin');
    expect(now.accessToken).not.toBe(kept.accessToken);
    expect(now.refreshToken).not.toBe(kept.refreshToken);
    expect(await serverB.providerAccessToken(grantId)).toBe(now.accessToken);
    expect(await refreshesAtProvider()).toBe(before + 1);
  });

  it('renews once when two instances on one database need the expiring token at the same moment: the refresh token is presented once, both get the result', async () => {
    for (const user of ['frank', 'grace', 'heidi']) {
      const { grantId } = await signedInGrant(user);
      await expireKeptAccessToken(grantId, user);
      const before = await refreshesAtProvider();
      const [a, b] = await Promise.all([serverA.providerAccessToken(grantId), serverB.providerAccessToken(grantId)]);
      expect(await refreshesAtProvider()).toBe(before + 1);
      expect(a).toBe(b);
      expect(await providerAccepts(a!, user)).toBe(true);
      // The provider's grant still holds (a refresh token presented twice would have revoked it).
      await expireKeptAccessToken(grantId, user);
      expect(await providerAccepts((await serverB.providerAccessToken(grantId))!, user)).toBe(true);
    }
  });

  it('renews once when the gateway refresh and token exchange need the sign-in at the same moment, and revokes nothing', async () => {
    const { grantId, clientId, refreshToken } = await signedInGrant('ivan');
    await expireKeptAccessToken(grantId, 'ivan');
    const before = await refreshesAtProvider();
    const [refreshed, token] = await Promise.all([
      tokenRequest(base, { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: clientId }),
      serverB.providerAccessToken(grantId),
    ]);
    expect(refreshed.status).toBe(200);
    expect(await providerAccepts(token!, 'ivan')).toBe(true);
    expect((await serverA.store.getGrant(grantId))!.revokedAt).toBeNull();
    // Whichever ran second used the first's rotated refresh token (or its fresh access token).
    expect(await refreshesAtProvider()).toBeLessThanOrEqual(before + 2);
    expect((await storedTokens(grantId, 'ivan')).refreshToken).toBeDefined();
  });

  it('throws identity_token_unavailable when the provider refuses the renewal, with no token in it, and revokes nothing', async () => {
    const { grantId } = await signedInGrant('judy');
    const kept = await storedTokens(grantId, 'judy');
    await expireKeptAccessToken(grantId, 'judy');
    await fetch(`${provider.issuer}/test/accounts/judy`, { method: 'POST', body: JSON.stringify({ disabled: true }) });
    const error = await serverA.providerAccessToken(grantId).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(IdentityTokenUnavailableError);
    expect(error).toMatchObject({ code: 'identity_token_unavailable', reason: 'renewal_refused', status: 401 });
    const text = `${String(error)} ${JSON.stringify(error)} ${(error as Error).stack ?? ''}`;
    expect(text).not.toContain(kept.refreshToken);
    expect(text).not.toContain(kept.accessToken);
    expect((await serverA.store.getGrant(grantId))!.revokedAt).toBeNull();
    expect(await storedValue(grantId)).not.toBeNull();
  });

  it("keeps a large access token out of the sign-in cookie (under browsers' 4096-byte limit): the grant has the refresh token and renews the access token when first needed", async () => {
    inflatedAccessTokenChars = 2500;
    let grantId: string;
    let callbackCookies: string[];
    try {
      ({ grantId, callbackCookies } = await signedInGrant('olivia'));
    } finally {
      inflatedAccessTokenChars = undefined;
    }
    expect(callbackCookies.some((c) => c.startsWith('gw_oauth_login='))).toBe(true);
    for (const set of callbackCookies) expect(set.length).toBeLessThan(4096);
    const kept = await storedTokens(grantId, 'olivia');
    expect(kept.accessToken).toBeUndefined();
    expect(typeof kept.refreshToken).toBe('string');
    const before = await refreshesAtProvider();
    const token = await serverA.providerAccessToken(grantId);
    expect(await providerAccepts(token!, 'olivia')).toBe(true);
    expect(await refreshesAtProvider()).toBe(before + 1);
  });

  it('renews once for concurrent needs of one grant on an instance with the embedded database (no transaction held across the provider call)', async () => {
    const { grantId } = await signedInGrant('peggy');
    await expireKeptAccessToken(grantId, 'peggy');
    const dir = mkdtempSync(join(tmpdir(), 'gw-oauth-embedded-'));
    const embedded = await openEmbeddedDatabase(dir);
    const server = new AuthorizationServer(options(embedded));
    try {
      await migrate(embedded);
      // The same grant, copied into the embedded database as it is stored.
      const grant = (await serverA.store.getGrant(grantId))!;
      const copy = await server.store.createGrantWithCode(
        { ...grant },
        { digest: randomUUID(), redirectUri: CLIENT_REDIRECT, codeChallenge: 'c', expiresAt: new Date() },
      );
      const before = await refreshesAtProvider();
      const tokens = await Promise.all([1, 2, 3].map(() => server.providerAccessToken(copy)));
      expect(await refreshesAtProvider()).toBe(before + 1);
      expect(new Set(tokens).size).toBe(1);
      expect(await providerAccepts(tokens[0]!, 'peggy')).toBe(true);
    } finally {
      await server.stop();
      await embedded.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('answers undefined for a grant without provider tokens and an unknown grant; a revoked grant is refused', async () => {
    const { grantId } = await signedInGrant('ken');
    expect(await serverA.providerAccessToken(randomUUID())).toBeUndefined();
    await serverA.revokeGrant(grantId, 'test', 'test');
    await expect(serverA.providerAccessToken(grantId)).rejects.toMatchObject({
      code: 'identity_token_unavailable',
      reason: 'grant_revoked',
    });
    await dbA.query('UPDATE gw_oauth_grants SET login_tokens = NULL WHERE id = $1', [grantId]);
    expect(await serverA.providerAccessToken(grantId)).toBeUndefined();
  });
});

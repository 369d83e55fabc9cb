/**
 * The gateway as each user's OAuth client of an MCP server, against a real authorization server
 * (oidc-provider, fixtures/upstream-authorization-server.mjs): discovery from the server's 401,
 * registration, the code flow with PKCE and resource, callback checks, refresh with rotation
 * under the lock, refused refresh, revocation.
 */
import {
  MemoryConnectionStore,
  UpstreamAuthorizationFailedError,
  UpstreamConnections,
  UpstreamOAuth,
  type UpstreamConnectionEvent,
  type UpstreamOAuthServer,
  type RefreshOutcome,
} from '../src';
import { browse, jwtPayload, rejection, startAuthorizationServer, type UpstreamAuthorizationServer } from './support';

const PUBLIC_BASE_URL = 'http://127.0.0.1:9';
const CALLBACK = `${PUBLIC_BASE_URL}/oauth/upstream/callback`;

let as: UpstreamAuthorizationServer;
let server: UpstreamOAuthServer;

beforeAll(async () => {
  as = await startAuthorizationServer();
  server = { slug: 'tracker', url: as.resourceUrl, auth: { type: 'oauth', scopes: ['read', 'write'] } };
});

/** A gateway instance: its OAuth client and connections on `store`, its clock `offset` ms ahead. */
function instance(store: MemoryConnectionStore, clock: { offset: number } = { offset: 0 }) {
  const now = () => Date.now() + clock.offset;
  const oauth = new UpstreamOAuth({ publicBaseUrl: PUBLIC_BASE_URL, store, now });
  const events: UpstreamConnectionEvent[] = [];
  const outcomes: RefreshOutcome[] = [];
  const connections = new UpstreamConnections({
    oauth,
    store,
    servers: (slug) => (slug === server.slug ? server : undefined),
    now,
    onEvent: (e) => events.push(e),
    onRefreshOutcome: (_s, o) => outcomes.push(o),
  });
  return { oauth, connections, events, outcomes };
}

/** Connects `user` through the whole browser flow; resolves with the instance. */
async function connected(store: MemoryConnectionStore, user = 'alice') {
  const gw = instance(store);
  const url = await gw.connections.connect(user, server);
  await gw.connections.complete(await browse(url, CALLBACK));
  return gw;
}

async function refreshCount(): Promise<number> {
  return (await as.stats()).token.filter((t) => t.grant_type === 'refresh_token').length;
}

describe('UpstreamOAuth against a real authorization server', () => {
  it("discovers the authorization server from the resource_metadata of the server's 401", async () => {
    const { oauth } = instance(new MemoryConnectionStore());
    const found = await oauth.discover(server);
    expect(found.issuer).toBe(as.issuer);
    expect(found.resourceMetadata?.resource).toBe(as.resourceUrl);
    expect(found.metadata.authorization_response_iss_parameter_supported).toBe(true);
  });

  it('registers once (RFC 7591), stores the registration and reuses it', async () => {
    const store = new MemoryConnectionStore();
    const before = (await as.stats()).registrations;
    const first = await instance(store).oauth.startAuthorization('alice', server);
    const registered = await store.getRegisteredClient('tracker', as.issuer);
    expect(registered?.clientId).toBe(first.pending.clientId);
    const second = await instance(store).oauth.startAuthorization('bob', server);
    expect(second.pending.clientId).toBe(first.pending.clientId);
    expect((await as.stats()).registrations).toBe(before + 1);
  });

  it('runs the code flow with PKCE S256, state and resource: the token is for the server', async () => {
    const store = new MemoryConnectionStore();
    const gw = instance(store);
    const url = new URL(await gw.connections.connect('alice', server));
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    expect(url.searchParams.get('resource')).toBe(as.resourceUrl);
    expect(url.searchParams.get('scope')).toBe('read write');
    expect(url.searchParams.get('redirect_uri')).toBe(CALLBACK);
    const summary = await gw.connections.complete(await browse(url.href, CALLBACK));
    expect(summary).not.toHaveProperty('accessToken');
    const stored = await store.getConnection('alice', 'tracker');
    expect(stored?.refreshToken).toEqual(expect.any(String));
    expect(stored?.scopes).toEqual(['read', 'write']);
    const token = await gw.connections.accessToken('alice', server);
    expect(jwtPayload(token!)).toMatchObject({ aud: as.resourceUrl, sub: 'alice' });
    const res = await fetch(as.resourceUrl, {
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(5000),
    });
    expect(res.status).toBe(200);
    expect(gw.events.map((e) => e.outcome)).toEqual(['connected']);
    expect(JSON.stringify(gw.events)).not.toContain(token);
  });

  it("refuses an answer whose iss is another server's, or missing (RFC 9207)", async () => {
    const store = new MemoryConnectionStore();
    const { oauth } = instance(store);
    for (const change of [
      (u: URL) => u.searchParams.set('iss', 'https://evil.example'),
      (u: URL) => u.searchParams.delete('iss'),
    ]) {
      const started = await oauth.startAuthorization('alice', server);
      const callback = await browse(started.authorizationUrl, CALLBACK);
      expect(callback.searchParams.get('iss')).toBe(as.issuer);
      change(callback);
      const err = await rejection(oauth.finishAuthorization(started.pending, callback, server));
      expect(err).toBeInstanceOf(UpstreamAuthorizationFailedError);
      expect(err.reason).toBe('issuer_mismatch');
    }
  });

  it('refuses a replayed state: the second use of a callback finds nothing', async () => {
    const store = new MemoryConnectionStore();
    const gw = instance(store);
    const callback = await browse(await gw.connections.connect('alice', server), CALLBACK);
    await gw.connections.complete(callback);
    await store.deleteConnection('alice', 'tracker');
    const err = await rejection(gw.connections.complete(callback));
    expect(err).toBeInstanceOf(UpstreamAuthorizationFailedError);
    expect(err.reason).toBe('state_mismatch');
    expect(await store.getConnection('alice', 'tracker')).toBeUndefined();
  });

  it('refuses the code of another session (its PKCE verifier does not match)', async () => {
    const { oauth } = instance(new MemoryConnectionStore());
    const mine = await oauth.startAuthorization('alice', server);
    const theirs = await oauth.startAuthorization('mallory', server);
    const theirCallback = await browse(theirs.authorizationUrl, CALLBACK);
    const planted = new URL(theirCallback);
    planted.searchParams.set('state', mine.pending.state);
    const err = await rejection(oauth.finishAuthorization(mine.pending, planted, server));
    expect(err).toBeInstanceOf(UpstreamAuthorizationFailedError);
    expect(err.reason).toBe('code_refused');
    expect(err.providerError).toBe('invalid_grant');
  });

  it('refreshes before expiry with rotation; the old refresh token is then refused', async () => {
    const store = new MemoryConnectionStore();
    await connected(store);
    const before = (await store.getConnection('alice', 'tracker'))!;
    const clock = { offset: before.expiresAt! - Date.now() - 30_000 };
    const gw = instance(store, clock);
    const token = await gw.connections.accessToken('alice', server);
    const after = (await store.getConnection('alice', 'tracker'))!;
    expect(token).toBe(after.accessToken);
    expect(token).not.toBe(before.accessToken);
    expect(after.refreshToken).not.toBe(before.refreshToken);
    expect(after.lastRefreshedAt).toEqual(expect.any(Number));
    expect(gw.outcomes).toEqual(['refreshed']);
    expect(gw.events.map((e) => e.outcome)).toEqual(['refreshed']);
    // Not refreshed again while fresh.
    clock.offset = 0;
    expect(await gw.connections.accessToken('alice', server)).toBe(token);
    expect(gw.outcomes).toEqual(['refreshed']);
  });

  it('refreshes exactly once when two instances sharing one store race at expiry', async () => {
    const store = new MemoryConnectionStore();
    await connected(store);
    const stored = (await store.getConnection('alice', 'tracker'))!;
    const clock = { offset: stored.expiresAt! - Date.now() - 10_000 };
    const a = instance(store, clock);
    const b = instance(store, clock);
    const refreshesBefore = await refreshCount();
    const tokens = await Promise.all([
      a.connections.accessToken('alice', server),
      b.connections.accessToken('alice', server),
      a.connections.accessToken('alice', server),
      b.connections.accessToken('alice', server),
    ]);
    expect(await refreshCount()).toBe(refreshesBefore + 1);
    expect(new Set(tokens).size).toBe(1);
    expect(tokens[0]).not.toBe(stored.accessToken);
    expect([...a.outcomes, ...b.outcomes].sort()).toEqual(['refreshed', 'reused']);
  });

  it('after a 401, refreshes once; a token already replaced by another refresh is used as is', async () => {
    const store = new MemoryConnectionStore();
    const gw = await connected(store);
    const rejected = (await store.getConnection('alice', 'tracker'))!.accessToken;
    const fresh = await gw.connections.afterUnauthorized('alice', server, rejected);
    expect(fresh).toEqual(expect.any(String));
    expect(fresh).not.toBe(rejected);
    const other = instance(store);
    const before = await refreshCount();
    expect(await other.connections.afterUnauthorized('alice', server, rejected)).toBe(fresh);
    expect(await refreshCount()).toBe(before);
    expect(other.outcomes).toEqual(['reused']);
  });

  it('a refused refresh ends the connection', async () => {
    const store = new MemoryConnectionStore();
    const gw = await connected(store);
    const old = (await store.getConnection('alice', 'tracker'))!;
    await gw.connections.afterUnauthorized('alice', server, old.accessToken);
    // The rotated-out refresh token comes back (a stale row): the server refuses it.
    await store.saveConnection(old);
    const other = instance(store);
    expect(await other.connections.afterUnauthorized('alice', server, old.accessToken)).toBeUndefined();
    expect(await store.getConnection('alice', 'tracker')).toBeUndefined();
    expect(other.events).toEqual([expect.objectContaining({ outcome: 'refresh_refused', reason: 'invalid_grant' })]);
    expect(other.outcomes).toEqual(['refused']);
    expect(await other.connections.accessToken('alice', server)).toBeUndefined();
  });

  it('disconnecting deletes the connection and revokes its refresh token at the server', async () => {
    const store = new MemoryConnectionStore();
    const gw = await connected(store);
    const old = (await store.getConnection('alice', 'tracker'))!;
    const revocationsBefore = (await as.stats()).revocations.length;
    expect(await gw.connections.disconnect('alice', server, 'admin')).toBe(true);
    expect(await store.getConnection('alice', 'tracker')).toBeUndefined();
    const revocations = (await as.stats()).revocations.slice(revocationsBefore);
    expect(revocations).toEqual([{ token_type_hint: 'refresh_token', status: 200 }]);
    expect(gw.events.at(-1)).toMatchObject({ outcome: 'disconnected', by: 'admin' });
    // The revoked refresh token no longer works.
    const err = await rejection(gw.oauth.refresh(old, server));
    expect(err.code).toBe('upstream_refresh_refused');
    expect(await gw.connections.disconnect('alice', server)).toBe(false);
  });
  it('a connection without a refresh token is used until it expires, then ends', async () => {
    const store = new MemoryConnectionStore();
    const now = Date.now();
    await store.saveConnection({
      userId: 'erin',
      server: 'tracker',
      issuer: as.issuer,
      clientId: 'any',
      accessToken: 'access-without-refresh',
      expiresAt: now + 20_000,
      scopes: ['read'],
      createdAt: now - 3_600_000,
    });
    const clock = { offset: 0 };
    const gw = instance(store, clock);
    expect(await gw.connections.accessToken('erin', server)).toBe('access-without-refresh');
    expect(gw.outcomes).toEqual([]);
    clock.offset = 25_000;
    expect(await gw.connections.accessToken('erin', server)).toBeUndefined();
    expect(await store.getConnection('erin', 'tracker')).toBeUndefined();
    expect(gw.events).toEqual([expect.objectContaining({ outcome: 'refresh_refused', reason: 'no_refresh_token' })]);
  });
  it('drops a cached connection when the store says it changed (any instance), and holds a bounded number', async () => {
    const store = new MemoryConnectionStore();
    const now = Date.now();
    const row = (userId: string, accessToken: string) => ({
      userId,
      server: 'tracker',
      issuer: as.issuer,
      clientId: 'any',
      accessToken,
      scopes: [],
      createdAt: now,
    });
    const oauth = new UpstreamOAuth({ publicBaseUrl: PUBLIC_BASE_URL, store });
    const connections = new UpstreamConnections({ oauth, store, servers: () => server, maxCachedConnections: 2 });
    await connections.start();
    await store.saveConnection(row('u1', 'first'));
    expect(await connections.accessToken('u1', server)).toBe('first');
    await store.saveConnection(row('u1', 'second'));
    expect(await connections.accessToken('u1', server)).toBe('second');
    await store.saveConnection(row('u2', 'x'));
    await store.saveConnection(row('u3', 'y'));
    await connections.accessToken('u2', server);
    await connections.accessToken('u3', server);
    expect(connections.cachedConnections).toBe(2);
    await connections.close();
  });
});

/**
 * RFC 8693 token exchange against a real identity provider (oidc-provider with a token-exchange
 * grant, fixtures/upstream-authorization-server.mjs): success, refusal, caching, unreachable.
 */
import { createServer } from 'node:net';
import {
  AuthorizationServerDiscovery,
  TokenExchangeFailedError,
  TokenExchanger,
  UpstreamAuthUnavailableError,
  type TokenExchangeServer,
} from '../src';
import { jwtPayload, rejection, startAuthorizationServer, type UpstreamAuthorizationServer } from './support';

const CLIENT_ID = 'gateway-exchange';
const CLIENT_SECRET = 'token-exchange-test-secret-8c1d';

let idp: UpstreamAuthorizationServer;

beforeAll(async () => {
  idp = await startAuthorizationServer({
    exchangeTtl: 120,
    clients: [
      {
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        grant_types: ['urn:ietf:params:oauth:grant-type:token-exchange'],
        redirect_uris: [],
        response_types: [],
      },
    ],
  });
});

function serverOf(auth: Partial<TokenExchangeServer['auth']> = {}): TokenExchangeServer {
  return {
    slug: 'wiki',
    url: 'https://wiki.internal.example/mcp',
    auth: {
      type: 'token_exchange',
      issuer: idp.issuer,
      client: { client_id: CLIENT_ID, client_secret: CLIENT_SECRET },
      ...auth,
    },
  };
}

async function exchanges(): Promise<number> {
  return (await idp.stats()).exchanges;
}

describe('TokenExchanger against a real identity provider', () => {
  it("exchanges the caller's token for one minted for the server (resource = its url by default)", async () => {
    const exchanger = new TokenExchanger();
    const token = await exchanger.exchange(serverOf({ scopes: ['wiki.read'] }), await idp.subjectToken('alice'));
    expect(jwtPayload(token)).toMatchObject({
      sub: 'alice',
      aud: 'https://wiki.internal.example/mcp',
      scope: 'wiki.read',
      client_id: CLIENT_ID,
    });
  });

  it('sends audience instead when configured, at a configured token_endpoint', async () => {
    const exchanger = new TokenExchanger();
    const token = await exchanger.exchange(
      serverOf({ issuer: undefined, token_endpoint: idp.tokenEndpoint, audience: 'wiki-api' }),
      await idp.subjectToken('bob'),
    );
    expect(jwtPayload(token)).toMatchObject({ sub: 'bob', aud: 'wiki-api' });
  });

  it('caches per (caller token, server) until 30 s before expiry', async () => {
    let now = Date.now();
    const exchanger = new TokenExchanger({ now: () => now });
    const subject = await idp.subjectToken('carol');
    const before = await exchanges();
    const first = await exchanger.exchange(serverOf(), subject);
    expect(await exchanger.exchange(serverOf(), subject)).toBe(first);
    expect(await exchanges()).toBe(before + 1);
    await exchanger.exchange({ ...serverOf(), slug: 'other' }, subject);
    await exchanger.exchange(serverOf(), await idp.subjectToken('dave'));
    expect(await exchanges()).toBe(before + 3);
    // 120 s lifetime: kept for 89 s, exchanged again at 91 s.
    now += 89_000;
    await exchanger.exchange(serverOf(), subject);
    expect(await exchanges()).toBe(before + 3);
    now += 2_000;
    await exchanger.exchange(serverOf(), subject);
    expect(await exchanges()).toBe(before + 4);
    expect(exchanger.cachedTokens).toBe(3);
  });

  it("a refusal is token_exchange_failed with the provider's error code, never a token", async () => {
    const exchanger = new TokenExchanger();
    const forged = `${(await idp.subjectToken('alice')).slice(0, -4)}AAAA`;
    const err = await rejection(exchanger.exchange(serverOf(), forged));
    expect(err).toBeInstanceOf(TokenExchangeFailedError);
    expect(err).toMatchObject({ code: 'token_exchange_failed', status: 403, providerError: 'invalid_grant' });
    expect(`${err.message}${JSON.stringify(err)}`).not.toContain(forged);
    const badClient = await rejection(
      exchanger.exchange(
        serverOf({ client: { client_id: CLIENT_ID, client_secret: 'wrong' } }),
        await idp.subjectToken('alice'),
      ),
    );
    expect(badClient).toMatchObject({ code: 'token_exchange_failed', providerError: 'invalid_client' });
    expect(badClient.message).not.toContain(CLIENT_SECRET);
  });

  it('an unreachable provider is upstream_auth_unavailable', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port: p } = probe.address() as { port: number };
        probe.close(() => resolve(p));
      });
    });
    const exchanger = new TokenExchanger({ discovery: new AuthorizationServerDiscovery() });
    const err = await rejection(
      exchanger.exchange(serverOf({ issuer: undefined, token_endpoint: `http://127.0.0.1:${port}/token` }), 'subject'),
    );
    expect(err).toBeInstanceOf(UpstreamAuthUnavailableError);
    expect(err).toMatchObject({ code: 'upstream_auth_unavailable', status: 502, reason: 'unreachable' });
    const none = await rejection(exchanger.exchange(serverOf({ issuer: undefined }), 'subject'));
    expect(none).toMatchObject({ code: 'upstream_auth_unavailable', reason: 'invalid_metadata' });
  });
});

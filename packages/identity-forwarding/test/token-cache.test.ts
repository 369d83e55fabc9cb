import { SigningKey, createIdentityTokenSigner, type IdentityTokenSigner } from '@gw/jwks';
import { IdentityForwarder, IdentityTokenCache, refreshMargin, type GatewayIdentity } from '../src';
import { alice, recordingUpstream, setup } from './support';

const signer = createIdentityTokenSigner(SigningKey.generate());

function countingSigner(): IdentityTokenSigner & { calls: number } {
  const counting = {
    kid: signer.kid,
    calls: 0,
    signIdentityToken(...args: Parameters<IdentityTokenSigner['signIdentityToken']>) {
      counting.calls++;
      return signer.signIdentityToken(...args);
    },
  };
  return counting;
}

const user = (n: number): GatewayIdentity => ({
  method: 'api_key',
  subject: `key:${n}`,
  claims: Object.freeze({ sub: `u${n}` }),
});

describe('IdentityTokenCache', () => {
  it('serves hits from the cache and counts hits, misses and size', () => {
    const cache = new IdentityTokenCache();
    let signatures = 0;
    const sign = () => `token-${++signatures}`;
    expect(cache.getOrSign('a', 300, sign)).toBe('token-1');
    expect(cache.getOrSign('a', 300, sign)).toBe('token-1');
    expect(cache.getOrSign('b', 300, sign)).toBe('token-2');
    expect(cache.stats).toEqual({ hits: 1, misses: 2, size: 2 });
  });

  it('evicts the least recently used entry at capacity', () => {
    const cache = new IdentityTokenCache({ maxSize: 2 });
    let signatures = 0;
    const sign = () => `token-${++signatures}`;
    cache.getOrSign('a', 300, sign);
    cache.getOrSign('b', 300, sign);
    cache.getOrSign('a', 300, sign); // a is now more recent than b
    cache.getOrSign('c', 300, sign);
    cache.getOrSign('a', 300, sign); // still cached
    expect(signatures).toBe(3);
    cache.getOrSign('b', 300, sign); // was evicted: signed again
    expect(signatures).toBe(4);
    expect(cache.stats.size).toBe(2);
  });

  it('re-signs a token before it expires, with a margin', () => {
    let now = 1_000_000_000;
    const cache = new IdentityTokenCache({ now: () => now });
    const issued: number[] = [];
    const sign = (iat: number) => {
      issued.push(iat);
      return `token-${iat}`;
    };
    cache.getOrSign('a', 300, sign);
    now += (300 - refreshMargin(300) - 1) * 1000;
    cache.getOrSign('a', 300, sign);
    expect(issued).toHaveLength(1);
    now += 1000;
    expect(cache.getOrSign('a', 300, sign)).toBe(`token-${issued[1]}`);
    expect(issued).toHaveLength(2);
    expect(refreshMargin(300)).toBe(30);
    expect(refreshMargin(60)).toBe(6);
  });

  it('signs once per user and audience through a forwarder, then hits', () => {
    const counting = countingSigner();
    const forwarder = new IdentityForwarder(
      { slug: 's', url: 'http://127.0.0.1:1/mcp', user_identity_forwarding: { method: 'jwt_header' } },
      { signer: counting, acceptsTokens: false },
    );
    const first = forwarder.identityHeaderValue(user(1));
    expect(forwarder.identityHeaderValue(user(1))).toBe(first);
    expect(forwarder.identityHeaderValue(user(2))).not.toBe(first);
    expect(counting.calls).toBe(2);
  });
});

describe('concurrent misses through the gateway', () => {
  it('sign a single token for 30 simultaneous first calls of one user', async () => {
    const upstream = await recordingUpstream();
    const gateway = await setup({
      apiKeys: [alice],
      mcpServers: [{ slug: 'signed', url: `${upstream.url}/mcp`, user_identity_forwarding: { method: 'jwt_header' } }],
    });
    const responses = await Promise.all(
      Array.from({ length: 30 }, () =>
        fetch(`${gateway.url}/mcp/signed`, { method: 'POST', headers: { 'x-gateway-api-key': alice.key as string } }),
      ),
    );
    expect(responses.every((r) => r.status === 200)).toBe(true);
    await Promise.all(responses.map((r) => r.arrayBuffer()));
    expect(gateway.forwarding.tokenCache.stats).toEqual({ hits: 29, misses: 1, size: 1 });
    expect(new Set(upstream.requests.map((r) => r.headers['x-user-jwt'])).size).toBe(1);
    await gateway.close();
    await upstream.close();
  });
});

import { alice, recordingUpstream, setup } from './support';
import type { ApiKeyEntry } from '../src';

// 200 concurrent calls through real servers: seconds on a busy machine.
jest.setTimeout(30_000);

// 50 users; users 0-9 and 10-19 have identical claim values but are different users.
const users: ApiKeyEntry[] = Array.from({ length: 50 }, (_, i) => ({
  key: `gw-user-key-${String(i).padStart(4, '0')}`,
  user:
    i < 20
      ? { user_id: `shared-${i % 10}`, email: `shared${i % 10}@example.com` }
      : { user_id: `u${i}`, email: `u${i}@example.com` },
}));

let upstream: Awaited<ReturnType<typeof recordingUpstream>>;
let gateway: Awaited<ReturnType<typeof setup>>;

beforeAll(async () => {
  upstream = await recordingUpstream();
  gateway = await setup({
    apiKeys: [alice, ...users],
    mcpServers: [
      { slug: 'claims', url: `${upstream.url}/mcp`, user_identity_forwarding: { method: 'claims_header' } },
      { slug: 'signed', url: `${upstream.url}/mcp`, user_identity_forwarding: { method: 'jwt_header' } },
    ],
  });
});

afterAll(async () => {
  await gateway.close();
  await upstream.close();
});

function payloadOf(jwt: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(jwt.split('.')[1] as string, 'base64url').toString()) as Record<string, unknown>;
}

describe('isolation under concurrency', () => {
  it.each(['claims', 'signed'])(
    '200 concurrent calls from 50 users each carry their own identity (%s)',
    async (slug) => {
      const calls = Array.from({ length: 200 }, async (_, n) => {
        const user = users[n % 50] as ApiKeyEntry;
        const response = await fetch(`${gateway.url}/mcp/${slug}?call=${n}`, {
          method: 'POST',
          headers: { 'x-gateway-api-key': user.key as string, 'content-type': 'application/json' },
          body: JSON.stringify({ call: n }),
        });
        const echoed = (await response.json()) as { url: string; headers: Record<string, string> };
        return { user, n, echoed };
      });
      for (const { user, n, echoed } of await Promise.all(calls)) {
        expect(echoed.url).toBe(`/mcp?call=${n}`);
        const claims =
          slug === 'claims'
            ? JSON.parse(echoed.headers['x-user-claims'] as string)
            : payloadOf(echoed.headers['x-user-jwt'] as string);
        expect(claims.user_id).toBe(user.user.user_id);
        expect(claims.email).toBe(user.user.email);
      }
    },
  );

  it('gives users with identical claims different cached tokens', async () => {
    const tokens = new Map<string, string>();
    for (const index of [0, 10]) {
      const user = users[index] as ApiKeyEntry;
      const response = await fetch(`${gateway.url}/mcp/signed`, {
        method: 'POST',
        headers: { 'x-gateway-api-key': user.key as string },
      });
      tokens.set(
        user.key as string,
        ((await response.json()) as { headers: Record<string, string> }).headers['x-user-jwt'] as string,
      );
    }
    const [first, second] = [...tokens.values()];
    expect(payloadOf(first as string)).toMatchObject({ user_id: 'shared-0' });
    expect(payloadOf(second as string)).toMatchObject({ user_id: 'shared-0' });
    // Same claims, different users: two cache entries (two signatures), never one shared entry.
    const signed = gateway.forwarding.tokenCache.stats;
    expect(signed.size).toBeGreaterThanOrEqual(2);
  });
});

/**
 * A gateway OAuth token whose sign-in was an API key is that key, everywhere: the limits on the
 * key and on its user count the token's calls with the key's (on Redis), the access policies on
 * the key's user decide for the token, and the request records name the key's user.
 */
import { startRedis, type RunningRedis } from '../cache/cache-support';
import { newEncryptionKey, startMcpDouble, within } from '../catalog/catalog-support';
import { rsaPem, startGateway, writeConfig, type RunningGateway } from '../support';
import { freePort, manualFlow } from './oauth-support';

jest.setTimeout(120_000);

const ADMIN_KEY = 'admin-oauth-caller-key-0000000001';
/** A key whose user has a `sub` of its own (an email) beside its `user_id`. */
const KEY_LIMITED = 'gw-oauth-caller-key-0001';
const USER_LIMITED = 'gw-oauth-caller-user-0002';
const OTHER = 'gw-oauth-caller-other-003';

describe('an OAuth token signed in with an API key is that key for limits, policies and records', () => {
  let redis: RunningRedis;
  let mcp: Awaited<ReturnType<typeof startMcpDouble>>;
  let gateway: RunningGateway;
  let base: string;

  const admin = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${base}/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    return { status: res.status, body: (await res.json()) as any };
  };

  /** A `tools/call` to `/mcp/tools` with `credential` (an API key or a bearer token); its status. */
  const toolCall = async (credential: { key: string } | { token: string }, server = 'tools') => {
    const res = await fetch(`${base}/mcp/${server}`, {
      method: 'POST',
      headers: {
        ...('key' in credential ? { 'x-api-key': credential.key } : { authorization: `Bearer ${credential.token}` }),
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'search', arguments: {} } }),
    });
    await res.arrayBuffer();
    return res.status;
  };

  beforeAll(async () => {
    [redis, mcp] = await Promise.all([startRedis(), startMcpDouble()]);
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    gateway = await startGateway({
      GATEWAY_CONFIG: writeConfig({
        auth: {
          apiKeys: [
            { key: KEY_LIMITED, user: { user_id: 'u-keyed', sub: 'keyed@example.com', groups: ['callers'] } },
            { key: USER_LIMITED, user: { user_id: 'u-counted', sub: 'counted@example.com', groups: ['callers'] } },
            { key: OTHER, user: { user_id: 'u-other', sub: 'other@example.com', groups: ['callers'] } },
          ],
        },
        access: { mode: 'policies' },
        // `tools` lets the tokens' own `sub` in too, so the limits are what is tested there;
        // `other-tools` names only a user_id, as policies do.
        policies: [
          {
            slug: 'tool-users',
            subjects: { users: ['u-keyed', 'u-counted', 'keyed@example.com', 'counted@example.com'] },
            allow: { mcpServers: [{ server: 'tools' }] },
          },
          { slug: 'other-users', subjects: { users: ['u-other'] }, allow: { mcpServers: [{ server: 'other-tools' }] } },
        ],
        mcpServers: [
          { slug: 'tools', url: mcp.url },
          { slug: 'other-tools', url: mcp.url },
        ],
        oauth: { login: { type: 'api_key' } },
      }),
      PORT: String(port),
      PUBLIC_BASE_URL: base,
      JWT_PRIVATE_KEY: rsaPem().privateKey,
      GATEWAY_ADMIN_KEY: ADMIN_KEY,
      GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
      REDIS_URL: redis.url,
    });
    const keys = (await admin('GET', '/api-keys')).body.data as { id: string; user: { user_id: string } }[];
    const keyId = keys.find((k) => k.user.user_id === 'u-keyed')?.id;
    expect(keyId).toBeDefined();
    expect(
      (await admin('POST', '/limits', { slug: 'per-key', subjects: { apiKeys: [keyId] }, requests_per_minute: 2 }))
        .status,
    ).toBe(201);
    expect(
      (await admin('POST', '/limits', { slug: 'per-user', subjects: { users: ['u-counted'] }, requests_per_minute: 2 }))
        .status,
    ).toBe(201);
  });

  afterAll(async () => {
    await gateway?.stop();
    await Promise.all([redis?.stop(), mcp?.close()]);
  });

  it('a limit on the API key counts the key and its OAuth token together', async () => {
    const { tokens } = await manualFlow(base, KEY_LIMITED, `${base}/mcp/tools`);
    // The limit (a catalog record) is served within a second.
    await within(5_000, async () => (await admin('GET', '/limits/per-key/status')).status === 200);
    expect(await toolCall({ key: KEY_LIMITED })).toBe(200);
    expect(await toolCall({ token: tokens.access_token })).toBe(200);
    expect(await toolCall({ token: tokens.access_token })).toBe(429);
    expect(await toolCall({ key: KEY_LIMITED })).toBe(429);
  });

  it("a limit on the key's user counts the key and its OAuth token together, and the records name that user", async () => {
    const { tokens } = await manualFlow(base, USER_LIMITED, `${base}/mcp/tools`);
    expect(await toolCall({ token: tokens.access_token })).toBe(200);
    expect(await toolCall({ key: USER_LIMITED })).toBe(200);
    expect(await toolCall({ token: tokens.access_token })).toBe(429);
    // Request records (written in batches) name the key's user_id for both, never the token's sub.
    await within(10_000, async () => (await admin('GET', '/requests?user=u-counted')).body.data.length >= 3);
    expect((await admin('GET', '/requests?user=counted%40example.com')).body.data).toEqual([]);
  });

  it("the access policies on the key's user decide for its OAuth token", async () => {
    const other = await manualFlow(base, OTHER, `${base}/mcp`);
    // A policy names u-other by user_id: its token is allowed where its key is, and refused where it is.
    expect(await toolCall({ key: OTHER }, 'other-tools')).toBe(200);
    expect(await toolCall({ token: other.tokens.access_token }, 'other-tools')).toBe(200);
    expect(await toolCall({ key: OTHER }, 'tools')).toBe(403);
    expect(await toolCall({ token: other.tokens.access_token }, 'tools')).toBe(403);
  });
});

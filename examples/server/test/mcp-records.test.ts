import { randomUUID } from 'node:crypto';
import { startGateway, writeConfig, type RunningGateway } from './support';
import { adminClient, newAdminKey, newEncryptionKey, within } from './catalog/catalog-support';
import { call2026 } from './mcp-2026/client';
import { startIdentityProvider, type TestIdentityProvider } from './mcp-2026/idp';
import { listen2026Server, type Mcp2026Server } from './mcp-2026/server';

jest.setTimeout(60_000);

const KEY = 'gw-mcp-records-key-000001';
const GROUPS_CLAIM = 'https://gateway.example.com/groups';

let mcp: Mcp2026Server;
let idp: TestIdentityProvider;
let gateway: RunningGateway;
let admin: ReturnType<typeof adminClient>;

beforeAll(async () => {
  [mcp, idp] = await Promise.all([listen2026Server(), startIdentityProvider()]);
  const adminKey = newAdminKey();
  gateway = await startGateway({
    GATEWAY_CONFIG: writeConfig({
      access: { mode: 'policies' },
      auth: {
        apiKeys: [{ key: KEY, user: { user_id: 'u-records', groups: ['mcp-users'] } }],
        jwt_validation: { jwksUri: idp.jwksUri, issuer: idp.issuer, audience: 'gateway' },
        groups_claim: GROUPS_CLAIM,
      },
      mcpServers: [{ slug: 'tools', url: mcp.url, user_identity_forwarding: { method: 'claims_header' } }],
      virtualServers: [{ slug: 'desk', members: [{ server: 'tools', prefix: 't_' }] }],
      policies: [
        {
          slug: 'mcp-users',
          subjects: { groups: ['mcp-users'] },
          allow: { mcpServers: [{ server: 'tools', tools: ['get_weather', 'book_trip'] }] },
        },
      ],
    }),
    GATEWAY_ADMIN_KEY: adminKey,
    GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
    GATEWAY_REQUEST_LOG_DAYS: '1',
  });
  admin = adminClient(gateway.url, adminKey);
});

afterAll(async () => {
  await gateway?.stop();
  await Promise.all([mcp?.close(), idp?.close()]);
});

const endpoint = () => `${gateway.url}/mcp/tools`;

describe('MCP request records', () => {
  it('stores each MCP request as a record of route mcp with its JSON-RPC method and server, readable at /admin/v1/requests', async () => {
    const run = randomUUID();
    const credentials = { 'x-gateway-api-key': KEY, 'x-gateway-metadata': JSON.stringify({ run }) };
    expect((await call2026(endpoint(), credentials, 'server/discover')).status).toBe(200);
    const call = await call2026(
      endpoint(),
      credentials,
      'tools/call',
      {
        name: 'get_weather',
        arguments: { region: 'eu' },
      },
      { tools: mcp.tools },
    );
    expect(call.body).toMatchObject({ result: { content: [{ type: 'text', text: 'sunny in eu' }] } });
    // Refused by the gateway itself: recorded with the tool all the same.
    const refused = await call2026(endpoint(), credentials, 'tools/call', { name: 'delete_everything', arguments: {} });
    expect(refused.body.error.data.code).toBe('access_denied');
    type Stored = { route: string; mcp_method: string | null; mcp_tool: string | null; provider: string | null };
    let records: (Stored & { user_id: string | null })[] = [];
    await within(15_000, async () => {
      records = (await admin('GET', `/requests?metadata.run=${run}`)).body.data;
      return records.length === 3;
    });
    const fields = records
      .map((r) => ({
        route: r.route,
        mcp_method: r.mcp_method,
        mcp_tool: r.mcp_tool,
        provider: r.provider,
        user_id: r.user_id,
      }))
      .reverse();
    expect(fields).toEqual([
      { route: 'mcp', mcp_method: 'server/discover', mcp_tool: null, provider: 'tools', user_id: 'u-records' },
      { route: 'mcp', mcp_method: 'tools/call', mcp_tool: 'get_weather', provider: 'tools', user_id: 'u-records' },
      {
        route: 'mcp',
        mcp_method: 'tools/call',
        mcp_tool: 'delete_everything',
        provider: 'tools',
        user_id: 'u-records',
      },
    ]);
    expect(records.every((r) => (r as unknown as { path: string }).path === '/mcp/tools')).toBe(true);
  });
});

describe('records of calls made through a virtual MCP server', () => {
  type Stored = { path: string; mcp_method: string | null; mcp_tool: string | null; provider: string | null };
  const stored = async (run: string, count: number) => {
    let records: (Stored & { mcp_virtual_server: string | null })[] = [];
    await within(15_000, async () => {
      records = (await admin('GET', `/requests?metadata.run=${run}`)).body.data;
      return records.filter((r) => r.mcp_tool !== null).length >= count;
    });
    return records;
  };

  it('name the virtual server on the member request’s record (mcp_server = the member)', async () => {
    const run = randomUUID();
    const credentials = { 'x-gateway-api-key': KEY, 'x-gateway-metadata': JSON.stringify({ run }) };
    const call = await call2026(`${gateway.url}/mcp/desk`, credentials, 'tools/call', {
      name: 't_get_weather',
      arguments: { region: 'eu' },
    });
    expect(call.body).toMatchObject({ result: { content: [{ type: 'text', text: 'sunny in eu' }] } });
    const member = (await stored(run, 1)).find((r) => r.mcp_tool === 'get_weather');
    expect(member).toMatchObject({
      path: '/mcp/tools',
      provider: 'tools',
      mcp_method: 'tools/call',
      mcp_virtual_server: 'desk',
    });
  });

  it('cannot be claimed by a client: its own x-gateway-virtual-server counts for nothing and is not sent on', async () => {
    const run = randomUUID();
    const credentials = {
      'x-gateway-api-key': KEY,
      'x-gateway-metadata': JSON.stringify({ run }),
      'x-gateway-virtual-server': 'desk',
      'x-gateway-virtual-proof': Buffer.alloc(32).toString('base64url'),
    };
    const before = mcp.received.length;
    const call = await call2026(
      endpoint(),
      credentials,
      'tools/call',
      {
        name: 'get_weather',
        arguments: { region: 'us' },
      },
      { tools: mcp.tools },
    );
    expect(call.body).toMatchObject({ result: { content: [{ type: 'text', text: 'sunny in us' }] } });
    const record = (await stored(run, 1)).find((r) => r.mcp_tool === 'get_weather');
    expect(record).toMatchObject({ path: '/mcp/tools', provider: 'tools', mcp_virtual_server: null });
    expect(mcp.received.length).toBe(before + 1);
  });
});

describe('groups of identity-provider tokens', () => {
  it('come from auth.groups_claim: a policy on a group in that claim allows, the same group under groups does not', async () => {
    const allowed = await call2026(
      endpoint(),
      { authorization: `Bearer ${idp.token({ sub: 'idp-custom', [GROUPS_CLAIM]: ['mcp-users'] })}` },
      'tools/list',
    );
    expect(allowed.status).toBe(200);
    expect(allowed.body.result.tools.length).toBeGreaterThan(0);
    const before = mcp.received.length;
    const refused = await call2026(
      endpoint(),
      { authorization: `Bearer ${idp.token({ sub: 'idp-plain', groups: ['mcp-users'] })}` },
      'tools/list',
    );
    expect([refused.status, refused.body.error.code]).toEqual([403, 'access_denied']);
    expect(mcp.received.length).toBe(before);
  });
});

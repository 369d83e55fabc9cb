/**
 * An MCP server's `upstream_auth` through the whole gateway (CONTRACT sections 8 and 15): in the
 * config file with `${VAR}` secrets and through the admin API, its secrets answered only as hints,
 * in the audit log never, and a bad shape refused at start-up naming the field.
 */
import { failedStart, startGateway, writeConfig, type RunningGateway } from '../support';
import { adminClient, newAdminKey, newEncryptionKey } from './catalog-support';

jest.setTimeout(120_000);

const TRACKER_SECRET = 'tracker-client-secret-FROM-ENV-7f3a';
const CRM_TOKEN = 'crm-service-token-FROM-ENV-9b2c';
const ADMIN_SECRET = 'admin-written-header-SECRET-5d1e';

let gateway: RunningGateway;
const seen: string[] = [];
let admin: ReturnType<typeof adminClient>;

beforeAll(async () => {
  const adminKey = newAdminKey();
  gateway = await startGateway({
    GATEWAY_CONFIG: writeConfig({
      mcpServers: [
        {
          slug: 'tracker',
          url: 'https://mcp.tracker.example/mcp',
          upstream_auth: {
            type: 'oauth',
            scopes: ['read', 'write'],
            client: { client_id: 'gw-prod', client_secret: '${TRACKER_SECRET}' },
          },
        },
        {
          slug: 'crm',
          url: 'https://mcp.crm.example/mcp',
          upstream_auth: { type: 'static', headers: { Authorization: 'Bearer ${CRM_TOKEN}' } },
        },
      ],
    }),
    TRACKER_SECRET,
    CRM_TOKEN,
    GATEWAY_ADMIN_KEY: adminKey,
    GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
  });
  admin = adminClient(gateway.url, adminKey, seen);
});

afterAll(async () => {
  await gateway?.stop();
});

describe('upstream_auth through the gateway', () => {
  it('reads ${VAR} secrets from the config file and answers them as hints only', async () => {
    const tracker = await admin('GET', '/mcp-servers/tracker');
    expect(tracker.body).toMatchObject({
      source: 'config',
      upstream_auth: { type: 'oauth', client: { client_id: 'gw-prod', client_secretHint: '…7f3a' } },
    });
    const crm = await admin('GET', '/mcp-servers/crm');
    expect(crm.body.upstream_auth).toEqual({ type: 'static', headers: { Authorization: '…9b2c' } });
    await admin('GET', '/mcp-servers');
  });

  it('takes upstream_auth through the admin API, write-only, and refuses a bad one naming the field', async () => {
    const created = await admin('POST', '/mcp-servers', {
      slug: 'wiki',
      url: 'https://mcp.wiki.example/mcp',
      upstream_auth: { type: 'static', headers: { 'X-Api-Key': ADMIN_SECRET } },
    });
    expect([created.status, created.body.upstream_auth]).toEqual([
      201,
      { type: 'static', headers: { 'X-Api-Key': '…5d1e' } },
    ]);
    const moved = await admin('PATCH', '/mcp-servers/wiki', { version: 1, url: 'https://elsewhere.example/mcp' });
    expect([moved.status, moved.body.error?.code, moved.body.error?.param]).toEqual([
      400,
      'invalid_request',
      'upstream_auth.headers.X-Api-Key',
    ]);
    const bad = await admin('POST', '/mcp-servers', {
      slug: 'bad',
      url: 'https://mcp.bad.example/mcp',
      upstream_auth: { type: 'oauth', authorization_server: 'http://169.254.169.254/latest' },
    });
    expect([bad.status, bad.body.error?.param]).toEqual([400, 'upstream_auth.authorization_server']);
    await admin('GET', '/audit?record=mcp-servers/wiki');
    for (const text of seen)
      for (const secret of [TRACKER_SECRET, CRM_TOKEN, ADMIN_SECRET]) expect(text).not.toContain(secret);
  });

  it('refuses a config file whose upstream_auth is malformed, naming the field', async () => {
    const { code, stderr } = await failedStart({
      GATEWAY_CONFIG: writeConfig({
        mcpServers: [
          { slug: 's', url: 'https://s.example/mcp', upstream_auth: { type: 'static', headers: { Host: 'x' } } },
        ],
      }),
    });
    expect(code).not.toBe(0);
    expect(stderr).toContain('upstream_auth.headers.Host');
  });
});

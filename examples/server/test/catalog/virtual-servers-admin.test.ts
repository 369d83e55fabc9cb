import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import type { CatalogSnapshot, OpenedRecord, RecordKind } from '@gw/catalog';
import { startPostgres, type RunningPostgres } from '../../../../packages/catalog/test/postgres';
import { buildCatalogView } from '../../src/catalog/catalog-view';
import { parseConfig } from '../../src/config/load';
import { startGateway, writeConfig, type RunningGateway } from '../support';
import { adminClient, newAdminKey, newEncryptionKey, within } from './catalog-support';

// Virtual MCP servers through the admin API (CONTRACT sections 8 and 16): created, changed and
// deleted while the gateway runs, served at /mcp/<slug> from the next request on, and on every
// instance sharing PostgreSQL within 1 s; one namespace of slugs with the MCP servers.

jest.setTimeout(120_000);

const KEY = 'gw-virtual-admin-caller-0001';
const servers: Server[] = [];

async function listen(listener: RequestListener): Promise<string> {
  const server = createServer(listener);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A stateless SDK MCP server with `tools`, each answering `<name>/<tool>`. */
async function sdkMember(name: string, tools: string[]): Promise<string> {
  return `${await listen((req, res) => {
    const server = new McpServer({ name, version: '1.0.0' });
    for (const tool of tools)
      server.registerTool(tool, { description: `${name} ${tool}`, inputSchema: { q: z.string().optional() } }, () => ({
        content: [{ type: 'text', text: `${name}/${tool}` }],
      }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    void server.connect(transport).then(() => transport.handleRequest(req, res));
  })}/mcp`;
}

/** The tool names the MCP SDK client lists at `/mcp/<slug>` of `base`. */
async function toolNames(base: string, slug: string): Promise<string[]> {
  const client = new Client({ name: 'virtual-admin-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${base}/mcp/${slug}`), {
      requestInit: { headers: { authorization: `Bearer ${KEY}` } },
    }),
  );
  try {
    return (await client.listTools()).tools.map((tool) => tool.name);
  } finally {
    await client.close();
  }
}

/** The status a JSON-RPC `tools/list` POST to `/mcp/<slug>` is answered with. */
async function mcpStatus(base: string, slug: string): Promise<number> {
  const res = await fetch(`${base}/mcp/${slug}`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${KEY}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  });
  await res.arrayBuffer();
  return res.status;
}

let trackerUrl: string;
let crmUrl: string;

beforeAll(async () => {
  [trackerUrl, crmUrl] = await Promise.all([
    sdkMember('tracker', ['create_issue', 'list_issues']),
    sdkMember('crm', ['search_contacts', 'get_ticket', 'export_all']),
  ]);
});

afterAll(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

const forwarding = { method: 'claims_header' };

describe('virtual servers through the admin API (CONTRACT section 16)', () => {
  let gateway: RunningGateway;
  let admin: ReturnType<typeof adminClient>;

  beforeAll(async () => {
    const env = {
      GATEWAY_CONFIG: writeConfig({
        auth: { apiKeys: [{ key: KEY, user: { user_id: 'u-virtual-admin' } }] },
        mcpServers: [{ slug: 'tracker', url: trackerUrl, user_identity_forwarding: forwarding }],
        virtualServers: [{ slug: 'file-bench', members: [{ server: 'tracker', prefix: 't_' }] }],
      }),
      GATEWAY_ADMIN_KEY: newAdminKey(),
      GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
    };
    gateway = await startGateway(env);
    admin = adminClient(gateway.url, env.GATEWAY_ADMIN_KEY);
    const crm = await admin('POST', '/mcp-servers', { slug: 'crm', url: crmUrl, user_identity_forwarding: forwarding });
    expect(crm.status).toBe(201);
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  it('creates, reads, lists, changes and deletes a virtual server, served by the MCP SDK client from the next request on', async () => {
    expect(await mcpStatus(gateway.url, 'workbench')).toBe(404);
    const created = await admin('POST', '/virtual-servers', {
      slug: 'workbench',
      name: 'Support',
      members: [
        { server: 'tracker', prefix: 'tracker_' },
        { server: 'crm', tools: ['search_*', 'get_ticket'], rename: { get_ticket: 'crm_ticket' } },
      ],
    });
    expect([created.status, created.body]).toEqual([
      201,
      expect.objectContaining({ slug: 'workbench', name: 'Support', version: 1, source: 'admin' }),
    ]);
    expect(await toolNames(gateway.url, 'workbench')).toEqual([
      'tracker_create_issue',
      'tracker_list_issues',
      'search_contacts',
      'crm_ticket',
    ]);
    expect((await admin('GET', '/virtual-servers/workbench')).body).toEqual(created.body);
    const list = await admin('GET', '/virtual-servers');
    expect(list.body.data.map((v: { slug: string; source: string }) => [v.slug, v.source])).toEqual([
      ['file-bench', 'config'],
      ['workbench', 'admin'],
    ]);
    const changed = await admin('PATCH', '/virtual-servers/workbench', {
      version: 1,
      members: [{ server: 'crm', prefix: 'crm_', tools: ['export_*'] }],
    });
    expect([changed.status, changed.body.version]).toEqual([200, 2]);
    expect(await toolNames(gateway.url, 'workbench')).toEqual(['crm_export_all']);
    const stale = await admin('PATCH', '/virtual-servers/workbench', { version: 1, name: 'x' });
    expect([stale.status, stale.body.error.code]).toEqual([409, 'version_conflict']);
    const audit = await admin('GET', '/audit?record=virtual-servers/workbench');
    expect(audit.body.data.map((e: { action: string }) => e.action)).toEqual(['update', 'create']);
    const deleted = await admin('DELETE', '/virtual-servers/workbench');
    expect([deleted.status, deleted.body]).toEqual([
      200,
      { id: created.body.id, object: 'virtual_server', deleted: true },
    ]);
    expect(await mcpStatus(gateway.url, 'workbench')).toBe(404);
    expect((await admin('GET', '/virtual-servers/workbench')).status).toBe(404);
    // The config file's virtual server is served, and read-only.
    expect(await toolNames(gateway.url, 'file-bench')).toEqual(['t_create_issue', 't_list_issues']);
    const fileChange = await admin('PATCH', '/virtual-servers/file-bench', { version: 1, name: 'x' });
    expect([fileChange.status, fileChange.body.error.code]).toEqual([409, 'managed_by_config_file']);
  });

  it.each([
    ['a member that is no MCP server', { slug: 'v1', members: [{ server: 'nope' }] }, 'members.0.server', 'nope'],
    [
      'a member named twice',
      { slug: 'v2', members: [{ server: 'crm' }, { server: 'crm', prefix: 'c_' }] },
      'members.1.server',
      'a second time',
    ],
    [
      'two renames to one name',
      {
        slug: 'v3',
        members: [
          { server: 'tracker', rename: { list_issues: 'list' } },
          { server: 'crm', rename: { search_contacts: 'list' } },
        ],
      },
      'members.1.rename.search_contacts',
      'renames to "list"',
    ],
    [
      'a bad tools pattern',
      { slug: 'v4', members: [{ server: 'crm', tools: ['*'.repeat(17)] }] },
      'members.0.tools.0',
      'has more than 16 "*"',
    ],
    ['no members', { slug: 'v5', members: [] }, 'members', 'members'],
    ['an unknown field', { slug: 'v6', members: [{ server: 'crm' }], tools: [] }, 'tools', 'tools'],
  ])('refuses %s: 400 invalid_request naming the field', async (_what, body, param, message) => {
    const refused = await admin('POST', '/virtual-servers', body);
    expect([refused.status, refused.body.error.code, refused.body.error.param]).toEqual([
      400,
      'invalid_request',
      param,
    ]);
    expect(refused.body.error.message).toContain(message);
  });

  it('keeps one namespace of slugs with MCP servers, both ways and whatever the source: 409 slug_taken', async () => {
    for (const slug of ['tracker', 'crm']) {
      const member = slug === 'crm' ? 'tracker' : 'crm';
      const refused = await admin('POST', '/virtual-servers', { slug, members: [{ server: member }] });
      expect([slug, refused.status, refused.body.error.code, refused.body.error.param]).toEqual([
        slug,
        409,
        'slug_taken',
        'slug',
      ]);
    }
    expect((await admin('POST', '/virtual-servers', { slug: 'taken-v', members: [{ server: 'crm' }] })).status).toBe(
      201,
    );
    for (const slug of ['taken-v', 'file-bench']) {
      const refused = await admin('POST', '/mcp-servers', { slug, url: crmUrl });
      expect([slug, refused.status, refused.body.error.code]).toEqual([slug, 409, 'slug_taken']);
    }
    // An MCP server a virtual server names is not deleted under it.
    const inUse = await admin('DELETE', '/mcp-servers/crm');
    expect([inUse.status, inUse.body.error.code]).toEqual([409, 'server_in_use']);
    expect(inUse.body.error.message).toContain('"taken-v"');
    expect((await admin('GET', '/mcp-servers/crm')).status).toBe(200);
    expect(await toolNames(gateway.url, 'taken-v')).toEqual(['search_contacts', 'get_ticket', 'export_all']);
    expect((await admin('DELETE', '/virtual-servers/taken-v')).status).toBe(200);
  });
});

describe('a virtual server created on one instance sharing PostgreSQL', () => {
  let postgres: RunningPostgres;
  let a: RunningGateway;
  let b: RunningGateway;
  let admin: ReturnType<typeof adminClient>;

  beforeAll(async () => {
    postgres = await startPostgres();
    const env = {
      DATABASE_URL: await postgres.createDatabase(),
      GATEWAY_CONFIG: writeConfig({
        auth: { apiKeys: [{ key: KEY, user: { user_id: 'u-virtual-shared' } }] },
        mcpServers: [{ slug: 'tracker', url: trackerUrl, user_identity_forwarding: forwarding }],
      }),
      GATEWAY_ADMIN_KEY: newAdminKey(),
      GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
    };
    a = await startGateway(env);
    b = await startGateway(env);
    admin = adminClient(a.url, env.GATEWAY_ADMIN_KEY);
  });

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await postgres?.destroy();
  });

  it('is served by the other instance within 1 s, and its deletion too', async () => {
    expect(await mcpStatus(b.url, 'shared-bench')).toBe(404);
    expect(
      (await admin('POST', '/mcp-servers', { slug: 'crm', url: crmUrl, user_identity_forwarding: forwarding })).status,
    ).toBe(201);
    const created = await admin('POST', '/virtual-servers', {
      slug: 'shared-bench',
      members: [
        { server: 'tracker', prefix: 't_' },
        { server: 'crm', tools: ['get_ticket'] },
      ],
    });
    expect(created.status).toBe(201);
    await within(1_000, async () => (await mcpStatus(b.url, 'shared-bench')) === 200);
    expect(await toolNames(b.url, 'shared-bench')).toEqual(['t_create_issue', 't_list_issues', 'get_ticket']);
    expect((await admin('DELETE', '/virtual-servers/shared-bench')).status).toBe(200);
    await within(1_000, async () => (await mcpStatus(b.url, 'shared-bench')) === 404);
  });
});

describe('the catalog view of virtual servers (what /mcp/<virtual> reads)', () => {
  const record = (kind: RecordKind, slug: string, data: Record<string, unknown>): OpenedRecord => ({
    kind,
    id: slug,
    slug,
    version: 1,
    data,
    secrets: {},
  });
  const snapshot = (records: OpenedRecord[]): CatalogSnapshot => {
    const byKind = new Map<RecordKind, Map<string, OpenedRecord>>();
    for (const r of records) {
      if (!byKind.has(r.kind)) byKind.set(r.kind, new Map());
      byKind.get(r.kind)?.set(r.slug, r);
    }
    return { records: byKind, loadedAt: new Date() };
  };
  const config = parseConfig(
    {
      mcpServers: [{ slug: 'tracker', url: 'http://127.0.0.1:9/mcp' }],
      virtualServers: [{ slug: 'file-bench', members: [{ server: 'tracker' }] }],
    },
    {},
  );
  const records = [
    record('mcp-servers', 'crm', { slug: 'crm', url: 'http://127.0.0.1:9/mcp' }),
    // The config file's virtual server has this slug: the file wins, this server is not served.
    record('mcp-servers', 'file-bench', { slug: 'file-bench', url: 'http://127.0.0.1:9/mcp' }),
    record('virtual-servers', 'db-bench', { slug: 'db-bench', members: [{ server: 'crm', prefix: 'c_' }] }),
    record('virtual-servers', 'file-bench', { slug: 'file-bench', members: [{ server: 'crm' }] }),
    record('virtual-servers', 'crm', { slug: 'crm', members: [{ server: 'tracker' }] }),
    record('virtual-servers', 'orphan', { slug: 'orphan', members: [{ server: 'gone' }] }),
  ];
  const errors: string[] = [];
  const logger = { error: (_fields: unknown, message: string) => errors.push(message) } as never;
  const view = buildCatalogView(config, snapshot(records), logger);

  it("serves the config file's and the database's, skipping a slug taken and a member that is gone", () => {
    expect([...view.virtualServers.keys()]).toEqual(['file-bench', 'db-bench']);
    expect(view.virtualServers.get('file-bench')?.members.map((m) => m.server)).toEqual(['tracker']);
    expect(view.virtualServers.get('db-bench')?.members[0]).toMatchObject({ server: 'crm', prefix: 'c_' });
    expect([...view.mcpSlugs].sort()).toEqual(['crm', 'tracker']);
    expect(view.counts.get('virtual-servers')).toBe(2);
    expect(errors).toEqual([
      expect.stringContaining('mcp-servers/file-bench is not served'),
      expect.stringContaining('virtual-servers/file-bench is not served'),
      expect.stringContaining('virtual-servers/crm is not served'),
      expect.stringContaining('virtual-servers/orphan is not served: its member "gone"'),
    ]);
  });

  it('keeps one resolved object per unchanged record across views, so members keep what they learned', () => {
    const next = buildCatalogView(config, snapshot(records));
    expect(next.virtualServers.get('db-bench')).toBe(view.virtualServers.get('db-bench'));
    expect(next.virtualServers.get('file-bench')).toBe(view.virtualServers.get('file-bench'));
  });
});

import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import { parseConfig } from '../../src/config/load';
import { startGateway, writeConfig, type RunningGateway } from '../support';
import { adminClient, newAdminKey, newEncryptionKey, within } from './catalog-support';

// CONTRACT section 16: "two members with the same prefix (or both without one) that list the same
// name, or two renames to one name, are refused at start-up or by the admin API (400) when the
// members can be listed". The admin API lists each member through its own endpoint (as a caller
// whom policies allow every tool) before a virtual server's members are written.

jest.setTimeout(120_000);

const servers: Server[] = [];

async function listen(listener: RequestListener): Promise<string> {
  const server = createServer(listener);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A stateless SDK MCP server with `tools`. */
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

let gateway: RunningGateway;
let admin: ReturnType<typeof adminClient>;

beforeAll(async () => {
  const [alpha, beta, pinned] = await Promise.all([
    sdkMember('alpha', ['search', 'get_ticket']),
    sdkMember('beta', ['search', 'export']),
    sdkMember('pinned', ['search']),
  ]);
  // Down: takes connections and closes them. Silent: takes requests and never answers.
  const down = await listen((req) => req.socket.destroy());
  const silent = await listen(() => undefined);
  const adminKey = newAdminKey();
  gateway = await startGateway({
    GATEWAY_CONFIG: writeConfig({
      // Policies mode, and no policy at all: the check lists as a caller every policy lets through.
      access: { mode: 'policies' },
      mcpServers: [
        { slug: 'alpha', url: alpha },
        { slug: 'beta', url: beta },
        { slug: 'pinned', url: pinned, tool_pinning: true },
        { slug: 'down', url: `${down}/mcp` },
        { slug: 'silent', url: `${silent}/mcp` },
      ],
    }),
    GATEWAY_ADMIN_KEY: adminKey,
    GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
  });
  admin = adminClient(gateway.url, adminKey);
}, 60_000);

afterAll(async () => {
  await gateway?.stop();
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

describe('the admin API refuses a virtual server whose members would list one tool name twice', () => {
  it.each([
    ['both without a prefix', [{ server: 'alpha' }, { server: 'beta' }], 'search'],
    [
      'the same prefix',
      [
        { server: 'alpha', prefix: 'x_' },
        { server: 'beta', prefix: 'x_' },
      ],
      'x_search',
    ],
    [
      'a rename onto a name the other member lists',
      [
        { server: 'alpha', prefix: 'a_', rename: { get_ticket: 'b_export' } },
        { server: 'beta', prefix: 'b_' },
      ],
      'b_export',
    ],
  ])('%s: 400 virtual_tool_collision naming both members and the tool, nothing written', async (_, members, tool) => {
    const answer = await admin('POST', '/virtual-servers', { slug: 'clash', members });
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ code: 'virtual_tool_collision', param: 'members' });
    expect(answer.body.error.message).toContain('"alpha"');
    expect(answer.body.error.message).toContain('"beta"');
    expect(answer.body.error.message).toContain(`"${tool}"`);
    expect((await admin('GET', '/virtual-servers/clash')).status).toBe(404);
  });

  it('accepts members that list distinct names, and refuses a PATCH of its members that makes them collide', async () => {
    const created = await admin('POST', '/virtual-servers', {
      slug: 'desk',
      members: [{ server: 'alpha', prefix: 'a_' }, { server: 'beta' }],
    });
    expect(created.status).toBe(201);
    const clash = await admin('PATCH', '/virtual-servers/desk', {
      version: 1,
      members: [{ server: 'alpha' }, { server: 'beta' }],
    });
    expect([clash.status, clash.body.error.code]).toEqual([400, 'virtual_tool_collision']);
    expect((await admin('GET', '/virtual-servers/desk')).body).toMatchObject({
      version: 1,
      members: [{ server: 'alpha', prefix: 'a_' }, { server: 'beta' }],
    });
    // A change that leaves the members alone lists nothing; one that keeps them apart is written.
    expect((await admin('PATCH', '/virtual-servers/desk', { version: 1, name: 'Desk' })).status).toBe(200);
    const apart = await admin('PATCH', '/virtual-servers/desk', {
      version: 2,
      members: [{ server: 'alpha', tools: ['get_ticket'] }, { server: 'beta' }],
    });
    expect(apart.status).toBe(200);
    expect(apart.body.version).toBe(3);
  });

  it('accepts the write when a member cannot be listed (down, or silent past its timeout_ms), with a warning', async () => {
    const started = Date.now();
    const answer = await admin('POST', '/virtual-servers', {
      slug: 'partly',
      members: [{ server: 'alpha' }, { server: 'down' }, { server: 'silent', timeout_ms: 300 }],
    });
    expect(answer.status).toBe(201);
    expect(Date.now() - started).toBeLessThan(5_000);
    // The log line is written by the gateway process as the write is answered: waited for, at most 2 s.
    const warned = (server: string, reason: string) => async () =>
      gateway.logs.some(
        (line) =>
          line.includes('could not be listed') &&
          line.includes(`"server":"${server}"`) &&
          line.includes(`"reason":"${reason}"`),
      );
    await within(2_000, warned('down', 'error'));
    await within(2_000, warned('silent', 'timeout'));
  });

  it('checks the names callers see: a held tool of a pinned member is listed by no one, so it collides with nothing', async () => {
    const answer = await admin('POST', '/virtual-servers', {
      slug: 'pins',
      members: [{ server: 'alpha' }, { server: 'pinned' }],
    });
    expect(answer.status).toBe(201);
  });
});

describe('two renames to one name, refused without listing', () => {
  const members = [
    { server: 'alpha', rename: { get_ticket: 'ticket' } },
    { server: 'beta', rename: { export: 'ticket' } },
  ];
  it('at start-up (the config file)', () => {
    expect(() =>
      parseConfig(
        {
          mcpServers: [
            { slug: 'alpha', url: 'http://127.0.0.1:9/mcp' },
            { slug: 'beta', url: 'http://127.0.0.1:9/mcp' },
          ],
          virtualServers: [{ slug: 'twice', members }],
        },
        {},
      ),
    ).toThrow(/members\[1\]\.rename\.export renames to "ticket", as alpha's "get_ticket" does/);
  });

  it('by the admin API: 400 invalid_request naming the rename', async () => {
    const answer = await admin('POST', '/virtual-servers', { slug: 'twice', members });
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ code: 'invalid_request', param: 'members.1.rename.export' });
  });
});

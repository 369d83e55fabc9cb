import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AdminAccess,
  CatalogStore,
  ConfigRecords,
  SecretBox,
  createAdminApi,
  createUpstreamConnectionStore,
  migrate,
  openEmbeddedDatabase,
  type CatalogDatabase,
} from '../src';
import { expectMatchesOpenApi } from './openapi';

jest.setTimeout(60_000);

const KEY = 'upstream-admin-test-key-Zq8vN2rLw5Kp';

describe('the admin routes of upstream connections', () => {
  let folder: string;
  let db: CatalogDatabase;
  let server: Server;
  let base: string;
  const disconnects: string[][] = [];

  beforeAll(async () => {
    folder = mkdtempSync(join(tmpdir(), 'gw-upstream-admin-'));
    db = await openEmbeddedDatabase(folder);
    await migrate(db);
    const box = new SecretBox(Buffer.alloc(32, 3));
    const store = new CatalogStore(db, box);
    const connections = createUpstreamConnectionStore(db, box);
    await store.create('mcp-servers', { slug: 'tracker', url: 'https://mcp.tracker.example/mcp' }, 'admin');
    const t0 = Date.UTC(2030, 0, 1);
    for (const [i, user] of ['alice', 'bob', 'carol'].entries())
      await connections.saveConnection({
        userId: user,
        server: 'tracker',
        issuer: 'https://as.tracker.example',
        clientId: 'gw',
        accessToken: `AT-SECRET-${user}`,
        refreshToken: `RT-SECRET-${user}`,
        scopes: ['read'],
        createdAt: t0 + i,
        ...(user === 'alice' ? { expiresAt: t0 + 3_600_000, lastRefreshedAt: t0 + 60_000 } : {}),
      });
    const handler = createAdminApi({
      store,
      access: new AdminAccess({ adminKey: KEY, throttle: false }),
      configRecords: new ConfigRecords({ mcpServers: [{ slug: 'from-file', url: 'https://f.example/mcp' }] }),
      upstreamConnections: {
        list: (slug, page) => connections.listConnections(slug, page),
        disconnect: async (userId, slug, actor) => {
          disconnects.push([userId, slug, actor]);
          return (await connections.deleteConnection(userId, slug)) !== undefined;
        },
      },
    });
    server = createServer((req, res) => void handler(req, res, (req.url ?? '/').replace(/^\/admin\/v1/, '')));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/admin/v1`;
  });

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    await db.close();
    rmSync(folder, { recursive: true, force: true });
  });

  const call = async (method: string, path: string, key = KEY) => {
    const res = await fetch(`${base}${path}`, { method, headers: { authorization: `Bearer ${key}` } });
    const body = (await res.json()) as Record<string, unknown>;
    // Every answer of a documented operation is as the OpenAPI document says.
    if (res.status !== 405) expectMatchesOpenApi(method, `/admin/v1${path}`, res.status, body);
    return { status: res.status, body };
  };

  it("lists a server's connections oldest first, page by page, with no token", async () => {
    const first = await call('GET', '/mcp-servers/tracker/connections?limit=2');
    expect(first).toEqual({
      status: 200,
      body: {
        object: 'list',
        has_more: true,
        data: [
          {
            object: 'upstream_connection',
            user_id: 'alice',
            server: 'tracker',
            issuer: 'https://as.tracker.example',
            scopes: ['read'],
            createdAt: '2030-01-01T00:00:00.000Z',
            expiresAt: '2030-01-01T01:00:00.000Z',
            lastRefreshedAt: '2030-01-01T00:01:00.000Z',
          },
          expect.objectContaining({ user_id: 'bob', expiresAt: null, lastRefreshedAt: null }),
        ],
      },
    });
    const next = await call('GET', '/mcp-servers/tracker/connections?limit=2&after=bob');
    expect(next.body).toMatchObject({ has_more: false, data: [{ user_id: 'carol' }] });
    expect(JSON.stringify([first, next])).not.toContain('SECRET');
    expect((await call('GET', '/mcp-servers/from-file/connections')).body).toEqual({
      object: 'list',
      data: [],
      has_more: false,
    });
  });

  it('answers 404 for an unknown server or connection, 400 for a bad page, 401 without the key', async () => {
    expect(await call('GET', '/mcp-servers/nope/connections')).toMatchObject({
      status: 404,
      body: { error: { code: 'not_found', type: 'not_found_error' } },
    });
    expect(await call('DELETE', '/mcp-servers/tracker/connections/nobody')).toMatchObject({
      status: 404,
      body: { error: { code: 'not_found', message: 'User "nobody" has no connection to MCP server "tracker".' } },
    });
    expect(await call('GET', '/mcp-servers/tracker/connections?limit=0')).toMatchObject({
      status: 400,
      body: { error: { code: 'invalid_request', param: 'limit' } },
    });
    expect(await call('POST', '/mcp-servers/tracker/connections')).toMatchObject({
      status: 405,
      body: { error: { code: 'method_not_allowed' } },
    });
    expect((await call('GET', '/mcp-servers/tracker/connections', 'wrong-key-wrong-key-wrong-key')).status).toBe(401);
  });

  it('disconnects through the hook and audits who did it', async () => {
    const answer = await call('DELETE', '/mcp-servers/tracker/connections/bob');
    expect(answer).toEqual({
      status: 200,
      body: { object: 'upstream_connection', user_id: 'bob', server: 'tracker', deleted: true },
    });
    expect(disconnects.at(-1)).toEqual(['bob', 'tracker', expect.stringMatching(/^admin-key:[0-9a-f]{8}$/)]);
    const audit = await call('GET', '/audit?record=mcp-servers/tracker');
    expect((audit.body.data as Record<string, unknown>[])[0]).toMatchObject({
      action: 'upstream_disconnected',
      actor: expect.stringMatching(/^admin-key:/),
      record: 'mcp-servers/tracker',
      fields: ['connections.bob'],
    });
    expect((await call('GET', '/mcp-servers/tracker/connections')).body).toMatchObject({
      data: [{ user_id: 'alice' }, { user_id: 'carol' }],
    });
  });
});

import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AdminAccess,
  CatalogStore,
  SecretBox,
  VirtualToolCollisionRecordError,
  createAdminApi,
  migrate,
  openEmbeddedDatabase,
  type CatalogDatabase,
  type RecordKind,
} from '../src';
import { expectMatchesOpenApi } from './openapi';

jest.setTimeout(60_000);

const KEY = 'before-write-test-key-Hq3vR8sLx2Np';

// `beforeWrite` (the host's asynchronous check of a creation or change, such as a virtual server's
// tool collisions): what it is given, and that a refusal writes nothing.
describe('the admin API’s beforeWrite check', () => {
  let folder: string;
  let db: CatalogDatabase;
  let server: Server;
  let base: string;
  const seen: { kind: RecordKind; record: Record<string, unknown>; changed: readonly string[] }[] = [];
  /** What the check does next: accept, refuse as a collision, or fail. */
  let verdict: 'accept' | 'collision' | 'fail' = 'accept';

  beforeAll(async () => {
    folder = mkdtempSync(join(tmpdir(), 'gw-before-write-'));
    db = await openEmbeddedDatabase(folder);
    await migrate(db);
    const store = new CatalogStore(db, new SecretBox(Buffer.alloc(32, 5)));
    await store.create('mcp-servers', { slug: 'alpha', url: 'https://alpha.example/mcp' }, 'admin');
    await store.create('mcp-servers', { slug: 'beta', url: 'https://beta.example/mcp' }, 'admin');
    const handler = createAdminApi({
      store,
      access: new AdminAccess({ adminKey: KEY, throttle: false }),
      beforeWrite: async (kind, record, changed) => {
        seen.push({ kind, record, changed });
        if (verdict === 'collision')
          throw new VirtualToolCollisionRecordError('"alpha" and "beta" would both list the tool "search".', 'members');
        if (verdict === 'fail') throw new Error('the check failed');
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

  beforeEach(() => {
    seen.length = 0;
    verdict = 'accept';
  });

  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const answer = (await res.json()) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    expectMatchesOpenApi(method, `/admin/v1${path}`, res.status, answer);
    return { status: res.status, body: answer };
  };

  it('is given a creation’s body and the fields it gives', async () => {
    const members = [{ server: 'alpha', prefix: 'a_' }, { server: 'beta' }];
    expect((await call('POST', '/virtual-servers', { slug: 'desk', members })).status).toBe(201);
    expect(seen).toEqual([
      { kind: 'virtual-servers', record: { slug: 'desk', members }, changed: ['slug', 'members'] },
    ]);
  });

  it('is given a change as the stored record’s fields with the change’s over them, without version or metadata', async () => {
    const changed = await call('PATCH', '/virtual-servers/desk', { version: 1, members: [{ server: 'beta' }] });
    expect(changed.status).toBe(200);
    expect(seen).toEqual([
      {
        kind: 'virtual-servers',
        record: { slug: 'desk', members: [{ server: 'beta' }] },
        changed: ['members'],
      },
    ]);
  });

  it('refuses with its CatalogError and writes nothing, on creation and on change', async () => {
    verdict = 'collision';
    const created = await call('POST', '/virtual-servers', { slug: 'clash', members: [{ server: 'alpha' }] });
    expect([created.status, created.body.error]).toEqual([
      400,
      expect.objectContaining({ code: 'virtual_tool_collision', param: 'members' }),
    ]);
    expect((await call('GET', '/virtual-servers/clash')).status).toBe(404);
    const changed = await call('PATCH', '/virtual-servers/desk', { version: 2, members: [{ server: 'alpha' }] });
    expect([changed.status, changed.body.error.code]).toEqual([400, 'virtual_tool_collision']);
    expect((await call('GET', '/virtual-servers/desk')).body).toMatchObject({
      version: 2,
      members: [{ server: 'beta' }],
    });
  });

  it('a check that fails is a 500, and nothing is written', async () => {
    verdict = 'fail';
    const created = await call('POST', '/virtual-servers', { slug: 'failed', members: [{ server: 'alpha' }] });
    expect([created.status, created.body.error.code]).toEqual([500, 'internal_error']);
    expect((await call('GET', '/virtual-servers/failed')).status).toBe(404);
  });

  it('is not asked about a body that is not an object: the store refuses it', async () => {
    const refused = await call('POST', '/virtual-servers', [{ slug: 'list' }]);
    expect(refused.status).toBe(400);
    expect(seen).toEqual([]);
  });
});

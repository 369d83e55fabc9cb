import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CatalogStore,
  ConfigRecords,
  InvalidRecordError,
  SecretBox,
  SecretsRequiredForRoutingChangeError,
  migrate,
  openEmbeddedDatabase,
  validateInput,
  withSecrets,
  type CatalogDatabase,
} from '../src';
import { REFUSED_STATIC_HEADER_NAMES, validateUpstreamAuth } from '@gw/upstream-auth';

jest.setTimeout(60_000);

const CLIENT_SECRET = 'upstream-client-secret-PLAIN-7f3a';
const CRM_TOKEN = 'Bearer crm-service-token-PLAIN-9b2c';
const API_KEY_HEADER = 'x-api-key-value-PLAIN-5d1e';

const oauthServer = {
  slug: 'tracker',
  url: 'https://mcp.tracker.example/mcp',
  upstream_auth: {
    type: 'oauth',
    scopes: ['read', 'write'],
    client: { client_id: 'gw-prod', client_secret: CLIENT_SECRET },
  },
};
const staticServer = {
  slug: 'crm',
  url: 'https://mcp.crm.example/mcp',
  upstream_auth: { type: 'static', headers: { Authorization: CRM_TOKEN, 'X-Api-Key': API_KEY_HEADER } },
};

describe('the upstream_auth field of an MCP server', () => {
  it('accepts the three types and refuses bad shapes naming the field', () => {
    expect(validateInput('mcp-servers', oauthServer)).toEqual(oauthServer);
    expect(validateInput('mcp-servers', staticServer)).toEqual(staticServer);
    const exchange = {
      slug: 'internal',
      url: 'http://10.0.0.5/mcp',
      upstream_auth: { type: 'token_exchange', audience: 'internal-mcp', client: { client_id: 'gw' } },
    };
    expect(validateInput('mcp-servers', exchange)).toEqual(exchange);
    const refused = (upstream_auth: unknown) => {
      try {
        validateInput('mcp-servers', { slug: 's', url: 'https://s.example', upstream_auth });
      } catch (error) {
        expect(error).toBeInstanceOf(InvalidRecordError);
        return [(error as InvalidRecordError).param, (error as Error).message];
      }
      throw new Error('accepted');
    };
    expect(refused({ type: 'cookie' })[0]).toBe('upstream_auth.type');
    expect(refused({ type: 'token_exchange' })[0]).toBe('upstream_auth.client');
    expect(refused({ type: 'static', headers: {} })).toEqual([
      'upstream_auth.headers',
      'upstream_auth.headers: must name at least one header.',
    ]);
    expect(refused({ type: 'static', headers: { Host: 'x' } })[1]).toMatch(/a header the gateway sets itself/);
    // The admin API refuses exactly the names the config file's validation refuses (one set).
    for (const name of REFUSED_STATIC_HEADER_NAMES) {
      expect(refused({ type: 'static', headers: { [name]: 'x' } })[1]).toMatch(/a header the gateway sets itself/);
      expect(() => validateUpstreamAuth({ type: 'static', headers: { [name]: 'x' } }, 'upstream_auth')).toThrow();
    }
    expect(refused({ type: 'static', headers: { 'X-A': 'a\r\nInjected: 1' } })[0]).toBe('upstream_auth.headers.X-A');
    expect(refused({ type: 'oauth', authorization_server: 'http://169.254.169.254/' })[0]).toBe(
      'upstream_auth.authorization_server',
    );
    expect(
      refused({ type: 'oauth', client: { client_id: 'a', token_endpoint_auth_method: 'client_secret_post' } }),
    ).toEqual([
      'upstream_auth.client.client_secret',
      'upstream_auth.client.client_secret: is required with token_endpoint_auth_method "client_secret_post".',
    ]);
    expect(refused({ type: 'oauth', scopes: ['two words'] })[0]).toBe('upstream_auth.scopes.0');
    expect(refused({ type: 'oauth', extra: 1 })).toEqual(['upstream_auth.extra', 'Unknown field "extra".']);
  });

  it("answers the config file's secrets as hints only", () => {
    const records = new ConfigRecords({ mcpServers: [oauthServer, staticServer] });
    const text = JSON.stringify(records.list('mcp-servers'));
    expect(text).not.toContain('PLAIN');
    expect(records.get('mcp-servers', 'tracker')).toMatchObject({
      upstream_auth: { type: 'oauth', client: { client_id: 'gw-prod', client_secretHint: '…7f3a' } },
    });
    expect(records.get('mcp-servers', 'crm')).toMatchObject({
      upstream_auth: { type: 'static', headers: { Authorization: '…9b2c', 'X-Api-Key': '…5d1e' } },
    });
  });
});

describe('upstream_auth secrets in the catalog store', () => {
  let folder: string;
  let db: CatalogDatabase;
  let store: CatalogStore;

  beforeAll(async () => {
    folder = mkdtempSync(join(tmpdir(), 'gw-upstream-records-'));
    db = await openEmbeddedDatabase(folder);
    await migrate(db);
    store = new CatalogStore(db, new SecretBox(Buffer.alloc(32, 9)));
  });

  afterAll(async () => {
    await db.close();
    rmSync(folder, { recursive: true, force: true });
  });

  const opened = async (slug: string) => {
    const record = await store.getOpened('mcp-servers', slug);
    return withSecrets('mcp-servers', record!.data, record!.secrets);
  };

  it('seals the client secret and every static header value, answering hints in place', async () => {
    const tracker = await store.create('mcp-servers', oauthServer, 'admin');
    const crm = await store.create('mcp-servers', staticServer, 'admin');
    expect(tracker.upstream_auth).toEqual({
      type: 'oauth',
      scopes: ['read', 'write'],
      client: { client_id: 'gw-prod', client_secretHint: '…7f3a' },
    });
    expect(crm.upstream_auth).toEqual({ type: 'static', headers: { Authorization: '…9b2c', 'X-Api-Key': '…5d1e' } });
    const answers = JSON.stringify([tracker, crm, await store.list('mcp-servers'), await store.auditLog()]);
    expect(answers).not.toContain('PLAIN');
    const rows = JSON.stringify(await db.query('SELECT * FROM gw_records'));
    expect(rows).not.toContain('PLAIN');
    // The gateway reads the record whole again.
    expect(await opened('tracker')).toMatchObject({ upstream_auth: oauthServer.upstream_auth });
    expect(await opened('crm')).toMatchObject({ upstream_auth: staticServer.upstream_auth });
  });

  it('keeps the secrets a change leaves out while nothing says where they go changes', async () => {
    let tracker = await store.get('mcp-servers', 'tracker');
    tracker = await store.update(
      'mcp-servers',
      'tracker',
      {
        version: tracker.version,
        upstream_auth: { type: 'oauth', scopes: ['read'], client: { client_id: 'gw-prod' } },
      },
      'admin',
    );
    expect(tracker.upstream_auth).toMatchObject({ scopes: ['read'], client: { client_secretHint: '…7f3a' } });
    expect(await opened('tracker')).toMatchObject({ upstream_auth: { client: { client_secret: CLIENT_SECRET } } });
    let crm = await store.get('mcp-servers', 'crm');
    // Headers left out: all kept; an entry given as null keeps its value, one left out of the map goes.
    crm = await store.update('mcp-servers', 'crm', { version: crm.version, tool_pinning: true }, 'admin');
    crm = await store.update(
      'mcp-servers',
      'crm',
      {
        version: crm.version,
        upstream_auth: { type: 'static', headers: { Authorization: null, 'X-New': 'new-1234' } },
      },
      'admin',
    );
    expect(crm.upstream_auth).toEqual({ type: 'static', headers: { Authorization: '…9b2c', 'X-New': '…1234' } });
    expect(await opened('crm')).toMatchObject({
      upstream_auth: { headers: { Authorization: CRM_TOKEN, 'X-New': 'new-1234' } },
    });
    crm = await store.update(
      'mcp-servers',
      'crm',
      { version: crm.version, upstream_auth: { type: 'static' } },
      'admin',
    );
    expect(crm.upstream_auth).toEqual({ type: 'static', headers: { Authorization: '…9b2c', 'X-New': '…1234' } });
  });

  it('asks for every secret again when the url, the type or where tokens are fetched changes', async () => {
    const tracker = await store.get('mcp-servers', 'tracker');
    const change = (patch: Record<string, unknown>) =>
      store.update('mcp-servers', 'tracker', { version: tracker.version, ...patch }, 'admin');
    await expect(change({ url: 'https://evil.example/mcp' })).rejects.toThrow(
      expect.objectContaining({
        constructor: SecretsRequiredForRoutingChangeError,
        param: 'upstream_auth.client.client_secret',
        message:
          'Changing url sends the stored secrets to a new place: give upstream_auth.client.client_secret again in the same change.',
      }),
    );
    await expect(
      change({
        upstream_auth: {
          type: 'oauth',
          authorization_server: 'https://evil.example',
          client: { client_id: 'gw-prod' },
        },
      }),
    ).rejects.toThrow(expect.objectContaining({ param: 'upstream_auth.client.client_secret' }));
    await expect(
      change({
        upstream_auth: { type: 'token_exchange', issuer: 'https://evil.example', client: { client_id: 'gw-prod' } },
      }),
    ).rejects.toBeInstanceOf(SecretsRequiredForRoutingChangeError);
    // Given again, the change is made; a type that holds no client drops the secret, asking nothing.
    const moved = await change({
      url: 'https://mcp2.tracker.example/mcp',
      upstream_auth: { type: 'oauth', client: { client_id: 'gw-prod', client_secret: 'second-secret-aaaa' } },
    });
    expect(moved.upstream_auth).toMatchObject({ client: { client_secretHint: '…aaaa' } });
    const crm = await store.get('mcp-servers', 'crm');
    await expect(
      store.update('mcp-servers', 'crm', { version: crm.version, url: 'https://evil.example/mcp' }, 'admin'),
    ).rejects.toThrow(expect.objectContaining({ param: 'upstream_auth.headers.Authorization' }));
    // upstream_auth given as null is removed, its secrets with it: nothing to give again.
    const plain = await store.update(
      'mcp-servers',
      'crm',
      { version: crm.version, url: 'https://mcp.crm2.example/mcp', upstream_auth: null },
      'admin',
    );
    expect(plain.upstream_auth).toBeUndefined();
    expect((await store.getOpened('mcp-servers', 'crm'))?.secrets).toEqual({});
    await store.update(
      'mcp-servers',
      'crm',
      { version: plain.version, url: staticServer.url, upstream_auth: staticServer.upstream_auth },
      'admin',
    );
  });

  it('does not open a header value sealed for another url', async () => {
    const crm = await store.getOpened('mcp-servers', 'crm');
    await db.query(
      `UPDATE gw_records SET data = jsonb_set(data, '{url}', '"https://evil.example/mcp"') WHERE slug = 'crm'`,
    );
    await expect(store.getOpened('mcp-servers', 'crm')).rejects.toThrow(/does not open/);
    await db.query(`UPDATE gw_records SET data = jsonb_set(data, '{url}', $1::jsonb) WHERE slug = 'crm'`, [
      JSON.stringify(crm!.data.url),
    ]);
    await db.query(
      `UPDATE gw_records SET data = jsonb_set(data, '{upstream_auth,type}', '"oauth"') WHERE slug = 'crm'`,
    );
    await expect(store.getOpened('mcp-servers', 'crm')).rejects.toThrow(/does not open/);
  });
});

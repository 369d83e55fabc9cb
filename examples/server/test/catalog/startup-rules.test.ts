import { spawnSync } from 'node:child_process';
import { createPrivateKey, createPublicKey, sign } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { failedStart, freshDataDir, rsaPem, startGateway, writeConfig } from '../support';
import {
  adminClient,
  chat,
  newAdminKey,
  newEncryptionKey,
  startAnthropicDouble,
  type AnthropicDouble,
} from './catalog-support';

jest.setTimeout(120_000);

const CLI = join(__dirname, '..', '..', 'dist', 'cli.js');
const CALLER = 'gw-startup-rules-caller';

let anthropic: AnthropicDouble;
beforeAll(async () => {
  anthropic = await startAnthropicDouble();
});
afterAll(() => anthropic.close());

const config = () => writeConfig({ auth: { apiKeys: [{ key: CALLER, user: { user_id: 'caller' } }] } });
/** An empty folder: for refusals made before the database is opened. */
const emptyDir = () => mkdtempSync(join(tmpdir(), 'gw-rules-'));
/**
 * A migrated embedded database (a copy of the tests' template, 25 MB): a gateway opening an empty
 * folder copies the 39 MB prepared data directory into it and runs every migration first (a
 * first start: memory.test.ts).
 */
const dataDir = () => freshDataDir('gw-rules-');

describe('start-up rules of the catalog', () => {
  it('refuses, in production, an admin API without GATEWAY_ENCRYPTION_KEY', async () => {
    const { code, stderr } = await failedStart({
      GATEWAY_CONFIG: config(),
      GATEWAY_DATA_DIR: dataDir(),
      GATEWAY_ADMIN_KEY: newAdminKey(),
      NODE_ENV: 'production',
    });
    expect(code).toBe(1);
    expect(stderr).toMatch(/GATEWAY_ENCRYPTION_KEY is not set/);
    expect(stderr.trim().split('\n')).toHaveLength(1);
  });

  it.each([
    [{ GATEWAY_ADMIN_KEY: 'short' }, /GATEWAY_ADMIN_KEY must be at least 24 characters/],
    [{ GATEWAY_ENCRYPTION_KEY: 'not-32-bytes' }, /GATEWAY_ENCRYPTION_KEY must be 32 bytes in base64/],
    [{ DATABASE_URL: 'mysql://x' }, /DATABASE_URL must be a postgres:\/\/ URL/],
    [{ GATEWAY_ADMIN_CLAIM: 'groups=admins' }, /GATEWAY_ADMIN_CLAIM needs auth.jwt_validation/],
  ])('refuses %j with one line saying what to write', async (extra, message) => {
    const { code, stderr } = await failedStart({ GATEWAY_CONFIG: config(), GATEWAY_DATA_DIR: emptyDir(), ...extra });
    expect(code).toBe(1);
    expect(stderr).toMatch(message);
  });

  it('answers 403 admin_disabled without an admin credential', async () => {
    const gateway = await startGateway({ GATEWAY_CONFIG: config(), GATEWAY_DATA_DIR: dataDir() });
    try {
      const res = await fetch(`${gateway.url}/admin/v1/providers`, {
        headers: { authorization: 'Bearer anything-at-all' },
      });
      expect(res.status).toBe(403);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('admin_disabled');
    } finally {
      await gateway.stop();
    }
  });

  it('prints a generated admin key in the embedded development default, and generates a development encryption key', async () => {
    const dir = dataDir();
    const gateway = await startGateway({ GATEWAY_DATA_DIR: dir });
    try {
      const line = gateway.logs.find((l) => l.includes('development admin key')) as string;
      const adminKey = /"adminKey":"([^"]+)"/.exec(line)?.[1] as string;
      expect(adminKey.length).toBeGreaterThanOrEqual(24);
      expect(gateway.logs.some((l) => l.includes('generated a development encryption key'))).toBe(true);
      const admin = adminClient(gateway.url, adminKey);
      expect((await admin('GET', '/mcp-servers')).body.data.map((s: { slug: string }) => s.slug)).toContain(
        'demo-claims',
      );
    } finally {
      await gateway.stop();
    }
  });

  it('refuses a slug defined both in the config file and in the database', async () => {
    const dir = dataDir();
    const adminKey = newAdminKey();
    const gateway = await startGateway({
      GATEWAY_CONFIG: config(),
      GATEWAY_DATA_DIR: dir,
      GATEWAY_ADMIN_KEY: adminKey,
    });
    await adminClient(gateway.url, adminKey)('POST', '/mcp-servers', { slug: 'twice', url: 'http://127.0.0.1:9/mcp' });
    await gateway.stop();
    const clash = writeConfig({ mcpServers: [{ slug: 'twice', url: 'http://127.0.0.1:9/mcp' }] });
    const { code, stderr } = await failedStart({ GATEWAY_CONFIG: clash, GATEWAY_DATA_DIR: dir });
    expect(code).toBe(1);
    expect(stderr).toMatch(/mcp-servers "twice" is defined both in the config file and in the catalog database/);
  });

  it('rotates the encryption key with `gw catalog reseal`: the new key alone then opens every secret', async () => {
    const dir = dataDir();
    const [oldKey, newKey, adminKey] = [newEncryptionKey(), newEncryptionKey(), newAdminKey()];
    const base = { GATEWAY_CONFIG: config(), GATEWAY_DATA_DIR: dir, GATEWAY_ADMIN_KEY: adminKey };
    let gateway = await startGateway({ ...base, GATEWAY_ENCRYPTION_KEY: oldKey });
    await adminClient(gateway.url, adminKey)('POST', '/providers', {
      slug: 'sealed',
      provider: 'anthropic',
      apiKey: 'sk-ant-sealed-under-old-key',
      baseUrl: anthropic.url,
    });
    await gateway.stop();

    const reseal = spawnSync(process.execPath, [CLI, 'catalog', 'reseal'], {
      env: {
        PATH: process.env.PATH,
        GATEWAY_DATA_DIR: dir,
        GATEWAY_ENCRYPTION_KEY: newKey,
        GATEWAY_PREVIOUS_ENCRYPTION_KEYS: oldKey,
      },
      encoding: 'utf8',
    });
    expect(reseal.status).toBe(0);
    expect(reseal.stdout).toMatch(/Re-encrypted 1 catalog record/);

    // Only the new key now: the provider serves.
    gateway = await startGateway({ ...base, GATEWAY_ENCRYPTION_KEY: newKey });
    try {
      expect((await chat(gateway.url, CALLER, '@sealed/claude-haiku-4-5')).status).toBe(200);
      expect(anthropic.keys.at(-1)).toBe('sk-ant-sealed-under-old-key');
    } finally {
      await gateway.stop();
    }
    // Only the old key: the record no longer opens, is left out and logged without its secret.
    gateway = await startGateway({ ...base, GATEWAY_ENCRYPTION_KEY: oldKey });
    try {
      const refused = await chat(gateway.url, CALLER, '@sealed/claude-haiku-4-5');
      expect([refused.status, refused.body.error.code]).toEqual([400, 'unknown_provider']);
      expect(
        gateway.logs.some((l) => l.includes('providers/sealed is sealed with a key the gateway does not have')),
      ).toBe(true);
      expect(gateway.logs.join('\n')).not.toContain('sk-ant-sealed-under-old-key');
    } finally {
      await gateway.stop();
    }
  });

  it('accepts an identity-provider token carrying GATEWAY_ADMIN_CLAIM, and refuses one without it', async () => {
    const { privateKey, publicKey } = rsaPem();
    const jwk = { ...createPublicKey(publicKey).export({ format: 'jwk' }), kid: 'idp-1', alg: 'RS256', use: 'sig' };
    const idp: Server = createServer((_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ keys: [jwk] }));
    });
    await new Promise<void>((resolve) => idp.listen(0, '127.0.0.1', resolve));
    const issuer = 'https://idp.test/';
    const token = (claims: Record<string, unknown>) => {
      const encode = (v: object) => Buffer.from(JSON.stringify(v)).toString('base64url');
      const now = Math.floor(Date.now() / 1000);
      const input = `${encode({ alg: 'RS256', kid: 'idp-1', typ: 'JWT' })}.${encode({ iss: issuer, aud: 'gateway', iat: now, exp: now + 600, ...claims })}`;
      return `${input}.${sign('sha256', Buffer.from(input), createPrivateKey(privateKey)).toString('base64url')}`;
    };
    const gateway = await startGateway({
      GATEWAY_CONFIG: writeConfig({
        auth: {
          jwt_validation: {
            jwksUri: `http://127.0.0.1:${(idp.address() as AddressInfo).port}/jwks`,
            issuer,
            audience: 'gateway',
          },
        },
      }),
      GATEWAY_DATA_DIR: dataDir(),
      GATEWAY_ADMIN_CLAIM: 'groups=gateway-admin',
      GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
    });
    try {
      const admin = adminClient(gateway.url, '');
      const ok = await admin(
        'POST',
        '/mcp-servers',
        { slug: 'by-token', url: 'http://127.0.0.1:9/mcp' },
        {
          authorization: `Bearer ${token({ sub: 'ops-1', groups: ['eng', 'gateway-admin'] })}`,
        },
      );
      expect(ok.status).toBe(201);
      const audit = await admin('GET', '/audit?record=mcp-servers/by-token', undefined, {
        authorization: `Bearer ${token({ sub: 'ops-1', groups: ['gateway-admin'] })}`,
      });
      expect(audit.body.data[0].actor).toBe('token:https://idp.test/#ops-1');
      const refused = await admin('GET', '/providers', undefined, {
        authorization: `Bearer ${token({ sub: 'dev-1', groups: ['eng'] })}`,
      });
      expect([refused.status, refused.body.error.code]).toEqual([403, 'admin_required']);
    } finally {
      await gateway.stop();
      idp.close();
    }
  });
});

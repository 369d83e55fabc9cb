import { createPrivateKey, createPublicKey, sign } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startPostgres, type RunningPostgres } from '../../../../packages/catalog/test/postgres';
import { failedStart, rsaPem, startGateway, writeConfig, type RunningGateway } from '../support';
import { adminClient, newAdminKey, newEncryptionKey } from '../catalog/catalog-support';

jest.setTimeout(180_000);

/* eslint-disable @typescript-eslint/no-explicit-any */
async function consoleCall(
  base: string,
  method: string,
  path: string,
  cookie: string,
  csrf?: string,
): Promise<{ status: number; body: any }> {
  const res = await fetch(`${base}/console${path}`, {
    method,
    headers: { cookie, ...(csrf ? { 'x-csrf-token': csrf } : {}) },
  });
  return { status: res.status, body: await res.json() };
}

async function consoleSignIn(base: string, credential: string): Promise<{ cookie: string; csrf: string; body: any }> {
  const res = await fetch(`${base}/console/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ credential }),
  });
  const body = (await res.json()) as any;
  if (res.status !== 200) throw new Error(`sign-in answered ${res.status}: ${JSON.stringify(body)}`);
  const cookie = /gw_console=[^;]+/.exec(String(res.headers.get('set-cookie')))?.[0] as string;
  return { cookie, csrf: body.csrfToken, body };
}

/**
 * Console sessions across two gateway processes on one PostgreSQL server, as behind a load
 * balancer: a sign-out on one ends the session on the other within 1 s; restarting with another
 * admin key, or without one, ends every session; a session opened with an identity-provider
 * token ends at the token's expiry.
 */
describe('console sessions on two instances sharing PostgreSQL', () => {
  let postgres: RunningPostgres;
  let databaseUrl: string;
  let a: RunningGateway | undefined;
  let b: RunningGateway | undefined;
  const encryptionKey = newEncryptionKey();
  const env = (extra: Record<string, string | undefined>) => ({
    DATABASE_URL: databaseUrl,
    GATEWAY_CONFIG: writeConfig({}),
    GATEWAY_ENCRYPTION_KEY: encryptionKey,
    NODE_ENV: 'production',
    ...extra,
  });
  const restart = async (extra: Record<string, string | undefined>) => {
    await Promise.all([a?.stop(), b?.stop()]);
    [a, b] = await Promise.all([startGateway(env(extra)), startGateway(env(extra))]);
    return [a, b] as [RunningGateway, RunningGateway];
  };

  beforeAll(async () => {
    postgres = await startPostgres();
    databaseUrl = await postgres.createDatabase();
  });
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await postgres?.destroy();
  });

  it('ends on B, within 1 s, a session signed out on A', async () => {
    const key = newAdminKey();
    const [first, second] = await restart({ GATEWAY_ADMIN_KEY: key });
    const signed = await consoleSignIn(first.url, key);
    expect((await consoleCall(second.url, 'GET', '/api/providers', signed.cookie)).status).toBe(200);
    expect((await consoleCall(first.url, 'DELETE', '/session', signed.cookie, signed.csrf)).status).toBe(200);
    const signedOut = Date.now();
    let status = 200;
    while (status === 200 && Date.now() - signedOut < 3_000) {
      status = (await consoleCall(second.url, 'GET', '/api/providers', signed.cookie)).status;
    }
    expect(status).toBe(401);
    expect(Date.now() - signedOut).toBeLessThanOrEqual(1_200);
    const audit = await adminClient(first.url, key)('GET', '/audit');
    const events = audit.body.data.filter((e: { record: string }) => e.record === 'console/127.0.0.1');
    expect(events.map((e: { action: string }) => e.action).slice(0, 2)).toEqual(['sign_out', 'sign_in']);
    expect(events[0].actor).toMatch(/^console:admin-key:[0-9a-f]{8}$/);
  });

  it('ends every session when both instances restart with another admin key, or without one', async () => {
    const key = newAdminKey();
    const [first, second] = await restart({ GATEWAY_ADMIN_KEY: key });
    const one = await consoleSignIn(first.url, key);
    const two = await consoleSignIn(second.url, key);
    expect((await consoleCall(second.url, 'GET', '/session', one.cookie)).status).toBe(200);

    const rotated = newAdminKey();
    const [third, fourth] = await restart({ GATEWAY_ADMIN_KEY: rotated });
    for (const [gateway, session] of [
      [third, one],
      [fourth, one],
      [third, two],
      [fourth, two],
    ] as const) {
      const answer = await consoleCall(gateway.url, 'GET', '/api/providers', session.cookie);
      expect([answer.status, answer.body.error.code]).toEqual([401, 'missing_credentials']);
    }
    const current = await consoleSignIn(third.url, rotated);
    expect(current.body.actor).not.toBe(one.body.actor);

    const [fifth, sixth] = await restart({ GATEWAY_ADMIN_KEY: undefined });
    for (const gateway of [fifth, sixth]) {
      const answer = await consoleCall(gateway.url, 'POST', '/api/api-keys', current.cookie, current.csrf);
      expect([answer.status, answer.body.error.code]).toEqual([403, 'admin_disabled']);
    }
    // With the key back, the session stays ended: it ended when its key went away.
    const [seventh] = await restart({ GATEWAY_ADMIN_KEY: rotated });
    expect((await consoleCall(seventh.url, 'GET', '/session', current.cookie)).status).toBe(401);
  });

  it('ends a session opened with an identity-provider token when the token expires', async () => {
    const { privateKey, publicKey } = rsaPem();
    const jwk = { ...createPublicKey(publicKey).export({ format: 'jwk' }), kid: 'idp-1', alg: 'RS256', use: 'sig' };
    const idp: Server = createServer((_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ keys: [jwk] }));
    });
    await new Promise<void>((resolve) => idp.listen(0, '127.0.0.1', resolve));
    const issuer = 'https://idp.test/';
    const encode = (v: object) => Buffer.from(JSON.stringify(v)).toString('base64url');
    try {
      await Promise.all([a?.stop(), b?.stop()]);
      const extra = {
        GATEWAY_CONFIG: writeConfig({
          auth: {
            jwt_validation: {
              jwksUri: `http://127.0.0.1:${(idp.address() as AddressInfo).port}/jwks`,
              issuer,
              audience: 'gateway',
            },
          },
        }),
        GATEWAY_ADMIN_CLAIM: 'groups=gateway-admin',
      };
      [a, b] = await Promise.all([startGateway(env(extra)), startGateway(env(extra))]);
      // Made once both instances are up (starting them may take seconds on a busy machine).
      const exp = Math.floor(Date.now() / 1000) + 4;
      const input = `${encode({ alg: 'RS256', kid: 'idp-1', typ: 'JWT' })}.${encode({ iss: issuer, aud: 'gateway', sub: 'ops-1', groups: ['gateway-admin'], iat: exp - 60, exp })}`;
      const token = `${input}.${sign('sha256', Buffer.from(input), createPrivateKey(privateKey)).toString('base64url')}`;
      const signed = await consoleSignIn(a.url, token);
      expect(signed.body.actor).toBe('console:token:https://idp.test/#ops-1');
      expect(Date.parse(signed.body.expiresAt)).toBe(exp * 1000);
      expect((await consoleCall(b.url, 'GET', '/api/providers', signed.cookie)).status).toBe(200);
      await new Promise((r) => setTimeout(r, Math.max(0, exp * 1000 - Date.now() + 50)));
      for (const gateway of [a, b]) {
        expect((await consoleCall(gateway.url, 'GET', '/api/providers', signed.cookie)).status).toBe(401);
      }
    } finally {
      await new Promise<void>((resolve) => idp.close(() => resolve()));
    }
  });

  it('slows down wrong admin keys per address (429 too_many_attempts, retry-after) and audits them', async () => {
    const key = newAdminKey();
    const [first] = await restart({ GATEWAY_ADMIN_KEY: key });
    const signed = await consoleSignIn(first.url, key);
    const statuses: number[] = [];
    let retryAfter: string | null = null;
    for (let i = 0; i < 40; i++) {
      const res = await fetch(`${first.url}/admin/v1/providers`, {
        headers: { authorization: `Bearer not-the-admin-key-${i}-padding-000` },
      });
      statuses.push(res.status);
      if (res.status === 429) {
        retryAfter = res.headers.get('retry-after');
        expect(((await res.json()) as any).error.code).toBe('too_many_attempts');
      } else await res.arrayBuffer();
    }
    expect(statuses.filter((s) => s === 401)).toHaveLength(6);
    expect(statuses.at(-1)).toBe(429);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    // The address waits, whatever it claims to be (no trusted proxy is configured), even with the right key.
    const right = await adminClient(first.url, key)('GET', '/providers', undefined, {
      authorization: `Bearer ${key}`,
      'x-forwarded-for': '203.0.113.1',
    });
    expect(right.status).toBe(429);
    // A console session opened before is not a sign-in: it reads the audit of the refusals, which names no key.
    const audit = await consoleCall(first.url, 'GET', '/api/audit', signed.cookie);
    expect(audit.status).toBe(200);
    const refusals = audit.body.data.filter((e: any) => e.record === 'admin-api/127.0.0.1');
    expect(refusals.map((e: any) => [e.action, e.actor, e.fields])).toEqual(
      Array(6).fill(['sign_in_failed', 'anonymous', ['invalid_credentials']]),
    );
    expect(JSON.stringify(audit.body)).not.toContain('not-the-admin-key');
    // The audit filter names the address's record.
    const filtered = await consoleCall(first.url, 'GET', '/api/audit?record=admin-api/127.0.0.1', signed.cookie);
    expect(filtered.status).toBe(200);
    expect(filtered.body.data).toHaveLength(6);
  });

  it('refuses at start-up an admin key that is easy to guess, saying how to generate one', async () => {
    for (const weak of ['aaaaaaaaaaaaaaaaaaaaaaaaaaaa', 'passwordpasswordpassword', '123456789012345678901234']) {
      const { code, stderr } = await failedStart(env({ GATEWAY_ADMIN_KEY: weak }));
      expect(code).toBe(1);
      expect(stderr).toMatch(/GATEWAY_ADMIN_KEY is too easy to guess .*crypto\.randomBytes/);
    }
  });
});

import { randomBytes } from 'node:crypto';
import express from 'express';
import { startPostgres, type RunningPostgres } from '../../../packages/catalog/test/postgres';
import { documentedOperations } from '../../../packages/catalog/test/openapi';
import { mountRouteTable } from '../src/http/route-table';
import { rsaPem, startGateway, writeConfig, type RunningGateway } from './support';
import { freePort } from './oauth/oauth-support';

jest.setTimeout(120_000);

const ADMIN_KEY = 'admin-gate-Kq3vXp8LmT2wRz7NbY5c';

/** A concrete path of a documented operation (`{slug}` → `sample`, grant ids → a UUID). */
const concrete = (path: string) =>
  path.replace('{id}', '6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b').replace(/\{[^}]+\}/g, 'sample');

/**
 * CONTRACT section 8: every admin route authenticates through one path. For each operation of the
 * admin API's OpenAPI document, from an address of its own (behind a trusted proxy): wrong keys are
 * slowed down (`429 too_many_attempts` with `retry-after`), each refusal is audited as
 * `sign_in_failed`, and the right key is refused while the address is held back.
 */
describe('one admin authentication for every /admin/v1 route', () => {
  let postgres: RunningPostgres;
  let gateway: RunningGateway;

  beforeAll(async () => {
    postgres = await startPostgres();
    const port = await freePort();
    gateway = await startGateway({
      DATABASE_URL: await postgres.createDatabase(),
      GATEWAY_CONFIG: writeConfig({ oauth: { login: { type: 'api_key' } } }),
      GATEWAY_ADMIN_KEY: ADMIN_KEY,
      GATEWAY_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      JWT_PRIVATE_KEY: rsaPem().privateKey,
      PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
      TRUSTED_PROXIES: '127.0.0.1',
      NODE_ENV: 'production',
      PORT: String(port),
    });
  });

  afterAll(async () => {
    await gateway?.stop();
    await postgres?.destroy();
  });

  it('slows down, audits and holds back every documented operation', async () => {
    const operations = documentedOperations().filter((op) => op.path.startsWith('/admin/v1'));
    expect(operations.map((op) => `${op.method} ${op.path}`)).toEqual(
      expect.arrayContaining([
        'GET /admin/v1/oauth/settings',
        'PUT /admin/v1/oauth/settings',
        'GET /admin/v1/oauth/grants',
      ]),
    );
    const failures: string[] = [];
    for (const [index, op] of operations.entries()) {
      const address = `198.51.${100 + Math.floor(index / 250)}.${(index % 250) + 1}`;
      const call = (key: string) =>
        fetch(`${gateway.url}${concrete(op.path)}`, {
          method: op.method,
          headers: { authorization: `Bearer ${key}`, 'x-forwarded-for': address, 'content-type': 'application/json' },
          body: ['POST', 'PUT', 'PATCH'].includes(op.method) ? '{}' : undefined,
        });
      const statuses: number[] = [];
      let held: Response | undefined;
      for (let attempt = 0; attempt < 10 && !held; attempt++) {
        const res = await call(`wrong-admin-key-${attempt}-padding-0000000`);
        statuses.push(res.status);
        if (res.status === 429) held = res;
        else await res.arrayBuffer();
      }
      const right = await call(ADMIN_KEY);
      await right.arrayBuffer();
      const body = held ? ((await held.json()) as { error?: { code?: string } }) : undefined;
      const seen = {
        statuses: statuses.join(','),
        code: body?.error?.code,
        retryAfter: Number(held?.headers.get('retry-after')) >= 1,
        rightKeyWhileHeld: right.status,
      };
      const expected = {
        statuses: '401,401,401,401,401,401,429',
        code: 'too_many_attempts',
        retryAfter: true,
        rightKeyWhileHeld: 429,
      };
      if (JSON.stringify(seen) !== JSON.stringify(expected))
        failures.push(`${op.method} ${op.path}: ${JSON.stringify(seen)}`);
    }
    expect(failures).toEqual([]);

    // Every refusal is in the audit log as sign_in_failed of its address, no key in it.
    const audit = await fetch(`${gateway.url}/admin/v1/audit?limit=500`, {
      headers: { authorization: `Bearer ${ADMIN_KEY}`, 'x-forwarded-for': '192.0.2.200' },
    });
    expect(audit.status).toBe(200);
    const text = await audit.text();
    expect(text).not.toContain('wrong-admin-key');
    const entries = (JSON.parse(text) as { data: { action: string; record: string }[] }).data;
    const refusals = new Map<string, number>();
    for (const entry of entries)
      if (entry.action === 'sign_in_failed') refusals.set(entry.record, (refusals.get(entry.record) ?? 0) + 1);
    const missing = operations
      .map((op, index) => ({ op, address: `198.51.${100 + Math.floor(index / 250)}.${(index % 250) + 1}` }))
      .filter(({ address }) => refusals.get(`admin-api/${address}`) !== 6)
      .map(({ op, address }) => `${op.method} ${op.path}: ${refusals.get(`admin-api/${address}`) ?? 0} sign_in_failed`);
    expect(missing).toEqual([]);
  });

  it('refuses to mount a route below /admin that no authentication gate covers', () => {
    const handler: express.RequestHandler = (_req, res) => res.end();
    expect(() =>
      mountRouteTable(express(), [{ kind: 'app', method: 'ALL', paths: ['/admin/v1/new'], handler }]),
    ).toThrow('The route /admin/v1/new is below /admin but no authentication gate covers it.');
    const gate = {
      kind: 'gate',
      prefix: '/admin',
      authenticate: (_req: unknown, _res: unknown, next: () => void) => next(),
    } as const;
    expect(() =>
      mountRouteTable(express(), [{ kind: 'app', method: 'ALL', paths: ['/admin/v1/new'], handler }, gate]),
    ).toThrow('no authentication gate covers it');
    expect(() =>
      mountRouteTable(express(), [gate, { kind: 'app', method: 'ALL', paths: ['/admin/v1/new'], handler }]),
    ).not.toThrow();
  });
});

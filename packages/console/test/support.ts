import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import {
  AdminAccess,
  CatalogStore,
  DatabaseConsoleSessionStore,
  SecretBox,
  createAdminApi,
  migrate,
  openEmbeddedDatabase,
  type AdminAccessOptions,
  type CatalogDatabase,
} from '@gw/catalog';
import { createConsole, type ConsoleOptions } from '../src';

/** An answer of the console: status, headers, JSON body. */
export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

/** One HTTP call through node:http (so that `Origin` and `Host` are exactly what the test says). */
export function call(
  base: string,
  method: string,
  path: string,
  options: { headers?: Record<string, string>; body?: unknown } = {},
): Promise<Answer> {
  const text = options.body === undefined ? undefined : JSON.stringify(options.body);
  return new Promise((resolve, reject) => {
    const req = request(
      `${base}${path}`,
      {
        method,
        headers: {
          ...(text === undefined ? {} : { 'content-type': 'application/json' }),
          ...options.headers,
        },
        timeout: 10_000,
      },
      (res) => {
        let data = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (data += chunk));
        res.on('end', () => {
          let body: unknown = data;
          try {
            body = data === '' ? {} : JSON.parse(data);
          } catch {
            // Not JSON (an asset): the text.
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${path} timed out`)));
    req.on('error', reject);
    req.end(text);
  });
}

/** The catalog's embedded database, migrated, in a folder removed by `close`. */
export async function embeddedCatalog(): Promise<{ db: CatalogDatabase; store: CatalogStore; close(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'gw-console-test-'));
  const db = await openEmbeddedDatabase(dir);
  await migrate(db);
  return {
    db,
    store: new CatalogStore(db, new SecretBox(randomBytes(32))),
    close: async () => {
      await db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A console instance on 127.0.0.1: its own admin access, the shared database. */
export interface ConsoleInstance {
  base: string;
  access: AdminAccess;
  close(): Promise<void>;
}

/**
 * Starts the console and the admin API over `catalog` as a gateway instance would, with `access`
 * options of its own (another admin key is another start-up) and sessions in the database.
 */
export async function startConsole(
  catalog: { db: CatalogDatabase; store: CatalogStore },
  accessOptions: AdminAccessOptions,
  consoleOptions: Partial<ConsoleOptions> = {},
): Promise<ConsoleInstance> {
  const sessionStore = new DatabaseConsoleSessionStore(catalog.db);
  const access = new AdminAccess({
    ...accessOptions,
    onSignInFailure: (failure) =>
      void sessionStore.recordSignIn({ action: 'sign_in_failed', actor: 'anonymous', ...failure }),
  });
  const adminApi = createAdminApi({ store: catalog.store, access });
  const handler = createConsole({
    access,
    adminApi,
    sessionSecret: SESSION_SECRET,
    sessionStore,
    testRecord: async () => ({ ok: true, status: 200, message: 'answered' }),
    ...consoleOptions,
  });
  const server: Server = createServer((req, res) => {
    const url = req.url ?? '/';
    if (url.startsWith('/console')) void handler(req, res, url.slice('/console'.length) || '/');
    else void adminApi(req, res, url.slice('/admin/v1'.length));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    access,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The session secret every instance shares (derived from the encryption key in the gateway). */
export const SESSION_SECRET = Buffer.alloc(32, 7);

/** Signs in; answers the cookie and CSRF token, or throws with the answer. */
export async function signIn(
  base: string,
  credential: string,
): Promise<{ cookie: string; csrf: string; actor: string; answer: Answer }> {
  const answer = await call(base, 'POST', '/console/session', { body: { credential } });
  if (answer.status !== 200) throw new Error(`sign-in answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  const setCookie = String(answer.headers['set-cookie']);
  const cookie = /gw_console=([^;]+)/.exec(setCookie)?.[1] as string;
  return { cookie: `gw_console=${cookie}`, csrf: answer.body.csrfToken, actor: answer.body.actor, answer };
}

/** A token as an identity provider would issue it (unsigned: the test's verifyToken reads its claims). */
export function testToken(claims: Record<string, unknown>): string {
  const encode = (v: object) => Buffer.from(JSON.stringify(v)).toString('base64url');
  return `${encode({ alg: 'none' })}.${encode(claims)}.sig`;
}

/** The claims of {@link testToken}, as the host's verifyToken resolves them; rejects an expired token. */
export function verifyTestToken(now: () => number) {
  return async (token: string): Promise<Record<string, unknown>> => {
    const claims = JSON.parse(Buffer.from(token.split('.')[1] as string, 'base64url').toString('utf8')) as {
      exp?: number;
    };
    if (typeof claims.exp === 'number' && claims.exp * 1000 <= now()) throw new Error('expired');
    return claims;
  };
}

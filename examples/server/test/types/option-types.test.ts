import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { compileAccess } from '@gw/access';
import {
  AdminAccess,
  ConfigRecords,
  LiveCatalog,
  RequestLogWriter,
  adminApi,
  openPostgres,
  type CatalogDatabase,
  type CatalogStore,
} from '@gw/catalog';
import { ConsoleSessions, gatewayConsole } from '@gw/console';
import {
  IdentityTokenCache,
  authenticate,
  identityForwarding,
  protectedResourceMetadata,
} from '@gw/identity-forwarding';
import {
  RemoteKeySet,
  SigningKey,
  createIdentityTokenSigner,
  loadSigningKey,
  verifyGatewayIdentity,
  type SignIdentityTokenOptions,
} from '@gw/jwks';
import { createModelRoutes, modelRouter } from '@gw/model-router';
import { sigv4Proxy } from '@gw/sigv4-proxy';
import {
  ROWS,
  edit,
  label,
  misspell,
  renderFixture,
  rowOptions,
  runtime,
  setDeclared,
  type FactoryName,
  type OptionRow,
} from './option-table';

const signer = createIdentityTokenSigner(SigningKey.generate());
const access = new AdminAccess({ adminKey: 'admin-key-of-the-option-table' });
const handler = async () => undefined;
const store = { list: handler, get: handler, create: handler, update: handler, delete: handler };
const database = { query: async () => [], transaction: handler };
setDeclared({
  signer,
  keys: { getKey: async () => Promise.reject(new Error('unused')) },
  store,
  access,
  configRecords: new ConfigRecords(),
  database,
  adminHandler: handler,
  secret: Buffer.alloc(32, 7),
});

/** Each factory of the table, called as the fixture calls it. */
const CALL: Record<FactoryName, (options: never) => unknown> = {
  modelRouter,
  sigv4Proxy,
  authenticate,
  identityForwarding,
  protectedResourceMetadata,
  signIdentityToken: (options: SignIdentityTokenOptions) => signer.signIdentityToken({ sub: 'u' }, options),
  verifyGatewayIdentity,
  RemoteKeySet: (options) => new RemoteKeySet(options),
  loadSigningKey,
  compileAccess,
  adminApi,
  AdminAccess: (options) => new AdminAccess(options),
  gatewayConsole,
  ConsoleSessions: (options) => new ConsoleSessions(options),
  createModelRoutes,
  LiveCatalog: (options) =>
    new LiveCatalog(database as unknown as CatalogDatabase, store as unknown as CatalogStore, options),
  // Taken writers and pools are closed: neither leaves a timer or a connection behind.
  RequestLogWriter: (options) => void new RequestLogWriter(options).close(),
  openPostgres: (options) => void openPostgres('postgres://gw@127.0.0.1:9/gw', options).close(),
  IdentityTokenCache: (options) => new IdentityTokenCache(options),
};

const call = (row: OptionRow, options: unknown) => () => CALL[row.factory](options as never);
const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Every option of every exported factory, misspelt or of the wrong type, is refused twice from
 * one table: by the factory when it is called, and by `tsc` (the fixture's `@ts-expect-error`s).
 */
describe('factory options: the runtime and the types refuse the same calls', () => {
  const rows = ROWS.map((row) => [label(row), row] as const);

  it.each(rows)('%s: the valid options are taken', (_label, row) => {
    expect(call(row, runtime(rowOptions(row)))).not.toThrow();
  });

  it.each(rows.filter(([, row]) => misspell(row) !== ''))('%s: a misspelling is refused', (_label, row) => {
    const misspelt = misspell(row);
    const name = row.path.split('.').pop() as string;
    const error =
      row.misspeltError ?? new RegExp(`unknown (option|field) "${escape(misspelt)}"; did you mean "${escape(name)}"`);
    expect(call(row, runtime(edit(rowOptions(row), row.path, { rename: misspelt })))).toThrow(error);
  });

  it.each(rows)('%s: a value of the wrong type is refused', (_label, row) => {
    expect(call(row, runtime(edit(rowOptions(row), row.path, { set: row.wrong })))).toThrow(row.error);
  });

  it.each(rows.filter(([, row]) => row.required !== undefined))(
    '%s: leaving the required option out is refused',
    (_label, row) => {
      expect(call(row, runtime(edit(rowOptions(row), row.path, { remove: true })))).toThrow(row.required);
    },
  );

  it('the type fixture is rendered from the table', () => {
    const path = join(__dirname, 'options.fixture.ts');
    const rendered = renderFixture();
    if (process.env.UPDATE_OPTION_FIXTURE === '1') writeFileSync(path, rendered);
    expect(readFileSync(path, 'utf8')).toBe(rendered);
  });

  it('tsc refuses every misspelt and mistyped call of the fixture, and takes every valid one', () => {
    const tsc = join(__dirname, '../../../../node_modules/typescript/bin/tsc');
    const result = spawnSync(process.execPath, [tsc, '--noEmit', '-p', __dirname], { encoding: 'utf8' });
    expect(result.stdout + result.stderr).toBe('');
    expect(result.status).toBe(0);
  }, 120_000);
});

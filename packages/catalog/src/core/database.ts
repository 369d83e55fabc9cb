import { copyFileSync, cpSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { rejectUnknownOptions } from '@gw/options';
import type * as Pg from 'pg';
import type { PoolClient } from 'pg';

/** Runs SQL: the database itself, or one transaction on it. */
export interface SqlExecutor {
  query<Row = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<Row[]>;
  /** Runs a script of several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
}

/**
 * One SQL dialect (PostgreSQL) on two engines: an embedded PGlite in a data directory (zero set-up,
 * one instance) or a PostgreSQL server (`DATABASE_URL`, shared by every instance).
 */
export interface CatalogDatabase extends SqlExecutor {
  /** `embedded` (PGlite) or `postgres`. */
  readonly kind: 'embedded' | 'postgres';
  /** Runs `work` in one transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(work: (tx: SqlExecutor) => Promise<T>): Promise<T>;
  /** Calls `onNotify` on every NOTIFY of `channel`; resolves with a function that stops listening. */
  listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>>;
  /** Closes every connection. */
  close(): Promise<void>;
  /**
   * Appends rows to `table` with COPY in its text format: one row a line, columns in the order of
   * `columns` separated by tabs, `\N` for null, and a backslash before a backslash, tab, newline or
   * carriage return in a value. The embedded database only (absent on PostgreSQL): there it costs
   * a quarter less CPU than an INSERT that expands the rows from JSON, and that CPU is the
   * gateway's own (docs/decisions.md, "Request records on the embedded database").
   */
  copyRows?(table: string, columns: readonly string[], lines: string): Promise<void>;
}

/** A table or column name {@link CatalogDatabase.copyRows} writes into its statement as it is. */
const PLAIN_IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;

/** Options of {@link openPostgres}. */
export interface PostgresOptions {
  /** Most connections in the pool. Default 10. */
  maxConnections?: number;
  /** Longest wait for a connection or a query, in ms. Default 5000. */
  timeoutMs?: number;
  /** Called when the listening connection breaks (the database went away). Default: none. */
  onListenError?: (error: Error) => void;
}

/**
 * The prepared data directory (PostgreSQL's initdb, run when the package was built) for the
 * installed PGlite version: `dist/pglite-data/<version>`, or `undefined` when the package was
 * built with another version (then PGlite runs initdb itself).
 */
export function preparedDataDirectory(): string | undefined {
  const entry = require.resolve('@electric-sql/pglite');
  const { version } = JSON.parse(readFileSync(join(dirname(entry), '..', 'package.json'), 'utf8')) as {
    version: string;
  };
  const dir = join(__dirname, '..', '..', 'dist', 'pglite-data', version);
  return existsSync(join(dir, 'PG_VERSION')) ? dir : undefined;
}

/**
 * The directories of the prepared data directory, from the list written beside it at build time
 * (`<version>.directories.json`): the empty ones are missing from an installed package. Only
 * plain relative names are taken.
 */
function preparedDirectories(prepared: string): string[] {
  const manifest = `${prepared}.directories.json`;
  if (!existsSync(manifest)) return [];
  const listed = JSON.parse(readFileSync(manifest, 'utf8')) as unknown;
  if (!Array.isArray(listed)) return [];
  return listed.filter(
    (name): name is string =>
      typeof name === 'string' && /^[A-Za-z0-9_]+(\/[A-Za-z0-9_]+)*$/.test(name) && name.length <= 200,
  );
}

/**
 * The embedded database: PGlite (PostgreSQL compiled to WebAssembly) in `dataDir`, created when
 * missing. An empty directory is filled from the prepared data directory built with the package
 * ({@link preparedDataDirectory}): PGlite's own initdb peaks near 800 MB resident; a copied
 * directory opens like any later start (under 300 MB).
 */
export async function openEmbeddedDatabase(dataDir: string): Promise<CatalogDatabase> {
  mkdirSync(dataDir, { recursive: true });
  const prepared = existsSync(join(dataDir, 'PG_VERSION')) ? undefined : preparedDataDirectory();
  if (prepared !== undefined) {
    // PG_VERSION last: a copy cut short is copied again at the next start.
    cpSync(prepared, dataDir, { recursive: true, filter: (from) => from !== join(prepared, 'PG_VERSION') });
    // A package tarball keeps no empty directory; PostgreSQL needs each one the build listed.
    for (const directory of preparedDirectories(prepared)) mkdirSync(join(dataDir, directory), { recursive: true });
    copyFileSync(join(prepared, 'PG_VERSION'), join(dataDir, 'PG_VERSION'));
  }
  // Loaded here, not at the top: a gateway on `DATABASE_URL` never loads PGlite (its code and
  // WebAssembly are about 100 MB resident).
  const { PGlite: Engine } = await import('@electric-sql/pglite');
  // The catalog is small: 8 MB of shared buffers instead of PostgreSQL's 128 MB (16 MB cost 9 MB
  // more resident at start; 128 MB, 130 MB more: docs/decisions.md).
  const db = await Engine.create(dataDir, {
    startParams: [...Engine.defaultStartParams, '-c', 'shared_buffers=8MB'],
  });
  return {
    kind: 'embedded',
    async query<Row>(sql: string, params: readonly unknown[] = []) {
      return (await db.query<Row>(sql, params as unknown[])).rows;
    },
    async exec(sql: string) {
      await db.exec(sql);
    },
    transaction: (work) =>
      db.transaction((tx) =>
        work({
          query: async <Row>(sql: string, params: readonly unknown[] = []) =>
            (await tx.query<Row>(sql, params as unknown[])).rows,
          exec: async (sql: string) => {
            await tx.exec(sql);
          },
        }),
      ),
    listen: async (channel, onNotify) => {
      const stop = await db.listen(channel, onNotify);
      return async () => stop();
    },
    close: () => db.close(),
    async copyRows(table, columns, lines) {
      if (!PLAIN_IDENTIFIER.test(table) || columns.length === 0 || !columns.every((c) => PLAIN_IDENTIFIER.test(c)))
        throw new TypeError('copyRows needs a lower-case table name and at least one lower-case column name.');
      // PGlite reads the data of `FROM '/dev/blob'` from the blob passed with the query.
      await db.query(`COPY ${table} (${columns.join(',')}) FROM '/dev/blob'`, [], { blob: new Blob([lines]) });
    },
  };
}

/** The longest delay a Node.js timer keeps. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * A PostgreSQL server at `url` (`postgres://user:password@host:port/database`). Nothing connects
 * until the first query. Throws a `TypeError` naming the option for an unknown option (with the
 * spelling to write) or one of the wrong type; the message never holds the URL (it has a password).
 */
export function openPostgres(url: string, options: PostgresOptions = {}): CatalogDatabase {
  if (typeof url !== 'string' || url === '')
    throw new TypeError('openPostgres needs the database URL, such as postgres://user:password@host:5432/gateway.');
  if (typeof options !== 'object' || options === null)
    throw new TypeError('openPostgres options must be an object such as { maxConnections: 10, timeoutMs: 5000 }.');
  rejectUnknownOptions(options, ['maxConnections', 'timeoutMs', 'onListenError'], 'openPostgres');
  const maxConnections = options.maxConnections ?? 10;
  if (!Number.isInteger(maxConnections) || maxConnections < 1)
    throw new TypeError('openPostgres maxConnections must be a whole number of at least 1, for example 10.');
  const timeoutMs = options.timeoutMs ?? 5_000;
  if (typeof timeoutMs !== 'number' || !(timeoutMs > 0) || timeoutMs > MAX_TIMER_MS)
    throw new TypeError(
      `openPostgres timeoutMs must be a positive number of milliseconds up to ${MAX_TIMER_MS}, for example 5000.`,
    );
  if (options.onListenError !== undefined && typeof options.onListenError !== 'function')
    throw new TypeError('openPostgres onListenError must be a function (error) => void.');
  // `pg` loads with the first PostgreSQL database: the embedded default never needs it (about 90 ms at start-up).
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded only for PostgreSQL
  const { Pool } = require('pg') as typeof Pg;
  const pool = new Pool({
    connectionString: url,
    max: maxConnections,
    connectionTimeoutMillis: timeoutMs,
    query_timeout: timeoutMs,
    idleTimeoutMillis: 30_000,
  });
  // A connection that breaks while idle must not end the process.
  pool.on('error', () => undefined);
  const listeners = new Set<PoolClient>();
  return {
    kind: 'postgres',
    async query<Row>(sql: string, params: readonly unknown[] = []) {
      return (await pool.query(sql, params as unknown[])).rows as Row[];
    },
    async exec(sql: string) {
      await pool.query(sql);
    },
    async transaction(work) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const result = await work({
          query: async <Row>(sql: string, params: readonly unknown[] = []) =>
            (await client.query(sql, params as unknown[])).rows as Row[],
          exec: async (sql: string) => {
            await client.query(sql);
          },
        });
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    },
    async listen(channel, onNotify) {
      const client = await pool.connect();
      listeners.add(client);
      client.on('notification', (message) => {
        if (message.channel === channel) onNotify(message.payload ?? '');
      });
      client.on('error', (error) => options.onListenError?.(error));
      await client.query(`LISTEN "${channel.replace(/"/g, '')}"`);
      return async () => {
        listeners.delete(client);
        await client.query(`UNLISTEN "${channel.replace(/"/g, '')}"`).catch(() => undefined);
        client.release();
      };
    },
    async close() {
      for (const client of listeners) client.release(true);
      listeners.clear();
      await pool.end();
    },
  };
}

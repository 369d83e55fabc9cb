import type { CatalogDatabase } from './database';
import type { SecretBox } from './secret-box';

type Json = Record<string, unknown>;

/** A stored response as `@gw/model-router`'s `ResponsesStore` reads it. */
export interface StoredResponseRecord {
  response: Json;
  items: Json[];
}

/** Options of {@link DatabaseResponsesStore}. */
export interface DatabaseResponsesStoreOptions {
  /** The catalog's database (migrated). Required. */
  db: CatalogDatabase;
  /** The catalog's secret box: responses are sealed with it, as secrets are. Required. */
  box: SecretBox;
  /** Days a response is kept (`GATEWAY_RESPONSES_DAYS`). Default 30. */
  retentionDays?: number;
  /** How often expired responses are deleted, in ms. Default 3600000 (hourly; also at start). */
  retentionIntervalMs?: number;
  /** Called with a failed deletion of expired responses, for the host's log. Default: none. */
  onError?: (error: unknown) => void;
}

/** The SQL of migration 8: stored Responses API responses, sealed. */
export const RESPONSES_MIGRATION_SQL = `
  CREATE TABLE gw_responses (
    id text PRIMARY KEY,
    owner text NOT NULL,
    sealed text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL
  );
  CREATE INDEX gw_responses_expires ON gw_responses (expires_at);
`;

/** The additional data a stored response is sealed with: its id and owner, so a row moved or re-owned does not open. */
function responseContext(owner: string, id: string): string {
  return JSON.stringify(['gw-response-v1', owner, id]);
}

const MAX_TIMER_MS = 2_147_483_647;

/** Most days a stored response may be kept (`retentionDays`, `GATEWAY_RESPONSES_DAYS`): ten years. */
export const MAX_RESPONSE_RETENTION_DAYS = 3650;

/**
 * Stored Responses API responses in the catalog's database (`gw_responses`): each row holds the
 * response and its conversation items sealed with the catalog's {@link SecretBox} (AES-256-GCM,
 * bound to the response's id and owner), the owner (a digest of the caller) and when it expires.
 * Rows past `retentionDays` are deleted hourly and never read.
 */
export class DatabaseResponsesStore {
  private readonly db: CatalogDatabase;
  private readonly box: SecretBox;
  private readonly retentionDays: number;
  private readonly onError: ((error: unknown) => void) | undefined;
  private readonly timer: NodeJS.Timeout;

  /** Starts the hourly deletion of expired responses (unref'd; {@link close} stops it). */
  constructor(options: DatabaseResponsesStoreOptions) {
    if (typeof options !== 'object' || options === null || typeof options.db?.query !== 'function')
      throw new TypeError('DatabaseResponsesStore needs { db, box }: the catalog database and its SecretBox.');
    if (typeof options.box?.seal !== 'function')
      throw new TypeError('DatabaseResponsesStore needs { box }: the catalog SecretBox that seals secrets.');
    const days = options.retentionDays ?? 30;
    if (!Number.isInteger(days) || days < 1 || days > MAX_RESPONSE_RETENTION_DAYS)
      throw new TypeError(
        `DatabaseResponsesStore retentionDays must be a whole number of days from 1 to ${MAX_RESPONSE_RETENTION_DAYS}, for example 30.`,
      );
    const every = options.retentionIntervalMs ?? 3_600_000;
    if (!(Number.isInteger(every) && every > 0 && every <= MAX_TIMER_MS))
      throw new TypeError(
        'DatabaseResponsesStore retentionIntervalMs must be a whole number of milliseconds, for example 3600000.',
      );
    if (options.onError !== undefined && typeof options.onError !== 'function')
      throw new TypeError('DatabaseResponsesStore onError must be a function (error) => void.');
    this.db = options.db;
    this.box = options.box;
    this.retentionDays = days;
    this.onError = options.onError;
    this.timer = setInterval(() => void this.deleteExpired(), every).unref();
    void this.deleteExpired();
  }

  /** Stores a response under its owner, sealed. */
  async put(owner: string, id: string, stored: StoredResponseRecord): Promise<void> {
    const sealed = this.box.seal(JSON.stringify(stored), responseContext(owner, id));
    await this.db.query(
      `INSERT INTO gw_responses (id, owner, sealed, expires_at)
       VALUES ($1, $2, $3, now() + make_interval(days => $4::int))`,
      [id, owner, sealed, this.retentionDays],
    );
  }

  /** The owner's unexpired response with `id`, opened; undefined for another owner's, an unknown or an expired one. */
  async get(owner: string, id: string): Promise<StoredResponseRecord | undefined> {
    const rows = await this.db.query<{ sealed: string }>(
      'SELECT sealed FROM gw_responses WHERE id = $1 AND owner = $2 AND expires_at > now()',
      [id, owner],
    );
    const row = rows[0];
    if (row === undefined) return undefined;
    return JSON.parse(this.box.open(row.sealed, responseContext(owner, id), `response ${id}`)) as StoredResponseRecord;
  }

  /** Deletes the owner's response; false when the owner has none with `id`. */
  async delete(owner: string, id: string): Promise<boolean> {
    const rows = await this.db.query('DELETE FROM gw_responses WHERE id = $1 AND owner = $2 RETURNING id', [id, owner]);
    return rows.length > 0;
  }

  /** Deletes expired responses. */
  async deleteExpired(): Promise<void> {
    try {
      await this.db.query('DELETE FROM gw_responses WHERE expires_at <= now()');
    } catch (error) {
      this.onError?.(error);
    }
  }

  /** Stops the deletion timer. */
  close(): void {
    clearInterval(this.timer);
  }
}

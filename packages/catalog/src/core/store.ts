import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { CatalogDatabase, SqlExecutor } from './database';
import {
  ConfigInUseError,
  InvalidRecordError,
  RecordNotFoundError,
  ServerInUseError,
  SecretUnreadableError,
  SlugTakenError,
  VersionConflictError,
} from './errors';
import {
  API_KEY_CHANGEABLE_FIELDS,
  LIMIT_REMOVABLE_FIELDS,
  NAMED_CONFIG_REMOVABLE_FIELDS,
  VIRTUAL_SERVER_REMOVABLE_FIELDS,
  checkApiKeyExpiry,
  checkSecretsGivenForRoutingChange,
  isSecretField,
  secretFieldSteps,
  secretFieldsIn,
  secretHolderOf,
  slugOf,
  validateInput,
  withHints,
  withSecrets,
  withoutSecrets,
  type RecordKind,
} from './records';
import { SecretBox, secretContext, secretHint } from './secret-box';

/** The NOTIFY channel every write announces itself on (payload: the kind that changed). */
export const CATALOG_CHANNEL = 'gw_catalog';

/** An arbitrary constant: the advisory lock that lets one instance upgrade sealed secrets at a time. */
const SEALING_UPGRADE_LOCK = 7_305_012;

/** A record as the admin API answers it: no secret, only `<field>Hint`. */
export interface PublicRecord {
  id: string;
  version: number;
  createdAt: string;
  updatedAt: string;
  source: 'admin' | 'config';
  [field: string]: unknown;
}

/** A record with its secrets opened, for the gateway's in-memory snapshot only. Never answered. */
export interface OpenedRecord {
  kind: RecordKind;
  id: string;
  slug: string;
  version: number;
  data: Record<string, unknown>;
  secrets: Record<string, string>;
}

/** One line of the audit log. Never a secret value: only the names of the fields that changed. */
export interface AuditEntry {
  id: number;
  at: string;
  actor: string;
  action:
    | 'create'
    | 'update'
    | 'delete'
    | 'revoke'
    | 'approve_tool'
    | 'upstream_connected'
    | 'upstream_refreshed_after_failure'
    | 'upstream_refresh_refused'
    | 'upstream_disconnected';
  record: string;
  version: number | null;
  fields: string[];
}

interface Row {
  kind: RecordKind;
  id: string;
  slug: string;
  version: number;
  data: Record<string, unknown>;
  secrets: Record<string, string>;
  hints: Record<string, string>;
  created_at: Date | string;
  updated_at: Date | string;
}

const iso = (value: Date | string) => (value instanceof Date ? value : new Date(value)).toISOString();

function publicRecord(row: Row): PublicRecord {
  return {
    id: row.id,
    version: Number(row.version),
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
    source: 'admin',
    ...withHints(row.kind, publicData(row.data), row.hints),
  };
}

/** The value at `steps` of `data`, or undefined. */
function valueAtSteps(data: unknown, steps: readonly string[]): unknown {
  let value = data;
  for (const step of steps) {
    if (typeof value !== 'object' || value === null || !Object.hasOwn(value, step)) return undefined;
    value = (value as Record<string, unknown>)[step];
  }
  return value;
}

/**
 * The stored secrets (`opened`, by field) a change keeps, put into `merged` (the record after the
 * change): a secret whose top-level field the change leaves out is kept; inside a field the change
 * gives (`upstream_auth`), a secret it leaves out is kept where its object is still there, one it
 * gives as null is removed; a secret map it leaves out is kept whole, an entry given as null keeps
 * its value, an entry left out of a given map is removed. Also answers the held secrets not kept.
 */
function keepSecrets(
  kind: RecordKind,
  merged: Record<string, unknown>,
  changes: Record<string, unknown>,
  opened: Record<string, string>,
): { record: Record<string, unknown>; dropped: string[] } {
  const holder = secretHolderOf(kind, merged);
  const kept: Record<string, string> = {};
  let record = merged;
  for (const [field, value] of Object.entries(opened)) {
    const steps = secretFieldSteps(holder, field);
    const top = steps[0] as string;
    if (!Object.hasOwn(changes, top)) {
      kept[field] = value;
      continue;
    }
    const mapPath = holder?.secretMaps?.find((path) => field.startsWith(`${path}.`));
    if (mapPath === undefined) {
      const parent = valueAtSteps(changes, steps.slice(0, -1));
      if (typeof parent === 'object' && parent !== null && !Object.hasOwn(parent, steps[steps.length - 1] as string))
        kept[field] = value;
      continue;
    }
    const mapSteps = mapPath.split('.');
    const given = valueAtSteps(changes, mapSteps);
    const container = valueAtSteps(record, mapSteps.slice(0, -1));
    if (given === undefined && typeof container === 'object' && container !== null && holder !== undefined) {
      // The map left out of a change of its object: kept whole (created again to put the entries in).
      if (!Object.hasOwn(container, mapSteps[mapSteps.length - 1] as string)) record = withSecretMap(record, mapSteps);
      kept[field] = value;
    } else if (
      typeof given === 'object' &&
      given !== null &&
      (given as Record<string, unknown>)[steps[steps.length - 1] as string] === null
    ) {
      kept[field] = value;
    }
  }
  record = withSecrets(kind, record, kept);
  // A secret given as null (and not kept) is removed.
  for (const field of holder?.secrets ?? []) {
    const steps = field.split('.');
    const parent = valueAtSteps(record, steps.slice(0, -1));
    if (
      typeof parent === 'object' &&
      parent !== null &&
      (parent as Record<string, unknown>)[steps[steps.length - 1] as string] === null
    ) {
      record = withSecrets(kind, record, {});
      delete (valueAtSteps(record, steps.slice(0, -1)) as Record<string, unknown>)[steps[steps.length - 1] as string];
    }
  }
  return { record, dropped: Object.keys(opened).filter((field) => !Object.hasOwn(kept, field)) };
}

/** `record` with an empty object at `steps` (its objects on the way copied). */
function withSecretMap(record: Record<string, unknown>, steps: readonly string[]): Record<string, unknown> {
  const root = { ...record };
  let at = root;
  for (const [index, step] of steps.entries()) {
    const next = at[step];
    at[step] = index === steps.length - 1 ? {} : { ...(next as Record<string, unknown>) };
    at = at[step] as Record<string, unknown>;
  }
  return root;
}

/** The fields of a record's data an answer may carry: not the digest of an API key, not the `_` fields the gateway keeps for itself. */
function publicData(data: Record<string, unknown>): Record<string, unknown> {
  const visible: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(data)) {
    if (field === 'keySha256' || field.startsWith('_')) continue;
    visible[field] = value;
  }
  return visible;
}

/** The `_` fields of a record's data: what the gateway keeps beside the operator's fields. */
function internalData(data: Record<string, unknown>): Record<string, unknown> {
  const internal: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(data)) if (field.startsWith('_')) internal[field] = value;
  return internal;
}

/** The host's own fields, each named with a leading `_` so no operator field can collide with them. */
function underscored(internal: Record<string, unknown>): Record<string, unknown> {
  const named: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(internal)) named[field.startsWith('_') ? field : `_${field}`] = value;
  return named;
}

/** What the host adds to the store's own checks. */
export interface CatalogStoreHooks {
  /**
   * Checks a validated record (secrets included) before it is written, for what only the host
   * knows (a `jwt_header` server needs a signing key, say); throws {@link InvalidRecordError}
   * naming the field. Default: none.
   */
  check?: (kind: RecordKind, data: Record<string, unknown>) => void;
  /**
   * Fields the gateway keeps beside the operator's (stored as `_<name>`, never answered), computed
   * from the record and the fields a change gives. Default: none.
   */
  annotate?: (kind: RecordKind, data: Record<string, unknown>, changed: readonly string[]) => Record<string, unknown>;
  /**
   * Whether a record the store does not hold exists (the config file's): an API key's `config` may
   * name a named config of the config file. Default: none does.
   */
  recordOutsideStore?: (kind: RecordKind, slug: string) => boolean;
}

/**
 * The catalog's records in the database: create, read, update (optimistic, on `version`),
 * delete, each with a line in the audit log in the same transaction and a NOTIFY on commit.
 * Secrets are sealed with the {@link SecretBox} before they reach the database.
 */
export class CatalogStore {
  constructor(
    private readonly db: CatalogDatabase,
    private readonly box: SecretBox,
    private readonly hooks: CatalogStoreHooks = {},
  ) {}

  /** Every record of `kind`, by slug. */
  async list(kind: RecordKind): Promise<PublicRecord[]> {
    const rows = await this.db.query<Row>('SELECT * FROM gw_records WHERE kind = $1 ORDER BY slug', [kind]);
    return rows.map(publicRecord);
  }

  /** One record; {@link RecordNotFoundError} when there is none. */
  async get(kind: RecordKind, slug: string): Promise<PublicRecord> {
    return publicRecord(await this.row(this.db, kind, slug));
  }

  /**
   * Creates a record from admin input. An API key is generated here: the answer carries it once,
   * as `key`; the database keeps only its SHA-256.
   */
  async create(
    kind: RecordKind,
    input: unknown,
    actor: string,
    internal: Record<string, unknown> = {},
  ): Promise<PublicRecord & { key?: string }> {
    const validated = validateInput(kind, input);
    if (kind === 'api-keys') checkApiKeyExpiry(validated.expiresAt);
    this.runCheck(kind, validated);
    const data = {
      ...validated,
      ...underscored(this.hooks.annotate?.(kind, validated, Object.keys(validated)) ?? {}),
      ...underscored(internal),
    };
    let key: string | undefined;
    let slug: string;
    if (kind === 'api-keys') {
      key = `gw-${randomBytes(24).toString('base64url')}`;
      slug = randomUUID();
      data.keySha256 = createHash('sha256').update(key).digest('hex');
    } else {
      slug = slugOf(kind, data);
    }
    const id = kind === 'api-keys' ? slug : randomUUID();
    const { stored, secrets, hints } = this.seal(kind, id, 1, data, {});
    if (key !== undefined) hints.key = secretHint(key);
    const row = await this.db.transaction(async (tx) => {
      const taken = await tx.query('SELECT 1 FROM gw_records WHERE kind = $1 AND slug = $2', [kind, slug]);
      if (taken.length > 0) throw new SlugTakenError(`"${slug}" is already used.`, kind === 'prompts' ? 'id' : 'slug');
      if (kind === 'api-keys') await this.checkConfigExists(tx, validated.config);
      if (kind === 'mcp-servers' || kind === 'virtual-servers') await this.checkMcpSlugFree(tx, kind, slug);
      if (kind === 'virtual-servers') await this.checkMembersExist(tx, validated.members);
      const now = new Date();
      const [created] = await tx.query<Row>(
        `INSERT INTO gw_records (kind, id, slug, version, data, secrets, hints, created_at, updated_at)
         VALUES ($1, $2, $3, 1, $4, $5, $6, $7, $7) ON CONFLICT (kind, slug) DO NOTHING RETURNING *`,
        [kind, id, slug, JSON.stringify(stored), JSON.stringify(secrets), JSON.stringify(hints), now],
      );
      if (!created) throw new SlugTakenError(`"${slug}" is already used.`, 'slug');
      await this.audit(tx, actor, 'create', kind, created, Object.keys(publicData(data)));
      return created;
    });
    return key === undefined ? publicRecord(row) : { ...publicRecord(row), key };
  }

  /**
   * Applies a partial update based on `version`: the fields given replace the stored ones; a secret
   * left out keeps its stored value, unless the change moves a routing field of its record
   * ({@link SECRET_HOLDERS}): then every secret must be given again, else
   * {@link SecretsRequiredForRoutingChangeError} (`400 invalid_request` naming the first missing).
   * {@link VersionConflictError} when the record changed since.
   */
  async update(
    kind: RecordKind,
    slug: string,
    patch: unknown,
    actor: string,
    internal: Record<string, unknown> = {},
  ): Promise<PublicRecord> {
    if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) {
      throw new InvalidRecordError('The body must be a JSON object with the fields to change and "version".', null);
    }
    const { version, ...changes } = patch as Record<string, unknown>;
    if (!Number.isInteger(version)) {
      throw new InvalidRecordError('version must be the version the change is based on.', 'version');
    }
    if (kind === 'api-keys') {
      const other = Object.keys(changes).find((field) => !API_KEY_CHANGEABLE_FIELDS.includes(field));
      if (other !== undefined)
        throw new InvalidRecordError(
          `${other.slice(0, 64)} of an API key cannot be changed (only name, expiresAt and config): revoke it and create another.`,
          other.slice(0, 64),
        );
      checkApiKeyExpiry(changes.expiresAt);
    }
    return this.db.transaction(async (tx) => {
      const row = await this.row(tx, kind, slug);
      if (Number(row.version) !== version) {
        throw new VersionConflictError(`The record is at version ${row.version}, not ${String(version)}.`, 'version');
      }
      const identity = kind === 'prompts' ? 'id' : 'slug';
      if (Object.hasOwn(changes, identity) && changes[identity] !== slug) {
        throw new InvalidRecordError(`${identity} cannot be changed.`, identity);
      }
      if (Object.hasOwn(changes, 'provider') && changes.provider !== row.data.provider) {
        throw new InvalidRecordError('provider cannot be changed.', 'provider');
      }
      // A secret the change gives again need not open (a record whose secret no longer opens is mended so).
      const givenSecrets = secretFieldsIn(kind, { ...row.data, ...changes });
      const opened = this.openSecrets(kind, row, [...Object.keys(changes), ...givenSecrets]);
      const kept = keepSecrets(kind, { ...publicData(row.data), ...changes }, changes, opened);
      const merged: Record<string, unknown> = kept.record;
      // An API key's expiry or name given as null is removed.
      if (kind === 'api-keys')
        for (const field of API_KEY_CHANGEABLE_FIELDS) if (merged[field] === null) delete merged[field];
      // A limit's name or cap given as null is removed (that cap is no longer enforced).
      if (kind === 'limits')
        for (const field of LIMIT_REMOVABLE_FIELDS) if (merged[field] === null) delete merged[field];
      // A named config's name given as null is removed.
      if (kind === 'configs')
        for (const field of NAMED_CONFIG_REMOVABLE_FIELDS) if (merged[field] === null) delete merged[field];
      // A virtual server's name given as null is removed.
      if (kind === 'virtual-servers')
        for (const field of VIRTUAL_SERVER_REMOVABLE_FIELDS) if (merged[field] === null) delete merged[field];
      // An MCP server's upstream_auth given as null is removed (its secrets with it).
      if (kind === 'mcp-servers' && merged.upstream_auth === null) delete merged.upstream_auth;
      const validated = validateInput(kind, merged);
      // A change of where the secrets go (a routing field) gives every secret again: a stored secret
      // is never sent to a place it was not given for (a field's own errors are named first).
      checkSecretsGivenForRoutingChange(
        kind,
        row.data,
        { ...row.data, ...changes },
        Object.keys(row.secrets),
        // Given again, removed by the host (given as undefined) or dropped with the object holding
        // it: either way not carried to the new place.
        [
          ...Object.keys(changes),
          ...givenSecrets.filter((field) => isSecretField(secretHolderOf(kind, merged), field)),
          ...kept.dropped,
        ],
      );
      // The digest of an API key is not an operator field: it stays as stored.
      if (kind === 'api-keys') validated.keySha256 = row.data.keySha256;
      this.runCheck(kind, validated);
      if (kind === 'api-keys' && Object.hasOwn(changes, 'config')) await this.checkConfigExists(tx, validated.config);
      if (kind === 'virtual-servers' && Object.hasOwn(changes, 'members'))
        await this.checkMembersExist(tx, validated.members);
      const data = {
        ...validated,
        ...internalData(row.data),
        ...underscored(this.hooks.annotate?.(kind, validated, Object.keys(changes)) ?? {}),
        ...underscored(internal),
      };
      // Sealed again for the version this change writes, bound to the routing fields it leaves.
      const { stored, secrets, hints } = this.seal(kind, row.id, Number(row.version) + 1, data, row);
      const [updated] = await tx.query<Row>(
        `UPDATE gw_records SET data = $1, secrets = $2, hints = $3, version = version + 1, updated_at = $4
         WHERE kind = $5 AND slug = $6 AND version = $7 RETURNING *`,
        [JSON.stringify(stored), JSON.stringify(secrets), JSON.stringify(hints), new Date(), kind, slug, version],
      );
      if (!updated) throw new VersionConflictError('The record changed meanwhile.', 'version');
      await this.audit(tx, actor, 'update', kind, updated, Object.keys(changes));
      return publicRecord(updated);
    });
  }

  /** One record with its secrets opened (for the host's checks, never for an answer); undefined when there is none. */
  async getOpened(kind: RecordKind, slug: string): Promise<OpenedRecord | undefined> {
    const [row] = await this.db.query<Row>('SELECT * FROM gw_records WHERE kind = $1 AND slug = $2', [kind, slug]);
    return (
      row && {
        kind,
        id: row.id,
        slug: row.slug,
        version: Number(row.version),
        data: row.data,
        secrets: this.openSecrets(kind, row),
      }
    );
  }

  /** Deletes a record (an API key: revokes it, and forgets its last use). */
  async delete(kind: RecordKind, slug: string, actor: string): Promise<void> {
    await this.db.transaction(async (tx) => {
      const [deleted] = await tx.query<Row>('DELETE FROM gw_records WHERE kind = $1 AND slug = $2 RETURNING *', [
        kind,
        slug,
      ]);
      if (!deleted) throw new RecordNotFoundError(`No ${kind} record "${slug.slice(0, 64)}".`);
      // Deleted first, then checked: a key naming the config written meanwhile waited for this
      // row's lock and is seen now (the transaction rolls back), or finds the config gone.
      if (kind === 'configs') {
        const [user] = await tx.query<{ id: string; name: unknown }>(
          "SELECT id, data->>'name' AS name FROM gw_records WHERE kind = 'api-keys' AND data->>'config' = $1 ORDER BY created_at, id LIMIT 1",
          [slug],
        );
        if (user) {
          const named = typeof user.name === 'string' ? ` ("${user.name.slice(0, 64)}")` : '';
          throw new ConfigInUseError(
            `The config "${slug.slice(0, 64)}" is used by API key ${user.id}${named}: change or revoke the API keys naming it first.`,
          );
        }
      }
      // The same order for an MCP server: a virtual server naming it written meanwhile held its row.
      if (kind === 'mcp-servers') {
        const [user] = await tx.query<{ slug: string }>(
          "SELECT slug FROM gw_records WHERE kind = 'virtual-servers' AND data->'members' @> $1::jsonb ORDER BY slug LIMIT 1",
          [JSON.stringify([{ server: slug }])],
        );
        if (user) {
          throw new ServerInUseError(
            `The MCP server "${slug.slice(0, 64)}" is a member of the virtual server "${user.slug.slice(0, 64)}": remove it from the virtual servers naming it first.`,
          );
        }
      }
      if (kind === 'api-keys') await tx.query('DELETE FROM gw_api_key_use WHERE key_id = $1', [String(deleted.id)]);
      await this.audit(tx, actor, kind === 'api-keys' ? 'revoke' : 'delete', kind, deleted, []);
    });
  }

  /**
   * Refuses an MCP server or virtual server whose slug the other kind uses, in the database or in
   * the config file ({@link CatalogStoreHooks.recordOutsideStore}): `409 slug_taken` naming `slug`,
   * since both are served at `/mcp/<slug>` (one namespace). A transaction-scoped advisory lock on
   * the slug makes two such writes of one slug, one of each kind, wait for each other.
   */
  private async checkMcpSlugFree(
    tx: SqlExecutor,
    kind: 'mcp-servers' | 'virtual-servers',
    slug: string,
  ): Promise<void> {
    await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`gw-mcp-slug:${slug}`]);
    const other = kind === 'mcp-servers' ? 'virtual-servers' : 'mcp-servers';
    const found = await tx.query('SELECT 1 FROM gw_records WHERE kind = $1 AND slug = $2', [other, slug]);
    if (found.length > 0 || this.hooks.recordOutsideStore?.(other, slug) === true) {
      const what = other === 'mcp-servers' ? 'an MCP server' : 'a virtual MCP server';
      throw new SlugTakenError(
        `"${slug.slice(0, 64)}" is already used by ${what}: MCP servers and virtual servers share one namespace of slugs (/mcp/<slug>).`,
        'slug',
      );
    }
  }

  /**
   * Refuses a virtual server member that names no MCP server (`400 invalid_request` naming
   * `members.<i>.server`): one of the database's, locked until the virtual server is written so it
   * cannot be deleted meanwhile, or one of the config file's ({@link CatalogStoreHooks.recordOutsideStore}).
   */
  private async checkMembersExist(tx: SqlExecutor, members: unknown): Promise<void> {
    if (!Array.isArray(members)) return;
    for (const [index, member] of members.entries()) {
      const server = (member as { server?: unknown }).server;
      if (typeof server !== 'string') continue;
      const found = await tx.query("SELECT 1 FROM gw_records WHERE kind = 'mcp-servers' AND slug = $1 FOR SHARE", [
        server,
      ]);
      if (found.length > 0 || this.hooks.recordOutsideStore?.('mcp-servers', server) === true) continue;
      throw new InvalidRecordError(
        `members.${index}.server: no MCP server "${server.slice(0, 64)}": create it first (POST /admin/v1/mcp-servers) or name an existing one.`,
        `members.${index}.server`,
      );
    }
  }

  /**
   * Refuses an API key's `config` that names no named config (`400 invalid_request` naming
   * `config`): one of the database's, locked until the key is written so it cannot be deleted
   * meanwhile, or one of the config file's ({@link CatalogStoreHooks.recordOutsideStore}).
   */
  private async checkConfigExists(tx: SqlExecutor, config: unknown): Promise<void> {
    if (typeof config !== 'string') return;
    const found = await tx.query("SELECT 1 FROM gw_records WHERE kind = 'configs' AND slug = $1 FOR UPDATE", [config]);
    if (found.length > 0 || this.hooks.recordOutsideStore?.('configs', config) === true) return;
    throw new InvalidRecordError(
      `config: no named config "${config.slice(0, 64)}": create it first (POST /admin/v1/configs) or name an existing one.`,
      'config',
    );
  }

  /**
   * When each API key was last used, by key id (records' ids and the config file's `config-…`
   * ids), as ISO 8601; a key never used is absent.
   */
  async apiKeyLastUse(): Promise<Map<string, string>> {
    const rows = await this.db.query<{ key_id: string; last_used_at: Date | string }>(
      'SELECT key_id, last_used_at FROM gw_api_key_use',
    );
    return new Map(rows.map((r) => [r.key_id, iso(r.last_used_at)]));
  }

  /**
   * Writes the last use of API keys (`at`, a time for each key id): a later time replaces an
   * earlier one, never the reverse. Neither audited nor announced: it is no change of the catalog.
   */
  async recordApiKeyUse(uses: ReadonlyMap<string, Date>): Promise<void> {
    if (uses.size === 0) return;
    await this.db.query(
      `INSERT INTO gw_api_key_use (key_id, last_used_at)
       SELECT u.key_id, u.at FROM json_to_recordset($1::json) AS u(key_id text, at timestamptz)
       ON CONFLICT (key_id) DO UPDATE SET last_used_at = GREATEST(gw_api_key_use.last_used_at, EXCLUDED.last_used_at)`,
      [JSON.stringify([...uses].map(([keyId, at]) => ({ key_id: keyId, at: at.toISOString() })))],
    );
  }

  /**
   * Writes an audit line about an MCP server's upstream connection of `userId` (CONTRACT section
   * 15: connected, refreshed after a failure, refresh refused, disconnected), by `actor` (the
   * admin, the user, or `gateway`): kind `mcp-servers`, the server's slug, `fields` naming the
   * user as `connections.<user id>`. Never a token.
   */
  async auditUpstreamConnection(
    actor: string,
    action: Extract<AuditEntry['action'], `upstream_${string}`>,
    server: string,
    userId: string,
  ): Promise<void> {
    await this.db.query('INSERT INTO gw_audit (actor, action, kind, slug, fields) VALUES ($1, $2, $3, $4, $5)', [
      actor.slice(0, 300),
      action,
      'mcp-servers',
      server,
      JSON.stringify([`connections.${userId.slice(0, 256)}`]),
    ]);
  }

  /** The audit log, newest first; of one record when `record` is `<kind>/<slug-or-id>`. At most `limit` lines. */
  async auditLog(record?: string, limit = 100): Promise<AuditEntry[]> {
    const [kind, slug] =
      record === undefined ? [] : [record.slice(0, record.indexOf('/')), record.slice(record.indexOf('/') + 1)];
    const rows = await this.db.query<{
      id: string;
      at: Date | string;
      actor: string;
      action: AuditEntry['action'];
      kind: string;
      slug: string;
      version: number | null;
      fields: string[];
    }>(
      record === undefined
        ? 'SELECT * FROM gw_audit ORDER BY id DESC LIMIT $1'
        : 'SELECT * FROM gw_audit WHERE kind = $2 AND slug = $3 ORDER BY id DESC LIMIT $1',
      record === undefined ? [limit] : [limit, kind, slug],
    );
    return rows.map((r) => ({
      id: Number(r.id),
      at: iso(r.at),
      actor: r.actor,
      action: r.action,
      record: `${r.kind}/${r.slug}`,
      version: r.version === null ? null : Number(r.version),
      fields: r.fields,
    }));
  }

  /**
   * Every record with its secrets opened, for the in-memory snapshot. A record whose secrets no
   * configured key opens is left out and reported to `onUnreadable` (without it, the load fails).
   */
  async loadAll(onUnreadable?: (kind: RecordKind, slug: string) => void): Promise<OpenedRecord[]> {
    return this.openRows(await this.db.query<Row>('SELECT * FROM gw_records ORDER BY kind, slug'), onUnreadable);
  }

  /** Which records exist and at which version: a cheap read that tells a snapshot what changed. */
  async versions(): Promise<{ kind: RecordKind; slug: string; id: string; version: number }[]> {
    const rows = await this.db.query<{ kind: RecordKind; slug: string; id: string; version: number }>(
      'SELECT kind, slug, id, version FROM gw_records',
    );
    return rows.map((r) => ({ kind: r.kind, slug: r.slug, id: r.id, version: Number(r.version) }));
  }

  /** The records with these ids, secrets opened (as {@link CatalogStore.loadAll}); ids that no longer exist are absent. */
  async loadByIds(
    ids: readonly string[],
    onUnreadable?: (kind: RecordKind, slug: string) => void,
  ): Promise<OpenedRecord[]> {
    if (ids.length === 0) return [];
    const rows = await this.db.query<Row>('SELECT * FROM gw_records WHERE id = ANY($1::uuid[])', [ids]);
    return this.openRows(rows, onUnreadable);
  }

  /** The id of the newest audit line (0 when there is none): where {@link CatalogStore.changesSince} starts. */
  async lastAuditId(): Promise<number> {
    const [row] = await this.db.query<{ id: string | null }>('SELECT max(id) AS id FROM gw_audit');
    return Number(row?.id ?? 0);
  }

  /**
   * The records written since audit line `afterId`, from the audit log: which ids to read again
   * (or drop), and the newest line seen. Exact when writes commit in the order of their audit ids,
   * as on the embedded database (one connection); a server shared by several writers needs
   * {@link CatalogStore.versions} instead.
   */
  async changesSince(afterId: number): Promise<{ lastId: number; ids: string[] }> {
    const rows = await this.db.query<{ id: string; record_id: string | null }>(
      'SELECT id, record_id FROM gw_audit WHERE id > $1 ORDER BY id',
      [afterId],
    );
    const ids = [...new Set(rows.map((r) => r.record_id).filter((id): id is string => id !== null))];
    return { lastId: rows.length ? Number(rows[rows.length - 1]?.id) : afterId, ids };
  }

  private openRows(rows: Row[], onUnreadable?: (kind: RecordKind, slug: string) => void): OpenedRecord[] {
    const opened: OpenedRecord[] = [];
    for (const row of rows) {
      let secrets: Record<string, string>;
      try {
        secrets = this.openSecrets(row.kind, row);
      } catch (error) {
        if (!(error instanceof SecretUnreadableError) || !onUnreadable) throw error;
        onUnreadable(row.kind, row.slug);
        continue;
      }
      opened.push({
        kind: row.kind,
        id: row.id,
        slug: row.slug,
        version: Number(row.version),
        data: row.data,
        secrets,
      });
    }
    return opened;
  }

  /** Whether any stored record holds a secret (start-up refuses to run without an encryption key then). */
  async holdsSecrets(): Promise<boolean> {
    const rows = await this.db.query(`SELECT 1 FROM gw_records WHERE secrets <> '{}'::jsonb LIMIT 1`);
    return rows.length > 0;
  }

  /**
   * The one-time upgrade of secrets sealed by earlier gateways (the `v1` form, bound only to kind,
   * slug and field): each is opened and sealed again bound to its record ({@link secretContext}),
   * all in one transaction, and the upgrade is marked done in `gw_secret_sealing`. Once done it
   * never runs again, so a `v1` value written into a row later never opens. A value no configured
   * key opens stays as it is, unreadable: it is named in `unreadable` (give the secret again).
   */
  async upgradeSealing(): Promise<{ upgraded: number; unreadable: string[] }> {
    return this.db.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock($1)', [SEALING_UPGRADE_LOCK]);
      const done = await tx.query('SELECT 1 FROM gw_secret_sealing WHERE id = 1');
      if (done.length > 0) return { upgraded: 0, unreadable: [] };
      let upgraded = 0;
      const unreadable: string[] = [];
      const rows = await tx.query<Row>('SELECT * FROM gw_records ORDER BY kind, slug');
      for (const row of rows) {
        if (!Object.values(row.secrets).some((sealed) => SecretBox.isLegacy(sealed))) continue;
        const secrets: Record<string, string> = {};
        try {
          for (const [field, sealed] of Object.entries(row.secrets)) {
            secrets[field] = SecretBox.isLegacy(sealed)
              ? this.box.seal(
                  this.box.openLegacy(sealed, `${row.kind}/${row.slug}/${field}`),
                  this.context(row.kind, row.id, Number(row.version), field, row.data),
                )
              : sealed;
          }
        } catch (error) {
          if (!(error instanceof SecretUnreadableError)) throw error;
          unreadable.push(`${row.kind}/${row.slug}`);
          continue;
        }
        await tx.query('UPDATE gw_records SET secrets = $1 WHERE id = $2', [JSON.stringify(secrets), row.id]);
        upgraded++;
      }
      await tx.query("INSERT INTO gw_secret_sealing (id, form) VALUES (1, 'v2')");
      return { upgraded, unreadable };
    });
  }

  /**
   * Re-seals every secret that is not under the current key (after `GATEWAY_ENCRYPTION_KEY`
   * changed, with the old key still given as a previous key), after the one-time upgrade
   * ({@link CatalogStore.upgradeSealing}). Row by row, each in its own transaction, so the gateway
   * keeps serving. Returns how many records were re-sealed.
   */
  async reseal(): Promise<number> {
    let count = (await this.upgradeSealing()).upgraded;
    const rows = await this.db.query<Row>('SELECT * FROM gw_records');
    for (const row of rows) {
      if (Object.values(row.secrets).every((sealed) => this.box.isCurrent(sealed))) continue;
      const opened = this.openSecrets(row.kind, row);
      const secrets: Record<string, string> = {};
      for (const [field, value] of Object.entries(opened)) {
        secrets[field] = this.box.seal(value, this.context(row.kind, row.id, Number(row.version), field, row.data));
      }
      await this.db.query('UPDATE gw_records SET secrets = $1 WHERE id = $2 AND version = $3', [
        JSON.stringify(secrets),
        row.id,
        row.version,
      ]);
      count++;
    }
    return count;
  }

  private runCheck(kind: RecordKind, data: Record<string, unknown>): void {
    try {
      this.hooks.check?.(kind, data);
    } catch (error) {
      if (error instanceof InvalidRecordError) throw error;
      throw new InvalidRecordError(error instanceof Error ? error.message : 'The record is not valid.', null);
    }
  }

  private async row(db: SqlExecutor, kind: RecordKind, slug: string): Promise<Row> {
    const [row] = await db.query<Row>('SELECT * FROM gw_records WHERE kind = $1 AND slug = $2', [kind, slug]);
    if (!row) throw new RecordNotFoundError(`No ${kind} record "${slug.slice(0, 64)}".`);
    return row;
  }

  /**
   * The record's secrets, opened with the context of the row as stored (its id, version and
   * routing fields). Fields in `skip` are left out: a change gives them again.
   */
  private openSecrets(
    kind: RecordKind,
    row: Pick<Row, 'id' | 'slug' | 'version' | 'data' | 'secrets'>,
    skip: readonly string[] = [],
  ): Record<string, string> {
    const opened: Record<string, string> = {};
    for (const [field, sealed] of Object.entries(row.secrets)) {
      if (skip.includes(field)) continue;
      opened[field] = this.box.open(
        sealed,
        this.context(kind, row.id, Number(row.version), field, row.data),
        `${kind}/${row.slug.slice(0, 64)}/${field}`,
      );
    }
    return opened;
  }

  private context(kind: RecordKind, id: string, version: number, field: string, data: Record<string, unknown>): string {
    return secretContext({ kind, id, version, field, data });
  }

  private seal(
    kind: RecordKind,
    id: string,
    version: number,
    data: Record<string, unknown>,
    previous: Partial<Pick<Row, 'hints'>>,
  ): { stored: Record<string, unknown>; secrets: Record<string, string>; hints: Record<string, string> } {
    const holder = secretHolderOf(kind, data);
    const { rest: stored, secrets: plain } = withoutSecrets(kind, data);
    const secrets: Record<string, string> = {};
    // The hints of secrets the record no longer holds go; others (an API key's `key`) stay.
    const hints: Record<string, string> = {};
    for (const [field, hint] of Object.entries(previous.hints ?? {}))
      if (!isSecretField(holder, field)) hints[field] = hint;
    for (const [field, value] of Object.entries(plain)) {
      secrets[field] = this.box.seal(value, this.context(kind, id, version, field, stored));
      hints[field] = secretHint(value);
    }
    return { stored, secrets, hints };
  }

  private async audit(
    tx: SqlExecutor,
    actor: string,
    action: AuditEntry['action'],
    kind: RecordKind,
    row: Row,
    fields: string[],
  ): Promise<void> {
    await tx.query(
      'INSERT INTO gw_audit (actor, action, kind, record_id, slug, version, fields) VALUES ($1, $2, $3, $4, $5, $6, $7)',
      [
        actor,
        action,
        kind,
        row.id,
        row.slug,
        action === 'delete' || action === 'revoke' ? null : row.version,
        JSON.stringify(fields.sort()),
      ],
    );
    await tx.query('SELECT pg_notify($1, $2)', [CATALOG_CHANNEL, kind]);
  }
}

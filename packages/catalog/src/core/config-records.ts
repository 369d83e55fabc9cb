import { createHash } from 'node:crypto';
import { SECRET_FIELDS, withHints, withoutSecrets, type RecordKind } from './records';
import { secretHint } from './secret-box';
import type { PublicRecord } from './store';

/** The records of the config file (`GATEWAY_CONFIG`), as the gateway read them at start-up. */
export interface ConfigFileRecords {
  /** The config's `providers`. Default `[]`. */
  providers?: readonly { slug: string; provider: string; [field: string]: unknown }[];
  /** The config's `mcpServers`. Default `[]`. */
  mcpServers?: readonly { slug: string; [field: string]: unknown }[];
  /** The config's `prompts`. Default `[]`. */
  prompts?: readonly { id: string; [field: string]: unknown }[];
  /** The config's `auth.apiKeys`. Default `[]`. */
  apiKeys?: readonly { key?: string; keySha256?: string; user: unknown; config?: string }[];
  /** The config's `policies`. Default `[]`. */
  policies?: readonly { slug: string; [field: string]: unknown }[];
  /** The config's `limits`. Default `[]`. */
  limits?: readonly { slug: string; [field: string]: unknown }[];
  /** The config's `configs` (named routing configs). Default `[]`. */
  configs?: readonly { slug: string; name?: string; config: Record<string, unknown> }[];
  /** The config's `virtualServers` (virtual MCP servers). Default `[]`. */
  virtualServers?: readonly { slug: string; name?: string; members: readonly object[] }[];
}

/** The id the admin API gives an API key of the config file: derived from its digest, stable across restarts. */
export function configApiKeyId(entry: { key?: string; keySha256?: string }): string {
  const digest =
    entry.key !== undefined ? createHash('sha256').update(entry.key).digest('hex') : String(entry.keySha256);
  return `config-${digest.slice(0, 16).toLowerCase()}`;
}

/**
 * The config file's records as the admin API shows them: read-only (`source: "config"`, version 1,
 * dated when the gateway started), secrets only as `<field>Hint`. The admin API refuses to change
 * them (`409 managed_by_config_file`) and refuses their slugs to new records (`409 slug_taken`).
 * The API key records (an id and a hint per key, from its SHA-256) are made the first time API
 * keys are read: a gateway with thousands of keys in its config file does not hold a second copy
 * of each from start-up on.
 */
export class ConfigRecords {
  private readonly byKind = new Map<RecordKind, Map<string, PublicRecord>>();
  private readonly apiKeys: NonNullable<ConfigFileRecords['apiKeys']>;
  private readonly base: (id: string) => PublicRecord;
  private apiKeysMade = false;

  /** `loadedAt`: when the config file was read. Default: now. */
  constructor(config: ConfigFileRecords = {}, loadedAt: Date = new Date()) {
    const at = loadedAt.toISOString();
    const base = (id: string) => ({ id, version: 1, createdAt: at, updatedAt: at, source: 'config' as const });
    this.base = base;
    this.apiKeys = config.apiKeys ?? [];
    for (const provider of config.providers ?? []) {
      const record: PublicRecord = { ...base(provider.slug) };
      const secrets = SECRET_FIELDS.get(provider.provider) ?? [];
      for (const [field, value] of Object.entries(provider)) {
        if (!secrets.includes(field)) record[field] = value;
        else if (typeof value === 'string' && value !== '') record[`${field}Hint`] = secretHint(value);
      }
      this.add('providers', provider.slug, record);
    }
    for (const server of config.mcpServers ?? []) {
      // `upstream_auth` secrets (a client secret, static header values) answered as hints only.
      const { rest, secrets } = withoutSecrets('mcp-servers', server);
      const hints = Object.fromEntries(Object.entries(secrets).map(([field, value]) => [field, secretHint(value)]));
      this.add('mcp-servers', server.slug, { ...base(server.slug), ...withHints('mcp-servers', rest, hints) });
    }
    for (const policy of config.policies ?? []) this.add('policies', policy.slug, { ...base(policy.slug), ...policy });
    for (const entry of config.limits ?? []) this.add('limits', entry.slug, { ...base(entry.slug), ...entry });
    for (const entry of config.configs ?? []) this.add('configs', entry.slug, { ...base(entry.slug), ...entry });
    for (const entry of config.virtualServers ?? [])
      this.add('virtual-servers', entry.slug, { ...base(entry.slug), ...entry });
    for (const prompt of config.prompts ?? []) this.add('prompts', prompt.id, { ...prompt, ...base(prompt.id) });
  }

  /** The id of a config file API key that is also in `ids` (such as the catalog database's), or undefined; makes no record. */
  apiKeyIdIn(ids: ReadonlySet<string>): string | undefined {
    if (ids.size === 0) return undefined;
    for (const entry of this.apiKeys) {
      const id = configApiKeyId(entry);
      if (ids.has(id)) return id;
    }
    return undefined;
  }

  /** The record of `kind` named `slug` (or id), or undefined. */
  get(kind: RecordKind, slug: string): PublicRecord | undefined {
    return this.recordsOf(kind)?.get(slug);
  }

  /** Every record of `kind`. */
  list(kind: RecordKind): PublicRecord[] {
    return [...(this.recordsOf(kind)?.values() ?? [])];
  }

  /** Whether the config file defines `kind`/`slug`. */
  has(kind: RecordKind, slug: string): boolean {
    return this.recordsOf(kind)?.has(slug) ?? false;
  }

  private recordsOf(kind: RecordKind): Map<string, PublicRecord> | undefined {
    if (kind === 'api-keys' && !this.apiKeysMade) {
      this.apiKeysMade = true;
      for (const entry of this.apiKeys) {
        const id = configApiKeyId(entry);
        const record: PublicRecord = { ...this.base(id), user: entry.user };
        if (typeof entry.config === 'string') record.config = entry.config;
        if (typeof entry.key === 'string') record.keyHint = secretHint(entry.key);
        this.add('api-keys', id, record);
      }
    }
    return this.byKind.get(kind);
  }

  private add(kind: RecordKind, slug: string, record: PublicRecord): void {
    let records = this.byKind.get(kind);
    if (!records) this.byKind.set(kind, (records = new Map()));
    records.set(slug, record);
  }
}

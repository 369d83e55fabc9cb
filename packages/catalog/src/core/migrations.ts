import type { CatalogDatabase } from './database';
import { REQUEST_LOG_MIGRATION_SQL } from './request-log';
import { RESPONSES_MIGRATION_SQL } from './responses-store';
import { UPSTREAM_CONNECTIONS_MIGRATION_SQL } from './upstream-connections';

/** One versioned schema change. Versions only ever grow; a released migration never changes. */
export interface Migration {
  version: number;
  description: string;
  sql: string;
}

/** The catalog's schema, in order. */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: 'records and audit log',
    sql: `
      CREATE TABLE gw_records (
        kind text NOT NULL,
        id uuid PRIMARY KEY,
        slug text NOT NULL,
        version integer NOT NULL,
        data jsonb NOT NULL,
        secrets jsonb NOT NULL DEFAULT '{}'::jsonb,
        hints jsonb NOT NULL DEFAULT '{}'::jsonb,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        UNIQUE (kind, slug)
      );
      CREATE TABLE gw_audit (
        id bigserial PRIMARY KEY,
        at timestamptz NOT NULL DEFAULT now(),
        actor text NOT NULL,
        action text NOT NULL,
        kind text NOT NULL,
        record_id uuid,
        slug text NOT NULL,
        version integer,
        fields jsonb NOT NULL DEFAULT '[]'::jsonb
      );
      CREATE INDEX gw_audit_record ON gw_audit (kind, slug, id DESC);
    `,
  },
  {
    version: 2,
    description: 'MCP tool pinning: each tool seen and the digest an admin approved',
    sql: `
      CREATE TABLE gw_mcp_tools (
        server text NOT NULL,
        name text NOT NULL,
        seen_digest text NOT NULL,
        seen_description text,
        approved_digest text,
        approved_description text,
        first_seen_at timestamptz NOT NULL,
        seen_at timestamptz NOT NULL,
        approved_at timestamptz,
        approved_by text,
        PRIMARY KEY (server, name)
      );
    `,
  },
  { version: 3, description: 'request records', sql: REQUEST_LOG_MIGRATION_SQL },
  {
    version: 4,
    description: 'console sessions: one row per signed-in session, shared by every instance',
    sql: `
      CREATE TABLE gw_console_sessions (
        id_hash text PRIMARY KEY,
        actor text NOT NULL,
        credential text NOT NULL,
        token_issuer text,
        token_subject text,
        token_expires_at timestamptz,
        created_at timestamptz NOT NULL,
        last_seen_at timestamptz NOT NULL,
        expires_at timestamptz NOT NULL,
        revoked_at timestamptz
      );
      CREATE INDEX gw_console_sessions_expires ON gw_console_sessions (expires_at);
    `,
  },
  {
    version: 5,
    description: 'sealed secrets bound to their record: marks the one-time re-sealing of earlier secrets',
    sql: `
      CREATE TABLE IF NOT EXISTS gw_secret_sealing (
        id integer PRIMARY KEY CHECK (id = 1),
        form text NOT NULL,
        upgraded_at timestamptz NOT NULL DEFAULT now()
      );
    `,
  },
  {
    version: 6,
    description: 'OAuth: registered clients, grants, consents, authorization codes and refresh tokens (digests only)',
    sql: `
      CREATE TABLE gw_oauth_clients (
        client_id text PRIMARY KEY,
        metadata jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE TABLE gw_oauth_grants (
        id uuid PRIMARY KEY,
        client_id text NOT NULL,
        user_id text NOT NULL,
        subject text NOT NULL,
        claims jsonb NOT NULL,
        resource text NOT NULL,
        scopes text[] NOT NULL,
        created_at timestamptz NOT NULL,
        last_used_at timestamptz,
        expires_at timestamptz NOT NULL,
        revoked_at timestamptz,
        revoked_reason text
      );
      CREATE INDEX gw_oauth_grants_user ON gw_oauth_grants (user_id, created_at DESC);
      CREATE INDEX gw_oauth_grants_revoked ON gw_oauth_grants (revoked_at) WHERE revoked_at IS NOT NULL;
      CREATE TABLE gw_oauth_consents (
        subject text NOT NULL,
        client_id text NOT NULL,
        scopes text[] NOT NULL,
        resources text[] NOT NULL,
        updated_at timestamptz NOT NULL,
        PRIMARY KEY (subject, client_id)
      );
      CREATE TABLE gw_oauth_codes (
        digest text PRIMARY KEY,
        grant_id uuid NOT NULL,
        client_id text NOT NULL,
        redirect_uri text NOT NULL,
        code_challenge text NOT NULL,
        expires_at timestamptz NOT NULL,
        used_at timestamptz
      );
      CREATE TABLE gw_oauth_refresh_tokens (
        digest text PRIMARY KEY,
        grant_id uuid NOT NULL,
        expires_at timestamptz NOT NULL,
        used_at timestamptz
      );
      CREATE INDEX gw_oauth_refresh_grant ON gw_oauth_refresh_tokens (grant_id);
    `,
  },
  {
    version: 7,
    description: 'request records name the tool of an MCP tools/call',
    sql: 'ALTER TABLE gw_requests ADD COLUMN IF NOT EXISTS mcp_tool text;',
  },
  { version: 8, description: 'stored Responses API responses, sealed, per caller', sql: RESPONSES_MIGRATION_SQL },
  {
    version: 9,
    description: 'request records carry their cost in USD (limits are records of kind limits in gw_records)',
    sql: 'ALTER TABLE gw_requests ADD COLUMN IF NOT EXISTS cost_usd double precision;',
  },
  {
    version: 10,
    description:
      'request records keep access reports and upstream error messages; API keys their last use; console sessions their role',
    sql: `
      ALTER TABLE gw_requests ADD COLUMN IF NOT EXISTS access text;
      ALTER TABLE gw_requests ADD COLUMN IF NOT EXISTS access_reason text;
      ALTER TABLE gw_requests ADD COLUMN IF NOT EXISTS error_message text;
      ALTER TABLE gw_console_sessions ADD COLUMN IF NOT EXISTS role text;
      ALTER TABLE gw_console_sessions ADD COLUMN IF NOT EXISTS credential_kind text;
      CREATE TABLE IF NOT EXISTS gw_api_key_use (
        key_id text PRIMARY KEY,
        last_used_at timestamptz NOT NULL
      );
    `,
  },
  {
    version: 11,
    description: "OAuth grants signed in at the OpenID Provider keep the provider's refresh token, encrypted",
    sql: 'ALTER TABLE gw_oauth_grants ADD COLUMN IF NOT EXISTS login_tokens text;',
  },
  {
    version: 12,
    description:
      "upstream credentials: each user's sealed tokens per MCP server, connect requests, pending authorizations, registered clients",
    sql: UPSTREAM_CONNECTIONS_MIGRATION_SQL,
  },
  {
    version: 13,
    description: 'request records routed across targets list each provider attempt',
    sql: 'ALTER TABLE gw_requests ADD COLUMN IF NOT EXISTS attempts jsonb;',
  },
  {
    version: 14,
    description: 'request records of MCP calls made through a virtual MCP server name it',
    sql: 'ALTER TABLE gw_requests ADD COLUMN IF NOT EXISTS mcp_virtual_server text;',
  },
];

/** An arbitrary constant: the advisory lock that lets one instance migrate at a time. */
const MIGRATION_LOCK = 7_305_011;

/**
 * Brings the schema up to date at start-up, in one transaction under an advisory lock, so several
 * instances starting together migrate once. Returns the versions it applied.
 */
export async function migrate(db: CatalogDatabase, migrations: readonly Migration[] = MIGRATIONS): Promise<number[]> {
  return db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await tx.query(
      'CREATE TABLE IF NOT EXISTS gw_schema_migrations (version integer PRIMARY KEY, description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
    );
    const done = new Set(
      (await tx.query<{ version: number }>('SELECT version FROM gw_schema_migrations')).map((r) => Number(r.version)),
    );
    const applied: number[] = [];
    for (const migration of migrations) {
      if (done.has(migration.version)) continue;
      await tx.exec(migration.sql);
      await tx.query('INSERT INTO gw_schema_migrations (version, description) VALUES ($1, $2)', [
        migration.version,
        migration.description,
      ]);
      applied.push(migration.version);
    }
    return applied;
  });
}

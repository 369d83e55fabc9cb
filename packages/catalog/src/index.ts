/**
 * @gw/catalog: the gateway's catalog as persisted state. Providers, MCP servers, prompt templates
 * and API keys live in PostgreSQL (or an embedded PGlite), secrets sealed with AES-256-GCM, every
 * record versioned and every change audited; {@link LiveCatalog} keeps the in-memory snapshot the
 * request path reads, and {@link createAdminApi} is the admin API over it.
 */
export * from './core/errors';
export * from './core/secret-box';
export * from './core/database';
export * from './core/migrations';
export * from './core/records';
export * from './core/store';
export * from './core/live-catalog';
export * from './core/config-records';
export * from './core/admin-access';
export * from './core/sign-in-guard';
export * from './core/console-sessions';
export * from './core/admin-api';
export * from './core/tool-pins';
export * from './core/request-log';
export * from './core/responses-store';
export * from './core/upstream-connections';
export { adminApi } from './express';

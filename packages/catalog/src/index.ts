/**
 * @gw/catalog: the gateway's catalog as persisted state. Providers, MCP servers, prompt templates
 * and API keys live in PostgreSQL (or an embedded PGlite), secrets sealed with AES-256-GCM, every
 * record versioned and every change audited; {@link LiveCatalog} keeps the in-memory snapshot the
 * request path reads.
 */
export * from './core/errors';
export * from './core/secret-box';
export * from './core/database';
export * from './core/migrations';
export * from './core/records';
export * from './core/store';
export * from './core/live-catalog';

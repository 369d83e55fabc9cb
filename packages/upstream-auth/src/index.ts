/**
 * @gw/upstream-auth: the credentials the gateway presents to MCP servers that need each user's own
 * token (CONTRACT section 15): per-user OAuth with refresh, RFC 8693 token exchange and shared
 * service headers. Framework-free: the host wires it into its proxy and pages.
 */
export type * from './core/config';
export type * from './core/store';
export * from './core/errors';
export * from './core/validate';
/** Header names a `static` upstream credential may not set (from `@gw/upstream`). */
export { REFUSED_STATIC_HEADER_NAMES } from '@gw/upstream';
export * from './core/guarded-fetch';
export * from './core/discovery';
export * from './core/oauth-client';
export * from './core/connections';
export * from './core/token-exchange';
export * from './core/static-headers';
export * from './core/memory-store';

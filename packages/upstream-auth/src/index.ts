/**
 * @gw/upstream-auth: the credentials the gateway presents to MCP servers that need each user's own
 * token (CONTRACT section 15): per-user OAuth with refresh, RFC 8693 token exchange and shared
 * service headers.
 */
export type * from './core/config';
export type * from './core/store';

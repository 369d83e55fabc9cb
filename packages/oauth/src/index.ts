/**
 * @gw/oauth: the gateway as OAuth authorization server for MCP clients.
 */
export * from './core/errors';
export * from './core/oidc-login';
export * from './core/client-metadata';

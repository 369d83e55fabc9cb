/**
 * @gw/identity-forwarding: who is calling (`authenticate`, the authenticator, API keys and
 * identity-provider tokens), and how their identity is forwarded to MCP servers (`claims_header`,
 * `bearer` or a signed `jwt_header`; the header policy; the token cache), with the MCP endpoint's
 * protected-resource metadata and origin guard. Published as `@gw/identity-forwarding/identity`;
 * the package's main entry adds the deprecated re-exports of `@gw/mcp-gateway` (see `compat/`).
 */
export * from './core/errors';
export * from './core/identity';
export * from './core/credentials';
export * from './core/authenticator';
export * from './core/forwarding-config';
export * from './core/header-policy';
export * from './core/token-cache';
export * from './core/forwarder';
export { authenticate, type AuthenticateOptions, type AuthenticateMiddleware } from './express/authenticate';
export {
  protectedResourceMetadata,
  mcpResourceMetadataUrl,
  isValidHostHeader,
  type ProtectedResourceMetadataOptions,
  type McpServerSlugs,
} from './express/protected-resource';
export {
  mcpOriginGuard,
  normalizeOrigin,
  isLoopbackHostname,
  OriginNotAllowedError,
  type McpOriginGuard,
  type McpOriginGuardOptions,
} from './express/origin-guard';
export type { Logger, GatewayLocals } from './express/shared';
export { identityForwardingErrorHandler } from './express/shared';

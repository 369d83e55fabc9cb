/**
 * @gw/identity-forwarding: who is calling, and forwarding their identity to MCP servers
 * (`claims_header`, `bearer` or a signed `jwt_header`), with the MCP proxy.
 */
export * from './core/errors';
export * from './core/identity';
export * from './core/credentials';
export * from './core/authenticator';
export * from './core/forwarding-config';
export * from './core/header-policy';
export * from './core/token-cache';
export * from './core/forwarder';
export * from './core/tool-gate';
export * from './core/sse-tool-filter';
export * from './core/json-lines-tool-filter';
export * from './core/upstream-credentials';
export { authenticate, type AuthenticateOptions, type AuthenticateMiddleware } from './express/authenticate';
export {
  identityForwarding,
  mapUpstreamError,
  forwardedFor,
  hasDotSegment,
  upstreamQuery,
  endToEndResponseHeaders,
  type IdentityForwardingOptions,
  type IdentityForwardingMiddleware,
} from './express/mcp-proxy';
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

/**
 * @gw/mcp-gateway: the gateway's MCP side. `proxy/` is the transparent proxy (`/mcp/<slug>` to
 * the server, with the caller's identity forwarded by `@gw/identity-forwarding`); `gate/` reads
 * MCP requests and answers and keeps only the tools a caller may use; `upstream-credentials/` is
 * the hook through which a server gets its own credential for each caller.
 */
export * from './gate/tool-gate';
export * from './gate/sse-tool-filter';
export * from './gate/json-lines-tool-filter';
export * from './upstream-credentials/upstream-credentials';
export { identityForwarding } from './proxy/mcp-proxy';
export { MCP_REQUEST_BODY, handedBody, type RequestWithBody } from './proxy/request-body';
export type { IdentityForwardingOptions, IdentityForwardingMiddleware } from './proxy/options';
export { mapUpstreamError } from './proxy/upstream-errors';
export { forwardedFor } from './proxy/forwarded-for';
export { hasDotSegment, upstreamQuery } from './proxy/request-path';
export { endToEndResponseHeaders } from './proxy/response-headers';
export * from './virtual/config';
export * from './virtual/errors';
export * from './virtual/names';
export * from './virtual/fan-out';
export * from './virtual/pages';
export * from './virtual/virtual-members';

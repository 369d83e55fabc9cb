/**
 * The main entry of `@gw/identity-forwarding`: the package's own surface
 * (`@gw/identity-forwarding/identity`: who is calling and how that is forwarded) and, deprecated,
 * the MCP proxy, the tool gate and the upstream-credentials hook that moved to `@gw/mcp-gateway`
 * (re-exported here, the same functions and classes, so imports written before the move keep
 * working). Import those from `@gw/mcp-gateway`.
 *
 * This file is a project of its own (compat/tsconfig.json), built after `@gw/mcp-gateway`, which
 * itself builds on `@gw/identity-forwarding/identity`: no cycle between the TypeScript projects,
 * and none at run time (`@gw/mcp-gateway` never loads this entry).
 */
export * from '@gw/identity-forwarding/identity';
export {
  /** @deprecated Import from `@gw/mcp-gateway`. */
  identityForwarding,
  /** @deprecated Import from `@gw/mcp-gateway`. */
  mapUpstreamError,
  /** @deprecated Import from `@gw/mcp-gateway`. */
  forwardedFor,
  /** @deprecated Import from `@gw/mcp-gateway`. */
  hasDotSegment,
  /** @deprecated Import from `@gw/mcp-gateway`. */
  upstreamQuery,
  /** @deprecated Import from `@gw/mcp-gateway`. */
  endToEndResponseHeaders,
  /** @deprecated Import from `@gw/mcp-gateway`. */
  type IdentityForwardingOptions,
  /** @deprecated Import from `@gw/mcp-gateway`. */
  type IdentityForwardingMiddleware,
  // The tool gate (`@gw/mcp-gateway`, gate/).
  /** @deprecated Import from `@gw/mcp-gateway`. */
  type McpToolVerdict,
  /** @deprecated Import from `@gw/mcp-gateway`. */
  type McpListedTool,
  /** @deprecated Import from `@gw/mcp-gateway`. */
  type McpToolGate,
  /** @deprecated Import from `@gw/mcp-gateway`. */
  type McpAccess,
  /** @deprecated Import from `@gw/mcp-gateway`. */
  TOOL_REFUSED_CODE,
  /** @deprecated Import from `@gw/mcp-gateway`. */
  HEADER_MISMATCH_CODE,
  /** @deprecated Import from `@gw/mcp-gateway`. */
  type JsonRpcMessage,
  /** @deprecated Import from `@gw/mcp-gateway`. */
  type McpMediaType,
  /** @deprecated Import from `@gw/mcp-gateway`. */
  parseMediaType,
  /** @deprecated Import from `@gw/mcp-gateway`. */
  isUtf8MediaType,
  /** @deprecated Import from `@gw/mcp-gateway`. */
  type McpMirrorHeaders,
  /** @deprecated Import from `@gw/mcp-gateway`. */
  decodeMcpName,
  /** @deprecated Import from `@gw/mcp-gateway`. */
  MIRROR_HEADERS_REVISION,
  /** @deprecated Import from `@gw/mcp-gateway`. */
  type InspectedRequest,
  /** @deprecated Import from `@gw/mcp-gateway`. */
  inspectRequest,
  /** @deprecated Import from `@gw/mcp-gateway`. */
  MAX_BATCH_MESSAGES,
  /** @deprecated Import from `@gw/mcp-gateway`. */
  type McpRequestMessages,
  /** @deprecated Import from `@gw/mcp-gateway`. */
  readMcpRequest,
  /** @deprecated Import from `@gw/mcp-gateway`. */
  countToolCalls,
  /** @deprecated Import from `@gw/mcp-gateway`. */
  filterJsonAnswer,
  /** @deprecated Import from `@gw/mcp-gateway`. */
  filterJsonBytes,
  /** @deprecated Import from `@gw/mcp-gateway`. */
  MAX_INSPECTED_EVENT_CHARS,
  /** @deprecated Import from `@gw/mcp-gateway`. */
  SseToolFilter,
  /** @deprecated Import from `@gw/mcp-gateway`. */
  JsonLinesToolFilter,
  // The upstream-credentials hook (`@gw/mcp-gateway`, upstream-credentials/).
  /** @deprecated Import from `@gw/mcp-gateway`. */
  CONNECTION_REQUIRED_CODE,
  /** @deprecated Import from `@gw/mcp-gateway`. */
  type UpstreamCredential,
  /** @deprecated Import from `@gw/mcp-gateway`. */
  type UpstreamCredentialSource,
  /** @deprecated Import from `@gw/mcp-gateway`. */
  type JsonRpcErrorObject,
  /** @deprecated Import from `@gw/mcp-gateway`. */
  type UpstreamCredentialError,
  /** @deprecated Import from `@gw/mcp-gateway`. */
  hasJsonRpcForm,
  /** @deprecated Import from `@gw/mcp-gateway`. */
  credentialErrorAnswer,
} from '@gw/mcp-gateway';

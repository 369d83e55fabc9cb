/**
 * @gw/access: least-privilege access policies (who may use which model, MCP server, tool and
 * integration), compiled once per change into an {@link AccessSnapshot} and decided by one
 * function, {@link decide}, that the request path and the explain route share.
 */
export * from './patterns';
export * from './policies';
export * from './limits';

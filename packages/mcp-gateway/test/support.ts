/**
 * The MCP proxy's tests share the identity-forwarding tests' helpers (identity providers, MCP
 * upstream doubles, the proxy mounted on Express): one copy, in `@gw/identity-forwarding`'s tests.
 */
export * from '../../identity-forwarding/test/support';

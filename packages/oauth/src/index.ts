/**
 * @gw/oauth: the gateway as the OAuth 2.1 authorization server MCP clients discover (MCP
 * authorization, RFC 8414, 7591, 7009, 8707, 9207). A framework-free core
 * ({@link AuthorizationServer}: pages, tokens, grants in the catalog's database) and a thin Express
 * adapter ({@link oauthRoutes}, {@link oauthAdminRoutes}).
 */
export * from './core/errors';
export * from './core/oidc-login';
export * from './core/client-metadata';
export * from './core/sealed';
export * from './core/store';
export * from './core/access-tokens';
export * from './core/revoked-grants';
export * from './core/login';
export * from './core/provider-tokens';
export * from './core/pages';
export * from './core/authorization-server';
export * from './core/admin';
export {
  oauthRoutes,
  oauthAdminRoutes,
  oauthMetadataHandler,
  readCookies,
  sendPageAnswer,
  type OAuthRoutesOptions,
  type EndpointRateLimit,
} from './express';

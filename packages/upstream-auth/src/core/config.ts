/**
 * The `upstream_auth` object of an MCP server (CONTRACT section 15), as the config file, the
 * admin API and the console give it. Secrets (`client.client_secret`, every `headers` value) are
 * stored sealed and never answered.
 */

/** The gateway's client identity at an authorization server. */
export interface UpstreamClientConfig {
  client_id: string;
  /** Secret. */
  client_secret?: string;
  /** Default `client_secret_basic` with a secret, `none` without. */
  token_endpoint_auth_method?: 'client_secret_basic' | 'client_secret_post' | 'none';
}

/** `oauth`: the caller's own token from the server's authorization server. */
export interface OAuthUpstreamAuth {
  type: 'oauth';
  /** Scopes asked. Default: the metadata's `scopes_supported`. */
  scopes?: string[];
  /** The issuer URL; default: discovered from the server's RFC 9728 metadata. */
  authorization_server?: string;
  /** Pre-registered client; default: the gateway's Client ID Metadata Document, else RFC 7591 registration. */
  client?: UpstreamClientConfig;
}

/** `token_exchange`: a token the company's identity provider mints for this server (RFC 8693). */
export interface TokenExchangeUpstreamAuth {
  type: 'token_exchange';
  token_endpoint?: string;
  issuer?: string;
  audience?: string;
  resource?: string;
  scopes?: string[];
  client: UpstreamClientConfig;
}

/** `static`: shared service headers (values secret). */
export interface StaticUpstreamAuth {
  type: 'static';
  headers: Record<string, string>;
}

/** An MCP server's `upstream_auth`. */
export type UpstreamAuthConfig = OAuthUpstreamAuth | TokenExchangeUpstreamAuth | StaticUpstreamAuth;

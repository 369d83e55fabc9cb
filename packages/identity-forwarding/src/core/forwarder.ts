import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import type { IdentityTokenSigner } from '@gw/jwks';
import { IdentityTokenRequiredError, InvalidCredentialsError, TokenAudienceMismatchError } from './errors';
import { resolveServer, type McpServerConfig, type ResolvedServer } from './forwarding-config';
import { createHeaderPolicy, type HeaderPolicy } from './header-policy';
import type { GatewayIdentity, UserClaims } from './identity';
import { IdentityTokenCache } from './token-cache';

/** What a forwarder needs besides its server's config. */
export interface ForwarderDependencies {
  /** Signs `jwt_header` tokens. Without it a `jwt_header` server is refused (fail closed). */
  signer?: IdentityTokenSigner;
  /** Whether identity-provider tokens are accepted (a `bearer` server needs them). */
  acceptsTokens: boolean;
  /** Cache of signed tokens, shared by all servers. Default: a cache of its own. */
  tokenCache?: IdentityTokenCache;
  /**
   * The identity header names of every server of the gateway (defaults included): none of them is
   * ever taken from a client on this server's routes. Default: this server's own only.
   */
  identityHeaderNames?: readonly string[];
}

interface SelectedClaims {
  /** Compact JSON of the selected claims, in `include_claims` order. */
  json: string;
  /** The same, with every character outside printable ASCII escaped, for a header value. */
  asciiJson: string;
  selected: Record<string, unknown>;
}

const NON_ASCII = /[\u007f-\uffff]/g;

/** `JSON.stringify` whose output is printable ASCII: `JSON.parse` gives back the same value. */
export function toAsciiJson(value: unknown): string {
  return JSON.stringify(value).replace(NON_ASCII, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * Forwards a caller's identity to one MCP server, as its `user_identity_forwarding` says, and
 * filters the client's headers as its `forward_headers` says. Everything the config decides is
 * computed in the constructor.
 */
export class IdentityForwarder {
  /** The validated server config. */
  readonly server: ResolvedServer;
  private readonly policy: HeaderPolicy;
  private readonly signer: IdentityTokenSigner | undefined;
  private readonly cache: IdentityTokenCache;
  private readonly cacheKeyPrefix: string;
  private readonly selections = new WeakMap<Readonly<UserClaims>, SelectedClaims>();

  constructor(config: McpServerConfig, dependencies: ForwarderDependencies) {
    const server = resolveServer(config);
    const where = `mcpServers[${server.slug}].user_identity_forwarding.method`;
    if (server.method === 'jwt_header' && !dependencies.signer) {
      throw new TypeError(`${where} is jwt_header, but no signing key is configured (set JWT_PRIVATE_KEY).`);
    }
    if (server.method === 'bearer' && !dependencies.acceptsTokens) {
      throw new TypeError(`${where} is bearer, which needs auth.jwt_validation so callers have a token to forward.`);
    }
    this.server = server;
    this.signer = dependencies.signer;
    this.cache = dependencies.tokenCache ?? new IdentityTokenCache();
    this.cacheKeyPrefix = `${server.jwtAudience}\n${server.jwtExpirySeconds}\n`;
    this.policy = createHeaderPolicy({
      identityHeaderName: server.headerName,
      otherIdentityHeaderNames: dependencies.identityHeaderNames,
      mode: server.forwardMode,
      headers: server.forwardList,
    });
  }

  /** The request headers for the MCP server: the client's allowed headers plus the identity header. */
  upstreamHeaders(incoming: IncomingHttpHeaders, identity: GatewayIdentity): OutgoingHttpHeaders {
    const headers = this.policy.filter(incoming);
    const name = this.server.headerName;
    if (name !== undefined) headers[name] = this.identityHeaderValue(identity);
    return headers;
  }

  /** The value of the identity header for this caller. */
  identityHeaderValue(identity: GatewayIdentity): string {
    switch (this.server.method) {
      case 'claims_header':
        return this.select(identity.claims).asciiJson;
      case 'bearer':
        return this.bearerValue(identity);
      case 'jwt_header':
        return this.signedToken(identity);
      default:
        throw new Error('identity forwarding is not configured for this server');
    }
  }

  private select(claims: Readonly<UserClaims>): SelectedClaims {
    let selection = this.selections.get(claims);
    if (selection === undefined) {
      const selected: Record<string, unknown> = {};
      for (const name of this.server.includeClaims) {
        const value = claims[name];
        if (value !== undefined && value !== null) selected[name] = value;
      }
      const json = JSON.stringify(selected);
      selection = { json, asciiJson: toAsciiJson(selected), selected };
      this.selections.set(claims, selection);
    }
    return selection;
  }

  private bearerValue(identity: GatewayIdentity): string {
    if (identity.method !== 'identity_token' || identity.token === undefined) {
      throw new IdentityTokenRequiredError(
        `MCP server "${this.server.slug}" takes the caller's identity-provider token; a gateway API key is never forwarded.`,
        { 'www-authenticate': 'Bearer error="invalid_token"' },
      );
    }
    const audience = this.server.bearerAudience;
    if (audience !== undefined) {
      const aud = identity.claims.aud;
      const audiences = typeof aud === 'string' ? [aud] : Array.isArray(aud) ? aud : [];
      if (!audiences.includes(audience)) {
        throw new TokenAudienceMismatchError(`The token is not meant for MCP server "${this.server.slug}".`);
      }
    }
    return `Bearer ${identity.token}`;
  }

  private signedToken(identity: GatewayIdentity): string {
    const selection = this.select(identity.claims);
    // A token minted from an identity-provider token never outlives it: its `exp` caps ours.
    const exp = identity.method === 'identity_token' ? identity.claims.exp : undefined;
    const notAfter = typeof exp === 'number' && Number.isFinite(exp) ? exp : undefined;
    const key = `${this.cacheKeyPrefix}${identity.subject}\n${notAfter ?? ''}\n${selection.json}`;
    const signer = this.signer as IdentityTokenSigner;
    const audience = this.server.jwtAudience;
    const token = this.cache.getOrSign(
      key,
      this.server.jwtExpirySeconds,
      (issuedAt, expiresInSeconds) =>
        signer.signIdentityToken(selection.selected, { audience, expiresInSeconds, issuedAt }),
      notAfter,
    );
    if (token === undefined) {
      throw new InvalidCredentialsError(
        'The identity-provider token has expired.',
        { 'www-authenticate': 'Bearer error="invalid_token"' },
        'token_expired',
      );
    }
    return token;
  }
}

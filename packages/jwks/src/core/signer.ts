import { sign } from 'node:crypto';
import { rejectUnknownOptions } from '@gw/options';
import type { SigningKey } from './signing-key';

/** The `iss` of every token the gateway signs. */
export const GATEWAY_TOKEN_ISSUER = 'gateway-mcp-gateway';

/** Options of one signature. */
export interface SignIdentityTokenOptions {
  /** The token's `aud`: the MCP server's URL or its configured `jwt_audience`. Required (non-empty). */
  audience: string;
  /** Lifetime in whole seconds, at least 1: `exp = iat + expiresInSeconds`. Required. */
  expiresInSeconds: number;
  /** `iat` in seconds since the epoch. Default: now. */
  issuedAt?: number;
}

/**
 * Refuses options that would sign a token without an audience or an expiry (a JavaScript caller
 * passing `{}` would otherwise get `exp: null` and no `aud`): a token must never outlive its intent.
 */
function checkSignOptions(options: SignIdentityTokenOptions): void {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(
      'signIdentityToken needs options: { audience: "https://mcp.example.com", expiresInSeconds: 300 }.',
    );
  }
  rejectUnknownOptions(options, ['audience', 'expiresInSeconds', 'issuedAt'], 'signIdentityToken');
  if (typeof options.audience !== 'string' || options.audience === '') {
    throw new TypeError('signIdentityToken: audience must be a non-empty string, such as "https://mcp.example.com".');
  }
  if (!Number.isSafeInteger(options.expiresInSeconds) || options.expiresInSeconds < 1) {
    throw new TypeError(
      'signIdentityToken: expiresInSeconds must be a whole number of seconds of at least 1, such as 300.',
    );
  }
  if (options.issuedAt !== undefined && (!Number.isSafeInteger(options.issuedAt) || options.issuedAt < 0)) {
    throw new TypeError('signIdentityToken: issuedAt must be whole seconds since the epoch, or left out for now.');
  }
}

/** Signs identity tokens with the gateway's key. */
export interface IdentityTokenSigner {
  /** The `kid` written into every token header. */
  readonly kid: string;
  /**
   * Returns an RS256 JWT with header `{alg:"RS256",typ:"JWT",kid}` and payload = `claims` plus
   * `iss`, `aud`, `iat`, `exp` (which `claims` cannot override). Synchronous.
   */
  signIdentityToken(claims: Readonly<Record<string, unknown>>, options: SignIdentityTokenOptions): string;
}

/**
 * Creates a signer for `key`. The header is encoded once; each signature costs one
 * `JSON.stringify` of the payload and one `crypto.sign` with the already-parsed key
 * (see docs/decisions.md for why this replaces jsonwebtoken on this path).
 */
export function createIdentityTokenSigner(key: SigningKey): IdentityTokenSigner {
  const encodedHeader = Buffer.from(JSON.stringify({ alg: 'RS256', typ: 'JWT', kid: key.kid })).toString('base64url');
  const privateKey = key.privateKey;
  return {
    kid: key.kid,
    signIdentityToken(claims, options) {
      checkSignOptions(options);
      const iat = options.issuedAt ?? Math.floor(Date.now() / 1000);
      const payload = {
        ...claims,
        iss: GATEWAY_TOKEN_ISSUER,
        aud: options.audience,
        iat,
        exp: iat + options.expiresInSeconds,
      };
      const signingInput = `${encodedHeader}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`;
      return `${signingInput}.${sign('sha256', Buffer.from(signingInput), privateKey).toString('base64url')}`;
    },
  };
}

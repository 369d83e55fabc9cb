import { randomUUID, sign } from 'node:crypto';
import { verifyToken, type KeyResolver, type SigningKey } from '@gw/jwks';

/** Claims the gateway sets itself in an access token; a user's claim of the same name is left out. */
const RESERVED_CLAIMS = new Set([
  'iss',
  'aud',
  'sub',
  'exp',
  'iat',
  'nbf',
  'jti',
  'client_id',
  'scope',
  'gid',
  'login',
  'typ',
]);

/** What goes into one access token. */
export interface AccessTokenContent {
  /** The user's id. */
  sub: string;
  /** The protected resource the token is for (its `aud`). */
  resource: string;
  clientId: string;
  scopes: readonly string[];
  /** The grant the token belongs to, checked against the revoked grants on every request. */
  grantId: string;
  /** The user's claims (section 5), copied into the token. */
  claims: Readonly<Record<string, unknown>>;
  /**
   * How the user signed in, with the id (`api_key:<key id>` or `oidc:<issuer>|<sub>`): the token's
   * `login` claim, checked on every request so that a token ends with the API key it was signed in with.
   */
  login: string;
}

/** A verified access token: the caller's claims and the grant it belongs to. */
export interface VerifiedAccessToken {
  claims: Record<string, unknown>;
  grantId: string;
}

/** Why an access token was refused (a stable code for logs and the 401's reason). */
export class AccessTokenRefusedError extends Error {
  constructor(
    message: string,
    /** `token_invalid`, `token_revoked`, `wrong_resource`. */
    readonly code: string,
  ) {
    super(message);
    this.name = 'AccessTokenRefusedError';
  }
}

/**
 * Signs and verifies the gateway's access tokens: RS256 JWTs (`typ: at+jwt`, RFC 9068) with
 * `iss` = the gateway's public origin, `aud` = the resource, the user's claims and the grant id
 * (`gid`). Verification is in memory: the signature against the gateway's published keys, then
 * the audience against the request's resource, then the grant against the revoked set.
 */
export class AccessTokens {
  constructor(
    private readonly options: {
      issuer: string;
      signingKey: SigningKey;
      /** The published keys (current and retired) tokens may be signed with. */
      keys: KeyResolver;
      /** Lifetime of a token in seconds. */
      ttlSeconds: number;
      /** Whether a grant is revoked (the in-memory snapshot). */
      isRevoked: (grantId: string) => boolean;
      /**
       * Whether the sign-in a token was issued under still holds (its API key still exists and has
       * not expired), read on every request from memory. Default: every sign-in holds.
       */
      signInHolds?: (login: string) => boolean;
      now?: () => number;
    },
  ) {}

  get issuer(): string {
    return this.options.issuer;
  }

  /** Signs a token for `content`; its lifetime is `ttlSeconds`. */
  sign(content: AccessTokenContent): string {
    const iat = Math.floor((this.options.now?.() ?? Date.now()) / 1000);
    const payload: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(content.claims)) {
      if (!RESERVED_CLAIMS.has(name) && value !== undefined) payload[name] = value;
    }
    Object.assign(payload, {
      iss: this.options.issuer,
      aud: content.resource,
      sub: content.sub,
      client_id: content.clientId,
      scope: content.scopes.join(' '),
      gid: content.grantId,
      login: content.login,
      jti: randomUUID(),
      iat,
      exp: iat + this.options.ttlSeconds,
    });
    const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const key = this.options.signingKey;
    const input = `${encode({ alg: 'RS256', typ: 'at+jwt', kid: key.kid })}.${encode(payload)}`;
    return `${input}.${sign('sha256', Buffer.from(input), key.privateKey).toString('base64url')}`;
  }

  /** Whether a token names this gateway as its issuer (read unverified, to pick the verifier; cheap). */
  issuedHere(token: string): boolean {
    const first = token.indexOf('.');
    const second = token.indexOf('.', first + 1);
    if (first <= 0 || second <= first || token.length > 16 * 1024) return false;
    try {
      const payload = JSON.parse(Buffer.from(token.slice(first + 1, second), 'base64url').toString('utf8')) as unknown;
      return (
        typeof payload === 'object' && payload !== null && (payload as { iss?: unknown }).iss === this.options.issuer
      );
    } catch {
      return false;
    }
  }

  /**
   * Verifies a token for `resource` (the request's: `<base>/mcp/<slug>` or `<base>/v1`). A token
   * for `<base>/mcp` is good for every MCP server. Throws {@link AccessTokenRefusedError}.
   */
  async verify(token: string, resource: string | undefined): Promise<VerifiedAccessToken> {
    let header: Record<string, unknown>;
    let payload: Record<string, unknown>;
    try {
      ({ header, payload } = await verifyToken(token, {
        keys: this.options.keys,
        issuer: this.options.issuer,
        algorithms: ['RS256'],
        clockToleranceSeconds: 5,
        requiredClaims: ['sub', 'gid', 'aud'],
        now: this.options.now ? () => Math.floor((this.options.now as () => number)() / 1000) : undefined,
      }));
    } catch (error) {
      throw new AccessTokenRefusedError(
        'The access token is not valid.',
        (error as { code?: string }).code ?? 'token_invalid',
      );
    }
    if (header.typ !== 'at+jwt')
      throw new AccessTokenRefusedError('The token is not an access token.', 'token_invalid');
    if (typeof payload.aud !== 'string' || !resourceCovers(payload.aud, resource, this.options.issuer)) {
      throw new AccessTokenRefusedError('The access token is for another resource.', 'wrong_resource');
    }
    const grantId = payload.gid;
    if (typeof grantId !== 'string' || this.options.isRevoked(grantId)) {
      throw new AccessTokenRefusedError('The access token has been revoked.', 'token_revoked');
    }
    // A token without its sign-in (or one whose API key was revoked or expired) is refused.
    if (typeof payload.login !== 'string' || !(this.options.signInHolds?.(payload.login) ?? true)) {
      throw new AccessTokenRefusedError(
        'The sign-in this access token was issued for has ended (its API key was revoked or has expired).',
        'token_revoked',
      );
    }
    return { claims: payload, grantId };
  }
}

/** Whether a token whose `aud` is `audience` may be used at `resource`. */
export function resourceCovers(audience: string, resource: string | undefined, issuer: string): boolean {
  if (resource === undefined) return false;
  if (audience === resource) return true;
  return audience === `${issuer}/mcp` && resource.startsWith(`${issuer}/mcp/`);
}

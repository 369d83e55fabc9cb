import { createHash, hash, timingSafeEqual } from 'node:crypto';
import {
  IdentityProviderUnavailableError as KeySetFetchFailedError,
  MissingRequiredClaimError,
  RemoteKeySet,
  TokenVerificationError,
  verifyToken,
  type KeyResolver,
  type RemoteKeySetOptions,
  type RsaAlgorithm,
  type VerifyTokenOptions,
} from '@gw/jwks';
import { readCredential } from './credentials';
import { rejectUnknownOptions } from '@gw/options';
import {
  IdentityProviderUnavailableError,
  InvalidCredentialsError,
  MissingCredentialsError,
  RequiredClaimMissingError,
} from './errors';
import {
  claimsFromApiKeyUser,
  claimsFromToken,
  type ApiKeyUser,
  type GatewayIdentity,
  type UserClaims,
} from './identity';

/** What every gateway API key entry has: the user it stands for, and an optional stable name. */
interface ApiKeyEntryBase {
  /** The user the key stands for: its claims (`sub` defaults to `user_id`). Required. */
  user: ApiKeyUser;
  /**
   * A stable name of the key (a catalog record's id): the caller's subject becomes `key:<id>`.
   * Default: the key's position in the list.
   */
  id?: string;
  /** When the key stops being accepted (`401 invalid_credentials`), in ms since the epoch. Default: never. */
  expiresAt?: number;
  /**
   * The slug of a named routing config the key's calls use (CONTRACT section 17), carried on the
   * caller's identity as `apiKeyConfig`; whether it exists is the host's to check. Default: none.
   */
  config?: string;
}

/**
 * A configured gateway API key: the key itself (`key`, at least 8 characters) or its SHA-256
 * (`keySha256`), exactly one of them, and the user it stands for.
 */
export type ApiKeyEntry =
  | (ApiKeyEntryBase & {
      /** The key in plain text, at least 8 characters. Give this or `keySha256`. */
      key: string;
      keySha256?: undefined;
    })
  | (ApiKeyEntryBase & {
      key?: undefined;
      /** Hex SHA-256 of the key (64 hexadecimal characters), so the config need not hold the key. Give this or `key`. */
      keySha256: string;
    });

/** How identity-provider tokens are validated, whichever way the keys come. */
interface JwtValidationBase {
  /** Claims every token must carry. Default `[]`. */
  requiredClaims?: readonly string[];
  /** Expected `iss`; also published as the authorization server. Default: not checked. */
  issuer?: string;
  /** Expected `aud`. Default: not checked. */
  audience?: string;
  /** Accepted algorithms. Default `["RS256"]`. */
  algorithms?: readonly RsaAlgorithm[];
  /** Allowed clock skew in seconds. Default 30. */
  clockToleranceSeconds?: number;
  /** Called after every fetch of the identity provider's key set, for metrics. Default: none. */
  onKeySetFetch?: (outcome: 'ok' | 'error') => void;
  /**
   * Timing of the key set's cache (see @gw/jwks `RemoteKeySet`): defaults 10 min cache, 30 s
   * cooldown, 1 s first retry after a failed fetch (doubling up to the cooldown), 5 s timeout.
   */
  keySet?: Pick<RemoteKeySetOptions, 'cacheMaxAgeMs' | 'cooldownMs' | 'firstRetryMs' | 'timeoutMs' | 'now'>;
}

/**
 * How identity-provider tokens are validated (the config's `jwt_validation`): keys from the
 * provider's `jwksUri`, or from a resolver of the host's own (`keys`).
 */
export type JwtValidationOptions =
  | (JwtValidationBase & {
      /** The identity provider's JWKS address (http or https). Required unless `keys` is given. */
      jwksUri: string;
      /** A key resolver to use instead of fetching `jwksUri`. Default: none. */
      keys?: KeyResolver;
    })
  | (JwtValidationBase & {
      /** The identity provider's JWKS address (unused when `keys` is given). Default: none. */
      jwksUri?: string;
      /** A key resolver to use instead of fetching `jwksUri` (for hosts with their own key store). */
      keys: KeyResolver;
    });

/**
 * The gateway's own access tokens (it is the OAuth authorization server, `@gw/oauth`): a token
 * whose `iss` is `issuer` is verified here, for the request's resource, instead of as an
 * identity-provider token.
 */
export interface AccessTokenVerifier {
  /** The gateway's issuer (`PUBLIC_BASE_URL`). */
  readonly issuer: string;
  /** Whether the token names this issuer (read without verifying, to choose the verifier). */
  issuedHere(token: string): boolean;
  /** Verifies the token for `resource`; resolves with its claims, rejects when it is refused (reason in `code`). */
  verify(token: string, resource: string | undefined): Promise<{ claims: Record<string, unknown> }>;
}

/** Options of {@link Authenticator} and `authenticate`. */
export interface AuthenticatorOptions {
  /** Gateway API keys. Default `[]`. */
  apiKeys?: readonly ApiKeyEntry[];
  /** Validation of identity-provider tokens. Default: tokens are refused. */
  jwtValidation?: JwtValidationOptions;
  /** The gateway's own OAuth access tokens. Default: none accepted. */
  accessTokens?: AccessTokenVerifier;
}

interface KnownKey {
  digest: Buffer;
  identity: GatewayIdentity;
  expiresAt: number | undefined;
}

const SHA256_HEX = /^[0-9a-f]{64}$/i;
const JWT_VALIDATION_OPTIONS = [
  'jwksUri',
  'requiredClaims',
  'issuer',
  'audience',
  'algorithms',
  'clockToleranceSeconds',
  'keys',
  'onKeySetFetch',
  'keySet',
];

/** An RFC 9110 quoted-string: `"` and `\\` escaped, control characters dropped. */
function quotedString(value: string): string {
  // eslint-disable-next-line no-control-regex
  return `"${value.replace(/[\u0000-\u001f\u007f]/g, '').replace(/["\\]/g, '\\$&')}"`;
}

/** What the authenticator knows of the request: where a 401 points clients for OAuth discovery (RFC 9728), and the resource asked for. */
export interface Challenge {
  resourceMetadataUrl?: string;
  /** The protected resource of the request (`<PUBLIC_BASE_URL>/mcp/<slug>`, `<PUBLIC_BASE_URL>/v1`): a gateway access token must be for it. */
  resource?: string;
}

/**
 * Establishes who is calling, without Express: gateway API keys (compared as SHA-256 digests
 * with `timingSafeEqual`) or identity-provider JWTs verified through @gw/jwks.
 */
export class Authenticator {
  private keys = new Map<string, KnownKey>();
  private readonly verifyOptions: VerifyTokenOptions | undefined;
  private readonly accessTokens: AccessTokenVerifier | undefined;
  /** The identity provider's key set, when `jwtValidation.jwksUri` is used. */
  readonly keySet: RemoteKeySet | undefined;

  constructor(options: AuthenticatorOptions = {}) {
    if (typeof options !== 'object' || options === null) throw new TypeError('authenticate options must be an object.');
    rejectUnknownOptions(options, ['apiKeys', 'jwtValidation', 'resourceMetadataUrl', 'accessTokens'], 'authenticate');
    this.keys = Authenticator.keyMap(options.apiKeys ?? []);
    if (
      options.accessTokens !== undefined &&
      (typeof options.accessTokens?.verify !== 'function' || typeof options.accessTokens.issuedHere !== 'function')
    )
      throw new TypeError(
        "authenticate accessTokens must be the OAuth server's verifier, with issuedHere(token) and verify(token, resource).",
      );
    this.accessTokens = options.accessTokens;
    const validation = options.jwtValidation;
    if (validation !== undefined && (typeof validation !== 'object' || validation === null)) {
      throw new TypeError('authenticate jwtValidation must be an object such as { jwksUri, issuer, audience }.');
    }
    if (validation) {
      rejectUnknownOptions(validation, JWT_VALIDATION_OPTIONS, 'authenticate jwtValidation');
      if (!validation.keys && !validation.jwksUri) {
        throw new TypeError(
          'jwt_validation needs a jwksUri, for example "https://idp.example.com/.well-known/jwks.json".',
        );
      }
      checkJwtValidation(validation);
      this.keySet = validation.keys
        ? undefined
        : new RemoteKeySet({
            ...validation.keySet,
            jwksUri: validation.jwksUri as string,
            onFetch: validation.onKeySetFetch,
          });
      this.verifyOptions = {
        keys: validation.keys ?? (this.keySet as RemoteKeySet),
        issuer: validation.issuer,
        audience: validation.audience,
        algorithms: validation.algorithms ?? ['RS256'],
        requiredClaims: validation.requiredClaims ?? [],
        clockToleranceSeconds: validation.clockToleranceSeconds ?? 30,
      };
    }
  }

  /** Whether identity-provider tokens are accepted. */
  get acceptsTokens(): boolean {
    return this.verifyOptions !== undefined;
  }

  /**
   * Replaces the API keys at once (the catalog changed): the next request is checked against the
   * new list; one in flight keeps the identity it was given. Throws, keeping the old keys, when an
   * entry is not valid.
   */
  setApiKeys(apiKeys: readonly ApiKeyEntry[]): void {
    this.keys = Authenticator.keyMap(apiKeys);
  }

  /** Whether `key` is one of the gateway API keys (so a host can refuse it where it grants nothing, such as the admin API). */
  isApiKey(key: string): boolean {
    const digest = hash('sha256', key, 'buffer');
    const known = this.keys.get(digest.toString('hex'));
    return known !== undefined && timingSafeEqual(known.digest, digest);
  }

  private static keyMap(apiKeys: readonly ApiKeyEntry[]): Map<string, KnownKey> {
    if (!Array.isArray(apiKeys)) throw new TypeError('apiKeys must be a list of { key | keySha256, user }.');
    const keys = new Map<string, KnownKey>();
    apiKeys.forEach((entry, index) => Authenticator.addKey(keys, entry, index));
    return keys;
  }

  private static addKey(keys: Map<string, KnownKey>, entry: ApiKeyEntry, index: number): void {
    const where = `auth.apiKeys[${index}]`;
    if (typeof entry !== 'object' || entry === null)
      throw new TypeError(`${where} must be an object with "key" or "keySha256" and "user".`);
    rejectUnknownOptions(entry, ['key', 'keySha256', 'user', 'id', 'expiresAt', 'config'], where);
    if (entry.expiresAt !== undefined && (typeof entry.expiresAt !== 'number' || !Number.isFinite(entry.expiresAt)))
      throw new TypeError(
        `${where}.expiresAt must be a time in ms since the epoch, such as Date.parse("2030-01-31T00:00:00Z").`,
      );
    if ((entry.key === undefined) === (entry.keySha256 === undefined)) {
      throw new TypeError(`${where} needs exactly one of "key" or "keySha256".`);
    }
    if (entry.key !== undefined && (typeof entry.key !== 'string' || entry.key.length < 8)) {
      throw new TypeError(`${where}.key must be a string of at least 8 characters.`);
    }
    if (entry.keySha256 !== undefined && !SHA256_HEX.test(entry.keySha256)) {
      throw new TypeError(`${where}.keySha256 must be 64 hexadecimal characters (the SHA-256 of the key).`);
    }
    if (typeof entry.user !== 'object' || entry.user === null) throw new TypeError(`${where}.user must be an object.`);
    if (entry.id !== undefined && (typeof entry.id !== 'string' || entry.id === ''))
      throw new TypeError(`${where}.id must be a non-empty string.`);
    if (entry.config !== undefined && (typeof entry.config !== 'string' || entry.config === ''))
      throw new TypeError(`${where}.config must be the slug of a named config, such as "claude-fallback".`);
    const digest =
      entry.key !== undefined
        ? createHash('sha256').update(entry.key).digest()
        : Buffer.from(entry.keySha256 as string, 'hex');
    const hex = digest.toString('hex');
    if (keys.has(hex)) throw new TypeError(`${where} repeats an API key configured before it.`);
    const named =
      typeof entry.id === 'string' &&
      // Stryker disable next-line ConditionalExpression,StringLiteral: an empty id is refused above, so this always holds for a string id
      entry.id !== '';
    const subject = `key:${named ? entry.id : index}`;
    keys.set(hex, {
      digest,
      identity: Object.freeze({
        method: 'api_key',
        subject,
        claims: claimsFromApiKeyUser(entry.user),
        ...(entry.config === undefined ? {} : { apiKeyConfig: entry.config }),
      }),
      expiresAt: entry.expiresAt,
    });
  }

  /** Authenticates the request whose raw header list is given; throws an IdentityForwardingError. */
  async authenticate(rawHeaders: readonly string[], challenge: Challenge = {}): Promise<GatewayIdentity> {
    const credential = readCredential(rawHeaders);
    if (!credential) throw new MissingCredentialsError('No credentials were sent.', this.challenge(challenge, false));
    if (credential.kind === 'unsupported_scheme') {
      throw new InvalidCredentialsError(
        'Only Bearer authorization is accepted.',
        this.challenge(challenge, true),
        'unsupported_scheme',
      );
    }
    if (credential.kind === 'api_key') return this.identifyKey(credential.value, challenge);
    return this.identifyToken(credential.value, challenge);
  }

  private identifyKey(key: string, challenge: Challenge): GatewayIdentity {
    const digest = hash('sha256', key, 'buffer');
    const known = this.keys.get(digest.toString('hex'));
    // The lookup is by digest, so it reveals nothing about the key; the comparison confirms it.
    if (!known || !timingSafeEqual(known.digest, digest)) {
      throw new InvalidCredentialsError(
        'The API key is not valid.',
        this.challenge(challenge, true),
        'unknown_api_key',
      );
    }
    if (known.expiresAt !== undefined && Date.now() >= known.expiresAt) {
      throw new InvalidCredentialsError('The API key has expired.', this.challenge(challenge, true), 'api_key_expired');
    }
    return known.identity;
  }

  private async identifyToken(token: string, challenge: Challenge): Promise<GatewayIdentity> {
    if (this.accessTokens?.issuedHere(token)) return this.identifyAccessToken(this.accessTokens, token, challenge);
    if (!this.verifyOptions) {
      throw new InvalidCredentialsError(
        'The credential is not valid.',
        this.challenge(challenge, true),
        'tokens_not_accepted',
      );
    }
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await verifyToken(token, this.verifyOptions));
    } catch (error) {
      if (error instanceof KeySetFetchFailedError) {
        // The provider is down and the token names a key the gateway lacks: not the caller's fault.
        throw new IdentityProviderUnavailableError(
          "The identity provider's keys cannot be fetched just now; retry shortly.",
          { 'retry-after': String(error.retryAfterSeconds) },
        );
      }
      if (error instanceof MissingRequiredClaimError) {
        throw new RequiredClaimMissingError(error.message, this.challenge(challenge, true));
      }
      if (error instanceof TokenVerificationError) {
        throw new InvalidCredentialsError('The token is not valid.', this.challenge(challenge, true), error.code);
      }
      throw error;
    }
    const claims: UserClaims = claimsFromToken(payload);
    const subject =
      typeof payload.sub === 'string'
        ? `idp:${String(payload.iss ?? '')}|${payload.sub}`
        : `idp-token:${createHash('sha256').update(token).digest('base64url')}`;
    return { method: 'identity_token', subject, claims, token };
  }

  /** A gateway access token: verified in memory for the request's resource; never kept for forwarding. */
  private async identifyAccessToken(
    verifier: AccessTokenVerifier,
    token: string,
    challenge: Challenge,
  ): Promise<GatewayIdentity> {
    let claims: Record<string, unknown>;
    try {
      ({ claims } = await verifier.verify(token, challenge.resource));
    } catch (error) {
      const code = (error as { code?: unknown })?.code;
      throw new InvalidCredentialsError(
        'The access token is not valid here.',
        this.challenge(challenge, true),
        typeof code === 'string' ? code : 'token_invalid',
      );
    }
    return { method: 'oauth_token', subject: `oauth:${String(claims.sub)}`, claims: claimsFromToken(claims) };
  }

  private challenge(challenge: Challenge, credentialSent: boolean): Record<string, string> {
    const parts: string[] = [];
    if (credentialSent) parts.push('error="invalid_token"');
    if (challenge.resourceMetadataUrl && (this.verifyOptions || this.accessTokens))
      parts.push(`resource_metadata=${quotedString(challenge.resourceMetadataUrl)}`);
    return { 'www-authenticate': parts.length ? `Bearer ${parts.join(', ')}` : 'Bearer' };
  }
}

const ALGORITHMS: readonly string[] = ['RS256', 'RS384', 'RS512'];
const KEY_SET_OPTIONS = ['cacheMaxAgeMs', 'cooldownMs', 'firstRetryMs', 'timeoutMs', 'now'];

/** Refuses a `jwtValidation` field of the wrong type when `authenticate` is called, naming it. */
function checkJwtValidation(validation: JwtValidationOptions): void {
  const where = 'authenticate jwtValidation';
  const strings = (value: unknown) => Array.isArray(value) && value.every((v) => typeof v === 'string' && v !== '');
  if (validation.jwksUri !== undefined && typeof validation.jwksUri !== 'string')
    throw new TypeError(`${where}.jwksUri must be a URL such as "https://idp.example.com/.well-known/jwks.json".`);
  for (const field of ['issuer', 'audience'] as const) {
    if (validation[field] !== undefined && (typeof validation[field] !== 'string' || validation[field] === ''))
      throw new TypeError(`${where}.${field} must be a non-empty string.`);
  }
  if (validation.requiredClaims !== undefined && !strings(validation.requiredClaims))
    throw new TypeError(`${where}.requiredClaims must be a list of claim names such as ["email"].`);
  if (
    validation.algorithms !== undefined &&
    !(strings(validation.algorithms) && validation.algorithms.every((a) => ALGORITHMS.includes(a)))
  ) {
    throw new TypeError(`${where}.algorithms must be a list of ${ALGORITHMS.join(', ')}.`);
  }
  const tolerance = validation.clockToleranceSeconds;
  if (tolerance !== undefined && !(Number.isFinite(tolerance) && tolerance >= 0))
    throw new TypeError(`${where}.clockToleranceSeconds must be a number of seconds of at least 0, such as 30.`);
  if (validation.keys !== undefined && typeof validation.keys?.getKey !== 'function')
    throw new TypeError(`${where}.keys must be a key resolver with getKey(kid), such as a RemoteKeySet.`);
  if (validation.onKeySetFetch !== undefined && typeof validation.onKeySetFetch !== 'function')
    throw new TypeError(`${where}.onKeySetFetch must be a function (outcome) => void.`);
  const keySet = validation.keySet;
  if (keySet !== undefined) {
    if (typeof keySet !== 'object' || keySet === null)
      throw new TypeError(`${where}.keySet must be an object such as { cacheMaxAgeMs: 600000 }.`);
    rejectUnknownOptions(keySet, KEY_SET_OPTIONS, `${where}.keySet`);
  }
}

/**
 * Errors of @gw/jwks. One class per failure, each with a stable `code`. Messages never
 * contain key material or token contents.
 */

/** Base of every token verification failure: HTTP 401, OpenAI-style type `authentication_error`. */
export abstract class TokenVerificationError extends Error {
  /** Stable, machine-readable code. */
  abstract readonly code: string;
  /** HTTP status a verification failure is answered with. */
  readonly status = 401 as const;
  /** OpenAI-style error type. */
  readonly type = 'authentication_error' as const;

  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** The token is longer than {@link MAX_TOKEN_BYTES}; refused before it is parsed. */
export class TokenTooLargeError extends TokenVerificationError {
  readonly code = 'token_too_large';
}

/** The token is not a well-formed JWS compact serialisation (segments, base64url, JSON, header fields). */
export class MalformedTokenError extends TokenVerificationError {
  readonly code = 'malformed_token';
}

/** The token's `alg` is `none` or not among the allowed algorithms. */
export class AlgorithmNotAllowedError extends TokenVerificationError {
  readonly code = 'algorithm_not_allowed';
}

/** No published key matches the token's `kid`. */
export class UnknownKeyError extends TokenVerificationError {
  readonly code = 'unknown_key';
}

/** The signature does not verify with the key the token names. */
export class InvalidSignatureError extends TokenVerificationError {
  readonly code = 'invalid_signature';
}

/** The token's `exp` is in the past (beyond the clock tolerance), or it has no `exp`. */
export class TokenExpiredError extends TokenVerificationError {
  readonly code = 'token_expired';
}

/** The token's `nbf` or `iat` is in the future beyond the clock tolerance. */
export class TokenNotYetValidError extends TokenVerificationError {
  readonly code = 'token_not_yet_valid';
}

/** The token's `iss` is not the expected issuer. */
export class IssuerMismatchError extends TokenVerificationError {
  readonly code = 'issuer_mismatch';
}

/** The token's `aud` does not contain the expected audience. */
export class AudienceMismatchError extends TokenVerificationError {
  readonly code = 'audience_mismatch';
}

/** The token lacks a claim listed in `requiredClaims`. */
export class MissingRequiredClaimError extends TokenVerificationError {
  readonly code = 'missing_required_claim';
  /** The name of the missing claim. */
  readonly claim: string;

  constructor(claim: string) {
    super(`The token has no "${claim}" claim, which is required.`);
    this.claim = claim;
  }
}

/**
 * A key set is unavailable and no earlier good copy exists (for a {@link KeyResolver} of your own;
 * `RemoteKeySet` throws {@link IdentityProviderUnavailableError} instead).
 */
export class KeySetUnavailableError extends TokenVerificationError {
  readonly code = 'key_set_unavailable';
}

/**
 * The identity provider's key set cannot be fetched just now, and the token names a key the
 * gateway does not have: not the caller's fault, so HTTP 503 with `retry-after`, not a 401.
 */
export class IdentityProviderUnavailableError extends Error {
  /** Stable, machine-readable code. */
  readonly code = 'identity_provider_unavailable' as const;
  /** HTTP status. */
  readonly status = 503 as const;
  /** OpenAI-style error type. */
  readonly type = 'api_error' as const;
  /** Seconds until the key set is fetched again (at least 1), for `retry-after`. */
  readonly retryAfterSeconds: number;

  constructor(message: string, retryAfterSeconds: number) {
    super(message);
    this.name = 'IdentityProviderUnavailableError';
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** A signing or public key given to the gateway is unusable (wrong type, too small, not PEM). */
export class InvalidSigningKeyError extends Error {
  /** Stable, machine-readable code. */
  readonly code = 'invalid_signing_key' as const;

  constructor(message: string) {
    super(message);
    this.name = 'InvalidSigningKeyError';
  }
}

/** Production start-up with `jwt_header` forwarding but no `JWT_PRIVATE_KEY`: refused (fail closed). */
export class MissingSigningKeyError extends Error {
  /** Stable, machine-readable code. */
  readonly code = 'signing_key_required' as const;

  constructor(message: string) {
    super(message);
    this.name = 'MissingSigningKeyError';
  }
}

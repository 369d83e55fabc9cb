import { hash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { rejectUnknownOptions } from '@gw/options';
import {
  AdminCredentialsInvalidError,
  AdminCredentialsMissingError,
  AdminDisabledError,
  AdminRequiredError,
} from './errors';

/** The claim that makes an identity-provider token an admin's: `claim` equals `value`, or is a list holding it. */
export interface AdminClaim {
  /** The claim's name, such as `groups`. Required (non-empty). */
  claim: string;
  /** The value that makes the caller an admin, such as `gateway-admin`. Required (non-empty). */
  value: string;
}

/** Options of {@link AdminAccess}. */
export interface AdminAccessOptions {
  /** The admin key (`GATEWAY_ADMIN_KEY`), at least 24 characters. Default: none. */
  adminKey?: string;
  /**
   * Verifies an identity-provider token (signature, issuer, audience, expiry) and resolves with its
   * claims; rejects when it is not valid. Default: none, and tokens are not admin credentials.
   */
  verifyToken?: (token: string) => Promise<Record<string, unknown>>;
  /** Which claim makes a token an admin's (needs `verifyToken`). Default: none. */
  adminClaim?: AdminClaim;
  /**
   * Whether a credential is a gateway API key of `/v1` callers: such a key is answered
   * `403 admin_required`, never accepted. Default: nothing is.
   */
  isApiKey?: (credential: string) => boolean;
}

/** Who made an admin request, as the audit log records it (never the credential itself). */
export interface AdminPrincipal {
  /** `admin-key`, or `token:<sub>` for an identity-provider token. */
  actor: string;
}

/** The minimum length of `GATEWAY_ADMIN_KEY`. */
export const MIN_ADMIN_KEY_LENGTH = 24;

const API_KEY_HEADERS = ['x-gateway-api-key', 'x-portkey-api-key', 'x-api-key'];

/**
 * Decides whether a request carries an admin credential: the admin key (compared as SHA-256
 * digests in constant time) or an identity-provider token carrying the admin claim. A gateway API
 * key of `/v1` callers is never one (`403 admin_required`). With neither an admin key nor an admin
 * claim configured, every request is `403 admin_disabled`.
 */
export class AdminAccess {
  private readonly keyDigest: Buffer | undefined;

  constructor(private readonly options: AdminAccessOptions = {}) {
    if (typeof options !== 'object' || options === null)
      throw new TypeError('AdminAccess options must be an object such as { adminKey }.');
    rejectUnknownOptions(options, ['adminKey', 'verifyToken', 'adminClaim', 'isApiKey'], 'AdminAccess');
    for (const name of ['verifyToken', 'isApiKey'] as const) {
      if (options[name] !== undefined && typeof options[name] !== 'function')
        throw new TypeError(`AdminAccess ${name} must be a function.`);
    }
    if (options.adminClaim !== undefined && typeof options.adminClaim === 'object' && options.adminClaim !== null)
      rejectUnknownOptions(options.adminClaim, ['claim', 'value'], 'AdminAccess adminClaim');
    const key = options.adminKey;
    if (key !== undefined && (typeof key !== 'string' || key.length < MIN_ADMIN_KEY_LENGTH)) {
      throw new TypeError(
        `The admin key (GATEWAY_ADMIN_KEY) must be at least ${MIN_ADMIN_KEY_LENGTH} characters, for example: node -e "console.log(crypto.randomBytes(24).toString('base64url'))"`,
      );
    }
    const claim = options.adminClaim;
    if (claim !== undefined) {
      if (
        typeof claim?.claim !== 'string' ||
        claim.claim === '' ||
        typeof claim.value !== 'string' ||
        claim.value === ''
      )
        throw new TypeError('adminClaim must be { claim: "groups", value: "gateway-admin" } (both non-empty strings).');
      if (typeof options.verifyToken !== 'function')
        throw new TypeError('adminClaim needs verifyToken: the identity provider that signs admin tokens.');
    }
    this.keyDigest = key === undefined ? undefined : hash('sha256', key, 'buffer');
  }

  /** Whether any admin credential can be accepted at all. */
  get enabled(): boolean {
    return this.keyDigest !== undefined || this.options.adminClaim !== undefined;
  }

  /** The admin behind the request's credential; throws the admin API's 401/403 errors otherwise. */
  async authorize(headers: IncomingHttpHeaders): Promise<AdminPrincipal> {
    if (!this.enabled) {
      throw new AdminDisabledError(
        'The admin API is disabled: set GATEWAY_ADMIN_KEY (at least 24 characters) to enable it.',
      );
    }
    const authorization = headers.authorization;
    if (authorization === undefined) {
      for (const name of API_KEY_HEADERS) {
        const value = headers[name];
        if (typeof value === 'string' && value !== '') throw this.notAdmin(value);
      }
      throw new AdminCredentialsMissingError('Send the admin key as "Authorization: Bearer <GATEWAY_ADMIN_KEY>".');
    }
    const match = /^Bearer[ ]+([^\s]+)[ ]*$/i.exec(authorization);
    if (!match) throw new AdminCredentialsInvalidError('Only "Authorization: Bearer <admin key>" is accepted.');
    const credential = match[1] as string;
    if (this.keyDigest !== undefined && timingSafeEqual(hash('sha256', credential, 'buffer'), this.keyDigest)) {
      return { actor: 'admin-key' };
    }
    if (this.options.isApiKey?.(credential)) throw this.notAdmin(credential);
    const claim = this.options.adminClaim;
    if (claim === undefined || !this.options.verifyToken || credential.split('.').length !== 3) {
      throw new AdminCredentialsInvalidError('The admin credential is not valid.');
    }
    let claims: Record<string, unknown>;
    try {
      claims = await this.options.verifyToken(credential);
    } catch {
      throw new AdminCredentialsInvalidError('The token is not valid.');
    }
    const held = Object.hasOwn(claims, claim.claim) ? claims[claim.claim] : undefined;
    const isAdmin = Array.isArray(held) ? held.includes(claim.value) : held === claim.value;
    if (!isAdmin) throw new AdminRequiredError(`The token does not carry the admin claim "${claim.claim}".`);
    const sub = typeof claims.sub === 'string' ? claims.sub.slice(0, 128) : 'unknown';
    return { actor: `token:${sub}` };
  }

  private notAdmin(credential: string): Error {
    return this.options.isApiKey?.(credential)
      ? new AdminRequiredError('A gateway API key is not an admin credential: use GATEWAY_ADMIN_KEY.')
      : new AdminCredentialsInvalidError('The admin credential is not valid.');
  }
}

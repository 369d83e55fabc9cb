import { createHmac, hash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { rejectUnknownOptions } from '@gw/options';
import {
  AdminCredentialsInvalidError,
  AdminCredentialsMissingError,
  AdminDisabledError,
  AdminRequiredError,
  CatalogError,
} from './errors';
import { SignInThrottle, clientAddress } from './sign-in-guard';

/** The claim that makes an identity-provider token an admin's: `claim` equals `value`, or is a list holding it. */
export interface AdminClaim {
  /** The claim's name, such as `groups`. Required (non-empty). */
  claim: string;
  /** The value that makes the caller an admin, such as `gateway-admin`. Required (non-empty). */
  value: string;
}

/**
 * What a signed-in admin may do: `admin` everything; `operator` the catalog (providers, MCP
 * servers, prompts, API keys, policies, tool approvals) but no gateway setting (access mode, OAuth
 * settings); `viewer` only reads.
 */
export type AdminRole = 'admin' | 'operator' | 'viewer';

/** Every role, from the most to the least allowed. */
export const ADMIN_ROLES: readonly AdminRole[] = ['admin', 'operator', 'viewer'];

/**
 * Roles from an identity's claim: the claim (a string or a list of strings) holding one of the
 * values of a role gives that role; the most allowed role wins; no value listed, no role.
 */
export interface AdminRoleMapping {
  /** The claim's name, such as `groups`. Required (non-empty). */
  claim: string;
  /** Values that make an `admin`. Default `[]`. */
  admin?: readonly string[];
  /** Values that make an `operator`. Default `[]`. */
  operator?: readonly string[];
  /** Values that make a `viewer`. Default `[]`. */
  viewer?: readonly string[];
}

/** Throws a `TypeError` saying what to write when `mapping` is not an {@link AdminRoleMapping}. */
export function checkAdminRoleMapping(mapping: unknown, where = 'adminRoles'): AdminRoleMapping {
  const example = `${where} must be { "claim": "groups", "admin": ["gateway-admins"], "operator": ["gateway-operators"], "viewer": ["gateway-viewers"] }`;
  if (typeof mapping !== 'object' || mapping === null || Array.isArray(mapping)) throw new TypeError(`${example}.`);
  rejectUnknownOptions(mapping, ['claim', ...ADMIN_ROLES], where);
  const m = mapping as Record<string, unknown>;
  if (typeof m.claim !== 'string' || m.claim === '' || m.claim.length > 128)
    throw new TypeError(`${where}.claim must be the name of a claim (1 to 128 characters), such as "groups".`);
  let values = 0;
  for (const role of ADMIN_ROLES) {
    const list = m[role];
    if (list === undefined) continue;
    if (
      !Array.isArray(list) ||
      list.length > 100 ||
      list.some((v) => typeof v !== 'string' || v === '' || v.length > 256)
    )
      throw new TypeError(
        `${where}.${role} must be a list of at most 100 non-empty claim values, such as ["gateway-${role}s"].`,
      );
    values += list.length;
  }
  if (values === 0) throw new TypeError(`${example}: name at least one value.`);
  return mapping as AdminRoleMapping;
}

/** The role `claims` give under `mapping` (the most allowed one), or undefined for none. */
export function roleFromClaims(mapping: AdminRoleMapping, claims: Record<string, unknown>): AdminRole | undefined {
  const held = Object.hasOwn(claims, mapping.claim) ? claims[mapping.claim] : undefined;
  const values = new Set(
    (Array.isArray(held) ? held : [held]).filter((v): v is string => typeof v === 'string').slice(0, 1000),
  );
  // Whole values only: "not-gateway-admins" is not "gateway-admins".
  return ADMIN_ROLES.find((role) => (mapping[role] ?? []).some((value) => values.has(value)));
}

/** A fingerprint of a role mapping: sessions signed in under another mapping end. */
export function roleMappingFingerprint(mapping: AdminRoleMapping | undefined): string {
  return mapping === undefined
    ? 'none'
    : fingerprint(JSON.stringify([mapping.claim, ...ADMIN_ROLES.map((role) => [...(mapping[role] ?? [])].sort())]));
}

/** A sign-in the admin credential check refused (never the credential itself). */
export interface AdminSignInFailure {
  /** Where: `admin-api` (a bearer credential) or `console` (the console's sign-in form). */
  via: 'admin-api' | 'console';
  /** The client's address (see {@link AdminAccessOptions.clientAddress}). */
  address: string;
  /** Why: the error code answered (`invalid_credentials`, `admin_required`). */
  code: string;
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
  /**
   * Slows down failed sign-ins per client address ({@link AdminAccess.authorizeRequest}); `false`
   * turns that off. Default: a {@link SignInThrottle} with its defaults (5 free failures, then 1 s
   * doubling up to 15 minutes).
   */
  throttle?: SignInThrottle | false;
  /** The client's address of a request. Default: the socket's peer address ({@link clientAddress} without trusted proxies). */
  clientAddress?: (req: IncomingMessage) => string;
  /** Called with every refused sign-in, for the audit log. Default: none. */
  onSignInFailure?: (failure: AdminSignInFailure) => void;
  /**
   * Roles from a claim of an identity-provider token (needs `verifyToken`): a token without the
   * admin claim but with a value of this mapping is accepted with that role. Default: none.
   */
  roles?: AdminRoleMapping;
  /**
   * The fingerprint of the console's OpenID Provider sign-in settings in force now (provider,
   * client and role mapping), or undefined while that sign-in is off: console sessions signed in
   * there end when it changes. Default: none (no such sessions hold).
   */
  oidcFingerprint?: () => string | undefined;
}

/**
 * Which credential an admin signed in with, as far as the gateway needs to know whether it still
 * holds: never the credential itself.
 */
export type AdminCredential =
  | {
      kind: 'admin-key';
      /** An HMAC-SHA256 of the admin key (hex): equal for the same key, another for a rotated one. */
      fingerprint: string;
    }
  | {
      /** A console sign-in at the company's OpenID Provider (its ID token's claims). */
      kind: 'oidc';
      /** An HMAC-SHA256 (hex) of the sign-in settings (provider, client, role mapping) it was accepted under. */
      fingerprint: string;
      /** The ID token's `iss`. */
      issuer: string;
      /** The ID token's `sub`. */
      subject: string;
      /** The ID token's `exp`, in ms since the epoch. */
      expiresAt: number | undefined;
    }
  | {
      kind: 'token';
      /** An HMAC-SHA256 (hex) of the admin claim rule the token was accepted under. */
      fingerprint: string;
      /** The token's `iss`. */
      issuer: string;
      /** The token's `sub`. */
      subject: string;
      /** The token's `exp`, in ms since the epoch; undefined when it has none. */
      expiresAt: number | undefined;
    };

/** Who made an admin request, as the audit log records it (never the credential itself). */
export interface AdminPrincipal {
  /**
   * `admin-key:<8 hex>` (the start of the admin key's fingerprint: a rotated key is another
   * actor), or `token:<iss>#<sub>` for an identity-provider token; the console prefixes `console:`.
   */
  actor: string;
  /** The credential it signed in with. Default: none (a principal the host vouches for). */
  credential?: AdminCredential;
  /** What it may do. Default `admin` (the admin key, a token with the admin claim). */
  role?: AdminRole;
}

/** The minimum length of `GATEWAY_ADMIN_KEY`. */
export const MIN_ADMIN_KEY_LENGTH = 24;
/** The least estimated entropy, in bits, of an admin key {@link adminKeyWeakness} accepts. */
export const MIN_ADMIN_KEY_BITS = 56;

const API_KEY_HEADERS = ['x-gateway-api-key', 'x-portkey-api-key', 'x-api-key'];
const FINGERPRINT_LABEL = 'gw-admin-credential-fingerprint';
const GENERATE_HINT = `generate one with: node -e "console.log(crypto.randomBytes(24).toString('base64url'))"`;

/** A fingerprint of a credential: not the credential, and not reversible for a key of enough entropy. */
function fingerprint(text: string): string {
  return createHmac('sha256', FINGERPRINT_LABEL).update(text).digest('hex');
}

/**
 * Why `key` is too weak to be the admin key (a phrase such as `must be at least 24 characters`), or undefined when it is strong enough: shorter than
 * {@link MIN_ADMIN_KEY_LENGTH}, or an estimated entropy below {@link MIN_ADMIN_KEY_BITS} bits. The
 * estimate counts only the characters a guesser could not predict from the ones before (a
 * repeated three-character sequence, or a run such as `aaa`, `abc`, `321`), each worth the
 * Shannon entropy of the key's character frequencies: `aaaa…`, `passwordpassword…` and
 * `1234567890123…` are refused, 24 random base64url characters score ~100 bits, 24 random hex characters at least ~57.
 */
export function adminKeyWeakness(key: string): string | undefined {
  if (key.length < MIN_ADMIN_KEY_LENGTH) return `must be at least ${MIN_ADMIN_KEY_LENGTH} characters`;
  const chars = [...key.slice(0, 1024)];
  const counts = new Map<string, number>();
  for (const c of chars) counts.set(c, (counts.get(c) ?? 0) + 1);
  let perChar = 0;
  for (const n of counts.values()) perChar -= (n / chars.length) * Math.log2(n / chars.length);
  const seen = new Set<string>();
  let unpredictable = 0;
  for (let i = 0; i < chars.length; i++) {
    const code = (k: number) => chars[k]?.codePointAt(0) ?? 0;
    const trigram = i >= 2 ? chars.slice(i - 2, i + 1).join('') : undefined;
    const step = i >= 2 ? code(i) - code(i - 1) : undefined;
    const run = step !== undefined && Math.abs(step) <= 1 && step === code(i - 1) - code(i - 2);
    const repeated = trigram !== undefined && seen.has(trigram);
    if (trigram !== undefined) seen.add(trigram);
    if (!run && !repeated) unpredictable++;
  }
  const bits = Math.floor(perChar * unpredictable);
  if (bits < MIN_ADMIN_KEY_BITS)
    return `is too easy to guess (repeated or sequential characters: about ${bits} bits of entropy, at least ${MIN_ADMIN_KEY_BITS} needed)`;
  return undefined;
}

/** Throws when `key` would be a weak `GATEWAY_ADMIN_KEY`, with a message saying how to make one. */
export function checkAdminKeyStrength(key: string, name = 'GATEWAY_ADMIN_KEY'): void {
  const weakness = adminKeyWeakness(key);
  if (weakness !== undefined) throw new TypeError(`${name} ${weakness}; ${GENERATE_HINT}`);
}

/** The text of a claim for an actor name: at most 128 characters, no control characters, no `#`. */
export function actorPart(value: unknown): string {
  return typeof value === 'string' && value !== ''
    ? [...value.slice(0, 128)].map((c) => (c === '#' || c.charCodeAt(0) < 32 || c === '\u007f' ? '_' : c)).join('')
    : 'unknown';
}

/**
 * Decides whether a request carries an admin credential: the admin key (compared as SHA-256
 * digests in constant time) or an identity-provider token carrying the admin claim. A gateway API
 * key of `/v1` callers is never one (`403 admin_required`). With neither an admin key nor an admin
 * claim configured, every request is `403 admin_disabled`.
 */
export class AdminAccess {
  private readonly keyDigest: Buffer | undefined;
  private readonly keyFingerprint: string | undefined;
  private readonly claimFingerprint: string | undefined;
  private readonly throttle: SignInThrottle | undefined;

  constructor(private readonly options: AdminAccessOptions = {}) {
    if (typeof options !== 'object' || options === null)
      throw new TypeError('AdminAccess options must be an object such as { adminKey }.');
    rejectUnknownOptions(
      options,
      [
        'adminKey',
        'verifyToken',
        'adminClaim',
        'isApiKey',
        'throttle',
        'clientAddress',
        'onSignInFailure',
        'roles',
        'oidcFingerprint',
      ],
      'AdminAccess',
    );
    for (const name of ['verifyToken', 'isApiKey', 'clientAddress', 'onSignInFailure', 'oidcFingerprint'] as const) {
      if (options[name] !== undefined && typeof options[name] !== 'function')
        throw new TypeError(`AdminAccess ${name} must be a function.`);
    }
    if (options.throttle !== undefined && options.throttle !== false && !(options.throttle instanceof SignInThrottle))
      throw new TypeError(
        'AdminAccess throttle must be a SignInThrottle (new SignInThrottle({ freeAttempts: 5 })) or false.',
      );
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
    if (options.roles !== undefined) {
      checkAdminRoleMapping(options.roles, 'AdminAccess roles');
      if (typeof options.verifyToken !== 'function')
        throw new TypeError('AdminAccess roles needs verifyToken: the identity provider that signs admin tokens.');
    }
    this.keyDigest = key === undefined ? undefined : hash('sha256', key, 'buffer');
    this.keyFingerprint = key === undefined ? undefined : fingerprint(`admin-key\0${key}`);
    this.claimFingerprint =
      claim === undefined && options.roles === undefined
        ? undefined
        : fingerprint(`token\0${claim?.claim ?? ''}\0${claim?.value ?? ''}\0${roleMappingFingerprint(options.roles)}`);
    this.throttle = options.throttle === false ? undefined : (options.throttle ?? new SignInThrottle());
  }

  /** Whether any admin credential can be accepted at all. */
  get enabled(): boolean {
    return (
      this.keyDigest !== undefined ||
      this.options.adminClaim !== undefined ||
      this.options.roles !== undefined ||
      this.options.oidcFingerprint?.() !== undefined
    );
  }

  /** Throws `403 admin_disabled` when no admin credential can be accepted. */
  assertEnabled(): void {
    if (!this.enabled) {
      throw new AdminDisabledError(
        'The admin API is disabled: set GATEWAY_ADMIN_KEY (at least 24 characters) to enable it.',
      );
    }
  }

  /**
   * The fingerprint of the credential of `kind` this instance accepts now (see
   * {@link AdminCredential}): of its admin key, or of its admin claim rule for tokens; undefined
   * when it accepts none of that kind. A session signed in with a credential whose fingerprint is
   * no longer this one has lost its credential.
   */
  credentialFingerprint(kind: AdminCredential['kind']): string | undefined {
    if (kind === 'oidc') return this.options.oidcFingerprint?.();
    return kind === 'admin-key' ? this.keyFingerprint : this.claimFingerprint;
  }

  /** The client's address of a request, as sign-in throttling counts it. */
  addressOf(req: IncomingMessage): string {
    return this.options.clientAddress?.(req) ?? clientAddress(req);
  }

  /**
   * {@link AdminAccess.authorize} for a request from a client, slowed down per client address:
   * after a few failures the address is answered `429 too_many_attempts` (with `retryAfterSeconds`)
   * until its wait is over, and every refused credential is reported to `onSignInFailure`.
   * `headers` replaces the request's own (the console's sign-in form carries the credential in its body).
   */
  async authorizeRequest(
    req: IncomingMessage,
    via: 'admin-api' | 'console' = 'admin-api',
    headers: IncomingHttpHeaders = req.headers,
  ): Promise<AdminPrincipal> {
    this.assertEnabled();
    // A request with no credential at all is not a guess: it is answered without being counted.
    const presented = headers.authorization !== undefined || API_KEY_HEADERS.some((h) => headers[h] !== undefined);
    if (!presented) return this.authorize(headers);
    const address = this.addressOf(req);
    this.throttle?.begin(address);
    try {
      const principal = await this.authorize(headers);
      this.throttle?.succeeded(address);
      return principal;
    } catch (error) {
      const code = error instanceof CatalogError ? error.code : 'invalid_credentials';
      try {
        this.options.onSignInFailure?.({ via, address, code });
      } catch {
        // The report is the host's; a failure there changes nothing of the answer.
      }
      throw error;
    }
  }

  /** The admin behind the request's credential; throws the admin API's 401/403 errors otherwise. */
  async authorize(headers: IncomingHttpHeaders): Promise<AdminPrincipal> {
    this.assertEnabled();
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
      const keyFingerprint = this.keyFingerprint as string;
      return {
        actor: `admin-key:${keyFingerprint.slice(0, 8)}`,
        credential: { kind: 'admin-key', fingerprint: keyFingerprint },
      };
    }
    if (this.options.isApiKey?.(credential)) throw this.notAdmin(credential);
    const claim = this.options.adminClaim;
    const roles = this.options.roles;
    if (
      (claim === undefined && roles === undefined) ||
      !this.options.verifyToken ||
      credential.split('.').length !== 3
    ) {
      throw new AdminCredentialsInvalidError('The admin credential is not valid.');
    }
    let claims: Record<string, unknown>;
    try {
      claims = await this.options.verifyToken(credential);
    } catch {
      throw new AdminCredentialsInvalidError('The token is not valid.');
    }
    const held = claim === undefined ? undefined : Object.hasOwn(claims, claim.claim) ? claims[claim.claim] : undefined;
    // Whole values only: "not-gateway-admin" is not "gateway-admin", in a string or in a list.
    const isAdmin =
      claim !== undefined && (Array.isArray(held) ? held.some((v) => v === claim.value) : held === claim.value);
    const role: AdminRole | undefined = isAdmin
      ? 'admin'
      : roles === undefined
        ? undefined
        : roleFromClaims(roles, claims);
    if (role === undefined)
      throw new AdminRequiredError(
        `The token carries neither the admin claim nor a role claim ("${(claim?.claim ?? roles?.claim ?? '').slice(0, 64)}").`,
      );
    const issuer = actorPart(claims.iss);
    const subject = actorPart(claims.sub);
    const exp = claims.exp;
    return {
      actor: `token:${issuer}#${subject}`,
      role,
      credential: {
        kind: 'token',
        fingerprint: this.claimFingerprint as string,
        issuer,
        subject,
        expiresAt: typeof exp === 'number' && Number.isFinite(exp) ? exp * 1000 : undefined,
      },
    };
  }

  private notAdmin(credential: string): Error {
    return this.options.isApiKey?.(credential)
      ? new AdminRequiredError('A gateway API key is not an admin credential: use GATEWAY_ADMIN_KEY.')
      : new AdminCredentialsInvalidError('The admin credential is not valid.');
  }
}

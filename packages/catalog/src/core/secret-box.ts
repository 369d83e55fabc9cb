import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { SecretUnreadableError } from './errors';

/** The form of every value sealed now: bound to its record (see {@link secretContext}). */
const FORMAT = 'v2';
/** The form of earlier gateways, bound only to kind, slug and field: opened only by the one-time upgrade. */
const LEGACY_FORMAT = 'v1';
const IV_BYTES = 12;

/** The fields of a record that say where its secrets are sent: a digest of them is bound to each secret. */
export const ROUTING_FIELDS: readonly string[] = ['provider', 'baseUrl', 'allowedHosts', 'region', 'url'];

/** The fields of an MCP server's `upstream_auth` that say where its secrets are sent, bound like {@link ROUTING_FIELDS}. */
export const UPSTREAM_ROUTING_FIELDS: readonly string[] = ['type', 'authorization_server', 'token_endpoint', 'issuer'];

/** What a sealed secret is bound to: its record (kind, id, version), its field, and where the record sends it. */
export interface SecretBinding {
  kind: string;
  /** The record's id (a UUID, or an API key's id). */
  id: string;
  /** The record's version the value is sealed for (+1 on every change, when it is sealed again). */
  version: number;
  field: string;
  /** The record's non-secret fields; only {@link ROUTING_FIELDS} are read. */
  data: Record<string, unknown>;
}

/**
 * The additional data a secret is sealed with: the record's kind, id and version, the field, and
 * a SHA-256 of the record's routing fields ({@link ROUTING_FIELDS}: `provider`, `baseUrl`,
 * `allowedHosts`, `region`, `url`; and an `upstream_auth`'s {@link UPSTREAM_ROUTING_FIELDS} when
 * the record has one). A ciphertext moved to another field, another record or another
 * version of the same record, or left in a row whose routing fields were changed without sealing
 * it again, does not open.
 */
export function secretContext(binding: SecretBinding): string {
  const fields: unknown[] = ROUTING_FIELDS.map((field) => binding.data[field] ?? null);
  // An MCP server's `upstream_auth` says where its secrets go too (bound only when present, so
  // secrets sealed before it existed still open).
  const upstream = binding.data.upstream_auth;
  if (typeof upstream === 'object' && upstream !== null) {
    const auth = upstream as Record<string, unknown>;
    fields.push(UPSTREAM_ROUTING_FIELDS.map((field) => auth[field] ?? null));
  }
  const routing = JSON.stringify(fields);
  const digest = createHash('sha256').update(routing).digest('hex');
  return JSON.stringify(['gw-secret-v2', binding.kind, binding.id, binding.version, binding.field, digest]);
}

/** The id of a key as stored beside each ciphertext: the first 8 hex characters of its SHA-256. */
export function encryptionKeyId(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 8);
}

/**
 * Parses `GATEWAY_ENCRYPTION_KEY`: 32 bytes in base64 (standard or URL-safe). Throws a
 * `TypeError` that says what to write.
 */
export function parseEncryptionKey(value: string, name = 'GATEWAY_ENCRYPTION_KEY'): Buffer {
  const trimmed = value.trim();
  const key = /^[A-Za-z0-9+/_-]+={0,2}$/.test(trimmed) ? Buffer.from(trimmed, 'base64') : Buffer.alloc(0);
  if (key.length !== 32) {
    throw new TypeError(
      `${name} must be 32 bytes in base64 (44 characters), for example the output of: node -e "console.log(crypto.randomBytes(32).toString('base64'))"`,
    );
  }
  return key;
}

/**
 * Encrypts catalog secrets at rest with AES-256-GCM. A sealed value is
 * `v2.<key id>.<iv>.<tag>.<ciphertext>` (base64url parts), sealed with a context as additional
 * data; the catalog's context is {@link secretContext} (record kind, id, version, field and a
 * digest of its routing fields), so a ciphertext copied to another field, record or version, or
 * kept under changed routing fields, does not open. Holds the current key, which seals, and
 * previous keys, which still open (key rotation). Values of the earlier `v1` form open only
 * through {@link SecretBox.openLegacy}, which the catalog calls once, to seal them again.
 */
export class SecretBox {
  private readonly keys = new Map<string, Buffer>();
  /** The id of the key that seals. */
  readonly keyId: string;

  /** `current` seals and opens; `previous` keys only open. Each is 32 bytes. */
  constructor(current: Buffer, previous: readonly Buffer[] = []) {
    for (const key of [current, ...previous]) {
      if (!Buffer.isBuffer(key) || key.length !== 32) throw new TypeError('An encryption key must be 32 bytes.');
      this.keys.set(encryptionKeyId(key), Buffer.from(key));
    }
    this.keyId = encryptionKeyId(current);
  }

  /** The id stored beside ciphertexts sealed under `key` (not secret: a digest prefix). */
  static keyIdOf(key: Buffer): string {
    return encryptionKeyId(key);
  }

  /** A new random key, base64, for `GATEWAY_ENCRYPTION_KEY`. */
  static generateKey(): string {
    return randomBytes(32).toString('base64');
  }

  /** Seals `plaintext` under the current key, bound to `context` (the catalog's: {@link secretContext}). */
  seal(plaintext: string, context: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.keys.get(this.keyId) as Buffer, iv);
    cipher.setAAD(Buffer.from(context));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [FORMAT, this.keyId, iv, cipher.getAuthTag(), ciphertext]
      .map((part) => (typeof part === 'string' ? part : part.toString('base64url')))
      .join('.');
  }

  /**
   * Opens a sealed value bound to `context`; throws {@link SecretUnreadableError} when no key opens
   * it (`label` names the secret in the message, never its value; default: the context).
   */
  open(sealed: string, context: string, label: string = context): string {
    return this.openAs(FORMAT, sealed, context, label);
  }

  /**
   * Opens a value of the earlier `v1` form (bound only to `<kind>/<slug>/<field>`), for the
   * catalog's one-time upgrade that seals it again bound to its record. Nothing else reads `v1`.
   */
  openLegacy(sealed: string, context: string): string {
    return this.openAs(LEGACY_FORMAT, sealed, context, context);
  }

  /** Whether `sealed` is of the earlier `v1` form. */
  static isLegacy(sealed: string): boolean {
    return sealed.startsWith(`${LEGACY_FORMAT}.`);
  }

  private openAs(format: string, sealed: string, context: string, label: string): string {
    const [given, keyId, iv, tag, ciphertext] = typeof sealed === 'string' ? sealed.split('.') : [];
    if (given !== format) {
      throw new SecretUnreadableError(
        given === LEGACY_FORMAT
          ? `A stored secret (${label}) is of the earlier unbound form and was not upgraded at start-up: give it again.`
          : `A stored secret (${label}) is not a sealed value of this gateway.`,
      );
    }
    const key = keyId === undefined ? undefined : this.keys.get(keyId);
    if (key === undefined || iv === undefined || tag === undefined || ciphertext === undefined) {
      throw new SecretUnreadableError(`A stored secret (${label}) was sealed with a key the gateway does not have.`);
    }
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
      decipher.setAAD(Buffer.from(context));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
    } catch {
      throw new SecretUnreadableError(
        `A stored secret (${label}) does not open: it, or its record's routing fields, were changed or moved outside the gateway.`,
      );
    }
  }

  /** Whether `sealed` is sealed under the current key (key rotation re-seals the others). */
  isCurrent(sealed: string): boolean {
    return sealed.split('.')[1] === this.keyId;
  }
}

/** The hint shown for a secret: its last four characters, as `"…7f3a"`. */
export function secretHint(secret: string): string {
  return `…${secret.slice(-4)}`;
}

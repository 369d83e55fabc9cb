import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { SecretUnreadableError } from './errors';

const FORMAT = 'v1';
const IV_BYTES = 12;

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
 * `v1.<key id>.<iv>.<tag>.<ciphertext>` (base64url parts); the record's kind, slug and field are
 * bound to it as additional data, so a ciphertext copied to another record or field does not
 * open. Holds the current key, which seals, and previous keys, which still open (key rotation).
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

  /** Seals `plaintext` under the current key, bound to `context` (for example `providers/claude/apiKey`). */
  seal(plaintext: string, context: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.keys.get(this.keyId) as Buffer, iv);
    cipher.setAAD(Buffer.from(context));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [FORMAT, this.keyId, iv, cipher.getAuthTag(), ciphertext]
      .map((part) => (typeof part === 'string' ? part : part.toString('base64url')))
      .join('.');
  }

  /** Opens a sealed value; throws {@link SecretUnreadableError} when no key opens it. */
  open(sealed: string, context: string): string {
    const [format, keyId, iv, tag, ciphertext] = sealed.split('.');
    const key = keyId === undefined ? undefined : this.keys.get(keyId);
    if (format !== FORMAT || key === undefined || iv === undefined || tag === undefined || ciphertext === undefined) {
      throw new SecretUnreadableError(`A stored secret (${context}) was sealed with a key the gateway does not have.`);
    }
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
      decipher.setAAD(Buffer.from(context));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
    } catch {
      throw new SecretUnreadableError(`A stored secret (${context}) does not open: it was changed or moved.`);
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

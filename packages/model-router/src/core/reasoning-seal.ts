import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { InvalidEncryptedContentError } from './errors';

/** An Anthropic thinking block as it must go back to the provider, signature included. */
export type ThinkingBlock =
  { type: 'thinking'; thinking: string; signature: string } | { type: 'redacted_thinking'; data: string };

const FORMAT = 'gwr1';
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** Largest `encrypted_content` opened: 4 MiB of base64 (a thinking block is far smaller). */
const MAX_SEALED_CHARS = 4 * 1024 * 1024;

function refuse(param: string): never {
  throw new InvalidEncryptedContentError(
    'encrypted_content is not one this gateway gave out to this caller (it was changed, cut, or sealed under another key); ' +
      'send the reasoning item back exactly as it was received, or leave it out.',
    { param },
  );
}

const isThinkingBlock = (value: unknown): value is ThinkingBlock => {
  if (typeof value !== 'object' || value === null) return false;
  const block = value as Record<string, unknown>;
  if (block.type === 'thinking') return typeof block.thinking === 'string' && typeof block.signature === 'string';
  return block.type === 'redacted_thinking' && typeof block.data === 'string';
};

/**
 * Seals thinking blocks into a Responses reasoning item's `encrypted_content` and opens them again:
 * AES-256-GCM under a gateway key, bound to the caller (additional data), so a client gives back
 * only thinking (and signatures) it received, unchanged, and one caller's reasoning does not open
 * for another. Sealed values are `gwr1.<base64url of iv, tag and ciphertext>`.
 */
export class ReasoningSeal {
  private readonly key: Buffer;

  /** `key`: 32 bytes. Default: a random key of this process (sealed reasoning then opens only here). */
  constructor(key: Buffer = randomBytes(32)) {
    if (!Buffer.isBuffer(key) || key.length !== 32) {
      throw new TypeError(
        'reasoningKey must be a Buffer of 32 bytes, for example derived from the encryption key with HKDF.',
      );
    }
    this.key = Buffer.from(key);
  }

  /** Seals `blocks` for `caller` (any string naming the caller; the same must open it). */
  seal(blocks: readonly ThinkingBlock[], caller: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(`${FORMAT}\n${caller}`));
    const ciphertext = Buffer.concat([cipher.update(JSON.stringify(blocks), 'utf8'), cipher.final()]);
    return `${FORMAT}.${Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64url')}`;
  }

  /**
   * The thinking blocks `sealed` holds, byte for byte as sealed; throws
   * `400 invalid_encrypted_content` (naming `param`) for anything this gateway did not seal for `caller`.
   */
  open(sealed: unknown, caller: string, param: string): ThinkingBlock[] {
    if (typeof sealed !== 'string' || sealed.length > MAX_SEALED_CHARS || !sealed.startsWith(`${FORMAT}.`))
      refuse(param);
    const raw = Buffer.from(sealed.slice(FORMAT.length + 1), 'base64url');
    if (raw.length <= IV_BYTES + TAG_BYTES) refuse(param);
    let plain: string;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, IV_BYTES));
      decipher.setAAD(Buffer.from(`${FORMAT}\n${caller}`));
      decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      plain = Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
    } catch {
      return refuse(param);
    }
    const blocks: unknown = JSON.parse(plain);
    if (!Array.isArray(blocks) || !blocks.every(isThinkingBlock)) refuse(param);
    return blocks;
  }
}

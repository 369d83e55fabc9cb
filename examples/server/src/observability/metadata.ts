import type { IncomingHttpHeaders } from 'node:http';

/** Most keys of `x-gateway-metadata`. */
export const MAX_METADATA_KEYS = 32;
/** Longest key of `x-gateway-metadata`, in characters. */
export const MAX_METADATA_KEY_LENGTH = 64;
/** Longest value of `x-gateway-metadata`, in characters. */
export const MAX_METADATA_VALUE_LENGTH = 512;
/** Longest `x-gateway-metadata` header read: 32 × (64 + 512) characters and the JSON around them. */
const MAX_METADATA_HEADER_LENGTH = 24 * 1024;

/** What a redacted metadata value is replaced with. */
export const REDACTED = '[redacted]';

/** Words that make a metadata key name a credential (compared lower case, without `-`, `_`, `.` and spaces). */
const CREDENTIAL_WORDS = [
  'authorization',
  'apikey',
  'token',
  'secret',
  'password',
  'passwd',
  'passphrase',
  'cookie',
  'credential',
  'privatekey',
  'bearer',
  'accesskey',
];

/**
 * Whether a metadata key names a credential (CONTRACT section 9): `authorization`, `api-key`,
 * `x_api_key`, `token`, `access_token`, `secret`, `password`, `cookie`, … — any key containing one
 * of those words, whatever its case and separators.
 */
export function isCredentialKey(key: string): boolean {
  const folded = key.toLowerCase().replace(/[-_.\s]/g, '');
  return CREDENTIAL_WORDS.some((word) => folded.includes(word));
}

/**
 * The one redaction step of request metadata, applied when the header is read, before the request
 * record is logged or stored: the value under a key naming a credential is replaced with
 * `[redacted]` (the key stays, so the record shows one was sent).
 */
export function redactMetadata(metadata: Record<string, string>): Record<string, string> {
  const redacted: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [key, value] of Object.entries(metadata)) redacted[key] = isCredentialKey(key) ? REDACTED : value;
  return { ...redacted };
}

/** `400 invalid_metadata`: `x-gateway-metadata` is not a JSON object of at most 32 short string values. */
export class InvalidMetadataError extends Error {
  readonly status = 400;
  readonly code = 'invalid_metadata';
  readonly type = 'invalid_request_error';
  constructor(
    message: string,
    readonly param: string,
  ) {
    super(message);
    this.name = 'InvalidMetadataError';
  }
}

/**
 * Reads `x-gateway-metadata` (or the `portkey-ai` SDK's `x-portkey-metadata`): a JSON object of
 * string values, at most 32 keys, each key at most 64 and each value at most 512 characters.
 * Undefined when neither header is sent; throws {@link InvalidMetadataError}, naming the header,
 * for anything else. A `_user` key is a label like any other, never the caller's identity. The
 * value of a key naming a credential is already redacted ({@link redactMetadata}): what this
 * returns is what the log line and the stored record both keep.
 */
export function readMetadata(headers: IncomingHttpHeaders): Record<string, string> | undefined {
  const param = headers['x-gateway-metadata'] !== undefined ? 'x-gateway-metadata' : 'x-portkey-metadata';
  const raw = headers[param];
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string') throw new InvalidMetadataError(`${param} must be sent once.`, param);
  if (raw.length > MAX_METADATA_HEADER_LENGTH) {
    throw new InvalidMetadataError(`${param} is longer than ${MAX_METADATA_HEADER_LENGTH} characters.`, param);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new InvalidMetadataError(`${param} must be a JSON object, such as {"team":"search"}.`, param);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new InvalidMetadataError(`${param} must be a JSON object, such as {"team":"search"}.`, param);
  }
  const keys = Object.keys(parsed);
  if (keys.length > MAX_METADATA_KEYS) {
    throw new InvalidMetadataError(
      `${param} has ${keys.length} keys; at most ${MAX_METADATA_KEYS} are allowed.`,
      param,
    );
  }
  // No prototype: a key such as "__proto__" stays a plain key.
  const metadata: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const key of keys) {
    const value = (parsed as Record<string, unknown>)[key];
    if (key.length === 0 || key.length > MAX_METADATA_KEY_LENGTH) {
      throw new InvalidMetadataError(
        `${param} keys must be 1 to ${MAX_METADATA_KEY_LENGTH} characters (got one of ${key.length}).`,
        param,
      );
    }
    if (typeof value !== 'string') {
      throw new InvalidMetadataError(
        `${param} values must be strings ("${key.slice(0, 64)}" is ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}).`,
        param,
      );
    }
    if (value.length > MAX_METADATA_VALUE_LENGTH) {
      throw new InvalidMetadataError(
        `${param} values must be at most ${MAX_METADATA_VALUE_LENGTH} characters ("${key.slice(0, 64)}" has ${value.length}).`,
        param,
      );
    }
    metadata[key] = value;
  }
  return redactMetadata(metadata);
}

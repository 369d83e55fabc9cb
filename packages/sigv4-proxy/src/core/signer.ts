import { createHmac, hash } from 'node:crypto';
import { UnsupportedQueryParameterError } from './errors';
import type { ResolvedIntegration } from './integration';

/** Both the Bedrock agent and agent-runtime APIs sign as `bedrock`. */
export const BEDROCK_SIGNING_SERVICE = 'bedrock';

/**
 * A request to sign: `path` is the raw (percent-encoded) path, `query` the raw query string.
 * `body`: the bytes sent, or the text whose UTF-8 bytes are sent (hashed as they are, no copy made).
 */
export interface RequestToSign {
  method: string;
  origin: URL;
  path: string;
  query: string;
  headers: Record<string, string>;
  body: Uint8Array | string;
}

/**
 * Decodes a raw query string into the parameters the signer canonicalises (order and encoding are
 * its job). The object has no prototype: a parameter named `constructor` or `toString` is a
 * parameter like any other. A parameter named `__proto__` is refused with
 * {@link UnsupportedQueryParameterError}, as the signing libraries drop it from the canonical query.
 */
export function parseQuery(query: string): Record<string, string | string[]> {
  const params = Object.create(null) as Record<string, string | string[]>;
  // Stryker disable next-line ConditionalExpression,StringLiteral: a fast path; the loop skips the single empty pair of ''.split('&') alike.
  if (query === '') return params;
  for (const pair of query.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const decode = (s: string) => {
      try {
        return decodeURIComponent(s);
      } catch {
        return s;
      }
    };
    const key = decode(eq === -1 ? pair : pair.slice(0, eq));
    if (key === '__proto__') {
      throw new UnsupportedQueryParameterError('A query parameter may not be named "__proto__".');
    }
    const value = eq === -1 ? '' : decode(pair.slice(eq + 1));
    const existing = Object.hasOwn(params, key) ? params[key] : undefined;
    params[key] = existing === undefined ? value : Array.isArray(existing) ? [...existing, value] : [existing, value];
  }
  return params;
}

/** Headers never signed (what AWS's own signers leave out), besides `proxy-*` and `sec-*`. */
const UNSIGNABLE: ReadonlySet<string> = new Set([
  'authorization',
  'cache-control',
  'connection',
  'expect',
  'from',
  'keep-alive',
  'max-forwards',
  'pragma',
  'referer',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'user-agent',
  'x-amzn-trace-id',
]);
/** Headers the signer writes itself: any the caller gave are replaced. */
const GENERATED: ReadonlySet<string> = new Set(['authorization', 'x-amz-date', 'date']);

/** RFC 3986 encoding, as SigV4 wants it (`encodeURIComponent` leaves `!'()*` alone). */
function escapeUri(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** A path made of unreserved characters, `/` and `%`: encoding it once more only turns `%` into `%25`. */
// Stryker disable next-line Regex: a narrower class only sends more paths down the general path, which canonicalises them alike.
const PLAIN_PATH = /^[\w\-.~%/]*$/;
/** A path with an empty, `.` or `..` segment, which the canonical path resolves. */
const RESOLVED_PATH = /\/\/|(?:^|\/)\.\.?(?:\/|$)/;

/**
 * The canonical URI: `.` and `..` segments and empty segments resolved, then every segment
 * percent-encoded once more (services other than S3 sign the path encoded twice).
 */
export function canonicalPath(path: string): string {
  // Stryker disable next-line ConditionalExpression: a fast path; the general one below gives the same canonical path for every path it takes.
  if (PLAIN_PATH.test(path) && !RESOLVED_PATH.test(path)) return path.replace(/%/g, '%25');
  const segments: string[] = [];
  for (const segment of path.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') segments.pop();
    else segments.push(segment);
  }
  const normalized = `${path.startsWith('/') ? '/' : ''}${segments.join('/')}${segments.length > 0 && path.endsWith('/') ? '/' : ''}`;
  return escapeUri(normalized).replace(/%2F/g, '/');
}

/** The canonical query string: names and values encoded, sorted by name, then a name's values sorted. */
export function canonicalQuery(params: Record<string, string | string[]>): string {
  const pairs = new Map<string, string>();
  for (const key in params) {
    if (key.toLowerCase() === 'x-amz-signature') continue;
    const name = escapeUri(key);
    const value = params[key] as string | string[];
    pairs.set(
      name,
      typeof value === 'string'
        ? `${name}=${escapeUri(value)}`
        : value
            .map((v) => `${name}=${escapeUri(v)}`)
            .sort()
            .join('&'),
    );
  }
  return [...pairs.keys()]
    .sort()
    .map((name) => pairs.get(name) as string)
    .filter((pair) => pair !== '')
    .join('&');
}

/** The signed headers of a request: `SignedHeaders`, the canonical headers, and the `x-amz-content-sha256` given. */
interface SignedHeaders {
  /** The signed header names, lower-case, sorted, `;`-separated. */
  names: string;
  /** One `name:value\n` line a signed header, in {@link SignedHeaders.names} order. */
  canonical: string;
  /** The payload hash the caller gave (`x-amz-content-sha256`), else undefined. */
  payloadHash: string | undefined;
}

/** Whether a header is left out of the signature. */
const unsignable = (lower: string): boolean =>
  UNSIGNABLE.has(lower) || lower.startsWith('proxy-') || lower.startsWith('sec-');

/** A header value as signed: trimmed, each run of whitespace one space. */
const canonicalValue = (value: string): string => String(value).trim().replace(/\s+/g, ' ');

/**
 * {@link canonicalHeadersOf} for headers whose names are all lower-case (so each name once): one
 * sort, no map.
 */
function canonicalLowerCaseHeaders(headers: Record<string, string>): SignedHeaders {
  let names = '';
  let canonical = '';
  let payloadHash: string | undefined;
  for (const name of Object.keys(headers).sort()) {
    const value = headers[name];
    if (value === undefined || value === null) continue;
    if (name === 'x-amz-content-sha256') payloadHash = value;
    if (unsignable(name)) continue;
    names = names === '' ? name : `${names};${name}`;
    canonical += `${name}:${canonicalValue(value)}\n`;
  }
  return { names, canonical, payloadHash };
}

/**
 * The signed headers of any headers: names lower-cased (of two spellings of a name, the value of
 * the last in sorted order is signed), sorted.
 */
function canonicalHeadersOf(headers: Record<string, string>): SignedHeaders {
  let payloadHash: string | undefined;
  const values = new Map<string, string>();
  for (const name of Object.keys(headers).sort()) {
    const value = headers[name];
    if (value === undefined || value === null) continue;
    const lower = name.toLowerCase();
    if (lower === 'x-amz-content-sha256') payloadHash = value;
    if (unsignable(lower)) continue;
    values.set(lower, canonicalValue(value));
  }
  const sorted = [...values.keys()].sort();
  let canonical = '';
  for (const name of sorted) canonical += `${name}:${values.get(name) as string}\n`;
  return { names: sorted.join(';'), canonical, payloadHash };
}

/** SHA-256 in hex, in one call (no Hash object): a string is hashed as its UTF-8 bytes. */
const sha256Hex = (data: string | Uint8Array): string => hash('sha256', data, 'hex');
const hmac = (key: string | Buffer, data: string): Buffer => createHmac('sha256', key).update(data).digest();

let amzSecond = NaN;
let amzText = '';
/** A time as SigV4 writes it (`20261127T160512Z`), made once per second: calls in one second share it. */
function amzDate(ms: number): string {
  const second = Math.floor(ms / 1000);
  if (second !== amzSecond) {
    amzSecond = second;
    amzText = new Date(second * 1000)
      .toISOString()
      .replace(
        // Stryker disable next-line Regex: toISOString() ends with the only ".sssZ" in it, so the anchor changes nothing.
        /\.\d{3}Z$/,
        'Z',
      )
      .replace(/[-:]/g, '');
  }
  return amzText;
}

/** Signing keys kept: one per UTC day, region and service in use (a few at most). */
const MAX_SIGNING_KEYS = 16;

/** SHA-256's block: HMAC pads its key to it. */
const HMAC_BLOCK_BYTES = 64;
/** SHA-256's digest. */
const SHA256_BYTES = 32;

/**
 * What a UTC day and region sign with: the derived key XORed with HMAC's inner (`0x36`) and outer
 * (`0x5c`) pads (RFC 2104), the credential scope and the `authorization` up to `SignedHeaders=`.
 * `innerBlock` is the inner pad followed by room for the string to sign, `outerBlock` the outer pad
 * followed by room for the inner digest: each signature writes them (signing is synchronous: one
 * signature at a time uses them); `innerBlock` grows when a string to sign does not fit.
 */
interface SigningDay {
  innerBlock: Buffer;
  outerBlock: Buffer;
  scope: string;
  credential: string;
}

/**
 * A key of at most one block XORed with HMAC's pad byte, over a whole block, then `room` zero
 * bytes. Its own memory (`Buffer.alloc`), never the shared pool: it is derived from the key.
 */
function padKey(key: Buffer, pad: number, room = 0): Buffer {
  const block = Buffer.alloc(HMAC_BLOCK_BYTES + room);
  block.fill(pad, 0, HMAC_BLOCK_BYTES);
  key.forEach((byte, at) => {
    block[at] = (block[at] as number) ^ byte;
  });
  return block;
}

/**
 * HMAC-SHA256 of `data` in hex, from its key's pads ({@link padKey}): two one-shot hashes, no Hmac
 * object (whose construction, key import included, costs more than both hashes on every request).
 */
function padHmacHex(day: SigningDay, data: string): string {
  const length = HMAC_BLOCK_BYTES + Buffer.byteLength(data);
  // Stryker disable next-line EqualityOperator,ConditionalExpression: growing a block that would fit (or every time) changes no byte hashed.
  if (length > day.innerBlock.length) {
    const grown = Buffer.alloc(length);
    day.innerBlock.copy(grown, 0, 0, HMAC_BLOCK_BYTES);
    day.innerBlock = grown;
  }
  day.innerBlock.write(data, HMAC_BLOCK_BYTES);
  hash('sha256', day.innerBlock.subarray(0, length), 'buffer').copy(day.outerBlock, HMAC_BLOCK_BYTES);
  return hash('sha256', day.outerBlock, 'hex');
}

/**
 * Signs requests with one integration's credentials, with AWS Signature Version 4 on node:crypto
 * (docs/decisions.md). The secret is read only when a signing key is derived: once per UTC day,
 * region and service; the key of the day is then reused.
 */
export class IntegrationSigner {
  private readonly keys = new Map<string, SigningDay>();

  constructor(
    private readonly integration: Pick<ResolvedIntegration, 'accessKeyId' | 'secretAccessKey' | 'sessionToken'>,
    private readonly service = BEDROCK_SIGNING_SERVICE,
  ) {}

  /**
   * Returns the headers to send: the given ones plus `host`, `x-amz-date`, `x-amz-security-token`
   * (with a session token) and `authorization`. The payload hash is over the exact body bytes.
   */
  async sign(request: RequestToSign, region: string, signingDate?: Date): Promise<Record<string, string>> {
    return this.signNow(request, region, signingDate);
  }

  /** {@link IntegrationSigner.sign} without a promise. */
  signNow(request: RequestToSign, region: string, signingDate: Date = new Date()): Record<string, string> {
    const longDate = amzDate(signingDate.getTime());
    const day = this.signingDay(longDate.slice(0, 8), region);
    const headers: Record<string, string> = {};
    // Stryker disable next-line BooleanLiteral: false sends every request down the general path, which signs alike.
    let lowerCaseNames = true;
    for (const name in request.headers) {
      const lower = name.toLowerCase();
      if (GENERATED.has(lower)) continue;
      // Stryker disable next-line ConditionalExpression: always taken, it only sends lower-case names down the general path too.
      if (lower !== name) lowerCaseNames = false;
      headers[name] = request.headers[name] as string;
    }
    headers.host = request.origin.host;
    headers['x-amz-date'] = longDate;
    const sessionToken = this.integration.sessionToken?.reveal();
    if (sessionToken) headers['x-amz-security-token'] = sessionToken;
    // Stryker disable next-line ConditionalExpression: the general canonicalisation gives lower-case names the same result.
    const signed = lowerCaseNames ? canonicalLowerCaseHeaders(headers) : canonicalHeadersOf(headers);
    // Stryker disable next-line ConditionalExpression,EqualityOperator,StringLiteral: a fast path; the canonical query of '' is ''.
    const query = request.query === '' ? '' : canonicalQuery(parseQuery(request.query));
    const canonicalRequest = `${request.method}\n${this.canonicalPathOf(request.path)}\n${query}\n${signed.canonical}\n${signed.names}\n${signed.payloadHash ?? sha256Hex(request.body)}`;
    const stringToSign = `AWS4-HMAC-SHA256\n${longDate}\n${day.scope}\n${sha256Hex(canonicalRequest)}`;
    const signature = padHmacHex(day, stringToSign);
    headers.authorization = `${day.credential}${signed.names}, Signature=${signature}`;
    return headers;
  }

  /** The last path signed and its canonical path: a client signs the same few paths again and again. */
  private lastPath: string | undefined;
  private lastCanonicalPath = '';

  /** {@link canonicalPath} of `path`, remembered for the next signature. */
  private canonicalPathOf(path: string): string {
    // Stryker disable next-line ConditionalExpression: a cache; recomputing every time gives the same canonical path.
    if (path !== this.lastPath) {
      this.lastCanonicalPath = canonicalPath(path);
      this.lastPath = path;
    }
    return this.lastCanonicalPath;
  }

  /** A UTC day's signing key, scope and credential for a region (the key derived from the secret once, then kept). */
  private signingDay(shortDate: string, region: string): SigningDay {
    const id = `${shortDate}/${region}`;
    let day = this.keys.get(id);
    if (day === undefined) {
      const date = hmac(`AWS4${this.integration.secretAccessKey.reveal()}`, shortDate);
      const scope = `${id}/${this.service}/aws4_request`;
      const key = hmac(hmac(hmac(date, region), this.service), 'aws4_request');
      day = {
        innerBlock: padKey(key, 0x36),
        outerBlock: padKey(key, 0x5c, SHA256_BYTES),
        scope,
        credential: `AWS4-HMAC-SHA256 Credential=${this.integration.accessKeyId}/${scope}, SignedHeaders=`,
      };
      if (this.keys.size >= MAX_SIGNING_KEYS) this.keys.clear();
      this.keys.set(id, day);
    }
    return day;
  }
}

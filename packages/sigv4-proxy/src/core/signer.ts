import { createHash, createHmac } from 'node:crypto';
import { UnsupportedQueryParameterError } from './errors';
import type { ResolvedIntegration } from './integration';

/** Both the Bedrock agent and agent-runtime APIs sign as `bedrock`. */
export const BEDROCK_SIGNING_SERVICE = 'bedrock';

/** A request to sign: `path` is the raw (percent-encoded) path, `query` the raw query string. */
export interface RequestToSign {
  method: string;
  origin: URL;
  path: string;
  query: string;
  headers: Record<string, string>;
  body: Uint8Array;
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

/**
 * The canonical URI: `.` and `..` segments and empty segments resolved, then every segment
 * percent-encoded once more (services other than S3 sign the path encoded twice).
 */
export function canonicalPath(path: string): string {
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

const sha256Hex = (data: string | Uint8Array): string => createHash('sha256').update(data).digest('hex');
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

/**
 * Signs requests with one integration's credentials, with AWS Signature Version 4 on node:crypto
 * (docs/decisions.md). The secret is read only when a signing key is derived: once per UTC day,
 * region and service; the key of the day is then reused.
 */
export class IntegrationSigner {
  private readonly keys = new Map<string, Buffer>();

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
    const shortDate = longDate.slice(0, 8);
    const scope = `${shortDate}/${region}/${this.service}/aws4_request`;
    const headers: Record<string, string> = {};
    for (const name in request.headers) {
      if (!GENERATED.has(name.toLowerCase())) headers[name] = request.headers[name] as string;
    }
    headers.host = request.origin.host;
    headers['x-amz-date'] = longDate;
    const sessionToken = this.integration.sessionToken?.reveal();
    if (sessionToken) headers['x-amz-security-token'] = sessionToken;
    let payloadHash: string | undefined;
    const canonical = new Map<string, string>();
    for (const name of Object.keys(headers).sort()) {
      const value = headers[name];
      if (value === undefined || value === null) continue;
      const lower = name.toLowerCase();
      if (lower === 'x-amz-content-sha256') payloadHash = value;
      if (UNSIGNABLE.has(lower) || lower.startsWith('proxy-') || lower.startsWith('sec-')) continue;
      canonical.set(lower, String(value).trim().replace(/\s+/g, ' '));
    }
    const names = [...canonical.keys()].sort();
    const signedHeaders = names.join(';');
    const canonicalRequest = [
      request.method,
      canonicalPath(request.path),
      canonicalQuery(parseQuery(request.query)),
      names.map((name) => `${name}:${canonical.get(name)}`).join('\n'),
      '',
      signedHeaders,
      payloadHash ?? sha256Hex(request.body),
    ].join('\n');
    const stringToSign = `AWS4-HMAC-SHA256\n${longDate}\n${scope}\n${sha256Hex(canonicalRequest)}`;
    const signature = createHmac('sha256', this.signingKey(shortDate, region)).update(stringToSign).digest('hex');
    headers.authorization = `AWS4-HMAC-SHA256 Credential=${this.integration.accessKeyId}/${scope}, SignedHeaders=${signedHeaders}, Signature=${signature}`;
    return headers;
  }

  /** The day's signing key for a region (derived from the secret once, then kept). */
  private signingKey(shortDate: string, region: string): Buffer {
    const id = `${shortDate}/${region}`;
    let key = this.keys.get(id);
    if (key === undefined) {
      const date = hmac(`AWS4${this.integration.secretAccessKey.reveal()}`, shortDate);
      key = hmac(hmac(hmac(date, region), this.service), 'aws4_request');
      if (this.keys.size >= MAX_SIGNING_KEYS) this.keys.clear();
      this.keys.set(id, key);
    }
    return key;
  }
}

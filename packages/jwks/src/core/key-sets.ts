import { rejectUnknownOptions } from '@gw/options';
import { createPublicKey, type KeyObject } from 'node:crypto';
import { IdentityProviderUnavailableError, UnknownKeyError } from './errors';
import { MIN_RSA_BITS, type JsonWebKeySet, type PublicJwk } from './signing-key';

/** Anything that resolves a verification key by `kid`. */
export interface KeyResolver {
  /**
   * Resolves the key for `kid`; throws {@link UnknownKeyError}, `KeySetUnavailableError` or
   * {@link IdentityProviderUnavailableError}.
   */
  getKey(kid: string | undefined): Promise<KeyObject>;
}

interface ImportedKey {
  kid: string | undefined;
  key: KeyObject;
}

const BASE64URL = /^[A-Za-z0-9_-]+$/;
const RSA_SIGNING_ALGS = new Set(['RS256', 'RS384', 'RS512']);

/** Imports the RSA signing keys of a JWKS document; other keys are ignored. */
export function importRsaSigningKeys(document: unknown): ImportedKey[] {
  if (typeof document !== 'object' || document === null || !Array.isArray((document as { keys?: unknown }).keys)) {
    return [];
  }
  const imported: ImportedKey[] = [];
  for (const jwk of (document as { keys: unknown[] }).keys) {
    if (typeof jwk !== 'object' || jwk === null) continue;
    const { kty, n, e, kid, use, alg } = jwk as Record<string, unknown>;
    if (kty !== 'RSA') continue;
    // Stryker disable next-line ConditionalExpression,LogicalOperator: createPublicKey refuses a non-string n or e (ERR_INVALID_ARG_TYPE), and that key is skipped.
    if (typeof n !== 'string' || typeof e !== 'string') continue;
    if (!BASE64URL.test(n) || !BASE64URL.test(e)) continue;
    if (use !== undefined && use !== 'sig') continue;
    if (alg !== undefined && !RSA_SIGNING_ALGS.has(alg as string)) continue;
    if (kid !== undefined && typeof kid !== 'string') continue;
    try {
      const key = createPublicKey({ key: { kty: 'RSA', n, e }, format: 'jwk' });
      // Stryker disable next-line OptionalChaining: an imported RSA key always has asymmetricKeyDetails.
      if ((key.asymmetricKeyDetails?.modulusLength ?? 0) < MIN_RSA_BITS) continue;
      imported.push({ kid, key });
    } catch {
      // An unparseable key is skipped; the rest of the set still counts.
    }
  }
  return imported;
}

function findKey(keys: readonly ImportedKey[], kid: string | undefined): KeyObject | undefined {
  // Stryker disable next-line OptionalChaining: keys[0] exists when keys.length is 1.
  if (kid === undefined) return keys.length === 1 ? keys[0]?.key : undefined;
  return keys.find((k) => k.kid === kid)?.key;
}

/** A fixed key set, such as the gateway's own published keys. */
export class LocalKeySet implements KeyResolver {
  private readonly keys: ImportedKey[];

  constructor(jwks: JsonWebKeySet | readonly PublicJwk[]) {
    this.keys = importRsaSigningKeys(Array.isArray(jwks) ? { keys: jwks } : jwks);
  }

  async getKey(kid: string | undefined): Promise<KeyObject> {
    const key = findKey(this.keys, kid);
    if (!key) throw new UnknownKeyError('No published key matches the token.');
    return key;
  }
}

/** Options of {@link RemoteKeySet}. */
export interface RemoteKeySetOptions {
  /** The identity provider's JWKS address (http or https). */
  jwksUri: string;
  /** How long a fetched key set is used before it is fetched again. Default 600000 (10 min). */
  cacheMaxAgeMs?: number;
  /**
   * After a successful fetch, at most one fetch per this many milliseconds, whatever triggers it
   * (tokens naming unknown `kid`s included); also the longest wait between tries while the
   * provider is down. Default 30000.
   */
  cooldownMs?: number;
  /**
   * The wait before the first try after a failed fetch; it doubles with each failure in a row, up
   * to `cooldownMs`, and a successful fetch resets it. Default 1000.
   */
  firstRetryMs?: number;
  /** Time limit of one fetch. Default 5000. */
  timeoutMs?: number;
  /** Largest JWKS response accepted, in bytes. Default 1048576 (1 MiB). */
  maxResponseBytes?: number;
  /** Millisecond clock, for tests. Default `Date.now`. */
  now?: () => number;
  /** Called after every fetch with its outcome, for metrics. Default: none. */
  onFetch?: (outcome: 'ok' | 'error') => void;
}

/**
 * The key set of an external identity provider: fetched on first use, cached, fetched again
 * when stale or when a token names an unknown `kid` (at most once per cooldown, concurrent
 * callers sharing one fetch). A broken answer never replaces the last good keys. While fetches
 * fail, known keys keep verifying, a `kid` the set lacks is
 * {@link IdentityProviderUnavailableError} (503, with the seconds until the next try), and tries
 * back off from `firstRetryMs` (1 s), doubling up to `cooldownMs`, so the provider's return is
 * noticed within seconds. Only RSA
 * signing keys of at least 2048 bits are used. `jku`, `x5u` and the like are never followed:
 * keys come from `jwksUri` only.
 */
export class RemoteKeySet implements KeyResolver {
  private readonly url: URL;
  private readonly cacheMaxAgeMs: number;
  private readonly cooldownMs: number;
  private readonly firstRetryMs: number;
  private readonly timeoutMs: number;
  private readonly maxResponseBytes: number;
  private readonly now: () => number;
  private readonly onFetch: ((outcome: 'ok' | 'error') => void) | undefined;
  private keys: ImportedKey[] | undefined;
  private fetchedAt = 0;
  /** No fetch starts before this time (cooldown after success, back-off after failures). */
  private nextAttemptAt: number | undefined;
  /** Failed fetches in a row since the last success. */
  private failures = 0;
  private inFlight: Promise<void> | undefined;
  private fetches = 0;

  constructor(options: RemoteKeySetOptions) {
    if (typeof options !== 'object' || options === null)
      throw new TypeError('RemoteKeySet needs { jwksUri: "https://idp.example.com/.well-known/jwks.json" }.');
    rejectUnknownOptions(
      options,
      ['jwksUri', 'cacheMaxAgeMs', 'cooldownMs', 'firstRetryMs', 'timeoutMs', 'maxResponseBytes', 'now', 'onFetch'],
      'RemoteKeySet',
    );
    for (const name of ['now', 'onFetch'] as const) {
      if (options[name] !== undefined && typeof options[name] !== 'function')
        throw new TypeError(`RemoteKeySet ${name} must be a function.`);
    }
    let url: URL;
    try {
      url = new URL(options.jwksUri);
    } catch {
      throw new TypeError(
        'jwksUri must be an absolute http(s) URL, for example "https://idp.example.com/.well-known/jwks.json".',
      );
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') {
      throw new TypeError(`jwksUri must use http or https, not "${url.protocol}".`);
    }
    this.url = url;
    this.cacheMaxAgeMs = positive(options.cacheMaxAgeMs, 600_000, 'cacheMaxAgeMs');
    this.cooldownMs = positive(options.cooldownMs, 30_000, 'cooldownMs');
    this.firstRetryMs = positive(options.firstRetryMs, 1_000, 'firstRetryMs');
    this.timeoutMs = positive(options.timeoutMs, 5_000, 'timeoutMs');
    this.maxResponseBytes = positive(options.maxResponseBytes, 1_048_576, 'maxResponseBytes');
    this.now = options.now ?? Date.now;
    this.onFetch = options.onFetch;
  }

  /** How many fetches were started so far. */
  get fetchCount(): number {
    return this.fetches;
  }

  async getKey(kid: string | undefined): Promise<KeyObject> {
    const fresh = this.keys !== undefined && this.now() - this.fetchedAt < this.cacheMaxAgeMs;
    const known = this.keys ? findKey(this.keys, kid) : undefined;
    if (fresh && known) return known;
    await this.refresh();
    const key = this.keys ? findKey(this.keys, kid) : undefined;
    if (key) return key;
    if (this.failures > 0) {
      const wait = Math.max(0, (this.nextAttemptAt ?? 0) - this.now());
      throw new IdentityProviderUnavailableError(
        "The identity provider's key set cannot be fetched just now; try again shortly.",
        Math.max(1, Math.ceil(wait / 1000)),
      );
    }
    throw new UnknownKeyError("No key of the identity provider matches the token's kid.");
  }

  /** Fetches again unless a fetch is under way (then it is shared) or the cooldown forbids it. */
  private refresh(): Promise<void> {
    if (this.inFlight) return this.inFlight;
    if (this.nextAttemptAt !== undefined && this.now() < this.nextAttemptAt) return Promise.resolve();
    this.fetches++;
    this.inFlight = this.fetchKeys().finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  private async fetchKeys(): Promise<void> {
    try {
      const keys = importRsaSigningKeys(JSON.parse(await this.download()));
      // Stryker disable next-line StringLiteral: the catch below drops the message; a failure is only counted.
      if (keys.length === 0) throw new Error('no usable RSA signing key');
      this.keys = keys;
      this.fetchedAt = this.now();
      this.failures = 0;
      this.nextAttemptAt = this.fetchedAt + this.cooldownMs;
      this.onFetch?.('ok');
    } catch {
      this.failures++;
      // 1 s, 2 s, 4 s, … up to the cooldown; counted from the failure, so a provider that
      // hangs until the timeout is not tried again at once.
      const backOff = Math.min(this.firstRetryMs * 2 ** Math.min(this.failures - 1, 30), this.cooldownMs);
      this.nextAttemptAt = this.now() + backOff;
      this.onFetch?.('error');
    }
  }

  private async download(): Promise<string> {
    const response = await fetch(this.url, {
      signal: AbortSignal.timeout(this.timeoutMs),
      redirect: 'error',
      headers: { accept: 'application/json' },
    });
    if (response.status !== 200 || !response.body) {
      // Stryker disable next-line OptionalChaining: without a body, the TypeError is caught like the error below.
      await response.body?.cancel();
      // Stryker disable next-line StringLiteral: fetchKeys drops the message; a failure is only counted.
      throw new Error(`status ${response.status}`);
    }
    const declared = Number(response.headers.get('content-length'));
    if (declared > this.maxResponseBytes) {
      await response.body.cancel();
      // Stryker disable next-line StringLiteral: fetchKeys drops the message; a failure is only counted.
      throw new Error('key set too large');
    }
    const chunks: Uint8Array[] = [];
    let size = 0;
    for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
      size += chunk.byteLength;
      // Stryker disable next-line StringLiteral: fetchKeys drops the message; a failure is only counted.
      if (size > this.maxResponseBytes) throw new Error('key set too large');
      chunks.push(chunk);
    }
    return Buffer.concat(chunks).toString('utf8');
  }
}

function positive(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value <= 0) throw new TypeError(`${name} must be a positive number of milliseconds.`);
  return value;
}

/**
 * OAuth Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document, MCP
 * authorization 2025-11-25): a `client_id` that is an https URL names a JSON document of the
 * client's metadata, which the gateway fetches. The fetch is a request to a URL a stranger
 * chose, so it is fenced: https only, no redirects, a deadline, a size limit counted while
 * reading, and never an address inside the gateway's network (checked on the resolved
 * addresses, and the connection is made to exactly the addresses checked).
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import { request as httpRequest, type IncomingMessage, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { METADATA_HOST_NAMES, isRefusedAddress, pinnedLookup, type ResolvedAddress } from '@gw/upstream';
import { ClientMetadataError } from './errors';

export type { ResolvedAddress } from '@gw/upstream';

/** Options of {@link fetchClientMetadata}. */
export interface FetchClientMetadataOptions {
  /**
   * Origins (`scheme://host[:port]`, exactly as `new URL(x).origin` writes them) whose documents
   * may be fetched although they are http or resolve to a private or loopback address
   * (`oauth.allowedClientHosts`). Default none.
   */
  allowedClientHosts?: readonly string[];
  /** Most milliseconds for the whole fetch: resolving, connecting, reading. Default 5000. */
  timeoutMs?: number;
  /** Most bytes of the document, counted while reading. Default 65536 (64 KiB). */
  maxBytes?: number;
  /** Resolves a host name to its addresses. Default `dns.lookup(host, { all: true })`. */
  lookup?: (hostname: string) => Promise<readonly ResolvedAddress[]>;
  /** Certificate authorities trusted for https instead of Node's bundled ones (a private PKI, or tests). Default Node's. */
  ca?: string | Buffer;
  /** Where documents are kept between fetches; `false` keeps none. Default one cache shared by the process. */
  cache?: ClientMetadataCache | false;
}

/** A client ID metadata document, as checked by {@link fetchClientMetadata}. */
export interface ClientMetadataDocument {
  /** Exactly the URL the document was fetched from. */
  client_id: string;
  /** The client's redirect URIs: https, or http on a loopback host. At least one. */
  redirect_uris: string[];
  /** The name to show on the consent page, when the document has one. */
  client_name?: string;
  /** The client's home page, when the document has one. */
  client_uri?: string;
  /** The client's logo, when the document has one. */
  logo_uri?: string;
  /** `none` or `private_key_jwt` when present (never a shared-secret method). */
  token_endpoint_auth_method?: string;
  /** Every other member of the document, unchecked. */
  [member: string]: unknown;
}

/** Longest `client_id` URL accepted. */
const MAX_CLIENT_ID_LENGTH = 2048;
/** Most redirect URIs a document may list. */
const MAX_REDIRECT_URIS = 100;
/** Token endpoint methods that need a shared secret, which a metadata document cannot have. */
const SHARED_SECRET_METHODS = new Set(['client_secret_basic', 'client_secret_post', 'client_secret_jwt']);
const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

/**
 * Whether the gateway refuses to fetch a client document from this IP address: loopback, private
 * (RFC 1918, CGNAT 100.64/10, unique local fc00::/7), link-local (169.254/16, fe80::/10), cloud
 * metadata (169.254.169.254, fd00:ec2::254), unspecified, multicast, documentation and the other
 * special-use ranges of RFC 6890, also inside IPv4-mapped, NAT64 and 6to4 IPv6 addresses. A
 * string that is not an IP address is refused too. The classification is `@gw/upstream`'s
 * {@link isRefusedAddress} with private addresses refused.
 */
export function isForbiddenClientAddress(address: string): boolean {
  return isRefusedAddress(address, { allowPrivate: false });
}

function optionError(message: string): TypeError {
  return new TypeError(`fetchClientMetadata: ${message}`);
}

interface CheckedOptions {
  allowed: ReadonlySet<string>;
  timeoutMs: number;
  maxBytes: number;
  lookup: (hostname: string) => Promise<readonly ResolvedAddress[]>;
  ca: string | Buffer | undefined;
  cache: ClientMetadataCache | undefined;
}

async function systemLookup(hostname: string): Promise<readonly ResolvedAddress[]> {
  const answers = await dnsLookup(hostname, { all: true, verbatim: true });
  return answers.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
}

function checkOptions(options: FetchClientMetadataOptions): CheckedOptions {
  if (typeof options !== 'object' || options === null)
    throw optionError('pass an options object, e.g. { allowedClientHosts: [] }.');
  const allowedList = options.allowedClientHosts ?? [];
  if (!Array.isArray(allowedList))
    throw optionError('`allowedClientHosts` must be a list of origins, e.g. ["http://127.0.0.1:8080"].');
  for (const origin of allowedList) {
    let parsed: string | undefined;
    try {
      parsed = new URL(origin).origin;
    } catch {
      parsed = undefined;
    }
    if (typeof origin !== 'string' || parsed !== origin || !/^https?:$/.test(new URL(origin).protocol))
      throw optionError(
        `\`allowedClientHosts\` entries are origins written as URL.origin writes them (scheme, host, port; no path), e.g. "http://127.0.0.1:8080"; received ${JSON.stringify(origin)}.`,
      );
  }
  const timeoutMs = options.timeoutMs ?? 5000;
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > 60_000)
    throw optionError(
      `\`timeoutMs\` must be a whole number of milliseconds from 1 to 60000 (default 5000); received ${String(timeoutMs)}.`,
    );
  const maxBytes = options.maxBytes ?? 65_536;
  if (!Number.isInteger(maxBytes) || maxBytes < 1 || maxBytes > 1_048_576)
    throw optionError(
      `\`maxBytes\` must be a whole number of bytes from 1 to 1048576 (default 65536); received ${String(maxBytes)}.`,
    );
  if (options.lookup !== undefined && typeof options.lookup !== 'function')
    throw optionError('`lookup` must be a function (hostname) => Promise<{ address, family }[]>.');
  if (options.cache !== undefined && options.cache !== false && !(options.cache instanceof ClientMetadataCache))
    throw optionError('`cache` must be a ClientMetadataCache or false.');
  return {
    allowed: new Set(allowedList),
    timeoutMs,
    maxBytes,
    lookup: options.lookup ?? systemLookup,
    ca: options.ca,
    cache: options.cache === false ? undefined : (options.cache ?? sharedCache),
  };
}

/** The `client_id` as a URL, checked as the draft says (and in the canonical form the URL parser writes). */
function clientIdUrl(clientId: string, allowed: ReadonlySet<string>): URL {
  const invalid = (why: string) =>
    new ClientMetadataError('client_id_invalid', `The client_id is not a client ID metadata document URL: ${why}.`);
  if (typeof clientId !== 'string' || clientId.length > MAX_CLIENT_ID_LENGTH)
    throw invalid(`it must be an https URL of at most ${MAX_CLIENT_ID_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    throw invalid('it is not an absolute URL');
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && allowed.has(url.origin)))
    throw invalid('it must use https');
  if (url.username !== '' || url.password !== '') throw invalid('it must not contain a user name or password');
  if (clientId.includes('#')) throw invalid('it must not contain a fragment');
  // The parser removes "." and ".." segments and normalises case and escapes: a URL that does
  // not read back unchanged is refused rather than fetched under another name.
  if (url.href !== clientId)
    throw invalid('it must be written in canonical form (no "." or ".." segments, lower-case host, no default port)');
  if (url.pathname === '/') throw invalid('it must contain a path, e.g. https://app.example.com/oauth/client.json');
  return url;
}

/** The addresses to connect to, every one of them checked; refused when any is forbidden. */
async function checkedAddresses(url: URL, options: CheckedOptions): Promise<ResolvedAddress[]> {
  const allowed = options.allowed.has(url.origin);
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const forbidden = () =>
    new ClientMetadataError(
      'client_metadata_forbidden_address',
      `The client_id host ${url.host} is (or resolves to) a loopback, private, link-local, metadata or unspecified address; list its origin in oauth.allowedClientHosts to allow it.`,
    );
  if (!allowed && METADATA_HOST_NAMES.has(host.toLowerCase().replace(/\.$/, ''))) throw forbidden();
  const family = isIP(host);
  let addresses: readonly ResolvedAddress[];
  if (family !== 0) addresses = [{ address: host, family: family === 6 ? 6 : 4 }];
  else {
    try {
      addresses = await options.lookup(host);
    } catch {
      throw new ClientMetadataError(
        'client_metadata_unreachable',
        `The client_id host ${url.host} could not be resolved.`,
      );
    }
  }
  const usable = usableAddresses(addresses, allowed);
  if (usable === undefined) throw forbidden();
  if (usable.length === 0)
    throw new ClientMetadataError('client_metadata_unreachable', `The client_id host ${url.host} has no address.`);
  return usable;
}

/**
 * The well-formed addresses of a DNS answer (at most 64), or undefined when the host is not
 * `allowed` and any of them is forbidden: one forbidden address refuses the host, since a DNS
 * answer mixing a public and a private address would otherwise let the connection land inside.
 */
export function usableAddresses(
  addresses: readonly ResolvedAddress[],
  allowed: boolean,
): ResolvedAddress[] | undefined {
  const usable = Array.isArray(addresses)
    ? addresses.slice(0, 64).filter((a) => a && typeof a.address === 'string' && isIP(a.address) === a.family)
    : [];
  if (!allowed && usable.some((a) => isForbiddenClientAddress(a.address))) return undefined;
  return usable.map((a) => ({ address: a.address, family: a.family }));
}

interface Fetched {
  body: Buffer;
  maxAgeSeconds: number | undefined;
}

function maxAgeOf(cacheControl: string | undefined): number | undefined {
  if (cacheControl === undefined) return undefined;
  if (/(^|,)\s*(no-store|no-cache|private)\s*(,|$|=)/i.test(cacheControl)) return 0;
  const match = /(^|,)\s*max-age\s*=\s*"?(\d{1,10})"?\s*(,|$)/i.exec(cacheControl);
  return match ? Number(match[2]) : undefined;
}

function isJsonType(contentType: string | undefined): boolean {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  return type === 'application/json' || /^application\/[\w.+-]+\+json$/.test(type);
}

/** GET of the document: one request, no redirects, the whole of it within the deadline. */
function fetchDocument(
  url: URL,
  addresses: readonly ResolvedAddress[],
  options: CheckedOptions,
  deadline: AbortSignal,
): Promise<Fetched> {
  return new Promise<Fetched>((resolve, reject) => {
    const requestOptions: RequestOptions & { ca?: string | Buffer; servername?: string } = {
      method: 'GET',
      protocol: url.protocol,
      host: url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname,
      port: url.port === '' ? undefined : Number(url.port),
      path: `${url.pathname}${url.search}`,
      headers: {
        accept: 'application/json',
        'accept-encoding': 'identity',
        'user-agent': 'mcp-gateway-client-metadata',
      },
      // A fresh connection each time, to the checked addresses only; no proxy variables read.
      agent: false,
      lookup: pinnedLookup(addresses),
      signal: deadline,
    };
    if (url.protocol === 'https:' && options.ca !== undefined) requestOptions.ca = options.ca;
    // The first outcome wins: destroying the request to refuse an answer raises errors of its own.
    let settled = false;
    const fail = (error: ClientMetadataError, res?: IncomingMessage) => {
      if (settled) return;
      settled = true;
      reject(error);
      res?.destroy();
      req.destroy();
    };
    const req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(requestOptions, (res) => {
      const status = res.statusCode ?? 0;
      if (status >= 300 && status < 400)
        return fail(
          new ClientMetadataError(
            'client_metadata_redirect',
            `The client metadata document answered a redirect (${status}); redirects are not followed.`,
          ),
          res,
        );
      if (status !== 200)
        return fail(
          new ClientMetadataError(
            'client_metadata_unreachable',
            `The client metadata document answered status ${status}, not 200.`,
          ),
          res,
        );
      if (!isJsonType(res.headers['content-type']))
        return fail(
          new ClientMetadataError(
            'client_metadata_invalid',
            'The client metadata document is not served as application/json.',
          ),
          res,
        );
      const encoding = res.headers['content-encoding'];
      if (encoding !== undefined && encoding.toLowerCase() !== 'identity')
        return fail(
          new ClientMetadataError(
            'client_metadata_invalid',
            'The client metadata document is sent with a content-encoding; send it uncompressed.',
          ),
          res,
        );
      const tooLarge = () =>
        new ClientMetadataError(
          'client_metadata_too_large',
          `The client metadata document is over ${options.maxBytes} bytes.`,
        );
      const declared = Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > options.maxBytes) return fail(tooLarge(), res);
      const chunks: Buffer[] = [];
      let received = 0;
      res.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (received > options.maxBytes) fail(tooLarge(), res);
        else chunks.push(chunk);
      });
      res.on('end', () => {
        if (settled) return;
        settled = true;
        resolve({ body: Buffer.concat(chunks), maxAgeSeconds: maxAgeOf(res.headers['cache-control']) });
      });
      res.on('error', () => fail(unreachable(deadline)));
      res.on('aborted', () => fail(unreachable(deadline)));
    });
    req.on('error', () => fail(unreachable(deadline)));
    req.end();
  });
}

function unreachable(deadline: AbortSignal): ClientMetadataError {
  return deadline.aborted
    ? new ClientMetadataError(
        'client_metadata_unreachable',
        'The client metadata document did not arrive within the timeout.',
      )
    : new ClientMetadataError(
        'client_metadata_unreachable',
        'The client metadata document could not be fetched (connection failed).',
      );
}

function isAllowedRedirectUri(value: unknown): value is string {
  if (typeof value !== 'string' || value.length > 2048) return false;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  if (url.hash !== '' || value.includes('#') || url.username !== '' || url.password !== '') return false;
  return url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname));
}

function optionalString(document: Record<string, unknown>, name: string, max: number): void {
  const value = document[name];
  if (value !== undefined && (typeof value !== 'string' || value.length > max))
    throw new ClientMetadataError(
      'client_metadata_invalid',
      `The client metadata document's ${name} must be a string of at most ${max} characters.`,
    );
}

/** The parsed and checked document. */
function checkedDocument(body: Buffer, clientId: string): ClientMetadataDocument {
  const invalid = (why: string) =>
    new ClientMetadataError('client_metadata_invalid', `The client metadata document is not usable: ${why}.`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(body));
  } catch {
    throw invalid('it is not UTF-8 JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw invalid('it is not a JSON object');
  const document = parsed as Record<string, unknown>;
  if (document.client_id !== clientId)
    throw new ClientMetadataError(
      'client_id_mismatch',
      'The client metadata document names another client_id than the URL it was fetched from.',
    );
  const redirectUris = document.redirect_uris;
  if (!Array.isArray(redirectUris) || redirectUris.length === 0 || redirectUris.length > MAX_REDIRECT_URIS)
    throw invalid(`redirect_uris must list 1 to ${MAX_REDIRECT_URIS} redirect URIs`);
  if (!redirectUris.every(isAllowedRedirectUri))
    throw invalid('every redirect URI must be https, or http on 127.0.0.1, [::1] or localhost, without a fragment');
  if ('client_secret' in document || 'client_secret_expires_at' in document)
    throw invalid('it must not contain a client secret');
  const method = document.token_endpoint_auth_method;
  if (method !== undefined && (typeof method !== 'string' || SHARED_SECRET_METHODS.has(method)))
    throw invalid('token_endpoint_auth_method must not be a shared-secret method');
  optionalString(document, 'client_name', 200);
  optionalString(document, 'client_uri', 2048);
  optionalString(document, 'logo_uri', 2048);
  return Object.freeze({
    ...document,
    client_id: clientId,
    redirect_uris: Object.freeze([...redirectUris]) as string[],
  });
}

/**
 * Fetches and checks the client ID metadata document named by `clientId`, an https URL. Throws
 * {@link ClientMetadataError}; refuses documents at loopback, private, link-local, metadata or
 * unspecified addresses unless their origin is in `allowedClientHosts`. Documents are kept in
 * the cache for their `cache-control: max-age` (at most 5 minutes; 1 minute without one).
 */
export async function fetchClientMetadata(
  clientId: string,
  options: FetchClientMetadataOptions = {},
): Promise<ClientMetadataDocument> {
  const checked = checkOptions(options);
  const url = clientIdUrl(clientId, checked.allowed);
  const cacheKey = `${clientId}\n${[...checked.allowed].sort().join(' ')}`;
  const cache = checked.cache;
  if (cache === undefined) return (await fetchChecked(url, clientId, checked)).document;
  const cached = cache.get(cacheKey);
  if (cached) return cached;
  // A refusal is kept briefly too: a stranger repeating one bad client_id makes one fetch.
  const refused = cache.refusal(cacheKey);
  if (refused) throw refused;
  // One fetch per document at a time, however many requests name it; a bounded number in all.
  const pending = cache.pending(cacheKey);
  if (pending) return pending;
  if (cache.fetching >= cache.maxConcurrentFetches)
    throw new ClientMetadataError(
      'client_metadata_busy',
      'Too many client metadata documents are being fetched just now: try again in a few seconds.',
    );
  const fetching = fetchChecked(url, clientId, checked).then(
    (fetched) => {
      cache.set(cacheKey, fetched.document, fetched.maxAgeSeconds);
      return fetched.document;
    },
    (error: unknown) => {
      if (error instanceof ClientMetadataError) cache.refuse(cacheKey, error);
      throw error;
    },
  );
  return cache.track(cacheKey, fetching);
}

/** One fetch and check of a document, uncached. */
async function fetchChecked(
  url: URL,
  clientId: string,
  checked: CheckedOptions,
): Promise<{ document: ClientMetadataDocument; maxAgeSeconds: number | undefined }> {
  const deadline = AbortSignal.timeout(checked.timeoutMs);
  const timedOut = new Promise<never>((_, reject) => {
    deadline.addEventListener('abort', () => reject(unreachable(deadline)), { once: true });
  });
  timedOut.catch(() => undefined);
  const addresses = await Promise.race([checkedAddresses(url, checked), timedOut]);
  const fetched = await Promise.race([fetchDocument(url, addresses, checked, deadline), timedOut]);
  return { document: checkedDocument(fetched.body, clientId), maxAgeSeconds: fetched.maxAgeSeconds };
}

function loopbackWithoutPort(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' || !LOOPBACK_HOSTS.has(url.hostname) || url.href !== value || url.hash !== '')
    return undefined;
  url.port = '';
  return url.href;
}

/**
 * Whether `redirectUri` is one of the document's `redirect_uris`: exactly the same string, or,
 * for an http redirect URI on a loopback host (127.0.0.1, [::1], localhost), the same but for the
 * port (RFC 8252 section 7.3: native apps listen on a port chosen at run time).
 */
export function redirectUriAllowed(
  document: Pick<ClientMetadataDocument, 'redirect_uris'>,
  redirectUri: string,
): boolean {
  if (typeof redirectUri !== 'string' || !Array.isArray(document.redirect_uris)) return false;
  if (document.redirect_uris.includes(redirectUri)) return true;
  const candidate = loopbackWithoutPort(redirectUri);
  if (candidate === undefined) return false;
  return document.redirect_uris.some((registered) => loopbackWithoutPort(registered) === candidate);
}

/** Longest a document is kept: 5 minutes, whatever its `max-age` says. */
const MAX_CACHE_SECONDS = 300;
/** How long a document without `max-age` is kept: 1 minute. */
const DEFAULT_CACHE_SECONDS = 60;

/** How long a refused document (unreachable, invalid, at a forbidden address...) is not fetched again: 30 s. */
const REFUSAL_CACHE_MS = 30_000;

/**
 * Client ID metadata documents kept briefly, bounded in count (the oldest goes first), with the
 * refusals of the last 30 seconds and the fetches under way (one per document, at most
 * `maxConcurrentFetches` in all: past it a new document is refused `client_metadata_busy`).
 */
export class ClientMetadataCache {
  readonly #entries = new Map<string, { document: ClientMetadataDocument; expires: number }>();
  readonly #refusals = new Map<string, { error: ClientMetadataError; expires: number }>();
  readonly #pending = new Map<string, Promise<ClientMetadataDocument>>();
  readonly #maxEntries: number;
  /** Most documents fetched at once by this process. */
  readonly maxConcurrentFetches: number;

  /**
   * @param maxEntries most documents (and, apart, refusals) kept; default 1000.
   * @param maxConcurrentFetches most documents fetched at once; default 16.
   */
  constructor(maxEntries = 1000, maxConcurrentFetches = 16) {
    if (!Number.isInteger(maxEntries) || maxEntries < 1)
      throw new TypeError('ClientMetadataCache: `maxEntries` must be a whole number of at least 1 (default 1000).');
    if (!Number.isInteger(maxConcurrentFetches) || maxConcurrentFetches < 1)
      throw new TypeError(
        'ClientMetadataCache: `maxConcurrentFetches` must be a whole number of at least 1 (default 16).',
      );
    this.#maxEntries = maxEntries;
    this.maxConcurrentFetches = maxConcurrentFetches;
  }

  /** The refusal of a fetch of `key` in the last 30 seconds, if any. */
  refusal(key: string): ClientMetadataError | undefined {
    const entry = this.#refusals.get(key);
    if (!entry) return undefined;
    if (entry.expires <= Date.now()) {
      this.#refusals.delete(key);
      return undefined;
    }
    return entry.error;
  }

  /** Keeps the refusal of a fetch of `key` for 30 seconds. */
  refuse(key: string, error: ClientMetadataError): void {
    this.#refusals.delete(key);
    while (this.#refusals.size >= this.#maxEntries) this.#refusals.delete(this.#refusals.keys().next().value!);
    this.#refusals.set(key, { error, expires: Date.now() + REFUSAL_CACHE_MS });
  }

  /** The fetch of `key` under way, if any. */
  pending(key: string): Promise<ClientMetadataDocument> | undefined {
    return this.#pending.get(key);
  }

  /** How many fetches are under way. */
  get fetching(): number {
    return this.#pending.size;
  }

  /** Records `fetch` as the fetch of `key` under way until it settles; returns it. */
  track(key: string, fetch: Promise<ClientMetadataDocument>): Promise<ClientMetadataDocument> {
    this.#pending.set(key, fetch);
    const done = () => {
      if (this.#pending.get(key) === fetch) this.#pending.delete(key);
    };
    fetch.then(done, done);
    return fetch;
  }

  /** The kept document, when it has not expired. */
  get(key: string): ClientMetadataDocument | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    if (entry.expires <= Date.now()) {
      this.#entries.delete(key);
      return undefined;
    }
    return entry.document;
  }

  /** Keeps a document for `maxAgeSeconds` (capped at 5 minutes; 1 minute when undefined; 0 keeps nothing). */
  set(key: string, document: ClientMetadataDocument, maxAgeSeconds: number | undefined): void {
    const seconds = Math.min(maxAgeSeconds ?? DEFAULT_CACHE_SECONDS, MAX_CACHE_SECONDS);
    this.#entries.delete(key);
    if (seconds <= 0) return;
    while (this.#entries.size >= this.#maxEntries) this.#entries.delete(this.#entries.keys().next().value!);
    this.#entries.set(key, { document, expires: Date.now() + seconds * 1000 });
  }

  /** How many documents are kept now. */
  get size(): number {
    return this.#entries.size;
  }
}

const sharedCache = new ClientMetadataCache();

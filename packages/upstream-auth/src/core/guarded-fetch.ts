/**
 * The one way the upstream-credential core makes a request to an authorization server or an
 * identity provider: no redirects followed (a 3xx is an error), a deadline, a bound on the
 * answer's size counted while reading, and never a link-local, cloud-metadata, unspecified,
 * multicast or reserved address (checked on the resolved addresses, and the connection made to
 * exactly those). Loopback and private addresses are allowed (internal identity providers);
 * plain http only when every address is loopback.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import { request as httpRequest, type IncomingHttpHeaders, type IncomingMessage, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import {
  METADATA_HOST_NAMES,
  classifyAddress,
  isRefusedAddress,
  pinnedLookup,
  type ResolvedAddress,
} from '@gw/upstream';
import { UpstreamAuthUnavailableError } from './errors';

/** Options of {@link createGuardedFetch}. */
export interface GuardedFetchOptions {
  /** Most milliseconds for one request: resolving, connecting, reading. Default 5000. */
  timeoutMs?: number;
  /** Most bytes of an answer, counted while reading. Default 65536 (64 KiB). */
  maxBytes?: number;
  /** Resolves a host name to its addresses. Default `dns.lookup(host, { all: true })`. */
  lookup?: (hostname: string) => Promise<readonly ResolvedAddress[]>;
  /** Certificate authorities trusted for https instead of Node's bundled ones. Default Node's. */
  ca?: string | Buffer;
  /** Accept loopback and private addresses (internal identity providers). Default true. */
  allowPrivateAddresses?: boolean;
}

/** What a guarded request takes: the subset of `RequestInit` oauth4webapi's `customFetch` passes. */
export interface GuardedRequestInit {
  method?: string;
  headers?: Record<string, string> | Headers | [string, string][];
  body?: string | URLSearchParams | Uint8Array | null;
  signal?: AbortSignal | null;
  redirect?: string;
}

/** A `fetch` with the guards above, usable as oauth4webapi's `customFetch`. */
export type GuardedFetch = (url: string | URL, init?: GuardedRequestInit) => Promise<Response>;

async function systemLookup(hostname: string): Promise<readonly ResolvedAddress[]> {
  const answers = await dnsLookup(hostname, { all: true, verbatim: true });
  return answers.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
}

function headerRecord(headers: GuardedRequestInit['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  if (!headers) return out;
  const entries =
    headers instanceof Headers ? [...headers.entries()] : Array.isArray(headers) ? headers : Object.entries(headers);
  for (const [name, value] of entries) out[name.toLowerCase()] = value;
  return out;
}

function responseHeaders(raw: IncomingHttpHeaders): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  return headers;
}

/**
 * A fetch guarded as the module says. Every failure is an {@link UpstreamAuthUnavailableError}
 * whose `reason` is `insecure_url`, `forbidden_address`, `unreachable`, `timeout`, `redirect` or
 * `too_large`; its message names the host, never a body or a token.
 */
export function createGuardedFetch(options: GuardedFetchOptions = {}): GuardedFetch {
  const timeoutMs = options.timeoutMs ?? 5000;
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > 60_000)
    throw new TypeError(`createGuardedFetch: \`timeoutMs\` must be a whole number from 1 to 60000 (default 5000).`);
  const maxBytes = options.maxBytes ?? 65_536;
  if (!Number.isInteger(maxBytes) || maxBytes < 1 || maxBytes > 16 * 1_048_576)
    throw new TypeError(`createGuardedFetch: \`maxBytes\` must be a whole number from 1 to 16777216 (default 65536).`);
  const lookup = options.lookup ?? systemLookup;
  const allowPrivate = options.allowPrivateAddresses ?? true;

  return async function guardedFetch(input, init = {}) {
    const url = new URL(String(input));
    const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    if (url.protocol !== 'https:' && url.protocol !== 'http:')
      throw new UpstreamAuthUnavailableError('insecure_url', `${url.protocol} URLs are not fetched (${url.host}).`);
    const forbidden = () =>
      new UpstreamAuthUnavailableError(
        'forbidden_address',
        `${url.host} is (or resolves to) a link-local, cloud metadata, unspecified, multicast or reserved address; the gateway does not connect there.`,
      );
    if (METADATA_HOST_NAMES.has(host.toLowerCase().replace(/\.$/, ''))) throw forbidden();
    const deadline = AbortSignal.timeout(timeoutMs);
    const signals = init.signal ? AbortSignal.any([deadline, init.signal]) : deadline;
    const family = isIP(host);
    let addresses: readonly ResolvedAddress[];
    if (family !== 0) addresses = [{ address: host, family: family === 6 ? 6 : 4 }];
    else {
      try {
        addresses = await Promise.race([
          lookup(host),
          new Promise<never>((_, reject) =>
            signals.addEventListener('abort', () => reject(new Error('deadline')), { once: true }),
          ),
        ]);
      } catch {
        throw deadline.aborted
          ? new UpstreamAuthUnavailableError('timeout', `${url.host} did not answer within ${timeoutMs} ms.`)
          : new UpstreamAuthUnavailableError('unreachable', `${url.host} could not be resolved.`);
      }
    }
    const usable = addresses
      .slice(0, 64)
      .filter((a) => a && typeof a.address === 'string' && isIP(a.address) === a.family);
    if (usable.length === 0) throw new UpstreamAuthUnavailableError('unreachable', `${url.host} has no address.`);
    // One refused address refuses the host: a DNS answer mixing addresses must not land inside.
    if (usable.some((a) => isRefusedAddress(a.address, { allowPrivate }))) throw forbidden();
    if (url.protocol === 'http:' && !usable.every((a) => classifyAddress(a.address) === 'loopback'))
      throw new UpstreamAuthUnavailableError(
        'insecure_url',
        `${url.host} is called over http; only https is used, except on loopback addresses.`,
      );
    const body =
      init.body === undefined || init.body === null
        ? undefined
        : typeof init.body === 'string'
          ? Buffer.from(init.body)
          : init.body instanceof URLSearchParams
            ? Buffer.from(init.body.toString())
            : Buffer.from(init.body);
    const headers = headerRecord(init.headers);
    headers['accept-encoding'] = 'identity';
    if (body) headers['content-length'] = String(body.length);
    if (body && !headers['content-type'] && init.body instanceof URLSearchParams)
      headers['content-type'] = 'application/x-www-form-urlencoded;charset=UTF-8';

    return new Promise<Response>((resolve, reject) => {
      const requestOptions: RequestOptions & { ca?: string | Buffer; servername?: string } = {
        method: init.method ?? 'GET',
        protocol: url.protocol,
        host,
        port: url.port === '' ? undefined : Number(url.port),
        path: `${url.pathname}${url.search}`,
        headers,
        agent: false,
        lookup: pinnedLookup(usable),
        signal: signals,
      };
      if (url.protocol === 'https:' && options.ca !== undefined) requestOptions.ca = options.ca;
      let settled = false;
      // The first outcome wins: destroying the request to refuse an answer raises errors of its own.
      const fail = (error: Error, res?: IncomingMessage) => {
        if (settled) return;
        settled = true;
        reject(error);
        res?.destroy();
        req.destroy();
      };
      const failed = () =>
        deadline.aborted
          ? new UpstreamAuthUnavailableError('timeout', `${url.host} did not answer within ${timeoutMs} ms.`)
          : new UpstreamAuthUnavailableError('unreachable', `${url.host} could not be reached.`);
      const tooLarge = () =>
        new UpstreamAuthUnavailableError('too_large', `${url.host} answered more than ${maxBytes} bytes.`);
      const req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(requestOptions, (res) => {
        const status = res.statusCode ?? 0;
        if (status >= 300 && status < 400)
          return fail(
            new UpstreamAuthUnavailableError(
              'redirect',
              `${url.host} answered a redirect (${status}); redirects are not followed.`,
            ),
            res,
          );
        const declared = Number(res.headers['content-length']);
        if (Number.isFinite(declared) && declared > maxBytes) return fail(tooLarge(), res);
        const chunks: Buffer[] = [];
        let received = 0;
        res.on('data', (chunk: Buffer) => {
          received += chunk.length;
          if (received > maxBytes) fail(tooLarge(), res);
          else chunks.push(chunk);
        });
        res.on('end', () => {
          if (settled) return;
          settled = true;
          const nullBody = status === 204 || status === 205 || status === 304;
          resolve(
            new Response(nullBody ? null : Buffer.concat(chunks), {
              status,
              statusText: res.statusMessage ?? '',
              headers: responseHeaders(res.headers),
            }),
          );
        });
        res.on('error', () => fail(failed()));
        res.on('aborted', () => fail(failed()));
      });
      req.on('error', () => fail(failed()));
      req.end(body);
    });
  };
}

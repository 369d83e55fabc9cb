import { Agent, type Dispatcher } from 'undici';
import { UpstreamTimeoutError, UpstreamUnreachableError } from './errors';

/**
 * One keep-alive dispatcher for signed calls. It dials exactly the origin it is given: it does
 * not read HTTP(S)_PROXY and `request` follows no redirects.
 */
export function createDispatcher(): Agent {
  return new Agent({ keepAliveTimeout: 30_000, connections: 128 });
}

/** The one place where AWS upstream failures become gateway errors: timeouts → 504, anything else → 502. */
export function mapUpstreamError(error: unknown): Error {
  const code = (error as { code?: string }).code ?? '';
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
    return new UpstreamTimeoutError('The AWS endpoint did not answer in time.');
  }
  return new UpstreamUnreachableError('The AWS endpoint could not be reached.');
}

/** Response headers that are not passed back (hop-by-hop). */
export const HOP_BY_HOP_RESPONSE_HEADERS: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

export type { Dispatcher };

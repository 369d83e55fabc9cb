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

/**
 * The AWS response headers a client gets; everything else stays in the gateway (hop-by-hop
 * headers, cookies, and any `x-gateway-*` id that would replace the gateway's own): the body's
 * type, length and coding, retry advice, and AWS's request id and error type.
 */
const FORWARDED_RESPONSE_HEADERS: ReadonlySet<string> = new Set([
  'content-type',
  'content-length',
  'content-encoding',
  'retry-after',
  'x-amzn-requestid',
  'x-amz-request-id',
  'x-amzn-errortype',
  'x-amzn-errormessage',
]);
const FORWARDED_RESPONSE_PREFIXES: readonly string[] = ['x-amzn-bedrock-'];

/** Whether an AWS response header is passed to the client. */
export function isForwardedResponseHeader(name: string): boolean {
  return FORWARDED_RESPONSE_HEADERS.has(name) || FORWARDED_RESPONSE_PREFIXES.some((p) => name.startsWith(p));
}

/** Content types of streamed answers, whose headers leave before their first event. */
export function isEventStream(contentType: unknown): boolean {
  const type = String(contentType ?? '');
  return type.startsWith('text/event-stream') || type.startsWith('application/vnd.amazon.eventstream');
}

export type { Dispatcher };

import { UpstreamTimeoutError, UpstreamUnreachableError } from '@gw/identity-forwarding/identity';

/** The one place where MCP upstream failures become gateway errors: timeout → 504, anything else → 502. */
export function mapUpstreamError(error: NodeJS.ErrnoException, timedOut: boolean): Error {
  const code = error.code;
  if (timedOut || code === 'ETIMEDOUT' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT')
    return new UpstreamTimeoutError('The MCP server did not answer in time.');
  return new UpstreamUnreachableError('The MCP server could not be reached.');
}

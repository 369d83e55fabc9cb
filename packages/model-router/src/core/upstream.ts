import { Agent, type Dispatcher } from 'undici';
import { UpstreamTimeoutError, UpstreamUnreachableError } from './errors';

/** One keep-alive dispatcher for provider calls (global fetch costs several times the CPU per request). */
export function createDispatcher(): Agent {
  return new Agent({ keepAliveTimeout: 30_000, connections: 256, pipelining: 1 });
}

/** The one place where provider failures become gateway errors: timeouts → 504, anything else → 502. */
export function mapUpstreamError(error: unknown): Error {
  const code = (error as { code?: string }).code ?? '';
  const name = (error as { name?: string }).name ?? '';
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT' || name === 'TimeoutError') {
    return new UpstreamTimeoutError('The provider did not answer in time.');
  }
  return new UpstreamUnreachableError('The provider could not be reached.');
}

export type { Dispatcher };

import type { OutgoingHttpHeaders } from 'node:http';
import type { Request } from 'express';
import { SpanKind, SpanStatusCode, startSpan, type Context } from '@gw/tracing';
import type { IdentityForwarder, IdentityTokenCache } from '@gw/identity-forwarding/identity';
import { TRACER_NAME } from './proxy-state';

/**
 * The MCP server's request headers from the forwarder; a `jwt_header` server's token is signed (or
 * read from the cache) in a span of its own, `gateway.identity_token.sign`, whose
 * `gateway.token_cache.hit` says which.
 */
export function signedHeaders(
  forwarder: IdentityForwarder,
  req: Request,
  identity: NonNullable<Request['callerIdentity']>,
  tokenCache: IdentityTokenCache,
  parent: Context,
): OutgoingHttpHeaders {
  if (forwarder.server.method !== 'jwt_header') return forwarder.upstreamHeaders(req.headers, identity);
  const { span } = startSpan(TRACER_NAME, 'gateway.identity_token.sign', parent, SpanKind.INTERNAL);
  const hitsBefore = tokenCache.stats.hits;
  try {
    return forwarder.upstreamHeaders(req.headers, identity);
  } catch (error) {
    span.setStatus({ code: SpanStatusCode.ERROR });
    throw error;
  } finally {
    // Signing is synchronous: a hit in between is this call's.
    span.setAttribute('gateway.token_cache.hit', tokenCache.stats.hits > hitsBefore);
    span.end();
  }
}

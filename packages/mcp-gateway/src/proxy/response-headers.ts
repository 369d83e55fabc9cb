import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';

/**
 * Hop-by-hop headers (RFC 9110 section 7.6.1): they describe one connection, so the upstream's
 * never reach the client (the client's never reach the upstream: see `createHeaderPolicy`).
 */
const HOP_BY_HOP_RESPONSE_HEADERS: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/**
 * The upstream's response headers without hop-by-hop headers, without the headers its
 * `Connection` names, and without `x-gateway-*`/`x-portkey-*` (the gateway's own request and trace
 * ids stay its own); node:http then writes the client connection's own `Connection` and framing.
 */
export function endToEndResponseHeaders(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const named = new Set(
    String(headers.connection ?? '')
      .split(',')
      .map((n) => n.trim().toLowerCase())
      .filter((n) => n !== ''),
  );
  const out: OutgoingHttpHeaders = {};
  for (const name in headers) {
    if (HOP_BY_HOP_RESPONSE_HEADERS.has(name) || named.has(name)) continue;
    if (name.startsWith('x-gateway-') || name.startsWith('x-portkey-')) continue;
    const value = headers[name];
    if (value !== undefined) out[name] = value;
  }
  return out;
}

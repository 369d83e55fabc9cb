import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';

const IPV4_MAPPED = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i;

function peerAddress(req: IncomingMessage): string {
  const address = req.socket.remoteAddress ?? '';
  return IPV4_MAPPED.exec(address)?.[1] ?? address;
}

export function trustedProxyList(list: readonly string[] | undefined): string[] {
  if (list === undefined) return [];
  if (!Array.isArray(list) || list.some((a) => typeof a !== 'string' || isIP(a) === 0)) {
    throw new TypeError('trustedProxies must be a list of IP addresses, for example ["10.0.0.5"].');
  }
  return list.map((a) => IPV4_MAPPED.exec(a)?.[1] ?? a);
}

/**
 * The `x-forwarded-for` the MCP server gets: the address the gateway saw, after the client's own
 * list only when that peer is a trusted proxy.
 */
export function forwardedFor(req: IncomingMessage, trustedProxies: ReadonlySet<string>): string {
  const peer = peerAddress(req);
  const claimed = req.headers['x-forwarded-for'];
  if (claimed === undefined || !trustedProxies.has(peer)) return peer;
  return `${Array.isArray(claimed) ? claimed.join(', ') : claimed}, ${peer}`;
}

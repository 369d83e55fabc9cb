/**
 * The marker a virtual MCP server (CONTRACT section 16) puts on each request it makes to a
 * member's endpoint of this same gateway, so that the member request's record names the virtual
 * server (`mcp_virtual_server`). The member request arrives over loopback like any client's: the
 * slug counts only with this process's secret beside it, which no client can know (32 random bytes
 * drawn at start-up, compared in constant time). Both headers are removed from every request when
 * it arrives, marked or not, so neither reaches an MCP server nor a log.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** The header naming the virtual server's slug. */
export const VIRTUAL_SERVER_HEADER = 'x-gateway-virtual-server';

/** The header carrying this process's secret. */
export const VIRTUAL_PROOF_HEADER = 'x-gateway-virtual-proof';

/** This process's secret: drawn once, never written anywhere. */
const PROOF = randomBytes(32);
const PROOF_TEXT = PROOF.toString('base64url');

/** The headers a virtual server adds to a member request made for `slug`. */
export function virtualServerMarker(slug: string): Record<string, string> {
  return { [VIRTUAL_SERVER_HEADER]: slug, [VIRTUAL_PROOF_HEADER]: PROOF_TEXT };
}

/**
 * The virtual server's slug when `req` carries this process's marker, else undefined (a client's
 * own `x-gateway-virtual-server` counts for nothing). Removes both headers from `req` either way.
 */
export function takeVirtualServerMarker(req: IncomingMessage): string | undefined {
  const slug = req.headers[VIRTUAL_SERVER_HEADER];
  const proof = req.headers[VIRTUAL_PROOF_HEADER];
  if (slug === undefined && proof === undefined) return undefined;
  delete req.headers[VIRTUAL_SERVER_HEADER];
  delete req.headers[VIRTUAL_PROOF_HEADER];
  if (typeof slug !== 'string' || typeof proof !== 'string') return undefined;
  const given = Buffer.from(proof, 'base64url');
  if (given.length !== PROOF.length || !timingSafeEqual(given, PROOF)) return undefined;
  return slug;
}

import { isIP } from 'node:net';
import type * as IdentityForwarding from '@gw/identity-forwarding/identity';
import type { GatewayConfig } from './schema';

/**
 * `GATEWAY_ALLOWED_ORIGINS`: comma-separated origins, besides the gateway's own, whose pages may
 * call its MCP servers (CONTRACT section 12). Unset or empty: none. A value that is not an http(s)
 * origin stops start-up with what to write.
 */
export function allowedOriginsFromEnv(env: NodeJS.ProcessEnv): string[] {
  const list = (env.GATEWAY_ALLOWED_ORIGINS ?? '')
    .split(',')
    .map((o) => o.trim())
    .filter((o) => o !== '');
  if (list.length > 100) throw new Error('GATEWAY_ALLOWED_ORIGINS lists more than 100 origins.');
  if (list.length === 0) return list;
  // Only when origins are listed: start-up checks them before the gateway's modules load
  // (start-settings.ts).
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded only when used
  const { normalizeOrigin } = require('@gw/identity-forwarding/identity') as typeof IdentityForwarding;
  for (const origin of list) {
    if (normalizeOrigin(origin) === undefined) {
      throw new Error(
        `GATEWAY_ALLOWED_ORIGINS must be comma-separated origins such as "https://app.example.com,http://localhost:3000" (got "${origin.slice(0, 100)}").`,
      );
    }
  }
  return list;
}

/** Whether the listen address `HOST` is the loopback interface only (`127.0.0.0/8`, `::1`, `localhost`). */
export function isLoopbackListenAddress(host: string): boolean {
  if (host === 'localhost' || host === '::1' || host === '[::1]') return true;
  return isIP(host) === 4 && host.startsWith('127.');
}

/**
 * MCP requests are accepted only for the gateway's own host (DNS rebinding, CONTRACT section 12).
 * Without `PUBLIC_BASE_URL` that is a loopback name or address, so a gateway listening on another
 * address refuses MCP requests that name it otherwise (`403 origin_not_allowed`); the `/v1` routes
 * and the console are not affected. Returns the start-up warning that says so, or undefined.
 */
export function publicBaseUrlWarning(host: string, publicBaseUrl: string | undefined): string | undefined {
  if (publicBaseUrl !== undefined || isLoopbackListenAddress(host)) return undefined;
  return `HOST is "${host.slice(0, 60)}", not a loopback address, and PUBLIC_BASE_URL is unset: MCP requests are accepted only when their Host is a loopback name or address (DNS rebinding); set PUBLIC_BASE_URL to the origin clients use (such as "https://gateway.example.com").`;
}

/**
 * With `NODE_ENV=production`, `auth.jwt_validation` must name the `audience` its tokens are
 * issued for (RFC 8707; MCP authorization: servers must validate that tokens were issued for
 * them), so that a token meant for another service is not accepted here.
 */
export function requireTokenAudience(env: NodeJS.ProcessEnv, config: GatewayConfig): void {
  const validation = config.auth?.jwt_validation;
  if (env.NODE_ENV !== 'production' || validation === undefined) return;
  if (validation.audience !== undefined && validation.audience.trim() !== '') return;
  throw new Error(
    'config auth.jwt_validation.audience is required in production: the audience (aud) the identity provider issues tokens for this gateway with, so tokens meant for another service are refused.',
  );
}

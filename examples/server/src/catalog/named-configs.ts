import type { IncomingMessage } from 'node:http';
import type { GatewayIdentity } from '@gw/identity-forwarding';
import type { CatalogView } from './catalog-view';

/**
 * The named config of `slug` in the current snapshot (CONTRACT section 17): the `config` object of
 * the config file's `configs` entry or of the catalog's `configs/<slug>` record, or undefined when
 * neither defines `slug`. The object is the snapshot's own, frozen through and through: copy what
 * a request changes. Never waits.
 */
export function namedConfig(view: CatalogView, slug: string): Record<string, unknown> | undefined {
  return view.namedConfigs.get(slug);
}

/**
 * The named config slug of the API key that authenticated `req` (its `config`, carried on the
 * caller's identity as `apiKeyConfig` when the key was authenticated), or undefined: no caller
 * yet, a caller that is no API key, or a key without `config`. Whether that config still exists
 * is {@link namedConfig}'s to say. Never waits.
 */
export function apiKeyConfigSlug(req: IncomingMessage): string | undefined {
  const identity = (req as IncomingMessage & { callerIdentity?: GatewayIdentity }).callerIdentity;
  if (identity?.method !== 'api_key') return undefined;
  const slug = identity.apiKeyConfig;
  return typeof slug === 'string' && slug !== '' ? slug : undefined;
}

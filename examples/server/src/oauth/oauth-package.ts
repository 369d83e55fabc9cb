import type * as OAuthPackage from '@gw/oauth';

let loaded: typeof OAuthPackage | undefined;

/**
 * `@gw/oauth`, loaded the first time the gateway needs it: when OAuth sign-in is turned on (the
 * config's `oauth` or the catalog's OAuth settings) or the console's OpenID Provider sign-in is
 * built. With it come openid-client and the MCP SDK's OAuth handlers (~10 MB resident), which a
 * gateway without OAuth never loads (docs/decisions.md, "Memory at start-up in the production shape").
 */
export function oauthPackage(): typeof OAuthPackage {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded only when configured
  loaded ??= require('@gw/oauth') as typeof OAuthPackage;
  return loaded;
}

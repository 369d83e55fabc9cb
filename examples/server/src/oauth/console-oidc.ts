import { createHash } from 'node:crypto';
import {
  actorPart,
  roleFromClaims,
  roleMappingFingerprint,
  type AdminPrincipal,
  type AdminRoleMapping,
} from '@gw/catalog';
import type { ConsoleOidcSignIn } from '@gw/console';
import type { OidcLogin, OidcLoginState } from '@gw/oauth';
import type { OAuthConfig } from '../config/schema';
import { oauthPackage } from './oauth-package';

type OidcSettings = Extract<OAuthConfig['login'], { type: 'oidc' }>;

/** An error of the console's OpenID Provider sign-in, with a stable code. */
class ConsoleSignInError extends Error {
  constructor(
    readonly code: 'role_required' | 'login_failed',
    message: string,
  ) {
    super(message);
  }
}

/** What {@link consoleOidcSignIn} reads. */
export interface ConsoleOidcOptions {
  /** The `oauth.login` settings in force now (config file or catalog), or undefined when it is not `oidc`. */
  login: () => OidcSettings | undefined;
  /** The config file's `adminRoles`: without it, nobody signs in to the console at the provider. */
  roles: AdminRoleMapping | undefined;
  /** The gateway's public origin: the provider redirects to `<base>/console/oidc/callback`. */
  publicBaseUrl: string;
  /** `auth.groups_claim`, filled from userinfo when the ID token lacks it. */
  groupsClaim: string;
}

/**
 * The fingerprint of the console's provider sign-in settings (issuer, client, role mapping), or
 * undefined while it is off: sessions opened under other settings end.
 */
export function consoleOidcFingerprint(
  login: OidcSettings | undefined,
  roles: AdminRoleMapping | undefined,
): string | undefined {
  if (login === undefined || roles === undefined) return undefined;
  return createHash('sha256')
    .update(JSON.stringify(['console-oidc', login.issuer, login.clientId, roleMappingFingerprint(roles)]))
    .digest('hex');
}

/**
 * The console's sign-in at the company's OpenID Provider, with the same `oauth.login` settings as
 * the OAuth sign-in (its client must also list `<PUBLIC_BASE_URL>/console/oidc/callback`): the
 * ID token's claims give the role through `adminRoles` (no role: `role_required`, no session), the
 * audit names the person `oidc:<iss>#<sub>`, and the session ends with the ID token's `exp`.
 */
export function consoleOidcSignIn(options: ConsoleOidcOptions): ConsoleOidcSignIn {
  let built: { key: string; login: OidcLogin; settings: OidcSettings } | undefined;
  const current = () => {
    const settings = options.login();
    if (settings === undefined || options.roles === undefined) return undefined;
    const key = JSON.stringify([settings.issuer, settings.clientId, settings.clientSecret, settings.scopes]);
    if (built?.key !== key) {
      const issuer = new URL(settings.issuer);
      const loopback =
        ['localhost', '127.0.0.1', '[::1]'].includes(issuer.hostname) || issuer.hostname.startsWith('127.');
      built = {
        key,
        settings,
        login: new (oauthPackage().OidcLogin)({
          issuer: settings.issuer,
          clientId: settings.clientId,
          clientSecret: settings.clientSecret,
          redirectUri: `${options.publicBaseUrl.replace(/\/$/, '')}/console/oidc/callback`,
          scopes: settings.scopes,
          groupsClaim: options.groupsClaim,
          allowInsecureIssuer: issuer.protocol === 'http:' && loopback,
        }),
      };
    }
    return built;
  };
  return {
    name: () => {
      const found = current();
      return found === undefined ? undefined : new URL(found.settings.issuer).host;
    },
    start: async () => {
      const found = current();
      if (!found) throw new ConsoleSignInError('login_failed', 'Sign-in at an OpenID Provider is off.');
      const { url, state } = await found.login.start();
      return { url, state: { ...state } };
    },
    finish: async (callbackUrl, state): Promise<AdminPrincipal> => {
      const found = current();
      if (!found || !options.roles)
        throw new ConsoleSignInError('login_failed', 'Sign-in at an OpenID Provider is off.');
      const claims = await found.login.finish(callbackUrl, state as unknown as OidcLoginState);
      const role = roleFromClaims(options.roles, claims);
      if (role === undefined)
        throw new ConsoleSignInError(
          'role_required',
          `Signed in at the provider, but the claim "${options.roles.claim.slice(0, 64)}" gives no console role: ask an administrator to add you.`,
        );
      const exp = claims.exp;
      const issuer = actorPart(claims.iss);
      const subject = actorPart(claims.sub);
      return {
        actor: `oidc:${issuer}#${subject}`,
        role,
        credential: {
          kind: 'oidc',
          fingerprint: consoleOidcFingerprint(found.settings, options.roles) as string,
          issuer,
          subject,
          expiresAt: typeof exp === 'number' && Number.isFinite(exp) ? exp * 1000 : undefined,
        },
      };
    },
  };
}

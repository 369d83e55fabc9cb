import type { AccessMode } from '@gw/access';
import { checkAdminKeyStrength, type AdminClaim } from '@gw/catalog';
import { loadConfigFile } from './load';
import { requireTokenAudience } from './mcp-security';
import type { GatewayConfig } from './schema';

/*
 * The start-up rules that read the environment together with the config (the config file's, or
 * the development default's). With a config file they run before the gateway's modules load
 * (main.ts): they need only the config's own modules.
 */

/** `GATEWAY_ADMIN_CLAIM` (`claim=value`): the identity-provider claim that makes a token an admin credential. */
function parseAdminClaim(value: string | undefined, config: GatewayConfig): AdminClaim | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const match = /^([A-Za-z0-9_:.-]{1,64})=(.{1,200})$/.exec(value.trim());
  if (!match) throw new Error('GATEWAY_ADMIN_CLAIM must be claim=value, such as "groups=gateway-admin".');
  if (!config.auth?.jwt_validation) {
    throw new Error(
      'GATEWAY_ADMIN_CLAIM needs auth.jwt_validation in the config: the identity provider that signs admin tokens.',
    );
  }
  return { claim: match[1] as string, value: match[2] as string };
}

/**
 * The access mode fixed at start-up: `GATEWAY_ACCESS_MODE`, else the config's `access.mode`; undefined
 * when neither sets one (the mode then lives in the catalog, `open` until an admin sets another).
 */
export function fixedAccessMode(
  env: NodeJS.ProcessEnv,
  config: GatewayConfig,
): { mode: AccessMode; source: 'environment' | 'config' } | undefined {
  const value = env.GATEWAY_ACCESS_MODE?.trim();
  if (value === undefined || value === '')
    return config.access?.mode === undefined ? undefined : { mode: config.access.mode, source: 'config' };
  if (value !== 'open' && value !== 'report' && value !== 'policies') {
    throw new Error(`GATEWAY_ACCESS_MODE must be "open", "report" or "policies" (got "${value.slice(0, 40)}").`);
  }
  return { mode: value, source: 'environment' };
}

/** The access mode at start-up: {@link fixedAccessMode}'s, else `open`. */
export function accessMode(env: NodeJS.ProcessEnv, config: GatewayConfig): AccessMode {
  return fixedAccessMode(env, config)?.mode ?? 'open';
}

/** A config that passed {@link configStartRules}, with what those rules read from the environment. */
export interface CheckedConfig {
  /** The gateway's config. */
  config: GatewayConfig;
  /** `GATEWAY_ADMIN_CLAIM`, parsed; undefined when unset. */
  adminClaim: AdminClaim | undefined;
  /** The access mode fixed at start-up ({@link fixedAccessMode}); undefined when none is. */
  fixedMode: ReturnType<typeof fixedAccessMode>;
}

/**
 * Checks, in this order, the token audience required in production, `GATEWAY_ADMIN_CLAIM`, the
 * strength of `GATEWAY_ADMIN_KEY` and `GATEWAY_ACCESS_MODE` against `config`; the first that fails
 * throws an Error whose one-line message says what to write.
 */
export function configStartRules(env: NodeJS.ProcessEnv, config: GatewayConfig): CheckedConfig {
  requireTokenAudience(env, config);
  const adminClaim = parseAdminClaim(env.GATEWAY_ADMIN_CLAIM, config);
  // A short or guessable admin key stops start-up, with how to generate one.
  const adminKey = env.GATEWAY_ADMIN_KEY?.trim();
  if (adminKey) checkAdminKeyStrength(adminKey);
  return { config, adminClaim, fixedMode: fixedAccessMode(env, config) };
}

/**
 * The config file at `path` (`GATEWAY_CONFIG`), read and validated ({@link loadConfigFile}), then
 * checked with the environment ({@link configStartRules}).
 */
export function checkedConfigFile(path: string, env: NodeJS.ProcessEnv): CheckedConfig {
  return configStartRules(env, loadConfigFile(path, env));
}

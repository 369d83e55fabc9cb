import { InvalidConfigHeaderError, UnsupportedValueError } from './errors';
import type { GatewayRequestConfig } from './gateway-headers';

/**
 * Routing across targets (CONTRACT section 17): the `strategy` and `targets` of `x-gateway-config`,
 * in the shape `portkey-ai` users write, read into a tree of groups and targets.
 */

/** How a group picks among its targets. */
export type RoutingMode = 'single' | 'fallback' | 'loadbalance';

/** Statuses that make a `fallback` group try its next target when its strategy lists none: 429, 500, 502, 503, 504, 529. */
export const DEFAULT_FALLBACK_STATUSES: readonly number[] = Object.freeze([429, 500, 502, 503, 504, 529]);

/** Deepest nesting of groups: the top-level `targets` is level 1. */
export const MAX_ROUTING_DEPTH = 3;
/** Most targets one group lists. */
export const MAX_GROUP_TARGETS = 16;
/** Most targets (leaves) a whole config holds. */
export const MAX_ROUTING_TARGETS = 64;
/** Most fields `override_params` may replace. */
export const MAX_OVERRIDE_PARAMS = 32;
/** Largest `weight`. */
export const MAX_WEIGHT = 1_000_000;

/** One target: a provider (or the request's own), the body fields it replaces, and its request settings. */
export interface RoutingTarget {
  readonly kind: 'target';
  /** Dotted indexes from the top-level `targets` (`"1"`, `"1.0"`): `x-gateway-last-used-option-index`. */
  readonly index: string;
  /** The provider slug (without `@`), or undefined: the one the request names. */
  readonly provider?: string;
  /** Its share of a `loadbalance` group's requests. Default 1. */
  readonly weight: number;
  /** Body fields this target replaces (`model`, `max_tokens`, …). Default: none. */
  readonly overrideParams?: Readonly<Record<string, unknown>>;
  /** `retry`, `request_timeout` and `cache` for this target: its own, else the nearest group's, else the config's. */
  readonly config: GatewayRequestConfig;
}

/** A group of targets and how it picks among them. */
export interface RoutingGroup {
  readonly kind: 'group';
  /** Dotted indexes from the top-level `targets` (`""` for the config itself). */
  readonly index: string;
  readonly mode: RoutingMode;
  /** For `fallback`: the statuses that make the next target tried. */
  readonly onStatusCodes: readonly number[];
  /** Its share of an enclosing `loadbalance` group's requests. Default 1. */
  readonly weight: number;
  readonly targets: readonly (RoutingGroup | RoutingTarget)[];
}

const own = (object: Record<string, unknown>, key: string): unknown =>
  Object.hasOwn(object, key) ? object[key] : undefined;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** `targets[1].targets[0]` for index `"1.0"`: where a message points in the config. */
function where(index: string): string {
  return index === '' ? 'x-gateway-config' : `targets[${index.split('.').join('].targets[')}]`;
}

function invalid(message: string, index: string): never {
  throw new InvalidConfigHeaderError(`${where(index)}: ${message}`, { param: 'x-gateway-config' });
}

/** A group's `strategy`: its mode and, for `fallback`, its statuses. */
function readStrategy(value: unknown, index: string): { mode: RoutingMode; onStatusCodes: readonly number[] } {
  if (value === undefined) return { mode: 'single', onStatusCodes: DEFAULT_FALLBACK_STATUSES };
  if (!isObject(value)) invalid('strategy must be an object such as {"mode": "fallback"}.', index);
  const mode = own(value, 'mode');
  if (mode !== 'single' && mode !== 'fallback' && mode !== 'loadbalance') {
    if (mode === 'conditional')
      throw new UnsupportedValueError(
        `${where(index)}: strategy.mode "conditional" is not served; use "single", "fallback" or "loadbalance".`,
        { param: 'x-gateway-config' },
      );
    invalid('strategy.mode must be "single", "fallback" or "loadbalance".', index);
  }
  const codes = own(value, 'on_status_codes');
  if (codes === undefined) return { mode, onStatusCodes: DEFAULT_FALLBACK_STATUSES };
  if (
    !Array.isArray(codes) ||
    codes.length > 32 ||
    codes.some((code) => typeof code !== 'number' || !Number.isInteger(code) || code < 100 || code > 599)
  )
    invalid('strategy.on_status_codes must be a list of at most 32 HTTP statuses, such as [429, 503].', index);
  return { mode, onStatusCodes: Object.freeze([...(codes as number[])]) };
}

function readWeight(value: unknown, index: string): number {
  if (value === undefined) return 1;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > MAX_WEIGHT)
    invalid(`weight must be a number from 0 to ${MAX_WEIGHT}.`, index);
  return value;
}

/** Fields a target or group may hold, besides its request settings. */
const TARGET_FIELDS = new Set([
  'provider',
  'virtual_key',
  'weight',
  'override_params',
  'retry',
  'request_timeout',
  'cache',
  'strategy',
  'targets',
  'name',
]);

/** Fields of a target that hand the gateway a credential: the gateway holds providers' keys itself. */
const CREDENTIAL_FIELDS = ['api_key', 'aws_access_key_id', 'aws_secret_access_key', 'aws_session_token'];

/** A provider reference: `@slug` or `slug`, as a slug. */
function readProvider(value: unknown, index: string): string {
  if (typeof value !== 'string' || !/^@?[a-z0-9][a-z0-9_-]{0,63}$/i.test(value))
    invalid('provider must name a configured provider, such as "@anthropic-prod".', index);
  return value.replace(/^@/, '');
}

function readOverrideParams(value: unknown, index: string): Readonly<Record<string, unknown>> {
  if (!isObject(value)) invalid('override_params must be an object of body fields, such as {"model": "…"}.', index);
  const keys = Object.keys(value);
  if (keys.length > MAX_OVERRIDE_PARAMS)
    invalid(`override_params may replace at most ${MAX_OVERRIDE_PARAMS} fields.`, index);
  // The client reads the answer in the shape it asked for: a target may not turn a stream on or off.
  if (keys.includes('stream'))
    invalid("override_params may not set stream: the client chose the answer's shape.", index);
  return Object.freeze({ ...value });
}

/**
 * Reads the routing tree of a parsed `x-gateway-config` whose `targets` is present. `inherited`:
 * the config's own `retry`, `request_timeout` and `cache`, which targets inherit. `settings` reads
 * those three fields of a target or group (the parser of the flat config). Any shape error is
 * `400 invalid_config` naming where it is (`targets[1].targets[0]: …`).
 */
export function readRoutingTree(
  config: Record<string, unknown>,
  inherited: GatewayRequestConfig,
  settings: (fields: Record<string, unknown>, inherited: GatewayRequestConfig) => GatewayRequestConfig,
): RoutingGroup {
  let leaves = 0;
  const readGroup = (
    fields: Record<string, unknown>,
    index: string,
    depth: number,
    outer: GatewayRequestConfig,
  ): RoutingGroup => {
    const { mode, onStatusCodes } = readStrategy(own(fields, 'strategy'), index);
    const targets = own(fields, 'targets');
    if (!Array.isArray(targets) || targets.length === 0 || targets.length > MAX_GROUP_TARGETS)
      invalid(`targets must be a list of 1 to ${MAX_GROUP_TARGETS} targets.`, index);
    const read = targets.map((entry, position): RoutingGroup | RoutingTarget => {
      const at = index === '' ? String(position) : `${index}.${position}`;
      if (!isObject(entry)) invalid('a target must be an object such as {"provider": "@anthropic-prod"}.', at);
      for (const field of CREDENTIAL_FIELDS)
        if (Object.hasOwn(entry, field))
          invalid(
            `${field} is not accepted: the gateway holds each provider's credentials; name the provider instead.`,
            at,
          );
      for (const field of Object.keys(entry))
        if (!TARGET_FIELDS.has(field))
          invalid(
            `unknown field "${field.slice(0, 32)}" (a target holds provider, weight, override_params, retry, request_timeout, cache; a group strategy and targets).`,
            at,
          );
      const inner = settings(entry, outer);
      const weight = readWeight(own(entry, 'weight'), at);
      if (Object.hasOwn(entry, 'targets')) {
        if (depth >= MAX_ROUTING_DEPTH) invalid(`targets nest at most ${MAX_ROUTING_DEPTH} levels deep.`, at);
        if (
          Object.hasOwn(entry, 'provider') ||
          Object.hasOwn(entry, 'virtual_key') ||
          Object.hasOwn(entry, 'override_params')
        )
          invalid('a group (with targets) takes no provider or override_params; put them on its targets.', at);
        return { ...readGroup(entry, at, depth + 1, inner), weight };
      }
      if (++leaves > MAX_ROUTING_TARGETS) invalid(`a config holds at most ${MAX_ROUTING_TARGETS} targets.`, at);
      const provider = own(entry, 'provider') ?? own(entry, 'virtual_key');
      const overrides = own(entry, 'override_params');
      return {
        kind: 'target',
        index: at,
        ...(provider !== undefined && { provider: readProvider(provider, at) }),
        weight,
        ...(overrides !== undefined && { overrideParams: readOverrideParams(overrides, at) }),
        config: inner,
      };
    });
    return { kind: 'group', index, mode, onStatusCodes, weight: 1, targets: read };
  };
  if (Object.hasOwn(config, 'provider') || Object.hasOwn(config, 'virtual_key'))
    invalid('give provider or targets, not both: with targets, each target names its provider.', '');
  return readGroup(config, '', 1, inherited);
}

/**
 * One child of `group` chosen by weight among `candidates` (their indexes), with `random` in
 * [0, 1); undefined when every candidate weighs 0.
 */
export function chooseByWeight(
  group: RoutingGroup,
  candidates: readonly number[],
  random: () => number,
): number | undefined {
  let total = 0;
  for (const at of candidates) total += (group.targets[at] as RoutingGroup | RoutingTarget).weight;
  if (total <= 0) return undefined;
  let point = random() * total;
  for (const at of candidates) {
    point -= (group.targets[at] as RoutingGroup | RoutingTarget).weight;
    if (point < 0) return at;
  }
  // Rounding left the point at the very end: the last candidate of positive weight.
  for (let i = candidates.length - 1; i >= 0; i--)
    if ((group.targets[candidates[i] as number] as RoutingGroup | RoutingTarget).weight > 0) return candidates[i];
  return undefined;
}

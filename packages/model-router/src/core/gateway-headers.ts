import type { IncomingHttpHeaders } from 'node:http';
import { InvalidConfigHeaderError, UnsupportedValueError } from './errors';
import { readRoutingTree, type RoutingGroup } from './routing-config';

/** A gateway header, read as `x-gateway-<name>` or its alias `x-portkey-<name>`. */
export function gatewayHeader(headers: IncomingHttpHeaders, name: string): string | undefined {
  let names = HEADER_NAMES.get(name);
  if (names === undefined) {
    names = [`x-gateway-${name}`, `x-portkey-${name}`];
    if (HEADER_NAMES.size < 64) HEADER_NAMES.set(name, names);
  }
  const value = headers[names[0]] ?? headers[names[1]];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/**
 * The two header names of each name asked of {@link gatewayHeader}, built once: the names are
 * constants of the gateway's code (at most 64 kept), and a name built afresh on every request
 * costs a string and its hash on each lookup.
 */
const HEADER_NAMES = new Map<string, readonly [string, string]>();

/** The parsed `x-gateway-config` header. */
export interface GatewayRequestConfig {
  provider?: string;
  strict_open_ai_compliance?: boolean;
  request_timeout?: number;
  retry?: { attempts: number; on_status_codes: number[] };
  cache?: CacheRequest;
  /** The routing tree, when the config lists `targets` (CONTRACT section 17). */
  targets?: RoutingGroup;
}

/** A request's ask for the response cache (`cache` of `x-gateway-config`, or `x-gateway-cache`). */
export interface CacheRequest {
  /** The only mode: an exact match of the request. */
  mode: 'simple';
  /** Oldest answer the request accepts, and how long a new answer is kept, in seconds. */
  max_age: number;
}

/** `max_age` when the request names none: 604,800 s (7 days). */
export const DEFAULT_CACHE_MAX_AGE = 604_800;
/** Largest `max_age`: 7,776,000 s (90 days). */
export const MAX_CACHE_MAX_AGE = 7_776_000;

/** A cache mode, as the config field or the header names it: only `simple` is served. */
function cacheMode(mode: unknown): 'simple' {
  if (mode === 'simple') return mode;
  throw new UnsupportedValueError(
    `cache.mode must be "simple"${typeof mode === 'string' ? ` (got "${mode.slice(0, 32)}"; only exact-match caching is served)` : ''}.`,
    { param: 'cache.mode' },
  );
}

/** A `max_age` in seconds: a whole number from 1 to 7,776,000. */
function cacheMaxAge(value: unknown): number {
  if (typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= MAX_CACHE_MAX_AGE) return value;
  throw new InvalidConfigHeaderError(
    `cache.max_age must be a whole number of seconds from 1 to ${MAX_CACHE_MAX_AGE}.`,
    {
      param: 'cache.max_age',
    },
  );
}

/** The `cache` object of `x-gateway-config`. */
function readCacheConfig(value: unknown): CacheRequest {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidConfigHeaderError('cache must be an object such as {"mode": "simple", "max_age": 3600}.', {
      param: 'cache',
    });
  }
  const fields = value as Record<string, unknown>;
  const mode = cacheMode(own(fields, 'mode'));
  const maxAge = own(fields, 'max_age');
  return { mode, max_age: maxAge === undefined ? DEFAULT_CACHE_MAX_AGE : cacheMaxAge(maxAge) };
}

const MAX_AGE_DIRECTIVE = /(?:^|,)\s*max-age\s*=\s*"?(\d{1,12})"?\s*(?:,|$)/i;

/**
 * What the request asks of the response cache, or undefined when it asks nothing: the `cache` of
 * `x-gateway-config`, else `x-gateway-cache: simple` with `Cache-Control: max-age=<s>`;
 * `forceRefresh` from `x-gateway-cache-force-refresh: true`. Any mode but `simple` is
 * `400 unsupported_value` (`param: "cache.mode"`).
 */
export function readCacheRequest(
  headers: IncomingHttpHeaders,
  config: GatewayRequestConfig,
): (CacheRequest & { forceRefresh: boolean }) | undefined {
  let request = config.cache;
  if (request === undefined) {
    const mode = gatewayHeader(headers, 'cache');
    if (mode === undefined) return undefined;
    const control = headers['cache-control'];
    const directive = typeof control === 'string' ? MAX_AGE_DIRECTIVE.exec(control) : null;
    request = {
      mode: cacheMode(mode.trim().toLowerCase()),
      max_age: directive ? cacheMaxAge(Number(directive[1])) : DEFAULT_CACHE_MAX_AGE,
    };
  }
  const refresh = gatewayHeader(headers, 'cache-force-refresh');
  return { ...request, forceRefresh: refresh !== undefined && refresh.trim().toLowerCase() === 'true' };
}

/** Default statuses retried when `retry.on_status_codes` is absent. */
export const DEFAULT_RETRY_STATUSES: readonly number[] = [429, 500, 502, 503, 504, 529];

/**
 * Whether a status may be retried: 408, 409, 429 and 5xx (529 included). Anything else is an
 * answer, and retrying it would only bill the same request again.
 */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || (status >= 500 && status <= 599);
}

const own = (object: Record<string, unknown>, key: string): unknown =>
  Object.hasOwn(object, key) ? object[key] : undefined;

/** Looks a named config up by slug: its `config` object, or undefined when none has that slug. Must not wait. */
export type NamedConfigResolver = (slug: string) => Record<string, unknown> | undefined;

/** A named config's slug as `x-gateway-config` may give it instead of JSON. */
const CONFIG_SLUG = /^[a-z0-9][a-z0-9_-]{0,63}$/i;

/** Named configs parsed once per config object (catalog records are replaced, never changed in place). */
const parsedNamedConfigs = new WeakMap<object, GatewayRequestConfig>();

/**
 * Parses `x-gateway-config` (invalid JSON or shape → 400 invalid_config): a JSON object, or the
 * slug of a named config (`resolveNamed`). Without the header, `defaultSlug` (the API key's
 * config) is used when given. A slug that names no config is `400 invalid_config`.
 */
export function readGatewayConfig(
  headers: IncomingHttpHeaders,
  resolveNamed?: NamedConfigResolver,
  defaultSlug?: string,
): GatewayRequestConfig {
  const raw = gatewayHeader(headers, 'config') ?? defaultSlug;
  if (raw === undefined) return {};
  const trimmed = raw.trim();
  if (!trimmed.startsWith('{') && CONFIG_SLUG.test(trimmed)) {
    const named = resolveNamed?.(trimmed);
    if (named === undefined)
      throw new InvalidConfigHeaderError(`No config is named "${trimmed}".`, { param: 'x-gateway-config' });
    let parsed = parsedNamedConfigs.get(named);
    if (parsed === undefined) {
      parsed = readConfigObject(named);
      parsedNamedConfigs.set(named, parsed);
    }
    return parsed;
  }
  const known = parsedHeaderConfigs.get(raw);
  if (known !== undefined) return known;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new InvalidConfigHeaderError('x-gateway-config is not valid JSON (or the slug of a named config).', {
      param: 'x-gateway-config',
    });
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new InvalidConfigHeaderError('x-gateway-config must be a JSON object.', { param: 'x-gateway-config' });
  }
  const config = readConfigObject(parsed as Record<string, unknown>);
  // Clients send the same config on every request (an SDK's `config` option): read once.
  if (raw.length <= MAX_REMEMBERED_CONFIG_LENGTH) {
    if (parsedHeaderConfigs.size >= MAX_REMEMBERED_CONFIGS) parsedHeaderConfigs.clear();
    parsedHeaderConfigs.set(raw, Object.freeze(config));
  }
  return config;
}

/** Most `x-gateway-config` values remembered, parsed (past it, they are forgotten together). */
const MAX_REMEMBERED_CONFIGS = 256;
/** Longest `x-gateway-config` value remembered: 8 KiB. */
const MAX_REMEMBERED_CONFIG_LENGTH = 8192;
/**
 * `x-gateway-config` values already read, by their exact text. A config is read only, never
 * changed, by the routes: one object serves every request that sends the same text.
 */
const parsedHeaderConfigs = new Map<string, GatewayRequestConfig>();

/**
 * A config object as `x-gateway-config` gives it (or a named config holds it), validated:
 * `400 invalid_config` naming what is wrong. Exported for hosts that check a named config when it
 * is written.
 */
export function readConfigObject(config: Record<string, unknown>): GatewayRequestConfig {
  const result: GatewayRequestConfig = readRequestSettings(config, {});
  const provider = own(config, 'provider');
  if (typeof provider === 'string') result.provider = provider;
  const strict = own(config, 'strict_open_ai_compliance');
  if (typeof strict === 'boolean') result.strict_open_ai_compliance = strict;
  if (own(config, 'targets') !== undefined) {
    result.targets = readRoutingTree(config, { ...result }, readRequestSettings);
    delete result.provider;
  }
  return result;
}

/**
 * `request_timeout`, `retry` and `cache` of a config or of one of its targets, over `inherited`
 * (what the enclosing group gives).
 */
function readRequestSettings(config: Record<string, unknown>, inherited: GatewayRequestConfig): GatewayRequestConfig {
  const result: GatewayRequestConfig = {};
  const timeout = own(config, 'request_timeout') ?? inherited.request_timeout;
  if (timeout !== undefined) {
    if (typeof timeout !== 'number' || !(timeout > 0)) {
      throw new InvalidConfigHeaderError('request_timeout must be a positive number of milliseconds.', {
        param: 'x-gateway-config',
      });
    }
    result.request_timeout = timeout;
  }
  const retry = own(config, 'retry');
  if (retry !== undefined) {
    const fields =
      typeof retry === 'object' && retry !== null && !Array.isArray(retry) ? (retry as Record<string, unknown>) : {};
    const attempts = own(fields, 'attempts');
    const statuses = own(fields, 'on_status_codes') ?? DEFAULT_RETRY_STATUSES;
    if (
      typeof attempts !== 'number' ||
      !Number.isInteger(attempts) ||
      attempts < 0 ||
      attempts > 10 ||
      !Array.isArray(statuses) ||
      statuses.length > 32 ||
      statuses.some((s) => typeof s !== 'number')
    ) {
      throw new InvalidConfigHeaderError('retry must be {"attempts": 0-10, "on_status_codes": [numbers]}.', {
        param: 'x-gateway-config',
      });
    }
    const refused = (statuses as number[]).find((s) => !isRetryableStatus(s));
    if (refused !== undefined) {
      throw new InvalidConfigHeaderError(
        `retry.on_status_codes may list only 408, 409, 429 and 5xx statuses (got ${String(refused).slice(0, 16)}).`,
        { param: 'x-gateway-config' },
      );
    }
    result.retry = { attempts, on_status_codes: statuses as number[] };
  } else if (inherited.retry !== undefined) result.retry = inherited.retry;
  const cache = own(config, 'cache');
  if (cache !== undefined && cache !== null) result.cache = readCacheConfig(cache);
  else if (inherited.cache !== undefined) result.cache = inherited.cache;
  return result;
}

/** Strict OpenAI compliance: `x-gateway-strict-open-ai-compliance: false` (or the config field) turns it off. */
export function isStrict(headers: IncomingHttpHeaders, config: GatewayRequestConfig): boolean {
  const header = gatewayHeader(headers, 'strict-open-ai-compliance');
  if (header !== undefined) return header.toLowerCase() !== 'false';
  return config.strict_open_ai_compliance ?? true;
}

/** Beta names from every beta header, merged and de-duplicated; undefined when none. */
export function mergedBetas(headers: IncomingHttpHeaders): string | undefined {
  // Most requests send none of them: nothing to merge, nothing allocated.
  if (BETA_HEADERS.every((header) => headers[header] === undefined)) return undefined;
  const names = new Set<string>();
  for (const header of BETA_HEADERS) {
    const value = headers[header];
    for (const item of (Array.isArray(value) ? value.join(',') : (value ?? '')).split(',')) {
      const name = item.trim();
      if (name) names.add(name);
    }
  }
  return names.size > 0 ? [...names].join(',') : undefined;
}

/** The headers {@link mergedBetas} merges, in order. */
const BETA_HEADERS = [
  'x-gateway-provider-beta',
  'x-portkey-provider-beta',
  'x-gateway-anthropic-beta',
  'x-portkey-anthropic-beta',
  'anthropic-beta',
] as const;

/** The upstream `anthropic-version`. Default `2023-06-01`. */
export function anthropicVersion(headers: IncomingHttpHeaders): string {
  const value = gatewayHeader(headers, 'anthropic-version') ?? headers['anthropic-version'];
  return typeof value === 'string' && value !== '' ? value : '2023-06-01';
}

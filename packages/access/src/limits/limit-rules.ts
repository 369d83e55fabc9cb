import { rejectUnknownOptions } from '@gw/options';
import type { AccessCaller, PolicySubjects } from '../policies';
import { NANOS_PER_USD } from './pricing';

/**
 * A limit (a catalog record of kind `limits`, or an entry of the config file's `limits`): who it
 * is for, as an access policy's subjects, and the caps it sets. A cap left out is not enforced.
 */
export interface LimitRule {
  /** The limit's name in answers and counters. Required. */
  slug: string;
  /** Display name. Default: the slug. */
  name?: string;
  /** Who the limit is for: exact user ids, group names and API key ids. Required. */
  subjects: PolicySubjects;
  /** `each`: every matching caller has its own counters; `shared`: one set for all of them. Default `each`. */
  per?: 'each' | 'shared';
  /** Requests in any 60 s. */
  requests_per_minute?: number;
  /** Tokens (input, cache and output) in any 60 s. */
  tokens_per_minute?: number;
  /** USD per calendar day (UTC). */
  cost_usd_per_day?: number;
  /** USD per calendar month (UTC). */
  cost_usd_per_month?: number;
  /** Record fields a host keeps with the limit (id, version, …) are ignored. */
  [field: string]: unknown;
}

/** A limit compiled for counting: its caps in counting units. */
export interface CompiledLimit {
  readonly slug: string;
  readonly per: 'each' | 'shared';
  readonly requestsPerMinute: number | undefined;
  readonly tokensPerMinute: number | undefined;
  /** Nano-dollars per UTC day. */
  readonly nanosPerDay: number | undefined;
  /** Nano-dollars per UTC month. */
  readonly nanosPerMonth: number | undefined;
}

/** One limit as it applies to one caller: the limit, and the id of the counters it counts on. */
export interface AppliedLimit {
  readonly limit: CompiledLimit;
  /** `<slug>` for a shared limit, `<slug>:<caller>` for `each`. */
  readonly counterId: string;
}

/** Largest cap of each kind: counters stay exact in a double (and in Redis's Lua numbers). */
export const MAX_REQUESTS_PER_MINUTE = 1_000_000;
export const MAX_TOKENS_PER_MINUTE = 1_000_000_000;
export const MAX_COST_USD = 1_000_000;

function whole(value: unknown, max: number, where: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > max)
    throw new TypeError(
      `${where} must be a whole number from 0 to ${max}, such as 60 (got ${String(value).slice(0, 32)}).`,
    );
  return value;
}

function dollars(value: unknown, where: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > MAX_COST_USD)
    throw new TypeError(
      `${where} must be a number of USD from 0 to ${MAX_COST_USD}, such as 25 (got ${String(value).slice(0, 32)}).`,
    );
  return Math.round(value * NANOS_PER_USD);
}

function names(value: unknown, where: string): readonly string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string' && v !== ''))
    throw new TypeError(`${where} must be a list of names, such as ["support"].`);
  return value as string[];
}

/** Checks one limit and compiles it; throws a TypeError naming the field. */
export function compileLimit(rule: LimitRule, where = `limits[${String(rule?.slug).slice(0, 64)}]`): CompiledLimit {
  if (typeof rule !== 'object' || rule === null) throw new TypeError(`${where} must be an object.`);
  if (typeof rule.slug !== 'string' || rule.slug === '')
    throw new TypeError(`${where}.slug must be a non-empty string.`);
  if (typeof rule.subjects !== 'object' || rule.subjects === null)
    throw new TypeError(`${where}.subjects must be an object such as { "groups": ["support"] }.`);
  rejectUnknownOptions(rule.subjects, ['users', 'groups', 'apiKeys'], `${where}.subjects`);
  for (const list of ['users', 'groups', 'apiKeys'] as const) names(rule.subjects[list], `${where}.subjects.${list}`);
  if (rule.per !== undefined && rule.per !== 'each' && rule.per !== 'shared')
    throw new TypeError(`${where}.per must be "each" or "shared".`);
  return {
    slug: rule.slug,
    per: rule.per ?? 'each',
    requestsPerMinute: whole(rule.requests_per_minute, MAX_REQUESTS_PER_MINUTE, `${where}.requests_per_minute`),
    tokensPerMinute: whole(rule.tokens_per_minute, MAX_TOKENS_PER_MINUTE, `${where}.tokens_per_minute`),
    nanosPerDay: dollars(rule.cost_usd_per_day, `${where}.cost_usd_per_day`),
    nanosPerMonth: dollars(rule.cost_usd_per_month, `${where}.cost_usd_per_month`),
  };
}

/**
 * The counter key of a caller under a limit of `per: "each"`: its user id, else its API key id
 * (`key:<id>`); undefined for a caller with neither (it is counted under the limit's shared set).
 */
export function callerCounterKey(caller: AccessCaller): string | undefined {
  if (caller.user !== undefined) return `user:${caller.user}`;
  if (caller.apiKey !== undefined) return `key:${caller.apiKey}`;
  return undefined;
}

/** Most callers whose applicable limits one {@link LimitSet} remembers. */
const CALLER_CACHE_SIZE = 10_000;

/**
 * Limits compiled into an index (built once per change, like an access snapshot): the limits naming
 * a caller are found by exact lookups of its user id, groups and API key id, as policies are.
 */
export class LimitSet {
  readonly limits: readonly CompiledLimit[];
  private readonly bySlug = new Map<string, CompiledLimit>();
  private readonly byUser = new Map<string, number[]>();
  private readonly byGroup = new Map<string, number[]>();
  private readonly byApiKey = new Map<string, number[]>();
  private readonly cache = new Map<string, readonly AppliedLimit[]>();

  /** Throws a TypeError naming the field of the first limit that is not valid, or a repeated slug. */
  constructor(rules: readonly LimitRule[]) {
    const compiled: CompiledLimit[] = [];
    rules.forEach((rule, index) => {
      const limit = compileLimit(rule, `limits[${typeof rule?.slug === 'string' ? rule.slug.slice(0, 64) : index}]`);
      if (this.bySlug.has(limit.slug)) throw new TypeError(`limits: two limits have the slug "${limit.slug}".`);
      this.bySlug.set(limit.slug, limit);
      compiled.push(limit);
      const add = (map: Map<string, number[]>, list: readonly string[] | undefined) => {
        for (const name of list ?? []) {
          const found = map.get(name);
          if (found === undefined) map.set(name, [index]);
          else if (found.at(-1) !== index) found.push(index);
        }
      };
      add(this.byUser, rule.subjects.users);
      add(this.byGroup, rule.subjects.groups);
      add(this.byApiKey, rule.subjects.apiKeys);
    });
    this.limits = compiled;
  }

  /** The limit named `slug`, or undefined. */
  get(slug: string): CompiledLimit | undefined {
    return this.bySlug.get(slug);
  }

  /** The limits naming `caller` (by user, group or API key) with the counters each counts on, remembered per caller. */
  applicable(caller: AccessCaller): readonly AppliedLimit[] {
    if (this.limits.length === 0) return [];
    const groups = caller.groups ?? [];
    const cacheKey = `${caller.user ?? ''}\u0000${caller.apiKey ?? ''}\u0000${groups.join('\u0000')}`;
    const cached = this.cache.get(cacheKey);
    if (cached !== undefined) return cached;
    const indexes = new Set<number>();
    const collect = (list: number[] | undefined) => list?.forEach((i) => indexes.add(i));
    if (caller.user !== undefined) collect(this.byUser.get(caller.user));
    if (caller.apiKey !== undefined) collect(this.byApiKey.get(caller.apiKey));
    for (const group of groups) collect(this.byGroup.get(group));
    const own = callerCounterKey(caller);
    const applied = [...indexes]
      .sort((a, b) => a - b)
      .map((i) => {
        const limit = this.limits[i] as CompiledLimit;
        return { limit, counterId: limitCounterId(limit, own) };
      });
    if (this.cache.size >= CALLER_CACHE_SIZE) this.cache.delete(this.cache.keys().next().value as string);
    this.cache.set(cacheKey, applied);
    return applied;
  }
}

/** The id of the counters `limit` keeps for the caller whose counter key is `callerKey`. */
export function limitCounterId(limit: CompiledLimit, callerKey: string | undefined): string {
  return limit.per === 'shared' || callerKey === undefined ? limit.slug : `${limit.slug}:${callerKey}`;
}

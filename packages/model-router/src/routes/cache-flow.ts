import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ProviderEntry } from '../core/catalog';
import type { CallerIdResolver } from '../core/caller';
import { answerTokens, isCacheableMessage, type CachedAnswer } from '../core/cache/answer';
import { cacheKey, callerScope, type CacheScope, type CallerIdentityLike } from '../core/cache/cache-key';
import type { ResponseCacheStore } from '../core/cache/store';
import { anthropicVersion, mergedBetas, readCacheRequest, type GatewayRequestConfig } from '../core/gateway-headers';
import { gatewayLocals } from './respond';

/** The response header that tells how the cache answered. */
export const CACHE_STATUS_HEADER = 'x-gateway-cache-status';

/** How the cache answered a request that asked for it. */
export type CacheStatus = 'HIT' | 'MISS' | 'REFRESH' | 'DISABLED';

/** Most bytes of one answer the gateway assembles to cache it: 8 MiB. A longer one is served, not stored. */
export const MAX_CACHED_ANSWER_BYTES = 8 * 1024 * 1024;

/** The response cache as the routes use it. */
export interface CacheContext {
  store: ResponseCacheStore;
  callerId: CallerIdResolver;
  /** Milliseconds since the epoch. */
  now: () => number;
}

/** A request that takes part in the cache: its key, and how old an answer it accepts. */
export interface CachePlan {
  key: string;
  /** Seconds: the oldest answer served, and how long a new one is kept. */
  maxAge: number;
  forceRefresh: boolean;
}

function setStatus(res: ServerResponse, status: CacheStatus): void {
  res.setHeader(CACHE_STATUS_HEADER, status);
  gatewayLocals(res).cacheStatus = status;
}

/**
 * The request's cache plan, or undefined when it does not take part: it asked for no cache (no
 * status header), the provider turned caching off (`DISABLED`), or the caller is unknown and the
 * provider's entries are not shared (`MISS`, nothing stored).
 */
export function planCache(
  cache: CacheContext,
  req: IncomingMessage,
  res: ServerResponse,
  config: GatewayRequestConfig,
  target: { route: string; provider: ProviderEntry; model: string; body: unknown },
): CachePlan | undefined {
  const request = readCacheRequest(req.headers, config);
  if (request === undefined) return undefined;
  const settings = target.provider.cache ?? { enabled: true, scope: 'caller' };
  if (!settings.enabled) {
    setStatus(res, 'DISABLED');
    return undefined;
  }
  const scope: CacheScope | undefined =
    settings.scope === 'shared'
      ? { kind: 'shared' }
      : callerScope((req as { callerIdentity?: CallerIdentityLike }).callerIdentity, cache.callerId(req));
  setStatus(res, request.forceRefresh ? 'REFRESH' : 'MISS');
  if (scope === undefined) return undefined;
  const key = cacheKey({
    route: target.route,
    provider: target.provider.slug,
    model: target.model,
    body: target.body,
    headers: { beta: mergedBetas(req.headers), version: anthropicVersion(req.headers) },
    scope,
  });
  return { key, maxAge: request.max_age, forceRefresh: request.forceRefresh };
}

/**
 * The cached answer of the plan, no older than its `max_age`, or undefined (then the request goes
 * to the provider). Marks the response `HIT`, counts the tokens the answer saved and names the
 * model that wrote it (its usage is not the request's: the provider was not called). A store that
 * fails is a miss.
 */
export async function lookUp(
  cache: CacheContext,
  plan: CachePlan,
  res: ServerResponse,
): Promise<CachedAnswer | undefined> {
  if (plan.forceRefresh) return undefined;
  let answer: CachedAnswer | undefined;
  try {
    answer = await cache.store.get(plan.key);
  } catch {
    return undefined;
  }
  if (!answer || !isCacheableMessage(answer.message)) return undefined;
  if (!(typeof answer.storedAt === 'number' && cache.now() - answer.storedAt <= plan.maxAge * 1000)) return undefined;
  setStatus(res, 'HIT');
  const locals = gatewayLocals(res);
  locals.cacheTokensSaved = answerTokens(answer.message);
  // The model that wrote the answer, for the request record; no usage: the provider was not called.
  const model = (answer.message as { model?: unknown }).model;
  if (typeof model === 'string') locals.responseModel = model.slice(0, 256);
  return answer;
}

/** Stores the provider's complete message under the plan's key, without waiting; a refusal or a partial answer is not stored. */
export function remember(cache: CacheContext, plan: CachePlan | undefined, message: unknown): void {
  if (plan === undefined || !isCacheableMessage(message)) return;
  cache.store.set(plan.key, { message, storedAt: cache.now() }, plan.maxAge).catch(() => undefined);
}

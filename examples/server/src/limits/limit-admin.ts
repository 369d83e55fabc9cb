import { Counter } from 'prom-client';
import { NANOS_PER_USD, limitCounterId, type CompiledLimit, type LimitCounterStore, type LimitKind } from '@gw/access';
import { LimitsUnavailableError, type CatalogDatabase } from '@gw/catalog';
import type { Registry } from 'prom-client';
import type { Logger } from 'pino';
import type { LimitsView } from './limit-step';

const usd = (nanos: number) => Math.round(nanos) / NANOS_PER_USD;

/**
 * `GET /admin/v1/limits/<slug>/status?user=<id>`: the limit's counters (for `per: "each"`, those of
 * the user, or of `apiKey=<id>`), with what is left of each cap. Undefined for an unknown limit.
 */
export async function limitStatus(
  view: LimitsView,
  counters: LimitCounterStore,
  slug: string,
  counterOf: { user?: string; apiKey?: string },
  now = Date.now(),
): Promise<unknown> {
  const limit: CompiledLimit | undefined = view.limits.get(slug);
  if (limit === undefined) return undefined;
  const callerKey =
    counterOf.user !== undefined
      ? `user:${counterOf.user}`
      : counterOf.apiKey !== undefined
        ? `key:${counterOf.apiKey}`
        : undefined;
  const counterId = limitCounterId(limit, callerKey);
  let status;
  try {
    status = await counters.status({ counterId, ...limit }, now);
  } catch {
    // The counters' store (Redis) is unreachable or too slow: worth a retry, not a fault of the gateway.
    throw new LimitsUnavailableError('The limit counters cannot be read now (their store is unreachable); try again.');
  }
  const answer: Record<string, unknown> = {
    object: 'limit_status',
    limit: slug,
    per: limit.per,
    counter: counterId === slug ? 'shared' : counterId.slice(slug.length + 1),
  };
  if (limit.requestsPerMinute !== undefined)
    answer.requests_per_minute = {
      limit: limit.requestsPerMinute,
      used: status.requestsLastMinute,
      remaining: Math.max(0, limit.requestsPerMinute - status.requestsLastMinute),
    };
  if (limit.tokensPerMinute !== undefined)
    answer.tokens_per_minute = {
      limit: limit.tokensPerMinute,
      used: status.tokensLastMinute,
      remaining: Math.max(0, limit.tokensPerMinute - status.tokensLastMinute),
    };
  if (limit.nanosPerDay !== undefined)
    answer.cost_usd_per_day = {
      limit: usd(limit.nanosPerDay),
      spent: usd(status.nanosToday),
      remaining: usd(Math.max(0, limit.nanosPerDay - status.nanosToday)),
    };
  if (limit.nanosPerMonth !== undefined)
    answer.cost_usd_per_month = {
      limit: usd(limit.nanosPerMonth),
      spent: usd(status.nanosThisMonth),
      remaining: usd(Math.max(0, limit.nanosPerMonth - status.nanosThisMonth)),
    };
  return answer;
}

/** The limits' metrics, on the gateway's registry. */
export function limitMetrics(registry: Registry) {
  const unavailable = new Counter({
    name: 'gateway_limits_store_unavailable_total',
    help: 'Requests that met an unreachable limit store, by outcome (allowed uncounted, or denied 503).',
    labelNames: ['outcome'],
    registers: [registry],
  });
  const refused = new Counter({
    name: 'gateway_limit_refusals_total',
    help: 'Requests refused by a limit, by the cap that refused them (requests, tokens, cost_per_day, cost_per_month).',
    labelNames: ['kind'],
    registers: [registry],
  });
  return {
    storeUnavailable: (outcome: 'allowed' | 'denied') => unavailable.inc({ outcome }),
    refused: (kind: LimitKind) => refused.inc({ kind }),
  };
}

/** Most budget exhaustions remembered, so each is audited once per counter and period by an instance. */
const MAX_REMEMBERED = 10_000;

/**
 * Writes an audit entry (`budget_exhausted`, kind `limits`, the limit's slug, the counter and the
 * period) the first time a budget refuses a request of a counter in a day or month, without
 * waiting; a failed write is logged.
 */
export function budgetAudit(db: CatalogDatabase | undefined, logger: Logger) {
  const seen = new Set<string>();
  return (event: { counterId: string; kind: LimitKind }, now = Date.now()) => {
    const period = new Date(now).toISOString().slice(0, event.kind === 'cost_per_day' ? 10 : 7);
    const key = `${event.counterId}\u0000${event.kind}\u0000${period}`;
    if (seen.has(key)) return;
    if (seen.size >= MAX_REMEMBERED) seen.delete(seen.values().next().value as string);
    seen.add(key);
    const slug = event.counterId.split(':')[0] ?? event.counterId;
    logger.warn({ limit: slug, counter: event.counterId, kind: event.kind, period }, 'a budget is exhausted');
    if (db === undefined) return;
    db.query('INSERT INTO gw_audit (actor, action, kind, slug, fields) VALUES ($1, $2, $3, $4, $5)', [
      'gateway',
      'budget_exhausted',
      'limits',
      slug,
      JSON.stringify([`counter=${event.counterId.slice(0, 300)}`, `cap=${event.kind}`, `period=${period}`]),
    ]).catch((error: unknown) =>
      logger.warn(
        { err: { message: String((error as Error)?.message ?? error).slice(0, 200) } },
        'a budget exhaustion was not written to the audit log',
      ),
    );
  };
}

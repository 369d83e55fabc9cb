import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  HIGHEST_BUNDLED_PRICE,
  LimitSet,
  NANOS_PER_USD,
  costNanos,
  estimateInputTokens,
  priceOf,
  worstCaseNanos,
  type AccessCaller,
  type LimitRule,
  type LimitTicket,
  type Limiter,
  type ModelPrice,
  type PricingTable,
  type TokenUsage,
} from '@gw/access';
import type { CatalogSnapshot } from '@gw/catalog';
import { anthropicModelOf, type ModelAdmission } from '@gw/model-router';
import type { Logger } from 'pino';
import type { GatewayConfig } from '../config/schema';
import { requestState } from '../http/request-context';
import type { RequestRecord } from '../observability/request-record';

/** The limits and prices as the request path reads them: built whole on every catalog change. */
export interface LimitsView {
  readonly limits: LimitSet;
  /** Each model provider's `pricing`, by slug. */
  readonly pricing: ReadonlyMap<string, PricingTable>;
}

/**
 * The limits of the config file and the catalog's database (a database limit whose slug the config
 * file also defines is skipped, as is one that is not valid; each is logged), and each provider's
 * `pricing`.
 */
export function buildLimitsView(
  config: GatewayConfig,
  snapshot: CatalogSnapshot | undefined,
  logger?: Logger,
): LimitsView {
  const rules: LimitRule[] = [...((config.limits ?? []) as LimitRule[])];
  const slugs = new Set(rules.map((r) => r.slug));
  for (const record of snapshot?.records.get('limits')?.values() ?? []) {
    const rule = record.data as unknown as LimitRule;
    if (slugs.has(record.slug)) {
      logger?.error(
        { record: `limits/${record.slug}` },
        `catalog record limits/${record.slug} is not served: the config file defines the same slug`,
      );
      continue;
    }
    try {
      new LimitSet([rule]);
    } catch (error) {
      logger?.error(
        { record: `limits/${record.slug}` },
        `catalog record limits/${record.slug} is not served: ${(error as Error).message}`,
      );
      continue;
    }
    rules.push(rule);
    slugs.add(record.slug);
  }
  const pricing = new Map<string, PricingTable>();
  const configProviders = new Set<string>();
  for (const provider of config.providers ?? []) {
    configProviders.add(provider.slug);
    if (provider.provider === 'anthropic' && provider.pricing) pricing.set(provider.slug, provider.pricing);
  }
  for (const record of snapshot?.records.get('providers')?.values() ?? []) {
    const own = (record.data as { pricing?: PricingTable }).pricing;
    if (!configProviders.has(record.slug) && typeof own === 'object' && own !== null) pricing.set(record.slug, own);
  }
  return { limits: new LimitSet(rules), pricing };
}

/** Options of {@link limitStep}. */
export interface LimitStepOptions {
  /** The limits of the moment (the in-memory snapshot: the request path never waits on the database). */
  view: () => LimitsView;
  /** Reserves and settles on the counters. */
  limiter: Limiter;
  /** The caller of an authenticated request as limits match it (user, groups, API key id), as policies do. */
  callerOf: (req: IncomingMessage) => AccessCaller | undefined;
}

const count = (value: number | null | undefined): number =>
  typeof value === 'number' && Number.isSafeInteger(value) && value > 0 ? value : 0;

/** All tokens of a usage: input, cache write, cache read and output. */
export function usageTokens(usage: TokenUsage): number {
  return (
    count(usage.inputTokens) +
    count(usage.outputTokens) +
    count(usage.cacheCreationTokens) +
    count(usage.cacheReadTokens)
  );
}

/** A model call's largest use: what an answer that did not end normally is settled and priced at. */
export interface LargestUse {
  tokens: number;
  nanos: number;
  /** Whether the model's price is known (else the cost is recorded as null). */
  priced: boolean;
}

/** Most model ids whose price one provider's table remembers (model ids come from callers). */
const MAX_REMEMBERED_PRICES = 256;
/** Longest model id whose price is remembered (a longer one is looked up each time). */
const MAX_REMEMBERED_MODEL_LENGTH = 256;
/** The key of the bundled table in {@link limitStep}'s remembered prices (a provider without `pricing`). */
const BUNDLED_ONLY: PricingTable = Object.freeze({});

/**
 * Prices by provider table and model id, so that a request does not look its model up (a regular
 * expression) twice: `price(model, pricing)` answers `priceOf(model, pricing)`. A table remembers
 * at most {@link MAX_REMEMBERED_PRICES} ids (past it, its entries are cleared) and none longer than
 * {@link MAX_REMEMBERED_MODEL_LENGTH} (model ids come from callers). A new view brings new tables
 * (catalog records are replaced, never changed in place): the old ones' entries go with them.
 * `remembered(pricing)` says how many ids a table holds.
 */
export function priceMemo() {
  const prices = new WeakMap<PricingTable, Map<string, ModelPrice | undefined>>();
  const price = (model: string, pricing: PricingTable | undefined): ModelPrice | undefined => {
    const table = pricing ?? BUNDLED_ONLY;
    let known = prices.get(table);
    if (known === undefined) {
      known = new Map();
      prices.set(table, known);
    }
    const remembered = known.get(model);
    if (remembered !== undefined || known.has(model)) return remembered;
    // A Bedrock model id or inference profile id is priced as the Anthropic model it names.
    const found = priceOf(model, pricing) ?? priceOf(anthropicModelOf(model) ?? model, pricing);
    if (model.length > MAX_REMEMBERED_MODEL_LENGTH) return found;
    if (known.size >= MAX_REMEMBERED_PRICES) known.clear();
    known.set(model, found);
    return found;
  };
  return Object.assign(price, {
    remembered: (pricing: PricingTable | undefined): number => prices.get(pricing ?? BUNDLED_ONLY)?.size ?? 0,
  });
}

/**
 * The cross-cutting limits step of the route table: `admitModelCall` reserves a model call's
 * largest possible use (before the cache and the provider); `admitRequest` reserves requests
 * (MCP `tools/call`: one per call, a batch counts each); `onRecord`, run once on every finished request's record, sets its `costUsd`
 * from its usage and settles the request's reservation to it (exactly once: the record is made
 * once per response, whether the answer ended, the stream was cut, or the client went away; an
 * answer without its final usage counts at its largest cost).
 */
export function limitStep(options: LimitStepOptions) {
  const tickets = new WeakMap<IncomingMessage, LimitTicket>();
  /** Requests whose reservation is being made (only while a limit applies). */
  const admitting = new WeakSet<IncomingMessage>();
  /** Requests whose record was made while their reservation was being made: the ticket is settled at once. */
  const recorded = new WeakMap<IncomingMessage, { tokens: number; nanos: number }>();
  const price = priceMemo();
  const hold = (req: IncomingMessage, res: ServerResponse, ticket: LimitTicket) => {
    const settled = recorded.get(req);
    // The client went away while the reservation was being made: settled as the record says.
    if (settled !== undefined) {
      void ticket.settle(settled);
      return;
    }
    for (const name in ticket.headers) res.setHeader(name, ticket.headers[name] as string);
    tickets.set(req, ticket);
  };
  const admitModelCall: ModelAdmission = async (req, res, call) => {
    if (tickets.has(req)) return;
    const view = options.view();
    const known = price(call.model, view.pricing.get(call.provider));
    const input = call.route === 'count_tokens' ? 0 : estimateInputTokens(call.bodyBytes);
    const maxTokens = Math.max(0, call.maxTokens);
    const largest: LargestUse = {
      tokens: input + maxTokens,
      nanos: call.route === 'count_tokens' ? 0 : worstCaseNanos(input, maxTokens, known),
      priced: known !== undefined,
    };
    // Kept with the request's own state (no weak map to grow and sweep on every request).
    requestState(req).largestUse = largest;
    // No limit at all: nothing to reserve (the caller is not even looked at).
    if (view.limits.limits.length === 0) return;
    const caller = options.callerOf(req);
    if (caller === undefined) return;
    const limits = view.limits.applicable(caller);
    if (limits.length === 0) return;
    admitting.add(req);
    let ticket: LimitTicket;
    try {
      ticket = await options.limiter.admit(limits, {
        countsRequest: true,
        tokens: largest.tokens,
        nanos: largest.nanos,
      });
    } finally {
      admitting.delete(req);
    }
    hold(req, res, ticket);
  };
  const admitRequest = async (req: IncomingMessage, res: ServerResponse, requests = 1): Promise<void> => {
    const view = options.view();
    if (view.limits.limits.length === 0 || tickets.has(req)) return;
    const caller = options.callerOf(req);
    if (caller === undefined) return;
    const limits = view.limits.applicable(caller);
    if (limits.length === 0) return;
    admitting.add(req);
    let ticket: LimitTicket;
    try {
      ticket = await options.limiter.admit(limits, { countsRequest: true, requests, tokens: 0, nanos: 0 });
    } finally {
      admitting.delete(req);
    }
    hold(req, res, ticket);
  };
  /**
   * The admission of a POST's MCP `tools/call`s (given their number) of this caller, or undefined
   * when no limit applies (its body is then not read for it).
   */
  const toolCallAdmission = (
    req: IncomingMessage,
    res: ServerResponse,
  ): ((toolCalls: number) => Promise<void>) | undefined => {
    const view = options.view();
    if (view.limits.limits.length === 0) return undefined;
    const caller = options.callerOf(req);
    if (caller === undefined || view.limits.applicable(caller).length === 0) return undefined;
    return (toolCalls) => admitRequest(req, res, toolCalls);
  };
  const onRecord = (req: IncomingMessage, record: RequestRecord, completed: boolean): void => {
    const usage: TokenUsage = record;
    let tokens = usageTokens(usage);
    const model = record.modelAnswered ?? record.modelRequested;
    const pricing = record.provider === null ? undefined : options.view().pricing.get(record.provider);
    const known = model === null ? undefined : price(model, pricing);
    // A model of unknown price is settled at the highest bundled price (fail closed), and recorded as null.
    let nanos = tokens === 0 ? 0 : costNanos(usage, known ?? HIGHEST_BUNDLED_PRICE);
    let priced = known !== undefined;
    const call = requestState(req).largestUse;
    // An answer that did not end normally (the client went away before it was sent whole; a
    // stream cut after its headers: an error code on a success status) has no final usage: the
    // provider may have generated up to max_tokens, so it counts at its largest cost (fail closed).
    if (call !== undefined && (!completed || (record.status < 400 && record.errorCode !== null))) {
      tokens = Math.max(tokens, call.tokens);
      nanos = Math.max(nanos, call.nanos);
      priced = call.priced;
    }
    record.costUsd = nanos === 0 ? 0 : priced ? nanos / NANOS_PER_USD : null;
    const ticket = tickets.get(req);
    if (ticket !== undefined) void ticket.settle({ tokens, nanos });
    // Without a reservation under way, no ticket can come after the record: nothing to remember.
    else if (admitting.has(req)) recorded.set(req, { tokens, nanos });
  };
  return { admitModelCall, admitRequest, toolCallAdmission, onRecord };
}

/** The limits step as a route group declares it (see `RouteGroup.limits`). */
export type RouteLimits = ReturnType<typeof limitStep>;

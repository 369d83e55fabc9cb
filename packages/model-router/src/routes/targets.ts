import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import {
  checkModelAccess,
  resolveModel,
  splitModel,
  type Catalog,
  type ModelAuthorizer,
  type ProviderEntry,
} from '../core/catalog';
import { AccessDeniedError, UpstreamTimeoutError, UpstreamUnreachableError } from '../core/errors';
import {
  gatewayHeader,
  readGatewayConfig,
  type GatewayRequestConfig,
  type NamedConfigResolver,
} from '../core/gateway-headers';
import { chooseByWeight, type RoutingGroup, type RoutingTarget } from '../core/routing-config';
import { gatewayLocals, type GatewayAttempt } from './respond';

/** Named configs (CONTRACT section 17): looked up by the slug `x-gateway-config` gives, or the caller's default. */
export interface NamedConfigs {
  /** The `config` object of the named config `slug`, or undefined. Must not wait. */
  resolve: NamedConfigResolver;
  /** The slug of the caller's default config (an API key's `config`), or undefined. Must not wait. Default: none. */
  defaultSlug?: (req: IncomingMessage) => string | undefined;
}

/** What routing across targets needs of the route's context. */
export interface TargetContext {
  catalog: Catalog;
  authorize?: ModelAuthorizer;
  /** Named configs. Default: none (`x-gateway-config` must be JSON). */
  configs?: NamedConfigs;
  /** The load balancer's random numbers in [0, 1). */
  random: () => number;
}

/** One attempt's model call, resolved from its target (or from the request alone, without targets). */
export interface ResolvedAttempt {
  provider: ProviderEntry;
  model: string;
  /** The route's body with the target's `override_params` applied (the body itself without them). */
  body: unknown;
  /** The target's `retry`, `request_timeout` and `cache` (the request's config without targets). */
  config: GatewayRequestConfig;
  /** The target's dotted index; undefined without targets. */
  index?: string;
}

/** How a route makes one attempt. */
export interface AttemptSteps<P> {
  /** Turns a resolved attempt into the route's upstream request; throws for a request the route refuses. */
  prepare(attempt: ResolvedAttempt): P | Promise<P>;
  /**
   * Runs once, before the first provider call: admission (limits) and the response cache, for the
   * first target tried. True when it answered the request (from the cache).
   */
  begin(prepared: P, attempt: ResolvedAttempt): Promise<boolean>;
  /** Calls the provider (with the attempt's retries). */
  call(prepared: P, attempt: ResolvedAttempt): Promise<Dispatcher.ResponseData>;
}

/** The attempt that gives the answer: its response may be an error (every target failed, or one that does not fall back). */
export interface AnsweringAttempt<P> {
  prepared: P;
  attempt: ResolvedAttempt;
  response: Dispatcher.ResponseData;
}

/** The request's `x-gateway-config`, its named config, or its caller's default config. */
export function requestConfig(context: TargetContext, req: IncomingMessage): GatewayRequestConfig {
  const configs = context.configs;
  if (configs === undefined) return readGatewayConfig(req.headers);
  return readGatewayConfig(req.headers, configs.resolve, configs.defaultSlug?.(req));
}

type Outcome<P> =
  | { kind: 'skipped' }
  | { kind: 'cached' }
  | {
      kind: 'response';
      prepared: P;
      attempt: ResolvedAttempt;
      response: Dispatcher.ResponseData;
      record: GatewayAttempt;
    }
  | { kind: 'error'; error: Error & { status: number } };

const SKIPPED = { kind: 'skipped' } as const;
const CACHED = { kind: 'cached' } as const;

/** An outcome the client should not get while another target may answer. */
function isFailure<P>(outcome: Outcome<P>): boolean {
  return outcome.kind === 'error' || (outcome.kind === 'response' && outcome.response.statusCode >= 400);
}

/** Whether a failed attempt makes a `fallback` group try its next target: an unreachable or silent provider always does. */
function fallsBack<P>(outcome: Outcome<P>, statuses: readonly number[]): boolean {
  if (outcome.kind === 'error') return true;
  return outcome.kind === 'response' && statuses.includes(outcome.response.statusCode);
}

/** Lets go of a failed attempt that another replaces: its body is dropped. */
function discard<P>(outcome: Outcome<P>): void {
  if (outcome.kind === 'response') outcome.response.body.dump().catch(() => undefined);
}

/**
 * Runs a model route's provider call across the config's targets (CONTRACT section 17), or once
 * for a request without targets. Returns the answering attempt, or undefined when `begin` answered
 * from the cache. Throws the last attempt's error when it was thrown (unreachable, timed out) and
 * `403 access_denied` when the caller may use none of the targets.
 */
export async function runAcrossTargets<P>(
  context: TargetContext,
  req: IncomingMessage,
  res: ServerResponse,
  body: unknown,
  config: GatewayRequestConfig,
  steps: AttemptSteps<P>,
): Promise<AnsweringAttempt<P> | undefined> {
  const locals = gatewayLocals(res);
  const headerProvider = gatewayHeader(req.headers, 'provider') ?? config.provider;
  const tree = config.targets;
  if (tree === undefined) {
    const { provider, model } = resolveModel(context.catalog, modelOf(body), headerProvider, locals);
    checkModelAccess(context.authorize, req, { provider: provider.slug, model });
    const attempt: ResolvedAttempt = { provider, model, body, config };
    const prepared = await steps.prepare(attempt);
    if (await steps.begin(prepared, attempt)) return undefined;
    return { prepared, attempt, response: await steps.call(prepared, attempt) };
  }

  const attempts: GatewayAttempt[] = (locals.attempts = []);
  /** The attempt named on the answer before `begin` (the first tried): named again only if another answers. */
  let named: ResolvedAttempt | undefined;
  const attemptTarget = async (target: RoutingTarget): Promise<Outcome<P>> => {
    const targetBody =
      target.overrideParams === undefined || !isObject(body) ? body : { ...body, ...target.overrideParams };
    const bodyModel = modelOf(targetBody);
    // A target that names its provider takes the model alone (a body's `@slug/` is the request's own choice).
    const resolved =
      target.provider !== undefined
        ? resolveModel(
            context.catalog,
            typeof bodyModel === 'string' ? splitModel(bodyModel).model : bodyModel,
            target.provider,
            locals,
          )
        : resolveModel(context.catalog, bodyModel, headerProvider, locals);
    const { provider, model } = resolved;
    if (context.authorize !== undefined && context.authorize(req, { provider: provider.slug, model }) !== true)
      return SKIPPED;
    const attempt: ResolvedAttempt = { provider, model, body: targetBody, config: target.config, index: target.index };
    const prepared = await steps.prepare(attempt);
    if (named === undefined) {
      named = attempt;
      // A cached answer is the first target's: named before `begin` may send it.
      answeredBy(res, attempt);
      if (await steps.begin(prepared, attempt)) return CACHED;
    }
    const started = performance.now();
    try {
      const response = await steps.call(prepared, attempt);
      const record: GatewayAttempt = {
        index: target.index,
        provider: provider.slug,
        model,
        status: response.statusCode,
        ms: round(performance.now() - started),
      };
      attempts.push(record);
      return { kind: 'response', prepared, attempt, response, record };
    } catch (error) {
      if (!(error instanceof UpstreamUnreachableError || error instanceof UpstreamTimeoutError)) throw error;
      attempts.push({
        index: target.index,
        provider: provider.slug,
        model,
        status: error.status,
        ms: round(performance.now() - started),
        error: error.code,
      });
      return { kind: 'error', error };
    }
  };

  const runNode = (node: RoutingGroup | RoutingTarget): Promise<Outcome<P>> =>
    node.kind === 'target' ? attemptTarget(node) : runGroup(node);

  const runGroup = async (group: RoutingGroup): Promise<Outcome<P>> => {
    if (group.mode === 'single') return runNode(group.targets[0] as RoutingGroup | RoutingTarget);
    if (group.mode === 'loadbalance') {
      // One target chosen by weight; a choice the caller may not use is set aside and another chosen.
      let candidates = group.targets.map((_, at) => at);
      while (candidates.length > 0) {
        const at = chooseByWeight(group, candidates, context.random);
        if (at === undefined) break;
        const outcome = await runNode(group.targets[at] as RoutingGroup | RoutingTarget);
        if (outcome.kind !== 'skipped') return outcome;
        candidates = candidates.filter((candidate) => candidate !== at);
      }
      return SKIPPED;
    }
    let result: Outcome<P> = SKIPPED;
    for (const child of group.targets) {
      const outcome = await runNode(child);
      if (outcome.kind === 'skipped') continue;
      if (isFailure(result)) discard(result);
      result = outcome;
      if (!isFailure(outcome) || !fallsBack(outcome, group.onStatusCodes)) return outcome;
    }
    return result;
  };

  const outcome = await runGroup(tree);
  if (outcome.kind === 'cached') return undefined;
  if (outcome.kind === 'skipped')
    throw new AccessDeniedError('The caller may use none of the targets of this config.', { param: 'model' });
  if (outcome.kind === 'error') throw outcome.error;
  // The first target's answer was named before it was asked (the headers are not set twice).
  if (outcome.attempt !== named) answeredBy(res, outcome.attempt);
  outcome.record.answered = true;
  locals.answeredIndex = outcome.attempt.index;
  return outcome;
}

/** Names the answering target on the answer (`x-gateway-last-used-option-index`, `x-gateway-provider-used`). */
function answeredBy(res: ServerResponse, attempt: ResolvedAttempt): void {
  if (attempt.index !== undefined) res.setHeader('x-gateway-last-used-option-index', attempt.index);
  res.setHeader('x-gateway-provider-used', attempt.provider.slug);
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The body's `model`, whatever the body is. */
const modelOf = (body: unknown): unknown => (isObject(body) ? body.model : undefined);

const round = (ms: number): number => Math.round(ms * 100) / 100;

import type { IncomingMessage, ServerResponse } from 'node:http';
import { AccessDeniedError, ModelNotEnabledError, ProviderRequiredError, UnknownProviderError } from './errors';
import { KNOWN_ANTHROPIC_MODELS } from './known-models';
import { rejectUnknownOptions } from '@gw/options';
import { ProviderKey } from './secret';
import { bedrockRuntimeOf, type BedrockRuntime } from '../providers/bedrock/runtime';
import { KNOWN_BEDROCK_ANTHROPIC_MODELS } from '../providers/bedrock/model-ids';

/** Which models a provider integration serves. */
export type ModelSelection =
  | { mode: 'all' }
  | {
      mode: 'custom';
      /** The enabled model ids, such as `["claude-sonnet-4-5"]`. Required. */
      models: readonly string[];
      /** Whether a model the gateway does not know yet is enabled too. Default false. */
      autoEnableNew?: boolean;
    };

/** The provider kinds whose models `modelRouter` serves (a folder under `providers/`). */
export type ModelProviderKind = 'anthropic';

/** A model provider of the config's `providers` (`provider: "anthropic"`). */
export interface AnthropicProviderConfig {
  /** Referenced as `@<slug>/<model>`: letters, digits, `.`, `_` or `-`, at most 64, without `@`. Required. */
  slug: string;
  /** Display name. Default: the slug. */
  name?: string;
  /** The provider kind. Required. */
  provider: ModelProviderKind;
  /** The provider's API key, sent upstream as `x-api-key`. Required (non-empty). */
  apiKey: string;
  /** Base URL of the provider's API (http or https). Default `https://api.anthropic.com`. */
  baseUrl?: string;
  /** Which models the provider serves. Default `{ mode: "all" }`. */
  models?: ModelSelection;
  /** `max_tokens` for requests that send none. Default: none (such requests get `400 max_tokens_required`). */
  defaultMaxTokens?: number;
  /**
   * The provider's models when a custom selection was saved: with `autoEnableNew`, a model outside
   * this list is new and enabled. Default: the gateway's bundled list of the provider's models.
   */
  knownModels?: readonly string[];
  /** The response cache for this provider's answers. Default `{ enabled: true, scope: "caller" }`. */
  cache?: ProviderCacheSettings;
  /**
   * Prices per model id, USD per million `input`, `output`, `cacheWrite` and `cacheRead` tokens,
   * overriding the gateway's bundled table (read by the host's cost and limits; the router passes
   * it on untouched). Default: none.
   */
  pricing?: Readonly<Record<string, { input: number; output: number; cacheWrite?: number; cacheRead?: number }>>;
}

/**
 * An AWS integration in the config's `providers` (`provider: "bedrock"`): its knowledge-base calls
 * are served by `@gw/sigv4-proxy` (whose `AwsIntegration` validates it), and `modelRouter` serves
 * Anthropic's models through its Bedrock Runtime (`@<slug>/<Bedrock model id>`).
 */
export interface BedrockProviderConfig {
  /** Referenced as `@<slug>` in `x-gateway-provider`. Required. */
  slug: string;
  /** Display name. Default: the slug. */
  name?: string;
  /** The provider kind. Required. */
  provider: 'bedrock';
  /** AWS access key id. Required. */
  accessKeyId: string;
  /** AWS secret access key. Required. */
  secretAccessKey: string;
  /** Session token of temporary credentials. Default: none. */
  sessionToken?: string;
  /** Signing region, for example `us-east-1`. Required. */
  region: string;
  /** Extra exact origins requests may go to. Default `[]`. */
  allowedHosts?: readonly string[];
  /** Which models the integration serves. Default `{ mode: "all" }`. */
  models?: ModelSelection;
  /**
   * The integration's models when a custom selection was saved: with `autoEnableNew`, a model
   * outside this list is new and enabled. Default: the gateway's bundled list of Anthropic's models
   * on Bedrock.
   */
  knownModels?: readonly string[];
}

/** A provider of the config's `providers`, by its `provider` kind. */
export type ModelProviderConfig = AnthropicProviderConfig | BedrockProviderConfig;

/** A provider's response cache settings. */
export interface ProviderCacheSettings {
  /** `false` answers every request that asks for the cache with `x-gateway-cache-status: DISABLED`. Default true. */
  enabled?: boolean;
  /**
   * `caller`: each caller (API key user, or token issuer + subject) has entries of its own;
   * `shared`: every caller of the provider receives the same cached answers. Default `caller`.
   */
  scope?: 'caller' | 'shared';
}

/** A provider as the router uses it. */
export interface ProviderEntry {
  slug: string;
  name: string;
  /** The provider kind, a folder under `providers/` (`anthropic`, or `bedrock` for Anthropic's models on Bedrock Runtime). */
  provider: string;
  /** The API key (empty for a `bedrock` provider, which signs with {@link ProviderEntry.bedrock}). */
  apiKey: ProviderKey;
  /** Base URL of the provider's API. Default per provider. */
  baseUrl: string | undefined;
  models: ModelSelection;
  /** `max_tokens` for requests that send none; undefined when they are refused. */
  defaultMaxTokens?: number;
  /** The models known when a custom selection was saved; undefined means the bundled list. */
  knownModels?: ReadonlySet<string>;
  /** The response cache settings, defaults applied. Absent means the defaults. */
  cache?: Required<ProviderCacheSettings>;
  /** A `bedrock` provider's runtime: where its calls go and its signer. Absent for other kinds. */
  bedrock?: BedrockRuntime;
}

/** Where providers come from: the config, or a host's own store. */
export interface Catalog {
  /** The provider with this slug, or undefined. */
  resolveProvider(slug: string): ProviderEntry | undefined;
  /** Every provider, for `GET /v1/models`. */
  listProviders(): readonly ProviderEntry[];
  /**
   * The provider's own model list as known now (from its `GET /v1/models`), never waiting.
   * Default: the gateway's bundled list of the provider's models.
   */
  modelsOf?(provider: ProviderEntry): readonly string[] | undefined;
}

/**
 * An in-memory catalog built from the config's `providers`. A `bedrock` provider is validated as
 * `@gw/sigv4-proxy` validates it and serves Anthropic's models through Bedrock Runtime.
 */
export function createInMemoryCatalog(
  providers: readonly ModelProviderConfig[],
  modelProviders: readonly string[] = ['anthropic'],
): Catalog {
  const entries = new Map<string, ProviderEntry>();
  for (const config of providers) {
    if (typeof config !== 'object' || config === null) throw new TypeError('Each provider must be an object.');
    const where = `providers[${String(config.slug).slice(0, 64)}]`;
    if (config.provider === 'bedrock') {
      const entry = bedrockEntry(config, where);
      if (entries.has(entry.slug)) throw new TypeError(`providers has two entries with the slug "${entry.slug}".`);
      entries.set(entry.slug, entry);
      continue;
    }
    if (!modelProviders.includes(config.provider)) {
      throw new TypeError(
        `${where}.provider must be ${modelProviders.map((p) => `"${p}"`).join(' or ')} (or "bedrock", served by @gw/sigv4-proxy); got "${String(config.provider).slice(0, 32)}".`,
      );
    }
    rejectUnknownOptions(
      config,
      [
        'slug',
        'name',
        'provider',
        'apiKey',
        'baseUrl',
        'models',
        'defaultMaxTokens',
        'knownModels',
        'cache',
        'pricing',
      ],
      where,
    );
    if (typeof config.slug !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(config.slug)) {
      throw new TypeError(`${where}.slug must be letters, digits, ".", "_" or "-" (at most 64), without "@".`);
    }
    if (config.baseUrl !== undefined && !isHttpUrl(config.baseUrl)) {
      throw new TypeError(`${where}.baseUrl must be an http(s) URL such as "https://api.anthropic.com".`);
    }
    if (config.name !== undefined && (typeof config.name !== 'string' || config.name === '')) {
      throw new TypeError(`${where}.name must be a non-empty string (the display name).`);
    }
    checkModelSelection(config.models, where);
    if (
      config.knownModels !== undefined &&
      (!Array.isArray(config.knownModels) || config.knownModels.some((m) => typeof m !== 'string'))
    ) {
      throw new TypeError(`${where}.knownModels must be a list of model ids such as ["claude-sonnet-4-5"].`);
    }
    if (typeof config.apiKey !== 'string' || config.apiKey === '')
      throw new TypeError(`providers[${config.slug}].apiKey must be a non-empty string.`);
    if (entries.has(config.slug)) throw new TypeError(`providers has two entries with the slug "${config.slug}".`);
    const defaultMaxTokens = config.defaultMaxTokens;
    if (defaultMaxTokens !== undefined && !(Number.isInteger(defaultMaxTokens) && defaultMaxTokens > 0)) {
      throw new TypeError(`providers[${config.slug}].defaultMaxTokens must be a positive whole number of tokens.`);
    }
    const cache = checkCacheSettings(config.cache, where);
    entries.set(config.slug, {
      slug: config.slug,
      name: config.name ?? config.slug,
      provider: config.provider,
      apiKey: new ProviderKey(config.apiKey),
      baseUrl: config.baseUrl,
      models: config.models ?? { mode: 'all' },
      defaultMaxTokens,
      knownModels: config.knownModels ? new Set(config.knownModels) : undefined,
      cache,
    });
  }
  const list = [...entries.values()];
  return { resolveProvider: (slug) => entries.get(slug), listProviders: () => list };
}

/** A `bedrock` provider as the router uses it: the integration checked by `@gw/sigv4-proxy`, its models checked here. */
function bedrockEntry(config: BedrockProviderConfig, where: string): ProviderEntry {
  const { knownModels, ...integration } = config;
  const runtime = bedrockRuntimeOf(integration);
  checkModelSelection(config.models, where);
  if (knownModels !== undefined && (!Array.isArray(knownModels) || knownModels.some((m) => typeof m !== 'string'))) {
    throw new TypeError(
      `${where}.knownModels must be a list of model ids such as ["us.anthropic.claude-sonnet-4-5-20250929-v1:0"].`,
    );
  }
  return {
    slug: config.slug,
    name: config.name ?? config.slug,
    provider: 'bedrock',
    apiKey: new ProviderKey(''),
    baseUrl: undefined,
    models: config.models ?? { mode: 'all' },
    knownModels: knownModels ? new Set(knownModels) : undefined,
    cache: { enabled: true, scope: 'caller' },
    bedrock: runtime,
  };
}

/** The gateway's bundled list of a provider kind's models. */
export function bundledModelsOf(provider: Pick<ProviderEntry, 'provider'>): readonly string[] {
  return provider.provider === 'bedrock' ? KNOWN_BEDROCK_ANTHROPIC_MODELS : KNOWN_ANTHROPIC_MODELS;
}

function isHttpUrl(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  try {
    const url = new URL(value);
    return url.protocol === 'https:' || url.protocol === 'http:';
  } catch {
    return false;
  }
}

function checkCacheSettings(cache: unknown, where: string): Required<ProviderCacheSettings> {
  if (cache === undefined) return { enabled: true, scope: 'caller' };
  if (typeof cache !== 'object' || cache === null || Array.isArray(cache)) {
    throw new TypeError(`${where}.cache must be { enabled?: boolean, scope?: "caller" | "shared" }.`);
  }
  rejectUnknownOptions(cache, ['enabled', 'scope'], `${where}.cache`);
  const { enabled, scope } = cache as ProviderCacheSettings;
  if (enabled !== undefined && typeof enabled !== 'boolean')
    throw new TypeError(`${where}.cache.enabled must be true or false.`);
  if (scope !== undefined && scope !== 'caller' && scope !== 'shared') {
    throw new TypeError(`${where}.cache.scope must be "caller" or "shared".`);
  }
  return { enabled: enabled ?? true, scope: scope ?? 'caller' };
}

function checkModelSelection(models: unknown, where: string): void {
  if (models === undefined) return;
  const selection = models as { mode?: unknown; models?: unknown; autoEnableNew?: unknown };
  if (typeof models !== 'object' || models === null || (selection.mode !== 'all' && selection.mode !== 'custom')) {
    throw new TypeError(
      `${where}.models must be { mode: "all" } or { mode: "custom", models: [...], autoEnableNew?: boolean }.`,
    );
  }
  rejectUnknownOptions(
    models,
    selection.mode === 'all' ? ['mode'] : ['mode', 'models', 'autoEnableNew'],
    `${where}.models`,
  );
  if (selection.mode === 'custom') {
    if (!Array.isArray(selection.models) || selection.models.some((m) => typeof m !== 'string' || m === '')) {
      throw new TypeError(`${where}.models.models must be a list of model ids such as ["claude-sonnet-4-5"].`);
    }
    if (selection.autoEnableNew !== undefined && typeof selection.autoEnableNew !== 'boolean') {
      throw new TypeError(`${where}.models.autoEnableNew must be true or false.`);
    }
  }
}

/** Splits `@slug/model` into its parts; other models have no slug. */
export function splitModel(model: string): { slug?: string; model: string } {
  if (!model.startsWith('@')) return { model };
  const slash = model.indexOf('/');
  if (slash === -1) return { slug: model.slice(1), model: '' };
  return { slug: model.slice(1, slash), model: model.slice(slash + 1) };
}

/**
 * Resolves the provider of a request: the body model's `@slug/` prefix wins, then the
 * `x-gateway-provider` header (or its alias, or `provider` in `x-gateway-config`).
 */
export function resolveModel(
  catalog: Catalog,
  bodyModel: unknown,
  headerProvider: string | undefined,
  record?: { target?: string; requestModel?: string },
) {
  const split = typeof bodyModel === 'string' ? splitModel(bodyModel) : { model: '' };
  // A target's or header's provider may be written `@slug`: sliced, not matched (this runs on every request).
  const slug = split.slug ?? (headerProvider?.startsWith('@') === true ? headerProvider.slice(1) : headerProvider);
  // What was asked, recorded before any refusal: a refused request's record names it too.
  if (record !== undefined) {
    if (slug) record.target = slug.slice(0, 256);
    if (split.model) record.requestModel = split.model.slice(0, 256);
  }
  if (!slug)
    throw new ProviderRequiredError(
      'Name a provider: a model such as "@my-provider/claude-sonnet-4-5", or x-gateway-provider.',
      { param: 'model' },
    );
  const provider = catalog.resolveProvider(slug);
  if (!provider)
    throw new UnknownProviderError(`No model provider is configured as "@${slug.slice(0, 64)}".`, { param: 'model' });
  if (!split.model) throw new UnknownProviderError('The request names no model.', { param: 'model' });
  if (!isModelEnabled(provider, split.model)) {
    throw new ModelNotEnabledError(`The model ${split.model.slice(0, 128)} is not enabled for @${provider.slug}.`, {
      param: 'model',
    });
  }
  return { provider, model: split.model };
}

/** The model-selection rule: all, or the custom list, or (autoEnableNew) a model the gateway does not know yet. */
export function isModelEnabled(provider: ProviderEntry, model: string): boolean {
  const selection = provider.models;
  if (selection.mode === 'all') return true;
  if (selection.models.includes(model)) return true;
  if (selection.autoEnableNew !== true) return false;
  return provider.knownModels ? !provider.knownModels.has(model) : !bundledModelsOf(provider).includes(model);
}

/**
 * The models a provider serves, for `GET /v1/models`: all of `available` (the provider's own list;
 * default the bundled one), or the custom selection plus, with `autoEnableNew`, the available
 * models that are new since it was saved.
 */
export function enabledModels(provider: ProviderEntry, available?: readonly string[]): string[] {
  if (provider.models.mode === 'all') return [...(available ?? bundledModelsOf(provider))];
  const enabled = [...provider.models.models];
  if (provider.models.autoEnableNew === true && available) {
    const listed = new Set(enabled);
    for (const id of available) if (!listed.has(id) && isModelEnabled(provider, id)) enabled.push(id);
  }
  return enabled;
}

/** A model a request resolved to: the provider's slug and the model id without `@slug/`. */
export interface ModelResource {
  provider: string;
  model: string;
}

/**
 * Decides whether the caller of `req` may use a model; `false` answers `403 access_denied` (param
 * `model`) before the provider is called. Must not wait (it runs on every model request).
 */
export type ModelAuthorizer = (req: IncomingMessage, resource: ModelResource) => boolean;

/** A model call about to be made, as the host's {@link ModelAdmission} sees it. */
export interface ModelCall {
  /** `chat.completions` (prompts included), `messages`, `count_tokens` or `responses`. */
  route: 'chat.completions' | 'messages' | 'count_tokens' | 'responses';
  /** The provider's slug. */
  provider: string;
  /** The model asked for, without its `@slug/` prefix. */
  model: string;
  /** The request's `max_tokens` (0 for count_tokens). */
  maxTokens: number;
  /**
   * Bytes of the input the provider will receive, for an estimate of its input tokens: the
   * request's JSON body, plus the stored items it continues from (`previous_response_id`,
   * `item_reference`), or a prompt template's rendered messages when they are larger.
   */
  bodyBytes: number;
}

/**
 * The host's admission step (limits, budgets), run after the access check and before the cache
 * and the provider: it rejects with an error carrying `status`, `code` and `headers` to refuse the
 * request, which is answered in the route's error shape. The host settles what it reserved when
 * the response ends.
 */
export type ModelAdmission = (req: IncomingMessage, res: ServerResponse, call: ModelCall) => void | Promise<void>;

/** Throws `403 access_denied` when `authorize` refuses the caller of `req` the model. */
export function checkModelAccess(
  authorize: ModelAuthorizer | undefined,
  req: IncomingMessage,
  resource: ModelResource,
): void {
  if (authorize === undefined || authorize(req, resource) === true) return;
  throw new AccessDeniedError(
    `The caller may not use @${resource.provider.slice(0, 64)}/${resource.model.slice(0, 128)}.`,
    { param: 'model' },
  );
}

import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  createInMemoryCatalog,
  enabledModels,
  type Catalog,
  type ModelAdmission,
  type ModelAuthorizer,
  type ModelProviderConfig,
} from '../core/catalog';
import { UnknownProviderError } from '../core/errors';
import { gatewayHeader } from '../core/gateway-headers';
import { parseBodyLimit, parseMaxJsonDepth, readJsonBody } from '../core/json-body';
import type { RawStringPolicy } from '../core/json-reader';
import { PromptStore, type PromptResolver, type PromptTemplate } from '../core/prompts';
import { rejectUnknownOptions } from '@gw/options';
import { createDispatcher } from '../core/upstream';
import { defaultCallerId, type CallerIdResolver } from '../core/caller';
import { MODEL_PROVIDERS } from '../providers';
import type { NamedConfigs } from './targets';
import { CHAT_RAW_STRINGS, runChatCompletion, type ChatContext } from './chat-completions';
import { NATIVE_RAW_STRINGS, runNativeMessages } from './messages';
import { sendError, sendJson, type ErrorShape } from './respond';
import { MemoryCacheStore, type ResponseCacheStore } from '../core/cache/store';
import { ReasoningSeal } from '../core/reasoning-seal';
import { MemoryResponsesStore, type ResponsesStore } from '../core/responses-store';
import {
  RESPONSES_RAW_STRINGS,
  runCreateResponse,
  runDeleteResponse,
  runGetResponse,
  runListInputItems,
  type ResponsesContext,
} from './responses';

/** Options of {@link createModelRoutes} and `modelRouter`. */
export interface ModelRouterOptions {
  /** The config's `providers` (non-model providers such as `bedrock` are skipped). Give this or `catalog`. */
  providers?: readonly ModelProviderConfig[];
  /** A catalog of your own (for example backed by a database). */
  catalog?: Catalog;
  /** Stored prompt templates. Default `[]`. */
  prompts?: readonly PromptTemplate[];
  /** Looks a prompt template up by id on every request, for hosts whose catalog changes while they run. Replaces `prompts`. Default: none. */
  resolvePrompt?: PromptResolver;
  /** Largest JSON body: bytes, or a size such as `"50mb"`. Default `"50mb"`, which fits a 32 MB PDF in base64. */
  bodyLimit?: string | number;
  /**
   * Deepest nesting of a JSON body, in levels of objects and arrays (the body is level 1): deeper
   * is `400 json_too_deep`, checked right after parsing. Default 128.
   */
  maxJsonDepth?: number;
  /**
   * Time to wait for a provider's response headers, in ms (`request_timeout` overrides it).
   * Default 600000 (10 minutes, the default request timeout of the Anthropic and OpenAI SDKs: a
   * long non-streamed completion sends its headers only when it is done).
   */
  timeoutMs?: number;
  /**
   * Longest silence between two chunks of a provider's response body, in ms (the stream of a
   * streamed answer, or the body of any other). When it passes, a chat completion stream ends
   * with an OpenAI-shaped error frame, a native `/v1/messages` event stream with an Anthropic
   * `event: error` frame, a non-streamed chat completion with `504 upstream_timeout`, and any
   * other answer is cut off (its connection closed). A client that reads slowly does not count.
   * Default 60000.
   */
  streamIdleTimeoutMs?: number;
  /**
   * Most retries a request may ask for in `x-gateway-config` (`retry.attempts`): a request asking
   * for more gets this many. `0` turns retries off. Default 3.
   */
  maxRetryAttempts?: number;
  /**
   * Longest time a request may spend retrying, in ms, from its first upstream call: no retry
   * starts after it, and no wait between attempts reaches past it. Default 30000.
   */
  maxRetryTimeMs?: number;
  /**
   * Who is calling, for the provider's `metadata.user_id` (a digest of the caller and the request's
   * `user`, so no caller can report itself as another's user). Default: `req.callerIdentity.subject`,
   * as `@gw/identity-forwarding`'s `authenticate` sets it.
   */
  callerId?: CallerIdResolver;
  /**
   * Called with every failure that is not one of the router's own (rendered as
   * `500 internal_error`), for the host's log. Default: none.
   */
  onInternalError?: (error: unknown) => void;
  /**
   * The host's access rule: called with the request and the resolved `{ provider, model }` of every
   * chat completion, messages, count_tokens and prompt request; `false` answers `403 access_denied`
   * with `param: "model"` before the provider is called, and `GET /models` leaves the model out.
   * Must not wait. Default: none (every caller may use every enabled model).
   */
  authorize?: ModelAuthorizer;
  /**
   * The host's admission step (limits and budgets): called with the request and its model call
   * (provider, model, `max_tokens`, body size) after the access check, before the cache and the
   * provider; a rejection with `status`/`code`/`headers` is answered in the route's error shape.
   * Default: none.
   */
  admit?: ModelAdmission;
  /**
   * Where the response cache keeps answers (requests opt in with `x-gateway-config`'s `cache` or
   * `x-gateway-cache`). Default: a {@link MemoryCacheStore} of 256 MiB in this process.
   */
  cacheStore?: ResponseCacheStore;
  /** The clock of the response cache, in ms since the epoch. Default `Date.now`. */
  now?: () => number;
  /**
   * Where `POST /responses` keeps responses (`store`, default true in a request) for
   * `previous_response_id`, `GET` and `DELETE /responses/<id>`, each under its caller. Default: a
   * {@link MemoryResponsesStore} (1000 responses, 30 days, this process only).
   */
  responsesStore?: ResponsesStore;
  /**
   * 32 bytes that seal the thinking a Responses reasoning item carries in `encrypted_content`
   * (AES-256-GCM), so a client can give back only thinking it received. Give every instance the same
   * key (derived from the gateway's encryption key). Default: a random key of this process.
   */
  reasoningKey?: Buffer;
  /** Called with a failure to store a response (the answer is still given), for the host's log. Default: none. */
  onResponseStoreError?: (error: unknown) => void;
  /**
   * Named configs (CONTRACT section 17): `x-gateway-config: <slug>` looks the slug up with
   * `resolve`, and a request without the header uses `defaultSlug(req)` (an API key's config).
   * Default: none (`x-gateway-config` must be JSON).
   */
  configs?: NamedConfigs;
  /**
   * Random numbers in [0, 1) for load balancing across targets (`strategy.mode: "loadbalance"`).
   * Default `Math.random`.
   */
  random?: () => number;
}

/**
 * One model route: reads the body, answers the request and renders every failure in the route
 * family's error shape. Never rejects.
 */
export type ModelRouteHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

/** The model routes without a web framework: any node:http server or framework can dispatch to them. */
export interface ModelRoutes {
  /**
   * The handler of `method` and `path` (below the mount point, without query string, such as
   * `/chat/completions`), or undefined when no model route has that method and path. Paths are
   * matched exactly.
   */
  match(method: string | undefined, path: string): ModelRouteHandler | undefined;
}

const PROMPTS_PREFIX = '/prompts/';
const PROMPTS_SUFFIX = '/completions';
const RESPONSES_PREFIX = '/responses/';
const INPUT_ITEMS_SUFFIX = '/input_items';

/**
 * The model routes as data, with no web framework: `POST /chat/completions`, `POST /messages`,
 * `POST /messages/count_tokens`, `GET /models` and `POST /prompts/<id>/completions`. Options are
 * validated here. Authentication is the host's.
 */
export function createModelRoutes(options: ModelRouterOptions = {}): ModelRoutes {
  if (typeof options !== 'object' || options === null) throw new TypeError('modelRouter options must be an object.');
  rejectUnknownOptions(
    options,
    [
      'providers',
      'catalog',
      'prompts',
      'resolvePrompt',
      'bodyLimit',
      'maxJsonDepth',
      'timeoutMs',
      'streamIdleTimeoutMs',
      'maxRetryAttempts',
      'maxRetryTimeMs',
      'callerId',
      'onInternalError',
      'authorize',
      'admit',
      'cacheStore',
      'now',
      'responsesStore',
      'reasoningKey',
      'onResponseStoreError',
      'configs',
      'random',
    ],
    'modelRouter',
  );
  if (options.providers !== undefined && !Array.isArray(options.providers)) {
    throw new TypeError('providers must be a list such as [{ slug, provider: "anthropic", apiKey }].');
  }
  const own = options.catalog;
  if (
    own !== undefined &&
    (typeof own !== 'object' ||
      own === null ||
      typeof own.resolveProvider !== 'function' ||
      typeof own.listProviders !== 'function')
  ) {
    throw new TypeError('catalog must be an object with resolveProvider(slug) and listProviders() methods.');
  }
  for (const name of ['resolvePrompt', 'onInternalError'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'function') {
      throw new TypeError(`${name} must be a function.`);
    }
  }
  const catalog = options.catalog ?? createInMemoryCatalog(options.providers ?? [], MODEL_PROVIDERS);
  const prompts = options.resolvePrompt
    ? PromptStore.fromResolver(options.resolvePrompt)
    : new PromptStore(options.prompts ?? []);
  const limit = parseBodyLimit(options.bodyLimit);
  const maxJsonDepth = parseMaxJsonDepth(options.maxJsonDepth);
  const positive = (name: string, value: number | undefined, example: number) => {
    if (value !== undefined && !(Number.isFinite(value) && value > 0)) {
      throw new TypeError(
        `${name} must be a positive number of milliseconds, for example ${example} (got ${String(value)}).`,
      );
    }
  };
  positive('timeoutMs', options.timeoutMs, 600_000);
  positive('streamIdleTimeoutMs', options.streamIdleTimeoutMs, 60_000);
  positive('maxRetryTimeMs', options.maxRetryTimeMs, 30_000);
  if (
    options.maxRetryAttempts !== undefined &&
    !(Number.isInteger(options.maxRetryAttempts) && options.maxRetryAttempts >= 0 && options.maxRetryAttempts <= 10)
  ) {
    throw new TypeError(
      `maxRetryAttempts must be a whole number from 0 to 10, for example 3 (got ${String(options.maxRetryAttempts)}).`,
    );
  }
  if (options.authorize !== undefined && typeof options.authorize !== 'function') {
    throw new TypeError('authorize must be a function (req, { provider, model }) => boolean.');
  }
  const authorize = options.authorize;
  if (options.admit !== undefined && typeof options.admit !== 'function') {
    throw new TypeError(
      'admit must be a function (req, res, { route, provider, model, maxTokens, bodyBytes }) => void | Promise<void>.',
    );
  }
  if (options.callerId !== undefined && typeof options.callerId !== 'function') {
    throw new TypeError('callerId must be a function (req) => string | undefined.');
  }
  const cacheStore = options.cacheStore;
  if (
    cacheStore !== undefined &&
    (typeof cacheStore !== 'object' ||
      cacheStore === null ||
      typeof cacheStore.get !== 'function' ||
      typeof cacheStore.set !== 'function')
  ) {
    throw new TypeError('cacheStore must be an object with get(key) and set(key, answer, ttlSeconds) methods.');
  }
  const configs = options.configs;
  if (
    configs !== undefined &&
    (typeof configs !== 'object' ||
      configs === null ||
      typeof configs.resolve !== 'function' ||
      (configs.defaultSlug !== undefined && typeof configs.defaultSlug !== 'function'))
  ) {
    throw new TypeError('configs must be an object { resolve(slug), defaultSlug?(req) } of functions.');
  }
  if (options.random !== undefined && typeof options.random !== 'function') {
    throw new TypeError('random must be a function () => a number in [0, 1).');
  }
  if (options.now !== undefined && typeof options.now !== 'function') {
    throw new TypeError('now must be a function () => milliseconds since the epoch.');
  }
  const callerId = options.callerId ?? defaultCallerId;
  const context: ChatContext = {
    catalog,
    dispatcher: createDispatcher(),
    timeoutMs: options.timeoutMs ?? 600_000,
    limits: {
      streamIdleTimeoutMs: options.streamIdleTimeoutMs ?? 60_000,
      maxRetryAttempts: options.maxRetryAttempts ?? 3,
      maxRetryTimeMs: options.maxRetryTimeMs ?? 30_000,
    },
    callerId,
    authorize,
    admit: options.admit,
    cache: { store: cacheStore ?? new MemoryCacheStore(), callerId, now: options.now ?? Date.now },
    configs: options.configs,
    random: options.random ?? Math.random,
  };
  const responsesStore = options.responsesStore;
  if (
    responsesStore !== undefined &&
    (typeof responsesStore !== 'object' ||
      responsesStore === null ||
      typeof responsesStore.get !== 'function' ||
      typeof responsesStore.put !== 'function' ||
      typeof responsesStore.delete !== 'function')
  ) {
    throw new TypeError(
      'responsesStore must be an object with put(owner, id, stored), get(owner, id) and delete(owner, id) methods.',
    );
  }
  if (options.onResponseStoreError !== undefined && typeof options.onResponseStoreError !== 'function')
    throw new TypeError('onResponseStoreError must be a function (error) => void.');
  const responsesContext: ResponsesContext = {
    ...context,
    responses: responsesStore ?? new MemoryResponsesStore(),
    seal: new ReasoningSeal(options.reasoningKey),
    onStoreError: options.onResponseStoreError,
  };
  const onInternalError = options.onInternalError;

  const fail = (res: ServerResponse, error: unknown, shape: ErrorShape) => {
    const rendered = sendError(res, error, shape);
    if (onInternalError && rendered.code === 'internal_error') onInternalError(error);
  };

  /** A route that reads the JSON body, then runs; every failure, thrown or rejected, renders in `shape`. */
  const withJsonBody =
    (
      shape: ErrorShape,
      run: (req: IncomingMessage, res: ServerResponse, body: unknown) => Promise<void>,
      rawStrings?: RawStringPolicy,
    ) =>
    async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
      try {
        await run(req, res, await readJsonBody(req, limit, maxJsonDepth, rawStrings));
      } catch (error) {
        fail(res, error, shape);
      }
    };

  const chatCompletions = withJsonBody(
    'openai',
    (req, res, body) => runChatCompletion(context, req, res, body),
    CHAT_RAW_STRINGS,
  );
  const messages = withJsonBody(
    'anthropic',
    (req, res, body) => runNativeMessages(context, 'messages', req, res, body),
    NATIVE_RAW_STRINGS,
  );
  const countTokens = withJsonBody(
    'anthropic',
    (req, res, body) => runNativeMessages(context, 'countTokens', req, res, body),
    NATIVE_RAW_STRINGS,
  );
  const promptCompletion = (promptId: string): ModelRouteHandler =>
    withJsonBody('openai', (req, res, body) => {
      const rendered = prompts.render(promptId, (body ?? {}) as Record<string, unknown>);
      // The template's messages go to the provider: the limits count the rendered request.
      return runChatCompletion(context, req, res, rendered, Buffer.byteLength(JSON.stringify(rendered)));
    });

  const createResponse = withJsonBody(
    'openai',
    (req, res, body) => runCreateResponse(responsesContext, req, res, body),
    RESPONSES_RAW_STRINGS,
  );
  const storedResponse =
    (run: typeof runGetResponse, id: string): ModelRouteHandler =>
    async (req, res) => {
      try {
        // A body (DELETE may carry one) is not read: the answer does not depend on it.
        req.resume();
        await run(responsesContext, req, res, id);
      } catch (error) {
        fail(res, error, 'openai');
      }
    };

  const models: ModelRouteHandler = async (req, res) => {
    try {
      const named = gatewayHeader(req.headers, 'provider');
      if (named !== undefined) {
        const provider = catalog.resolveProvider(named.replace(/^@/, ''));
        if (!provider) throw new UnknownProviderError(`No model provider is configured as "${named.slice(0, 64)}".`);
        sendJson(res, 200, {
          object: 'list',
          data: enabledModels(provider, catalog.modelsOf?.(provider))
            .filter((id) => authorize === undefined || authorize(req, { provider: provider.slug, model: id }))
            .map((id) => ({
              id,
              object: 'model',
              created: 0,
              owned_by: provider.slug,
            })),
        });
        return;
      }
      const data = catalog.listProviders().flatMap((p) =>
        enabledModels(p, catalog.modelsOf?.(p))
          .filter((id) => authorize === undefined || authorize(req, { provider: p.slug, model: id }))
          .map((id) => ({
            id: `@${p.slug}/${id}`,
            object: 'model',
            created: 0,
            owned_by: p.slug,
          })),
      );
      sendJson(res, 200, { object: 'list', data });
    } catch (error) {
      fail(res, error, 'openai');
    }
  };

  return {
    match(method, path) {
      if (method === 'POST') {
        if (path === '/chat/completions') return chatCompletions;
        if (path === '/messages') return messages;
        if (path === '/messages/count_tokens') return countTokens;
        if (path === '/responses') return createResponse;
        if (path.startsWith(PROMPTS_PREFIX) && path.endsWith(PROMPTS_SUFFIX)) {
          const raw = path.slice(PROMPTS_PREFIX.length, path.length - PROMPTS_SUFFIX.length);
          if (raw === '' || raw.includes('/')) return undefined;
          let promptId: string;
          try {
            promptId = decodeURIComponent(raw);
          } catch {
            promptId = raw;
          }
          return promptCompletion(promptId);
        }
        return undefined;
      }
      if ((method === 'GET' || method === 'HEAD') && path === '/models') return models;
      if (method === 'GET' && path.startsWith(RESPONSES_PREFIX) && path.endsWith(INPUT_ITEMS_SUFFIX)) {
        const id = path.slice(RESPONSES_PREFIX.length, path.length - INPUT_ITEMS_SUFFIX.length);
        if (id === '' || id.includes('/')) return undefined;
        return storedResponse(runListInputItems, id);
      }
      if ((method === 'GET' || method === 'DELETE') && path.startsWith(RESPONSES_PREFIX)) {
        const id = path.slice(RESPONSES_PREFIX.length);
        if (id === '' || id.includes('/')) return undefined;
        return storedResponse(method === 'GET' ? runGetResponse : runDeleteResponse, id);
      }
      return undefined;
    },
  };
}

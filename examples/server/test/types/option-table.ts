/**
 * One table of the options of every exported factory, read twice: by `option-types.test.ts` at run
 * time (each factory must refuse the misspelt and the mistyped call when it is called) and, through
 * the fixture it renders (`options.fixture.ts`, compiled by `tsc -p examples/server/test/types`),
 * by the type checker (each bad call carries a `@ts-expect-error` that must be used).
 *
 * A row names one option by its path in the options (`providers.0.cache.scope`), the valid options
 * that hold it (default: the factory's base), and a value of the wrong type with the error the
 * factory throws for it. The misspelling is derived from the name (`baseUrl` → `base_url`,
 * `include_claims` → `includeClaims`, `slug` → `Slug`) unless the row gives one.
 */

/** A value that is not JSON: its TypeScript source in the fixture, and how to get it at run time. */
export class Code {
  constructor(
    readonly ts: string,
    readonly get: () => unknown,
  ) {}
}

/** A value of an option: JSON, or {@link Code}. */
export type Value = null | boolean | number | string | Code | readonly Value[] | { readonly [key: string]: Value };

/** The factories of the table: how the fixture calls each (`%` is the options) and what it imports. */
export const FACTORIES = {
  modelRouter: { from: '@gw/model-router', call: 'modelRouter(%)', base: {} },
  sigv4Proxy: {
    from: '@gw/sigv4-proxy',
    call: 'sigv4Proxy(%)',
    base: {
      integrations: [{ slug: 'kb', accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret', region: 'us-east-1' }],
    },
  },
  authenticate: { from: '@gw/identity-forwarding', call: 'authenticate(%)', base: {} },
  identityForwarding: { from: '@gw/identity-forwarding', call: 'identityForwarding(%)', base: { mcpServers: [] } },
  protectedResourceMetadata: { from: '@gw/identity-forwarding', call: 'protectedResourceMetadata(%)', base: {} },
  signIdentityToken: {
    from: '@gw/jwks',
    call: 'signer.signIdentityToken({ sub: "u" }, %)',
    base: { audience: 'https://mcp.example.com', expiresInSeconds: 300 },
  },
  verifyGatewayIdentity: {
    from: '@gw/jwks',
    call: 'verifyGatewayIdentity(%)',
    base: { jwksUri: 'https://gateway.example.com/.well-known/jwks.json', audience: 'https://mcp.example.com' },
  },
  RemoteKeySet: {
    from: '@gw/jwks',
    call: 'new RemoteKeySet(%)',
    base: { jwksUri: 'https://idp.example.com/.well-known/jwks.json' },
  },
  loadSigningKey: {
    from: '@gw/jwks',
    call: 'loadSigningKey(%)',
    base: { production: false, jwtHeaderInUse: false, previousPublicKeysPem: '' },
  },
  compileAccess: { from: '@gw/access', call: 'compileAccess(%)', base: {} },
  adminApi: {
    from: '@gw/catalog',
    call: 'adminApi(%)',
    base: { store: new Code('store', () => declared.store), access: new Code('access', () => declared.access) },
  },
  AdminAccess: { from: '@gw/catalog', call: 'new AdminAccess(%)', base: {} },
  gatewayConsole: {
    from: '@gw/console',
    call: 'gatewayConsole(%)',
    base: {
      access: new Code('access', () => declared.access),
      adminApi: new Code('adminHandler', () => declared.adminHandler),
      sessionSecret: new Code('secret', () => declared.secret),
    },
  },
  ConsoleSessions: {
    from: '@gw/console',
    call: 'new ConsoleSessions(%)',
    base: { secret: new Code('secret', () => declared.secret) },
  },
  createModelRoutes: { from: '@gw/model-router', call: 'createModelRoutes(%)', base: {} },
  LiveCatalog: { from: '@gw/catalog', call: 'new LiveCatalog(database, store, %)', base: {} },
  RequestLogWriter: {
    from: '@gw/catalog',
    call: 'new RequestLogWriter(%)',
    base: { db: new Code('database', () => declared.database) },
  },
  openPostgres: { from: '@gw/catalog', call: 'openPostgres("postgres://gw@127.0.0.1:9/gw", %)', base: {} },
  IdentityTokenCache: { from: '@gw/identity-forwarding', call: 'new IdentityTokenCache(%)', base: {} },
} as const satisfies Record<string, { from: string; call: string; base: Value }>;

/** A factory of the table. */
export type FactoryName = keyof typeof FACTORIES;

/** One option of one factory. */
export interface OptionRow {
  factory: FactoryName;
  /** Where the option is: keys and list indexes joined by dots (`providers.0.cache.scope`). */
  path: string;
  /** Valid options that hold the option (its misspelt row renames it). Default: the factory's base. */
  options?: Value;
  /** A value of the wrong type for it. */
  wrong: Value;
  /** What the factory throws for `wrong`. */
  error: RegExp;
  /** The misspelling to try. Default: derived from the name. */
  misspelt?: string;
  /** What the factory throws for the misspelling. Default: unknown option, and the name to write. */
  misspeltError?: RegExp;
  /** For a required option: what the factory throws when it is left out (and `tsc` refuses that too). */
  required?: RegExp;
}

/** A callback or object the fixture writes as `ts`. */
const fn = (ts: string, value: unknown) => new Code(ts, () => value);
const noop = () => undefined;

/**
 * Values the fixture declares (`declare const store: CatalogStore;`) and the test builds: by name,
 * their module and type.
 */
export const DECLARED = {
  signer: ['@gw/jwks', 'IdentityTokenSigner'],
  keys: ['@gw/jwks', 'KeyResolver'],
  store: ['@gw/catalog', 'CatalogStore'],
  access: ['@gw/catalog', 'AdminAccess'],
  configRecords: ['@gw/catalog', 'ConfigRecords'],
  database: ['@gw/catalog', 'CatalogDatabase'],
  adminHandler: ['@gw/catalog', 'AdminApiHandler'],
  secret: [undefined, 'Buffer'],
} as const satisfies Record<string, readonly [string | undefined, string]>;

const declared: Partial<Record<keyof typeof DECLARED, unknown>> = {};
/** Sets the values the fixture only declares, for the runtime checks. */
export function setDeclared(values: Record<keyof typeof DECLARED, unknown>): void {
  Object.assign(declared, values);
}
const use = (name: keyof typeof DECLARED) => new Code(name, () => declared[name]);
const signer = () => use('signer');

const anthropic = { slug: 'claude', provider: 'anthropic', apiKey: 'sk-ant-options' };
const withProvider = (extra: Record<string, Value>) => ({ providers: [{ ...anthropic, ...extra }] });
const aws = FACTORIES.sigv4Proxy.base.integrations[0];
const withIntegration = (extra: Record<string, Value>) => ({ integrations: [{ ...aws, ...extra }] });
const apiKey = { key: 'gw-options-key', user: { user_id: 'u' } };
const jwks = { jwksUri: 'https://idp.example.com/.well-known/jwks.json' };
const withValidation = (extra: Record<string, Value>) => ({ jwtValidation: { ...jwks, ...extra } });
const mcp = { slug: 'tools', url: 'http://127.0.0.1:9/mcp' };
const withServer = (extra: Record<string, Value>, more: Record<string, Value> = {}) => ({
  mcpServers: [{ ...mcp, ...extra }],
  ...more,
});
const policy = { slug: 'p', subjects: { users: ['u'] }, allow: { models: ['@a/*'] } };
const withPolicy = (extra: Record<string, Value>) => ({ mode: 'policies', policies: [{ ...policy, ...extra }] });

const ms = (factory: FactoryName, path: string, error: RegExp, options?: Value): OptionRow => ({
  factory,
  path,
  options,
  wrong: '30000',
  error,
});

/** The options of modelRouter, which are createModelRoutes' too (modelRouter is a thin adapter over it). */
const MODEL_ROUTER_ROWS: readonly OptionRow[] = [
  {
    factory: 'modelRouter',
    path: 'providers',
    options: { providers: [] },
    wrong: 'claude',
    error: /providers must be a list/,
  },
  {
    factory: 'modelRouter',
    path: 'providers.0.slug',
    required: /slug must be letters/,
    options: withProvider({}),
    wrong: 7,
    error: /slug must be letters/,
    misspeltError: /unknown option "Slug"; did you mean "slug"/,
  },
  {
    factory: 'modelRouter',
    path: 'providers.0.name',
    options: withProvider({ name: 'Claude' }),
    wrong: 7,
    error: /\.name must be a non-empty string/,
  },
  {
    factory: 'modelRouter',
    path: 'providers.0.provider',
    required: /\.provider must be "anthropic"/,
    options: withProvider({}),
    wrong: 'openai',
    error: /\.provider must be "anthropic"/,
    misspeltError: /\.provider must be "anthropic"/,
  },
  {
    factory: 'modelRouter',
    path: 'providers.0.apiKey',
    required: /apiKey must be a non-empty string/,
    options: withProvider({}),
    wrong: 12,
    error: /apiKey must be a non-empty string/,
  },
  {
    factory: 'modelRouter',
    path: 'providers.0.baseUrl',
    options: withProvider({ baseUrl: 'https://api.anthropic.com' }),
    wrong: 443,
    error: /baseUrl must be an http\(s\) URL/,
  },
  {
    factory: 'modelRouter',
    path: 'providers.0.models',
    options: withProvider({ models: { mode: 'all' } }),
    wrong: 'all',
    error: /\.models must be \{ mode: "all" \}/,
  },
  {
    factory: 'modelRouter',
    path: 'providers.0.models.mode',
    required: /\.models must be \{ mode: "all" \}/,
    options: withProvider({ models: { mode: 'all' } }),
    wrong: 'some',
    error: /\.models must be \{ mode: "all" \}/,
    misspeltError: /\.models must be \{ mode: "all" \}/,
  },
  {
    factory: 'modelRouter',
    path: 'providers.0.models.models',
    required: /models\.models must be a list/,
    options: withProvider({ models: { mode: 'custom', models: ['claude-sonnet-4-5'] } }),
    wrong: 'claude-sonnet-4-5',
    error: /models\.models must be a list/,
  },
  {
    factory: 'modelRouter',
    path: 'providers.0.models.autoEnableNew',
    options: withProvider({ models: { mode: 'custom', models: [], autoEnableNew: true } }),
    wrong: 'yes',
    error: /autoEnableNew must be true or false/,
  },
  {
    factory: 'modelRouter',
    path: 'providers.0.defaultMaxTokens',
    options: withProvider({ defaultMaxTokens: 1024 }),
    wrong: '1024',
    error: /defaultMaxTokens must be a positive whole number/,
  },
  {
    factory: 'modelRouter',
    path: 'providers.0.knownModels',
    options: withProvider({ knownModels: ['claude-sonnet-4-5'] }),
    wrong: 'claude-sonnet-4-5',
    error: /knownModels must be a list of model ids/,
  },
  {
    factory: 'modelRouter',
    path: 'providers.0.cache',
    options: withProvider({ cache: {} }),
    wrong: true,
    error: /\.cache must be \{ enabled\?: boolean/,
  },
  {
    factory: 'modelRouter',
    path: 'providers.0.cache.enabled',
    options: withProvider({ cache: { enabled: false } }),
    wrong: 'no',
    error: /cache\.enabled must be true or false/,
  },
  {
    factory: 'modelRouter',
    path: 'providers.0.cache.scope',
    options: withProvider({ cache: { scope: 'shared' } }),
    wrong: 'everyone',
    error: /cache\.scope must be "caller" or "shared"/,
  },
  {
    factory: 'modelRouter',
    path: 'catalog',
    options: {
      catalog: fn('{ resolveProvider: () => undefined, listProviders: () => [] }', {
        resolveProvider: noop,
        listProviders: () => [],
      }),
    },
    wrong: 'postgres',
    error: /catalog must be an object with resolveProvider/,
  },
  {
    factory: 'modelRouter',
    path: 'prompts',
    options: { prompts: [{ id: 'p', provider: '@claude', model: 'm', messages: [] }] },
    wrong: 'p',
    error: /Each prompt needs an id and messages/,
  },
  {
    factory: 'modelRouter',
    path: 'resolvePrompt',
    options: { resolvePrompt: fn('() => undefined', noop) },
    wrong: 'p',
    error: /resolvePrompt must be a function/,
  },
  {
    factory: 'modelRouter',
    path: 'bodyLimit',
    options: { bodyLimit: '50mb' },
    wrong: true,
    error: /bodyLimit must be/,
  },
  {
    factory: 'modelRouter',
    path: 'maxJsonDepth',
    options: { maxJsonDepth: 64 },
    wrong: '64',
    error: /maxJsonDepth must be/,
  },
  ms('modelRouter', 'timeoutMs', /timeoutMs must be a positive number/, { timeoutMs: 1000 }),
  ms('modelRouter', 'streamIdleTimeoutMs', /streamIdleTimeoutMs must be a positive number/, {
    streamIdleTimeoutMs: 1000,
  }),
  {
    factory: 'modelRouter',
    path: 'maxRetryAttempts',
    options: { maxRetryAttempts: 2 },
    wrong: '2',
    error: /maxRetryAttempts must be a whole number/,
  },
  ms('modelRouter', 'maxRetryTimeMs', /maxRetryTimeMs must be a positive number/, { maxRetryTimeMs: 1000 }),
  {
    factory: 'modelRouter',
    path: 'callerId',
    options: { callerId: fn('() => "caller"', () => 'caller') },
    wrong: 'caller',
    error: /callerId must be a function/,
  },
  {
    factory: 'modelRouter',
    path: 'onInternalError',
    options: { onInternalError: fn('() => undefined', noop) },
    wrong: 'log',
    error: /onInternalError must be a function/,
  },
  {
    factory: 'modelRouter',
    path: 'authorize',
    options: { authorize: fn('() => true', () => true) },
    wrong: true,
    error: /authorize must be a function/,
  },
  {
    factory: 'modelRouter',
    path: 'cacheStore',
    options: { cacheStore: fn('{ get: async () => undefined, set: async () => undefined }', { get: noop, set: noop }) },
    wrong: 'redis',
    error: /cacheStore must be an object with get/,
  },
  {
    factory: 'modelRouter',
    path: 'now',
    options: { now: fn('() => 0', () => 0) },
    wrong: 0,
    error: /now must be a function/,
  },
];

export const ROWS: readonly OptionRow[] = [
  ...MODEL_ROUTER_ROWS,

  // sigv4Proxy
  {
    factory: 'sigv4Proxy',
    path: 'integrations',
    wrong: 'kb',
    error: /integrations must be a list/,
    misspeltError: /sigv4Proxy needs \{ integrations/,
  },
  {
    factory: 'sigv4Proxy',
    path: 'integrations.0.slug',
    required: /\.slug must be letters/,
    wrong: 7,
    error: /\.slug must be letters/,
    misspeltError: /unknown option "Slug"; did you mean "slug"/,
  },
  {
    factory: 'sigv4Proxy',
    path: 'integrations.0.name',
    options: withIntegration({ name: 'KB' }),
    wrong: 7,
    error: /\.name must be a string/,
  },
  {
    factory: 'sigv4Proxy',
    path: 'integrations.0.provider',
    options: withIntegration({ provider: 'bedrock' }),
    wrong: 'anthropic',
    error: /\.provider must be "bedrock"/,
  },
  {
    factory: 'sigv4Proxy',
    path: 'integrations.0.accessKeyId',
    required: /accessKeyId must be a non-empty string/,
    wrong: 7,
    error: /accessKeyId must be a non-empty string/,
  },
  {
    factory: 'sigv4Proxy',
    path: 'integrations.0.secretAccessKey',
    required: /secretAccessKey must be a non-empty string/,
    wrong: 7,
    error: /secretAccessKey must be a non-empty string/,
  },
  {
    factory: 'sigv4Proxy',
    path: 'integrations.0.sessionToken',
    options: withIntegration({ sessionToken: 'token' }),
    wrong: 7,
    error: /sessionToken must be a string/,
  },
  {
    factory: 'sigv4Proxy',
    path: 'integrations.0.region',
    required: /region must be an AWS region/,
    wrong: 1,
    error: /region must be an AWS region/,
  },
  {
    factory: 'sigv4Proxy',
    path: 'integrations.0.allowedHosts',
    options: withIntegration({ allowedHosts: ['http://127.0.0.1:9'] }),
    wrong: 'http://127.0.0.1:9',
    error: /allowedHosts must be a list of origins/,
  },
  {
    factory: 'sigv4Proxy',
    path: 'integrations.0.models',
    options: withIntegration({ models: { mode: 'all' } }),
    wrong: 'all',
    error: /\.models must be \{ mode: "all" \}/,
  },
  {
    factory: 'sigv4Proxy',
    path: 'resolveIntegration',
    options: { resolveIntegration: fn('() => undefined', noop) },
    wrong: 'kb',
    error: /resolveIntegration must be a function/,
    misspeltError: /sigv4Proxy needs \{ integrations/,
  },
  {
    factory: 'sigv4Proxy',
    path: 'maxBodyBytes',
    options: { ...FACTORIES.sigv4Proxy.base, maxBodyBytes: 1024 },
    wrong: '1mb',
    error: /maxBodyBytes must be a positive whole number/,
  },
  ms('sigv4Proxy', 'timeoutMs', /timeoutMs must be a positive number/, {
    ...FACTORIES.sigv4Proxy.base,
    timeoutMs: 1000,
  }),
  ms('sigv4Proxy', 'idleTimeoutMs', /idleTimeoutMs must be a positive number/, {
    ...FACTORIES.sigv4Proxy.base,
    idleTimeoutMs: 1000,
  }),
  {
    factory: 'sigv4Proxy',
    path: 'authorize',
    options: { ...FACTORIES.sigv4Proxy.base, authorize: fn('() => true', () => true) },
    wrong: true,
    error: /authorize must be a function/,
  },

  // authenticate
  {
    factory: 'authenticate',
    path: 'apiKeys',
    options: { apiKeys: [] },
    wrong: 'gw-key',
    error: /apiKeys must be a list/,
  },
  {
    factory: 'authenticate',
    path: 'apiKeys.0.key',
    required: /needs exactly one of "key" or "keySha256"/,
    options: { apiKeys: [apiKey] },
    wrong: 12345678,
    error: /\.key must be a string of at least 8 characters/,
    misspeltError: /unknown option "Key"; did you mean "key"/,
  },
  {
    factory: 'authenticate',
    path: 'apiKeys.0.keySha256',
    options: { apiKeys: [{ keySha256: 'a'.repeat(64), user: { user_id: 'u' } }] },
    wrong: 1,
    error: /keySha256 must be 64 hexadecimal characters/,
  },
  {
    factory: 'authenticate',
    path: 'apiKeys.0.user',
    required: /\.user must be an object/,
    options: { apiKeys: [apiKey] },
    wrong: 'u',
    error: /\.user must be an object/,
  },
  {
    factory: 'authenticate',
    path: 'apiKeys.0.id',
    options: { apiKeys: [{ ...apiKey, id: 'k1' }] },
    wrong: 1,
    error: /\.id must be a non-empty string/,
  },
  {
    factory: 'authenticate',
    path: 'jwtValidation',
    options: { jwtValidation: jwks },
    wrong: 'https://idp.example.com',
    error: /jwtValidation must be an object/,
  },
  {
    factory: 'authenticate',
    path: 'jwtValidation.jwksUri',
    required: /jwt_validation needs a jwksUri/,
    options: { jwtValidation: jwks },
    wrong: 443,
    error: /jwtValidation\.jwksUri must be a URL/,
  },
  {
    factory: 'authenticate',
    path: 'jwtValidation.requiredClaims',
    options: withValidation({ requiredClaims: ['email'] }),
    wrong: 'email',
    error: /requiredClaims must be a list of claim names/,
  },
  {
    factory: 'authenticate',
    path: 'jwtValidation.issuer',
    options: withValidation({ issuer: 'https://idp.example.com' }),
    wrong: 1,
    error: /jwtValidation\.issuer must be a non-empty string/,
  },
  {
    factory: 'authenticate',
    path: 'jwtValidation.audience',
    options: withValidation({ audience: 'gateway' }),
    wrong: ['gateway'],
    error: /jwtValidation\.audience must be a non-empty string/,
  },
  {
    factory: 'authenticate',
    path: 'jwtValidation.algorithms',
    options: withValidation({ algorithms: ['RS256'] }),
    wrong: ['HS256'],
    error: /algorithms must be a list of RS256, RS384, RS512/,
  },
  {
    factory: 'authenticate',
    path: 'jwtValidation.clockToleranceSeconds',
    options: withValidation({ clockToleranceSeconds: 5 }),
    wrong: '5',
    error: /clockToleranceSeconds must be a number of seconds/,
  },
  {
    factory: 'authenticate',
    path: 'jwtValidation.keys',
    options: { jwtValidation: { keys: use('keys') } },
    wrong: 'jwks',
    error: /jwtValidation\.keys must be a key resolver/,
    misspeltError: /unknown option "Keys"; did you mean "keys"/,
  },
  {
    factory: 'authenticate',
    path: 'jwtValidation.onKeySetFetch',
    options: withValidation({ onKeySetFetch: fn('() => undefined', noop) }),
    wrong: 'count',
    error: /onKeySetFetch must be a function/,
  },
  {
    factory: 'authenticate',
    path: 'jwtValidation.keySet',
    options: withValidation({ keySet: {} }),
    wrong: 600000,
    error: /keySet must be an object/,
  },
  ...(['cacheMaxAgeMs', 'cooldownMs', 'firstRetryMs', 'timeoutMs'] as const).map((name) =>
    ms('authenticate', `jwtValidation.keySet.${name}`, new RegExp(`${name} must be a positive number`), {
      jwtValidation: { ...jwks, keySet: { [name]: 1000 } },
    }),
  ),
  {
    factory: 'authenticate',
    path: 'jwtValidation.keySet.now',
    options: withValidation({ keySet: { now: fn('() => 0', () => 0) } }),
    wrong: 0,
    error: /now must be a function/,
  },
  {
    factory: 'authenticate',
    path: 'resourceMetadataUrl',
    options: { resourceMetadataUrl: fn('() => undefined', noop) },
    wrong: 'https://gateway.example.com/.well-known/oauth-protected-resource',
    error: /resourceMetadataUrl must be a function/,
  },

  // identityForwarding
  {
    factory: 'identityForwarding',
    path: 'mcpServers',
    required: /identityForwarding needs \{ mcpServers/,
    wrong: 'tools',
    error: /identityForwarding needs \{ mcpServers/,
    misspeltError: /identityForwarding needs \{ mcpServers/,
  },
  {
    factory: 'identityForwarding',
    path: 'mcpServers.0.slug',
    required: /\.slug must be letters/,
    options: withServer({}),
    wrong: 7,
    error: /\.slug must be letters/,
    misspeltError: /unknown field "Slug"; did you mean "slug"/,
  },
  {
    factory: 'identityForwarding',
    path: 'mcpServers.0.url',
    required: /\.url must be an absolute http\(s\) URL/,
    options: withServer({}),
    wrong: 9000,
    error: /\.url must be an absolute http\(s\) URL/,
    misspeltError: /unknown field "Url"; did you mean "url"/,
  },
  {
    factory: 'identityForwarding',
    path: 'mcpServers.0.user_identity_forwarding',
    options: withServer({ user_identity_forwarding: { method: 'claims_header' } }),
    wrong: 'claims_header',
    error: /user_identity_forwarding must be an object/,
    misspeltError: /unknown field "userIdentityForwarding"; did you mean "user_identity_forwarding"/,
  },
  {
    factory: 'identityForwarding',
    path: 'mcpServers.0.user_identity_forwarding.method',
    required: /method must be one of claims_header, bearer, jwt_header/,
    options: withServer({ user_identity_forwarding: { method: 'claims_header' } }),
    wrong: 'cookie',
    error: /method must be one of claims_header, bearer, jwt_header/,
    misspeltError: /unknown field "Method"; did you mean "method"/,
  },
  {
    factory: 'identityForwarding',
    path: 'mcpServers.0.user_identity_forwarding.include_claims',
    options: withServer({ user_identity_forwarding: { method: 'claims_header', include_claims: ['sub'] } }),
    wrong: 'sub',
    error: /include_claims must be a list of non-empty strings/,
    misspeltError: /unknown field "includeClaims"; did you mean "include_claims"/,
  },
  {
    factory: 'identityForwarding',
    path: 'mcpServers.0.user_identity_forwarding.header_name',
    options: withServer({ user_identity_forwarding: { method: 'claims_header', header_name: 'X-Who' } }),
    wrong: 7,
    error: /header_name must be a valid HTTP header name/,
    misspeltError: /unknown field "headerName"; did you mean "header_name"/,
  },
  {
    factory: 'identityForwarding',
    path: 'mcpServers.0.user_identity_forwarding.jwt_expiry_seconds',
    options: withServer(
      { user_identity_forwarding: { method: 'jwt_header', jwt_expiry_seconds: 60 } },
      { signer: signer() },
    ),
    wrong: '60',
    error: /jwt_expiry_seconds must be a whole number of seconds/,
    misspeltError: /unknown field "jwtExpirySeconds"; did you mean "jwt_expiry_seconds"/,
  },
  {
    factory: 'identityForwarding',
    path: 'mcpServers.0.forward_headers',
    options: withServer({ forward_headers: {} }),
    wrong: 'all',
    error: /forward_headers must be an object/,
    misspeltError: /unknown field "forwardHeaders"; did you mean "forward_headers"/,
  },
  {
    factory: 'identityForwarding',
    path: 'mcpServers.0.forward_headers.mode',
    options: withServer({ forward_headers: { mode: 'only' } }),
    wrong: 'some',
    error: /forward_headers\.mode must be "all-except" or "only"/,
    misspeltError: /unknown field "Mode"; did you mean "mode"/,
  },
  {
    factory: 'identityForwarding',
    path: 'mcpServers.0.forward_headers.headers',
    options: withServer({ forward_headers: { headers: ['x-trace'] } }),
    wrong: 'x-trace',
    error: /forward_headers\.headers must be a list of non-empty strings/,
    misspeltError: /unknown field "Headers"; did you mean "headers"/,
  },
  {
    factory: 'identityForwarding',
    path: 'mcpServers.0.jwt_audience',
    options: withServer({ jwt_audience: 'tools' }),
    wrong: 7,
    error: /jwt_audience must be a non-empty string/,
    misspeltError: /unknown field "jwtAudience"; did you mean "jwt_audience"/,
  },
  {
    factory: 'identityForwarding',
    path: 'mcpServers.0.bearer_audience',
    options: withServer(
      { user_identity_forwarding: { method: 'bearer' }, bearer_audience: 'tools' },
      { acceptsIdentityTokens: true },
    ),
    wrong: 7,
    error: /bearer_audience must be a non-empty string/,
    misspeltError: /unknown field "bearerAudience"; did you mean "bearer_audience"/,
  },
  {
    factory: 'identityForwarding',
    path: 'signer',
    options: withServer({}, { signer: signer() }),
    wrong: 'rsa',
    error: /signer must be an identity token signer/,
  },
  {
    factory: 'identityForwarding',
    path: 'acceptsIdentityTokens',
    options: withServer({}, { acceptsIdentityTokens: true }),
    wrong: 'yes',
    error: /acceptsIdentityTokens must be true or false/,
  },
  {
    factory: 'identityForwarding',
    path: 'tokenCacheSize',
    options: withServer({}, { tokenCacheSize: 100 }),
    wrong: '100',
    error: /tokenCacheSize must be a positive whole number/,
  },
  ms('identityForwarding', 'timeoutMs', /timeoutMs must be a positive number/, withServer({}, { timeoutMs: 1000 })),
  ms(
    'identityForwarding',
    'streamIdleTimeoutMs',
    /streamIdleTimeoutMs must be a positive number/,
    withServer({}, { streamIdleTimeoutMs: 1000 }),
  ),
  {
    factory: 'identityForwarding',
    path: 'logger',
    options: withServer({}, { logger: fn('{ warn: () => undefined }', { warn: noop }) }),
    wrong: 'console',
    error: /logger must be an object with a warn/,
  },
  {
    factory: 'identityForwarding',
    path: 'now',
    options: withServer({}, { now: fn('() => 0', () => 0) }),
    wrong: 0,
    error: /now must be a function/,
  },
  {
    factory: 'identityForwarding',
    path: 'trustedProxies',
    options: withServer({}, { trustedProxies: ['10.0.0.5'] }),
    wrong: '10.0.0.5',
    error: /trustedProxies must be a list of IP addresses/,
  },
  {
    factory: 'identityForwarding',
    path: 'authorize',
    options: withServer({}, { authorize: fn('() => ({ allowed: true })', () => ({ allowed: true })) }),
    wrong: true,
    error: /authorize must be a function/,
  },
  {
    factory: 'identityForwarding',
    path: 'maxInspectedBodyBytes',
    options: withServer({}, { maxInspectedBodyBytes: 1024 }),
    wrong: '1kb',
    error: /maxInspectedBodyBytes must be a positive whole number of bytes/,
  },
  {
    factory: 'identityForwarding',
    path: 'maxInspectedAnswerBytes',
    options: withServer({}, { maxInspectedAnswerBytes: 1024 }),
    wrong: '1kb',
    error: /maxInspectedAnswerBytes must be a positive whole number of bytes/,
  },

  // protectedResourceMetadata
  {
    factory: 'protectedResourceMetadata',
    path: 'issuer',
    options: { issuer: 'https://idp.example.com' },
    wrong: 1,
    error: /issuer must be a string/,
  },
  {
    factory: 'protectedResourceMetadata',
    path: 'mcpServerSlugs',
    options: { mcpServerSlugs: ['tools'] },
    wrong: 'tools',
    error: /mcpServerSlugs must be a list of slugs or a set/,
  },
  {
    factory: 'protectedResourceMetadata',
    path: 'publicBaseUrl',
    options: { publicBaseUrl: 'https://gateway.example.com' },
    wrong: 443,
    error: /publicBaseUrl must be an http\(s\) origin/,
  },

  // signIdentityToken
  {
    factory: 'signIdentityToken',
    path: 'audience',
    required: /audience must be a non-empty string/,
    wrong: 7,
    error: /audience must be a non-empty string/,
  },
  {
    factory: 'signIdentityToken',
    path: 'expiresInSeconds',
    required: /expiresInSeconds must be a whole number of seconds/,
    wrong: '300',
    error: /expiresInSeconds must be a whole number of seconds/,
  },
  {
    factory: 'signIdentityToken',
    path: 'issuedAt',
    options: { ...FACTORIES.signIdentityToken.base, issuedAt: 1_700_000_000 },
    wrong: '1700000000',
    error: /issuedAt must be whole seconds/,
  },

  // verifyGatewayIdentity
  {
    factory: 'verifyGatewayIdentity',
    path: 'jwksUri',
    required: /jwksUri must be an absolute http\(s\) URL/,
    wrong: 443,
    error: /jwksUri must be an absolute http\(s\) URL/,
  },
  {
    factory: 'verifyGatewayIdentity',
    path: 'audience',
    required: /verifyGatewayIdentity needs an audience/,
    wrong: 7,
    error: /verifyGatewayIdentity needs an audience/,
    misspeltError: /verifyGatewayIdentity needs an audience/,
  },
  {
    factory: 'verifyGatewayIdentity',
    path: 'headerName',
    options: { ...FACTORIES.verifyGatewayIdentity.base, headerName: 'x-user-jwt' },
    wrong: 7,
    error: /headerName must be a non-empty string/,
  },
  {
    factory: 'verifyGatewayIdentity',
    path: 'issuer',
    options: { ...FACTORIES.verifyGatewayIdentity.base, issuer: 'gateway-mcp-gateway' },
    wrong: 7,
    error: /issuer must be a non-empty string/,
  },
  {
    factory: 'verifyGatewayIdentity',
    path: 'clockToleranceSeconds',
    options: { ...FACTORIES.verifyGatewayIdentity.base, clockToleranceSeconds: 5 },
    wrong: '5',
    error: /clockToleranceSeconds must be a number of seconds/,
  },

  // RemoteKeySet
  {
    factory: 'RemoteKeySet',
    path: 'jwksUri',
    required: /jwksUri must be an absolute http\(s\) URL/,
    wrong: 443,
    error: /jwksUri must be an absolute http\(s\) URL/,
  },
  ...(['cacheMaxAgeMs', 'cooldownMs', 'firstRetryMs', 'timeoutMs'] as const).map((name) =>
    ms('RemoteKeySet', name, new RegExp(`${name} must be a positive number`), {
      ...FACTORIES.RemoteKeySet.base,
      [name]: 1000,
    }),
  ),
  {
    factory: 'RemoteKeySet',
    path: 'maxResponseBytes',
    options: { ...FACTORIES.RemoteKeySet.base, maxResponseBytes: 1024 },
    wrong: '1kb',
    error: /maxResponseBytes must be a positive number/,
  },
  {
    factory: 'RemoteKeySet',
    path: 'now',
    options: { ...FACTORIES.RemoteKeySet.base, now: fn('() => 0', () => 0) },
    wrong: 0,
    error: /now must be a function/,
  },
  {
    factory: 'RemoteKeySet',
    path: 'onFetch',
    options: { ...FACTORIES.RemoteKeySet.base, onFetch: fn('() => undefined', noop) },
    wrong: 'count',
    error: /onFetch must be a function/,
  },

  // loadSigningKey
  {
    factory: 'loadSigningKey',
    path: 'privateKeyPem',
    options: { ...FACTORIES.loadSigningKey.base, privateKeyPem: '' },
    wrong: 1,
    error: /privateKeyPem must be a PEM string/,
  },
  {
    factory: 'loadSigningKey',
    path: 'previousPublicKeysPem',
    wrong: 1,
    error: /previousPublicKeysPem must be a PEM string/,
  },
  {
    factory: 'loadSigningKey',
    path: 'production',
    required: /production must be true or false/,
    wrong: 'no',
    error: /production must be true or false/,
  },
  {
    factory: 'loadSigningKey',
    path: 'jwtHeaderInUse',
    required: /jwtHeaderInUse must be true or false/,
    wrong: 'no',
    error: /jwtHeaderInUse must be true or false/,
  },

  // compileAccess
  {
    factory: 'compileAccess',
    path: 'mode',
    options: { mode: 'open' },
    wrong: 'closed',
    error: /access mode must be "open", "report" or "policies"/,
  },
  {
    factory: 'compileAccess',
    path: 'policies',
    options: { policies: [] },
    wrong: 'p',
    error: /policies must be a list of policies/,
  },
  {
    factory: 'compileAccess',
    path: 'policies.0.slug',
    required: /\.slug must be a non-empty string/,
    options: withPolicy({}),
    wrong: 7,
    error: /\.slug must be a non-empty string/,
    misspeltError: /\.slug must be a non-empty string/,
  },
  {
    factory: 'compileAccess',
    path: 'policies.0.name',
    options: withPolicy({ name: 'Support' }),
    wrong: 7,
    error: /\.name must be a string/,
    // A policy keeps the fields of its record (id, version, …): a misspelt name is one of them.
    misspelt: '',
  },
  {
    factory: 'compileAccess',
    path: 'policies.0.subjects',
    required: /\.subjects must be an object/,
    options: withPolicy({}),
    wrong: 'u',
    error: /\.subjects must be an object/,
    misspeltError: /\.subjects must be an object/,
  },
  ...(['users', 'groups', 'apiKeys'] as const).map((name): OptionRow => ({
    factory: 'compileAccess',
    path: `policies.0.subjects.${name}`,
    options: withPolicy({ subjects: { [name]: ['x'] } }),
    wrong: 'x',
    error: new RegExp(`subjects\\.${name} must be a list of non-empty strings`),
  })),
  {
    factory: 'compileAccess',
    path: 'policies.0.allow',
    required: /\.allow must be an object/,
    options: withPolicy({}),
    wrong: '@a/*',
    error: /\.allow must be an object/,
    misspeltError: /\.allow must be an object/,
  },
  ...(['models', 'integrations'] as const).map((name): OptionRow => ({
    factory: 'compileAccess',
    path: `policies.0.allow.${name}`,
    options: withPolicy({ allow: { [name]: ['x'] } }),
    wrong: 'x',
    error: new RegExp(`allow\\.${name} must be a list of non-empty strings`),
  })),
  {
    factory: 'compileAccess',
    path: 'policies.0.allow.mcpServers',
    options: withPolicy({ allow: { mcpServers: [{ server: 'tools' }] } }),
    wrong: 'tools',
    error: /allow\.mcpServers must be a list of \{ server, tools\? \}/,
  },
  {
    factory: 'compileAccess',
    path: 'policies.0.allow.mcpServers.0.server',
    required: /mcpServers\[0\]\.server/,
    options: withPolicy({ allow: { mcpServers: [{ server: 'tools' }] } }),
    wrong: 7,
    error: /mcpServers\[0\]\.server/,
  },
  {
    factory: 'compileAccess',
    path: 'policies.0.allow.mcpServers.0.tools',
    options: withPolicy({ allow: { mcpServers: [{ server: 'tools', tools: ['search'] }] } }),
    wrong: 'search',
    error: /mcpServers\[0\]\.tools must be a list of non-empty strings/,
  },

  // adminApi
  {
    factory: 'adminApi',
    path: 'store',
    required: /createAdminApi needs \{ store, access \}/,
    wrong: 'postgres',
    error: /store must be a CatalogStore/,
    misspeltError: /createAdminApi needs \{ store, access \}/,
  },
  {
    factory: 'adminApi',
    path: 'access',
    required: /createAdminApi needs \{ store, access \}/,
    wrong: 'admin-key',
    error: /access must be an AdminAccess/,
    misspeltError: /createAdminApi needs \{ store, access \}/,
  },
  {
    factory: 'adminApi',
    path: 'configRecords',
    options: { ...FACTORIES.adminApi.base, configRecords: use('configRecords') },
    wrong: 'gateway.json',
    error: /configRecords must be a ConfigRecords/,
  },
  ...(['afterWrite', 'beforeWrite', 'providerModels', 'explainAccess', 'onInternalError'] as const).map(
    (name): OptionRow => ({
      factory: 'adminApi',
      path: name,
      options: { ...FACTORIES.adminApi.base, [name]: fn('() => { throw new Error("unused"); }', noop) },
      wrong: 'x',
      error: new RegExp(`adminApi ${name} must be a function`),
    }),
  ),
  {
    factory: 'adminApi',
    path: 'bodyLimitBytes',
    options: { ...FACTORIES.adminApi.base, bodyLimitBytes: 1024 },
    wrong: '1mb',
    error: /bodyLimitBytes must be a positive whole number of bytes/,
  },
  {
    factory: 'adminApi',
    path: 'toolPins',
    options: {
      ...FACTORIES.adminApi.base,
      toolPins: fn('{ list: async () => [], approve: async () => { throw new Error("unused"); } }', {
        list: noop,
        approve: noop,
      }),
    },
    wrong: 'pins',
    error: /toolPins must be an object with list/,
  },
  {
    factory: 'adminApi',
    path: 'requestRecords',
    options: { ...FACTORIES.adminApi.base, requestRecords: use('database') },
    wrong: 'postgres://db',
    error: /requestRecords must be a catalog database/,
  },

  // AdminAccess
  {
    factory: 'AdminAccess',
    path: 'adminKey',
    options: { adminKey: 'k'.repeat(24) },
    wrong: 24,
    error: /admin key \(GATEWAY_ADMIN_KEY\) must be at least 24 characters/,
  },
  {
    factory: 'AdminAccess',
    path: 'verifyToken',
    options: { verifyToken: fn('async () => ({})', noop) },
    wrong: 'idp',
    error: /AdminAccess verifyToken must be a function/,
  },
  {
    factory: 'AdminAccess',
    path: 'adminClaim',
    options: { verifyToken: fn('async () => ({})', noop), adminClaim: { claim: 'groups', value: 'admin' } },
    wrong: 'groups',
    error: /adminClaim must be \{ claim: "groups", value: "gateway-admin" \}/,
  },
  ...(['claim', 'value'] as const).map((name): OptionRow => ({
    factory: 'AdminAccess',
    path: `adminClaim.${name}`,
    required: /adminClaim must be \{ claim: "groups", value: "gateway-admin" \}/,
    options: { verifyToken: fn('async () => ({})', noop), adminClaim: { claim: 'groups', value: 'admin' } },
    wrong: 7,
    error: /adminClaim must be \{ claim: "groups", value: "gateway-admin" \}/,
  })),
  {
    factory: 'AdminAccess',
    path: 'isApiKey',
    options: { isApiKey: fn('() => false', () => false) },
    wrong: true,
    error: /AdminAccess isApiKey must be a function/,
  },

  // gatewayConsole
  {
    factory: 'gatewayConsole',
    path: 'access',
    required: /createConsole needs \{ access, adminApi, sessionSecret \}/,
    wrong: 'admin-key',
    error: /gatewayConsole access must be an AdminAccess/,
    misspeltError: /createConsole needs \{ access, adminApi, sessionSecret \}/,
  },
  {
    factory: 'gatewayConsole',
    path: 'adminApi',
    required: /createConsole needs \{ access, adminApi, sessionSecret \}/,
    wrong: '/admin/v1',
    error: /createConsole needs \{ access, adminApi, sessionSecret \}/,
    misspeltError: /createConsole needs \{ access, adminApi, sessionSecret \}/,
  },
  {
    factory: 'gatewayConsole',
    path: 'sessionSecret',
    required: /needs \{ secret \}: at least 32 bytes/,
    wrong: 'secret',
    error: /needs \{ secret \}: at least 32 bytes/,
  },
  {
    factory: 'gatewayConsole',
    path: 'sessionLifetimeMs',
    options: { ...FACTORIES.gatewayConsole.base, sessionLifetimeMs: 60_000 },
    wrong: '8h',
    error: /lifetimeMs must be a positive whole number of milliseconds/,
  },
  {
    factory: 'gatewayConsole',
    path: 'testRecord',
    options: { ...FACTORIES.gatewayConsole.base, testRecord: fn('async () => { throw new Error("unused"); }', noop) },
    wrong: true,
    error: /gatewayConsole testRecord must be a function/,
  },
  {
    factory: 'gatewayConsole',
    path: 'publicBaseUrl',
    options: { ...FACTORIES.gatewayConsole.base, publicBaseUrl: 'https://gateway.example.com' },
    wrong: 443,
    error: /gatewayConsole publicBaseUrl must be an http\(s\) origin/,
  },

  // ConsoleSessions
  {
    factory: 'ConsoleSessions',
    path: 'secret',
    required: /needs \{ secret \}: at least 32 bytes/,
    wrong: 'secret',
    error: /needs \{ secret \}: at least 32 bytes/,
  },
  {
    factory: 'ConsoleSessions',
    path: 'lifetimeMs',
    options: { ...FACTORIES.ConsoleSessions.base, lifetimeMs: 60_000 },
    wrong: '8h',
    error: /lifetimeMs must be a positive whole number of milliseconds/,
  },
  {
    factory: 'ConsoleSessions',
    path: 'now',
    options: { ...FACTORIES.ConsoleSessions.base, now: fn('() => 0', () => 0) },
    wrong: 0,
    error: /ConsoleSessions now must be a function/,
  },

  // createModelRoutes: modelRouter's options, the same rows
  ...MODEL_ROUTER_ROWS.map((row): OptionRow => ({ ...row, factory: 'createModelRoutes' })),

  // LiveCatalog
  ms('LiveCatalog', 'reloadIntervalMs', /LiveCatalog reloadIntervalMs must be a positive number of milliseconds/, {
    reloadIntervalMs: 60_000,
  }),
  ms('LiveCatalog', 'retryIntervalMs', /LiveCatalog retryIntervalMs must be a positive number of milliseconds/, {
    retryIntervalMs: 1000,
  }),
  {
    factory: 'LiveCatalog',
    path: 'changeTracking',
    options: { changeTracking: 'audit' },
    wrong: 'notify',
    error: /LiveCatalog changeTracking must be "versions" or "audit"/,
  },
  {
    factory: 'LiveCatalog',
    path: 'onUnreadable',
    options: { onUnreadable: fn('() => undefined', noop) },
    wrong: 'log',
    error: /LiveCatalog onUnreadable must be a function/,
  },
  ms('LiveCatalog', 'debounceMs', /LiveCatalog debounceMs must be a non-negative number of milliseconds/, {
    debounceMs: 0,
  }),
  {
    factory: 'LiveCatalog',
    path: 'onChange',
    options: { onChange: fn('() => undefined', noop) },
    wrong: true,
    error: /LiveCatalog onChange must be a function/,
  },

  // RequestLogWriter
  {
    factory: 'RequestLogWriter',
    path: 'db',
    required: /RequestLogWriter needs \{ db \}, the catalog database/,
    wrong: 'postgres://gw@127.0.0.1/gw',
    error: /RequestLogWriter needs \{ db \}, the catalog database/,
  },
  {
    factory: 'RequestLogWriter',
    path: 'maxQueue',
    options: { ...FACTORIES.RequestLogWriter.base, maxQueue: 100 },
    wrong: '100',
    error: /RequestLogWriter maxQueue must be a whole number of at least 1/,
  },
  {
    factory: 'RequestLogWriter',
    path: 'batchSize',
    options: { ...FACTORIES.RequestLogWriter.base, batchSize: 50 },
    wrong: '50',
    error: /RequestLogWriter batchSize must be a whole number of at least 1/,
  },
  ms('RequestLogWriter', 'flushIntervalMs', /RequestLogWriter flushIntervalMs must be a whole number of at least 1/, {
    ...FACTORIES.RequestLogWriter.base,
    flushIntervalMs: 1000,
  }),
  {
    factory: 'RequestLogWriter',
    path: 'retentionDays',
    options: { ...FACTORIES.RequestLogWriter.base, retentionDays: 7 },
    wrong: '7d',
    error: /RequestLogWriter retentionDays must be a whole number of at least 1/,
  },
  ms(
    'RequestLogWriter',
    'retentionIntervalMs',
    /RequestLogWriter retentionIntervalMs must be a whole number of at least 1/,
    { ...FACTORIES.RequestLogWriter.base, retentionIntervalMs: 60_000 },
  ),
  {
    factory: 'RequestLogWriter',
    path: 'onError',
    options: { ...FACTORIES.RequestLogWriter.base, onError: fn('() => undefined', noop) },
    wrong: 'log',
    error: /RequestLogWriter onError must be a function/,
  },

  // openPostgres
  {
    factory: 'openPostgres',
    path: 'maxConnections',
    options: { maxConnections: 4 },
    wrong: '4',
    error: /openPostgres maxConnections must be a whole number of at least 1/,
  },
  ms('openPostgres', 'timeoutMs', /openPostgres timeoutMs must be a positive number of milliseconds/, {
    timeoutMs: 5000,
  }),
  {
    factory: 'openPostgres',
    path: 'onListenError',
    options: { onListenError: fn('() => undefined', noop) },
    wrong: 'log',
    error: /openPostgres onListenError must be a function/,
  },

  // IdentityTokenCache
  {
    factory: 'IdentityTokenCache',
    path: 'maxSize',
    options: { maxSize: 100 },
    wrong: '100',
    error: /IdentityTokenCache maxSize must be a positive whole number/,
  },
  {
    factory: 'IdentityTokenCache',
    path: 'now',
    options: { now: fn('() => 0', () => 0) },
    wrong: 0,
    error: /IdentityTokenCache now must be a function/,
  },
];

/** The misspelling of the last key of `path`: camelCase to snake_case and back, else capitalised. */
export function misspell(row: OptionRow): string {
  if (row.misspelt !== undefined) return row.misspelt;
  const name = row.path.split('.').pop() as string;
  if (/[A-Z]/.test(name)) return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
  if (name.includes('_')) return name.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());
  return name[0]!.toUpperCase() + name.slice(1);
}

/** The options of `row` (or its factory's base). */
export function rowOptions(row: OptionRow): Value {
  return row.options ?? FACTORIES[row.factory].base;
}

type Edit = { set: Value } | { rename: string } | { remove: true };

/** A copy of `options` with the option at `path` replaced, or renamed (key order kept). */
export function edit(options: Value, path: string, change: Edit): Value {
  const [head, ...rest] = path.split('.') as [string, ...string[]];
  if (Array.isArray(options)) {
    const index = Number(head);
    return options.map((item, i) => (i === index ? edit(item, rest.join('.'), change) : item));
  }
  if (typeof options !== 'object' || options === null || options instanceof Code)
    throw new Error(`No option at ${path}.`);
  const record = options as Record<string, Value>;
  if (rest.length > 0) {
    if (!(head in record)) throw new Error(`No option at ${head}.`);
    return { ...record, [head]: edit(record[head] as Value, rest.join('.'), change) };
  }
  if ('set' in change) return { ...record, [head]: change.set };
  if ('remove' in change) return Object.fromEntries(Object.entries(record).filter(([k]) => k !== head));
  if (!(head in record)) throw new Error(`The valid options of a row must hold its option (${head}).`);
  return Object.fromEntries(Object.entries(record).map(([k, v]) => [k === head ? change.rename : k, v]));
}

/** The runtime value of `value`: {@link Code} replaced by what it stands for. */
export function runtime(value: Value): unknown {
  if (value instanceof Code) return value.get();
  if (Array.isArray(value)) return value.map(runtime);
  if (typeof value === 'object' && value !== null)
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, runtime(v as Value)]));
  return value;
}

/** The TypeScript source of `value`, on one line. */
export function source(value: Value): string {
  if (value instanceof Code) return value.ts;
  if (Array.isArray(value)) return `[${value.map(source).join(', ')}]`;
  if (typeof value === 'object' && value !== null) {
    const fields = Object.entries(value).map(
      ([k, v]) => `${/^[A-Za-z_$][\w$]*$/.test(k) ? k : JSON.stringify(k)}: ${source(v as Value)}`,
    );
    return fields.length === 0 ? '{}' : `{ ${fields.join(', ')} }`;
  }
  return JSON.stringify(value);
}

/** The label of a row: factory and option, list indexes as `[]`. */
export function label(row: OptionRow): string {
  return `${row.factory} ${row.path.replace(/\.\d+/g, '[]')}`;
}

/** The fixture `tsc` compiles: every row's valid, misspelt and mistyped call. */
export function renderFixture(): string {
  const values = new Map<string, Set<string>>();
  const types = new Map<string, Set<string>>();
  const add = (map: Map<string, Set<string>>, from: string, name: string) =>
    map.set(from, (map.get(from) ?? new Set()).add(name));
  for (const [name, factory] of Object.entries(FACTORIES)) {
    if (name !== 'signIdentityToken') add(values, factory.from, name);
  }
  for (const [from, type] of Object.values(DECLARED)) {
    if (from !== undefined && !values.get(from)?.has(type)) add(types, from, type);
  }
  const modules = [...new Set([...values.keys(), ...types.keys()])].sort();
  const lines = [
    '// Generated from option-table.ts by option-types.test.ts (UPDATE_OPTION_FIXTURE=1): do not edit.',
    '// Each bad call must be refused by tsc: an unused @ts-expect-error fails `tsc -p examples/server/test/types`.',
    ...modules.map((from) => {
      const names = [...(values.get(from) ?? [])].sort();
      const typeNames = [...(types.get(from) ?? [])].sort().map((t) => `type ${t}`);
      return `import { ${[...names, ...typeNames].join(', ')} } from '${from}';`;
    }),
    '',
    ...Object.entries(DECLARED).map(([name, [, type]]) => `declare const ${name}: ${type};`),
    '',
    'export function validCalls(): unknown[] {',
    '  return [',
    ...Object.keys(FACTORIES).map((name) => {
      const factory = FACTORIES[name as FactoryName];
      return `    ${factory.call.replace('%', source(factory.base))},`;
    }),
    '  ];',
    '}',
  ];
  ROWS.forEach((row, index) => {
    const call = FACTORIES[row.factory].call;
    const options = rowOptions(row);
    const misspelt = misspell(row);
    lines.push(
      '',
      `// ${label(row)}`,
      `export function row${index}(): unknown[] {`,
      '  return [',
      `    ${call.replace('%', source(options))},`,
      ...(misspelt === ''
        ? []
        : [
            `    // @ts-expect-error misspelt: ${misspelt}`,
            `    ${call.replace('%', source(edit(options, row.path, { rename: misspelt })))},`,
          ]),
      ...(row.required === undefined
        ? []
        : [
            `    // @ts-expect-error missing: ${row.path.split('.').pop() as string}`,
            `    ${call.replace('%', source(edit(options, row.path, { remove: true })))},`,
          ]),
      `    // @ts-expect-error wrong type: ${source(row.wrong)}`,
      `    ${call.replace('%', source(edit(options, row.path, { set: row.wrong })))},`,
      '  ];',
      '}',
    );
  });
  return `${lines.join('\n')}\n`;
}

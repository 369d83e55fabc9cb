// Generated from option-table.ts by option-types.test.ts (UPDATE_OPTION_FIXTURE=1): do not edit.
// Each bad call must be refused by tsc: an unused @ts-expect-error fails `tsc -p examples/server/test/types`.
import { compileAccess } from '@gw/access';
import { AdminAccess, LiveCatalog, RequestLogWriter, adminApi, openPostgres, type AdminApiHandler, type CatalogDatabase, type CatalogStore, type ConfigRecords } from '@gw/catalog';
import { ConsoleSessions, gatewayConsole } from '@gw/console';
import { IdentityTokenCache, authenticate, identityForwarding, protectedResourceMetadata } from '@gw/identity-forwarding';
import { RemoteKeySet, loadSigningKey, verifyGatewayIdentity, type IdentityTokenSigner, type KeyResolver } from '@gw/jwks';
import { createModelRoutes, modelRouter } from '@gw/model-router';
import { sigv4Proxy } from '@gw/sigv4-proxy';

declare const signer: IdentityTokenSigner;
declare const keys: KeyResolver;
declare const store: CatalogStore;
declare const access: AdminAccess;
declare const configRecords: ConfigRecords;
declare const database: CatalogDatabase;
declare const adminHandler: AdminApiHandler;
declare const secret: Buffer;

export function validCalls(): unknown[] {
  return [
    modelRouter({}),
    sigv4Proxy({ integrations: [{ slug: "kb", accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: "us-east-1" }] }),
    authenticate({}),
    identityForwarding({ mcpServers: [] }),
    protectedResourceMetadata({}),
    signer.signIdentityToken({ sub: "u" }, { audience: "https://mcp.example.com", expiresInSeconds: 300 }),
    verifyGatewayIdentity({ jwksUri: "https://gateway.example.com/.well-known/jwks.json", audience: "https://mcp.example.com" }),
    new RemoteKeySet({ jwksUri: "https://idp.example.com/.well-known/jwks.json" }),
    loadSigningKey({ production: false, jwtHeaderInUse: false, previousPublicKeysPem: "" }),
    compileAccess({}),
    adminApi({ store: store, access: access }),
    new AdminAccess({}),
    gatewayConsole({ access: access, adminApi: adminHandler, sessionSecret: secret }),
    new ConsoleSessions({ secret: secret }),
    createModelRoutes({}),
    new LiveCatalog(database, store, {}),
    new RequestLogWriter({ db: database }),
    openPostgres("postgres://gw@127.0.0.1:9/gw", {}),
    new IdentityTokenCache({}),
  ];
}

// modelRouter providers
export function row0(): unknown[] {
  return [
    modelRouter({ providers: [] }),
    // @ts-expect-error misspelt: Providers
    modelRouter({ Providers: [] }),
    // @ts-expect-error wrong type: "claude"
    modelRouter({ providers: "claude" }),
  ];
}

// modelRouter providers[].slug
export function row1(): unknown[] {
  return [
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options" }] }),
    // @ts-expect-error misspelt: Slug
    modelRouter({ providers: [{ Slug: "claude", provider: "anthropic", apiKey: "sk-ant-options" }] }),
    // @ts-expect-error missing: slug
    modelRouter({ providers: [{ provider: "anthropic", apiKey: "sk-ant-options" }] }),
    // @ts-expect-error wrong type: 7
    modelRouter({ providers: [{ slug: 7, provider: "anthropic", apiKey: "sk-ant-options" }] }),
  ];
}

// modelRouter providers[].name
export function row2(): unknown[] {
  return [
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", name: "Claude" }] }),
    // @ts-expect-error misspelt: Name
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", Name: "Claude" }] }),
    // @ts-expect-error wrong type: 7
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", name: 7 }] }),
  ];
}

// modelRouter providers[].provider
export function row3(): unknown[] {
  return [
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options" }] }),
    // @ts-expect-error misspelt: Provider
    modelRouter({ providers: [{ slug: "claude", Provider: "anthropic", apiKey: "sk-ant-options" }] }),
    // @ts-expect-error missing: provider
    modelRouter({ providers: [{ slug: "claude", apiKey: "sk-ant-options" }] }),
    // @ts-expect-error wrong type: "openai"
    modelRouter({ providers: [{ slug: "claude", provider: "openai", apiKey: "sk-ant-options" }] }),
  ];
}

// modelRouter providers[].apiKey
export function row4(): unknown[] {
  return [
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options" }] }),
    // @ts-expect-error misspelt: api_key
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic", api_key: "sk-ant-options" }] }),
    // @ts-expect-error missing: apiKey
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic" }] }),
    // @ts-expect-error wrong type: 12
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic", apiKey: 12 }] }),
  ];
}

// modelRouter providers[].baseUrl
export function row5(): unknown[] {
  return [
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", baseUrl: "https://api.anthropic.com" }] }),
    // @ts-expect-error misspelt: base_url
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", base_url: "https://api.anthropic.com" }] }),
    // @ts-expect-error wrong type: 443
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", baseUrl: 443 }] }),
  ];
}

// modelRouter providers[].models
export function row6(): unknown[] {
  return [
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", models: { mode: "all" } }] }),
    // @ts-expect-error misspelt: Models
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", Models: { mode: "all" } }] }),
    // @ts-expect-error wrong type: "all"
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", models: "all" }] }),
  ];
}

// modelRouter providers[].models.mode
export function row7(): unknown[] {
  return [
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", models: { mode: "all" } }] }),
    // @ts-expect-error misspelt: Mode
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", models: { Mode: "all" } }] }),
    // @ts-expect-error missing: mode
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", models: {} }] }),
    // @ts-expect-error wrong type: "some"
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", models: { mode: "some" } }] }),
  ];
}

// modelRouter providers[].models.models
export function row8(): unknown[] {
  return [
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", models: { mode: "custom", models: ["claude-sonnet-4-5"] } }] }),
    // @ts-expect-error misspelt: Models
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", models: { mode: "custom", Models: ["claude-sonnet-4-5"] } }] }),
    // @ts-expect-error missing: models
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", models: { mode: "custom" } }] }),
    // @ts-expect-error wrong type: "claude-sonnet-4-5"
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", models: { mode: "custom", models: "claude-sonnet-4-5" } }] }),
  ];
}

// modelRouter providers[].models.autoEnableNew
export function row9(): unknown[] {
  return [
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", models: { mode: "custom", models: [], autoEnableNew: true } }] }),
    // @ts-expect-error misspelt: auto_enable_new
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", models: { mode: "custom", models: [], auto_enable_new: true } }] }),
    // @ts-expect-error wrong type: "yes"
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", models: { mode: "custom", models: [], autoEnableNew: "yes" } }] }),
  ];
}

// modelRouter providers[].defaultMaxTokens
export function row10(): unknown[] {
  return [
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", defaultMaxTokens: 1024 }] }),
    // @ts-expect-error misspelt: default_max_tokens
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", default_max_tokens: 1024 }] }),
    // @ts-expect-error wrong type: "1024"
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", defaultMaxTokens: "1024" }] }),
  ];
}

// modelRouter providers[].knownModels
export function row11(): unknown[] {
  return [
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", knownModels: ["claude-sonnet-4-5"] }] }),
    // @ts-expect-error misspelt: known_models
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", known_models: ["claude-sonnet-4-5"] }] }),
    // @ts-expect-error wrong type: "claude-sonnet-4-5"
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", knownModels: "claude-sonnet-4-5" }] }),
  ];
}

// modelRouter providers[].cache
export function row12(): unknown[] {
  return [
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", cache: {} }] }),
    // @ts-expect-error misspelt: Cache
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", Cache: {} }] }),
    // @ts-expect-error wrong type: true
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", cache: true }] }),
  ];
}

// modelRouter providers[].cache.enabled
export function row13(): unknown[] {
  return [
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", cache: { enabled: false } }] }),
    // @ts-expect-error misspelt: Enabled
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", cache: { Enabled: false } }] }),
    // @ts-expect-error wrong type: "no"
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", cache: { enabled: "no" } }] }),
  ];
}

// modelRouter providers[].cache.scope
export function row14(): unknown[] {
  return [
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", cache: { scope: "shared" } }] }),
    // @ts-expect-error misspelt: Scope
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", cache: { Scope: "shared" } }] }),
    // @ts-expect-error wrong type: "everyone"
    modelRouter({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", cache: { scope: "everyone" } }] }),
  ];
}

// modelRouter catalog
export function row15(): unknown[] {
  return [
    modelRouter({ catalog: { resolveProvider: () => undefined, listProviders: () => [] } }),
    // @ts-expect-error misspelt: Catalog
    modelRouter({ Catalog: { resolveProvider: () => undefined, listProviders: () => [] } }),
    // @ts-expect-error wrong type: "postgres"
    modelRouter({ catalog: "postgres" }),
  ];
}

// modelRouter prompts
export function row16(): unknown[] {
  return [
    modelRouter({ prompts: [{ id: "p", provider: "@claude", model: "m", messages: [] }] }),
    // @ts-expect-error misspelt: Prompts
    modelRouter({ Prompts: [{ id: "p", provider: "@claude", model: "m", messages: [] }] }),
    // @ts-expect-error wrong type: "p"
    modelRouter({ prompts: "p" }),
  ];
}

// modelRouter resolvePrompt
export function row17(): unknown[] {
  return [
    modelRouter({ resolvePrompt: () => undefined }),
    // @ts-expect-error misspelt: resolve_prompt
    modelRouter({ resolve_prompt: () => undefined }),
    // @ts-expect-error wrong type: "p"
    modelRouter({ resolvePrompt: "p" }),
  ];
}

// modelRouter bodyLimit
export function row18(): unknown[] {
  return [
    modelRouter({ bodyLimit: "50mb" }),
    // @ts-expect-error misspelt: body_limit
    modelRouter({ body_limit: "50mb" }),
    // @ts-expect-error wrong type: true
    modelRouter({ bodyLimit: true }),
  ];
}

// modelRouter maxJsonDepth
export function row19(): unknown[] {
  return [
    modelRouter({ maxJsonDepth: 64 }),
    // @ts-expect-error misspelt: max_json_depth
    modelRouter({ max_json_depth: 64 }),
    // @ts-expect-error wrong type: "64"
    modelRouter({ maxJsonDepth: "64" }),
  ];
}

// modelRouter timeoutMs
export function row20(): unknown[] {
  return [
    modelRouter({ timeoutMs: 1000 }),
    // @ts-expect-error misspelt: timeout_ms
    modelRouter({ timeout_ms: 1000 }),
    // @ts-expect-error wrong type: "30000"
    modelRouter({ timeoutMs: "30000" }),
  ];
}

// modelRouter streamIdleTimeoutMs
export function row21(): unknown[] {
  return [
    modelRouter({ streamIdleTimeoutMs: 1000 }),
    // @ts-expect-error misspelt: stream_idle_timeout_ms
    modelRouter({ stream_idle_timeout_ms: 1000 }),
    // @ts-expect-error wrong type: "30000"
    modelRouter({ streamIdleTimeoutMs: "30000" }),
  ];
}

// modelRouter maxRetryAttempts
export function row22(): unknown[] {
  return [
    modelRouter({ maxRetryAttempts: 2 }),
    // @ts-expect-error misspelt: max_retry_attempts
    modelRouter({ max_retry_attempts: 2 }),
    // @ts-expect-error wrong type: "2"
    modelRouter({ maxRetryAttempts: "2" }),
  ];
}

// modelRouter maxRetryTimeMs
export function row23(): unknown[] {
  return [
    modelRouter({ maxRetryTimeMs: 1000 }),
    // @ts-expect-error misspelt: max_retry_time_ms
    modelRouter({ max_retry_time_ms: 1000 }),
    // @ts-expect-error wrong type: "30000"
    modelRouter({ maxRetryTimeMs: "30000" }),
  ];
}

// modelRouter callerId
export function row24(): unknown[] {
  return [
    modelRouter({ callerId: () => "caller" }),
    // @ts-expect-error misspelt: caller_id
    modelRouter({ caller_id: () => "caller" }),
    // @ts-expect-error wrong type: "caller"
    modelRouter({ callerId: "caller" }),
  ];
}

// modelRouter onInternalError
export function row25(): unknown[] {
  return [
    modelRouter({ onInternalError: () => undefined }),
    // @ts-expect-error misspelt: on_internal_error
    modelRouter({ on_internal_error: () => undefined }),
    // @ts-expect-error wrong type: "log"
    modelRouter({ onInternalError: "log" }),
  ];
}

// modelRouter authorize
export function row26(): unknown[] {
  return [
    modelRouter({ authorize: () => true }),
    // @ts-expect-error misspelt: Authorize
    modelRouter({ Authorize: () => true }),
    // @ts-expect-error wrong type: true
    modelRouter({ authorize: true }),
  ];
}

// modelRouter cacheStore
export function row27(): unknown[] {
  return [
    modelRouter({ cacheStore: { get: async () => undefined, set: async () => undefined } }),
    // @ts-expect-error misspelt: cache_store
    modelRouter({ cache_store: { get: async () => undefined, set: async () => undefined } }),
    // @ts-expect-error wrong type: "redis"
    modelRouter({ cacheStore: "redis" }),
  ];
}

// modelRouter now
export function row28(): unknown[] {
  return [
    modelRouter({ now: () => 0 }),
    // @ts-expect-error misspelt: Now
    modelRouter({ Now: () => 0 }),
    // @ts-expect-error wrong type: 0
    modelRouter({ now: 0 }),
  ];
}

// sigv4Proxy integrations
export function row29(): unknown[] {
  return [
    sigv4Proxy({ integrations: [{ slug: "kb", accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: "us-east-1" }] }),
    // @ts-expect-error misspelt: Integrations
    sigv4Proxy({ Integrations: [{ slug: "kb", accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: "us-east-1" }] }),
    // @ts-expect-error wrong type: "kb"
    sigv4Proxy({ integrations: "kb" }),
  ];
}

// sigv4Proxy integrations[].slug
export function row30(): unknown[] {
  return [
    sigv4Proxy({ integrations: [{ slug: "kb", accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: "us-east-1" }] }),
    // @ts-expect-error misspelt: Slug
    sigv4Proxy({ integrations: [{ Slug: "kb", accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: "us-east-1" }] }),
    // @ts-expect-error missing: slug
    sigv4Proxy({ integrations: [{ accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: "us-east-1" }] }),
    // @ts-expect-error wrong type: 7
    sigv4Proxy({ integrations: [{ slug: 7, accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: "us-east-1" }] }),
  ];
}

// sigv4Proxy integrations[].name
export function row31(): unknown[] {
  return [
    sigv4Proxy({ integrations: [{ slug: "kb", accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: "us-east-1", name: "KB" }] }),
    // @ts-expect-error misspelt: Name
    sigv4Proxy({ integrations: [{ slug: "kb", accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: "us-east-1", Name: "KB" }] }),
    // @ts-expect-error wrong type: 7
    sigv4Proxy({ integrations: [{ slug: "kb", accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: "us-east-1", name: 7 }] }),
  ];
}

// sigv4Proxy integrations[].provider
export function row32(): unknown[] {
  return [
    sigv4Proxy({ integrations: [{ slug: "kb", accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: "us-east-1", provider: "bedrock" }] }),
    // @ts-expect-error misspelt: Provider
    sigv4Proxy({ integrations: [{ slug: "kb", accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: "us-east-1", Provider: "bedrock" }] }),
    // @ts-expect-error wrong type: "anthropic"
    sigv4Proxy({ integrations: [{ slug: "kb", accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: "us-east-1", provider: "anthropic" }] }),
  ];
}

// sigv4Proxy integrations[].accessKeyId
export function row33(): unknown[] {
  return [
    sigv4Proxy({ integrations: [{ slug: "kb", accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: "us-east-1" }] }),
    // @ts-expect-error misspelt: access_key_id
    sigv4Proxy({ integrations: [{ slug: "kb", access_key_id: "AKIDEXAMPLE", secretAccessKey: "secret", region: "us-east-1" }] }),
    // @ts-expect-error missing: accessKeyId
    sigv4Proxy({ integrations: [{ slug: "kb", secretAccessKey: "secret", region: "us-east-1" }] }),
    // @ts-expect-error wrong type: 7
    sigv4Proxy({ integrations: [{ slug: "kb", accessKeyId: 7, secretAccessKey: "secret", region: "us-east-1" }] }),
  ];
}

// sigv4Proxy integrations[].secretAccessKey
export function row34(): unknown[] {
  return [
    sigv4Proxy({ integrations: [{ slug: "kb", accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: "us-east-1" }] }),
    // @ts-expect-error misspelt: secret_access_key
    sigv4Proxy({ integrations: [{ slug: "kb", accessKeyId: "AKIDEXAMPLE", secret_access_key: "secret", region: "us-east-1" }] }),
    // @ts-expect-error missing: secretAccessKey
    sigv4Proxy({ integrations: [{ slug: "kb", accessKeyId: "AKIDEXAMPLE", region: "us-east-1" }] }),
    // @ts-expect-error wrong type: 7
    sigv4Proxy({ integrations: [{ slug: "kb", accessKeyId: "AKIDEXAMPLE", secretAccessKey: 7, region: "us-east-1" }] }),
  ];
}

// sigv4Proxy integrations[].sessionToken
export function row35(): unknown[] {
  return [
    sigv4Proxy({ integrations: [{ slug: "kb", accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: "us-east-1", sessionToken: "token" }] }),
    // @ts-expect-error misspelt: session_token
    sigv4Proxy({ integrations: [{ slug: "kb", accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: "us-east-1", session_token: "token" }] }),
    // @ts-expect-error wrong type: 7
    sigv4Proxy({ integrations: [{ slug: "kb", accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: "us-east-1", sessionToken: 7 }] }),
  ];
}

// sigv4Proxy integrations[].region
export function row36(): unknown[] {
  return [
    sigv4Proxy({ integrations: [{ slug: "kb", accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: "us-east-1" }] }),
    // @ts-expect-error misspelt: Region
    sigv4Proxy({ integrations: [{ slug: "kb", accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", Region: "us-east-1" }] }),
    // @ts-expect-error missing: region
    sigv4Proxy({ integrations: [{ slug: "kb", accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret" }] }),
    // @ts-expect-error wrong type: 1
    sigv4Proxy({ integrations: [{ slug: "kb", accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: 1 }] }),
  ];
}

// sigv4Proxy integrations[].allowedHosts
export function row37(): unknown[] {
  return [
    sigv4Proxy({ integrations: [{ slug: "kb", accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: "us-east-1", allowedHosts: ["http://127.0.0.1:9"] }] }),
    // @ts-expect-error misspelt: allowed_hosts
    sigv4Proxy({ integrations: [{ slug: "kb", accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: "us-east-1", allowed_hosts: ["http://127.0.0.1:9"] }] }),
    // @ts-expect-error wrong type: "http://127.0.0.1:9"
    sigv4Proxy({ integrations: [{ slug: "kb", accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: "us-east-1", allowedHosts: "http://127.0.0.1:9" }] }),
  ];
}

// sigv4Proxy integrations[].models
export function row38(): unknown[] {
  return [
    sigv4Proxy({ integrations: [{ slug: "kb", accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: "us-east-1", models: { mode: "all" } }] }),
    // @ts-expect-error misspelt: Models
    sigv4Proxy({ integrations: [{ slug: "kb", accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: "us-east-1", Models: { mode: "all" } }] }),
    // @ts-expect-error wrong type: "all"
    sigv4Proxy({ integrations: [{ slug: "kb", accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: "us-east-1", models: "all" }] }),
  ];
}

// sigv4Proxy resolveIntegration
export function row39(): unknown[] {
  return [
    sigv4Proxy({ resolveIntegration: () => undefined }),
    // @ts-expect-error misspelt: resolve_integration
    sigv4Proxy({ resolve_integration: () => undefined }),
    // @ts-expect-error wrong type: "kb"
    sigv4Proxy({ resolveIntegration: "kb" }),
  ];
}

// sigv4Proxy maxBodyBytes
export function row40(): unknown[] {
  return [
    sigv4Proxy({ integrations: [{ slug: "kb", accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: "us-east-1" }], maxBodyBytes: 1024 }),
    // @ts-expect-error misspelt: max_body_bytes
    sigv4Proxy({ integrations: [{ slug: "kb", accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: "us-east-1" }], max_body_bytes: 1024 }),
    // @ts-expect-error wrong type: "1mb"
    sigv4Proxy({ integrations: [{ slug: "kb", accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: "us-east-1" }], maxBodyBytes: "1mb" }),
  ];
}

// sigv4Proxy timeoutMs
export function row41(): unknown[] {
  return [
    sigv4Proxy({ integrations: [{ slug: "kb", accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: "us-east-1" }], timeoutMs: 1000 }),
    // @ts-expect-error misspelt: timeout_ms
    sigv4Proxy({ integrations: [{ slug: "kb", accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: "us-east-1" }], timeout_ms: 1000 }),
    // @ts-expect-error wrong type: "30000"
    sigv4Proxy({ integrations: [{ slug: "kb", accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: "us-east-1" }], timeoutMs: "30000" }),
  ];
}

// sigv4Proxy idleTimeoutMs
export function row42(): unknown[] {
  return [
    sigv4Proxy({ integrations: [{ slug: "kb", accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: "us-east-1" }], idleTimeoutMs: 1000 }),
    // @ts-expect-error misspelt: idle_timeout_ms
    sigv4Proxy({ integrations: [{ slug: "kb", accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: "us-east-1" }], idle_timeout_ms: 1000 }),
    // @ts-expect-error wrong type: "30000"
    sigv4Proxy({ integrations: [{ slug: "kb", accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: "us-east-1" }], idleTimeoutMs: "30000" }),
  ];
}

// sigv4Proxy authorize
export function row43(): unknown[] {
  return [
    sigv4Proxy({ integrations: [{ slug: "kb", accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: "us-east-1" }], authorize: () => true }),
    // @ts-expect-error misspelt: Authorize
    sigv4Proxy({ integrations: [{ slug: "kb", accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: "us-east-1" }], Authorize: () => true }),
    // @ts-expect-error wrong type: true
    sigv4Proxy({ integrations: [{ slug: "kb", accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", region: "us-east-1" }], authorize: true }),
  ];
}

// authenticate apiKeys
export function row44(): unknown[] {
  return [
    authenticate({ apiKeys: [] }),
    // @ts-expect-error misspelt: api_keys
    authenticate({ api_keys: [] }),
    // @ts-expect-error wrong type: "gw-key"
    authenticate({ apiKeys: "gw-key" }),
  ];
}

// authenticate apiKeys[].key
export function row45(): unknown[] {
  return [
    authenticate({ apiKeys: [{ key: "gw-options-key", user: { user_id: "u" } }] }),
    // @ts-expect-error misspelt: Key
    authenticate({ apiKeys: [{ Key: "gw-options-key", user: { user_id: "u" } }] }),
    // @ts-expect-error missing: key
    authenticate({ apiKeys: [{ user: { user_id: "u" } }] }),
    // @ts-expect-error wrong type: 12345678
    authenticate({ apiKeys: [{ key: 12345678, user: { user_id: "u" } }] }),
  ];
}

// authenticate apiKeys[].keySha256
export function row46(): unknown[] {
  return [
    authenticate({ apiKeys: [{ keySha256: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", user: { user_id: "u" } }] }),
    // @ts-expect-error misspelt: key_sha256
    authenticate({ apiKeys: [{ key_sha256: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", user: { user_id: "u" } }] }),
    // @ts-expect-error wrong type: 1
    authenticate({ apiKeys: [{ keySha256: 1, user: { user_id: "u" } }] }),
  ];
}

// authenticate apiKeys[].user
export function row47(): unknown[] {
  return [
    authenticate({ apiKeys: [{ key: "gw-options-key", user: { user_id: "u" } }] }),
    // @ts-expect-error misspelt: User
    authenticate({ apiKeys: [{ key: "gw-options-key", User: { user_id: "u" } }] }),
    // @ts-expect-error missing: user
    authenticate({ apiKeys: [{ key: "gw-options-key" }] }),
    // @ts-expect-error wrong type: "u"
    authenticate({ apiKeys: [{ key: "gw-options-key", user: "u" }] }),
  ];
}

// authenticate apiKeys[].id
export function row48(): unknown[] {
  return [
    authenticate({ apiKeys: [{ key: "gw-options-key", user: { user_id: "u" }, id: "k1" }] }),
    // @ts-expect-error misspelt: Id
    authenticate({ apiKeys: [{ key: "gw-options-key", user: { user_id: "u" }, Id: "k1" }] }),
    // @ts-expect-error wrong type: 1
    authenticate({ apiKeys: [{ key: "gw-options-key", user: { user_id: "u" }, id: 1 }] }),
  ];
}

// authenticate jwtValidation
export function row49(): unknown[] {
  return [
    authenticate({ jwtValidation: { jwksUri: "https://idp.example.com/.well-known/jwks.json" } }),
    // @ts-expect-error misspelt: jwt_validation
    authenticate({ jwt_validation: { jwksUri: "https://idp.example.com/.well-known/jwks.json" } }),
    // @ts-expect-error wrong type: "https://idp.example.com"
    authenticate({ jwtValidation: "https://idp.example.com" }),
  ];
}

// authenticate jwtValidation.jwksUri
export function row50(): unknown[] {
  return [
    authenticate({ jwtValidation: { jwksUri: "https://idp.example.com/.well-known/jwks.json" } }),
    // @ts-expect-error misspelt: jwks_uri
    authenticate({ jwtValidation: { jwks_uri: "https://idp.example.com/.well-known/jwks.json" } }),
    // @ts-expect-error missing: jwksUri
    authenticate({ jwtValidation: {} }),
    // @ts-expect-error wrong type: 443
    authenticate({ jwtValidation: { jwksUri: 443 } }),
  ];
}

// authenticate jwtValidation.requiredClaims
export function row51(): unknown[] {
  return [
    authenticate({ jwtValidation: { jwksUri: "https://idp.example.com/.well-known/jwks.json", requiredClaims: ["email"] } }),
    // @ts-expect-error misspelt: required_claims
    authenticate({ jwtValidation: { jwksUri: "https://idp.example.com/.well-known/jwks.json", required_claims: ["email"] } }),
    // @ts-expect-error wrong type: "email"
    authenticate({ jwtValidation: { jwksUri: "https://idp.example.com/.well-known/jwks.json", requiredClaims: "email" } }),
  ];
}

// authenticate jwtValidation.issuer
export function row52(): unknown[] {
  return [
    authenticate({ jwtValidation: { jwksUri: "https://idp.example.com/.well-known/jwks.json", issuer: "https://idp.example.com" } }),
    // @ts-expect-error misspelt: Issuer
    authenticate({ jwtValidation: { jwksUri: "https://idp.example.com/.well-known/jwks.json", Issuer: "https://idp.example.com" } }),
    // @ts-expect-error wrong type: 1
    authenticate({ jwtValidation: { jwksUri: "https://idp.example.com/.well-known/jwks.json", issuer: 1 } }),
  ];
}

// authenticate jwtValidation.audience
export function row53(): unknown[] {
  return [
    authenticate({ jwtValidation: { jwksUri: "https://idp.example.com/.well-known/jwks.json", audience: "gateway" } }),
    // @ts-expect-error misspelt: Audience
    authenticate({ jwtValidation: { jwksUri: "https://idp.example.com/.well-known/jwks.json", Audience: "gateway" } }),
    // @ts-expect-error wrong type: ["gateway"]
    authenticate({ jwtValidation: { jwksUri: "https://idp.example.com/.well-known/jwks.json", audience: ["gateway"] } }),
  ];
}

// authenticate jwtValidation.algorithms
export function row54(): unknown[] {
  return [
    authenticate({ jwtValidation: { jwksUri: "https://idp.example.com/.well-known/jwks.json", algorithms: ["RS256"] } }),
    // @ts-expect-error misspelt: Algorithms
    authenticate({ jwtValidation: { jwksUri: "https://idp.example.com/.well-known/jwks.json", Algorithms: ["RS256"] } }),
    // @ts-expect-error wrong type: ["HS256"]
    authenticate({ jwtValidation: { jwksUri: "https://idp.example.com/.well-known/jwks.json", algorithms: ["HS256"] } }),
  ];
}

// authenticate jwtValidation.clockToleranceSeconds
export function row55(): unknown[] {
  return [
    authenticate({ jwtValidation: { jwksUri: "https://idp.example.com/.well-known/jwks.json", clockToleranceSeconds: 5 } }),
    // @ts-expect-error misspelt: clock_tolerance_seconds
    authenticate({ jwtValidation: { jwksUri: "https://idp.example.com/.well-known/jwks.json", clock_tolerance_seconds: 5 } }),
    // @ts-expect-error wrong type: "5"
    authenticate({ jwtValidation: { jwksUri: "https://idp.example.com/.well-known/jwks.json", clockToleranceSeconds: "5" } }),
  ];
}

// authenticate jwtValidation.keys
export function row56(): unknown[] {
  return [
    authenticate({ jwtValidation: { keys: keys } }),
    // @ts-expect-error misspelt: Keys
    authenticate({ jwtValidation: { Keys: keys } }),
    // @ts-expect-error wrong type: "jwks"
    authenticate({ jwtValidation: { keys: "jwks" } }),
  ];
}

// authenticate jwtValidation.onKeySetFetch
export function row57(): unknown[] {
  return [
    authenticate({ jwtValidation: { jwksUri: "https://idp.example.com/.well-known/jwks.json", onKeySetFetch: () => undefined } }),
    // @ts-expect-error misspelt: on_key_set_fetch
    authenticate({ jwtValidation: { jwksUri: "https://idp.example.com/.well-known/jwks.json", on_key_set_fetch: () => undefined } }),
    // @ts-expect-error wrong type: "count"
    authenticate({ jwtValidation: { jwksUri: "https://idp.example.com/.well-known/jwks.json", onKeySetFetch: "count" } }),
  ];
}

// authenticate jwtValidation.keySet
export function row58(): unknown[] {
  return [
    authenticate({ jwtValidation: { jwksUri: "https://idp.example.com/.well-known/jwks.json", keySet: {} } }),
    // @ts-expect-error misspelt: key_set
    authenticate({ jwtValidation: { jwksUri: "https://idp.example.com/.well-known/jwks.json", key_set: {} } }),
    // @ts-expect-error wrong type: 600000
    authenticate({ jwtValidation: { jwksUri: "https://idp.example.com/.well-known/jwks.json", keySet: 600000 } }),
  ];
}

// authenticate jwtValidation.keySet.cacheMaxAgeMs
export function row59(): unknown[] {
  return [
    authenticate({ jwtValidation: { jwksUri: "https://idp.example.com/.well-known/jwks.json", keySet: { cacheMaxAgeMs: 1000 } } }),
    // @ts-expect-error misspelt: cache_max_age_ms
    authenticate({ jwtValidation: { jwksUri: "https://idp.example.com/.well-known/jwks.json", keySet: { cache_max_age_ms: 1000 } } }),
    // @ts-expect-error wrong type: "30000"
    authenticate({ jwtValidation: { jwksUri: "https://idp.example.com/.well-known/jwks.json", keySet: { cacheMaxAgeMs: "30000" } } }),
  ];
}

// authenticate jwtValidation.keySet.cooldownMs
export function row60(): unknown[] {
  return [
    authenticate({ jwtValidation: { jwksUri: "https://idp.example.com/.well-known/jwks.json", keySet: { cooldownMs: 1000 } } }),
    // @ts-expect-error misspelt: cooldown_ms
    authenticate({ jwtValidation: { jwksUri: "https://idp.example.com/.well-known/jwks.json", keySet: { cooldown_ms: 1000 } } }),
    // @ts-expect-error wrong type: "30000"
    authenticate({ jwtValidation: { jwksUri: "https://idp.example.com/.well-known/jwks.json", keySet: { cooldownMs: "30000" } } }),
  ];
}

// authenticate jwtValidation.keySet.firstRetryMs
export function row61(): unknown[] {
  return [
    authenticate({ jwtValidation: { jwksUri: "https://idp.example.com/.well-known/jwks.json", keySet: { firstRetryMs: 1000 } } }),
    // @ts-expect-error misspelt: first_retry_ms
    authenticate({ jwtValidation: { jwksUri: "https://idp.example.com/.well-known/jwks.json", keySet: { first_retry_ms: 1000 } } }),
    // @ts-expect-error wrong type: "30000"
    authenticate({ jwtValidation: { jwksUri: "https://idp.example.com/.well-known/jwks.json", keySet: { firstRetryMs: "30000" } } }),
  ];
}

// authenticate jwtValidation.keySet.timeoutMs
export function row62(): unknown[] {
  return [
    authenticate({ jwtValidation: { jwksUri: "https://idp.example.com/.well-known/jwks.json", keySet: { timeoutMs: 1000 } } }),
    // @ts-expect-error misspelt: timeout_ms
    authenticate({ jwtValidation: { jwksUri: "https://idp.example.com/.well-known/jwks.json", keySet: { timeout_ms: 1000 } } }),
    // @ts-expect-error wrong type: "30000"
    authenticate({ jwtValidation: { jwksUri: "https://idp.example.com/.well-known/jwks.json", keySet: { timeoutMs: "30000" } } }),
  ];
}

// authenticate jwtValidation.keySet.now
export function row63(): unknown[] {
  return [
    authenticate({ jwtValidation: { jwksUri: "https://idp.example.com/.well-known/jwks.json", keySet: { now: () => 0 } } }),
    // @ts-expect-error misspelt: Now
    authenticate({ jwtValidation: { jwksUri: "https://idp.example.com/.well-known/jwks.json", keySet: { Now: () => 0 } } }),
    // @ts-expect-error wrong type: 0
    authenticate({ jwtValidation: { jwksUri: "https://idp.example.com/.well-known/jwks.json", keySet: { now: 0 } } }),
  ];
}

// authenticate resourceMetadataUrl
export function row64(): unknown[] {
  return [
    authenticate({ resourceMetadataUrl: () => undefined }),
    // @ts-expect-error misspelt: resource_metadata_url
    authenticate({ resource_metadata_url: () => undefined }),
    // @ts-expect-error wrong type: "https://gateway.example.com/.well-known/oauth-protected-resource"
    authenticate({ resourceMetadataUrl: "https://gateway.example.com/.well-known/oauth-protected-resource" }),
  ];
}

// identityForwarding mcpServers
export function row65(): unknown[] {
  return [
    identityForwarding({ mcpServers: [] }),
    // @ts-expect-error misspelt: mcp_servers
    identityForwarding({ mcp_servers: [] }),
    // @ts-expect-error missing: mcpServers
    identityForwarding({}),
    // @ts-expect-error wrong type: "tools"
    identityForwarding({ mcpServers: "tools" }),
  ];
}

// identityForwarding mcpServers[].slug
export function row66(): unknown[] {
  return [
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp" }] }),
    // @ts-expect-error misspelt: Slug
    identityForwarding({ mcpServers: [{ Slug: "tools", url: "http://127.0.0.1:9/mcp" }] }),
    // @ts-expect-error missing: slug
    identityForwarding({ mcpServers: [{ url: "http://127.0.0.1:9/mcp" }] }),
    // @ts-expect-error wrong type: 7
    identityForwarding({ mcpServers: [{ slug: 7, url: "http://127.0.0.1:9/mcp" }] }),
  ];
}

// identityForwarding mcpServers[].url
export function row67(): unknown[] {
  return [
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp" }] }),
    // @ts-expect-error misspelt: Url
    identityForwarding({ mcpServers: [{ slug: "tools", Url: "http://127.0.0.1:9/mcp" }] }),
    // @ts-expect-error missing: url
    identityForwarding({ mcpServers: [{ slug: "tools" }] }),
    // @ts-expect-error wrong type: 9000
    identityForwarding({ mcpServers: [{ slug: "tools", url: 9000 }] }),
  ];
}

// identityForwarding mcpServers[].user_identity_forwarding
export function row68(): unknown[] {
  return [
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp", user_identity_forwarding: { method: "claims_header" } }] }),
    // @ts-expect-error misspelt: userIdentityForwarding
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp", userIdentityForwarding: { method: "claims_header" } }] }),
    // @ts-expect-error wrong type: "claims_header"
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp", user_identity_forwarding: "claims_header" }] }),
  ];
}

// identityForwarding mcpServers[].user_identity_forwarding.method
export function row69(): unknown[] {
  return [
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp", user_identity_forwarding: { method: "claims_header" } }] }),
    // @ts-expect-error misspelt: Method
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp", user_identity_forwarding: { Method: "claims_header" } }] }),
    // @ts-expect-error missing: method
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp", user_identity_forwarding: {} }] }),
    // @ts-expect-error wrong type: "cookie"
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp", user_identity_forwarding: { method: "cookie" } }] }),
  ];
}

// identityForwarding mcpServers[].user_identity_forwarding.include_claims
export function row70(): unknown[] {
  return [
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp", user_identity_forwarding: { method: "claims_header", include_claims: ["sub"] } }] }),
    // @ts-expect-error misspelt: includeClaims
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp", user_identity_forwarding: { method: "claims_header", includeClaims: ["sub"] } }] }),
    // @ts-expect-error wrong type: "sub"
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp", user_identity_forwarding: { method: "claims_header", include_claims: "sub" } }] }),
  ];
}

// identityForwarding mcpServers[].user_identity_forwarding.header_name
export function row71(): unknown[] {
  return [
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp", user_identity_forwarding: { method: "claims_header", header_name: "X-Who" } }] }),
    // @ts-expect-error misspelt: headerName
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp", user_identity_forwarding: { method: "claims_header", headerName: "X-Who" } }] }),
    // @ts-expect-error wrong type: 7
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp", user_identity_forwarding: { method: "claims_header", header_name: 7 } }] }),
  ];
}

// identityForwarding mcpServers[].user_identity_forwarding.jwt_expiry_seconds
export function row72(): unknown[] {
  return [
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp", user_identity_forwarding: { method: "jwt_header", jwt_expiry_seconds: 60 } }], signer: signer }),
    // @ts-expect-error misspelt: jwtExpirySeconds
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp", user_identity_forwarding: { method: "jwt_header", jwtExpirySeconds: 60 } }], signer: signer }),
    // @ts-expect-error wrong type: "60"
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp", user_identity_forwarding: { method: "jwt_header", jwt_expiry_seconds: "60" } }], signer: signer }),
  ];
}

// identityForwarding mcpServers[].forward_headers
export function row73(): unknown[] {
  return [
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp", forward_headers: {} }] }),
    // @ts-expect-error misspelt: forwardHeaders
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp", forwardHeaders: {} }] }),
    // @ts-expect-error wrong type: "all"
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp", forward_headers: "all" }] }),
  ];
}

// identityForwarding mcpServers[].forward_headers.mode
export function row74(): unknown[] {
  return [
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp", forward_headers: { mode: "only" } }] }),
    // @ts-expect-error misspelt: Mode
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp", forward_headers: { Mode: "only" } }] }),
    // @ts-expect-error wrong type: "some"
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp", forward_headers: { mode: "some" } }] }),
  ];
}

// identityForwarding mcpServers[].forward_headers.headers
export function row75(): unknown[] {
  return [
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp", forward_headers: { headers: ["x-trace"] } }] }),
    // @ts-expect-error misspelt: Headers
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp", forward_headers: { Headers: ["x-trace"] } }] }),
    // @ts-expect-error wrong type: "x-trace"
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp", forward_headers: { headers: "x-trace" } }] }),
  ];
}

// identityForwarding mcpServers[].jwt_audience
export function row76(): unknown[] {
  return [
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp", jwt_audience: "tools" }] }),
    // @ts-expect-error misspelt: jwtAudience
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp", jwtAudience: "tools" }] }),
    // @ts-expect-error wrong type: 7
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp", jwt_audience: 7 }] }),
  ];
}

// identityForwarding mcpServers[].bearer_audience
export function row77(): unknown[] {
  return [
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp", user_identity_forwarding: { method: "bearer" }, bearer_audience: "tools" }], acceptsIdentityTokens: true }),
    // @ts-expect-error misspelt: bearerAudience
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp", user_identity_forwarding: { method: "bearer" }, bearerAudience: "tools" }], acceptsIdentityTokens: true }),
    // @ts-expect-error wrong type: 7
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp", user_identity_forwarding: { method: "bearer" }, bearer_audience: 7 }], acceptsIdentityTokens: true }),
  ];
}

// identityForwarding signer
export function row78(): unknown[] {
  return [
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp" }], signer: signer }),
    // @ts-expect-error misspelt: Signer
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp" }], Signer: signer }),
    // @ts-expect-error wrong type: "rsa"
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp" }], signer: "rsa" }),
  ];
}

// identityForwarding acceptsIdentityTokens
export function row79(): unknown[] {
  return [
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp" }], acceptsIdentityTokens: true }),
    // @ts-expect-error misspelt: accepts_identity_tokens
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp" }], accepts_identity_tokens: true }),
    // @ts-expect-error wrong type: "yes"
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp" }], acceptsIdentityTokens: "yes" }),
  ];
}

// identityForwarding tokenCacheSize
export function row80(): unknown[] {
  return [
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp" }], tokenCacheSize: 100 }),
    // @ts-expect-error misspelt: token_cache_size
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp" }], token_cache_size: 100 }),
    // @ts-expect-error wrong type: "100"
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp" }], tokenCacheSize: "100" }),
  ];
}

// identityForwarding timeoutMs
export function row81(): unknown[] {
  return [
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp" }], timeoutMs: 1000 }),
    // @ts-expect-error misspelt: timeout_ms
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp" }], timeout_ms: 1000 }),
    // @ts-expect-error wrong type: "30000"
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp" }], timeoutMs: "30000" }),
  ];
}

// identityForwarding streamIdleTimeoutMs
export function row82(): unknown[] {
  return [
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp" }], streamIdleTimeoutMs: 1000 }),
    // @ts-expect-error misspelt: stream_idle_timeout_ms
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp" }], stream_idle_timeout_ms: 1000 }),
    // @ts-expect-error wrong type: "30000"
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp" }], streamIdleTimeoutMs: "30000" }),
  ];
}

// identityForwarding logger
export function row83(): unknown[] {
  return [
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp" }], logger: { warn: () => undefined } }),
    // @ts-expect-error misspelt: Logger
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp" }], Logger: { warn: () => undefined } }),
    // @ts-expect-error wrong type: "console"
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp" }], logger: "console" }),
  ];
}

// identityForwarding now
export function row84(): unknown[] {
  return [
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp" }], now: () => 0 }),
    // @ts-expect-error misspelt: Now
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp" }], Now: () => 0 }),
    // @ts-expect-error wrong type: 0
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp" }], now: 0 }),
  ];
}

// identityForwarding trustedProxies
export function row85(): unknown[] {
  return [
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp" }], trustedProxies: ["10.0.0.5"] }),
    // @ts-expect-error misspelt: trusted_proxies
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp" }], trusted_proxies: ["10.0.0.5"] }),
    // @ts-expect-error wrong type: "10.0.0.5"
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp" }], trustedProxies: "10.0.0.5" }),
  ];
}

// identityForwarding authorize
export function row86(): unknown[] {
  return [
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp" }], authorize: () => ({ allowed: true }) }),
    // @ts-expect-error misspelt: Authorize
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp" }], Authorize: () => ({ allowed: true }) }),
    // @ts-expect-error wrong type: true
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp" }], authorize: true }),
  ];
}

// identityForwarding maxInspectedBodyBytes
export function row87(): unknown[] {
  return [
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp" }], maxInspectedBodyBytes: 1024 }),
    // @ts-expect-error misspelt: max_inspected_body_bytes
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp" }], max_inspected_body_bytes: 1024 }),
    // @ts-expect-error wrong type: "1kb"
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp" }], maxInspectedBodyBytes: "1kb" }),
  ];
}

// identityForwarding maxInspectedAnswerBytes
export function row88(): unknown[] {
  return [
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp" }], maxInspectedAnswerBytes: 1024 }),
    // @ts-expect-error misspelt: max_inspected_answer_bytes
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp" }], max_inspected_answer_bytes: 1024 }),
    // @ts-expect-error wrong type: "1kb"
    identityForwarding({ mcpServers: [{ slug: "tools", url: "http://127.0.0.1:9/mcp" }], maxInspectedAnswerBytes: "1kb" }),
  ];
}

// protectedResourceMetadata issuer
export function row89(): unknown[] {
  return [
    protectedResourceMetadata({ issuer: "https://idp.example.com" }),
    // @ts-expect-error misspelt: Issuer
    protectedResourceMetadata({ Issuer: "https://idp.example.com" }),
    // @ts-expect-error wrong type: 1
    protectedResourceMetadata({ issuer: 1 }),
  ];
}

// protectedResourceMetadata mcpServerSlugs
export function row90(): unknown[] {
  return [
    protectedResourceMetadata({ mcpServerSlugs: ["tools"] }),
    // @ts-expect-error misspelt: mcp_server_slugs
    protectedResourceMetadata({ mcp_server_slugs: ["tools"] }),
    // @ts-expect-error wrong type: "tools"
    protectedResourceMetadata({ mcpServerSlugs: "tools" }),
  ];
}

// protectedResourceMetadata publicBaseUrl
export function row91(): unknown[] {
  return [
    protectedResourceMetadata({ publicBaseUrl: "https://gateway.example.com" }),
    // @ts-expect-error misspelt: public_base_url
    protectedResourceMetadata({ public_base_url: "https://gateway.example.com" }),
    // @ts-expect-error wrong type: 443
    protectedResourceMetadata({ publicBaseUrl: 443 }),
  ];
}

// signIdentityToken audience
export function row92(): unknown[] {
  return [
    signer.signIdentityToken({ sub: "u" }, { audience: "https://mcp.example.com", expiresInSeconds: 300 }),
    // @ts-expect-error misspelt: Audience
    signer.signIdentityToken({ sub: "u" }, { Audience: "https://mcp.example.com", expiresInSeconds: 300 }),
    // @ts-expect-error missing: audience
    signer.signIdentityToken({ sub: "u" }, { expiresInSeconds: 300 }),
    // @ts-expect-error wrong type: 7
    signer.signIdentityToken({ sub: "u" }, { audience: 7, expiresInSeconds: 300 }),
  ];
}

// signIdentityToken expiresInSeconds
export function row93(): unknown[] {
  return [
    signer.signIdentityToken({ sub: "u" }, { audience: "https://mcp.example.com", expiresInSeconds: 300 }),
    // @ts-expect-error misspelt: expires_in_seconds
    signer.signIdentityToken({ sub: "u" }, { audience: "https://mcp.example.com", expires_in_seconds: 300 }),
    // @ts-expect-error missing: expiresInSeconds
    signer.signIdentityToken({ sub: "u" }, { audience: "https://mcp.example.com" }),
    // @ts-expect-error wrong type: "300"
    signer.signIdentityToken({ sub: "u" }, { audience: "https://mcp.example.com", expiresInSeconds: "300" }),
  ];
}

// signIdentityToken issuedAt
export function row94(): unknown[] {
  return [
    signer.signIdentityToken({ sub: "u" }, { audience: "https://mcp.example.com", expiresInSeconds: 300, issuedAt: 1700000000 }),
    // @ts-expect-error misspelt: issued_at
    signer.signIdentityToken({ sub: "u" }, { audience: "https://mcp.example.com", expiresInSeconds: 300, issued_at: 1700000000 }),
    // @ts-expect-error wrong type: "1700000000"
    signer.signIdentityToken({ sub: "u" }, { audience: "https://mcp.example.com", expiresInSeconds: 300, issuedAt: "1700000000" }),
  ];
}

// verifyGatewayIdentity jwksUri
export function row95(): unknown[] {
  return [
    verifyGatewayIdentity({ jwksUri: "https://gateway.example.com/.well-known/jwks.json", audience: "https://mcp.example.com" }),
    // @ts-expect-error misspelt: jwks_uri
    verifyGatewayIdentity({ jwks_uri: "https://gateway.example.com/.well-known/jwks.json", audience: "https://mcp.example.com" }),
    // @ts-expect-error missing: jwksUri
    verifyGatewayIdentity({ audience: "https://mcp.example.com" }),
    // @ts-expect-error wrong type: 443
    verifyGatewayIdentity({ jwksUri: 443, audience: "https://mcp.example.com" }),
  ];
}

// verifyGatewayIdentity audience
export function row96(): unknown[] {
  return [
    verifyGatewayIdentity({ jwksUri: "https://gateway.example.com/.well-known/jwks.json", audience: "https://mcp.example.com" }),
    // @ts-expect-error misspelt: Audience
    verifyGatewayIdentity({ jwksUri: "https://gateway.example.com/.well-known/jwks.json", Audience: "https://mcp.example.com" }),
    // @ts-expect-error missing: audience
    verifyGatewayIdentity({ jwksUri: "https://gateway.example.com/.well-known/jwks.json" }),
    // @ts-expect-error wrong type: 7
    verifyGatewayIdentity({ jwksUri: "https://gateway.example.com/.well-known/jwks.json", audience: 7 }),
  ];
}

// verifyGatewayIdentity headerName
export function row97(): unknown[] {
  return [
    verifyGatewayIdentity({ jwksUri: "https://gateway.example.com/.well-known/jwks.json", audience: "https://mcp.example.com", headerName: "x-user-jwt" }),
    // @ts-expect-error misspelt: header_name
    verifyGatewayIdentity({ jwksUri: "https://gateway.example.com/.well-known/jwks.json", audience: "https://mcp.example.com", header_name: "x-user-jwt" }),
    // @ts-expect-error wrong type: 7
    verifyGatewayIdentity({ jwksUri: "https://gateway.example.com/.well-known/jwks.json", audience: "https://mcp.example.com", headerName: 7 }),
  ];
}

// verifyGatewayIdentity issuer
export function row98(): unknown[] {
  return [
    verifyGatewayIdentity({ jwksUri: "https://gateway.example.com/.well-known/jwks.json", audience: "https://mcp.example.com", issuer: "gateway-mcp-gateway" }),
    // @ts-expect-error misspelt: Issuer
    verifyGatewayIdentity({ jwksUri: "https://gateway.example.com/.well-known/jwks.json", audience: "https://mcp.example.com", Issuer: "gateway-mcp-gateway" }),
    // @ts-expect-error wrong type: 7
    verifyGatewayIdentity({ jwksUri: "https://gateway.example.com/.well-known/jwks.json", audience: "https://mcp.example.com", issuer: 7 }),
  ];
}

// verifyGatewayIdentity clockToleranceSeconds
export function row99(): unknown[] {
  return [
    verifyGatewayIdentity({ jwksUri: "https://gateway.example.com/.well-known/jwks.json", audience: "https://mcp.example.com", clockToleranceSeconds: 5 }),
    // @ts-expect-error misspelt: clock_tolerance_seconds
    verifyGatewayIdentity({ jwksUri: "https://gateway.example.com/.well-known/jwks.json", audience: "https://mcp.example.com", clock_tolerance_seconds: 5 }),
    // @ts-expect-error wrong type: "5"
    verifyGatewayIdentity({ jwksUri: "https://gateway.example.com/.well-known/jwks.json", audience: "https://mcp.example.com", clockToleranceSeconds: "5" }),
  ];
}

// RemoteKeySet jwksUri
export function row100(): unknown[] {
  return [
    new RemoteKeySet({ jwksUri: "https://idp.example.com/.well-known/jwks.json" }),
    // @ts-expect-error misspelt: jwks_uri
    new RemoteKeySet({ jwks_uri: "https://idp.example.com/.well-known/jwks.json" }),
    // @ts-expect-error missing: jwksUri
    new RemoteKeySet({}),
    // @ts-expect-error wrong type: 443
    new RemoteKeySet({ jwksUri: 443 }),
  ];
}

// RemoteKeySet cacheMaxAgeMs
export function row101(): unknown[] {
  return [
    new RemoteKeySet({ jwksUri: "https://idp.example.com/.well-known/jwks.json", cacheMaxAgeMs: 1000 }),
    // @ts-expect-error misspelt: cache_max_age_ms
    new RemoteKeySet({ jwksUri: "https://idp.example.com/.well-known/jwks.json", cache_max_age_ms: 1000 }),
    // @ts-expect-error wrong type: "30000"
    new RemoteKeySet({ jwksUri: "https://idp.example.com/.well-known/jwks.json", cacheMaxAgeMs: "30000" }),
  ];
}

// RemoteKeySet cooldownMs
export function row102(): unknown[] {
  return [
    new RemoteKeySet({ jwksUri: "https://idp.example.com/.well-known/jwks.json", cooldownMs: 1000 }),
    // @ts-expect-error misspelt: cooldown_ms
    new RemoteKeySet({ jwksUri: "https://idp.example.com/.well-known/jwks.json", cooldown_ms: 1000 }),
    // @ts-expect-error wrong type: "30000"
    new RemoteKeySet({ jwksUri: "https://idp.example.com/.well-known/jwks.json", cooldownMs: "30000" }),
  ];
}

// RemoteKeySet firstRetryMs
export function row103(): unknown[] {
  return [
    new RemoteKeySet({ jwksUri: "https://idp.example.com/.well-known/jwks.json", firstRetryMs: 1000 }),
    // @ts-expect-error misspelt: first_retry_ms
    new RemoteKeySet({ jwksUri: "https://idp.example.com/.well-known/jwks.json", first_retry_ms: 1000 }),
    // @ts-expect-error wrong type: "30000"
    new RemoteKeySet({ jwksUri: "https://idp.example.com/.well-known/jwks.json", firstRetryMs: "30000" }),
  ];
}

// RemoteKeySet timeoutMs
export function row104(): unknown[] {
  return [
    new RemoteKeySet({ jwksUri: "https://idp.example.com/.well-known/jwks.json", timeoutMs: 1000 }),
    // @ts-expect-error misspelt: timeout_ms
    new RemoteKeySet({ jwksUri: "https://idp.example.com/.well-known/jwks.json", timeout_ms: 1000 }),
    // @ts-expect-error wrong type: "30000"
    new RemoteKeySet({ jwksUri: "https://idp.example.com/.well-known/jwks.json", timeoutMs: "30000" }),
  ];
}

// RemoteKeySet maxResponseBytes
export function row105(): unknown[] {
  return [
    new RemoteKeySet({ jwksUri: "https://idp.example.com/.well-known/jwks.json", maxResponseBytes: 1024 }),
    // @ts-expect-error misspelt: max_response_bytes
    new RemoteKeySet({ jwksUri: "https://idp.example.com/.well-known/jwks.json", max_response_bytes: 1024 }),
    // @ts-expect-error wrong type: "1kb"
    new RemoteKeySet({ jwksUri: "https://idp.example.com/.well-known/jwks.json", maxResponseBytes: "1kb" }),
  ];
}

// RemoteKeySet now
export function row106(): unknown[] {
  return [
    new RemoteKeySet({ jwksUri: "https://idp.example.com/.well-known/jwks.json", now: () => 0 }),
    // @ts-expect-error misspelt: Now
    new RemoteKeySet({ jwksUri: "https://idp.example.com/.well-known/jwks.json", Now: () => 0 }),
    // @ts-expect-error wrong type: 0
    new RemoteKeySet({ jwksUri: "https://idp.example.com/.well-known/jwks.json", now: 0 }),
  ];
}

// RemoteKeySet onFetch
export function row107(): unknown[] {
  return [
    new RemoteKeySet({ jwksUri: "https://idp.example.com/.well-known/jwks.json", onFetch: () => undefined }),
    // @ts-expect-error misspelt: on_fetch
    new RemoteKeySet({ jwksUri: "https://idp.example.com/.well-known/jwks.json", on_fetch: () => undefined }),
    // @ts-expect-error wrong type: "count"
    new RemoteKeySet({ jwksUri: "https://idp.example.com/.well-known/jwks.json", onFetch: "count" }),
  ];
}

// loadSigningKey privateKeyPem
export function row108(): unknown[] {
  return [
    loadSigningKey({ production: false, jwtHeaderInUse: false, previousPublicKeysPem: "", privateKeyPem: "" }),
    // @ts-expect-error misspelt: private_key_pem
    loadSigningKey({ production: false, jwtHeaderInUse: false, previousPublicKeysPem: "", private_key_pem: "" }),
    // @ts-expect-error wrong type: 1
    loadSigningKey({ production: false, jwtHeaderInUse: false, previousPublicKeysPem: "", privateKeyPem: 1 }),
  ];
}

// loadSigningKey previousPublicKeysPem
export function row109(): unknown[] {
  return [
    loadSigningKey({ production: false, jwtHeaderInUse: false, previousPublicKeysPem: "" }),
    // @ts-expect-error misspelt: previous_public_keys_pem
    loadSigningKey({ production: false, jwtHeaderInUse: false, previous_public_keys_pem: "" }),
    // @ts-expect-error wrong type: 1
    loadSigningKey({ production: false, jwtHeaderInUse: false, previousPublicKeysPem: 1 }),
  ];
}

// loadSigningKey production
export function row110(): unknown[] {
  return [
    loadSigningKey({ production: false, jwtHeaderInUse: false, previousPublicKeysPem: "" }),
    // @ts-expect-error misspelt: Production
    loadSigningKey({ Production: false, jwtHeaderInUse: false, previousPublicKeysPem: "" }),
    // @ts-expect-error missing: production
    loadSigningKey({ jwtHeaderInUse: false, previousPublicKeysPem: "" }),
    // @ts-expect-error wrong type: "no"
    loadSigningKey({ production: "no", jwtHeaderInUse: false, previousPublicKeysPem: "" }),
  ];
}

// loadSigningKey jwtHeaderInUse
export function row111(): unknown[] {
  return [
    loadSigningKey({ production: false, jwtHeaderInUse: false, previousPublicKeysPem: "" }),
    // @ts-expect-error misspelt: jwt_header_in_use
    loadSigningKey({ production: false, jwt_header_in_use: false, previousPublicKeysPem: "" }),
    // @ts-expect-error missing: jwtHeaderInUse
    loadSigningKey({ production: false, previousPublicKeysPem: "" }),
    // @ts-expect-error wrong type: "no"
    loadSigningKey({ production: false, jwtHeaderInUse: "no", previousPublicKeysPem: "" }),
  ];
}

// compileAccess mode
export function row112(): unknown[] {
  return [
    compileAccess({ mode: "open" }),
    // @ts-expect-error misspelt: Mode
    compileAccess({ Mode: "open" }),
    // @ts-expect-error wrong type: "closed"
    compileAccess({ mode: "closed" }),
  ];
}

// compileAccess policies
export function row113(): unknown[] {
  return [
    compileAccess({ policies: [] }),
    // @ts-expect-error misspelt: Policies
    compileAccess({ Policies: [] }),
    // @ts-expect-error wrong type: "p"
    compileAccess({ policies: "p" }),
  ];
}

// compileAccess policies[].slug
export function row114(): unknown[] {
  return [
    compileAccess({ mode: "policies", policies: [{ slug: "p", subjects: { users: ["u"] }, allow: { models: ["@a/*"] } }] }),
    // @ts-expect-error misspelt: Slug
    compileAccess({ mode: "policies", policies: [{ Slug: "p", subjects: { users: ["u"] }, allow: { models: ["@a/*"] } }] }),
    // @ts-expect-error missing: slug
    compileAccess({ mode: "policies", policies: [{ subjects: { users: ["u"] }, allow: { models: ["@a/*"] } }] }),
    // @ts-expect-error wrong type: 7
    compileAccess({ mode: "policies", policies: [{ slug: 7, subjects: { users: ["u"] }, allow: { models: ["@a/*"] } }] }),
  ];
}

// compileAccess policies[].name
export function row115(): unknown[] {
  return [
    compileAccess({ mode: "policies", policies: [{ slug: "p", subjects: { users: ["u"] }, allow: { models: ["@a/*"] }, name: "Support" }] }),
    // @ts-expect-error wrong type: 7
    compileAccess({ mode: "policies", policies: [{ slug: "p", subjects: { users: ["u"] }, allow: { models: ["@a/*"] }, name: 7 }] }),
  ];
}

// compileAccess policies[].subjects
export function row116(): unknown[] {
  return [
    compileAccess({ mode: "policies", policies: [{ slug: "p", subjects: { users: ["u"] }, allow: { models: ["@a/*"] } }] }),
    // @ts-expect-error misspelt: Subjects
    compileAccess({ mode: "policies", policies: [{ slug: "p", Subjects: { users: ["u"] }, allow: { models: ["@a/*"] } }] }),
    // @ts-expect-error missing: subjects
    compileAccess({ mode: "policies", policies: [{ slug: "p", allow: { models: ["@a/*"] } }] }),
    // @ts-expect-error wrong type: "u"
    compileAccess({ mode: "policies", policies: [{ slug: "p", subjects: "u", allow: { models: ["@a/*"] } }] }),
  ];
}

// compileAccess policies[].subjects.users
export function row117(): unknown[] {
  return [
    compileAccess({ mode: "policies", policies: [{ slug: "p", subjects: { users: ["x"] }, allow: { models: ["@a/*"] } }] }),
    // @ts-expect-error misspelt: Users
    compileAccess({ mode: "policies", policies: [{ slug: "p", subjects: { Users: ["x"] }, allow: { models: ["@a/*"] } }] }),
    // @ts-expect-error wrong type: "x"
    compileAccess({ mode: "policies", policies: [{ slug: "p", subjects: { users: "x" }, allow: { models: ["@a/*"] } }] }),
  ];
}

// compileAccess policies[].subjects.groups
export function row118(): unknown[] {
  return [
    compileAccess({ mode: "policies", policies: [{ slug: "p", subjects: { groups: ["x"] }, allow: { models: ["@a/*"] } }] }),
    // @ts-expect-error misspelt: Groups
    compileAccess({ mode: "policies", policies: [{ slug: "p", subjects: { Groups: ["x"] }, allow: { models: ["@a/*"] } }] }),
    // @ts-expect-error wrong type: "x"
    compileAccess({ mode: "policies", policies: [{ slug: "p", subjects: { groups: "x" }, allow: { models: ["@a/*"] } }] }),
  ];
}

// compileAccess policies[].subjects.apiKeys
export function row119(): unknown[] {
  return [
    compileAccess({ mode: "policies", policies: [{ slug: "p", subjects: { apiKeys: ["x"] }, allow: { models: ["@a/*"] } }] }),
    // @ts-expect-error misspelt: api_keys
    compileAccess({ mode: "policies", policies: [{ slug: "p", subjects: { api_keys: ["x"] }, allow: { models: ["@a/*"] } }] }),
    // @ts-expect-error wrong type: "x"
    compileAccess({ mode: "policies", policies: [{ slug: "p", subjects: { apiKeys: "x" }, allow: { models: ["@a/*"] } }] }),
  ];
}

// compileAccess policies[].allow
export function row120(): unknown[] {
  return [
    compileAccess({ mode: "policies", policies: [{ slug: "p", subjects: { users: ["u"] }, allow: { models: ["@a/*"] } }] }),
    // @ts-expect-error misspelt: Allow
    compileAccess({ mode: "policies", policies: [{ slug: "p", subjects: { users: ["u"] }, Allow: { models: ["@a/*"] } }] }),
    // @ts-expect-error missing: allow
    compileAccess({ mode: "policies", policies: [{ slug: "p", subjects: { users: ["u"] } }] }),
    // @ts-expect-error wrong type: "@a/*"
    compileAccess({ mode: "policies", policies: [{ slug: "p", subjects: { users: ["u"] }, allow: "@a/*" }] }),
  ];
}

// compileAccess policies[].allow.models
export function row121(): unknown[] {
  return [
    compileAccess({ mode: "policies", policies: [{ slug: "p", subjects: { users: ["u"] }, allow: { models: ["x"] } }] }),
    // @ts-expect-error misspelt: Models
    compileAccess({ mode: "policies", policies: [{ slug: "p", subjects: { users: ["u"] }, allow: { Models: ["x"] } }] }),
    // @ts-expect-error wrong type: "x"
    compileAccess({ mode: "policies", policies: [{ slug: "p", subjects: { users: ["u"] }, allow: { models: "x" } }] }),
  ];
}

// compileAccess policies[].allow.integrations
export function row122(): unknown[] {
  return [
    compileAccess({ mode: "policies", policies: [{ slug: "p", subjects: { users: ["u"] }, allow: { integrations: ["x"] } }] }),
    // @ts-expect-error misspelt: Integrations
    compileAccess({ mode: "policies", policies: [{ slug: "p", subjects: { users: ["u"] }, allow: { Integrations: ["x"] } }] }),
    // @ts-expect-error wrong type: "x"
    compileAccess({ mode: "policies", policies: [{ slug: "p", subjects: { users: ["u"] }, allow: { integrations: "x" } }] }),
  ];
}

// compileAccess policies[].allow.mcpServers
export function row123(): unknown[] {
  return [
    compileAccess({ mode: "policies", policies: [{ slug: "p", subjects: { users: ["u"] }, allow: { mcpServers: [{ server: "tools" }] } }] }),
    // @ts-expect-error misspelt: mcp_servers
    compileAccess({ mode: "policies", policies: [{ slug: "p", subjects: { users: ["u"] }, allow: { mcp_servers: [{ server: "tools" }] } }] }),
    // @ts-expect-error wrong type: "tools"
    compileAccess({ mode: "policies", policies: [{ slug: "p", subjects: { users: ["u"] }, allow: { mcpServers: "tools" } }] }),
  ];
}

// compileAccess policies[].allow.mcpServers[].server
export function row124(): unknown[] {
  return [
    compileAccess({ mode: "policies", policies: [{ slug: "p", subjects: { users: ["u"] }, allow: { mcpServers: [{ server: "tools" }] } }] }),
    // @ts-expect-error misspelt: Server
    compileAccess({ mode: "policies", policies: [{ slug: "p", subjects: { users: ["u"] }, allow: { mcpServers: [{ Server: "tools" }] } }] }),
    // @ts-expect-error missing: server
    compileAccess({ mode: "policies", policies: [{ slug: "p", subjects: { users: ["u"] }, allow: { mcpServers: [{}] } }] }),
    // @ts-expect-error wrong type: 7
    compileAccess({ mode: "policies", policies: [{ slug: "p", subjects: { users: ["u"] }, allow: { mcpServers: [{ server: 7 }] } }] }),
  ];
}

// compileAccess policies[].allow.mcpServers[].tools
export function row125(): unknown[] {
  return [
    compileAccess({ mode: "policies", policies: [{ slug: "p", subjects: { users: ["u"] }, allow: { mcpServers: [{ server: "tools", tools: ["search"] }] } }] }),
    // @ts-expect-error misspelt: Tools
    compileAccess({ mode: "policies", policies: [{ slug: "p", subjects: { users: ["u"] }, allow: { mcpServers: [{ server: "tools", Tools: ["search"] }] } }] }),
    // @ts-expect-error wrong type: "search"
    compileAccess({ mode: "policies", policies: [{ slug: "p", subjects: { users: ["u"] }, allow: { mcpServers: [{ server: "tools", tools: "search" }] } }] }),
  ];
}

// adminApi store
export function row126(): unknown[] {
  return [
    adminApi({ store: store, access: access }),
    // @ts-expect-error misspelt: Store
    adminApi({ Store: store, access: access }),
    // @ts-expect-error missing: store
    adminApi({ access: access }),
    // @ts-expect-error wrong type: "postgres"
    adminApi({ store: "postgres", access: access }),
  ];
}

// adminApi access
export function row127(): unknown[] {
  return [
    adminApi({ store: store, access: access }),
    // @ts-expect-error misspelt: Access
    adminApi({ store: store, Access: access }),
    // @ts-expect-error missing: access
    adminApi({ store: store }),
    // @ts-expect-error wrong type: "admin-key"
    adminApi({ store: store, access: "admin-key" }),
  ];
}

// adminApi configRecords
export function row128(): unknown[] {
  return [
    adminApi({ store: store, access: access, configRecords: configRecords }),
    // @ts-expect-error misspelt: config_records
    adminApi({ store: store, access: access, config_records: configRecords }),
    // @ts-expect-error wrong type: "gateway.json"
    adminApi({ store: store, access: access, configRecords: "gateway.json" }),
  ];
}

// adminApi afterWrite
export function row129(): unknown[] {
  return [
    adminApi({ store: store, access: access, afterWrite: () => { throw new Error("unused"); } }),
    // @ts-expect-error misspelt: after_write
    adminApi({ store: store, access: access, after_write: () => { throw new Error("unused"); } }),
    // @ts-expect-error wrong type: "x"
    adminApi({ store: store, access: access, afterWrite: "x" }),
  ];
}

// adminApi beforeWrite
export function row130(): unknown[] {
  return [
    adminApi({ store: store, access: access, beforeWrite: () => { throw new Error("unused"); } }),
    // @ts-expect-error misspelt: before_write
    adminApi({ store: store, access: access, before_write: () => { throw new Error("unused"); } }),
    // @ts-expect-error wrong type: "x"
    adminApi({ store: store, access: access, beforeWrite: "x" }),
  ];
}

// adminApi providerModels
export function row131(): unknown[] {
  return [
    adminApi({ store: store, access: access, providerModels: () => { throw new Error("unused"); } }),
    // @ts-expect-error misspelt: provider_models
    adminApi({ store: store, access: access, provider_models: () => { throw new Error("unused"); } }),
    // @ts-expect-error wrong type: "x"
    adminApi({ store: store, access: access, providerModels: "x" }),
  ];
}

// adminApi explainAccess
export function row132(): unknown[] {
  return [
    adminApi({ store: store, access: access, explainAccess: () => { throw new Error("unused"); } }),
    // @ts-expect-error misspelt: explain_access
    adminApi({ store: store, access: access, explain_access: () => { throw new Error("unused"); } }),
    // @ts-expect-error wrong type: "x"
    adminApi({ store: store, access: access, explainAccess: "x" }),
  ];
}

// adminApi onInternalError
export function row133(): unknown[] {
  return [
    adminApi({ store: store, access: access, onInternalError: () => { throw new Error("unused"); } }),
    // @ts-expect-error misspelt: on_internal_error
    adminApi({ store: store, access: access, on_internal_error: () => { throw new Error("unused"); } }),
    // @ts-expect-error wrong type: "x"
    adminApi({ store: store, access: access, onInternalError: "x" }),
  ];
}

// adminApi bodyLimitBytes
export function row134(): unknown[] {
  return [
    adminApi({ store: store, access: access, bodyLimitBytes: 1024 }),
    // @ts-expect-error misspelt: body_limit_bytes
    adminApi({ store: store, access: access, body_limit_bytes: 1024 }),
    // @ts-expect-error wrong type: "1mb"
    adminApi({ store: store, access: access, bodyLimitBytes: "1mb" }),
  ];
}

// adminApi toolPins
export function row135(): unknown[] {
  return [
    adminApi({ store: store, access: access, toolPins: { list: async () => [], approve: async () => { throw new Error("unused"); } } }),
    // @ts-expect-error misspelt: tool_pins
    adminApi({ store: store, access: access, tool_pins: { list: async () => [], approve: async () => { throw new Error("unused"); } } }),
    // @ts-expect-error wrong type: "pins"
    adminApi({ store: store, access: access, toolPins: "pins" }),
  ];
}

// adminApi requestRecords
export function row136(): unknown[] {
  return [
    adminApi({ store: store, access: access, requestRecords: database }),
    // @ts-expect-error misspelt: request_records
    adminApi({ store: store, access: access, request_records: database }),
    // @ts-expect-error wrong type: "postgres://db"
    adminApi({ store: store, access: access, requestRecords: "postgres://db" }),
  ];
}

// AdminAccess adminKey
export function row137(): unknown[] {
  return [
    new AdminAccess({ adminKey: "kkkkkkkkkkkkkkkkkkkkkkkk" }),
    // @ts-expect-error misspelt: admin_key
    new AdminAccess({ admin_key: "kkkkkkkkkkkkkkkkkkkkkkkk" }),
    // @ts-expect-error wrong type: 24
    new AdminAccess({ adminKey: 24 }),
  ];
}

// AdminAccess verifyToken
export function row138(): unknown[] {
  return [
    new AdminAccess({ verifyToken: async () => ({}) }),
    // @ts-expect-error misspelt: verify_token
    new AdminAccess({ verify_token: async () => ({}) }),
    // @ts-expect-error wrong type: "idp"
    new AdminAccess({ verifyToken: "idp" }),
  ];
}

// AdminAccess adminClaim
export function row139(): unknown[] {
  return [
    new AdminAccess({ verifyToken: async () => ({}), adminClaim: { claim: "groups", value: "admin" } }),
    // @ts-expect-error misspelt: admin_claim
    new AdminAccess({ verifyToken: async () => ({}), admin_claim: { claim: "groups", value: "admin" } }),
    // @ts-expect-error wrong type: "groups"
    new AdminAccess({ verifyToken: async () => ({}), adminClaim: "groups" }),
  ];
}

// AdminAccess adminClaim.claim
export function row140(): unknown[] {
  return [
    new AdminAccess({ verifyToken: async () => ({}), adminClaim: { claim: "groups", value: "admin" } }),
    // @ts-expect-error misspelt: Claim
    new AdminAccess({ verifyToken: async () => ({}), adminClaim: { Claim: "groups", value: "admin" } }),
    // @ts-expect-error missing: claim
    new AdminAccess({ verifyToken: async () => ({}), adminClaim: { value: "admin" } }),
    // @ts-expect-error wrong type: 7
    new AdminAccess({ verifyToken: async () => ({}), adminClaim: { claim: 7, value: "admin" } }),
  ];
}

// AdminAccess adminClaim.value
export function row141(): unknown[] {
  return [
    new AdminAccess({ verifyToken: async () => ({}), adminClaim: { claim: "groups", value: "admin" } }),
    // @ts-expect-error misspelt: Value
    new AdminAccess({ verifyToken: async () => ({}), adminClaim: { claim: "groups", Value: "admin" } }),
    // @ts-expect-error missing: value
    new AdminAccess({ verifyToken: async () => ({}), adminClaim: { claim: "groups" } }),
    // @ts-expect-error wrong type: 7
    new AdminAccess({ verifyToken: async () => ({}), adminClaim: { claim: "groups", value: 7 } }),
  ];
}

// AdminAccess isApiKey
export function row142(): unknown[] {
  return [
    new AdminAccess({ isApiKey: () => false }),
    // @ts-expect-error misspelt: is_api_key
    new AdminAccess({ is_api_key: () => false }),
    // @ts-expect-error wrong type: true
    new AdminAccess({ isApiKey: true }),
  ];
}

// gatewayConsole access
export function row143(): unknown[] {
  return [
    gatewayConsole({ access: access, adminApi: adminHandler, sessionSecret: secret }),
    // @ts-expect-error misspelt: Access
    gatewayConsole({ Access: access, adminApi: adminHandler, sessionSecret: secret }),
    // @ts-expect-error missing: access
    gatewayConsole({ adminApi: adminHandler, sessionSecret: secret }),
    // @ts-expect-error wrong type: "admin-key"
    gatewayConsole({ access: "admin-key", adminApi: adminHandler, sessionSecret: secret }),
  ];
}

// gatewayConsole adminApi
export function row144(): unknown[] {
  return [
    gatewayConsole({ access: access, adminApi: adminHandler, sessionSecret: secret }),
    // @ts-expect-error misspelt: admin_api
    gatewayConsole({ access: access, admin_api: adminHandler, sessionSecret: secret }),
    // @ts-expect-error missing: adminApi
    gatewayConsole({ access: access, sessionSecret: secret }),
    // @ts-expect-error wrong type: "/admin/v1"
    gatewayConsole({ access: access, adminApi: "/admin/v1", sessionSecret: secret }),
  ];
}

// gatewayConsole sessionSecret
export function row145(): unknown[] {
  return [
    gatewayConsole({ access: access, adminApi: adminHandler, sessionSecret: secret }),
    // @ts-expect-error misspelt: session_secret
    gatewayConsole({ access: access, adminApi: adminHandler, session_secret: secret }),
    // @ts-expect-error missing: sessionSecret
    gatewayConsole({ access: access, adminApi: adminHandler }),
    // @ts-expect-error wrong type: "secret"
    gatewayConsole({ access: access, adminApi: adminHandler, sessionSecret: "secret" }),
  ];
}

// gatewayConsole sessionLifetimeMs
export function row146(): unknown[] {
  return [
    gatewayConsole({ access: access, adminApi: adminHandler, sessionSecret: secret, sessionLifetimeMs: 60000 }),
    // @ts-expect-error misspelt: session_lifetime_ms
    gatewayConsole({ access: access, adminApi: adminHandler, sessionSecret: secret, session_lifetime_ms: 60000 }),
    // @ts-expect-error wrong type: "8h"
    gatewayConsole({ access: access, adminApi: adminHandler, sessionSecret: secret, sessionLifetimeMs: "8h" }),
  ];
}

// gatewayConsole testRecord
export function row147(): unknown[] {
  return [
    gatewayConsole({ access: access, adminApi: adminHandler, sessionSecret: secret, testRecord: async () => { throw new Error("unused"); } }),
    // @ts-expect-error misspelt: test_record
    gatewayConsole({ access: access, adminApi: adminHandler, sessionSecret: secret, test_record: async () => { throw new Error("unused"); } }),
    // @ts-expect-error wrong type: true
    gatewayConsole({ access: access, adminApi: adminHandler, sessionSecret: secret, testRecord: true }),
  ];
}

// gatewayConsole publicBaseUrl
export function row148(): unknown[] {
  return [
    gatewayConsole({ access: access, adminApi: adminHandler, sessionSecret: secret, publicBaseUrl: "https://gateway.example.com" }),
    // @ts-expect-error misspelt: public_base_url
    gatewayConsole({ access: access, adminApi: adminHandler, sessionSecret: secret, public_base_url: "https://gateway.example.com" }),
    // @ts-expect-error wrong type: 443
    gatewayConsole({ access: access, adminApi: adminHandler, sessionSecret: secret, publicBaseUrl: 443 }),
  ];
}

// ConsoleSessions secret
export function row149(): unknown[] {
  return [
    new ConsoleSessions({ secret: secret }),
    // @ts-expect-error misspelt: Secret
    new ConsoleSessions({ Secret: secret }),
    // @ts-expect-error missing: secret
    new ConsoleSessions({}),
    // @ts-expect-error wrong type: "secret"
    new ConsoleSessions({ secret: "secret" }),
  ];
}

// ConsoleSessions lifetimeMs
export function row150(): unknown[] {
  return [
    new ConsoleSessions({ secret: secret, lifetimeMs: 60000 }),
    // @ts-expect-error misspelt: lifetime_ms
    new ConsoleSessions({ secret: secret, lifetime_ms: 60000 }),
    // @ts-expect-error wrong type: "8h"
    new ConsoleSessions({ secret: secret, lifetimeMs: "8h" }),
  ];
}

// ConsoleSessions now
export function row151(): unknown[] {
  return [
    new ConsoleSessions({ secret: secret, now: () => 0 }),
    // @ts-expect-error misspelt: Now
    new ConsoleSessions({ secret: secret, Now: () => 0 }),
    // @ts-expect-error wrong type: 0
    new ConsoleSessions({ secret: secret, now: 0 }),
  ];
}

// createModelRoutes providers
export function row152(): unknown[] {
  return [
    createModelRoutes({ providers: [] }),
    // @ts-expect-error misspelt: Providers
    createModelRoutes({ Providers: [] }),
    // @ts-expect-error wrong type: "claude"
    createModelRoutes({ providers: "claude" }),
  ];
}

// createModelRoutes providers[].slug
export function row153(): unknown[] {
  return [
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options" }] }),
    // @ts-expect-error misspelt: Slug
    createModelRoutes({ providers: [{ Slug: "claude", provider: "anthropic", apiKey: "sk-ant-options" }] }),
    // @ts-expect-error missing: slug
    createModelRoutes({ providers: [{ provider: "anthropic", apiKey: "sk-ant-options" }] }),
    // @ts-expect-error wrong type: 7
    createModelRoutes({ providers: [{ slug: 7, provider: "anthropic", apiKey: "sk-ant-options" }] }),
  ];
}

// createModelRoutes providers[].name
export function row154(): unknown[] {
  return [
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", name: "Claude" }] }),
    // @ts-expect-error misspelt: Name
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", Name: "Claude" }] }),
    // @ts-expect-error wrong type: 7
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", name: 7 }] }),
  ];
}

// createModelRoutes providers[].provider
export function row155(): unknown[] {
  return [
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options" }] }),
    // @ts-expect-error misspelt: Provider
    createModelRoutes({ providers: [{ slug: "claude", Provider: "anthropic", apiKey: "sk-ant-options" }] }),
    // @ts-expect-error missing: provider
    createModelRoutes({ providers: [{ slug: "claude", apiKey: "sk-ant-options" }] }),
    // @ts-expect-error wrong type: "openai"
    createModelRoutes({ providers: [{ slug: "claude", provider: "openai", apiKey: "sk-ant-options" }] }),
  ];
}

// createModelRoutes providers[].apiKey
export function row156(): unknown[] {
  return [
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options" }] }),
    // @ts-expect-error misspelt: api_key
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic", api_key: "sk-ant-options" }] }),
    // @ts-expect-error missing: apiKey
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic" }] }),
    // @ts-expect-error wrong type: 12
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic", apiKey: 12 }] }),
  ];
}

// createModelRoutes providers[].baseUrl
export function row157(): unknown[] {
  return [
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", baseUrl: "https://api.anthropic.com" }] }),
    // @ts-expect-error misspelt: base_url
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", base_url: "https://api.anthropic.com" }] }),
    // @ts-expect-error wrong type: 443
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", baseUrl: 443 }] }),
  ];
}

// createModelRoutes providers[].models
export function row158(): unknown[] {
  return [
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", models: { mode: "all" } }] }),
    // @ts-expect-error misspelt: Models
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", Models: { mode: "all" } }] }),
    // @ts-expect-error wrong type: "all"
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", models: "all" }] }),
  ];
}

// createModelRoutes providers[].models.mode
export function row159(): unknown[] {
  return [
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", models: { mode: "all" } }] }),
    // @ts-expect-error misspelt: Mode
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", models: { Mode: "all" } }] }),
    // @ts-expect-error missing: mode
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", models: {} }] }),
    // @ts-expect-error wrong type: "some"
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", models: { mode: "some" } }] }),
  ];
}

// createModelRoutes providers[].models.models
export function row160(): unknown[] {
  return [
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", models: { mode: "custom", models: ["claude-sonnet-4-5"] } }] }),
    // @ts-expect-error misspelt: Models
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", models: { mode: "custom", Models: ["claude-sonnet-4-5"] } }] }),
    // @ts-expect-error missing: models
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", models: { mode: "custom" } }] }),
    // @ts-expect-error wrong type: "claude-sonnet-4-5"
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", models: { mode: "custom", models: "claude-sonnet-4-5" } }] }),
  ];
}

// createModelRoutes providers[].models.autoEnableNew
export function row161(): unknown[] {
  return [
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", models: { mode: "custom", models: [], autoEnableNew: true } }] }),
    // @ts-expect-error misspelt: auto_enable_new
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", models: { mode: "custom", models: [], auto_enable_new: true } }] }),
    // @ts-expect-error wrong type: "yes"
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", models: { mode: "custom", models: [], autoEnableNew: "yes" } }] }),
  ];
}

// createModelRoutes providers[].defaultMaxTokens
export function row162(): unknown[] {
  return [
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", defaultMaxTokens: 1024 }] }),
    // @ts-expect-error misspelt: default_max_tokens
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", default_max_tokens: 1024 }] }),
    // @ts-expect-error wrong type: "1024"
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", defaultMaxTokens: "1024" }] }),
  ];
}

// createModelRoutes providers[].knownModels
export function row163(): unknown[] {
  return [
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", knownModels: ["claude-sonnet-4-5"] }] }),
    // @ts-expect-error misspelt: known_models
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", known_models: ["claude-sonnet-4-5"] }] }),
    // @ts-expect-error wrong type: "claude-sonnet-4-5"
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", knownModels: "claude-sonnet-4-5" }] }),
  ];
}

// createModelRoutes providers[].cache
export function row164(): unknown[] {
  return [
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", cache: {} }] }),
    // @ts-expect-error misspelt: Cache
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", Cache: {} }] }),
    // @ts-expect-error wrong type: true
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", cache: true }] }),
  ];
}

// createModelRoutes providers[].cache.enabled
export function row165(): unknown[] {
  return [
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", cache: { enabled: false } }] }),
    // @ts-expect-error misspelt: Enabled
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", cache: { Enabled: false } }] }),
    // @ts-expect-error wrong type: "no"
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", cache: { enabled: "no" } }] }),
  ];
}

// createModelRoutes providers[].cache.scope
export function row166(): unknown[] {
  return [
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", cache: { scope: "shared" } }] }),
    // @ts-expect-error misspelt: Scope
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", cache: { Scope: "shared" } }] }),
    // @ts-expect-error wrong type: "everyone"
    createModelRoutes({ providers: [{ slug: "claude", provider: "anthropic", apiKey: "sk-ant-options", cache: { scope: "everyone" } }] }),
  ];
}

// createModelRoutes catalog
export function row167(): unknown[] {
  return [
    createModelRoutes({ catalog: { resolveProvider: () => undefined, listProviders: () => [] } }),
    // @ts-expect-error misspelt: Catalog
    createModelRoutes({ Catalog: { resolveProvider: () => undefined, listProviders: () => [] } }),
    // @ts-expect-error wrong type: "postgres"
    createModelRoutes({ catalog: "postgres" }),
  ];
}

// createModelRoutes prompts
export function row168(): unknown[] {
  return [
    createModelRoutes({ prompts: [{ id: "p", provider: "@claude", model: "m", messages: [] }] }),
    // @ts-expect-error misspelt: Prompts
    createModelRoutes({ Prompts: [{ id: "p", provider: "@claude", model: "m", messages: [] }] }),
    // @ts-expect-error wrong type: "p"
    createModelRoutes({ prompts: "p" }),
  ];
}

// createModelRoutes resolvePrompt
export function row169(): unknown[] {
  return [
    createModelRoutes({ resolvePrompt: () => undefined }),
    // @ts-expect-error misspelt: resolve_prompt
    createModelRoutes({ resolve_prompt: () => undefined }),
    // @ts-expect-error wrong type: "p"
    createModelRoutes({ resolvePrompt: "p" }),
  ];
}

// createModelRoutes bodyLimit
export function row170(): unknown[] {
  return [
    createModelRoutes({ bodyLimit: "50mb" }),
    // @ts-expect-error misspelt: body_limit
    createModelRoutes({ body_limit: "50mb" }),
    // @ts-expect-error wrong type: true
    createModelRoutes({ bodyLimit: true }),
  ];
}

// createModelRoutes maxJsonDepth
export function row171(): unknown[] {
  return [
    createModelRoutes({ maxJsonDepth: 64 }),
    // @ts-expect-error misspelt: max_json_depth
    createModelRoutes({ max_json_depth: 64 }),
    // @ts-expect-error wrong type: "64"
    createModelRoutes({ maxJsonDepth: "64" }),
  ];
}

// createModelRoutes timeoutMs
export function row172(): unknown[] {
  return [
    createModelRoutes({ timeoutMs: 1000 }),
    // @ts-expect-error misspelt: timeout_ms
    createModelRoutes({ timeout_ms: 1000 }),
    // @ts-expect-error wrong type: "30000"
    createModelRoutes({ timeoutMs: "30000" }),
  ];
}

// createModelRoutes streamIdleTimeoutMs
export function row173(): unknown[] {
  return [
    createModelRoutes({ streamIdleTimeoutMs: 1000 }),
    // @ts-expect-error misspelt: stream_idle_timeout_ms
    createModelRoutes({ stream_idle_timeout_ms: 1000 }),
    // @ts-expect-error wrong type: "30000"
    createModelRoutes({ streamIdleTimeoutMs: "30000" }),
  ];
}

// createModelRoutes maxRetryAttempts
export function row174(): unknown[] {
  return [
    createModelRoutes({ maxRetryAttempts: 2 }),
    // @ts-expect-error misspelt: max_retry_attempts
    createModelRoutes({ max_retry_attempts: 2 }),
    // @ts-expect-error wrong type: "2"
    createModelRoutes({ maxRetryAttempts: "2" }),
  ];
}

// createModelRoutes maxRetryTimeMs
export function row175(): unknown[] {
  return [
    createModelRoutes({ maxRetryTimeMs: 1000 }),
    // @ts-expect-error misspelt: max_retry_time_ms
    createModelRoutes({ max_retry_time_ms: 1000 }),
    // @ts-expect-error wrong type: "30000"
    createModelRoutes({ maxRetryTimeMs: "30000" }),
  ];
}

// createModelRoutes callerId
export function row176(): unknown[] {
  return [
    createModelRoutes({ callerId: () => "caller" }),
    // @ts-expect-error misspelt: caller_id
    createModelRoutes({ caller_id: () => "caller" }),
    // @ts-expect-error wrong type: "caller"
    createModelRoutes({ callerId: "caller" }),
  ];
}

// createModelRoutes onInternalError
export function row177(): unknown[] {
  return [
    createModelRoutes({ onInternalError: () => undefined }),
    // @ts-expect-error misspelt: on_internal_error
    createModelRoutes({ on_internal_error: () => undefined }),
    // @ts-expect-error wrong type: "log"
    createModelRoutes({ onInternalError: "log" }),
  ];
}

// createModelRoutes authorize
export function row178(): unknown[] {
  return [
    createModelRoutes({ authorize: () => true }),
    // @ts-expect-error misspelt: Authorize
    createModelRoutes({ Authorize: () => true }),
    // @ts-expect-error wrong type: true
    createModelRoutes({ authorize: true }),
  ];
}

// createModelRoutes cacheStore
export function row179(): unknown[] {
  return [
    createModelRoutes({ cacheStore: { get: async () => undefined, set: async () => undefined } }),
    // @ts-expect-error misspelt: cache_store
    createModelRoutes({ cache_store: { get: async () => undefined, set: async () => undefined } }),
    // @ts-expect-error wrong type: "redis"
    createModelRoutes({ cacheStore: "redis" }),
  ];
}

// createModelRoutes now
export function row180(): unknown[] {
  return [
    createModelRoutes({ now: () => 0 }),
    // @ts-expect-error misspelt: Now
    createModelRoutes({ Now: () => 0 }),
    // @ts-expect-error wrong type: 0
    createModelRoutes({ now: 0 }),
  ];
}

// LiveCatalog reloadIntervalMs
export function row181(): unknown[] {
  return [
    new LiveCatalog(database, store, { reloadIntervalMs: 60000 }),
    // @ts-expect-error misspelt: reload_interval_ms
    new LiveCatalog(database, store, { reload_interval_ms: 60000 }),
    // @ts-expect-error wrong type: "30000"
    new LiveCatalog(database, store, { reloadIntervalMs: "30000" }),
  ];
}

// LiveCatalog retryIntervalMs
export function row182(): unknown[] {
  return [
    new LiveCatalog(database, store, { retryIntervalMs: 1000 }),
    // @ts-expect-error misspelt: retry_interval_ms
    new LiveCatalog(database, store, { retry_interval_ms: 1000 }),
    // @ts-expect-error wrong type: "30000"
    new LiveCatalog(database, store, { retryIntervalMs: "30000" }),
  ];
}

// LiveCatalog changeTracking
export function row183(): unknown[] {
  return [
    new LiveCatalog(database, store, { changeTracking: "audit" }),
    // @ts-expect-error misspelt: change_tracking
    new LiveCatalog(database, store, { change_tracking: "audit" }),
    // @ts-expect-error wrong type: "notify"
    new LiveCatalog(database, store, { changeTracking: "notify" }),
  ];
}

// LiveCatalog onUnreadable
export function row184(): unknown[] {
  return [
    new LiveCatalog(database, store, { onUnreadable: () => undefined }),
    // @ts-expect-error misspelt: on_unreadable
    new LiveCatalog(database, store, { on_unreadable: () => undefined }),
    // @ts-expect-error wrong type: "log"
    new LiveCatalog(database, store, { onUnreadable: "log" }),
  ];
}

// LiveCatalog debounceMs
export function row185(): unknown[] {
  return [
    new LiveCatalog(database, store, { debounceMs: 0 }),
    // @ts-expect-error misspelt: debounce_ms
    new LiveCatalog(database, store, { debounce_ms: 0 }),
    // @ts-expect-error wrong type: "30000"
    new LiveCatalog(database, store, { debounceMs: "30000" }),
  ];
}

// LiveCatalog onChange
export function row186(): unknown[] {
  return [
    new LiveCatalog(database, store, { onChange: () => undefined }),
    // @ts-expect-error misspelt: on_change
    new LiveCatalog(database, store, { on_change: () => undefined }),
    // @ts-expect-error wrong type: true
    new LiveCatalog(database, store, { onChange: true }),
  ];
}

// RequestLogWriter db
export function row187(): unknown[] {
  return [
    new RequestLogWriter({ db: database }),
    // @ts-expect-error misspelt: Db
    new RequestLogWriter({ Db: database }),
    // @ts-expect-error missing: db
    new RequestLogWriter({}),
    // @ts-expect-error wrong type: "postgres://gw@127.0.0.1/gw"
    new RequestLogWriter({ db: "postgres://gw@127.0.0.1/gw" }),
  ];
}

// RequestLogWriter maxQueue
export function row188(): unknown[] {
  return [
    new RequestLogWriter({ db: database, maxQueue: 100 }),
    // @ts-expect-error misspelt: max_queue
    new RequestLogWriter({ db: database, max_queue: 100 }),
    // @ts-expect-error wrong type: "100"
    new RequestLogWriter({ db: database, maxQueue: "100" }),
  ];
}

// RequestLogWriter batchSize
export function row189(): unknown[] {
  return [
    new RequestLogWriter({ db: database, batchSize: 50 }),
    // @ts-expect-error misspelt: batch_size
    new RequestLogWriter({ db: database, batch_size: 50 }),
    // @ts-expect-error wrong type: "50"
    new RequestLogWriter({ db: database, batchSize: "50" }),
  ];
}

// RequestLogWriter flushIntervalMs
export function row190(): unknown[] {
  return [
    new RequestLogWriter({ db: database, flushIntervalMs: 1000 }),
    // @ts-expect-error misspelt: flush_interval_ms
    new RequestLogWriter({ db: database, flush_interval_ms: 1000 }),
    // @ts-expect-error wrong type: "30000"
    new RequestLogWriter({ db: database, flushIntervalMs: "30000" }),
  ];
}

// RequestLogWriter retentionDays
export function row191(): unknown[] {
  return [
    new RequestLogWriter({ db: database, retentionDays: 7 }),
    // @ts-expect-error misspelt: retention_days
    new RequestLogWriter({ db: database, retention_days: 7 }),
    // @ts-expect-error wrong type: "7d"
    new RequestLogWriter({ db: database, retentionDays: "7d" }),
  ];
}

// RequestLogWriter retentionIntervalMs
export function row192(): unknown[] {
  return [
    new RequestLogWriter({ db: database, retentionIntervalMs: 60000 }),
    // @ts-expect-error misspelt: retention_interval_ms
    new RequestLogWriter({ db: database, retention_interval_ms: 60000 }),
    // @ts-expect-error wrong type: "30000"
    new RequestLogWriter({ db: database, retentionIntervalMs: "30000" }),
  ];
}

// RequestLogWriter onError
export function row193(): unknown[] {
  return [
    new RequestLogWriter({ db: database, onError: () => undefined }),
    // @ts-expect-error misspelt: on_error
    new RequestLogWriter({ db: database, on_error: () => undefined }),
    // @ts-expect-error wrong type: "log"
    new RequestLogWriter({ db: database, onError: "log" }),
  ];
}

// openPostgres maxConnections
export function row194(): unknown[] {
  return [
    openPostgres("postgres://gw@127.0.0.1:9/gw", { maxConnections: 4 }),
    // @ts-expect-error misspelt: max_connections
    openPostgres("postgres://gw@127.0.0.1:9/gw", { max_connections: 4 }),
    // @ts-expect-error wrong type: "4"
    openPostgres("postgres://gw@127.0.0.1:9/gw", { maxConnections: "4" }),
  ];
}

// openPostgres timeoutMs
export function row195(): unknown[] {
  return [
    openPostgres("postgres://gw@127.0.0.1:9/gw", { timeoutMs: 5000 }),
    // @ts-expect-error misspelt: timeout_ms
    openPostgres("postgres://gw@127.0.0.1:9/gw", { timeout_ms: 5000 }),
    // @ts-expect-error wrong type: "30000"
    openPostgres("postgres://gw@127.0.0.1:9/gw", { timeoutMs: "30000" }),
  ];
}

// openPostgres onListenError
export function row196(): unknown[] {
  return [
    openPostgres("postgres://gw@127.0.0.1:9/gw", { onListenError: () => undefined }),
    // @ts-expect-error misspelt: on_listen_error
    openPostgres("postgres://gw@127.0.0.1:9/gw", { on_listen_error: () => undefined }),
    // @ts-expect-error wrong type: "log"
    openPostgres("postgres://gw@127.0.0.1:9/gw", { onListenError: "log" }),
  ];
}

// IdentityTokenCache maxSize
export function row197(): unknown[] {
  return [
    new IdentityTokenCache({ maxSize: 100 }),
    // @ts-expect-error misspelt: max_size
    new IdentityTokenCache({ max_size: 100 }),
    // @ts-expect-error wrong type: "100"
    new IdentityTokenCache({ maxSize: "100" }),
  ];
}

// IdentityTokenCache now
export function row198(): unknown[] {
  return [
    new IdentityTokenCache({ now: () => 0 }),
    // @ts-expect-error misspelt: Now
    new IdentityTokenCache({ Now: () => 0 }),
    // @ts-expect-error wrong type: 0
    new IdentityTokenCache({ now: 0 }),
  ];
}

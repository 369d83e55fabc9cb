import type { UpstreamAuthConfig } from '@gw/upstream-auth';
import { compileAccess, type AccessMode, type AccessPolicy, type AccessSnapshot } from '@gw/access';
import {
  configApiKeyId,
  forbiddenUpstreamAddress,
  withSecrets,
  type CatalogSnapshot,
  type OpenedRecord,
} from '@gw/catalog';
import type { ApiKeyEntry, McpServerConfig } from '@gw/identity-forwarding';
import { resolveVirtualServer, type ResolvedVirtualServer, type VirtualServerConfig } from '@gw/mcp-gateway';
import {
  createInMemoryCatalog,
  type ModelProviderConfig,
  type PromptTemplate,
  type ProviderEntry,
} from '@gw/model-router';
import type { AwsIntegration } from '@gw/sigv4-proxy';
import type { Logger } from 'pino';
import type { GatewayConfig } from '../config/schema';
import { providerRefusal } from './record-checks';

/**
 * The catalog as the request path reads it: the config file's records and the database's, merged,
 * in plain maps. Built whole on every change and swapped in one assignment, so a request sees one
 * catalog or the next, never a mixture.
 */
export interface CatalogView {
  readonly modelProviders: ReadonlyMap<string, ProviderEntry>;
  readonly modelProviderList: readonly ProviderEntry[];
  readonly awsIntegrations: ReadonlyMap<string, AwsIntegration>;
  readonly mcpServers: readonly McpServerConfig[];
  readonly mcpSlugs: ReadonlySet<string>;
  readonly prompts: ReadonlyMap<string, PromptTemplate>;
  readonly apiKeys: readonly ApiKeyEntry[];
  /** The API key id of each API-key caller's subject (`key:<…>`): a record's id, or `config-<digest>` for the config file's. */
  readonly apiKeyIds: ReadonlyMap<string, string>;
  /** When each catalog API key with an expiry expires (ms since the epoch), by its id. */
  readonly apiKeyExpiry: ReadonlyMap<string, number>;
  /** The access policies (config file and database), compiled. */
  readonly access: AccessSnapshot;
  /** The slugs of the MCP servers with `tool_pinning: true`. */
  readonly pinnedMcpServers: ReadonlySet<string>;
  /** Each MCP server's `upstream_auth` (CONTRACT section 15), with its secrets opened, by slug. */
  readonly upstreamAuth: ReadonlyMap<string, UpstreamAuthConfig>;
  /** Each MCP server's `url`, by slug. */
  readonly mcpUrls: ReadonlyMap<string, string>;
  /**
   * The named routing configs (CONTRACT section 17), each `config` object by slug: the config
   * file's, then the database's whose slug the file does not define. Read with `namedConfig`.
   */
  readonly namedConfigs: ReadonlyMap<string, Readonly<Record<string, unknown>>>;
  /**
   * The virtual MCP servers (CONTRACT section 16), resolved, by slug: the config file's, then the
   * database's whose slug no MCP server or virtual server of the file takes and whose members are
   * all MCP servers of this view. Served at `/mcp/<slug>` (one namespace with `mcpSlugs`).
   */
  readonly virtualServers: ReadonlyMap<string, ResolvedVirtualServer>;
  /** Records of each kind, for metrics. */
  readonly counts: ReadonlyMap<string, number>;
}

/** Each record's fields and whether the packages accept it, kept while the record is unchanged (same object). */
const checked = new WeakMap<OpenedRecord, { data: Record<string, unknown>; refusal?: string }>();

/** A record of the database as the packages take it: its fields with its secrets opened. */
function fields(record: OpenedRecord): Record<string, unknown> {
  const { _knownModels, ...data } = record.data;
  // Every secret back in its place: top-level ones (a provider's `apiKey`) and nested ones (an MCP
  // server's `upstream_auth.client.client_secret`, its `headers` values).
  const merged: Record<string, unknown> = withSecrets(record.kind, data, record.secrets);
  if (Array.isArray(_knownModels)) merged.knownModels = _knownModels;
  return merged;
}

/**
 * `value` frozen through and through (every object and array in it), without recursion: a named
 * config is shared by every request of the snapshot, so none can change it for the others.
 */
function frozenJson<T extends object>(value: T): Readonly<T> {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item !== 'object' || item === null || Object.isFrozen(item)) continue;
    Object.freeze(item);
    for (const child of Object.values(item)) stack.push(child);
  }
  return value;
}

/** Each virtual server resolved, kept while its record (or config file entry) is unchanged (same object). */
const resolvedVirtualServers = new WeakMap<object, ResolvedVirtualServer | Error>();

/**
 * A virtual server of the config file or of the database, resolved as `resolveVirtualServer` does
 * (without checking that its members exist), or why it cannot be. One object per version of the
 * record, so the virtual servers' handler keeps what it learned of its members across reloads.
 */
function resolvedVirtualServer(source: OpenedRecord | VirtualServerConfig): ResolvedVirtualServer | Error {
  let result = resolvedVirtualServers.get(source);
  if (result === undefined) {
    const isRecord = 'kind' in source && 'data' in source && 'secrets' in source;
    const entry = isRecord
      ? Object.fromEntries(Object.entries((source as OpenedRecord).data).filter(([field]) => !field.startsWith('_')))
      : source;
    try {
      result = resolveVirtualServer(entry as unknown as VirtualServerConfig);
    } catch (error) {
      result = error as Error;
    }
    resolvedVirtualServers.set(source, result);
  }
  return result;
}

/** A bedrock record's knowledge-base integration: its fields less the model catalog's `knownModels`. */
function awsIntegrationOf(data: Record<string, unknown>): AwsIntegration {
  const { knownModels: _known, ...integration } = data;
  return integration as unknown as AwsIntegration;
}

/**
 * Why a record's upstream address may not be used (a link-local or cloud metadata address: a
 * record stored before the admin API refused them, or written into the database directly), naming
 * the field; undefined when every address may be.
 */
export function forbiddenAddressOf(data: Record<string, unknown>): string | undefined {
  for (const field of ['baseUrl', 'url'] as const) {
    const value = data[field];
    const reason = typeof value === 'string' ? forbiddenUpstreamAddress(value) : undefined;
    if (reason !== undefined) return `${field} ${reason}`;
  }
  const hosts = Array.isArray(data.allowedHosts) ? data.allowedHosts : [];
  for (const [index, host] of hosts.entries()) {
    const reason = typeof host === 'string' ? forbiddenUpstreamAddress(host) : undefined;
    if (reason !== undefined) return `allowedHosts[${index}] ${reason}`;
  }
  return undefined;
}

/** A provider record's fields, validated by the package that serves it (once per version of the record). */
function checkedProvider(record: OpenedRecord): { data: Record<string, unknown>; refusal?: string } {
  let result = checked.get(record);
  if (!result) {
    const data = fields(record);
    const refusal = forbiddenAddressOf(data) ?? providerRefusal(data);
    result = refusal === undefined ? { data } : { data, refusal };
    checked.set(record, result);
  }
  return result;
}

/**
 * Builds the view from the config file and, when there is one, the database's snapshot. A record of
 * the database whose slug the config file also defines is skipped (the config file wins) and so is
 * one the packages refuse; each is logged, none stops the others.
 */
export function buildCatalogView(
  config: GatewayConfig,
  snapshot: CatalogSnapshot | undefined,
  logger?: Logger,
  extraApiKeys: readonly ApiKeyEntry[] = [],
  accessMode: AccessMode = 'open',
): CatalogView {
  const skip = (kind: string, slug: string, reason: string) =>
    logger?.error({ record: `${kind}/${slug}` }, `catalog record ${kind}/${slug} is not served: ${reason}`);
  const records = (
    kind: 'providers' | 'mcp-servers' | 'prompts' | 'api-keys' | 'policies' | 'configs' | 'virtual-servers',
  ) => [...(snapshot?.records.get(kind)?.values() ?? [])];

  const providerConfigs: ModelProviderConfig[] = [];
  const awsIntegrations = new Map<string, AwsIntegration>();
  const configSlugs = new Set((config.providers ?? []).map((p) => p.slug));
  // A bedrock record serves knowledge bases (awsIntegrations) and Anthropic's models on Bedrock (the model catalog).
  for (const provider of config.providers ?? []) {
    if (provider.provider === 'bedrock') awsIntegrations.set(provider.slug, provider as AwsIntegration);
    providerConfigs.push(provider as ModelProviderConfig);
  }
  for (const record of records('providers')) {
    if (configSlugs.has(record.slug)) {
      skip('providers', record.slug, 'the config file defines the same slug');
      continue;
    }
    const { data, refusal } = checkedProvider(record);
    if (refusal !== undefined) skip('providers', record.slug, refusal);
    else {
      if (data.provider === 'bedrock') awsIntegrations.set(record.slug, awsIntegrationOf(data));
      providerConfigs.push(data as unknown as ModelProviderConfig);
    }
  }
  const modelCatalog = createInMemoryCatalog(providerConfigs);
  const modelProviderList = modelCatalog.listProviders();
  const modelProviders = new Map(modelProviderList.map((p) => [p.slug, p]));

  const pinnedMcpServers = new Set<string>();
  const upstreamAuth = new Map<string, UpstreamAuthConfig>();
  const mcpServer = (server: Record<string, unknown>): McpServerConfig => {
    // `tool_pinning` and `upstream_auth` are the gateway's, not the MCP proxy's: kept aside.
    const { tool_pinning, upstream_auth, ...rest } = server;
    if (tool_pinning === true) pinnedMcpServers.add(String(rest.slug));
    if (upstream_auth !== undefined && upstream_auth !== null)
      upstreamAuth.set(String(rest.slug), upstream_auth as UpstreamAuthConfig);
    return rest as unknown as McpServerConfig;
  };
  const mcpServers: McpServerConfig[] = (config.mcpServers ?? []).map((s) => mcpServer(s));
  const mcpSlugs = new Set(mcpServers.map((s) => s.slug));
  const configVirtualSlugs = new Set((config.virtualServers ?? []).map((entry) => entry.slug));
  for (const record of records('mcp-servers')) {
    if (mcpSlugs.has(record.slug) || configVirtualSlugs.has(record.slug)) {
      skip('mcp-servers', record.slug, 'the config file defines the same slug');
      continue;
    }
    const forbidden = forbiddenAddressOf(record.data);
    if (forbidden !== undefined) {
      skip('mcp-servers', record.slug, forbidden);
      continue;
    }
    // The secrets of `upstream_auth` are nested: put back in place, not merged as fields.
    mcpServers.push(mcpServer(withSecrets('mcp-servers', record.data, record.secrets)));
    mcpSlugs.add(record.slug);
  }

  const prompts = new Map<string, PromptTemplate>();
  for (const prompt of (config.prompts ?? []) as PromptTemplate[]) prompts.set(prompt.id, prompt);
  for (const record of records('prompts')) {
    if (prompts.has(record.slug)) {
      skip('prompts', record.slug, 'the config file defines the same id');
      continue;
    }
    prompts.set(record.slug, fields(record) as unknown as PromptTemplate);
  }

  const configKeys = (config.auth?.apiKeys ?? []) as ApiKeyEntry[];
  const apiKeys: ApiKeyEntry[] = [...configKeys, ...extraApiKeys];
  const apiKeyIds = new Map<string, string>();
  const apiKeyExpiry = new Map<string, number>();
  configKeys.forEach((entry, index) => apiKeyIds.set(`key:${index}`, configApiKeyId(entry)));
  for (const record of records('api-keys')) {
    const {
      keySha256,
      user,
      expiresAt,
      config: namedConfigSlug,
    } = record.data as {
      keySha256?: string;
      user?: ApiKeyEntry['user'];
      expiresAt?: string;
      config?: unknown;
    };
    if (typeof keySha256 === 'string' && user) {
      const expires = typeof expiresAt === 'string' ? Date.parse(expiresAt) : undefined;
      // An expiry that does not read as a time fails closed: the key is expired.
      apiKeys.push({
        keySha256,
        user,
        id: record.id,
        ...(expires === undefined ? {} : { expiresAt: expires || 0 }),
        // The key's named config travels on its caller's identity (`apiKeyConfigSlug`).
        ...(typeof namedConfigSlug === 'string' && namedConfigSlug !== '' ? { config: namedConfigSlug } : {}),
      });
      apiKeyIds.set(`key:${record.id}`, record.id);
      if (expires !== undefined) apiKeyExpiry.set(record.id, expires || 0);
    }
  }

  const policies: AccessPolicy[] = [...((config.policies ?? []) as AccessPolicy[])];
  const policySlugs = new Set(policies.map((p) => p.slug));
  for (const record of records('policies')) {
    if (policySlugs.has(record.slug)) {
      skip('policies', record.slug, 'the config file defines the same slug');
      continue;
    }
    const policy = record.data as unknown as AccessPolicy;
    try {
      compileAccess({ policies: [policy] });
    } catch (error) {
      skip('policies', record.slug, (error as Error).message);
      continue;
    }
    policies.push(policy);
    policySlugs.add(record.slug);
  }
  const access = compileAccess({ mode: accessMode, policies });

  const namedConfigs = new Map<string, Readonly<Record<string, unknown>>>();
  for (const entry of config.configs ?? []) namedConfigs.set(entry.slug, frozenJson(entry.config));
  for (const record of records('configs')) {
    if (namedConfigs.has(record.slug)) {
      skip('configs', record.slug, 'the config file defines the same slug');
      continue;
    }
    const body = record.data.config;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      skip('configs', record.slug, 'its config is not a JSON object');
      continue;
    }
    namedConfigs.set(record.slug, frozenJson(body as Record<string, unknown>));
  }

  // Validated by the schema (the file's) or by the admin API (the database's); a member the
  // database lost since, or a slug an MCP server took meanwhile, skips the record.
  const virtualServers = new Map<string, ResolvedVirtualServer>();
  for (const entry of config.virtualServers ?? []) {
    const resolved = resolvedVirtualServer(entry as VirtualServerConfig);
    // The schema resolved each entry at start-up already: one that fails here is a bug.
    if (resolved instanceof Error) throw resolved;
    virtualServers.set(entry.slug, resolved);
  }
  for (const record of records('virtual-servers')) {
    if (virtualServers.has(record.slug) || mcpSlugs.has(record.slug)) {
      skip('virtual-servers', record.slug, 'an MCP server or a virtual server of the config file has the same slug');
      continue;
    }
    const resolved = resolvedVirtualServer(record);
    const missing = resolved instanceof Error ? undefined : resolved.members.find((m) => !mcpSlugs.has(m.server));
    if (resolved instanceof Error) skip('virtual-servers', record.slug, resolved.message);
    else if (missing !== undefined)
      skip('virtual-servers', record.slug, `its member "${missing.server}" is not an MCP server of the gateway`);
    else virtualServers.set(record.slug, resolved);
  }

  const counts = new Map([
    ['providers', modelProviders.size],
    ['mcp-servers', mcpServers.length],
    ['prompts', prompts.size],
    ['api-keys', apiKeys.length],
    ['policies', policies.length],
    ['configs', namedConfigs.size],
    ['virtual-servers', virtualServers.size],
  ]);
  return {
    modelProviders,
    modelProviderList,
    awsIntegrations,
    mcpServers,
    mcpSlugs,
    prompts,
    apiKeys,
    apiKeyIds,
    apiKeyExpiry,
    access,
    pinnedMcpServers,
    upstreamAuth,
    mcpUrls: new Map(mcpServers.map((server) => [server.slug, server.url])),
    namedConfigs,
    virtualServers,
    counts,
  };
}

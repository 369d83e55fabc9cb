import { rejectUnknownOptions } from '@gw/options';
import { PatternSet } from './patterns';

/**
 * `open`: every authenticated caller reaches everything; `policies`: denied unless a policy allows;
 * `report`: decided as `policies` decides (every answer says what `policies` would do), but the host
 * lets the request through and reports the refusal it would have made.
 */
export type AccessMode = 'open' | 'report' | 'policies';

/** Every access mode, in order of strictness. */
export const ACCESS_MODES: readonly AccessMode[] = ['open', 'report', 'policies'];

/** Who a policy is for: exact user ids, group names and API key ids. Each list defaults to `[]`. */
export interface PolicySubjects {
  /** User ids (an API key's `user.user_id`, or a token's `sub`). Default `[]`. */
  users?: readonly string[];
  /** Group names. Default `[]`. */
  groups?: readonly string[];
  /** API key ids. Default `[]`. */
  apiKeys?: readonly string[];
}

/** One MCP server a policy opens: `server` (a pattern) and, optionally, only the tools matching `tools`. */
export interface McpServerGrant {
  /** MCP server slug pattern, such as `"tools-*"`. Required. */
  server: string;
  /** Tool name patterns. Default: every tool of the server. */
  tools?: readonly string[];
}

/** What a policy allows. Each list defaults to `[]` (nothing). Every entry is a `*` pattern. */
export interface PolicyAllow {
  /** `@<provider slug>/<model>` patterns, such as `"@anthropic/claude-*"`. */
  models?: readonly string[];
  /** MCP servers (and their tools) the policy opens. Default `[]`. */
  mcpServers?: readonly McpServerGrant[];
  /** AWS integration slugs. */
  integrations?: readonly string[];
}

/** An access policy (a catalog record of kind `policies`, or an entry of the config file's `policies`). */
export interface AccessPolicy {
  /** The policy's name in decisions (`policies` of an {@link AccessDecision}). Required (non-empty). */
  slug: string;
  /** Display name. Default: the slug. */
  name?: string;
  /** Who the policy is for. Required. */
  subjects: PolicySubjects;
  /** What the policy allows. Required. */
  allow: PolicyAllow;
  /** Record fields a host keeps with the policy (id, version, …) are ignored. */
  [field: string]: unknown;
}

/** Who is calling, as the access rules see it. */
export interface AccessCaller {
  /** The user id: an API key's `user.user_id`, or a token's `sub`. */
  user?: string;
  /** The caller's groups. Default `[]`. */
  groups?: readonly string[];
  /** The API key's id, for API-key callers. */
  apiKey?: string;
}

/** What a caller wants to use. */
export type AccessResource =
  | { kind: 'model'; provider: string; model: string }
  | { kind: 'mcp'; server: string; tool?: string }
  | { kind: 'integration'; slug: string };

/** The answer of {@link decide}. */
export interface AccessDecision {
  allowed: boolean;
  mode: AccessMode;
  /** The slugs of the policies that allow it (empty in `open` mode and when denied). */
  policies: string[];
  /** Why, in a sentence. */
  reason: string;
}

/** A policy compiled for matching. */
export interface CompiledPolicy {
  readonly slug: string;
  readonly models: PatternSet;
  readonly mcpServers: readonly { server: PatternSet; tools: PatternSet | undefined }[];
  readonly integrations: PatternSet;
}

/** Most callers whose applicable policies are remembered by one snapshot. */
const CALLER_CACHE_SIZE = 10_000;

/**
 * Policies compiled into an index, built once per change of the policies (see {@link compileAccess})
 * and read by every decision: the policies naming a caller are found by exact lookups, and
 * remembered per caller.
 */
export class AccessSnapshot {
  readonly mode: AccessMode;
  readonly policies: readonly CompiledPolicy[];
  private readonly byUser = new Map<string, number[]>();
  private readonly byGroup = new Map<string, number[]>();
  private readonly byApiKey = new Map<string, number[]>();
  private readonly cache = new Map<string, AccessSubject>();

  /** @internal Use {@link compileAccess}. */
  constructor(mode: AccessMode, policies: readonly AccessPolicy[]) {
    this.mode = mode;
    const compiled: CompiledPolicy[] = [];
    const slugs = new Set<string>();
    policies.forEach((policy, index) => {
      const where = `policies[${typeof policy?.slug === 'string' ? policy.slug.slice(0, 64) : index}]`;
      compiled.push(compilePolicy(policy, where));
      if (slugs.has(policy.slug)) throw new TypeError(`${where}: two policies have the slug "${policy.slug}".`);
      slugs.add(policy.slug);
      const add = (map: Map<string, number[]>, names: readonly string[] | undefined) => {
        for (const name of names ?? []) {
          const list = map.get(name);
          if (list === undefined) map.set(name, [index]);
          else if (list.at(-1) !== index) list.push(index);
        }
      };
      add(this.byUser, policy.subjects.users);
      add(this.byGroup, policy.subjects.groups);
      add(this.byApiKey, policy.subjects.apiKeys);
    });
    this.policies = compiled;
  }

  /** The policies that name `caller` (by user, group or API key), in the order they were given. */
  applicable(caller: AccessCaller): readonly CompiledPolicy[] {
    return this.subject(caller).policies;
  }

  /**
   * The caller's compiled view of this snapshot: its policies and its memoised decisions, built
   * once per caller (user, API key and groups) and remembered (at most 10,000 callers; the oldest
   * is forgotten first). Hosts may keep it for as long as they keep this snapshot.
   */
  subject(caller: AccessCaller): AccessSubject {
    const groups = caller.groups ?? [];
    const key = `${caller.user ?? ''}\u0000${caller.apiKey ?? ''}\u0000${groups.join('\u0000')}`;
    const cached = this.cache.get(key);
    if (cached !== undefined) return cached;
    const indexes = new Set<number>();
    const collect = (list: number[] | undefined) => {
      if (list) for (const i of list) indexes.add(i);
    };
    if (caller.user !== undefined) collect(this.byUser.get(caller.user));
    if (caller.apiKey !== undefined) collect(this.byApiKey.get(caller.apiKey));
    for (const group of groups) collect(this.byGroup.get(group));
    const found = [...indexes].sort((a, b) => a - b).map((i) => this.policies[i] as CompiledPolicy);
    const subject = new AccessSubject(this.mode, found);
    if (this.cache.size >= CALLER_CACHE_SIZE) this.cache.delete(this.cache.keys().next().value as string);
    this.cache.set(key, subject);
    return subject;
  }
}

/** Most decisions one {@link AccessSubject} remembers per kind of resource (models, integrations, MCP servers), and per MCP server's tools. */
export const DECISION_CACHE_SIZE = 4096;

function remember<K, V>(map: Map<K, V>, key: K, value: V): V {
  if (map.size >= DECISION_CACHE_SIZE) map.delete(map.keys().next().value as K);
  map.set(key, value);
  return value;
}

/**
 * What one caller may use of one MCP server, for one snapshot: built once, then read by every
 * request of that caller to that server.
 */
export class McpServerRule {
  /** Whether the caller may use the server at all (`decide` on `mcp:<server>`). */
  readonly server: boolean;
  /** Whether the caller may use every tool of the server, so that nothing needs inspecting. */
  readonly everyTool: boolean;
  private readonly grants: readonly { tools: PatternSet | undefined }[];
  private readonly tools = new Map<string, boolean>();

  /** @internal Use {@link AccessSubject.mcpServer}. */
  constructor(mode: AccessMode, policies: readonly CompiledPolicy[], server: string) {
    const grants: { tools: PatternSet | undefined }[] = [];
    let everyTool = mode === 'open';
    if (!everyTool) {
      for (const policy of policies)
        for (const grant of policy.mcpServers) {
          if (!grant.server.matches(server)) continue;
          grants.push(grant);
          if (grant.tools === undefined || grant.tools.matchesAll) everyTool = true;
        }
    }
    this.server = mode === 'open' || grants.length > 0;
    this.everyTool = everyTool;
    this.grants = grants;
  }

  /** Whether the caller may use tool `name` of the server (`decide` on `mcp:<server>/<name>`); remembered. */
  tool(name: string): boolean {
    if (this.everyTool) return true;
    const known = this.tools.get(name);
    if (known !== undefined) return known;
    let allowed = false;
    for (const grant of this.grants)
      if (grant.tools === undefined || grant.tools.matches(name)) {
        allowed = true;
        break;
      }
    return remember(this.tools, name, allowed);
  }
}

/**
 * One caller under one snapshot (see {@link AccessSnapshot.subject}): the policies naming it and
 * its decisions, each computed once and remembered (at most {@link DECISION_CACHE_SIZE} per kind).
 * Agrees with {@link decide}: `allows(r)` is `decide(snapshot, caller, r).allowed`.
 */
export class AccessSubject {
  private readonly models = new Map<string, Map<string, boolean>>();
  private readonly integrations = new Map<string, boolean>();
  private readonly servers = new Map<string, McpServerRule>();

  /** @internal Use {@link AccessSnapshot.subject}. */
  constructor(
    readonly mode: AccessMode,
    /** The policies that name the caller, in the order they were given. */
    readonly policies: readonly CompiledPolicy[],
  ) {}

  /** Whether the caller may use model `model` of provider `provider`. */
  model(provider: string, model: string): boolean {
    if (this.mode === 'open') return true;
    // By provider, then model: a known answer is found without building `@provider/model`.
    let byModel = this.models.get(provider);
    if (byModel === undefined) byModel = remember(this.models, provider, new Map<string, boolean>());
    const known = byModel.get(model);
    if (known !== undefined) return known;
    const name = `@${provider}/${model}`;
    return remember(
      byModel,
      model,
      this.policies.some((p) => p.models.matches(name)),
    );
  }

  /** Whether the caller may use integration `slug`. */
  integration(slug: string): boolean {
    if (this.mode === 'open') return true;
    const known = this.integrations.get(slug);
    if (known !== undefined) return known;
    return remember(
      this.integrations,
      slug,
      this.policies.some((p) => p.integrations.matches(slug)),
    );
  }

  /** What the caller may use of MCP server `server`. */
  mcpServer(server: string): McpServerRule {
    return (
      this.servers.get(server) ?? remember(this.servers, server, new McpServerRule(this.mode, this.policies, server))
    );
  }

  /** Whether the caller may use `resource`: the same answer as {@link decide}, without its reasons. */
  allows(resource: AccessResource): boolean {
    switch (resource.kind) {
      case 'model':
        return this.model(resource.provider, resource.model);
      case 'integration':
        return this.integration(resource.slug);
      case 'mcp': {
        const rule = this.mcpServer(resource.server);
        return resource.tool === undefined ? rule.server : rule.server && rule.tool(resource.tool);
      }
    }
  }
}

function stringList(value: unknown, where: string): readonly string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string' || v === '')) {
    throw new TypeError(`${where} must be a list of non-empty strings.`);
  }
  if (value.length > 1000) throw new TypeError(`${where} has more than 1000 entries.`);
  return value as string[];
}

function compilePolicy(policy: AccessPolicy, where: string): CompiledPolicy {
  if (typeof policy !== 'object' || policy === null) throw new TypeError(`${where} must be an object.`);
  if (typeof policy.slug !== 'string' || policy.slug === '')
    throw new TypeError(`${where}.slug must be a non-empty string.`);
  if (policy.name !== undefined && typeof policy.name !== 'string')
    throw new TypeError(`${where}.name must be a string.`);
  const subjects = policy.subjects;
  if (typeof subjects !== 'object' || subjects === null)
    throw new TypeError(`${where}.subjects must be an object such as { "groups": ["support"] }.`);
  rejectUnknownOptions(subjects, ['users', 'groups', 'apiKeys'], `${where}.subjects`);
  stringList(subjects.users, `${where}.subjects.users`);
  stringList(subjects.groups, `${where}.subjects.groups`);
  stringList(subjects.apiKeys, `${where}.subjects.apiKeys`);
  const allow = policy.allow;
  if (typeof allow !== 'object' || allow === null)
    throw new TypeError(`${where}.allow must be an object such as { "models": ["@anthropic/claude-*"] }.`);
  rejectUnknownOptions(allow, ['models', 'mcpServers', 'integrations'], `${where}.allow`);
  const servers = allow.mcpServers ?? [];
  if (!Array.isArray(servers)) throw new TypeError(`${where}.allow.mcpServers must be a list of { server, tools? }.`);
  return {
    slug: policy.slug,
    models: new PatternSet(stringList(allow.models, `${where}.allow.models`), `${where}.allow.models`),
    integrations: new PatternSet(
      stringList(allow.integrations, `${where}.allow.integrations`),
      `${where}.allow.integrations`,
    ),
    mcpServers: servers.map((grant, i) => {
      const at = `${where}.allow.mcpServers[${i}]`;
      if (typeof grant !== 'object' || grant === null) throw new TypeError(`${at} must be { server, tools? }.`);
      rejectUnknownOptions(grant, ['server', 'tools'], at);
      return {
        server: new PatternSet([grant.server], `${at}.server`),
        tools:
          grant.tools === undefined ? undefined : new PatternSet(stringList(grant.tools, `${at}.tools`), `${at}.tools`),
      };
    }),
  };
}

/** Options of {@link compileAccess}. */
export interface CompileAccessOptions {
  /** `open`: every authenticated caller reaches everything; `policies`: denied unless a policy allows; `report`: decided as `policies`, for the host to report rather than refuse. Default `open`. */
  mode?: AccessMode;
  /** The access policies (read in `policies` mode). Default `[]`. */
  policies?: readonly AccessPolicy[];
}

/**
 * Compiles the policies of one version of the catalog into an {@link AccessSnapshot}: do it when
 * the policies change, never per request. Throws a `TypeError` naming the policy and field when
 * one is not valid.
 */
export function compileAccess(options: CompileAccessOptions): AccessSnapshot {
  if (typeof options !== 'object' || options === null) throw new TypeError('compileAccess needs { mode, policies }.');
  rejectUnknownOptions(options, ['mode', 'policies'], 'compileAccess');
  const mode = options.mode ?? 'open';
  if (!ACCESS_MODES.includes(mode)) throw new TypeError('access mode must be "open", "report" or "policies".');
  const policies = options.policies ?? [];
  if (!Array.isArray(policies)) throw new TypeError('policies must be a list of policies.');
  return new AccessSnapshot(mode, policies);
}

/** `@<slug>/<model>`, `mcp:<server>`, `mcp:<server>/<tool>` or `integration:<slug>`. */
export function formatResource(resource: AccessResource): string {
  switch (resource.kind) {
    case 'model':
      return `@${resource.provider}/${resource.model}`;
    case 'mcp':
      return resource.tool === undefined ? `mcp:${resource.server}` : `mcp:${resource.server}/${resource.tool}`;
    case 'integration':
      return `integration:${resource.slug}`;
  }
}

/** A resource written as text that is not one of the four forms. */
export class InvalidResourceError extends TypeError {
  /** Stable code. */
  readonly code = 'invalid_resource';
}

/** Longest resource text accepted by {@link parseResource}. */
export const MAX_RESOURCE_LENGTH = 512;

/**
 * Reads a resource written as `@<slug>/<model>`, `mcp:<server>`, `mcp:<server>/<tool>` or
 * `integration:<slug>`; throws {@link InvalidResourceError} otherwise.
 */
export function parseResource(text: string): AccessResource {
  const bad = () =>
    new InvalidResourceError(
      'resource must be "@<provider>/<model>", "mcp:<server>", "mcp:<server>/<tool>" or "integration:<slug>".',
    );
  if (typeof text !== 'string' || text === '' || text.length > MAX_RESOURCE_LENGTH) throw bad();
  if (text.startsWith('@')) {
    const slash = text.indexOf('/');
    if (slash <= 1 || slash === text.length - 1) throw bad();
    return { kind: 'model', provider: text.slice(1, slash), model: text.slice(slash + 1) };
  }
  if (text.startsWith('mcp:')) {
    const rest = text.slice(4);
    const slash = rest.indexOf('/');
    if (slash === -1) {
      if (rest === '') throw bad();
      return { kind: 'mcp', server: rest };
    }
    if (slash === 0 || slash === rest.length - 1) throw bad();
    return { kind: 'mcp', server: rest.slice(0, slash), tool: rest.slice(slash + 1) };
  }
  if (text.startsWith('integration:') && text.length > 'integration:'.length) {
    return { kind: 'integration', slug: text.slice('integration:'.length) };
  }
  throw bad();
}

function allows(policy: CompiledPolicy, resource: AccessResource, modelName: string | undefined): boolean {
  switch (resource.kind) {
    case 'model':
      return policy.models.matches(modelName as string);
    case 'integration':
      return policy.integrations.matches(resource.slug);
    case 'mcp':
      for (const grant of policy.mcpServers) {
        if (!grant.server.matches(resource.server)) continue;
        if (resource.tool === undefined || grant.tools === undefined || grant.tools.matches(resource.tool)) return true;
      }
      return false;
  }
}

const OPEN_REASON =
  'access mode is open: every authenticated caller may use every provider, MCP server and integration';

/**
 * THE access decision: whether `caller` may use `resource` under `snapshot`. In `open` mode
 * everything is allowed; in `policies` mode a resource is allowed when at least one policy naming
 * the caller (by user id, group or API key id) allows it, and the answer lists every such policy.
 * Both the request path and `/admin/v1/access/explain` call this function.
 */
export function decide(snapshot: AccessSnapshot, caller: AccessCaller, resource: AccessResource): AccessDecision {
  if (snapshot.mode === 'open') return { allowed: true, mode: 'open', policies: [], reason: OPEN_REASON };
  const applicable = snapshot.applicable(caller);
  const modelName = resource.kind === 'model' ? `@${resource.provider}/${resource.model}` : undefined;
  const policies: string[] = [];
  for (const policy of applicable) if (allows(policy, resource, modelName)) policies.push(policy.slug);
  if (policies.length > 0) {
    return {
      allowed: true,
      mode: snapshot.mode,
      policies,
      reason: `allowed by ${policies.length === 1 ? 'policy' : 'policies'} ${policies.map((p) => `"${p}"`).join(', ')}`,
    };
  }
  return {
    allowed: false,
    mode: snapshot.mode,
    policies,
    reason:
      applicable.length === 0
        ? 'no policy names this caller (by user id, group or API key)'
        : `no policy naming this caller allows ${formatResource(resource).slice(0, 200)}`,
  };
}

/**
 * Whether `caller` may use every tool of MCP server `server` (open mode, or a policy grants the
 * server without a `tools` list), so its `tools/list` and `tools/call` need no inspection. Agrees
 * with {@link decide}: when true, `decide` allows `mcp:<server>/<any tool>`.
 */
export function allToolsAllowed(snapshot: AccessSnapshot, caller: AccessCaller, server: string): boolean {
  if (snapshot.mode === 'open') return true;
  return snapshot.subject(caller).mcpServer(server).everyTool;
}

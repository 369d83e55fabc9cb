import type { IncomingMessage } from 'node:http';
import {
  decide,
  parseResource,
  type AccessCaller,
  type AccessResource,
  type AccessDecision,
  type AccessSubject,
  type McpServerRule,
} from '@gw/access';
import type { AccessQuestion, ToolPins } from '@gw/catalog';
import type { GatewayIdentity } from '@gw/identity-forwarding';
import type { McpAccess, McpToolVerdict } from '@gw/mcp-gateway';
import type { CatalogView } from '../catalog/catalog-view';

/** The subject of the console's own test key, which every access rule lets through. */
export const CONSOLE_TEST_SUBJECT = 'key:console-test';

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** At most this many groups of a caller are read. */
const MAX_GROUPS = 256;

function groupList(value: unknown): string[] {
  if (typeof value === 'string')
    return value
      .split(/[\s,]+/)
      .filter((g) => g !== '')
      .slice(0, MAX_GROUPS);
  if (!Array.isArray(value)) return [];
  return value.slice(0, MAX_GROUPS).filter((g): g is string => typeof g === 'string' && g !== '');
}

/** How a gateway OAuth token's sign-in names an API key: its `login` claim, `api_key:<key id>`. */
const API_KEY_SIGN_IN = 'api_key:';

/**
 * The id of the API key a gateway OAuth token was signed in with (its `login` claim, which the
 * gateway signs last, over any claim of the user's), or undefined for any other caller.
 */
export function signedInApiKeyId(identity: GatewayIdentity): string | undefined {
  if (identity.method !== 'oauth_token') return undefined;
  const login = identity.claims.login;
  return typeof login === 'string' && login.startsWith(API_KEY_SIGN_IN) && login.length > API_KEY_SIGN_IN.length
    ? login.slice(API_KEY_SIGN_IN.length)
    : undefined;
}

/**
 * The caller's user id, the same everywhere (access rules, limits, request records and usage): an
 * API key's `user.user_id` (else `sub`), and so for a gateway OAuth token signed in with an API key;
 * any other token's `sub`.
 */
export function callerUserId(identity: GatewayIdentity): string | undefined {
  const claims = identity.claims;
  if (identity.method === 'api_key' || signedInApiKeyId(identity) !== undefined)
    return text(claims.user_id) ?? text(claims.sub);
  return text(claims.sub);
}

/**
 * The caller as the access rules and limits see it (CONTRACT sections 10 and 14): an API key's
 * `user.user_id` (or `sub`), its `user.groups` and its id; a gateway OAuth token signed in with an
 * API key is that key (its id, its user, its groups); any other token's `sub` and the groups of its
 * `groupsClaim`.
 */
export function accessCaller(identity: GatewayIdentity, view: CatalogView, groupsClaim: string): AccessCaller {
  const claims = identity.claims;
  const signedInKey = signedInApiKeyId(identity);
  if (identity.method === 'api_key' || signedInKey !== undefined) {
    const caller: AccessCaller = { groups: groupList(claims.groups) };
    const user = callerUserId(identity);
    if (user !== undefined) caller.user = user;
    const apiKey = signedInKey ?? view.apiKeyIds.get(identity.subject);
    if (apiKey !== undefined) caller.apiKey = apiKey;
    return caller;
  }
  const caller: AccessCaller = { groups: groupList(claims[groupsClaim]) };
  const user = text(claims.sub);
  if (user !== undefined) caller.user = user;
  return caller;
}

/** What the access hooks read on every request. */
export interface AccessContext {
  /** The catalog as requests read it now. */
  view(): CatalogView;
  /** The token claim that holds a caller's groups. */
  groupsClaim: string;
  /** The recorded tools of pinned servers; without it every tool of a pinned server is held. */
  toolPins?: ToolPins;
  /**
   * Access mode `report`: called with a request `policies` would refuse (and why); the request goes
   * on. Default: none.
   */
  report?: (req: IncomingMessage, reason: string) => void;
}

function identityOf(req: IncomingMessage): GatewayIdentity | undefined {
  return (req as IncomingMessage & { callerIdentity?: GatewayIdentity }).callerIdentity;
}

/** The answer for a caller who may use every tool of a server (nothing to inspect). */
const EVERY_TOOL: McpAccess = Object.freeze({ allowed: true });
const DENIED: McpAccess = Object.freeze({ allowed: false });

/** Most MCP servers whose answer one caller remembers per catalog view. */
const MCP_ACCESS_CACHE_SIZE = 1024;

/** What the hooks remember of one caller under one catalog view. */
interface CallerMemo {
  subject: AccessSubject;
  mcp: Map<string, McpAccess>;
}

/** The gateway's access hooks for the packages, all reading the view's compiled policies. */
export function accessHooks(context: AccessContext) {
  // Per view: API-key identities are the same object on every request, so their subject (and
  // their MCP answers) are found without building the caller again. Token identities are new per
  // request: their subject is found through the snapshot's own cache.
  let memoView: CatalogView | undefined;
  let memo = new WeakMap<GatewayIdentity, CallerMemo>();
  const callerMemo = (identity: GatewayIdentity, view: CatalogView): CallerMemo => {
    if (view !== memoView) {
      memoView = view;
      memo = new WeakMap();
    }
    let found = memo.get(identity);
    if (found === undefined) {
      found = { subject: view.access.subject(accessCaller(identity, view, context.groupsClaim)), mcp: new Map() };
      memo.set(identity, found);
    }
    return found;
  };
  /** The caller's subject, or true (every resource allowed) or false (no caller: fail closed). */
  const subjectOf = (identity: GatewayIdentity | undefined): AccessSubject | boolean => {
    // No caller means no authentication ran: fail closed.
    if (identity === undefined) return false;
    if (identity.subject === CONSOLE_TEST_SUBJECT) return true;
    const view = context.view();
    if (view.access.mode === 'open') return true;
    return callerMemo(identity, view).subject;
  };
  const mcpAccess = (view: CatalogView, subject: AccessSubject | undefined, server: string): McpAccess => {
    const pinned = view.pinnedMcpServers.has(server);
    // The console's test key (no subject) may use every tool.
    const rule = subject?.mcpServer(server);
    if (rule !== undefined && !rule.server) return DENIED;
    const everyTool = rule === undefined || rule.everyTool;
    if (everyTool && !pinned) return EVERY_TOOL;
    const pins = context.toolPins;
    const toolAllowed = (tool: string) => everyTool || (rule as McpServerRule).tool(tool);
    return {
      allowed: true,
      tools: {
        // Pinning reads the whole tool (its digest); otherwise the name is enough.
        namesOnly: !pinned,
        listed(tool): McpToolVerdict {
          // Every tool is recorded, whoever lists it, so the console shows what the server offers.
          const pin = pinned ? (pins?.listed(server, tool) ?? 'held') : 'approved';
          if (!toolAllowed(tool.name)) return 'access_denied';
          return pin === 'approved' ? 'allowed' : 'tool_pending_approval';
        },
        called(name): McpToolVerdict {
          if (!toolAllowed(name)) return 'access_denied';
          if (pinned && (pins?.called(server, name) ?? 'held') !== 'approved') return 'tool_pending_approval';
          return 'allowed';
        },
      },
    };
  };
  /** Why `policies` refuses the caller `resource` (the reason of `decide`). */
  const refusal = (identity: GatewayIdentity, view: CatalogView, resource: AccessResource): string =>
    decide(view.access, accessCaller(identity, view, context.groupsClaim), resource).reason;
  /**
   * A refusal in mode `report`: reported (not for a `GET` listing, which `policies` would filter,
   * not refuse) and let through.
   */
  const reported = (req: IncomingMessage, identity: GatewayIdentity, resource: AccessResource): true => {
    if (req.method !== 'GET') context.report?.(req, refusal(identity, context.view(), resource));
    return true;
  };
  return {
    model: (req: IncomingMessage, resource: { provider: string; model: string }) => {
      const identity = identityOf(req);
      const subject = subjectOf(identity);
      if (typeof subject === 'boolean') return subject;
      if (subject.model(resource.provider, resource.model)) return true;
      if (subject.mode !== 'report') return false;
      return reported(req, identity as GatewayIdentity, { kind: 'model', ...resource });
    },
    integration: (req: IncomingMessage, integration: { slug: string }) => {
      const identity = identityOf(req);
      const subject = subjectOf(identity);
      if (typeof subject === 'boolean') return subject;
      if (subject.integration(integration.slug)) return true;
      if (subject.mode !== 'report') return false;
      return reported(req, identity as GatewayIdentity, { kind: 'integration', slug: integration.slug });
    },
    /**
     * Access mode `report`, when an MCP request ends: why `policies` would have refused it (the
     * server, or the tool of a `tools/call`), or undefined. A `tools/list` is never reported: under
     * `policies` it is answered, with the tools the caller may not use left out.
     */
    mcpReport: (
      identity: GatewayIdentity,
      view: CatalogView,
      server: string,
      method: string | undefined,
      tool: string | undefined,
    ): string | undefined => {
      if (view.access.mode !== 'report' || identity.subject === CONSOLE_TEST_SUBJECT) return undefined;
      const rule = callerMemo(identity, view).subject.mcpServer(server);
      if (!rule.server) return refusal(identity, view, { kind: 'mcp', server });
      if (method === 'tools/call' && tool !== undefined && !rule.everyTool && !rule.tool(tool))
        return refusal(identity, view, { kind: 'mcp', server, tool });
      return undefined;
    },
    /** Decided once per caller, server and catalog view, then remembered (the view changes with the policies and pins). */
    mcp: (identity: GatewayIdentity, server: string): McpAccess => {
      const view = context.view();
      // Mode `report` decides nothing here: what `policies` would refuse is reported when the request ends.
      if (view.access.mode !== 'policies' && !view.pinnedMcpServers.has(server)) return EVERY_TOOL;
      if (identity.subject === CONSOLE_TEST_SUBJECT || view.access.mode !== 'policies')
        return mcpAccess(view, undefined, server);
      const found = callerMemo(identity, view);
      const known = found.mcp.get(server);
      if (known !== undefined) return known;
      const access = mcpAccess(view, found.subject, server);
      if (found.mcp.size >= MCP_ACCESS_CACHE_SIZE) found.mcp.delete(found.mcp.keys().next().value as string);
      found.mcp.set(server, access);
      return access;
    },
    /** `GET /admin/v1/access/explain`: the same decision, for a user and groups given by the admin. */
    explain: (question: AccessQuestion): AccessDecision => {
      const caller: AccessCaller = { groups: question.groups };
      if (question.user !== undefined) caller.user = question.user;
      if (question.apiKey !== undefined) caller.apiKey = question.apiKey;
      return decide(context.view().access, caller, parseResource(question.resource));
    },
  };
}

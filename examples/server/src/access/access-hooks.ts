import type { IncomingMessage } from 'node:http';
import {
  allToolsAllowed,
  decide,
  parseResource,
  type AccessCaller,
  type AccessDecision,
  type AccessSnapshot,
} from '@gw/access';
import type { AccessQuestion, ToolPins } from '@gw/catalog';
import type { GatewayIdentity, McpAccess, McpToolVerdict } from '@gw/identity-forwarding';
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

/**
 * The caller as the access rules see it (CONTRACT section 10): an API key's `user.user_id` (or
 * `sub`), its `user.groups` and its id; a token's `sub` and the groups of its `groupsClaim`.
 */
export function accessCaller(identity: GatewayIdentity, view: CatalogView, groupsClaim: string): AccessCaller {
  const claims = identity.claims;
  if (identity.method === 'api_key') {
    const caller: AccessCaller = { groups: groupList(claims.groups) };
    const user = text(claims.user_id) ?? text(claims.sub);
    if (user !== undefined) caller.user = user;
    const apiKey = view.apiKeyIds.get(identity.subject);
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
}

function identityOf(req: IncomingMessage): GatewayIdentity | undefined {
  return (req as IncomingMessage & { callerIdentity?: GatewayIdentity }).callerIdentity;
}

/** The gateway's access hooks for the packages, all reading the view's compiled policies. */
export function accessHooks(context: AccessContext) {
  const allowed = (
    identity: GatewayIdentity | undefined,
    build: (snapshot: AccessSnapshot) => Parameters<typeof decide>[2],
  ) => {
    // No caller means no authentication ran: fail closed.
    if (identity === undefined) return false;
    if (identity.subject === CONSOLE_TEST_SUBJECT) return true;
    const view = context.view();
    return decide(view.access, accessCaller(identity, view, context.groupsClaim), build(view.access)).allowed;
  };
  return {
    model: (req: IncomingMessage, resource: { provider: string; model: string }) =>
      allowed(identityOf(req), () => ({ kind: 'model', provider: resource.provider, model: resource.model })),
    integration: (req: IncomingMessage, integration: { slug: string }) =>
      allowed(identityOf(req), () => ({ kind: 'integration', slug: integration.slug })),
    mcp: (identity: GatewayIdentity, server: string): McpAccess => {
      const view = context.view();
      const snapshot = view.access;
      const pinned = view.pinnedMcpServers.has(server);
      const console = identity.subject === CONSOLE_TEST_SUBJECT;
      const caller = accessCaller(identity, view, context.groupsClaim);
      if (!console && !decide(snapshot, caller, { kind: 'mcp', server }).allowed) return { allowed: false };
      const everyTool = console || allToolsAllowed(snapshot, caller, server);
      if (everyTool && !pinned) return { allowed: true };
      const pins = context.toolPins;
      const toolAllowed = (tool: string) =>
        everyTool || decide(snapshot, caller, { kind: 'mcp', server, tool }).allowed;
      return {
        allowed: true,
        tools: {
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

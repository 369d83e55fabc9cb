import type { Prompt, Resource, ResourceTemplate, Tool } from '@modelcontextprotocol/sdk/types.js';
import { UriTemplate } from '@modelcontextprotocol/sdk/shared/uriTemplate.js';
import type { ResolvedVirtualServer } from './config';
import { VirtualToolCollisionError } from './errors';
import { askMembers, type AskMember, type MemberUnavailable } from './fan-out';
import { MemberNames, type MemberTarget } from './names';

/** A name two members would list: the later member's is left out. */
export interface VirtualNameCollision {
  kind: 'tool' | 'prompt';
  /** The public name. */
  name: string;
  /** The member whose tool (or prompt) is listed. */
  kept: string;
  /** The member whose tool (or prompt) is left out. */
  dropped: string;
}

/** What the host is told while merging lists: for its warnings and metrics. */
export interface MergeReports {
  /** A member left out of this answer (timeout or failure). Default: none. */
  onUnavailable?: (unavailable: MemberUnavailable) => void;
  /** A name that appeared twice, the later one left out. Default: none. */
  onCollision?: (collision: VirtualNameCollision) => void;
}

/** A resource template and the member that listed it. */
interface MemberTemplate {
  server: string;
  template: UriTemplate;
}

/**
 * The members of one virtual server (CONTRACT section 16), framework-free: merges their lists
 * (asked in parallel, each within its `timeout_ms`) and routes each public name back to a member.
 * The transport is the host's: each list method takes the function that asks one member.
 *
 * Routing uses what was listed last (a name a member listed earlier leads to it), and without a
 * list a name that carries a member's prefix or `rename` value; a resource URI leads to the member
 * that listed it, else to the first member one of whose templates matches it.
 */
export class VirtualMembers {
  readonly slug: string;
  private readonly members: readonly MemberNames[];
  private readonly definition: ResolvedVirtualServer;
  private tools = new Map<string, MemberTarget>();
  private prompts = new Map<string, MemberTarget>();
  private resources = new Map<string, string>();
  private templates: MemberTemplate[] = [];

  constructor(server: ResolvedVirtualServer) {
    this.definition = server;
    this.slug = server.slug;
    this.members = server.members.map((member) => new MemberNames(member));
  }

  /** `tools/list`: the members' offered tools in member order, each under its public name; descriptions and schemas unchanged. */
  async listTools(ask: AskMember<readonly Tool[]>, reports: MergeReports = {}): Promise<Tool[]> {
    const answers = await askMembers(this.definition.members, ask, reports.onUnavailable);
    const routes = new Map<string, MemberTarget>();
    const tools: Tool[] = [];
    answers.forEach((listed, i) => {
      if (listed === undefined) return;
      const member = this.members[i] as MemberNames;
      for (const tool of listed) {
        const name = member.publicToolName(tool.name);
        if (name === undefined) continue;
        const taken = routes.get(name);
        if (taken !== undefined) {
          reports.onCollision?.({ kind: 'tool', name, kept: taken.server, dropped: member.server });
          continue;
        }
        routes.set(name, { server: member.server, name: tool.name });
        tools.push(name === tool.name ? tool : { ...tool, name });
      }
    });
    // Members left out keep the routes of their last answer: a call to one of their tools still goes to them.
    for (const [name, target] of this.tools) {
      if (!routes.has(name) && answers[this.indexOf(target.server)] === undefined) routes.set(name, target);
    }
    this.tools = routes;
    return tools;
  }

  /** `prompts/list`: the members' prompts in member order, each named `prefix + name`. */
  async listPrompts(ask: AskMember<readonly Prompt[]>, reports: MergeReports = {}): Promise<Prompt[]> {
    const answers = await askMembers(this.definition.members, ask, reports.onUnavailable);
    const routes = new Map<string, MemberTarget>();
    const prompts: Prompt[] = [];
    answers.forEach((listed, i) => {
      if (listed === undefined) return;
      const member = this.members[i] as MemberNames;
      for (const prompt of listed) {
        const name = member.publicPromptName(prompt.name);
        const taken = routes.get(name);
        if (taken !== undefined) {
          reports.onCollision?.({ kind: 'prompt', name, kept: taken.server, dropped: member.server });
          continue;
        }
        routes.set(name, { server: member.server, name: prompt.name });
        prompts.push(name === prompt.name ? prompt : { ...prompt, name });
      }
    });
    this.prompts = routes;
    return prompts;
  }

  /** `resources/list`: the members' resources in member order, URIs kept; a URI two members list stays the first one's. */
  async listResources(ask: AskMember<readonly Resource[]>, reports: MergeReports = {}): Promise<Resource[]> {
    const answers = await askMembers(this.definition.members, ask, reports.onUnavailable);
    const routes = new Map<string, string>();
    const resources: Resource[] = [];
    answers.forEach((listed, i) => {
      if (listed === undefined) return;
      const server = (this.members[i] as MemberNames).server;
      for (const resource of listed) {
        if (routes.has(resource.uri)) continue;
        routes.set(resource.uri, server);
        resources.push(resource);
      }
    });
    this.resources = routes;
    return resources;
  }

  /** `resources/templates/list`: the members' templates in member order, kept as written. */
  async listResourceTemplates(
    ask: AskMember<readonly ResourceTemplate[]>,
    reports: MergeReports = {},
  ): Promise<ResourceTemplate[]> {
    const answers = await askMembers(this.definition.members, ask, reports.onUnavailable);
    const templates: MemberTemplate[] = [];
    const listed: ResourceTemplate[] = [];
    answers.forEach((answer, i) => {
      if (answer === undefined) return;
      const server = (this.members[i] as MemberNames).server;
      for (const template of answer) {
        let compiled: UriTemplate;
        try {
          compiled = new UriTemplate(template.uriTemplate);
        } catch {
          continue; // a template the SDK cannot read routes nothing, and is not offered
        }
        templates.push({ server, template: compiled });
        listed.push(template);
      }
    });
    this.templates = templates;
    return listed;
  }

  /**
   * The member and own name of a public tool name (`tools/call`): from the last list, else from
   * a member's `rename` or prefix; undefined for an unknown name (JSON-RPC error `-32602`).
   */
  routeTool(publicName: string): MemberTarget | undefined {
    const listed = this.tools.get(publicName);
    if (listed !== undefined) return listed;
    for (const member of this.members) {
      const own = member.ownToolName(publicName);
      if (own !== undefined) return { server: member.server, name: own };
    }
    return undefined;
  }

  /** The member and own name of a public prompt name (`prompts/get`); undefined when unknown. */
  routePrompt(publicName: string): MemberTarget | undefined {
    const listed = this.prompts.get(publicName);
    if (listed !== undefined) return listed;
    for (const member of this.members) {
      const own = member.ownPromptName(publicName);
      if (own !== undefined) return { server: member.server, name: own };
    }
    return undefined;
  }

  /** The member that serves `uri` (`resources/read`): the one that listed it, else the first whose template matches; undefined when none. */
  routeResource(uri: string): string | undefined {
    const listed = this.resources.get(uri);
    if (listed !== undefined) return listed;
    for (const { server, template } of this.templates) if (template.match(uri) !== null) return server;
    return undefined;
  }

  private indexOf(server: string): number {
    return this.members.findIndex((member) => member.server === server);
  }
}

/**
 * Refuses a virtual server whose members, as listed now, would offer one public tool name twice:
 * two members with the same prefix (or both without one) that list the same name, or a rename
 * onto a name another member lists. For start-up and the admin API (`400`), when the members can
 * be listed: `listed` holds each member's tool names (a member missing from it is not checked).
 * Throws {@link VirtualToolCollisionError} naming the name and both members.
 */
export function findToolCollisions(
  server: ResolvedVirtualServer,
  listed: ReadonlyMap<string, readonly string[]>,
): void {
  const owners = new Map<string, string>();
  for (const member of server.members) {
    const names = new MemberNames(member);
    const own = listed.get(member.server);
    if (own === undefined) continue;
    for (const tool of new Set(own)) {
      const name = names.publicToolName(tool);
      if (name === undefined) continue;
      const other = owners.get(name);
      if (other !== undefined)
        throw new VirtualToolCollisionError(
          `virtualServers[${server.slug}]: "${other}" and "${member.server}" would both list the tool "${name}"; give one of them a prefix, or rename one of the tools.`,
        );
      owners.set(name, member.server);
    }
  }
}

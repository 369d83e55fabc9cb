/**
 * Virtual MCP servers (CONTRACT section 16): several MCP servers behind one endpoint. This file
 * holds their definition and its validation; nothing here talks to a server.
 */
import { compilePattern } from '@gw/access';
import { InvalidVirtualServerError } from './errors';

/** How long a member may take to answer a list request before it is left out, in ms: 5000. */
export const DEFAULT_MEMBER_TIMEOUT_MS = 5_000;
/** The longest `timeout_ms` accepted: 60000 (a list that waits longer holds every client). */
export const MAX_MEMBER_TIMEOUT_MS = 60_000;

/** One member of a virtual server, as the config file and the admin API write it. */
export interface VirtualMember {
  /** The slug of an MCP server of the gateway. Required. */
  server: string;
  /** Put before each of the member's tool and prompt names (not before a `rename` value). Default: none. */
  prefix?: string;
  /** `*` patterns of the member's own tool names to offer. Default: every tool. */
  tools?: string[];
  /** The member's own tool name → the public name, used as it is (no prefix). Default: none. */
  rename?: Record<string, string>;
  /** How long the member may take to answer a list, in ms. Default 5000 ({@link DEFAULT_MEMBER_TIMEOUT_MS}). */
  timeout_ms?: number;
}

/** A virtual server, as the config file's `virtualServers` and the admin API write it. */
export interface VirtualServerConfig {
  /** Identifier in `/mcp/<slug>`, in the one namespace of servers and virtual servers. Required. */
  slug: string;
  /** Shown in the console. Default: the slug. */
  name?: string;
  /** The servers behind it, in the order their tools are listed. Required, at least one. */
  members: VirtualMember[];
}

/** A member once validated: every default applied. */
export interface ResolvedMember {
  server: string;
  /** `''` when none. */
  prefix: string;
  /** The patterns as written; undefined: every tool. */
  tools: readonly string[] | undefined;
  /** Own name → public name. */
  rename: ReadonlyMap<string, string>;
  timeoutMs: number;
}

/** A virtual server once validated. */
export interface ResolvedVirtualServer {
  slug: string;
  name: string;
  members: readonly ResolvedMember[];
}

const SLUG = /^[A-Za-z0-9._-]{1,64}$/;
/** Characters of an MCP tool name (the SDK's validation: letters, digits, `_`, `-`, `.`, `/`), at most 128. */
const TOOL_NAME = /^[A-Za-z0-9_./-]{1,128}$/;
const PREFIX = /^[A-Za-z0-9_./-]{1,64}$/;
const MEMBER_FIELDS = ['server', 'prefix', 'tools', 'rename', 'timeout_ms'];
const SERVER_FIELDS = ['slug', 'name', 'members'];

function fail(where: string, what: string): never {
  throw new InvalidVirtualServerError(`${where} ${what}`);
}

function checkFields(value: object, allowed: readonly string[], where: string): void {
  for (const field of Object.keys(value)) {
    if (!allowed.includes(field)) fail(where, `has an unknown field "${field}"; allowed: ${allowed.join(', ')}.`);
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Validates a virtual server's definition and applies its defaults. Throws
 * {@link InvalidVirtualServerError} naming the field and saying what to write. With `servers`
 * (the gateway's MCP server slugs), a member must name one of them. Two renames to one public
 * name (in one member or in two) are refused here; collisions that need the members' tool lists
 * are found by `findToolCollisions`.
 */
export function resolveVirtualServer(
  config: VirtualServerConfig,
  servers?: { has(slug: string): boolean },
  where = `virtualServers[${String((config as Partial<VirtualServerConfig> | undefined)?.slug)}]`,
): ResolvedVirtualServer {
  if (!isObject(config)) fail(where, 'must be an object with "slug" and "members".');
  checkFields(config, SERVER_FIELDS, where);
  if (typeof config.slug !== 'string' || !SLUG.test(config.slug))
    fail(`${where}.slug`, 'must be letters, digits, ".", "_" or "-" (at most 64), for example "workbench".');
  if (config.name !== undefined && (typeof config.name !== 'string' || config.name.trim() === ''))
    fail(`${where}.name`, 'must be a non-empty string, for example "Everything support uses".');
  if (!Array.isArray(config.members) || config.members.length === 0)
    fail(`${where}.members`, 'must be a list of at least one member, for example [{ "server": "tracker" }].');
  const seen = new Set<string>();
  /** Public name → the member that renames to it. */
  const renamedTo = new Map<string, string>();
  const members = config.members.map((member, i) => {
    const at = `${where}.members[${i}]`;
    if (!isObject(member)) fail(at, 'must be an object such as { "server": "tracker", "prefix": "tracker_" }.');
    checkFields(member, MEMBER_FIELDS, at);
    const { server, prefix, tools, rename, timeout_ms: timeoutMs } = member as VirtualMember;
    if (typeof server !== 'string' || !SLUG.test(server))
      fail(`${at}.server`, 'must be the slug of an MCP server of the gateway, for example "tracker".');
    if (server === config.slug) fail(`${at}.server`, 'names the virtual server itself; name an MCP server.');
    if (servers !== undefined && !servers.has(server))
      fail(`${at}.server`, `names "${server}", which is not an MCP server of the gateway.`);
    if (seen.has(server)) fail(`${at}.server`, `names "${server}" a second time; list each server once.`);
    seen.add(server);
    if (prefix !== undefined && (typeof prefix !== 'string' || !PREFIX.test(prefix)))
      fail(`${at}.prefix`, 'must be letters, digits, "_", "-", "." or "/" (at most 64), for example "tracker_".');
    if (tools !== undefined) {
      if (!Array.isArray(tools) || tools.length === 0)
        fail(`${at}.tools`, 'must be a list of tool names or "*" patterns, for example ["search_*", "get_ticket"].');
      tools.forEach((pattern, j) => {
        try {
          compilePattern(pattern, `${at}.tools[${j}]`);
        } catch (error) {
          throw new InvalidVirtualServerError((error as Error).message);
        }
      });
    }
    const renames = new Map<string, string>();
    if (rename !== undefined) {
      if (!isObject(rename))
        fail(
          `${at}.rename`,
          'must be an object of the server\'s tool names to public names, for example { "get_ticket": "crm_ticket" }.',
        );
      for (const [own, renamed] of Object.entries(rename)) {
        if (!TOOL_NAME.test(own))
          fail(
            `${at}.rename`,
            `has the key "${own.slice(0, 64)}", which is not a tool name (letters, digits, "_", "-", "." or "/", at most 128).`,
          );
        if (typeof renamed !== 'string' || !TOOL_NAME.test(renamed))
          fail(
            `${at}.rename.${own}`,
            'must be a tool name: letters, digits, "_", "-", "." or "/" (at most 128), for example "crm_ticket".',
          );
        const other = renamedTo.get(renamed);
        if (other !== undefined)
          fail(`${at}.rename.${own}`, `renames to "${renamed}", as ${other} does; give each tool its own public name.`);
        renamedTo.set(renamed, `${server}'s "${own}"`);
        renames.set(own, renamed);
      }
    }
    if (
      timeoutMs !== undefined &&
      (!Number.isInteger(timeoutMs) || (timeoutMs as number) <= 0 || (timeoutMs as number) > MAX_MEMBER_TIMEOUT_MS)
    )
      fail(
        `${at}.timeout_ms`,
        `must be a whole number of milliseconds from 1 to ${MAX_MEMBER_TIMEOUT_MS}, for example ${DEFAULT_MEMBER_TIMEOUT_MS}.`,
      );
    return {
      server,
      prefix: prefix ?? '',
      tools: tools === undefined ? undefined : [...tools],
      rename: renames,
      timeoutMs: timeoutMs ?? DEFAULT_MEMBER_TIMEOUT_MS,
    };
  });
  return { slug: config.slug, name: config.name ?? config.slug, members };
}

/**
 * The admin API's refusal of a virtual server whose members would list one public tool name twice
 * (CONTRACT section 16: "two members with the same prefix (or both without one) that list the same
 * name, or two renames to one name, are refused … by the admin API (400) when the members can be
 * listed").
 *
 * Each member is listed through its own endpoint `/mcp/<member>` of this gateway, as a caller
 * would list it, with the console's test key: an identity that exists only in this process and
 * that access policies let use every tool (pinning still applies, so held tools are not listed).
 * So the names are the ones a caller whom policies allow everything sees: a collision any caller
 * could meet is refused. A member that cannot be listed within its `timeout_ms` (down, refusing,
 * slow) is not checked and the write is accepted: the runtime rule ("a collision that appears
 * later leaves the later member's tool out, with a warning") covers it.
 */
import { setMaxListeners } from 'node:events';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { VirtualToolCollisionRecordError } from '@gw/catalog';
import {
  askMembers,
  listAllPages,
  findToolCollisions,
  resolveVirtualServer,
  VirtualToolCollisionError,
  type MemberUnavailable,
  type ResolvedVirtualServer,
  type VirtualServerConfig,
} from '@gw/mcp-gateway';
import { loopbackFetch } from './virtual-member-clients';
import { LIST_SIGNAL_LISTENERS } from './virtual-servers';

/** What {@link refuseVirtualToolCollisions} needs from the gateway. */
export interface VirtualCollisionCheckOptions {
  /** The gateway's own address; undefined until it listens (then nothing is checked). */
  selfUrl: string | undefined;
  /** The console's test key (an in-process identity every policy lets through); undefined: nothing is checked. */
  serviceKey: string | undefined;
  /** Told about each member that could not be listed (it is not checked). Default: none. */
  onUnlisted?: (unavailable: MemberUnavailable) => void;
}

/**
 * A `fetch` for the listing clients: {@link loopbackFetch}, and `405` for the SDK's standalone
 * `GET` stream (a listing needs no server notification).
 */
function listingFetch(url: string | URL, init: RequestInit = {}): Promise<Response> {
  if ((init.method ?? 'GET') === 'GET') return Promise.resolve(new Response(null, { status: 405 }));
  return loopbackFetch(url, init);
}

/** The tool names `server` lists through its own endpoint with `key`, every page (bounded), or a rejection. */
async function memberToolNames(base: string, key: string, server: string, signal: AbortSignal): Promise<string[]> {
  const client = new Client({ name: 'gateway-virtual-collision-check', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp/${encodeURIComponent(server)}`), {
    requestInit: { headers: { 'x-api-key': key } },
    fetch: listingFetch,
  });
  setMaxListeners(LIST_SIGNAL_LISTENERS, signal);
  try {
    await client.connect(transport, { signal });
    const tools = await listAllPages<Tool>(
      async (cursor) => {
        const page = await client.listTools(cursor === undefined ? undefined : { cursor }, { signal });
        return { items: page.tools, nextCursor: page.nextCursor };
      },
      () => undefined,
    );
    return tools.map((tool) => tool.name);
  } finally {
    await client.close().catch(() => undefined);
  }
}

/**
 * Refuses (throws {@link VirtualToolCollisionRecordError}, `400 virtual_tool_collision`) a virtual
 * server `record` whose members, listed now, would offer one public tool name twice; resolves for
 * every other record, including one it cannot read (the store's validation names the field) and one
 * whose members cannot all be listed (those members are not checked).
 */
export async function refuseVirtualToolCollisions(
  record: Record<string, unknown>,
  options: VirtualCollisionCheckOptions,
): Promise<void> {
  const { selfUrl, serviceKey } = options;
  if (selfUrl === undefined || serviceKey === undefined) return;
  let server: ResolvedVirtualServer;
  try {
    server = resolveVirtualServer(record as unknown as VirtualServerConfig);
  } catch {
    return; // the store refuses it, naming the field
  }
  const answers = await askMembers(
    server.members,
    (member, signal) => memberToolNames(selfUrl, serviceKey, member, signal),
    options.onUnlisted,
  );
  const listed = new Map<string, readonly string[]>();
  answers.forEach((names, i) => {
    if (names !== undefined) listed.set((server.members[i] as { server: string }).server, names);
  });
  try {
    findToolCollisions(server, listed);
  } catch (error) {
    if (error instanceof VirtualToolCollisionError)
      throw new VirtualToolCollisionRecordError(error.message.replace(/^virtualServers\[[^\]]*\]: /, ''), 'members');
    throw error;
  }
}

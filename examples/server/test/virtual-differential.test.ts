import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import fc from 'fast-check';
import { z } from 'zod';
import { adminClient, newAdminKey, newEncryptionKey } from './catalog/catalog-support';
import { startGateway, writeConfig, type RunningGateway } from './support';

// Issue #44 item 4: a virtual server's member is reached through the member's own endpoint, so
// every check (policies, pinning, limits) is implemented once. This differential test generates
// callers, member tools, pinning states and limits, and asserts that for each case the member's
// own endpoint `/mcp/<member>` and the virtual endpoint `/mcp/<virtual>` agree: the same tools
// visible (modulo prefix and rename) and, call by call, the same outcome class.
//
// One gateway process for the whole property (policies access mode, embedded catalog); each run
// writes its own members, API keys, policies, limits and virtual server through the admin API.
// Members are official SDK servers in this process. Each generated caller is a pair of API keys
// with the same groups (so the same policies and limits) and their own limit counters: key `a`
// uses the members' endpoints, key `b` the virtual endpoint, call for call in the same order.

jest.setTimeout(120_000);

/** The tool names members draw from. */
const POOL = ['search', 'get_item', 'create', 'delete', 'export'] as const;
/** The `*` patterns a caller's policy or a virtual member's `tools` draw from: names and prefixes. */
const PATTERNS = [...POOL, 's*', 'get_*', 'c*', 'd*e', '*t'] as const;

interface MemberCase {
  /** The member's tools (its own names), in the order it lists them. */
  tools: string[];
  /** `tool_pinning` on the member; with it, `approved` tools are approved, and `changed` ones changed after approval. */
  pinned: boolean;
  approved: string[];
  changed: string[];
  /** The virtual member's `tools` patterns (undefined: every tool) and its renamed tools. */
  offered: string[] | undefined;
  renamed: string[];
  /** The virtual member's prefix: `p<i>_`, or none (the first member only, so that no two members are without one). */
  prefixed: boolean;
}

/** What a caller's policy allows of one member: nothing, the whole server, or tools matching patterns. */
type Allowance = 'none' | 'all' | string[];

interface CallerCase {
  allow: Allowance[];
  /** `requests_per_minute` of a limit on the caller (`per: "each"`); undefined: no limit. */
  limit: number | undefined;
}

interface DifferentialCase {
  members: MemberCase[];
  callers: CallerCase[];
}

const memberCase: fc.Arbitrary<MemberCase> = fc
  .record({
    tools: fc.subarray([...POOL], { minLength: 1 }),
    pinned: fc.boolean(),
    approvedMask: fc.array(fc.boolean(), { minLength: POOL.length, maxLength: POOL.length }),
    changedMask: fc.array(fc.boolean(), { minLength: POOL.length, maxLength: POOL.length }),
    offered: fc.option(fc.subarray([...PATTERNS], { minLength: 1, maxLength: 3 }), { nil: undefined }),
    renameMask: fc.array(fc.boolean(), { minLength: POOL.length, maxLength: POOL.length }),
    prefixed: fc.boolean(),
  })
  .map(({ tools, pinned, approvedMask, changedMask, offered, renameMask, prefixed }) => {
    const approved = pinned ? tools.filter((_, i) => approvedMask[i]) : [];
    return {
      tools,
      pinned,
      approved,
      changed: approved.filter((_, i) => changedMask[i]),
      offered,
      renamed: tools.filter((_, i) => renameMask[i] && i % 2 === 0),
      prefixed,
    };
  });

const allowance: fc.Arbitrary<Allowance> = fc.oneof(
  fc.constant<Allowance>('none'),
  fc.constant<Allowance>('all'),
  fc.subarray([...PATTERNS], { minLength: 1, maxLength: 3 }),
);

const differentialCase: fc.Arbitrary<DifferentialCase> = fc
  .array(memberCase, { minLength: 1, maxLength: 3 })
  .map((members) => members.map((m, i) => (i === 0 ? m : { ...m, prefixed: true })))
  .chain((members) =>
    fc.record({
      members: fc.constant(members),
      callers: fc.array(
        fc.record({
          allow: fc.array(allowance, { minLength: members.length, maxLength: members.length }),
          limit: fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined }),
        }),
        { minLength: 1, maxLength: 2 },
      ),
    }),
  );

/** `*` stands for any run of characters (CONTRACT section 10), the rest is literal. */
function matches(patterns: readonly string[], name: string): boolean {
  return patterns.some((p) =>
    new RegExp(
      `^${p
        .split('*')
        .map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
        .join('.*')}$`,
    ).test(name),
  );
}

/** The tools of each member slug now, each with its description (changed to change its digest). */
const memberTools = new Map<string, { name: string; description: string }[]>();
let membersUrl: string;
let membersHttp: Server;
let gateway: RunningGateway;
let admin: ReturnType<typeof adminClient>;
/** A caller every run's policy allows every member to: lists once so that pinned members' tools are seen. */
const SETUP_KEY = 'gw-differential-setup-key-0001';

beforeAll(async () => {
  membersHttp = createServer((req: IncomingMessage, res: ServerResponse) => {
    const slug = (req.url ?? '').split('/')[2] ?? '';
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const server = new McpServer({ name: slug, version: '1.0.0' });
      for (const tool of memberTools.get(slug) ?? [])
        server.registerTool(
          tool.name,
          { description: tool.description, inputSchema: { q: z.string().optional() } },
          (args) => ({ content: [{ type: 'text', text: `${slug}/${tool.name}: ${JSON.stringify(args)}` }] }),
        );
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      const body = chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
      void server.connect(transport).then(() => transport.handleRequest(req, res, body));
    });
  });
  await new Promise<void>((resolve) => membersHttp.listen(0, '127.0.0.1', resolve));
  membersUrl = `http://127.0.0.1:${(membersHttp.address() as AddressInfo).port}`;
  const env = {
    GATEWAY_CONFIG: writeConfig({
      access: { mode: 'policies' },
      auth: { apiKeys: [{ key: SETUP_KEY, user: { user_id: 'u-setup', groups: ['setup'] } }] },
    }),
    GATEWAY_ADMIN_KEY: newAdminKey(),
    GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
  };
  gateway = await startGateway(env);
  admin = adminClient(gateway.url, env.GATEWAY_ADMIN_KEY);
});

afterAll(async () => {
  await gateway?.stop();
  membersHttp?.closeAllConnections();
  await new Promise((resolve) => membersHttp?.close(resolve));
});

async function write(path: string, body: unknown): Promise<{ id?: string; key?: string }> {
  const answer = await admin('POST', path, body);
  if (answer.status !== 201 && answer.status !== 200)
    throw new Error(`POST ${path} answered ${answer.status}: ${answer.text}`);
  return answer.body as { id?: string; key?: string };
}

/** An SDK client of `/mcp/<slug>` with `key`, or the error its connection failed with. */
async function connect(slug: string, key: string): Promise<Client | Error> {
  const client = new Client({ name: 'differential-test', version: '1.0.0' });
  try {
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${gateway.url}/mcp/${slug}`), {
        requestInit: { headers: { 'x-api-key': key } },
      }),
    );
    return client;
  } catch (error) {
    return error as Error;
  }
}

/** The `error.code` of a gateway error answer (CONTRACT section 7) in an SDK error's message. */
function gatewayCode(error: Error): string {
  const start = error.message.indexOf('{');
  try {
    return String((JSON.parse(error.message.slice(start)) as { error: { code: string } }).error.code);
  } catch {
    return `unreadable: ${error.message.slice(0, 120)}`;
  }
}

/**
 * The outcome class of a call: `ok <text>`, `rpc <code> <data.code>` (a JSON-RPC error answer:
 * denied, held), or `refused <code>` (the member endpoint answered an HTTP error: limited, or the
 * caller may not use the server; the virtual endpoint passes it on as -32603 with `data.status`).
 */
function outcome(answer: unknown): string {
  if (answer instanceof McpError) {
    const data = answer.data as { code?: string; status?: number } | undefined;
    if (answer.code === -32603 && typeof data?.status === 'number') return `refused ${data.code}`;
    return `rpc ${answer.code} ${data?.code ?? ''}`;
  }
  if (answer instanceof StreamableHTTPError || answer instanceof Error) return `refused ${gatewayCode(answer)}`;
  const content = (answer as { content?: { text?: string }[] }).content;
  return `ok ${content?.[0]?.text ?? JSON.stringify(answer)}`;
}

/** Calls `name` with the arguments `{ q }` (the same through both endpoints); answers its {@link outcome}. */
async function callTool(client: Client | Error, name: string, q: string): Promise<string> {
  if (client instanceof Error) return outcome(client);
  try {
    return outcome(await client.callTool({ name, arguments: { q } }));
  } catch (error) {
    return outcome(error);
  }
}

async function listNames(client: Client | Error): Promise<string[]> {
  if (client instanceof Error) return [];
  return (await client.listTools()).tools.map((t) => t.name);
}

let run = 0;

/** Writes one generated case into the gateway; answers the slugs and each caller's pair of keys. */
async function setUp(c: DifferentialCase) {
  const r = `d${++run}`;
  const slugs = c.members.map((_, i) => `${r}m${i}`);
  c.members.forEach((m, i) =>
    memberTools.set(
      slugs[i] as string,
      m.tools.map((name) => ({ name, description: `${name} of ${slugs[i]}` })),
    ),
  );
  for (const [i, m] of c.members.entries())
    await write('/mcp-servers', {
      slug: slugs[i],
      url: `${membersUrl}/m/${slugs[i]}/mcp`,
      tool_pinning: m.pinned,
    });
  await write('/policies', {
    slug: `${r}-setup`,
    subjects: { groups: ['setup'] },
    allow: { mcpServers: slugs.map((server) => ({ server })) },
  });
  // Pinning: the setup caller's list makes the gateway see each tool (held); the approved ones are
  // approved with the digest seen; then the changed ones change their description (held again).
  for (const [i, m] of c.members.entries()) {
    if (!m.pinned) continue;
    const slug = slugs[i] as string;
    const client = await connect(slug, SETUP_KEY);
    expect(await listNames(client)).toEqual([]);
    if (!(client instanceof Error)) await client.close();
    const pins = (await admin('GET', `/mcp-servers/${slug}/tools`)).body.data as {
      name: string;
      currentDigest: string;
    }[];
    for (const name of m.approved) {
      const digest = pins.find((p) => p.name === name)?.currentDigest;
      const approved = await admin('POST', `/mcp-servers/${slug}/tools/${name}/approve`, { digest });
      expect(approved.status).toBe(200);
    }
    for (const tool of memberTools.get(slug) ?? [])
      if (m.changed.includes(tool.name)) tool.description = `${tool.description}, changed after approval`;
  }
  const callers: { a: string; b: string }[] = [];
  for (const [j, caller] of c.callers.entries()) {
    const group = `${r}c${j}`;
    const key = async (twin: string) =>
      (await write('/api-keys', { name: `${group}${twin}`, user: { user_id: `u-${group}${twin}`, groups: [group] } }))
        .key as string;
    callers.push({ a: await key('a'), b: await key('b') });
    const mcpServers = caller.allow.flatMap((allowed, i) =>
      allowed === 'none' ? [] : [allowed === 'all' ? { server: slugs[i] } : { server: slugs[i], tools: allowed }],
    );
    if (mcpServers.length > 0)
      await write('/policies', { slug: group, subjects: { groups: [group] }, allow: { mcpServers } });
    if (caller.limit !== undefined)
      await write('/limits', {
        slug: group,
        subjects: { groups: [group] },
        per: 'each',
        requests_per_minute: caller.limit,
      });
  }
  const virtual = `${r}v`;
  await write('/virtual-servers', {
    slug: virtual,
    members: c.members.map((m, i) => ({
      server: slugs[i],
      ...(m.prefixed ? { prefix: `p${i}_` } : {}),
      ...(m.offered === undefined ? {} : { tools: m.offered }),
      ...(m.renamed.length === 0 ? {} : { rename: Object.fromEntries(m.renamed.map((t) => [t, `r${i}_${t}`])) }),
    })),
  });
  return { slugs, callers, virtual };
}

/** The public name of member `i`'s tool `name` in the virtual server, or undefined when it is not offered. */
function publicName(m: MemberCase, i: number, name: string): string | undefined {
  if (m.offered !== undefined && !matches(m.offered, name)) return undefined;
  if (m.renamed.includes(name)) return `r${i}_${name}`;
  return m.prefixed ? `p${i}_${name}` : name;
}

/** Checks one case; answers the first disagreement, or undefined. */
async function disagreement(c: DifferentialCase, outcomes: Set<string>): Promise<string | undefined> {
  const { slugs, callers, virtual } = await setUp(c);
  for (const [j, { a, b }] of callers.entries()) {
    const own = await Promise.all(slugs.map((slug) => connect(slug, a)));
    const through = await connect(virtual, b);
    try {
      // The same tools visible: each member's own list, offered and named as the virtual server says.
      const ownLists = await Promise.all(own.map(listNames));
      const expected = ownLists.flatMap((names, i) =>
        names.flatMap((name) => publicName(c.members[i] as MemberCase, i, name) ?? []),
      );
      if (through instanceof Error) {
        // Refused as a whole (403) only when no member's own endpoint takes the caller.
        if (!own.every((client) => client instanceof Error))
          return `caller ${j}: the virtual endpoint refused (${outcome(through)}) though a member takes the caller`;
        continue;
      }
      const listed = await listNames(through);
      if (JSON.stringify(listed) !== JSON.stringify(expected))
        return `caller ${j}: tools/list through the virtual server ${JSON.stringify(listed)}, the members' own lists give ${JSON.stringify(expected)}`;
      // The same outcome, call by call, in the same order (each twin has its own limit counter).
      for (const [i, m] of c.members.entries())
        for (const name of m.tools) {
          const renamed = publicName(m, i, name);
          if (renamed === undefined) continue;
          // A member without a prefix: a name of its that this caller was not listed carries nothing
          // that leads to the member, so it is unknown there (-32602, CONTRACT section 16) and never
          // sent (the member's own endpoint, not asked, keeps the twins' counters alike).
          if (!m.prefixed && !m.renamed.includes(name) && !listed.includes(renamed)) {
            const unknown = await callTool(through, renamed, name);
            outcomes.add('unknown');
            if (unknown !== 'rpc -32602 ')
              return `caller ${j}: ${slugs[i]}/${name}, not listed to the caller and without a prefix: virtual endpoint "${unknown}", not an unknown tool`;
            continue;
          }
          const direct = await callTool(own[i] as Client | Error, name, name);
          const viaVirtual = await callTool(through, renamed, name);
          outcomes.add(
            direct
              .split(' ')
              .slice(0, direct.startsWith('ok') ? 1 : 3)
              .join(' '),
          );
          if (direct !== viaVirtual)
            return `caller ${j}: ${slugs[i]}/${name} as "${renamed}": own endpoint "${direct}", virtual endpoint "${viaVirtual}"`;
        }
    } finally {
      for (const client of [...own, through]) if (!(client instanceof Error)) await client.close();
    }
  }
  return undefined;
}

const member = (tools: string[], more: Partial<MemberCase> = {}): MemberCase => ({
  tools,
  pinned: false,
  approved: [],
  changed: [],
  offered: undefined,
  renamed: [],
  prefixed: true,
  ...more,
});

/**
 * The case run first, whatever the seed, that meets every outcome class. Caller 0: `search` of the
 * member without a prefix is allowed (`ok`), its `create` is not listed to them (`unknown`); the
 * pinned member's `get_item` changed after approval (held); `delete` is not allowed (denied).
 * Caller 1 may use the third member only (the others' endpoints answer 403), one call a minute:
 * `export` passes, `delete` is limited.
 */
const EVERY_OUTCOME: DifferentialCase = {
  members: [
    member(['search', 'create'], { prefixed: false }),
    member(['search', 'get_item'], { pinned: true, approved: ['search', 'get_item'], changed: ['get_item'] }),
    member(['export', 'delete']),
  ],
  callers: [
    { allow: [['search'], 'all', ['export']], limit: undefined },
    { allow: ['none', 'none', 'all'], limit: 1 },
  ],
};

describe('a virtual server and its members’ own endpoints (differential, generated cases)', () => {
  it('agree on the tools each caller sees and on every call’s outcome: allowed, denied, held, limited', async () => {
    const outcomes = new Set<string>();
    await fc.assert(
      fc.asyncProperty(differentialCase, async (c) => {
        expect(await disagreement(c, outcomes)).toBeUndefined();
      }),
      {
        numRuns: Number(process.env.FC_RUNS ?? 12),
        seed: Number(process.env.FC_SEED ?? 4444),
        endOnFailure: true,
        examples: [[EVERY_OUTCOME]],
      },
    );
    // The cases reached every outcome class (the first, written out below, does whatever the seed).
    expect([...outcomes].sort()).toEqual(
      expect.arrayContaining([
        'ok',
        'refused access_denied',
        'refused rate_limited',
        'rpc -32602 access_denied',
        'rpc -32602 tool_pending_approval',
        'unknown',
      ]),
    );
  });
});

import { randomUUID } from 'node:crypto';
import {
  createServer,
  type IncomingHttpHeaders,
  type RequestListener,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { Server as SdkServer } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  ListPromptsRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ToolListChangedNotificationSchema,
  type Progress,
} from '@modelcontextprotocol/sdk/types.js';
import { loadSigningKey } from '@gw/jwks';
import { z } from 'zod';
import { createGateway, type Gateway } from '../src/app';
import { parseConfig } from '../src/config/load';
import { createLogger } from '../src/observability/logger';
import { within } from './catalog/catalog-support';
import { call2026, requestMeta, routingHeaders } from './mcp-2026/client';

// Virtual MCP servers (CONTRACT section 16): the official MCP SDK client against a virtual server of
// three SDK members, each reached through its own endpoint of the same gateway (in this process).

const KEY = 'gw-virtual-servers-key';
/** A caller with a limit of 2 requests a minute (CONTRACT section 14). */
const LIMITED_KEY = 'gw-virtual-limited-key';
/** A caller no policy names. */
const NO_POLICY_KEY = 'gw-virtual-no-policy';
/** A caller whose policy allows tracker only. */
const TRACKER_ONLY_KEY = 'gw-virtual-tracker-only';
const servers: Server[] = [];
const logs: string[] = [];
let gateway: Gateway;
let base: string;
let downUrl: string;

interface Member {
  url: string;
  /** Each tool execution: its name and the headers its request carried. */
  calls: { tool: string; headers: IncomingHttpHeaders }[];
  /** Each HTTP request the member received: `<HTTP method> <JSON-RPC method>`. */
  requests: string[];
}

async function listen(listener: RequestListener): Promise<string> {
  const server = createServer(listener);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/**
 * A member's prompt `name` (answering `<member> <name> <topic>`), its static resources (answering
 * `<member> read <uri>`) and its resource templates (answering the same).
 */
function promptsAndResources(member: string, prompts: string[], resources: string[], templates: string[]) {
  return (server: McpServer) => {
    for (const name of prompts)
      server.registerPrompt(
        name,
        { description: `${member} ${name}`, argsSchema: { topic: z.string() } },
        ({ topic }) => ({
          messages: [{ role: 'user', content: { type: 'text', text: `${member} ${name} ${topic}` } }],
        }),
      );
    const read = (uri: URL) => ({ contents: [{ uri: uri.href, text: `${member} read ${uri.href}` }] });
    resources.forEach((uri, i) => server.registerResource(`${member}-resource-${i}`, uri, {}, read));
    templates.forEach((template, i) =>
      server.registerResource(`${member}-template-${i}`, new ResourceTemplate(template, { list: undefined }), {}, read),
    );
  };
}

/** A stateless SDK MCP server with `tools`, each answering `<name>: <arguments>`. */
async function sdkMember(name: string, tools: string[], extras?: (server: McpServer) => void): Promise<Member> {
  const member: Member = { url: '', calls: [], requests: [] };
  member.url = `${await listen(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString();
    const body = text === '' ? undefined : (JSON.parse(text) as { method?: string });
    member.requests.push(`${req.method} ${body?.method ?? ''}`.trim());
    const server = new McpServer({ name, version: '1.0.0' });
    for (const tool of tools)
      server.registerTool(
        tool,
        { description: `${name} ${tool}`, inputSchema: { q: z.string().optional() } },
        async (args, extra) => {
          member.calls.push({ tool, headers: req.headers });
          // A call with a progressToken gets two progress notifications before its result.
          const progressToken = extra._meta?.progressToken;
          if (progressToken !== undefined)
            for (const [progress, message] of [
              [1, 'half'],
              [2, 'done'],
            ] as const)
              await extra.sendNotification({
                method: 'notifications/progress',
                params: { progressToken, progress, total: 2, message },
              });
          return { content: [{ type: 'text', text: `${name}/${tool}: ${JSON.stringify(args)}` }] };
        },
      );
    extras?.(server);
    // An answer with notifications in it is a stream; others are JSON.
    const streamed = (body as { params?: { _meta?: { progressToken?: unknown } } } | undefined)?.params?._meta
      ?.progressToken;
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: streamed === undefined,
    });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    void server.connect(transport).then(() => transport.handleRequest(req, res, body));
  })}/mcp`;
  return member;
}

/** A session-based SDK MCP server whose tools can be added while it runs (each session is told: list_changed). */
interface LiveMember {
  url: string;
  /** Adds a tool to every session, now and later: each connected session sends `notifications/tools/list_changed`. */
  addTool(name: string): void;
  /** How many sessions were begun so far: a mark for {@link openSince} and {@link getsSince}. */
  readonly begun: number;
  /** `GET` streams open now (answered 200) of the sessions begun since `mark`. */
  openSince(mark: number): number;
  /** `GET` streams ever answered 200 for the sessions begun since `mark`. */
  getsSince(mark: number): number;
  /** `DELETE`s received (sessions ended by their client). */
  deletes: number;
  /** Ends every open `GET` stream (as a proxy's idle timeout or a restart would). */
  endStreams(): void;
}

async function liveMember(): Promise<LiveMember> {
  const tools = ['status'];
  const sessions = new Map<string, { server: McpServer; transport: StreamableHTTPServerTransport }>();
  const register = (server: McpServer, tool: string) =>
    server.registerTool(tool, { description: `live ${tool}` }, () => ({
      content: [{ type: 'text', text: `live/${tool}` }],
    }));
  const streams = new Set<ServerResponse>();
  /** Session ids in the order they were begun, each with its open and total GET streams. */
  const begun: { id: string; open: number; gets: number }[] = [];
  const since = (mark: number) => begun.slice(mark);
  const member: LiveMember = {
    url: '',
    get begun() {
      return begun.length;
    },
    openSince: (mark) => since(mark).reduce((n, session) => n + session.open, 0),
    getsSince: (mark) => since(mark).reduce((n, session) => n + session.gets, 0),
    deletes: 0,
    endStreams: () => {
      for (const res of streams) res.end();
    },
    addTool: (name) => {
      tools.push(name);
      for (const { server } of sessions.values()) register(server, name);
    },
  };
  member.url = `${await listen(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString();
    const body = text === '' ? undefined : (JSON.parse(text) as unknown);
    const id = req.headers['mcp-session-id'];
    if (req.method === 'GET') {
      // Counted once answered 200: the SDK's transport has then registered the stream, and a
      // notification sent from now on goes down it (a refused GET, 404 or 409, is not counted).
      const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => typeof res;
      res.writeHead = ((...args: unknown[]) => {
        const session = begun.find((s) => s.id === id);
        if (!res.headersSent && args[0] === 200 && session !== undefined) {
          session.open++;
          session.gets++;
          streams.add(res);
          res.once('close', () => {
            session.open--;
            streams.delete(res);
          });
        }
        return writeHead(...args);
      }) as typeof res.writeHead;
    }
    if (req.method === 'DELETE') member.deletes++;
    const found = typeof id === 'string' ? sessions.get(id) : undefined;
    if (found !== undefined) return void found.transport.handleRequest(req, res, body);
    const server = new McpServer({ name: 'live', version: '1.0.0' });
    for (const tool of tools) register(server, tool);
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: true,
      onsessioninitialized: (sessionId) => {
        sessions.set(sessionId, { server, transport });
        begun.push({ id: sessionId, open: 0, gets: 0 });
      },
    });
    transport.onclose = () => {
      if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
    };
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  })}/mcp`;
  return member;
}

let tracker: Member;
let crm: Member;
/** `tools/list` requests each paging member received, by slug. */
const pageRequests = new Map<string, number>();

/**
 * A stateless SDK MCP server (the low-level `Server`) that pages its lists: `tools` tools named
 * `tool_000`… in pages of `pageSize` (`tools: Infinity`: a `nextCursor` on every page, for ever),
 * and three prompts, one a page. A tool answers `<name>/<tool>`.
 */
async function pagingMember(name: string, tools: number, pageSize: number): Promise<string> {
  const toolName = (i: number) => `tool_${String(i).padStart(3, '0')}`;
  return `${await listen(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString();
    const server = new SdkServer({ name, version: '1.0.0' }, { capabilities: { tools: {}, prompts: {} } });
    server.setRequestHandler(ListToolsRequestSchema, (request) => {
      pageRequests.set(name, (pageRequests.get(name) ?? 0) + 1);
      const start = Number(request.params?.cursor ?? 0);
      const end = Math.min(start + pageSize, tools);
      const page = Array.from({ length: end - start }, (_, i) => ({
        name: toolName(start + i),
        inputSchema: { type: 'object' as const },
      }));
      return end < tools ? { tools: page, nextCursor: String(end) } : { tools: page };
    });
    server.setRequestHandler(CallToolRequestSchema, (request) => ({
      content: [{ type: 'text', text: `${name}/${request.params.name}` }],
    }));
    server.setRequestHandler(ListPromptsRequestSchema, (request) => {
      const at = Number(request.params?.cursor ?? 0);
      const prompt = { name: `prompt_${at}` };
      return at < 2 ? { prompts: [prompt], nextCursor: String(at + 1) } : { prompts: [prompt] };
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    void server
      .connect(transport)
      .then(() => transport.handleRequest(req, res, text === '' ? undefined : JSON.parse(text)));
  })}/mcp`;
}
let live: LiveMember;

beforeAll(async () => {
  [tracker, crm] = await Promise.all([
    sdkMember(
      'tracker',
      ['create_issue', 'list_issues', 'delete_project'],
      promptsAndResources('tracker', ['triage'], ['tracker://issues/1'], ['tracker://issues/{id}', 'docs://{path}']),
    ),
    sdkMember(
      'crm',
      ['search_contacts', 'search_deals', 'get_ticket', 'export_all'],
      promptsAndResources('crm', ['summary'], ['crm://contacts'], ['docs://{path}', 'crm://deals/{id}']),
    ),
  ]);
  live = await liveMember();
  // A server that takes connections and closes them: the member is down.
  const down = await listen((req) => req.socket.destroy());
  downUrl = `${down}/mcp`;
  // 25 tools in pages of 10; and a member whose pages never end.
  const [pagerUrl, endlessUrl] = await Promise.all([
    pagingMember('pager', 25, 10),
    pagingMember('endless', Infinity, 1),
  ]);
  const config = parseConfig(
    {
      auth: {
        apiKeys: [
          { key: KEY, user: { user_id: 'u-virtual', groups: ['support'] } },
          { key: TRACKER_ONLY_KEY, user: { user_id: 'u-tracker', groups: ['tracker-only'] } },
          { key: NO_POLICY_KEY, user: { user_id: 'u-nobody', groups: ['nobody'] } },
          { key: LIMITED_KEY, user: { user_id: 'u-limited', groups: ['support', 'limited'] } },
        ],
      },
      access: { mode: 'policies' },
      policies: [
        {
          slug: 'support',
          subjects: { groups: ['support'] },
          allow: {
            mcpServers: [
              // tracker's delete_project is not allowed: never listed, never sent.
              { server: 'tracker', tools: ['create_issue', 'list_issues'] },
              { server: 'crm' },
              { server: 'billing' },
              { server: 'pager' },
              { server: 'endless' },
              { server: 'live' },
            ],
          },
        },
        {
          slug: 'tracker-only',
          subjects: { groups: ['tracker-only'] },
          allow: { mcpServers: [{ server: 'tracker' }] },
        },
      ],
      limits: [{ slug: 'two-a-minute', subjects: { groups: ['limited'] }, per: 'each', requests_per_minute: 2 }],
      mcpServers: [
        { slug: 'tracker', url: tracker.url, user_identity_forwarding: { method: 'claims_header' } },
        { slug: 'crm', url: crm.url, user_identity_forwarding: { method: 'jwt_header' } },
        { slug: 'billing', url: downUrl, user_identity_forwarding: { method: 'claims_header' } },
        { slug: 'pager', url: pagerUrl },
        { slug: 'endless', url: endlessUrl },
        { slug: 'live', url: live.url, user_identity_forwarding: { method: 'claims_header' } },
      ],
      virtualServers: [
        {
          slug: 'workbench',
          name: 'Everything support uses',
          members: [
            { server: 'tracker', prefix: 'tracker_' },
            { server: 'crm', tools: ['search_*', 'get_ticket'], rename: { get_ticket: 'crm_ticket' } },
            { server: 'billing', prefix: 'billing_', timeout_ms: 2_000 },
          ],
        },
        {
          slug: 'pages',
          members: [
            { server: 'pager', prefix: 'pg_' },
            { server: 'endless', prefix: 'e_' },
          ],
        },
        { slug: 'livebench', members: [{ server: 'live', prefix: 'live_' }] },
      ],
    },
    {},
  );
  const keys = loadSigningKey({ production: false, jwtHeaderInUse: true });
  // Clients name the gateway by its public name (PUBLIC_BASE_URL), not the address it listens on:
  // the members' endpoints must see the caller's Host, or their DNS-rebinding guard refuses.
  const address = await listen((req, res) => gateway.listener(req, res));
  base = address.replace('127.0.0.1', 'localhost');
  gateway = createGateway({
    publicBaseUrl: base,
    config,
    accessMode: 'policies',
    signingKey: keys.key,
    jwks: keys.jwks,
    logger: createLogger(
      'info',
      new Writable({
        write: (chunk: Buffer, _e, done) => {
          logs.push(String(chunk));
          done();
        },
      }),
    ),
  });
  gateway.listeningOn(address);
});

afterAll(async () => {
  await gateway.close();
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/**
 * The `fetch` of a test's SDK client: `version` asks for that revision at `initialize` (the SDK
 * client asks for its latest, and takes any it supports); `stream: false` keeps the client from
 * opening its `GET` stream (answered `405` here, as by a server without one).
 */
function clientFetch(options: { version?: string; stream?: boolean } = {}) {
  return (url: string | URL, init: RequestInit = {}): Promise<Response> => {
    if (options.stream === false && (init.method ?? 'GET') === 'GET')
      return Promise.resolve(new Response(null, { status: 405 }));
    if (options.version !== undefined && typeof init.body === 'string') {
      const message = JSON.parse(init.body) as { method?: string; params?: { protocolVersion?: string } };
      if (message.method === 'initialize' && message.params !== undefined) {
        message.params.protocolVersion = options.version;
        init = { ...init, body: JSON.stringify(message) };
      }
    }
    return fetch(url, init);
  };
}

async function connect(slug: string, key = KEY, options: { version?: string; stream?: boolean } = {}): Promise<Client> {
  const client = new Client({ name: 'virtual-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${base}/mcp/${slug}`), {
      requestInit: { headers: { 'x-api-key': key } },
      fetch: clientFetch(options),
    }),
  );
  return client;
}

describe('a virtual MCP server mounted at /mcp/<virtual>', () => {
  it('answers initialize itself, and lists the members’ tools in member order with prefixes, renames and patterns', async () => {
    const client = await connect('workbench');
    expect(client.getServerVersion()?.name).toBe('workbench');
    const { tools } = await client.listTools();
    // tracker's delete_project is denied by the policy; crm's export_all is outside its patterns;
    // billing is down and left out within its timeout_ms.
    expect(tools.map((t) => t.name)).toEqual([
      'tracker_create_issue',
      'tracker_list_issues',
      'search_contacts',
      'search_deals',
      'crm_ticket',
    ]);
    expect(tools.find((t) => t.name === 'crm_ticket')?.description).toBe('crm get_ticket');
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(/gateway_virtual_member_unavailable_total\{server="billing"\} [1-9]/);
    expect(logs.join('')).toContain('a member of a virtual MCP server is left out of tools/list');
    await client.close();
  });

  it('routes a call to the member that owns it, under its own name, with that member’s forwarding', async () => {
    const client = await connect('workbench');
    const tracked = await client.callTool({ name: 'tracker_create_issue', arguments: { q: 'a' } });
    expect(tracked.content).toEqual([{ type: 'text', text: 'tracker/create_issue: {"q":"a"}' }]);
    const claims = JSON.parse(String(tracker.calls.at(-1)?.headers['x-user-claims'])) as { sub?: string };
    expect(claims.sub).toBe('u-virtual');
    expect(tracker.calls.at(-1)?.headers['x-user-jwt']).toBeUndefined();

    const ticket = await client.callTool({ name: 'crm_ticket', arguments: { q: 't-1' } });
    expect(ticket.content).toEqual([{ type: 'text', text: 'crm/get_ticket: {"q":"t-1"}' }]);
    const jwt = String(crm.calls.at(-1)?.headers['x-user-jwt']);
    const payload = JSON.parse(Buffer.from(jwt.split('.')[1] as string, 'base64url').toString()) as { sub?: string };
    expect(payload.sub).toBe('u-virtual');
    expect(crm.calls.at(-1)?.headers['x-user-claims']).toBeUndefined();
    // The caller's gateway key never reaches a member.
    for (const call of [...tracker.calls, ...crm.calls]) expect(JSON.stringify(call.headers)).not.toContain(KEY);
    await client.close();
  });

  it('costs a member one request per call: the caller’s member client is kept initialized', async () => {
    // Without their GET streams (each would listen to every member: a handshake and a GET of its own).
    const client = await connect('workbench', KEY, { stream: false });
    await client.callTool({ name: 'tracker_list_issues', arguments: {} });
    const before = tracker.requests.length;
    for (let i = 0; i < 3; i++) await client.callTool({ name: 'tracker_list_issues', arguments: {} });
    await client.close();
    // A new connection of the same caller (a stateless client) finds it kept too.
    const again = await connect('workbench', KEY, { stream: false });
    await again.callTool({ name: 'tracker_list_issues', arguments: {} });
    await again.close();
    expect(tracker.requests.slice(before)).toEqual(Array(4).fill('POST tools/call'));
    // Another caller's requests go through a client of their own, initialized with their credentials.
    const other = await connect('workbench', TRACKER_ONLY_KEY, { stream: false });
    await other.callTool({ name: 'tracker_list_issues', arguments: {} });
    await other.close();
    expect(tracker.requests.slice(before + 4)).toEqual([
      'POST initialize',
      'POST notifications/initialized',
      'POST tools/call',
    ]);
    expect(String(tracker.calls.at(-1)?.headers['x-user-claims'])).toContain('u-tracker');
  });

  it('passes a member’s progress notifications of a call back to the client as they come, then the result', async () => {
    const client = await connect('workbench');
    const progress: Progress[] = [];
    const result = await client.callTool({ name: 'search_deals', arguments: { q: 'big' } }, undefined, {
      onprogress: (p) => progress.push(p),
    });
    expect(progress).toEqual([
      { progress: 1, total: 2, message: 'half' },
      { progress: 2, total: 2, message: 'done' },
    ]);
    expect(result.content).toEqual([{ type: 'text', text: 'crm/search_deals: {"q":"big"}' }]);
    // Without a progressToken the answer stays JSON.
    const plain = await fetch(`${base}/mcp/workbench`, {
      method: 'POST',
      headers: { 'x-api-key': KEY, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'search_deals', arguments: {} },
      }),
    });
    expect(plain.headers.get('content-type')).toContain('application/json');
    await plain.text();
    await client.close();
  });

  it('serves 2026-07-28 clients statelessly: server/discover, then calls checked against Mcp-Method and Mcp-Name', async () => {
    const endpoint = `${base}/mcp/workbench`;
    const credentials = { 'x-api-key': KEY };
    const discover = await call2026(endpoint, credentials, 'server/discover');
    expect(discover.status).toBe(200);
    expect(discover.body.result).toMatchObject({
      resultType: 'complete',
      capabilities: { tools: {} },
      _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'workbench' } },
    });
    expect(discover.body.result.supportedVersions).toContain('2026-07-28');
    const listed = await call2026(endpoint, credentials, 'tools/list');
    expect(listed.status).toBe(200);
    expect(listed.body.result.resultType).toBe('complete');
    expect(listed.body.result.tools.map((t: { name: string }) => t.name)).toContain('tracker_create_issue');
    const called = await call2026(endpoint, credentials, 'tools/call', {
      name: 'tracker_create_issue',
      arguments: { q: 'm' },
    });
    expect(called.status).toBe(200);
    expect(called.body.result).toMatchObject({
      resultType: 'complete',
      content: [{ type: 'text', text: 'tracker/create_issue: {"q":"m"}' }],
    });
    // Headers that disagree with the body, or are missing: 400 with -32020, and nothing sent.
    const sent = tracker.calls.length;
    const mismatch = await call2026(
      endpoint,
      credentials,
      'tools/call',
      { name: 'tracker_create_issue', arguments: {} },
      {
        headers: { 'mcp-name': 'tracker_list_issues' },
      },
    );
    expect(mismatch.status).toBe(400);
    expect(mismatch.body.error.code).toBe(-32020);
    const missing = await fetch(endpoint, {
      method: 'POST',
      headers: {
        ...credentials,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'tracker_create_issue' } }),
    });
    expect(missing.status).toBe(400);
    expect(((await missing.json()) as { error: { code: number } }).error.code).toBe(-32020);
    expect(tracker.calls.length).toBe(sent);
  });

  it('merges prompts: each named with its member’s prefix, got from that member under its own name', async () => {
    const client = await connect('workbench');
    expect((await client.listPrompts()).prompts.map((p) => p.name)).toEqual(['tracker_triage', 'summary']);
    const triage = await client.getPrompt({ name: 'tracker_triage', arguments: { topic: 'login' } });
    expect(triage.messages).toEqual([{ role: 'user', content: { type: 'text', text: 'tracker triage login' } }]);
    const summary = await client.getPrompt({ name: 'summary', arguments: { topic: 'q3' } });
    expect(summary.messages[0]?.content).toEqual({ type: 'text', text: 'crm summary q3' });
    const unknown = await client.getPrompt({ name: 'triage', arguments: { topic: 'x' } }).catch((e: unknown) => e);
    expect((unknown as McpError).code).toBe(-32602);
    await client.close();
  });

  it('merges resources and templates, URIs kept, each read from the member that listed it or whose template matches first', async () => {
    const client = await connect('workbench');
    expect((await client.listResources()).resources.map((r) => r.uri)).toEqual([
      'tracker://issues/1',
      'crm://contacts',
    ]);
    expect((await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate)).toEqual([
      'tracker://issues/{id}',
      'docs://{path}',
      'docs://{path}',
      'crm://deals/{id}',
    ]);
    const text = async (uri: string) => {
      const { contents } = await client.readResource({ uri });
      return (contents[0] as { text?: string }).text;
    };
    expect(await text('crm://contacts')).toBe('crm read crm://contacts');
    expect(await text('tracker://issues/1')).toBe('tracker read tracker://issues/1');
    expect(await text('crm://deals/9')).toBe('crm read crm://deals/9');
    // Both members' templates match: the first member's.
    expect(await text('docs://guide')).toBe('tracker read docs://guide');
    const nowhere = await client.readResource({ uri: 'nowhere://x' }).catch((e: unknown) => e);
    expect((nowhere as McpError).code).toBe(-32002);
    await client.close();
  });

  it('gives a tool the policy denies the member endpoint’s own refusal, and never sends it', async () => {
    const before = tracker.calls.length;
    const direct = await connect('tracker');
    expect((await direct.listTools()).tools.map((t) => t.name)).toEqual(['create_issue', 'list_issues']);
    const own = await direct.callTool({ name: 'delete_project', arguments: {} }).catch((e: unknown) => e);
    await direct.close();
    const client = await connect('workbench');
    const virtual = await client.callTool({ name: 'tracker_delete_project', arguments: {} }).catch((e: unknown) => e);
    await client.close();
    expect(own).toBeInstanceOf(McpError);
    expect(virtual).toBeInstanceOf(McpError);
    expect({
      code: (virtual as McpError).code,
      message: (virtual as McpError).message,
      data: (virtual as McpError).data,
    }).toEqual({
      code: (own as McpError).code,
      message: (own as McpError).message,
      data: (own as McpError).data,
    });
    expect((virtual as McpError).code).toBe(-32602);
    expect(((virtual as McpError).data as { code?: string }).code).toBe('access_denied');
    expect(tracker.calls.length).toBe(before);
  });

  it('lists none of the tools of a member the caller may not reach, without counting it unavailable', async () => {
    const unavailable = async () =>
      /gateway_virtual_member_unavailable_total\{server="crm"\} (\d+)/.exec(
        await (await fetch(`${base}/metrics`)).text(),
      )?.[1];
    const before = await unavailable();
    const client = await connect('workbench', TRACKER_ONLY_KEY);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['tracker_create_issue', 'tracker_list_issues', 'tracker_delete_project']);
    expect(await unavailable()).toBe(before);
    // Not offered to this caller: -32602, as the member's own endpoint answers, and never sent.
    const sent = crm.calls.length;
    const refused = await client.callTool({ name: 'search_deals', arguments: {} }).catch((e: unknown) => e);
    expect((refused as McpError).code).toBe(-32602);
    expect(crm.calls.length).toBe(sent);
    await client.close();
  });

  it('counts a call through the virtual server once against the member’s limit', async () => {
    const before = tracker.calls.length;
    const client = await connect('workbench', LIMITED_KEY);
    await client.callTool({ name: 'tracker_list_issues', arguments: {} });
    await client.callTool({ name: 'tracker_list_issues', arguments: {} });
    const third = await client.callTool({ name: 'tracker_list_issues', arguments: {} }).catch((e: unknown) => e);
    await client.close();
    expect(tracker.calls.length - before).toBe(2);
    expect(third).toBeInstanceOf(McpError);
    expect(((third as McpError).data as { code?: string }).code).toBe('rate_limited');
  });

  it('answers an unknown name -32602, and a call to a member that is down -32603 upstream_unavailable', async () => {
    const client = await connect('workbench');
    const unknown = await client.callTool({ name: 'no_such_tool', arguments: {} }).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(McpError);
    expect((unknown as McpError).code).toBe(-32602);
    // Not listed (the member is down), but its prefix routes the call to it.
    const down = await client.callTool({ name: 'billing_refund', arguments: {} }).catch((e: unknown) => e);
    expect(down).toBeInstanceOf(McpError);
    expect((down as McpError).code).toBe(-32603);
    expect(((down as McpError).data as { code?: string }).code).toBe('upstream_unavailable');
    await client.close();
  });

  it('refuses a caller no policy allows any member to: 403 access_denied, as a member endpoint does', async () => {
    const post = (slug: string) =>
      fetch(`${base}/mcp/${slug}`, {
        method: 'POST',
        headers: {
          'x-api-key': NO_POLICY_KEY,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
      });
    const [virtual, own] = await Promise.all([post('workbench'), post('tracker')]);
    expect(virtual.status).toBe(403);
    expect(own.status).toBe(403);
    expect(((await virtual.json()) as { error?: { code?: string } }).error?.code).toBe('access_denied');
  });

  it('authenticates like any /mcp/<slug>: no credentials is 401', async () => {
    const res = await fetch(`${base}/mcp/workbench`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    expect(res.status).toBe(401);
  });
});

describe('members whose lists come in pages', () => {
  it('lists every page of a member, follows an endless one to the bound of 20 pages with a warning, and routes a later page’s tool', async () => {
    const client = await connect('pages');
    const before = pageRequests.get('endless') ?? 0;
    const names = (await client.listTools()).tools.map((t) => t.name);
    const toolName = (i: number) => `tool_${String(i).padStart(3, '0')}`;
    expect(names).toEqual([
      ...Array.from({ length: 25 }, (_, i) => `pg_${toolName(i)}`),
      ...Array.from({ length: 20 }, (_, i) => `e_${toolName(i)}`),
    ]);
    expect((pageRequests.get('endless') ?? 0) - before).toBe(20);
    expect(logs.join('')).toMatch(/"server":"endless","method":"tools\/list","reason":"pages","pages":20,"items":20/);
    // A tool of the last page is routed to its member.
    const called = await client.callTool({ name: 'pg_tool_024', arguments: {} });
    expect(called.content).toEqual([{ type: 'text', text: 'pager/tool_024' }]);
    // Prompts too: three pages of one.
    expect((await client.listPrompts()).prompts.map((p) => p.name)).toEqual(
      expect.arrayContaining(['pg_prompt_0', 'pg_prompt_1', 'pg_prompt_2']),
    );
    await client.close();
  });
});

/** A JSON-RPC `tools/list` POST to `/mcp/<slug>` naming session `sessionId`, with `key`: its status and JSON-RPC error code. */
async function listWithSession(slug: string, sessionId: string, key = KEY): Promise<{ status: number; code?: number }> {
  const res = await fetch(`${base}/mcp/${slug}`, {
    method: 'POST',
    headers: {
      'x-api-key': key,
      'mcp-session-id': sessionId,
      'mcp-protocol-version': '2025-06-18',
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  });
  const body = (await res.json()) as { error?: { code?: number } };
  return { status: res.status, code: body.error?.code };
}

describe('sessions of a virtual MCP server (CONTRACT sections 12 and 16)', () => {
  it('gives a 2025-06-18 SDK client a session id of its own: another caller’s, a forged one and an ended one are 404', async () => {
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp/workbench`), {
      requestInit: { headers: { 'x-api-key': KEY } },
      fetch: clientFetch({ version: '2025-06-18', stream: false }),
    });
    const client = new Client({ name: 'virtual-session-test', version: '1.0.0' });
    await client.connect(transport);
    expect(transport.protocolVersion).toBe('2025-06-18');
    const id = transport.sessionId as string;
    expect(id).toMatch(/^v1\.[\w-]+\.[\w-]+$/);
    // It holds no credential: only a keyed hash of it.
    expect(Buffer.from(id.split('.')[1] as string, 'base64url').toString()).not.toContain(KEY);
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('tracker_create_issue');
    expect(await listWithSession('workbench', id)).toEqual({ status: 200, code: undefined });
    // Another caller's credential with it, another virtual server, a forged or altered id: 404, Session not found.
    expect(await listWithSession('workbench', id, TRACKER_ONLY_KEY)).toEqual({ status: 404, code: -32001 });
    expect(await listWithSession('livebench', id)).toEqual({ status: 404, code: -32001 });
    const [form, payload, mac] = id.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as { e: number };
    const longer = Buffer.from(JSON.stringify({ ...claims, e: claims.e + 86_400_000 })).toString('base64url');
    expect(await listWithSession('workbench', `${form}.${longer}.${mac}`)).toEqual({ status: 404, code: -32001 });
    expect(await listWithSession('workbench', `v1.${payload}.${'A'.repeat(43)}`)).toEqual({
      status: 404,
      code: -32001,
    });
    expect(await listWithSession('workbench', 'a-session-id-never-issued')).toEqual({ status: 404, code: -32001 });
    // Ended by its client (DELETE): 404 from then on.
    await transport.terminateSession();
    expect(await listWithSession('workbench', id)).toEqual({ status: 404, code: -32001 });
    // The client begins again: an initialize is answered with a new session, whatever id it carries.
    const again = await fetch(`${base}/mcp/workbench`, {
      method: 'POST',
      headers: {
        'x-api-key': KEY,
        'mcp-session-id': id,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'again', version: '1' } },
      }),
    });
    expect(again.status).toBe(200);
    await again.arrayBuffer();
    const renewed = again.headers.get('mcp-session-id') as string;
    expect(renewed).toMatch(/^v1\./);
    expect(renewed).not.toBe(id);
    expect(await listWithSession('workbench', renewed)).toEqual({ status: 200, code: undefined });
    await client.close();
    // A request without a session id is served statelessly, as before; GET and DELETE need one.
    const stateless = await fetch(`${base}/mcp/workbench`, {
      headers: { 'x-api-key': KEY, accept: 'text/event-stream' },
    });
    expect(stateless.status).toBe(405);
    await stateless.arrayBuffer();
  });

  it('passes a member’s tools/list_changed to the session’s GET stream: the SDK client’s handler fires', async () => {
    const client = new Client({ name: 'virtual-listen-test', version: '1.0.0' });
    let changes = 0;
    const changed = new Promise<void>((resolve) =>
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
        changes++;
        resolve();
      }),
    );
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp/livebench`), {
      requestInit: { headers: { 'x-api-key': KEY } },
    });
    const mark = live.begun;
    await client.connect(transport);
    expect(client.getServerCapabilities()?.tools?.listChanged).toBe(true);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['live_status']);
    // The gateway listens to the member on the stream's behalf (its own GET to the member).
    await within(5_000, async () => live.openSince(mark) === 1);
    live.addTool('restart');
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      changed,
      new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('no list_changed within 5 s')), 5_000))),
    ]);
    clearTimeout(timer);
    expect(changes).toBe(1);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['live_status', 'live_restart']);
    // The member's stream ends (a proxy's idle timeout, a restart): the gateway's listener opens it again.
    live.endStreams();
    await within(5_000, async () => live.getsSince(mark) === 2 && live.openSince(mark) === 1);
    live.addTool('pause');
    await within(5_000, async () => changes === 2);
    // The client leaves: its stream ends, and the gateway's listening member client with it (DELETE).
    const deletes = live.deletes;
    await transport.terminateSession();
    await client.close();
    await within(5_000, async () => live.openSince(mark) === 0 && live.deletes > deletes);
  });
});

/** Reads an event stream's JSON-RPC messages as they come: `next()` the next one, failing after 5 s. */
function messages(body: ReadableStream<Uint8Array>) {
  const reader = body.getReader();
  let buffered = '';
  return {
    async next(): Promise<{ method?: string; params?: Record<string, unknown> }> {
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<never>(
        (_, reject) => (timer = setTimeout(() => reject(new Error('no message within 5 s')), 5_000)),
      );
      try {
        for (;;) {
          const end = buffered.indexOf('\n\n');
          if (end !== -1) {
            const event = buffered.slice(0, end);
            buffered = buffered.slice(end + 2);
            const data = event
              .split('\n')
              .filter((line) => line.startsWith('data: '))
              .map((line) => line.slice(6))
              .join('\n');
            if (data !== '') return JSON.parse(data) as { method?: string; params?: Record<string, unknown> };
            continue;
          }
          const { done, value } = await Promise.race([reader.read(), deadline]);
          if (done) throw new Error('the stream ended');
          buffered += Buffer.from(value).toString();
        }
      } finally {
        clearTimeout(timer);
      }
    },
    cancel: () => reader.cancel().catch(() => undefined),
  };
}

describe('the bounds of a virtual MCP server’s streams', () => {
  it('refuses a second GET stream of a session (409) and a ninth of one caller (429 mcp_stream_limit)', async () => {
    const mark = live.begun;
    const abort = new AbortController();
    const headers = { 'x-api-key': KEY, accept: 'application/json, text/event-stream' };
    const session = async () => {
      const res = await fetch(`${base}/mcp/livebench`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bounds', version: '1' } },
        }),
      });
      await res.arrayBuffer();
      return res.headers.get('mcp-session-id') as string;
    };
    const stream = (id: string) =>
      fetch(`${base}/mcp/livebench`, {
        headers: { ...headers, accept: 'text/event-stream', 'mcp-session-id': id },
        signal: abort.signal,
      });
    const ids = await Promise.all(Array.from({ length: 9 }, session));
    const statuses: number[] = [];
    for (const id of ids.slice(0, 8)) statuses.push((await stream(id)).status);
    expect(statuses).toEqual(Array(8).fill(200));
    const second = await stream(ids[0] as string);
    expect(second.status).toBe(409);
    await second.arrayBuffer();
    const ninth = await stream(ids[8] as string);
    expect(ninth.status).toBe(429);
    expect(((await ninth.json()) as { error?: { code?: string } }).error?.code).toBe('mcp_stream_limit');
    abort.abort();
    await within(5_000, async () => live.openSince(mark) === 0);
  });
});

describe('a 2026-07-28 client’s subscriptions/listen on a virtual MCP server', () => {
  it('acknowledges the list changes asked for, then passes a member’s tools/list_changed under the subscription id', async () => {
    const mark = live.begun;
    const body = {
      jsonrpc: '2.0',
      id: 'sub-1',
      method: 'subscriptions/listen',
      params: { notifications: { toolsListChanged: true }, _meta: requestMeta() },
    };
    const res = await fetch(`${base}/mcp/livebench`, {
      method: 'POST',
      headers: {
        'x-api-key': KEY,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...routingHeaders(body),
      },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const stream = messages(res.body as ReadableStream<Uint8Array>);
    expect(await stream.next()).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/subscriptions/acknowledged',
      params: {
        notifications: { toolsListChanged: true, promptsListChanged: false, resourcesListChanged: false },
        _meta: { 'io.modelcontextprotocol/subscriptionId': 'sub-1' },
      },
    });
    await within(5_000, async () => live.openSince(mark) === 1);
    live.addTool('drain');
    expect(await stream.next()).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/tools/list_changed',
      params: { _meta: { 'io.modelcontextprotocol/subscriptionId': 'sub-1' } },
    });
    await stream.cancel();
    await within(5_000, async () => live.openSince(mark) === 0);
  });
});

describe('the config file’s virtualServers', () => {
  const mcpServers = [
    { slug: 'tracker', url: 'http://127.0.0.1:9/mcp' },
    { slug: 'wiki', url: 'http://127.0.0.1:9/mcp' },
  ];
  it('refuses a slug an MCP server has, and a member that is not an MCP server', () => {
    expect(() =>
      parseConfig({ mcpServers, virtualServers: [{ slug: 'tracker', members: [{ server: 'wiki' }] }] }, {}),
    ).toThrow(/one namespace/);
    expect(() =>
      parseConfig({ mcpServers, virtualServers: [{ slug: 'workbench', members: [{ server: 'crm' }] }] }, {}),
    ).toThrow(/not an MCP server of the gateway/);
  });
});

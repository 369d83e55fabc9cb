import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type RequestListener, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { loadSigningKey } from '@gw/jwks';
import { z } from 'zod';
import { createGateway, type Gateway } from '../src/app';
import { parseConfig } from '../src/config/load';
import { createLogger } from '../src/observability/logger';

// The fast path of a call through a virtual MCP server (virtual-fast-call.ts): a tools/call routed to
// a member is handed in process to the member's own MCP proxy. What must hold whichever path serves it.

const KEY = 'gw-fast-call-key';
/** A caller with a limit of 2 requests a minute. */
const LIMITED_KEY = 'gw-fast-call-limited';
const servers: HttpServer[] = [];
let gateway: Gateway;
let base: string;
/** The requests the gateway's listener received (`<method> <path>`): a loopback hop is one more. */
const arrived: string[] = [];

interface Seen {
  tool: string;
  headers: IncomingHttpHeaders;
  /** The member's own session id that served it (a stateful member). */
  session?: string;
}

async function listen(listener: RequestListener): Promise<string> {
  const server = createServer(listener);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function register(server: McpServer, name: string, tools: string[], seen: Seen[], headers: () => IncomingHttpHeaders) {
  for (const tool of tools)
    server.registerTool(
      tool,
      { description: `${name} ${tool}`, inputSchema: { q: z.string().optional() } },
      async (args, extra) => {
        seen.push({ tool, headers: headers(), session: headers()['mcp-session-id'] as string | undefined });
        // A call with a progressToken gets a progress notification before its result.
        const progressToken = extra._meta?.progressToken;
        if (progressToken !== undefined)
          await extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress: 1 } });
        return { content: [{ type: 'text', text: `${name}/${tool}: ${JSON.stringify(args)}` }] };
      },
    );
}

/** A stateless SDK member; `seen` gets each tool execution. */
async function statelessMember(name: string, tools: string[], seen: Seen[]): Promise<string> {
  return `${await listen(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString();
    const server = new McpServer({ name, version: '1.0.0' });
    register(server, name, tools, seen, () => req.headers);
    const body = text === '' ? undefined : (JSON.parse(text) as { params?: { _meta?: { progressToken?: unknown } } });
    // An answer with notifications in it is a stream; others are JSON.
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: body?.params?._meta?.progressToken === undefined,
    });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  })}/mcp`;
}

/** A session-based SDK member: every answer carries its own `Mcp-Session-Id`; `sessions` gets each one begun. */
async function statefulMember(name: string, tools: string[], seen: Seen[], sessions: string[]): Promise<string> {
  const open = new Map<string, StreamableHTTPServerTransport>();
  return `${await listen(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString();
    const body = text === '' ? undefined : (JSON.parse(text) as unknown);
    const id = req.headers['mcp-session-id'];
    const found = typeof id === 'string' ? open.get(id) : undefined;
    if (found !== undefined) return void found.handleRequest(req, res, body);
    let current: IncomingHttpHeaders = req.headers;
    const server = new McpServer({ name, version: '1.0.0' });
    register(server, name, tools, seen, () => current);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: true,
      onsessioninitialized: (sessionId) => {
        open.set(sessionId, transport);
        sessions.push(sessionId);
      },
    });
    const handle = transport.handleRequest.bind(transport);
    transport.handleRequest = (request, response, parsed) => {
      current = request.headers;
      return handle(request, response, parsed);
    };
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  })}/mcp`;
}

const alphaSeen: Seen[] = [];
const betaSeen: Seen[] = [];
const keeperSeen: Seen[] = [];
const keeperSessions: string[] = [];

beforeAll(async () => {
  const [alpha, beta, keeper] = await Promise.all([
    statelessMember('alpha', ['echo', 'secret'], alphaSeen),
    statelessMember('beta', ['echo'], betaSeen),
    statefulMember('keeper', ['whoami'], keeperSeen, keeperSessions),
  ]);
  const config = parseConfig(
    {
      auth: {
        apiKeys: [
          { key: KEY, user: { user_id: 'u-fast', groups: ['team'] } },
          { key: LIMITED_KEY, user: { user_id: 'u-fast-limited', groups: ['team', 'limited'] } },
        ],
      },
      access: { mode: 'policies' },
      policies: [
        {
          slug: 'team',
          subjects: { groups: ['team'] },
          // alpha's secret is not allowed.
          allow: { mcpServers: [{ server: 'alpha', tools: ['echo'] }, { server: 'beta' }, { server: 'keeper' }] },
        },
      ],
      limits: [{ slug: 'two', subjects: { groups: ['limited'] }, per: 'each', requests_per_minute: 2 }],
      mcpServers: [
        { slug: 'alpha', url: alpha, user_identity_forwarding: { method: 'claims_header' } },
        { slug: 'beta', url: beta, user_identity_forwarding: { method: 'claims_header' } },
        { slug: 'keeper', url: keeper, user_identity_forwarding: { method: 'claims_header' } },
      ],
      virtualServers: [
        {
          slug: 'desk',
          members: [
            { server: 'alpha', prefix: 'a_' },
            { server: 'beta', prefix: 'b_' },
            { server: 'keeper', prefix: 'k_' },
          ],
        },
      ],
    },
    {},
  );
  const address = await listen((req, res) => {
    arrived.push(`${req.method} ${req.url}`);
    gateway.listener(req, res);
  });
  base = address.replace('127.0.0.1', 'localhost');
  const keys = loadSigningKey({ production: false, jwtHeaderInUse: false });
  gateway = createGateway({
    signingKey: keys.key,
    jwks: keys.jwks,
    publicBaseUrl: base,
    config,
    accessMode: 'policies',
    logger: createLogger('error', new Writable({ write: (_c, _e, done) => done() })),
  });
  gateway.listeningOn(address);
});

afterAll(async () => {
  await gateway?.close();
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** What the test reads of an SDK server: the name it answers `initialize` with. */
interface ServerInfo {
  _serverInfo?: { name?: string };
}

/** An SDK client of `/mcp/<slug>`; `capabilities` are declared at its `initialize` (its session's). */
async function connect(slug: string, key = KEY, capabilities: Record<string, unknown> = {}): Promise<Client> {
  const client = new Client({ name: 'fast-call-test', version: '1.0.0' }, { capabilities });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${base}/mcp/${slug}`), {
      requestInit: { headers: { 'x-api-key': key } },
      // No GET stream: the test reads answers only.
      fetch: (url, init = {}) =>
        (init.method ?? 'GET') === 'GET' ? Promise.resolve(new Response(null, { status: 405 })) : fetch(url, init),
    }),
  );
  return client;
}

/** A raw POST to `/mcp/<slug>`: the status, headers and JSON answer. */
async function post(slug: string, body: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${base}/mcp/${slug}`, {
    method: 'POST',
    headers: {
      'x-api-key': KEY,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-06-18',
      ...headers,
    },
    body,
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  return { status: res.status, headers: res.headers, body: JSON.parse(text) as any };
}

/** What a call's failure is for its client: JSON-RPC code, message and data. */
async function failure(call: Promise<unknown>): Promise<{ code: number; message: string; data: unknown }> {
  const error = await call.then(
    () => new Error('the call succeeded'),
    (e: unknown) => e,
  );
  if (!(error instanceof McpError)) throw error;
  return { code: error.code, message: error.message, data: error.data };
}

describe('a call through a virtual MCP server, handed in process to the member', () => {
  it('is one request to the gateway (no loopback hop) once the member session is kept', async () => {
    const client = await connect('desk');
    try {
      await client.callTool({ name: 'a_echo', arguments: { q: 'warm' } });
      const before = arrived.length;
      const result = await client.callTool({ name: 'a_echo', arguments: { q: 'one' } });
      expect(result.content).toEqual([{ type: 'text', text: 'alpha/echo: {"q":"one"}' }]);
      expect(arrived.slice(before)).toEqual(['POST /mcp/desk']);
    } finally {
      await client.close();
    }
  });

  it('lists the members’ tools in one request to the gateway (each member asked in process, no loopback hop)', async () => {
    const client = await connect('desk');
    try {
      await client.listTools();
      const before = arrived.length;
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toEqual(['a_echo', 'b_echo', 'k_whoami']);
      expect(arrived.slice(before)).toEqual(['POST /mcp/desk']);
    } finally {
      await client.close();
    }
  });

  it('answers lists and kept calls without an SDK server of the request (an initialize still has one)', async () => {
    const connect_ = jest.spyOn(Server.prototype, 'connect');
    /** How many SDK servers of the virtual server `desk` were connected to a transport since the spy began. */
    const virtualServers = () =>
      connect_.mock.contexts.filter((server) => (server as unknown as ServerInfo)._serverInfo?.name === 'desk').length;
    try {
      const client = await connect('desk');
      try {
        expect(virtualServers()).toBeGreaterThan(0); // the initialize (and the initialized notification)
        await client.callTool({ name: 'a_echo', arguments: { q: 'warm' } });
        const before = virtualServers();
        await client.listTools();
        await client.listPrompts().catch(() => undefined);
        await client.callTool({ name: 'a_echo', arguments: { q: 'kept' } });
        expect(virtualServers() - before).toBe(0);
      } finally {
        await client.close();
      }
    } finally {
      connect_.mockRestore();
    }
  });

  it('enters no AsyncLocalStorage (whose promise hooks every request of the process would then pay)', async () => {
    const run = jest.spyOn(AsyncLocalStorage.prototype, 'run');
    const enter = jest.spyOn(AsyncLocalStorage.prototype, 'enterWith');
    // A call and a list in process, and a call of a caller that may be asked (the SDK path, a member client of its own).
    const client = await connect('desk');
    const asked = await connect('desk', KEY, { elicitation: {} });
    try {
      await client.callTool({ name: 'a_echo', arguments: { q: 'hooks' } });
      await client.listTools();
      await asked.callTool({ name: 'a_echo', arguments: { q: 'hooks' } });
      expect(run).not.toHaveBeenCalled();
      expect(enter).not.toHaveBeenCalled();
    } finally {
      run.mockRestore();
      enter.mockRestore();
      await Promise.all([client.close(), asked.close()]);
    }
  });

  it('never gives the caller the member’s Mcp-Session-Id, nor the member the caller’s', async () => {
    const client = await connect('desk');
    const virtualSession = (client.transport as StreamableHTTPClientTransport).sessionId as string;
    try {
      await client.callTool({ name: 'k_whoami' });
      const call = await post(
        'desk',
        JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'k_whoami' } }),
        { 'mcp-session-id': virtualSession },
      );
      expect(call.body).toMatchObject({ id: 7, result: { content: [{ type: 'text', text: 'keeper/whoami: {}' }] } });
      // The member served it in its own session (begun by the kept client), which the caller never sees.
      const served = keeperSeen.at(-1) as Seen;
      expect(keeperSessions).toContain(served.session);
      expect(call.headers.get('mcp-session-id')).toBeNull();
      expect(served.headers['mcp-session-id']).not.toBe(virtualSession);
    } finally {
      await client.close();
    }
  });

  it('routes a name to the member that owns it, whatever else the body holds: never to another member', async () => {
    const before = { alpha: alphaSeen.length, beta: betaSeen.length };
    // Two `name` keys, one of each member: refused before any member is chosen, sent to neither.
    const twice = await post(
      'desk',
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"b_echo","arguments":{"q":"x"},"name":"a_echo"}}',
    );
    expect([twice.status, twice.body.error?.code]).toEqual([400, 'invalid_mcp_message']);
    for (const [name, member] of [
      ['a_echo', 'alpha'],
      ['b_echo', 'beta'],
      ['a_echo', 'alpha'],
      ['b_echo', 'beta'],
    ] as const) {
      const call = await post(
        'desk',
        JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name, arguments: { q: name } } }),
      );
      expect(call.body.result.content[0].text).toBe(`${member}/echo: {"q":"${name}"}`);
    }
    expect(alphaSeen.slice(before.alpha).map((s) => s.tool)).toEqual(['echo', 'echo']);
    expect(betaSeen.slice(before.beta).map((s) => s.tool)).toEqual(['echo', 'echo']);
  });

  it('refuses a member tool the caller may not use exactly as the SDK path and the member’s own endpoint do', async () => {
    const fast = await connect('desk');
    // A session that declared elicitation is served by the SDK path (member requests are relayed there).
    const sdk = await connect('desk', KEY, { elicitation: {} });
    const own = await connect('alpha');
    const before = alphaSeen.length;
    try {
      const viaFast = await failure(fast.callTool({ name: 'a_secret' }));
      const viaSdk = await failure(sdk.callTool({ name: 'a_secret' }));
      const viaOwn = await failure(own.callTool({ name: 'secret' }));
      expect(viaFast).toEqual(viaSdk);
      expect(viaFast).toEqual(viaOwn);
      expect(viaFast.data).toMatchObject({ code: 'access_denied' });
      expect(alphaSeen.length).toBe(before);
    } finally {
      await Promise.all([fast.close(), sdk.close(), own.close()]);
    }
  });

  it('counts a call once against the caller’s limits', async () => {
    const client = await connect('desk', LIMITED_KEY);
    try {
      const first = await client.callTool({ name: 'b_echo', arguments: { q: '1' } });
      const second = await client.callTool({ name: 'b_echo', arguments: { q: '2' } });
      expect([first.content, second.content]).toEqual([
        [{ type: 'text', text: 'beta/echo: {"q":"1"}' }],
        [{ type: 'text', text: 'beta/echo: {"q":"2"}' }],
      ]);
      const third = await failure(client.callTool({ name: 'b_echo', arguments: { q: '3' } }));
      expect(third).toMatchObject({ code: -32603, data: { code: 'rate_limited', server: 'beta', status: 429 } });
    } finally {
      await client.close();
    }
  });

  it('answers a 2026-07-28 caller’s result with resultType "complete"', async () => {
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' };
    const body = { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'b_echo', _meta: meta } };
    const call = await post('desk', JSON.stringify(body), {
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': 'b_echo',
    });
    expect(call.status).toBe(200);
    expect(call.body).toEqual({
      jsonrpc: '2.0',
      id: 3,
      result: { content: [{ type: 'text', text: 'beta/echo: {}' }], resultType: 'complete' },
    });
    // With a progressToken: the member's event stream, its progress as sent, the result completed.
    const streamed = await fetch(`${base}/mcp/desk`, {
      method: 'POST',
      headers: {
        'x-api-key': KEY,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'tools/call',
        'mcp-name': 'b_echo',
      },
      body: JSON.stringify({ ...body, id: 4, params: { ...body.params, _meta: { ...meta, progressToken: 'p-1' } } }),
      signal: AbortSignal.timeout(10_000),
    });
    expect(streamed.headers.get('content-type')).toContain('text/event-stream');
    const events = (await streamed.text())
      .split('\n')
      .filter((line) => line.startsWith('data:'))
      .map((line) => JSON.parse(line.slice(5)) as unknown);
    expect(events).toEqual([
      { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'p-1', progress: 1 } },
      {
        jsonrpc: '2.0',
        id: 4,
        result: { content: [{ type: 'text', text: 'beta/echo: {}' }], resultType: 'complete' },
      },
    ]);
    // The member was sent its own revision, without the caller's mirror headers.
    const seen = betaSeen.at(-1) as Seen;
    expect(seen.headers['mcp-protocol-version']).not.toBe('2026-07-28');
    expect(seen.headers['mcp-name']).toBeUndefined();
  });
});

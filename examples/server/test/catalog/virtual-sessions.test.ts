import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { startPostgres, type RunningPostgres } from '../../../../packages/catalog/test/postgres';
import { startGateway, writeConfig, type RunningGateway } from '../support';
import { newAdminKey, newEncryptionKey, within } from './catalog-support';

// Sessions of a virtual MCP server (CONTRACT sections 12 and 16) across instances: two gateway
// processes on one PostgreSQL. The session id is a token both instances check with the key they
// derive from GATEWAY_ENCRYPTION_KEY; its end (DELETE) reaches the other through NOTIFY.

jest.setTimeout(120_000);

const KEY = 'gw-virtual-sessions-caller-0001';
const OTHER_KEY = 'gw-virtual-sessions-caller-0002';
let member: Server;
let postgres: RunningPostgres;
let a: RunningGateway;
let b: RunningGateway;

/** The `fetch` of the SDK client, asking for revision 2025-06-18 at `initialize` (it asks for its latest otherwise), without its GET stream. */
function as20250618(url: string | URL, init: RequestInit = {}): Promise<Response> {
  if ((init.method ?? 'GET') === 'GET') return Promise.resolve(new Response(null, { status: 405 }));
  if (typeof init.body === 'string') {
    const message = JSON.parse(init.body) as { method?: string; params?: { protocolVersion?: string } };
    if (message.method === 'initialize' && message.params !== undefined) {
      message.params.protocolVersion = '2025-06-18';
      init = { ...init, body: JSON.stringify(message) };
    }
  }
  return fetch(url, init);
}

/** An SDK client of `/mcp/bench` on `gatewayUrl`, with `sessionId` when given (it then continues that session: no initialize). */
async function benchClient(gatewayUrl: string, sessionId?: string) {
  const transport = new StreamableHTTPClientTransport(new URL(`${gatewayUrl}/mcp/bench`), {
    requestInit: { headers: { authorization: `Bearer ${KEY}` } },
    fetch: as20250618,
    sessionId,
  });
  const client = new Client({ name: 'virtual-sessions-test', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport };
}

/** The status and JSON-RPC error code of a `tools/list` POST naming `sessionId`, with `key`. */
async function listWith(gatewayUrl: string, sessionId: string, key = KEY): Promise<{ status: number; code?: number }> {
  const res = await fetch(`${gatewayUrl}/mcp/bench`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
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

beforeAll(async () => {
  member = createServer((req, res) => {
    const server = new McpServer({ name: 'tracker', version: '1.0.0' });
    server.registerTool('create_issue', { description: 'tracker create_issue' }, () => ({
      content: [{ type: 'text', text: 'tracker/create_issue' }],
    }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    void server.connect(transport).then(() => transport.handleRequest(req, res));
  });
  await new Promise<void>((resolve) => member.listen(0, '127.0.0.1', resolve));
  const memberUrl = `http://127.0.0.1:${(member.address() as AddressInfo).port}/mcp`;
  postgres = await startPostgres();
  const env = {
    DATABASE_URL: await postgres.createDatabase(),
    GATEWAY_CONFIG: writeConfig({
      auth: {
        apiKeys: [
          { key: KEY, user: { user_id: 'u-session' } },
          { key: OTHER_KEY, user: { user_id: 'u-other' } },
        ],
      },
      mcpServers: [{ slug: 'tracker', url: memberUrl, user_identity_forwarding: { method: 'claims_header' } }],
      virtualServers: [{ slug: 'bench', members: [{ server: 'tracker', prefix: 't_' }] }],
    }),
    GATEWAY_ADMIN_KEY: newAdminKey(),
    GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
    // Far longer than the test waits: a stream that held an instance for the grace would fail it.
    SHUTDOWN_GRACE_MS: '60000',
  };
  [a, b] = await Promise.all([startGateway(env), startGateway(env)]);
});

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await postgres?.destroy();
  member?.closeAllConnections();
  await new Promise((resolve) => member?.close(resolve));
});

describe('a session of a virtual MCP server, two instances on one PostgreSQL', () => {
  it('begun on A continues on B; another caller, a forged id and an ended session are 404 on both', async () => {
    const onA = await benchClient(a.url);
    const id = onA.transport.sessionId as string;
    expect(id).toMatch(/^v1\./);
    expect(onA.transport.protocolVersion).toBe('2025-06-18');
    // The SDK client continues the session on B: no initialize there, its requests carry A's id.
    const onB = await benchClient(b.url, id);
    expect((await onB.client.listTools()).tools.map((t) => t.name)).toEqual(['t_create_issue']);
    const called = await onB.client.callTool({ name: 't_create_issue', arguments: {} });
    expect(called.content).toEqual([{ type: 'text', text: 'tracker/create_issue' }]);
    expect(await listWith(b.url, id)).toEqual({ status: 200, code: undefined });
    // Another caller's credential with that id, a forged id: 404 (Session not found) on B as on A.
    for (const url of [a.url, b.url]) {
      expect(await listWith(url, id, OTHER_KEY)).toEqual({ status: 404, code: -32001 });
      expect(await listWith(url, `v1.${id.split('.')[1]}.${'B'.repeat(43)}`)).toEqual({ status: 404, code: -32001 });
    }
    // Ended on A (DELETE): refused on A at once, and on B once A's NOTIFY arrives.
    await onA.transport.terminateSession();
    expect(await listWith(a.url, id)).toEqual({ status: 404, code: -32001 });
    await within(2_000, async () => (await listWith(b.url, id)).status === 404);
    expect(await listWith(b.url, id)).toEqual({ status: 404, code: -32001 });
    await onA.client.close();
    await onB.client.close();
  });

  it('ends a session’s GET stream as soon as its instance shuts down (the client opens it again elsewhere)', async () => {
    const initialize = await fetch(`${b.url}/mcp/bench`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${KEY}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'shutdown', version: '1' } },
      }),
    });
    await initialize.arrayBuffer();
    const stream = await fetch(`${b.url}/mcp/bench`, {
      headers: {
        authorization: `Bearer ${KEY}`,
        accept: 'text/event-stream',
        'mcp-session-id': initialize.headers.get('mcp-session-id') as string,
      },
    });
    expect(stream.status).toBe(200);
    const read = stream.text().catch((error: unknown) => `cut: ${String(error)}`);
    const exited = b.stop();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<string>(
      (resolve) => (timer = setTimeout(() => resolve('still open after 20 s'), 20_000)),
    );
    // Ended by the gateway (an empty, finished stream), well before the 60 s grace.
    expect(await Promise.race([read, deadline])).toBe('');
    expect(await Promise.race([exited, deadline])).toBe(0);
    clearTimeout(timer);
  });
});

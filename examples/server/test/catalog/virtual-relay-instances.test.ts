import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { startPostgres, type RunningPostgres } from '../../../../packages/catalog/test/postgres';
import { RELAY_NOTIFY_MAX_CHARS } from '../../src/mcp/virtual-relay';
import { startGateway, writeConfig, type RunningGateway } from '../support';
import { newAdminKey, newEncryptionKey } from './catalog-support';

// A member's request relayed to the caller during a call through a virtual MCP server (CONTRACT
// section 16), two gateway processes on one PostgreSQL: the call runs on A, the caller's answer
// reaches B, which passes it to A through NOTIFY (sealed); a forged answer is refused on B, and so is
// one too large for NOTIFY.

jest.setTimeout(120_000);

const KEY = 'gw-virtual-relay-instances-0001';
let member: Server;
let postgres: RunningPostgres;
let a: RunningGateway;
let b: RunningGateway;

beforeAll(async () => {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  member = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString();
    const body = text === '' ? undefined : (JSON.parse(text) as unknown);
    const id = req.headers['mcp-session-id'];
    const found = typeof id === 'string' ? sessions.get(id) : undefined;
    if (found !== undefined) return void found.handleRequest(req, res, body);
    const server = new McpServer({ name: 'asker', version: '1.0.0' });
    server.registerTool('confirm', { description: 'asks the user' }, async (extra) => {
      const answer = await server.server.elicitInput(
        { message: 'Proceed?', requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } } } },
        { relatedRequestId: extra.requestId },
      );
      return { content: [{ type: 'text', text: `elicited ${JSON.stringify(answer)}` }] };
    });
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sessionId) => void sessions.set(sessionId, transport),
    });
    transport.onclose = () => {
      if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
    };
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  });
  await new Promise<void>((resolve) => member.listen(0, '127.0.0.1', resolve));
  const memberUrl = `http://127.0.0.1:${(member.address() as AddressInfo).port}/mcp`;
  postgres = await startPostgres();
  const env = {
    DATABASE_URL: await postgres.createDatabase(),
    GATEWAY_CONFIG: writeConfig({
      auth: { apiKeys: [{ key: KEY, user: { user_id: 'u-relay' } }] },
      mcpServers: [{ slug: 'asker', url: memberUrl }],
      virtualServers: [{ slug: 'desk', members: [{ server: 'asker', prefix: 'a_' }] }],
    }),
    GATEWAY_ADMIN_KEY: newAdminKey(),
    GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
  };
  [a, b] = await Promise.all([startGateway(env), startGateway(env)]);
});

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await postgres?.destroy();
  member?.closeAllConnections();
  await new Promise((resolve) => member?.close(resolve));
});

/** Whether a POST body is a JSON-RPC answer (a response to a request the server sent). */
const isAnswer = (body: unknown) =>
  typeof body === 'string' && (JSON.parse(body) as { method?: string }).method === undefined;

describe('a relayed request of a call on A, answered on B (two instances on one PostgreSQL)', () => {
  it('passes the answer B receives to the member through A; a forged answer is refused on B', async () => {
    const answeredOn: string[] = [];
    let relayId: string | number | undefined;
    const client = new Client({ name: 'relay-instances', version: '1.0.0' }, { capabilities: { elicitation: {} } });
    client.setRequestHandler(ElicitRequestSchema, async (_request, extra) => {
      relayId = extra.requestId;
      // An answer posted to B for this session, as the client would post it: its status and error code.
      const answerOnB = async (id: unknown, result: object) => {
        const answer = await fetch(`${b.url}/mcp/desk`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${KEY}`,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            'mcp-session-id': transport.sessionId as string,
          },
          body: JSON.stringify({ jsonrpc: '2.0', id, result }),
        });
        return {
          status: answer.status,
          code: ((await answer.json()) as { error: { data: { code: string } } }).error.data.code,
        };
      };
      // Another session's answer (forged id of the same form) is refused on B: 404 relayed_request_unknown.
      const forged = String(relayId).replace(/.$/, (c) => (c === 'A' ? 'B' : 'A'));
      expect(await answerOnB(forged, { action: 'decline' })).toEqual({ status: 404, code: 'relayed_request_unknown' });
      // An answer too large to pass through NOTIFY (RELAY_NOTIFY_MAX_CHARS sealed) is refused on B,
      // 413 relay_answer_too_large, and the request still waits for its answer.
      const note = 'x'.repeat(RELAY_NOTIFY_MAX_CHARS);
      expect(await answerOnB(relayId, { action: 'accept', content: { note } })).toEqual({
        status: 413,
        code: 'relay_answer_too_large',
      });
      return { action: 'accept', content: { ok: true } };
    });
    const transport = new StreamableHTTPClientTransport(new URL(`${a.url}/mcp/desk`), {
      requestInit: { headers: { authorization: `Bearer ${KEY}` } },
      // Every request goes to A but the answers, which go to B (as a load balancer may send them).
      fetch: (url, init = {}) => {
        if ((init.method ?? 'GET') === 'GET') return Promise.resolve(new Response(null, { status: 405 }));
        if (isAnswer(init.body)) {
          answeredOn.push('B');
          return fetch(String(url).replace(a.url, b.url), init);
        }
        return fetch(url, init);
      },
    });
    await client.connect(transport);
    const result = await client.callTool({ name: 'a_confirm', arguments: {} });
    expect(result.content).toEqual([{ type: 'text', text: 'elicited {"action":"accept","content":{"ok":true}}' }]);
    expect(answeredOn).toEqual(['B']);
    expect(String(relayId)).toMatch(/^gwr1\./);
    await client.close();
  });
});

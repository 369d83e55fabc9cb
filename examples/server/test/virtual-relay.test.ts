import { randomUUID } from 'node:crypto';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ElicitResultSchema,
  McpError,
  type ClientCapabilities,
  type CreateMessageResult,
  type ElicitResult,
} from '@modelcontextprotocol/sdk/types.js';
import { resolveVirtualServer } from '@gw/mcp-gateway';
import { createGateway, type Gateway } from '../src/app';
import { parseConfig } from '../src/config/load';
import { virtualServersHandler } from '../src/mcp/virtual-servers';
import { within } from './catalog/catalog-support';
import { call2026 } from './mcp-2026/client';
import { createLogger } from '../src/observability/logger';

// Virtual MCP servers (CONTRACT section 16, issue #44 item 3): a member's elicitation and sampling
// requests during a call are passed to the caller on the call's stream when its session declared
// the capability, its answer (a separate POST) back to the member; refused clearly otherwise.

const KEY = 'gw-virtual-relay-key';
const OTHER_KEY = 'gw-virtual-relay-other';
const servers: Server[] = [];
let gateway: Gateway;
let gatewayUrl: string;
/** What the member's tools saw go wrong: each error's JSON-RPC code and `data.code`. */
const memberErrors: { tool: string; code?: number; dataCode?: string; message: string }[] = [];

async function listen(listener: RequestListener): Promise<string> {
  const server = createServer(listener);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Records a member tool's failure and makes it the tool's result (`error <code> <data.code>`). */
function failed(tool: string, error: unknown) {
  const e = error as { code?: number; data?: { code?: string }; message: string };
  memberErrors.push({ tool, code: e.code, dataCode: e.data?.code, message: e.message });
  return { content: [{ type: 'text' as const, text: `error ${e.code} ${e.data?.code ?? e.message}` }], isError: true };
}

/**
 * A session-based SDK MCP server whose tools ask the client: `confirm` (`elicitInput`, form),
 * `sample` (`createMessage`), and `ask_anyway` (`elicitation/create` sent without checking the
 * client's capabilities, as a member not built on the SDK may).
 */
/** The member's sessions open now. */
const memberSessions = new Map<string, StreamableHTTPServerTransport>();

async function askingMember(): Promise<string> {
  const sessions = memberSessions;
  return `${await listen(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString();
    const body = text === '' ? undefined : (JSON.parse(text) as unknown);
    const id = req.headers['mcp-session-id'];
    const found = typeof id === 'string' ? sessions.get(id) : undefined;
    if (found !== undefined) return void found.handleRequest(req, res, body);
    const server = new McpServer({ name: 'asker', version: '1.0.0' });
    // Each request goes on the call's own stream (relatedRequestId), as the transport's spec says it should.
    server.registerTool('confirm', { description: 'asks the user to confirm' }, async (extra) => {
      try {
        const answer = await server.server.elicitInput(
          {
            message: 'Delete the project?',
            requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
          },
          { relatedRequestId: extra.requestId },
        );
        return { content: [{ type: 'text', text: `elicited ${JSON.stringify(answer)}` }] };
      } catch (error) {
        return failed('confirm', error);
      }
    });
    server.registerTool('sample', { description: 'asks the model' }, async (extra) => {
      try {
        const answer = await server.server.createMessage(
          { messages: [{ role: 'user', content: { type: 'text', text: 'Say hello' } }], maxTokens: 20 },
          { relatedRequestId: extra.requestId },
        );
        return { content: [{ type: 'text', text: `sampled ${JSON.stringify(answer.content)} by ${answer.model}` }] };
      } catch (error) {
        return failed('sample', error);
      }
    });
    server.registerTool('ask_anyway', { description: 'asks without checking' }, async (extra) => {
      try {
        const answer = await extra.sendRequest(
          {
            method: 'elicitation/create',
            params: { mode: 'form', message: 'Sure?', requestedSchema: { type: 'object', properties: {} } },
          },
          ElicitResultSchema,
        );
        return { content: [{ type: 'text', text: `elicited ${JSON.stringify(answer)}` }] };
      } catch (error) {
        return failed('ask_anyway', error);
      }
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
  })}/mcp`;
}

beforeAll(async () => {
  const memberUrl = await askingMember();
  const config = parseConfig(
    {
      auth: {
        apiKeys: [
          { key: KEY, user: { user_id: 'u-relay' } },
          { key: OTHER_KEY, user: { user_id: 'u-relay-other' } },
        ],
      },
      // Policies: the member's answer POSTs (JSON-RPC responses) pass its endpoint's access check as its requests do.
      access: { mode: 'policies' },
      policies: [
        {
          slug: 'askers',
          subjects: { users: ['u-relay', 'u-relay-other'] },
          allow: { mcpServers: [{ server: 'asker' }] },
        },
      ],
      mcpServers: [{ slug: 'asker', url: memberUrl }],
      virtualServers: [{ slug: 'desk', members: [{ server: 'asker', prefix: 'a_' }] }],
    },
    {},
  );
  // No PUBLIC_BASE_URL: any loopback Host is the gateway's (the direct handler below is reached as 127.0.0.1).
  const address = await listen((req, res) => gateway.listener(req, res));
  gatewayUrl = address;
  gateway = createGateway({
    config,
    accessMode: 'policies',
    signingKey: undefined,
    jwks: { keys: [] },
    logger: createLogger('error', new Writable({ write: (_c, _e, done) => done() })),
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

interface Caller {
  client: Client;
  transport: StreamableHTTPClientTransport;
  /** The elicitation requests the caller received. */
  elicited: { message: string; id?: string | number }[];
  /** The sampling requests the caller received. */
  sampled: unknown[];
}

/**
 * An SDK client of `/mcp/desk` at `url` declaring `capabilities`, answering elicitation with
 * `elicit` and sampling with a fixed message; without its GET stream.
 */
async function caller(
  capabilities: ClientCapabilities,
  elicit: () => Promise<ElicitResult> | ElicitResult = () => ({ action: 'accept', content: { ok: true } }),
  options: { url?: string; key?: string; version?: string } = {},
): Promise<Caller> {
  const client = new Client({ name: 'relay-test', version: '1.0.0' }, { capabilities });
  const found: Caller = { client, transport: undefined as never, elicited: [], sampled: [] };
  if (capabilities.elicitation !== undefined)
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      found.elicited.push({ message: request.params.message });
      return elicit();
    });
  if (capabilities.sampling !== undefined)
    client.setRequestHandler(CreateMessageRequestSchema, async (request): Promise<CreateMessageResult> => {
      found.sampled.push(request.params.messages);
      return { role: 'assistant', content: { type: 'text', text: 'hello from the caller' }, model: 'caller-model' };
    });
  found.transport = new StreamableHTTPClientTransport(new URL(`${options.url ?? gatewayUrl}/mcp/desk`), {
    requestInit: { headers: { 'x-api-key': options.key ?? KEY } },
    fetch: (url, init = {}) => {
      if ((init.method ?? 'GET') === 'GET') return Promise.resolve(new Response(null, { status: 405 }));
      if (options.version !== undefined && typeof init.body === 'string') {
        const message = JSON.parse(init.body) as { method?: string; params?: { protocolVersion?: string } };
        if (message.method === 'initialize' && message.params !== undefined) {
          message.params.protocolVersion = options.version;
          init = { ...init, body: JSON.stringify(message) };
        }
      }
      return fetch(url, init);
    },
  });
  await client.connect(found.transport);
  return found;
}

const textOf = (result: unknown) => ((result as { content: { text: string }[] }).content[0]?.text ?? '') as string;

describe('a member’s requests during a call through a virtual MCP server', () => {
  it('passes elicitation to a caller that declared it, and the caller’s accept (or decline) back to the member', async () => {
    const accepting = await caller({ elicitation: {} });
    const accepted = await accepting.client.callTool({ name: 'a_confirm', arguments: {} });
    expect(accepting.elicited).toEqual([{ message: 'Delete the project?' }]);
    expect(textOf(accepted)).toBe('elicited {"action":"accept","content":{"ok":true}}');

    const declining = await caller({ elicitation: {} }, () => ({ action: 'decline' }));
    const declined = await declining.client.callTool({ name: 'a_confirm', arguments: {} });
    expect(textOf(declined)).toBe('elicited {"action":"decline"}');
    // A caller that answers with an error: the member gets that error as it is.
    const failing = await caller({ elicitation: {} }, () => {
      throw new McpError(-32050, 'the user closed the form', { code: 'closed' });
    });
    expect(textOf(await failing.client.callTool({ name: 'a_confirm', arguments: {} }))).toBe('error -32050 closed');
    await Promise.all([accepting.client.close(), declining.client.close(), failing.client.close()]);
  });

  it('passes sampling to a caller that declared it, and its message back to the member', async () => {
    const sampling = await caller({ sampling: {} });
    const result = await sampling.client.callTool({ name: 'a_sample', arguments: {} });
    expect(sampling.sampled).toEqual([[{ role: 'user', content: { type: 'text', text: 'Say hello' } }]]);
    expect(textOf(result)).toBe('sampled {"type":"text","text":"hello from the caller"} by caller-model');
    await sampling.client.close();
  });

  it('refuses clearly to a member when the caller cannot receive it, and the result reaches the caller as the member makes it', async () => {
    const plain = await caller({});
    // An SDK member sees no capability and does not ask.
    expect(textOf(await plain.client.callTool({ name: 'a_confirm', arguments: {} }))).toBe(
      'error undefined Client does not support form elicitation.',
    );
    // A member that asks anyway gets -32601 with data.code relay_unavailable.
    expect(textOf(await plain.client.callTool({ name: 'a_ask_anyway', arguments: {} }))).toBe(
      'error -32601 relay_unavailable',
    );
    // A 2025-03-26 session that declared elicitation: that revision has none.
    const old = await caller({ elicitation: {} }, undefined, { version: '2025-03-26' });
    expect(textOf(await old.client.callTool({ name: 'a_ask_anyway', arguments: {} }))).toBe(
      'error -32601 relay_unavailable',
    );
    expect(old.elicited).toEqual([]);
    // 2026-07-28 (stateless: no server request within a call; input_required rounds instead): refused alike.
    const modern = await call2026(`${gatewayUrl}/mcp/desk`, { 'x-api-key': KEY }, 'tools/call', {
      name: 'a_ask_anyway',
      arguments: {},
    });
    expect(modern.body.result).toMatchObject({
      resultType: 'complete',
      content: [{ type: 'text', text: 'error -32601 relay_unavailable' }],
    });
    await Promise.all([plain.client.close(), old.client.close()]);
  });
});

/** A raw POST of `body` to `/mcp/desk` as `key`, naming `sessionId` when given: its status and JSON-RPC error. */
async function post(body: unknown, sessionId: string | undefined, key = KEY) {
  const res = await fetch(`${gatewayUrl}/mcp/desk`, {
    method: 'POST',
    headers: {
      'x-api-key': key,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-06-18',
      ...(sessionId === undefined ? {} : { 'mcp-session-id': sessionId }),
    },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  const error =
    text === '' ? undefined : (JSON.parse(text) as { error?: { code: number; data?: { code?: string } } }).error;
  return { status: res.status, code: error?.code, dataCode: error?.data?.code };
}

describe('answers to relayed requests', () => {
  it('takes an answer only from the session the request went to: another session’s (or caller’s) is refused, nothing passed', async () => {
    let release!: (result: ElicitResult) => void;
    let relayId: string | number | undefined;
    const asked = new Promise<void>((resolve) => {
      void (async () => {
        const owner = await caller({ elicitation: {} });
        owner.client.setRequestHandler(ElicitRequestSchema, (request, extra) => {
          relayId = extra.requestId;
          resolve();
          return new Promise<ElicitResult>((answer) => (release = answer));
        });
        const result = owner.client.callTool({ name: 'a_confirm', arguments: {} });
        ownerCall = result.finally(() => owner.client.close());
      })();
    });
    let ownerCall!: Promise<unknown>;
    await asked;
    expect(typeof relayId).toBe('string');
    const forged = { jsonrpc: '2.0', id: relayId, result: { action: 'accept', content: { ok: false } } };
    // Another session of the same caller, and another caller's session.
    const sameCaller = await caller({ elicitation: {} });
    const otherCaller = await caller({ elicitation: {} }, undefined, { key: OTHER_KEY });
    expect(await post(forged, sameCaller.transport.sessionId)).toEqual({
      status: 404,
      code: -32600,
      dataCode: 'relayed_request_unknown',
    });
    expect(await post(forged, otherCaller.transport.sessionId, OTHER_KEY)).toEqual({
      status: 404,
      code: -32600,
      dataCode: 'relayed_request_unknown',
    });
    // A session id presented by another caller than its own is no session; no session id at all is refused.
    expect((await post(forged, sameCaller.transport.sessionId, OTHER_KEY)).status).toBe(404);
    expect(await post(forged, undefined)).toEqual({ status: 400, code: -32600, dataCode: 'relay_session_required' });
    // The request still waits for its own caller, whose answer is the one the member gets.
    release({ action: 'accept', content: { ok: true } });
    expect(textOf(await ownerCall)).toBe('elicited {"action":"accept","content":{"ok":true}}');
    // Answered once: the same answer again is refused.
    expect((await post(forged, sameCaller.transport.sessionId)).dataCode).toBe('relayed_request_unknown');
    await Promise.all([sameCaller.client.close(), otherCaller.client.close()]);
  });

  it('gives the member relay_timeout when the caller never answers: the call ends, nothing waits, the call’s member session ends', async () => {
    // The virtual server's handler with a 300 ms relay timeout, in front of the gateway's member endpoints.
    const logged: string[] = [];
    const handler = virtualServersHandler({
      servers: () =>
        new Map([['desk', resolveVirtualServer({ slug: 'desk', members: [{ server: 'asker', prefix: 'a_' }] })]]),
      selfUrl: () => gatewayUrl,
      logger: createLogger(
        'warn',
        new Writable({
          write: (chunk: Buffer, _e, done) => {
            logged.push(String(chunk));
            done();
          },
        }),
      ),
      onMemberUnavailable: () => undefined,
      relayTimeoutMs: 300,
    });
    const direct = await listen((req, res) => {
      req.url = (req.url ?? '/').replace(/^\/mcp/, '');
      handler(req, res, (error?: unknown) => {
        res.writeHead(error === undefined ? 404 : 500);
        res.end();
      });
    });
    let answer!: () => void;
    const silent = await caller(
      { elicitation: {} },
      () => new Promise<ElicitResult>((resolve) => (answer = () => resolve({ action: 'cancel' }))),
      { url: direct },
    );
    // The kept member client (of listing) is there already: count the member's sessions from now.
    await silent.client.listTools();
    const sessionsBefore = memberSessions.size;
    const started = Date.now();
    const result = await silent.client.callTool({ name: 'a_confirm', arguments: {} });
    expect(textOf(result)).toBe('error -32001 relay_timeout');
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(silent.elicited).toHaveLength(1);
    expect(handler.relayedRequests()).toBe(0);
    // The operator sees it: one warning naming the method (nothing of the request's content).
    const warnings = logged.filter((line) => line.includes('was not answered in time'));
    expect(warnings).toHaveLength(1);
    expect(JSON.parse(warnings[0] as string)).toMatchObject({ level: 40, method: 'elicitation/create' });
    expect(warnings[0]).not.toContain('Delete the project?');
    await within(5_000, async () => memberSessions.size === sessionsBefore);
    // The late answer is refused (nothing waits for it), and nothing is left waiting.
    answer();
    await silent.client.close();
    expect(handler.relayedRequests()).toBe(0);
    await handler.close();
  });
});

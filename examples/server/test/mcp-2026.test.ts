import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { startGateway, writeConfig, type RunningGateway } from './support';
import { adminClient, newAdminKey, newEncryptionKey } from './catalog/catalog-support';
import { allToolNames, mcpClient } from './access/access-support';
import { call2026, listen2026, type Mcp2026Answer } from './mcp-2026/client';
import { BOOK_TRIP_STATE, listen2026Server, type Mcp2026Server } from './mcp-2026/server';

jest.setTimeout(90_000);

const OPEN_KEY = 'gw-mcp2026-open-key-0001';
const SUPPORT_KEY = 'gw-mcp2026-support-key-0002';
const open = { 'x-gateway-api-key': OPEN_KEY };
const support = { 'x-gateway-api-key': SUPPORT_KEY };

let tools: Mcp2026Server;
let pinnedTools: Mcp2026Server;
let openGateway: RunningGateway;
let policyGateway: RunningGateway;
let admin: ReturnType<typeof adminClient>;

beforeAll(async () => {
  [tools, pinnedTools] = await Promise.all([listen2026Server(), listen2026Server()]);
  const adminKey = newAdminKey();
  // `only` with no header listed: what reaches the server is what the gateway always forwards.
  const mcpServers = [
    {
      slug: 'tools',
      url: tools.url,
      user_identity_forwarding: { method: 'claims_header' },
      forward_headers: { mode: 'only', headers: [] },
    },
  ];
  [openGateway, policyGateway] = await Promise.all([
    startGateway({
      GATEWAY_CONFIG: writeConfig({
        auth: { apiKeys: [{ key: OPEN_KEY, user: { user_id: 'u-open' } }] },
        mcpServers,
      }),
      GATEWAY_ADMIN_KEY: adminKey,
      GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
    }),
    startGateway({
      GATEWAY_CONFIG: writeConfig({
        access: { mode: 'policies' },
        auth: { apiKeys: [{ key: SUPPORT_KEY, user: { user_id: 'u-support', groups: ['support'] } }] },
        mcpServers,
        policies: [
          {
            slug: 'support-tools',
            subjects: { groups: ['support'] },
            allow: { mcpServers: [{ server: 'tools', tools: ['get_weather', 'book_trip'] }] },
          },
        ],
      }),
    }),
  ]);
  admin = adminClient(openGateway.url, adminKey);
  const created = await admin('POST', '/mcp-servers', { slug: 'pinned', url: pinnedTools.url, tool_pinning: true });
  expect(created.status).toBe(201);
});

afterAll(async () => {
  await Promise.all([openGateway?.stop(), policyGateway?.stop()]);
  await Promise.all([tools?.close(), pinnedTools?.close()]);
});

const endpoint = (gateway: RunningGateway, slug = 'tools') => `${gateway.url}/mcp/${slug}`;
const names = (answer: Mcp2026Answer) => (answer.body.result.tools as { name: string }[]).map((t) => t.name);

/** The verdicts of the 2025-11-25 exchange through the MCP SDK client: tool names, and each call's outcome. */
async function sdkVerdicts(client: Client, calls: string[]): Promise<{ tools: string[]; calls: unknown[] }> {
  const outcomes: unknown[] = [];
  for (const name of calls) {
    try {
      const result = await client.callTool({ name, arguments: { region: 'eu-west' } });
      outcomes.push({ content: result.content });
    } catch (error) {
      const e = error as { code?: number; data?: { code?: string } };
      outcomes.push({ error: e.code, code: e.data?.code });
    }
  }
  return { tools: await allToolNames(client), calls: outcomes };
}

/** The same verdicts from the 2026-07-28 exchange. */
async function verdicts2026(
  url: string,
  credentials: Record<string, string>,
  calls: string[],
): Promise<{ tools: string[]; calls: unknown[] }> {
  const list = await call2026(url, credentials, 'tools/list');
  const outcomes: unknown[] = [];
  for (const name of calls) {
    const answer = await call2026(
      url,
      credentials,
      'tools/call',
      { name, arguments: { region: 'eu-west' } },
      { tools: tools.tools },
    );
    const { result, error } = answer.body as {
      result?: { content: unknown };
      error?: { code: number; data?: { code?: string } };
    };
    outcomes.push(result ? { content: result.content } : { error: error?.code, code: error?.data?.code });
  }
  return { tools: names(list), calls: outcomes };
}

describe('MCP 2026-07-28 through the full gateway, open mode', () => {
  it('discovers the server statelessly: no initialize, no session, routing headers forwarded', async () => {
    const before = tools.received.length;
    const answer = await call2026(endpoint(openGateway), open, 'server/discover');
    expect(answer.status).toBe(200);
    expect(answer.body.result).toMatchObject({ resultType: 'complete', supportedVersions: ['2026-07-28'] });
    expect(answer.headers.get('mcp-session-id')).toBeNull();
    const seen = tools.received.slice(before);
    expect(seen).toHaveLength(1);
    expect(seen[0]?.mcpHeaders).toEqual({ 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'server/discover' });
    expect(seen[0]?.body?.method).toBe('server/discover');
  });

  it('lists tools with ttlMs and cacheScope, and calls one with Mcp-Name and Mcp-Param-* reaching the server', async () => {
    const list = await call2026(endpoint(openGateway), open, 'tools/list');
    expect(list.status).toBe(200);
    expect(names(list)).toEqual(['get_weather', 'book_trip', 'delete_everything']);
    expect(list.body.result).toMatchObject({ ttlMs: 30_000, cacheScope: 'public' });
    const before = tools.received.length;
    const call = await call2026(
      endpoint(openGateway),
      open,
      'tools/call',
      { name: 'get_weather', arguments: { region: 'Zürich Nord' } },
      { tools: tools.tools },
    );
    expect(call.body.result).toEqual({
      resultType: 'complete',
      content: [{ type: 'text', text: 'sunny in Zürich Nord' }],
    });
    expect(tools.received[before]?.mcpHeaders).toMatchObject({
      'mcp-method': 'tools/call',
      'mcp-name': 'get_weather',
      'mcp-param-region': `=?base64?${Buffer.from('Zürich Nord').toString('base64')}?=`,
    });
  });

  it('carries a multi round-trip call: input_required, then the retry with the input completes', async () => {
    const first = await call2026(endpoint(openGateway), open, 'tools/call', { name: 'book_trip', arguments: {} });
    expect(first.body.result).toMatchObject({
      resultType: 'input_required',
      inputRequests: { confirm: { method: 'elicitation/create' } },
      requestState: BOOK_TRIP_STATE,
    });
    const retry = await call2026(endpoint(openGateway), open, 'tools/call', {
      name: 'book_trip',
      arguments: {},
      inputResponses: { confirm: { action: 'accept', content: { ok: true } } },
      requestState: first.body.result.requestState,
    });
    expect(retry.body.id).not.toBe(first.body.id);
    expect(retry.body.result).toEqual({ resultType: 'complete', content: [{ type: 'text', text: 'trip booked' }] });
  });

  it('streams subscriptions/listen: acknowledged, then tools/list_changed, and the stream stays open', async () => {
    const stream = await listen2026(endpoint(openGateway), open);
    try {
      expect([stream.status, stream.contentType]).toEqual([200, 'text/event-stream']);
      await stream.next((e) => e.method === 'notifications/subscriptions/acknowledged');
      tools.toolsChanged();
      const changed = await stream.next((e) => e.method === 'notifications/tools/list_changed');
      expect(changed.params._meta['io.modelcontextprotocol/subscriptionId']).toEqual(expect.any(Number));
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(stream.ended).toBe(false);
      tools.toolsChanged();
      await stream.next(
        (e, i = stream.events.indexOf(e)) => i === 2 && e.method === 'notifications/tools/list_changed',
      );
    } finally {
      stream.close();
    }
    // Closing the client's stream ends the server's (cancellation).
    for (let i = 0; i < 50 && tools.openStreams > 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(tools.openStreams).toBe(0);
  });

  it("passes the server's 405 for GET and DELETE through", async () => {
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(endpoint(openGateway), { method, headers: { ...open, accept: 'text/event-stream' } });
      expect([method, res.status]).toEqual([method, 405]);
    }
  });

  it('gives the same verdicts as the 2025-11-25 exchange through the SDK client', async () => {
    const calls = ['get_weather', 'delete_everything'];
    const client = await mcpClient(openGateway.url, 'tools', OPEN_KEY);
    try {
      expect(await verdicts2026(endpoint(openGateway), open, calls)).toEqual(await sdkVerdicts(client, calls));
    } finally {
      await client.close();
    }
  });
});

describe('MCP 2026-07-28 through the full gateway, policies mode', () => {
  it('lists only the allowed tools and refuses a denied call itself, as for 2025-11-25', async () => {
    const before = tools.received.length;
    const seen = await verdicts2026(endpoint(policyGateway), support, ['get_weather', 'delete_everything']);
    expect(seen).toEqual({
      tools: ['get_weather', 'book_trip'],
      calls: [{ content: [{ type: 'text', text: 'sunny in eu-west' }] }, { error: -32602, code: 'access_denied' }],
    });
    expect(tools.received.slice(before).map((r) => r.body?.params?.name ?? r.body?.method)).toEqual([
      'tools/list',
      'get_weather',
    ]);
    const client = await mcpClient(policyGateway.url, 'tools', SUPPORT_KEY);
    try {
      expect(await sdkVerdicts(client, ['get_weather', 'delete_everything'])).toEqual(seen);
    } finally {
      await client.close();
    }
  });

  it('carries an allowed multi round-trip call and a listen stream', async () => {
    const first = await call2026(endpoint(policyGateway), support, 'tools/call', { name: 'book_trip', arguments: {} });
    expect(first.body.result.resultType).toBe('input_required');
    const retry = await call2026(endpoint(policyGateway), support, 'tools/call', {
      name: 'book_trip',
      arguments: {},
      inputResponses: { confirm: { action: 'accept', content: { ok: true } } },
      requestState: first.body.result.requestState,
    });
    expect(retry.body.result.content).toEqual([{ type: 'text', text: 'trip booked' }]);
    const stream = await listen2026(endpoint(policyGateway), support);
    try {
      await stream.next((e) => e.method === 'notifications/subscriptions/acknowledged');
      tools.toolsChanged();
      await stream.next((e) => e.method === 'notifications/tools/list_changed');
    } finally {
      stream.close();
    }
  });
});

describe('MCP 2026-07-28 through the full gateway, tool pinning', () => {
  it('holds a new tool (tool_pending_approval) until approved, as for 2025-11-25', async () => {
    const url = endpoint(openGateway, 'pinned');
    // First sight: every tool is recorded and held.
    expect(names(await call2026(url, open, 'tools/list'))).toEqual([]);
    const held = await admin('GET', '/mcp-servers/pinned/tools');
    const digest = (name: string) =>
      (held.body.data as { name: string; currentDigest: string }[]).find((t) => t.name === name)?.currentDigest;
    for (const name of ['get_weather', 'book_trip']) {
      expect((await admin('POST', `/mcp-servers/pinned/tools/${name}/approve`, { digest: digest(name) })).status).toBe(
        200,
      );
    }
    pinnedTools.tools.push({ name: 'new_tool', description: 'Appeared later.', inputSchema: { type: 'object' } });
    const before = pinnedTools.received.length;
    const seen = await verdicts2026(url, open, ['get_weather', 'new_tool']);
    expect(seen).toEqual({
      tools: ['get_weather', 'book_trip'],
      calls: [
        { content: [{ type: 'text', text: 'sunny in eu-west' }] },
        { error: -32602, code: 'tool_pending_approval' },
      ],
    });
    expect(pinnedTools.received.slice(before).some((r) => r.body?.params?.name === 'new_tool')).toBe(false);
    const client = await mcpClient(openGateway.url, 'pinned', OPEN_KEY);
    try {
      expect(await sdkVerdicts(client, ['get_weather', 'new_tool'])).toEqual(seen);
    } finally {
      await client.close();
    }
  });
});

describe('header/body agreement', () => {
  // CONTRACT section 12: where a gate applies, headers that disagree with the body are 400 -32020, never forwarded.
  it.each([
    ['Mcp-Name names an allowed tool, the body calls a denied one', 'get_weather', 'delete_everything'],
    ['Mcp-Name names a denied tool, the body calls an allowed one', 'delete_everything', 'get_weather'],
  ])('%s: 400 HeaderMismatch, not forwarded', async (_what, header, called) => {
    const before = tools.received.length;
    const answer = await call2026(
      endpoint(policyGateway),
      support,
      'tools/call',
      { name: called, arguments: { region: 'eu-west' } },
      { tools: tools.tools, headers: { 'mcp-name': header } },
    );
    expect([answer.status, answer.body?.error?.code]).toEqual([400, -32020]);
    expect(tools.received.length).toBe(before);
  });

  it('an Mcp-Method that is not the body method: 400 HeaderMismatch, not forwarded', async () => {
    const before = tools.received.length;
    const answer = await call2026(
      endpoint(policyGateway),
      support,
      'tools/call',
      { name: 'delete_everything', arguments: {} },
      { headers: { 'mcp-method': 'tools/list' } },
    );
    expect([answer.status, answer.body?.error?.code]).toEqual([400, -32020]);
    expect(tools.received.length).toBe(before);
  });

  it('a tools list filtered for one caller carries cacheScope "private"', async () => {
    const list = await call2026(endpoint(policyGateway), support, 'tools/list');
    expect(list.body.result).toMatchObject({ ttlMs: 30_000, cacheScope: 'private' });
  });
});

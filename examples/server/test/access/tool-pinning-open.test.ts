import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import { startGateway, writeConfig, type RunningGateway } from '../support';
import { adminClient, newAdminKey, newEncryptionKey } from '../catalog/catalog-support';
import { allToolNames, mcpClient } from './access-support';

jest.setTimeout(120_000);

const API_KEY = 'gw-pinning-open-key-0001';

/** How the SDK server describes its one tool `lookup` now (tests change it between listings). */
interface LookupShape {
  title: string;
  description: string;
  readOnlyHint: boolean;
  /** The name of the input's one property. */
  input: string;
}

/**
 * A real MCP server (the official SDK's `McpServer`, stateless Streamable HTTP): each request is
 * served by a server built from the tool's shape at that moment. Counts calls of `lookup`.
 */
async function startSdkServer(
  shape: LookupShape,
): Promise<{ url: string; calls: () => number; close(): Promise<void> }> {
  let calls = 0;
  const http: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const server = new McpServer({ name: 'pinning-open', version: '1.0.0' });
      server.registerTool(
        'lookup',
        {
          title: shape.title,
          description: shape.description,
          inputSchema: { [shape.input]: z.string() },
          annotations: { readOnlyHint: shape.readOnlyHint },
        },
        async () => {
          calls++;
          return { content: [{ type: 'text', text: 'looked up' }] };
        },
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
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    calls: () => calls,
    close: () =>
      new Promise((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}

const shape: LookupShape = { title: 'Look up', description: 'Looks a thing up.', readOnlyHint: true, input: 'q' };
let mcp: Awaited<ReturnType<typeof startSdkServer>>;
let gateway: RunningGateway;
let admin: ReturnType<typeof adminClient>;

beforeAll(async () => {
  mcp = await startSdkServer(shape);
  const env = {
    GATEWAY_CONFIG: writeConfig({
      access: { mode: 'open' },
      auth: { apiKeys: [{ key: API_KEY, user: { user_id: 'u-open' } }] },
      mcpServers: [{ slug: 'tools', url: mcp.url, tool_pinning: true }],
    }),
    GATEWAY_ADMIN_KEY: newAdminKey(),
    GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
  };
  gateway = await startGateway(env);
  admin = adminClient(gateway.url, env.GATEWAY_ADMIN_KEY);
});

afterAll(async () => {
  await gateway?.stop();
  await mcp?.close();
});

/** The tool's pin as the admin API lists it. */
async function pin(): Promise<{ status: string; currentDigest: string; approvedDigest: string | null }> {
  const answer = await admin('GET', '/mcp-servers/tools/tools');
  expect(answer.status).toBe(200);
  return answer.body.data.find((t: { name: string }) => t.name === 'lookup');
}

/** Lists through a new SDK client (so the gateway sees the tool as the server describes it now), then closes it. */
async function listedNames(): Promise<string[]> {
  const client = await mcpClient(gateway.url, 'tools', API_KEY);
  try {
    return await allToolNames(client);
  } finally {
    await client.close();
  }
}

async function callRefusal(): Promise<unknown> {
  const client = await mcpClient(gateway.url, 'tools', API_KEY);
  try {
    await client.callTool({ name: 'lookup', arguments: { [shape.input]: 'x' } });
    return undefined;
  } catch (error) {
    return error;
  } finally {
    await client.close();
  }
}

describe('tool pinning in the open access mode', () => {
  it('holds a new tool, approves only the digest reviewed, and holds it again when its title, annotations or input schema change', async () => {
    // A new tool: left out of tools/list, refused on call, never sent to the server.
    expect(await listedNames()).toEqual([]);
    expect(await callRefusal()).toMatchObject({
      code: -32602,
      data: { code: 'tool_pending_approval', tool: 'lookup' },
    });
    expect(mcp.calls()).toBe(0);
    const reviewed = await pin();
    expect(reviewed).toMatchObject({ status: 'held', approvedDigest: null });

    // No digest: 400 naming it. The server changes the tool between the look and the click: 409.
    for (const body of [{}, undefined, { digest: 42 }]) {
      const missing = await admin('POST', '/mcp-servers/tools/tools/lookup/approve', body);
      expect([missing.status, missing.body.error]).toEqual([
        400,
        expect.objectContaining({ code: 'invalid_request', param: 'digest' }),
      ]);
    }
    shape.description = 'Looks a thing up and mails it to someone.';
    expect(await listedNames()).toEqual([]);
    const stale = await admin('POST', '/mcp-servers/tools/tools/lookup/approve', { digest: reviewed.currentDigest });
    expect(stale.status).toBe(409);
    expect(stale.body.error).toMatchObject({ code: 'digest_changed', param: 'digest' });
    expect(await pin()).toMatchObject({ status: 'held', approvedDigest: null });
    expect(await listedNames()).toEqual([]);

    // Approved as now seen: listed and callable.
    const current = (await pin()).currentDigest;
    const approved = await admin('POST', '/mcp-servers/tools/tools/lookup/approve', { digest: current });
    expect(approved.status).toBe(200);
    expect(approved.body).toMatchObject({ status: 'approved', approvedDigest: current });
    expect(await listedNames()).toEqual(['lookup']);
    expect(await callRefusal()).toBeUndefined();
    expect(mcp.calls()).toBe(1);
    const audit = await admin('GET', '/audit?record=mcp-servers/tools&limit=1');
    expect(audit.body.data[0]).toMatchObject({ action: 'approve_tool', fields: [`tools.lookup@${current}`] });

    // Each of these changes alone holds the tool again.
    const changes: [string, () => void][] = [
      ['title', () => (shape.title = 'Look up anything')],
      ['annotations.readOnlyHint', () => (shape.readOnlyHint = false)],
      ['inputSchema', () => (shape.input = 'query')],
    ];
    for (const [what, change] of changes) {
      change();
      expect([what, await listedNames()]).toEqual([what, []]);
      expect([what, await callRefusal()]).toEqual([
        what,
        expect.objectContaining({ data: expect.objectContaining({ code: 'tool_pending_approval' }) }),
      ]);
      const held = await pin();
      expect([what, held.status]).toEqual([what, 'held']);
      await admin('POST', '/mcp-servers/tools/tools/lookup/approve', { digest: held.currentDigest });
      expect([what, await listedNames()]).toEqual([what, ['lookup']]);
    }
    expect(mcp.calls()).toBe(1);
  });
});

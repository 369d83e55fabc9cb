import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

/** One tool of the MCP double. */
export interface DoubleTool {
  name: string;
  description: string;
}

/**
 * A real MCP server speaking JSON-RPC over Streamable HTTP, stateless: `/json/<name>` answers with
 * JSON, `/sse/<name>` with an event stream. `tools/list` is paged, two tools a page. It counts
 * every `tools/call` by tool name.
 */
export interface McpToolDouble {
  url: string;
  /** The tools of each server name (change them to publish a new description). */
  tools: Map<string, DoubleTool[]>;
  /** `tools/call` requests received, by tool name. */
  calls: Map<string, number>;
  close(): Promise<void>;
}

const PAGE = 2;

export async function startMcpToolDouble(): Promise<McpToolDouble> {
  const tools = new Map<string, DoubleTool[]>();
  const calls = new Map<string, number>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const [, mode, name] = (req.url ?? '').split('/');
    if (req.method !== 'POST') {
      res.writeHead(405).end();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const message = JSON.parse(Buffer.concat(chunks).toString()) as {
        id?: number | string;
        method: string;
        params?: { name?: string; cursor?: string; protocolVersion?: string };
      };
      if (message.id === undefined) {
        res.writeHead(202).end();
        return;
      }
      let result: unknown;
      if (message.method === 'initialize') {
        result = {
          protocolVersion: message.params?.protocolVersion ?? '2025-06-18',
          capabilities: { tools: { listChanged: false } },
          serverInfo: { name: `double-${name}`, version: '1.0.0' },
        };
      } else if (message.method === 'tools/list') {
        const all = tools.get(name as string) ?? [];
        const start = Number(message.params?.cursor ?? 0);
        const page = all.slice(start, start + PAGE).map((t) => ({
          name: t.name,
          description: t.description,
          inputSchema: { type: 'object', properties: { q: { type: 'string' } } },
        }));
        result = start + PAGE < all.length ? { tools: page, nextCursor: String(start + PAGE) } : { tools: page };
      } else if (message.method === 'tools/call') {
        const tool = String(message.params?.name);
        calls.set(tool, (calls.get(tool) ?? 0) + 1);
        result = { content: [{ type: 'text', text: `called ${tool}` }] };
      } else {
        result = {};
      }
      const answer = JSON.stringify({ jsonrpc: '2.0', id: message.id, result });
      if (mode === 'sse') {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        // A progress notification first, then the answer, in separate writes.
        res.write(
          `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"working"}}\n\n`,
        );
        setTimeout(() => res.end(`event: message\nid: 1\ndata: ${answer}\n\n`), 10);
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(answer);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    tools,
    calls,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The real MCP SDK client, connected through the gateway with an API key. */
export async function mcpClient(gateway: string, slug: string, apiKey: string): Promise<Client> {
  const client = new Client({ name: 'access-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${gateway}/mcp/${slug}`), {
      requestInit: { headers: { 'x-gateway-api-key': apiKey } },
    }),
  );
  return client;
}

/** Every tool name, page after page, as the SDK client lists them. */
export async function allToolNames(client: Client): Promise<string[]> {
  const names: string[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 20; page++) {
    const answer = await client.listTools(cursor === undefined ? {} : { cursor });
    names.push(...answer.tools.map((t) => t.name));
    cursor = answer.nextCursor;
    if (cursor === undefined) break;
  }
  return names;
}

/** A real HTTP server standing in for a Bedrock agent runtime: answers every request, counts them. */
export async function startBedrockDouble(): Promise<{ url: string; requests: string[]; close(): Promise<void> }> {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      requests.push(String(req.url));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ retrievalResults: [{ content: { text: 'chunk' } }] }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { createMcpExpressApp } from '@modelcontextprotocol/sdk/server/express.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

export interface Listening {
  url: string;
  close(): Promise<void>;
}

function listening(server: Server, path: string): Listening {
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${path}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * An MCP server of the official TypeScript SDK, stateless Streamable HTTP at `/mcp`, with the
 * SDK's own DNS-rebinding protection (`createMcpExpressApp` on 127.0.0.1 accepts only loopback
 * `Host` headers): one tool and logging.
 */
export async function startSdkServer(): Promise<Listening> {
  const app = createMcpExpressApp({ host: '127.0.0.1' });
  app.post('/mcp', async (req, res) => {
    const server = new McpServer({ name: 'gateway-conformance', version: '1.0.0' }, { capabilities: { logging: {} } });
    server.registerTool(
      'add',
      { description: 'Adds two numbers.', inputSchema: { a: z.number(), b: z.number() } },
      async ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }] }),
    );
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  app.all('/mcp', (_req, res) => {
    res.status(405).set('allow', 'POST').end();
  });
  const server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return listening(server, '/mcp');
}

/**
 * A client-side hop that adds the caller's credentials to every request and sends it on to
 * `target` (the gateway) with everything else as received, `Host` and `Origin` included: the
 * conformance suite's client sends no credentials of its own.
 */
export async function startCredentialHop(target: string, credentials: Record<string, string>): Promise<Listening> {
  const upstream = new URL(target);
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const headers: string[] = [];
    for (let i = 0; i < req.rawHeaders.length; i += 2) {
      const name = req.rawHeaders[i] as string;
      if (name.toLowerCase() === 'connection') continue;
      headers.push(name, req.rawHeaders[i + 1] as string);
    }
    for (const [name, value] of Object.entries(credentials)) headers.push(name, value);
    const forward = request({
      host: upstream.hostname,
      port: upstream.port,
      method: req.method,
      path: `${upstream.pathname}${req.url === '/' ? '' : (req.url ?? '')}`,
      headers,
      setHost: false,
    });
    forward.once('response', (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    forward.once('error', () => res.destroy());
    res.once('close', () => forward.destroy());
    req.pipe(forward);
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return listening(server, '/');
}

import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type * as Express from 'express';
import type * as McpServerModule from '@modelcontextprotocol/sdk/server/mcp.js';
import type * as StreamableHttpModule from '@modelcontextprotocol/sdk/server/streamableHttp.js';

/** What the demo `whoami` tool reports: the identity headers it received, as received. */
export interface WhoAmI {
  claims: unknown;
  jwt: string | null;
  authorization: string | null;
}

/**
 * The demo server's Express app. Built with the first request the demo server gets: the MCP SDK's
 * server side (with ajv and zod) is about 90 ms of CPU, which a start of the development default
 * that never calls the demo tool does not spend.
 */
function demoApp(): RequestListener {
  /* eslint-disable @typescript-eslint/no-require-imports -- loaded with the first request */
  const express = require('express') as typeof Express.default;
  const { McpServer } = require('@modelcontextprotocol/sdk/server/mcp.js') as typeof McpServerModule;
  const { StreamableHTTPServerTransport } =
    require('@modelcontextprotocol/sdk/server/streamableHttp.js') as typeof StreamableHttpModule;
  /* eslint-enable @typescript-eslint/no-require-imports */
  const app = express();
  app.use(express.json());
  app.all('/mcp', async (req, res) => {
    const server = new McpServer({ name: 'gateway-demo', version: '1.0.0' });
    server.registerTool(
      'whoami',
      { description: 'Shows the identity the gateway forwarded to this server' },
      async () => {
        const claims = req.headers['x-user-claims'];
        const report: WhoAmI = {
          claims: typeof claims === 'string' ? JSON.parse(claims) : null,
          jwt: typeof req.headers['x-user-jwt'] === 'string' ? req.headers['x-user-jwt'] : null,
          authorization: req.headers.authorization ? 'Bearer <identity-provider token>' : null,
        };
        return { content: [{ type: 'text', text: JSON.stringify(report) }] };
      },
    );
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  return app;
}

/**
 * The embedded demo MCP server: one `whoami` tool that returns the identity headers it received,
 * so a newcomer sees each forwarding method at work. Stateless Streamable HTTP on 127.0.0.1. It
 * listens at once; its app (and the MCP SDK) is built with its first request.
 */
export async function startDemoMcpServer(): Promise<{ url: string; close: () => Promise<void> }> {
  let app: RequestListener | undefined;
  const server: Server = createServer((req, res) => (app ??= demoApp())(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

import { startGateway } from '../support';
import { MemoryOAuthProvider, freePort, signInAndConsent } from './oauth-support';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';

jest.setTimeout(90_000);

/** `pnpm start` with no config file: MCP clients sign in at the gateway with the demo API key. */
describe('the development default turns OAuth on with API-key sign-in', () => {
  it('lets the MCP SDK client sign in with the demo API key and call the demo server', async () => {
    const port = await freePort();
    const gateway = await startGateway({ PORT: String(port) });
    try {
      const base = `http://127.0.0.1:${port}`;
      const metadata = (await (await fetch(`${base}/.well-known/oauth-authorization-server`)).json()) as {
        issuer: string;
      };
      expect(metadata.issuer).toBe(base);
      const provider = new MemoryOAuthProvider('http://127.0.0.1:7/dev-callback');
      const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp/demo-claims`), {
        authProvider: provider,
      });
      await expect(new Client({ name: 'dev', version: '1' }).connect(transport)).rejects.toThrow(UnauthorizedError);
      const run = await signInAndConsent(provider.authorizationUrl as URL, 'gw-demo-key-not-a-secret');
      await transport.finishAuth(run.location?.searchParams.get('code') as string);
      const client = new Client({ name: 'dev', version: '1' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${base}/mcp/demo-claims`), { authProvider: provider }),
      );
      const tools = await client.listTools();
      expect(tools.tools.length).toBeGreaterThan(0);
      await client.close();
    } finally {
      await gateway.stop();
    }
  });
});

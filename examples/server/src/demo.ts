import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { GATEWAY_TOKEN_ISSUER, RemoteKeySet, verifyToken } from '@gw/jwks';
import { startDemoMcpServer, type WhoAmI } from './demo/demo-mcp-server';
import { DEMO_API_KEY, embeddedDefault } from './demo/embedded-default';
import { createGateway } from './app';
import { loadSigningKey } from '@gw/jwks';
import { createLogger } from './observability/logger';

async function whoami(url: string, headers: Record<string, string>): Promise<WhoAmI> {
  const client = new Client({ name: 'gateway-demo', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  const result = await client.callTool({ name: 'whoami', arguments: {} });
  await client.close();
  const [first] = result.content as { text: string }[];
  return JSON.parse(first?.text ?? '{}') as WhoAmI;
}

/**
 * `pnpm demo`: starts the gateway on its embedded default, calls the demo MCP server through it
 * with each forwarding method using the MCP SDK client, verifies the signed token against the
 * gateway's JWKS, and prints a short report. Exits non-zero if any step fails.
 */
export async function runDemo(
  print: (line: string) => void = (line) => process.stdout.write(`${line}\n`),
): Promise<boolean> {
  const demo = await startDemoMcpServer();
  const defaults = embeddedDefault(demo.url, {});
  const keys = loadSigningKey({ production: false, jwtHeaderInUse: true });
  // No catalog database here, so no OAuth sign-in: the demo calls with the API key and a token.
  const { app } = createGateway({
    config: { ...defaults.config, oauth: undefined },
    signingKey: keys.key,
    jwks: keys.jwks,
    logger: createLogger('error'),
    identityProviderKeys: defaults.demoIdentityProviderKeys,
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  let ok = true;
  const step = async (label: string, run: () => Promise<string>) => {
    try {
      print(`  ✔ ${label}: ${await run()}`);
    } catch (error) {
      ok = false;
      print(`  ✘ ${label}: ${(error as Error).message}`);
    }
  };
  print(`Gateway on ${base} (embedded development default), demo MCP server behind it.\n`);
  await step('claims_header  /mcp/demo-claims', async () => {
    const seen = await whoami(`${base}/mcp/demo-claims`, { 'x-gateway-api-key': DEMO_API_KEY });
    if (!seen.claims) throw new Error('the server received no X-User-Claims');
    return `server saw X-User-Claims ${JSON.stringify(seen.claims)}`;
  });
  await step('jwt_header     /mcp/demo-jwt', async () => {
    const seen = await whoami(`${base}/mcp/demo-jwt`, { 'x-gateway-api-key': DEMO_API_KEY });
    if (!seen.jwt) throw new Error('the server received no X-User-JWT');
    const { payload, header } = await verifyToken(seen.jwt, {
      keys: new RemoteKeySet({ jwksUri: `${base}/.well-known/jwks.json` }),
      issuer: GATEWAY_TOKEN_ISSUER,
      audience: demo.url,
    });
    return `X-User-JWT verified against ${base}/.well-known/jwks.json (kid ${String(header.kid).slice(0, 8)}…, sub ${String(payload.sub)}, expires in ${Number(payload.exp) - Number(payload.iat)} s)`;
  });
  await step('bearer         /mcp/demo-bearer', async () => {
    const seen = await whoami(`${base}/mcp/demo-bearer`, { authorization: `Bearer ${defaults.mintDemoToken()}` });
    if (!seen.authorization) throw new Error('the server received no Authorization header');
    return "server saw the caller's own identity-provider token in Authorization";
  });
  await step('spoofing       /mcp/demo-claims', async () => {
    const seen = await whoami(`${base}/mcp/demo-claims`, {
      'x-gateway-api-key': DEMO_API_KEY,
      'x-user-claims': '{"sub":"admin"}',
    });
    if ((seen.claims as { sub?: string } | null)?.sub !== 'demo-user')
      throw new Error('a client-sent X-User-Claims got through');
    return 'a client-sent X-User-Claims {"sub":"admin"} was replaced by the real identity';
  });
  print(ok ? '\nAll forwarding methods work.' : '\nSome steps failed.');
  await new Promise((resolve) => {
    server.closeAllConnections();
    server.close(resolve);
  });
  await demo.close();
  return ok;
}

if (require.main === module) {
  runDemo().then(
    (ok) => process.exit(ok ? 0 : 1),
    (error: unknown) => {
      process.stderr.write(`demo: ${(error as Error).message}\n`);
      process.exit(1);
    },
  );
}

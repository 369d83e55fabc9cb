import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import * as jose from 'jose';
import { alice, identityProvider, mcpUpstream, setup, type Listening } from './support';

let upstream: Listening;
let idp: Awaited<ReturnType<typeof identityProvider>>;
let gateway: Awaited<ReturnType<typeof setup>>;

beforeAll(async () => {
  upstream = await mcpUpstream();
  idp = await identityProvider();
  const url = `${upstream.url}/mcp`;
  gateway = await setup({
    apiKeys: [alice],
    jwtValidation: { jwksUri: idp.jwksUri, issuer: idp.issuer, audience: 'gateway' },
    mcpServers: [
      { slug: 'claims', url, user_identity_forwarding: { method: 'claims_header' } },
      { slug: 'bearer', url, user_identity_forwarding: { method: 'bearer' } },
      { slug: 'signed', url, user_identity_forwarding: { method: 'jwt_header' } },
    ],
  });
});

afterAll(async () => {
  await gateway.close();
  await upstream.close();
  await idp.close();
});

async function connect(slug: string, headers: Record<string, string>): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${gateway.url}/mcp/${slug}`), {
    requestInit: { headers },
  });
  const client = new Client({ name: 'gateway-test', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

async function whoami(client: Client): Promise<Record<string, string | null>> {
  const result = await client.callTool({ name: 'whoami', arguments: {} });
  const [first] = result.content as { type: string; text: string }[];
  return JSON.parse(first?.text ?? '{}') as Record<string, string | null>;
}

async function exercise(client: Client) {
  const tools = await client.listTools();
  expect(tools.tools.map((t) => t.name).sort()).toEqual(['slow', 'whoami']);
  const progress: number[] = [];
  const slow = await client.callTool({ name: 'slow', arguments: {} }, undefined, {
    onprogress: (p) => progress.push(p.progress),
  });
  expect(progress).toEqual([1, 2, 3]);
  expect(slow.content).toEqual([{ type: 'text', text: 'done' }]);
  return whoami(client);
}

describe('the MCP SDK client through the gateway', () => {
  it('claims_header: initialize, list tools, progress, and the claims the server received', async () => {
    const client = await connect('claims', { 'x-gateway-api-key': alice.key as string });
    expect(client.getServerVersion()).toEqual({ name: 'test-tools', version: '1.0.0' });
    const identity = await exercise(client);
    expect(JSON.parse(identity.claims as string)).toEqual({
      sub: 'u_alice',
      email: 'alice@example.com',
      username: 'alice',
      user_id: 'u_alice',
      workspace_id: 'ws_1',
      organisation_id: 'org_1',
    });
    expect(identity.apiKey).toBeNull();
    expect(identity.jwt).toBeNull();
    await client.close();
  });

  it('bearer: the identity-provider token arrives unchanged', async () => {
    const token = await idp.mint({ sub: 'carol', email: 'carol@example.com' });
    const client = await connect('bearer', { authorization: `Bearer ${token}` });
    const identity = await exercise(client);
    expect(identity.authorization).toBe(`Bearer ${token}`);
    expect(identity.claims).toBeNull();
    await client.close();
  });

  it('jwt_header: a token signed by the gateway that jose verifies against its JWKS', async () => {
    const client = await connect('signed', { authorization: `Bearer ${alice.key}` });
    const identity = await exercise(client);
    expect(identity.authorization).toBeNull();
    const { payload, protectedHeader } = await jose.jwtVerify(
      identity.jwt as string,
      jose.createRemoteJWKSet(new URL(gateway.jwksUri)),
      { issuer: 'gateway-mcp-gateway', audience: `${upstream.url}/mcp` },
    );
    expect(protectedHeader.kid).toBe(gateway.signingKey.kid);
    expect(payload).toMatchObject({ sub: 'u_alice', email: 'alice@example.com' });
    await client.close();
  });

  it('refuses an MCP client without credentials with 401 and a resource_metadata challenge', async () => {
    const response = await fetch(`${gateway.url}/mcp/claims`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe(
      `Bearer resource_metadata="${gateway.url}/.well-known/oauth-protected-resource/mcp/claims"`,
    );
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('missing_credentials');
  });
});

import { randomBytes } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startGateway, writeConfig, type RunningGateway } from '../support';
import { startHostedAuthorizationServer, startHostedMcpServer } from './upstream-support';

jest.setTimeout(90_000);

const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const API_KEY = 'gw-exchange-api-key-00001';
const CLIENT_SECRET = `exchange-secret-${randomBytes(8).toString('hex')}`;

/**
 * `upstream_auth.type: "token_exchange"` (CONTRACT section 15): an internal MCP server trusts the
 * company's identity provider (a real oidc-provider) but takes only tokens minted for itself. The
 * gateway exchanges the caller's token there (RFC 8693) and sends the result, never the caller's.
 */
describe('token exchange at the identity provider for an MCP server of its own audience', () => {
  let hosted: Awaited<ReturnType<typeof startHostedMcpServer>>;
  let idp: Awaited<ReturnType<typeof startHostedAuthorizationServer>>;
  let gateway: RunningGateway;

  beforeAll(async () => {
    hosted = await startHostedMcpServer();
    idp = await startHostedAuthorizationServer({
      resource: hosted.resource,
      clients: [
        {
          client_id: 'gw-exchange',
          client_secret: CLIENT_SECRET,
          grant_types: [TOKEN_EXCHANGE],
          response_types: [],
          redirect_uris: [],
        },
      ],
    });
    hosted.trust(idp.issuer, `${idp.issuer}/jwks`);
    gateway = await startGateway({
      GATEWAY_CONFIG: writeConfig({
        auth: {
          apiKeys: [{ key: API_KEY, user: { user_id: 'key-user' } }],
          jwt_validation: { issuer: idp.issuer, jwksUri: `${idp.issuer}/jwks`, audience: 'gateway' },
        },
        mcpServers: [
          {
            slug: 'wiki',
            url: hosted.resource,
            upstream_auth: {
              type: 'token_exchange',
              client: { client_id: 'gw-exchange', client_secret: '${EXCHANGE_SECRET}' },
            },
          },
        ],
      }),
      EXCHANGE_SECRET: CLIENT_SECRET,
    });
  });

  afterAll(async () => {
    await gateway?.stop();
    await Promise.all([hosted?.close(), idp?.stop()]);
  });

  async function whoami(token: string): Promise<string> {
    const client = new Client({ name: 'exchange-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${gateway.url}/mcp/wiki`), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    );
    try {
      const result = (await client.callTool({ name: 'whoami', arguments: {} })) as { content: { text: string }[] };
      return (JSON.parse(result.content[0]?.text as string) as { sub: string }).sub;
    } finally {
      await client.close();
    }
  }

  const post = (headers: Record<string, string>, body: unknown) =>
    fetch(`${gateway.url}/mcp/wiki`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      body: JSON.stringify(body),
    });
  const initialize = {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
  };

  it("sends the server a token with its own audience, minted from the caller's, never the caller's token; cached per caller token", async () => {
    const token = await idp.mint('alice', 'gateway');
    expect(await whoami(token)).toBe('alice');
    const seen = hosted.seen.filter((s) => s.sub !== undefined);
    expect(seen.length).toBeGreaterThan(0);
    for (const request of seen) {
      expect(request.audience).toBe(hosted.resource);
      expect(request.authorization).not.toContain(token);
    }
    const exchanges = (await idp.stats()).token[TOKEN_EXCHANGE];
    expect(exchanges).toBe(1);
    expect(await whoami(token)).toBe('alice');
    expect((await idp.stats()).token[TOKEN_EXCHANGE]).toBe(exchanges);
  });

  it('refuses an API-key caller with 401 identity_token_required, and sends nothing', async () => {
    const before = hosted.seen.length;
    const answer = await post({ 'x-gateway-api-key': API_KEY }, initialize);
    expect(answer.status).toBe(401);
    expect(((await answer.json()) as { error: { code: string } }).error.code).toBe('identity_token_required');
    expect(hosted.seen.length).toBe(before);
  });

  it("answers the provider's refusal as token_exchange_failed with its OAuth error code, never a token", async () => {
    const token = await idp.mint('mallory', 'gateway');
    await idp.disable('mallory');
    const answer = await post({ authorization: `Bearer ${token}` }, initialize);
    expect(answer.status).toBe(200);
    const text = await answer.text();
    const body = JSON.parse(text) as { id: number; error: { data: { code: string; error: string } } };
    expect(body.id).toBe(1);
    expect(body.error.data).toEqual({ code: 'token_exchange_failed', error: 'invalid_grant' });
    expect(text).not.toContain(token);
    expect(text).not.toContain(CLIENT_SECRET);
    const stream = await fetch(`${gateway.url}/mcp/wiki`, {
      headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' },
    });
    expect(stream.status).toBe(403);
    expect(((await stream.json()) as { error: { code: string } }).error.code).toBe('token_exchange_failed');
    expect(gateway.logs.join('\n')).not.toContain(CLIENT_SECRET);
  });
});

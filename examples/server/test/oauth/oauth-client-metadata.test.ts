import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { rsaPem, startGateway, writeConfig, type RunningGateway } from '../support';
import { newAdminKey } from '../catalog/catalog-support';
import {
  MemoryOAuthProvider,
  authorizeUrl,
  freePort,
  pkcePair,
  signInAndConsent,
  startVerifyingMcpServer,
} from './oauth-support';

jest.setTimeout(60_000);

const USER_KEY = 'gw-cimd-user-key-0001';
const REDIRECT_URI = 'http://127.0.0.1:7/cimd-callback';

/** A web server on 127.0.0.1 answering each path with `answer`, recording the paths asked for. */
async function startDocumentServer(
  answer: (path: string, origin: string) => { status: number; headers?: Record<string, string>; body?: string },
): Promise<{ origin: string; paths: string[]; close(): Promise<void> }> {
  const paths: string[] = [];
  let origin = '';
  const server: Server = createHttpServer((req, res) => {
    paths.push(req.url ?? '');
    const { status, headers, body } = answer(req.url ?? '', origin);
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(body ?? '');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    paths,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const documentOf = (clientId: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    client_id: clientId,
    client_name: 'Metadata document client',
    redirect_uris: [REDIRECT_URI],
    token_endpoint_auth_method: 'none',
    ...extra,
  });

/**
 * Client ID metadata documents end to end (CONTRACT section 11): a client whose `client_id` is
 * the URL of its document on an origin listed in `oauth.allowedClientHosts` signs in, gets a token
 * and calls a tool through the MCP SDK client; each document the gateway must not trust is refused
 * on the gateway's own error page, never by a redirect to the client.
 */
describe('client ID metadata documents through the gateway', () => {
  let gateway: RunningGateway;
  let mcp: Awaited<ReturnType<typeof startVerifyingMcpServer>>;
  let documents: Awaited<ReturnType<typeof startDocumentServer>>;
  let unlisted: Awaited<ReturnType<typeof startDocumentServer>>;
  let https: { port: number; connections: number; close(): Promise<void> };
  let base: string;
  let adminKey: string;

  beforeAll(async () => {
    mcp = await startVerifyingMcpServer();
    documents = await startDocumentServer((path, origin) => {
      switch (path) {
        case '/good.json':
        case '/sdk.json':
          return { status: 200, body: documentOf(`${origin}${path}`) };
        case '/mismatch.json':
          return { status: 200, body: documentOf(`${origin}/good.json`) };
        case '/redirect.json':
          return { status: 302, headers: { location: `${origin}/good.json` } };
        case '/large.json':
          return { status: 200, body: documentOf(`${origin}${path}`, { padding: 'x'.repeat(70_000) }) };
        default:
          return { status: 404, body: '{}' };
      }
    });
    // A loopback web server whose origin the operator did not list.
    unlisted = await startDocumentServer((path, origin) => ({ status: 200, body: documentOf(`${origin}${path}`) }));
    // A TCP listener on 127.0.0.1 for an https client_id: the gateway must not even connect.
    const listener = createNetServer((socket) => {
      https.connections += 1;
      socket.destroy();
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    https = {
      port: (listener.address() as AddressInfo).port,
      connections: 0,
      close: () => new Promise((resolve) => listener.close(() => resolve())),
    };

    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    adminKey = newAdminKey();
    gateway = await startGateway({
      GATEWAY_CONFIG: writeConfig({
        auth: { apiKeys: [{ key: USER_KEY, user: { user_id: 'u-cimd', email: 'cimd@example.com' } }] },
        access: { mode: 'policies' },
        policies: [
          {
            slug: 'cimd-users',
            name: 'Metadata document users',
            subjects: { users: ['u-cimd'] },
            allow: { models: ['*'], mcpServers: [{ server: 'a' }] },
          },
        ],
        mcpServers: [
          {
            slug: 'a',
            url: `${mcp.url}/mcp/a`,
            user_identity_forwarding: { method: 'jwt_header', include_claims: ['sub', 'email'] },
          },
        ],
        oauth: { login: { type: 'api_key' }, allowedClientHosts: [documents.origin] },
      }),
      PORT: String(port),
      PUBLIC_BASE_URL: base,
      JWT_PRIVATE_KEY: rsaPem().privateKey,
      GATEWAY_ADMIN_KEY: adminKey,
    });
    mcp.setJwksUrl(`${base}/.well-known/jwks.json`);
  });

  afterAll(async () => {
    await gateway?.stop();
    await mcp?.close();
    await documents?.close();
    await unlisted?.close();
    await https?.close();
  });

  it("signs in a client whose client_id is its document's URL: the MCP SDK client's flow, token and tools/call", async () => {
    const clientId = `${documents.origin}/sdk.json`;
    const provider = new MemoryOAuthProvider(REDIRECT_URI);
    // The client identifies itself by its document, so it never registers.
    provider.saveClientInformation({ client_id: clientId });
    const first = new StreamableHTTPClientTransport(new URL(`${base}/mcp/a`), { authProvider: provider });
    await expect(new Client({ name: 'sdk', version: '1.0.0' }).connect(first)).rejects.toThrow(UnauthorizedError);
    const authorizationUrl = provider.authorizationUrl as URL;
    expect(authorizationUrl.searchParams.get('client_id')).toBe(clientId);

    const run = await signInAndConsent(authorizationUrl, USER_KEY);
    expect(documents.paths).toContain('/sdk.json');
    // The consent page names the document's client and the URL it came from.
    expect(run.consentHtml).toContain('Metadata document client');
    expect(run.consentHtml).toContain(clientId);
    const location = run.location as URL;
    expect(location.origin + location.pathname).toBe(REDIRECT_URI);
    expect(location.searchParams.get('iss')).toBe(base);
    await first.finishAuth(location.searchParams.get('code') as string);
    const accessToken = provider.tokens()?.access_token as string;
    expect(accessToken.split('.')).toHaveLength(3);

    const before = mcp.seen.length;
    const client = new Client({ name: 'sdk', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp/a`), { authProvider: provider }));
    const result = await client.callTool({ name: 'whoami', arguments: {} });
    await client.close();
    expect(JSON.parse((result.content as { text: string }[])[0]?.text as string)).toEqual({
      sub: 'u-cimd',
      claims: null,
    });
    await mcp.settled();
    const seen = mcp.seen.slice(before);
    expect(seen.length).toBeGreaterThan(0);
    for (const request of seen) {
      expect(request.verifiedSub).toBe('u-cimd');
      expect(request.headers.authorization).toBeUndefined();
      expect(JSON.stringify(request.headers)).not.toContain(accessToken);
    }
    // Operators see the client among the clients, marked as known by its document.
    const clients = await fetch(`${gateway.url}/admin/v1/oauth/clients`, {
      headers: { authorization: `Bearer ${adminKey}` },
    });
    expect(clients.status).toBe(200);
    expect(((await clients.json()) as { data: unknown[] }).data).toContainEqual(
      expect.objectContaining({ client_id: clientId, metadata_document: true }),
    );
  });

  /** Opens `/oauth/authorize` for `clientId` as a browser would, without following a redirect. */
  const open = async (clientId: string, redirectUri = REDIRECT_URI) => {
    const response = await fetch(
      authorizeUrl(base, {
        client_id: clientId,
        redirect_uri: redirectUri,
        code_challenge: pkcePair().challenge,
        code_challenge_method: 'S256',
        state: 'st',
        resource: `${base}/mcp/a`,
      }),
      { redirect: 'manual' },
    );
    return { status: response.status, location: response.headers.get('location'), html: await response.text() };
  };

  const expectRefusedOnErrorPage = (answer: Awaited<ReturnType<typeof open>>, code: string) => {
    expect(answer.status).toBe(400);
    expect(answer.location).toBeNull();
    expect(answer.html).toContain('Authorization refused');
    expect(answer.html).toContain(`<code>${code}</code>`);
    // Neither the sign-in nor the consent form: nothing goes on towards the client.
    expect(answer.html).not.toContain('<form');
  };

  it('refuses a document whose client_id is not its own URL', async () => {
    expectRefusedOnErrorPage(await open(`${documents.origin}/mismatch.json`), 'client_id_mismatch');
    expect(documents.paths).toContain('/mismatch.json');
  });

  it('refuses a document that answers with a redirect, without following it', async () => {
    const served = documents.paths.filter((p) => p === '/good.json').length;
    expectRefusedOnErrorPage(await open(`${documents.origin}/redirect.json`), 'client_metadata_redirect');
    expect(documents.paths.filter((p) => p === '/good.json').length).toBe(served);
  });

  it('refuses a document over 64 KiB', async () => {
    expectRefusedOnErrorPage(await open(`${documents.origin}/large.json`), 'client_metadata_too_large');
  });

  it('refuses a document on a loopback origin not in allowedClientHosts, without fetching it', async () => {
    expectRefusedOnErrorPage(await open(`${unlisted.origin}/client.json`), 'client_id_invalid');
    expectRefusedOnErrorPage(
      await open(`https://127.0.0.1:${https.port}/client.json`),
      'client_metadata_forbidden_address',
    );
    expect(unlisted.paths).toEqual([]);
    expect(https.connections).toBe(0);
  });

  it('refuses a redirect_uri the document does not list; accepts the listed loopback one on another port', async () => {
    const clientId = `${documents.origin}/good.json`;
    expectRefusedOnErrorPage(await open(clientId, 'https://attacker.example/cb'), 'redirect_uri_mismatch');
    expectRefusedOnErrorPage(await open(clientId, 'http://127.0.0.1:7/other-path'), 'redirect_uri_mismatch');
    const otherPort = await open(clientId, 'http://127.0.0.1:8123/cimd-callback');
    expect(otherPort.status).toBe(200);
    expect(otherPort.html).toContain('name="api_key"');
  });
});

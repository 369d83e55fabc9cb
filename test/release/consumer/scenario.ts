// What an adopter's app does with the published packages, written once and run from every module
// system and tool of the consumer matrix. The entry points import the packages their own way
// (require, import, TypeScript) and hand the modules in, so each setup resolves the packages itself.
// Everything listens on 127.0.0.1 with ephemeral ports; the upstreams are mocks in this process.
import { randomBytes } from 'node:crypto';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Modules {
  express: typeof import('express');
  options: typeof import('@gw/options');
  access: typeof import('@gw/access');
  jwks: typeof import('@gw/jwks');
  identity: typeof import('@gw/identity-forwarding');
  sigv4: typeof import('@gw/sigv4-proxy');
  router: typeof import('@gw/model-router');
  catalog: typeof import('@gw/catalog');
  gwConsole: typeof import('@gw/console');
  aws4: typeof import('aws4');
  OpenAI: typeof import('openai').default;
  Client: typeof import('@modelcontextprotocol/sdk/client/index.js').Client;
  StreamableHTTPClientTransport: typeof import('@modelcontextprotocol/sdk/client/streamableHttp.js').StreamableHTTPClientTransport;
}

/** What every setup must print. */
export const EXPECTED = {
  options: 'rejected',
  access: true,
  jwks: true,
  mcp: 'hello u_1',
  chat: 'Hi from the mock',
  sigv4: true,
  catalog: 200,
  console: 200,
};

const CREDENTIALS = { accessKeyId: 'AKIDCONSUMER', secretAccessKey: 'consumer-secret-access-key' };
const API_KEY = 'consumer-api-key-0001';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

async function listen(handler: Handler): Promise<{ server: Server; origin: string }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** Mounts every package in one Express app, calls it through the real SDKs and reports what came back. */
export async function runScenario(m: Modules): Promise<typeof EXPECTED> {
  const servers: Server[] = [];
  const dataDir = mkdtempSync(join(tmpdir(), 'gw-consumer-catalog-'));
  // A migrated PGlite data directory to start from (its first start runs initdb: ~5-20 s).
  const template = process.env.GW_CONSUMER_PGLITE_TEMPLATE;
  if (template) cpSync(template, dataDir, { recursive: true });
  const closers: Array<() => Promise<void>> = [];
  try {
    // @gw/options: unknown keys are refused.
    let options = 'accepted';
    try {
      m.options.rejectUnknownOptions({ surprise: 1 }, ['known'], 'consumer');
    } catch {
      options = 'rejected';
    }

    // @gw/access: the open mode allows everything.
    const snapshot = m.access.compileAccess({ mode: 'open', policies: [] });
    const access = m.access.decide(
      snapshot,
      { user: 'u_1' },
      { kind: 'model', provider: 'anthropic', model: 'x' },
    ).allowed;

    // Upstream mocks: an Anthropic Messages API, a Bedrock agent runtime that re-verifies SigV4 with
    // aws4, and an MCP server (Express) that verifies the gateway's identity token with @gw/jwks.
    const anthropic = await listen((req, res) => {
      void readBody(req).then(() => {
        res.setHeader('content-type', 'application/json');
        res.end(
          JSON.stringify({
            id: 'msg_1',
            type: 'message',
            role: 'assistant',
            model: 'claude-sonnet-4-5',
            content: [{ type: 'text', text: 'Hi from the mock' }],
            stop_reason: 'end_turn',
            stop_sequence: null,
            usage: { input_tokens: 3, output_tokens: 4 },
          }),
        );
      });
    });
    servers.push(anthropic.server);

    let signatureValid = false;
    const bedrock = await listen((req, res) => {
      void readBody(req).then((body) => {
        const authorization = String(req.headers.authorization ?? '');
        const scope = /Credential=[^/]+\/\d{8}\/([^/]+)\/([^/]+)\/aws4_request/.exec(authorization);
        const signed = /SignedHeaders=([^,]+)/.exec(authorization)?.[1]?.split(';') ?? [];
        const headers: Record<string, string> = {};
        for (const name of signed) headers[name] = String(req.headers[name] ?? '');
        const check = m.aws4.sign(
          {
            host: req.headers.host,
            method: req.method,
            path: req.url,
            service: scope?.[2],
            region: scope?.[1],
            headers,
            body: body.length ? body : undefined,
          },
          CREDENTIALS,
        );
        signatureValid = authorization !== '' && check.headers?.Authorization === authorization;
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ retrievalResults: [] }));
      });
    });
    servers.push(bedrock.server);

    const key = m.jwks.SigningKey.generate();
    const gateway = m.express();
    const gatewayServer = await listen(gateway as unknown as Handler);
    servers.push(gatewayServer.server);

    const mcpApp = m.express();
    const mcpMock = await listen(mcpApp as unknown as Handler);
    servers.push(mcpMock.server);
    const mcpUrl = `${mcpMock.origin}/mcp`;
    mcpApp.use(
      '/mcp',
      m.jwks.verifyGatewayIdentity({ jwksUri: `${gatewayServer.origin}/.well-known/jwks.json`, audience: mcpUrl }),
    );
    mcpApp.post('/mcp', m.express.json(), (req, res) => {
      const message = req.body as { id?: number; method: string };
      if (message.id === undefined) {
        res.status(202).end();
        return;
      }
      const results: Record<string, unknown> = {
        initialize: {
          protocolVersion: '2025-06-18',
          capabilities: { tools: {} },
          serverInfo: { name: 'mock', version: '1.0.0' },
        },
        'tools/list': { tools: [{ name: 'hello', inputSchema: { type: 'object' } }] },
        'tools/call': { content: [{ type: 'text', text: `hello ${String(req.gatewayIdentity?.['user_id'])}` }] },
      };
      res.json({ jsonrpc: '2.0', id: message.id, result: results[message.method] ?? {} });
    });

    // The gateway: every package mounted.
    const db = await m.catalog.openEmbeddedDatabase(dataDir);
    closers.push(() => db.close());
    await m.catalog.migrate(db);
    const store = new m.catalog.CatalogStore(db, new m.catalog.SecretBox(randomBytes(32)));
    const adminKey = 'consumer-admin-key-0123456789abcdef';
    const adminAccess = new m.catalog.AdminAccess({ adminKey });
    const apiKeys = [{ key: API_KEY, user: { user_id: 'u_1' } }];

    gateway.get('/.well-known/jwks.json', m.jwks.jwksHandler(m.jwks.buildJwks(key, [])));
    gateway.use('/admin/v1', m.catalog.adminApi({ store, access: adminAccess }));
    gateway.use(
      '/console',
      m.gwConsole.gatewayConsole({
        access: adminAccess,
        adminApi: m.catalog.createAdminApi({ store, access: adminAccess }),
        sessionSecret: randomBytes(32),
      }),
    );
    gateway.use(
      '/mcp',
      m.identity.authenticate({ apiKeys }),
      m.identity.identityForwarding({
        signer: m.jwks.createIdentityTokenSigner(key),
        mcpServers: [{ slug: 'tools', url: mcpUrl, user_identity_forwarding: { method: 'jwt_header' } }],
      }),
    );
    gateway.use(
      '/v1',
      m.identity.authenticate({ apiKeys }),
      m.router.modelRouter({
        providers: [{ slug: 'anthropic', provider: 'anthropic', apiKey: 'sk-ant-consumer', baseUrl: anthropic.origin }],
      }),
      m.sigv4.sigv4Proxy({
        integrations: [{ slug: 'kb', ...CREDENTIALS, region: 'us-east-1', allowedHosts: [bedrock.origin] }],
      }),
    );
    gateway.use(m.identity.identityForwardingErrorHandler());

    // @gw/jwks: the key set carries the signing key.
    const keySet = (await (await fetch(`${gatewayServer.origin}/.well-known/jwks.json`)).json()) as {
      keys: Array<{ kid: string }>;
    };

    // @gw/identity-forwarding: the MCP SDK's client through the proxy.
    const client = new m.Client({ name: 'consumer', version: '1.0.0' });
    await client.connect(
      new m.StreamableHTTPClientTransport(new URL(`${gatewayServer.origin}/mcp/tools`), {
        requestInit: { headers: { 'x-gateway-api-key': API_KEY } },
      }),
    );
    const called = await client.callTool({ name: 'hello', arguments: {} });
    await client.close();
    const mcp = (called.content as Array<{ text: string }>)[0]?.text;

    // @gw/model-router: the openai SDK's chat completion, answered by the Anthropic mock.
    const openai = new m.OpenAI({ apiKey: API_KEY, baseURL: `${gatewayServer.origin}/v1`, maxRetries: 0 });
    const completion = await openai.chat.completions.create({
      model: '@anthropic/claude-sonnet-4-5',
      max_tokens: 16,
      messages: [{ role: 'user', content: 'Hi' }],
    });

    // @gw/sigv4-proxy: a knowledge-base call signed for the mock.
    const retrieve = await fetch(`${gatewayServer.origin}/v1/knowledgebases/KB1/retrieve`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-gateway-api-key': API_KEY,
        'x-gateway-provider': '@kb',
        'x-gateway-custom-host': bedrock.origin,
      },
      body: JSON.stringify({ retrievalQuery: { text: 'refunds' } }),
    });
    await retrieve.arrayBuffer();

    // @gw/catalog and @gw/console.
    const providers = await fetch(`${gatewayServer.origin}/admin/v1/providers`, {
      headers: { authorization: `Bearer ${adminKey}` },
    });
    await providers.arrayBuffer();
    const page = await fetch(`${gatewayServer.origin}/console/`);
    await page.arrayBuffer();

    return {
      options,
      access,
      jwks: keySet.keys[0]?.kid === key.kid,
      mcp: mcp ?? '',
      chat: completion.choices[0]?.message.content ?? '',
      sigv4: retrieve.status === 200 && signatureValid,
      catalog: providers.status,
      console: page.status,
    };
  } finally {
    for (const server of servers) {
      server.closeAllConnections();
      server.close();
    }
    for (const close of closers) await close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

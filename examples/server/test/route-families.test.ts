import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import OpenAI from 'openai';
import { Portkey } from 'portkey-ai';
import { loadSigningKey } from '@gw/jwks';
import { createGateway } from '../src/app';
import { parseConfig } from '../src/config/load';
import { createLogger } from '../src/observability/logger';
import { rsaPem } from './support';

jest.setTimeout(30_000);

const SECRETS = {
  gatewayKey: 'gw-live-families-key-001',
  providerKey: 'sk-ant-provider-secret-002',
  awsSecret: 'aws/secret+access/key-003',
  awsSession: 'aws-session-token-004',
  privateKey: rsaPem().privateKey,
};
const logs: string[] = [];
const upstreamHeaders: IncomingMessage['headers'][] = [];

async function listen(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    upstreamHeaders.push(req.headers);
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

const servers: Server[] = [];
let base: string;
let bedrockOrigin: string;

beforeAll(async () => {
  const anthropic = await listen((req, res) => {
    req.resume();
    req.on('end', () =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: 'msg_1',
          type: 'message',
          role: 'assistant',
          content: [{ type: 'text', text: 'hi from claude' }],
          stop_reason: 'end_turn',
          usage: { input_tokens: 1, output_tokens: 2 },
        }),
      ),
    );
  });
  const bedrock = await listen((req, res) => {
    req.resume();
    req.on('end', () =>
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end('{"retrievalResults":[{"content":{"text":"chunk"}}]}'),
    );
  });
  const mcp = await listen((req, res) => {
    req.resume();
    req.on('end', () =>
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","id":1,"result":{}}'),
    );
  });
  servers.push(anthropic.server, bedrock.server, mcp.server);
  bedrockOrigin = bedrock.url;
  const config = parseConfig(
    {
      auth: { apiKeys: [{ key: '${GW_KEY}', user: { user_id: 'u1' } }] },
      providers: [
        { slug: 'claude', provider: 'anthropic', apiKey: '${PROVIDER_KEY}', baseUrl: anthropic.url },
        {
          slug: 'kb',
          provider: 'bedrock',
          accessKeyId: 'AKIAFAMILIES',
          secretAccessKey: '${AWS_SECRET}',
          sessionToken: '${AWS_SESSION}',
          region: 'us-east-1',
          allowedHosts: [bedrock.url],
        },
      ],
      mcpServers: [{ slug: 'tools', url: `${mcp.url}/mcp`, user_identity_forwarding: { method: 'jwt_header' } }],
    },
    {
      GW_KEY: SECRETS.gatewayKey,
      PROVIDER_KEY: SECRETS.providerKey,
      AWS_SECRET: SECRETS.awsSecret,
      AWS_SESSION: SECRETS.awsSession,
    },
  );
  const keys = loadSigningKey({ privateKeyPem: SECRETS.privateKey, production: true, jwtHeaderInUse: true });
  const sink = new Writable({ write: (chunk: Buffer, _e, done) => (logs.push(chunk.toString()), done()) });
  const { listener } = createGateway({
    config,
    signingKey: keys.key,
    jwks: keys.jwks,
    logger: createLogger('debug', sink),
  });
  const gateway = createServer(listener).listen(0, '127.0.0.1');
  await new Promise((resolve) => gateway.once('listening', resolve));
  servers.push(gateway);
  base = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

describe('every route family through the full gateway', () => {
  it('serves chat completions through the openai SDK and renders its errors in the OpenAI shape', async () => {
    const client = new OpenAI({ apiKey: SECRETS.gatewayKey, baseURL: `${base}/v1`, maxRetries: 0 });
    const completion = await client.chat.completions.create({
      model: '@claude/claude-sonnet-4-5',
      max_tokens: 5,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(completion.choices[0]?.message.content).toBe('hi from claude');
    const error = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${SECRETS.gatewayKey}`, 'content-type': 'application/json' },
      body: '{"model":"@claude/x","messages":[{"role":"user","content":"x"}]}',
    });
    expect(await error.json()).toEqual({
      error: {
        message: expect.any(String),
        type: 'invalid_request_error',
        param: 'max_tokens',
        code: 'max_tokens_required',
      },
    });
  });

  it('serves native messages and models', async () => {
    const messages = await fetch(`${base}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': SECRETS.gatewayKey, 'content-type': 'application/json' },
      body: '{"model":"@claude/claude-sonnet-4-5","max_tokens":5,"messages":[]}',
    });
    expect(((await messages.json()) as { content: unknown[] }).content).toEqual([
      { type: 'text', text: 'hi from claude' },
    ]);
    const models = await fetch(`${base}/v1/models`, { headers: { 'x-gateway-api-key': SECRETS.gatewayKey } });
    expect(((await models.json()) as { data: { id: string }[] }).data.map((m) => m.id)).toContain(
      '@claude/claude-sonnet-4-5',
    );
  });

  it('signs Bedrock retrieve calls and refuses other hosts in the generic shape', async () => {
    const headers = {
      'x-gateway-api-key': SECRETS.gatewayKey,
      'x-gateway-provider': '@kb',
      'content-type': 'application/json',
    };
    const ok = await fetch(`${base}/v1/knowledgebases/KB1/retrieve`, {
      method: 'POST',
      headers: { ...headers, 'x-gateway-custom-host': bedrockOrigin },
      body: '{"retrievalQuery":{"text":"q"}}',
    });
    expect(((await ok.json()) as { retrievalResults: unknown[] }).retrievalResults).toHaveLength(1);
    const refused = await fetch(`${base}/v1/knowledgebases/KB1/retrieve`, {
      method: 'POST',
      headers: { ...headers, 'x-gateway-custom-host': 'evil.example.com' },
      body: '{}',
    });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toEqual({
      error: { message: expect.any(String), type: 'invalid_request_error', code: 'custom_host_not_allowed' },
    });
  });

  it('serves the unmodified portkey-ai SDK: post() with customHost and provider', async () => {
    const portkey = new Portkey({
      apiKey: SECRETS.gatewayKey,
      baseURL: `${base}/v1`,
      provider: '@kb',
      customHost: bedrockOrigin,
    });
    const result = (await portkey.post('/knowledgebases/KB9/retrieve', {
      retrievalQuery: { text: 'refunds' },
    })) as unknown as {
      retrievalResults: { content: { text: string } }[];
    };
    expect(result.retrievalResults[0]?.content.text).toBe('chunk');
    const signed = upstreamHeaders.at(-1) ?? {};
    expect(String(signed.authorization)).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIAFAMILIES\//);
    expect(JSON.stringify(signed)).not.toContain(SECRETS.gatewayKey);
  });

  it('proxies MCP with a signed identity', async () => {
    const response = await fetch(`${base}/mcp/tools`, {
      method: 'POST',
      headers: { 'x-gateway-api-key': SECRETS.gatewayKey, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(response.status).toBe(200);
    expect(upstreamHeaders.at(-1)?.['x-user-jwt']).toMatch(/^eyJ/);
  });

  it('never sends the gateway key upstream, and no secret appears in any log line', async () => {
    await new Promise((resolve) => setImmediate(resolve));
    for (const headers of upstreamHeaders) expect(JSON.stringify(headers)).not.toContain(SECRETS.gatewayKey);
    const forwardedTokens = upstreamHeaders
      .map((h) => h['x-user-jwt'])
      .filter((t): t is string => typeof t === 'string');
    const signatures = upstreamHeaders
      .map((h) => /Signature=([0-9a-f]+)/.exec(String(h.authorization ?? ''))?.[1])
      .filter((t): t is string => typeof t === 'string');
    expect(signatures.length).toBeGreaterThan(0);
    const everything = logs.join('');
    expect(logs.length).toBeGreaterThan(5);
    for (const secret of [
      SECRETS.gatewayKey,
      SECRETS.providerKey,
      SECRETS.awsSecret,
      SECRETS.awsSession,
      SECRETS.privateKey.split('\n')[1] as string,
      ...forwardedTokens,
      ...signatures,
    ]) {
      expect(everything).not.toContain(secret);
    }
  });
});

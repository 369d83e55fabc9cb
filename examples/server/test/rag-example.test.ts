import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { loadSigningKey } from '@gw/jwks';
import { createGateway } from '../src/app';
import { parseConfig } from '../src/config/load';
import { createLogger } from '../src/observability/logger';

jest.setTimeout(30_000);

async function listen(
  handler: (req: IncomingMessage, body: string) => unknown,
): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c));
    req.on('end', () =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(handler(req, body))),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

describe('the retrieval-augmented example', () => {
  it('retrieves through the SigV4 proxy, then asks the model with the passages in the prompt', async () => {
    const retrieved: IncomingMessage[] = [];
    const prompts: string[] = [];
    const bedrock = await listen((req) => {
      retrieved.push(req);
      return {
        retrievalResults: [
          { content: { text: 'Refunds take 5 business days.' } },
          { content: { text: 'Support answers within a day.' } },
        ],
      };
    });
    const anthropic = await listen((_req, body) => {
      prompts.push(body);
      return {
        id: 'msg_rag',
        type: 'message',
        role: 'assistant',
        content: [{ type: 'text', text: 'Five business days.' }],
        stop_reason: 'end_turn',
        usage: { input_tokens: 1, output_tokens: 1 },
      };
    });
    const config = parseConfig(
      {
        auth: { apiKeys: [{ key: 'gw-rag-example-key', user: { user_id: 'u' } }] },
        providers: [
          { slug: 'claude', provider: 'anthropic', apiKey: 'sk-provider', baseUrl: anthropic.url },
          {
            slug: 'kb',
            provider: 'bedrock',
            accessKeyId: 'AKIARAG',
            secretAccessKey: 'rag-secret',
            region: 'us-east-1',
            allowedHosts: [bedrock.url],
          },
        ],
      },
      {},
    );
    const keys = loadSigningKey({ production: false, jwtHeaderInUse: false });
    const { listener } = createGateway({
      config,
      signingKey: keys.key,
      jwks: keys.jwks,
      logger: createLogger('error'),
    });
    const gateway = createServer(listener).listen(0, '127.0.0.1');
    await new Promise((resolve) => gateway.once('listening', resolve));
    const gatewayUrl = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}`;

    const child = spawn(
      process.execPath,
      [join(__dirname, '..', '..', 'rag', 'rag.mjs'), 'How long do refunds take?'],
      {
        env: {
          PATH: process.env.PATH,
          GATEWAY_URL: gatewayUrl,
          GATEWAY_API_KEY: 'gw-rag-example-key',
          KB_PROVIDER: '@kb',
          KB_ID: 'KB123',
          KB_HOST: bedrock.url,
          MODEL: '@claude/claude-sonnet-4-5',
        },
      },
    );
    let stdout = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c));
    const code = await new Promise((resolve) => child.once('exit', resolve));
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toEqual({
      passages: ['Refunds take 5 business days.', 'Support answers within a day.'],
      answer: 'Five business days.',
    });
    expect(retrieved[0]?.url).toBe('/knowledgebases/KB123/retrieve');
    expect(String(retrieved[0]?.headers.authorization)).toMatch(/^AWS4-HMAC-SHA256 /);
    const sent = JSON.parse(prompts[0] as string) as { system: { text: string }[] };
    expect(sent.system[0]?.text).toContain('Refunds take 5 business days.');
    expect(sent.system[0]?.text).toContain('Support answers within a day.');
    for (const server of [gateway, bedrock.server, anthropic.server]) {
      server.closeAllConnections();
      server.close();
    }
  });
});

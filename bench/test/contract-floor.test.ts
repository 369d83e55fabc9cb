import { spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import aws4 from 'aws4';

jest.setTimeout(30_000);

/**
 * The contract floor (bench/contract-floor.mjs) measured beside the gateway must do the work it
 * stands for: a floor that answered early (a 401, a 404) would make the premise it measures
 * meaningless. Its upstream here records what reached it.
 */
describe('the contract floor', () => {
  const seen: { url: string; headers: IncomingHttpHeaders; body: string }[] = [];
  const upstream = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      seen.push({ url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString() });
      const answer =
        req.url === '/mcp'
          ? '{"jsonrpc":"2.0","id":1,"result":{"content":[]}}'
          : '{"id":"msg_1","type":"message","model":"claude-sonnet-4-5","usage":{"input_tokens":3,"output_tokens":2}}';
      res.writeHead(200, { 'content-type': 'application/json', 'x-provider-secret': 'kept upstream' }).end(answer);
    });
  });
  let floor: ChildProcess;
  let port: number;

  beforeAll(async () => {
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const { privateKey } = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
      publicKeyEncoding: { type: 'spki', format: 'pem' },
    });
    floor = spawn(process.execPath, [join(__dirname, '..', 'contract-floor.mjs')], {
      env: {
        PATH: process.env.PATH,
        TARGET_PORT: String((upstream.address() as AddressInfo).port),
        API_KEYS: 'gw-key-a',
        JWT_PRIVATE_KEY: privateKey,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    port = await new Promise<number>((resolve) =>
      createInterface({ input: floor.stdout! }).once('line', (line) => resolve(JSON.parse(line).port)),
    );
  });

  afterAll(async () => {
    floor.kill('SIGTERM');
    await new Promise<void>((resolve) => upstream.close(() => resolve()));
  });

  const post = (path: string, body: unknown, key = 'gw-key-a') =>
    fetch(`http://127.0.0.1:${port}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': key },
      body: JSON.stringify(body),
    });

  it('routes a pass-through by its model, with the provider credential and a traceparent, and answers the ids', async () => {
    const res = await post('/v1/messages', { model: '@bench/claude-sonnet-4-5', max_tokens: 5, messages: [] });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id: 'msg_1', usage: { input_tokens: 3 } });
    expect(res.headers.get('x-gateway-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const traceId = res.headers.get('x-gateway-trace-id');
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(res.headers.get('x-provider-secret')).toBeNull();
    const call = seen.at(-1)!;
    expect(call.url).toBe('/v1/messages');
    expect(JSON.parse(call.body).model).toBe('claude-sonnet-4-5');
    expect(call.headers['x-api-key']).toBe('sk-bench');
    expect(call.headers['x-gateway-api-key']).toBeUndefined();
    expect(call.headers.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
  });

  it('sends an MCP call on with the caller identity token', async () => {
    const res = await post('/mcp/tools', { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo' } });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ result: { content: [] } });
    const call = seen.at(-1)!;
    expect(call.url).toBe('/mcp');
    expect(String(call.headers['x-user-jwt']).split('.')).toHaveLength(3);
  });

  it('signs a Bedrock call with SigV4 over the exact body, for the allowed origin only', async () => {
    const origin = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
    const retrieve = (customHost: string) =>
      fetch(`http://127.0.0.1:${port}/v1/knowledgebases/KB1/retrieve`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-gateway-api-key': 'gw-key-a',
          'x-gateway-provider': '@kb',
          'x-gateway-custom-host': customHost,
        },
        body: '{"retrievalQuery":{"text":"refunds?"}}',
      });
    const res = await retrieve(origin);
    expect(res.status).toBe(200);
    const call = seen.at(-1)!;
    expect(call.url).toBe('/knowledgebases/KB1/retrieve');
    expect(call.body).toBe('{"retrievalQuery":{"text":"refunds?"}}');
    // aws4 signs the same request again, independently: the same authorization.
    const again = aws4.sign(
      {
        host: call.headers.host,
        method: 'POST',
        path: call.url,
        service: 'bedrock',
        region: 'us-east-1',
        headers: { 'content-type': 'application/json', 'x-amz-date': String(call.headers['x-amz-date']) },
        body: call.body,
      },
      { accessKeyId: 'AKIABENCH', secretAccessKey: 'bench-secret' },
    ) as { headers: Record<string, string> };
    expect(call.headers.authorization).toBe(again.headers.Authorization);
    expect(call.headers.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    expect(call.headers['x-gateway-api-key']).toBeUndefined();
    const calls = seen.length;
    expect((await retrieve('http://evil.example.com')).status).toBe(400);
    expect(seen).toHaveLength(calls);
  });

  it('refuses an unknown key and an unknown provider', async () => {
    expect((await post('/v1/messages', { model: '@bench/x' }, 'gw-key-b')).status).toBe(401);
    expect((await post('/v1/messages', { model: '@other/x' })).status).toBe(404);
  });
});

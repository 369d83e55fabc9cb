import { existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type IncomingMessage, type ServerResponse, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import * as jose from 'jose';
import { loadSigningKey, UnknownKeyError } from '@gw/jwks';
import { createGateway } from '../src/app';
import { parseConfig } from '../src/config/load';
import { createLogger } from '../src/observability/logger';
import { runDemo } from '../src/demo';
import { DEMO_ISSUER, embeddedDefault } from '../src/demo/embedded-default';
import { runCli } from '../src/cli';
import { rsaPem, startGateway, writeConfig } from './support';

jest.setTimeout(30_000);

const API_KEY = 'gw-live-e2e-key-0123456789';
const privateKey = rsaPem().privateKey;
const logLines: string[] = [];
const logSink = new Writable({
  write(chunk: Buffer, _encoding, done) {
    logLines.push(chunk.toString());
    done();
  },
});

async function listen(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ server: Server; url: string }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

let upstream: { server: Server; url: string };
const received: IncomingMessage['headers'][] = [];
let gateway: Server;
let base: string;

beforeAll(async () => {
  upstream = await listen((req, res) => {
    received.push(req.headers);
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
  });
  const config = parseConfig(
    {
      auth: { apiKeys: [{ key: API_KEY, user: { user_id: 'u_e2e', email: 'e2e@example.com' } }] },
      mcpServers: [{ slug: 'tools', url: `${upstream.url}/mcp`, user_identity_forwarding: { method: 'jwt_header' } }],
    },
    {},
  );
  const keys = loadSigningKey({ privateKeyPem: privateKey, production: true, jwtHeaderInUse: true });
  const { listener } = createGateway({
    config,
    signingKey: keys.key,
    jwks: keys.jwks,
    logger: createLogger('debug', logSink),
  });
  gateway = createServer(listener).listen(0, '127.0.0.1');
  await new Promise((resolve) => gateway.once('listening', resolve));
  base = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}`;
});

afterAll(async () => {
  gateway.closeAllConnections();
  upstream.server.closeAllConnections();
  await new Promise((resolve) => gateway.close(resolve));
  await new Promise((resolve) => upstream.server.close(resolve));
});

describe('the assembled gateway', () => {
  it('puts request and trace ids on successes, errors and 404s, echoing a sent trace id', async () => {
    for (const [path, init] of [
      ['/healthz', {}],
      ['/mcp/tools', { method: 'POST', headers: { 'x-gateway-api-key': API_KEY } }],
      ['/mcp/tools', { method: 'POST' }],
      ['/nowhere', {}],
    ] as const) {
      const response = await fetch(`${base}${path}`, init);
      expect(response.headers.get('x-gateway-request-id')).toMatch(/^[0-9a-f-]{36}$/);
      // The W3C trace id of the trace the gateway started.
      expect(response.headers.get('x-gateway-trace-id')).toMatch(/^[0-9a-f]{32}$/);
    }
    const traced = await fetch(`${base}/healthz`, { headers: { 'x-portkey-trace-id': 'trace-123' } });
    expect(traced.headers.get('x-gateway-trace-id')).toBe('trace-123');
  });

  it('answers unknown routes with a JSON 404 and a code, in each family shape', async () => {
    const other = await fetch(`${base}/nowhere`);
    expect(other.status).toBe(404);
    expect(await other.json()).toEqual({
      error: { message: 'No route for GET /nowhere.', type: 'not_found_error', code: 'route_not_found' },
    });
    const v1 = await fetch(`${base}/v1/unknown`, { headers: { 'x-gateway-api-key': API_KEY } });
    expect(v1.status).toBe(404);
    expect(((await v1.json()) as { error: { code: string } }).error.code).toBe('route_not_found');
  });

  it('renders authentication errors in the OpenAI shape on chat completions and the Anthropic shape on messages', async () => {
    const chat = await fetch(`${base}/v1/chat/completions`, { method: 'POST' });
    expect(chat.status).toBe(401);
    expect(await chat.json()).toEqual({
      error: {
        message: 'No credentials were sent.',
        type: 'authentication_error',
        param: null,
        code: 'missing_credentials',
      },
    });
    const messages = await fetch(`${base}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': 'gw-wrong-key-000' },
    });
    expect(messages.status).toBe(401);
    expect(messages.headers.get('www-authenticate')).toContain('Bearer');
    expect(await messages.json()).toEqual({
      type: 'error',
      error: { type: 'authentication_error', message: 'The API key is not valid.' },
      code: 'invalid_credentials',
    });
  });

  it('exposes metrics whose values change with requests', async () => {
    const read = async () => (await (await fetch(`${base}/metrics`)).text()).split('\n');
    const value = (lines: string[], prefix: string) =>
      Number(
        lines
          .find((l) => l.startsWith(prefix))
          ?.split(' ')
          .pop() ?? 0,
      );
    const before = await read();
    await fetch(`${base}/mcp/tools`, { method: 'POST', headers: { 'x-gateway-api-key': API_KEY } });
    await fetch(`${base}/mcp/tools`, { method: 'POST', headers: { 'x-gateway-api-key': API_KEY } });
    const after = await read();
    expect(value(after, 'gateway_requests_total{route="mcp",status="200"}')).toBe(
      value(before, 'gateway_requests_total{route="mcp",status="200"}') + 2,
    );
    expect(value(after, 'gateway_token_cache_hits_total')).toBeGreaterThan(
      value(before, 'gateway_token_cache_hits_total'),
    );
    expect(value(after, 'gateway_token_cache_size')).toBe(1);
    expect(value(after, 'gateway_upstream_duration_seconds_count{route="mcp",target="tools"}')).toBeGreaterThan(
      value(before, 'gateway_upstream_duration_seconds_count{route="mcp",target="tools"}'),
    );
    expect(after.some((l) => l.startsWith('gateway_token_cache_misses_total'))).toBe(true);
    expect(after.some((l) => l.startsWith('# TYPE gateway_idp_jwks_fetches_total counter'))).toBe(true);
  });

  it('writes one log line per request with its route, target and upstream status, and never a secret', async () => {
    await fetch(`${base}/mcp/tools?x=1`, { method: 'POST', headers: { authorization: `Bearer ${API_KEY}` } });
    await new Promise((resolve) => setImmediate(resolve));
    const line = logLines
      .map((l) => JSON.parse(l))
      .filter((l) => l.msg === 'request' && l.path === '/mcp/tools')
      .at(-1);
    expect(line).toMatchObject({ route: 'mcp', target: 'tools', status: 200, upstreamStatus: 200, method: 'POST' });
    const everything = logLines.join('');
    expect(everything).not.toContain(API_KEY);
    expect(everything).not.toContain(privateKey.split('\n')[1]);
    for (const headers of received) {
      expect(JSON.stringify(headers)).not.toContain(API_KEY);
      if (headers['x-user-jwt']) expect(everything).not.toContain(headers['x-user-jwt'] as string);
    }
  });
});

describe('running processes', () => {
  it('lets a token minted by one gateway verify against the JWKS of another with the same key and config', async () => {
    const config = writeConfig({
      auth: { apiKeys: [{ key: API_KEY, user: { user_id: 'u_shared' } }] },
      mcpServers: [{ slug: 'tools', url: `${upstream.url}/mcp`, user_identity_forwarding: { method: 'jwt_header' } }],
    });
    const env = { GATEWAY_CONFIG: config, JWT_PRIVATE_KEY: privateKey, NODE_ENV: 'production' };
    const [first, second] = await Promise.all([startGateway(env), startGateway(env)]);
    try {
      const before = received.length;
      await fetch(`${first.url}/mcp/tools`, { method: 'POST', headers: { 'x-gateway-api-key': API_KEY } });
      const token = received[before]?.['x-user-jwt'] as string;
      const { payload } = await jose.jwtVerify(
        token,
        jose.createRemoteJWKSet(new URL(`${second.url}/.well-known/jwks.json`)),
        {
          issuer: 'gateway-mcp-gateway',
          audience: `${upstream.url}/mcp`,
        },
      );
      expect(payload.sub).toBe('u_shared');
    } finally {
      // Stopped whatever happened: a failure leaves no gateway running (and jest waiting on it).
      expect(await Promise.all([first.stop(), second.stop()])).toEqual([0, 0]);
    }
    // Two gateway processes start at once: allow for a machine busy with other work.
  }, 60_000);

  it('finishes an in-flight stream after SIGTERM, then exits 0', async () => {
    let release!: () => void;
    const streaming = await listen((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: one\n\n');
      release = () => res.end('data: two\n\n');
    });
    const config = writeConfig({
      auth: { apiKeys: [{ key: API_KEY, user: { user_id: 'u' } }] },
      mcpServers: [{ slug: 'sse', url: `${streaming.url}/mcp` }],
    });
    const running = await startGateway({ GATEWAY_CONFIG: config });
    const response = await fetch(`${running.url}/mcp/sse`, { headers: { 'x-gateway-api-key': API_KEY } });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('data: one\n\n');
    const shuttingDown = new Promise<void>((resolve) => {
      running.child.stdout?.on('data', (chunk: Buffer) => chunk.toString().includes('shutting down') && resolve());
    });
    running.child.kill('SIGTERM');
    await shuttingDown;
    await expect(fetch(`${running.url}/healthz`)).rejects.toThrow();
    release();
    let rest = '';
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read())
      rest += new TextDecoder().decode(chunk.value);
    expect(rest).toBe('data: two\n\n');
    expect(await running.exited).toBe(0);
    streaming.server.close();
  });
});

describe('developer tools', () => {
  it('pnpm demo calls the demo MCP server with every method and reports success', async () => {
    const lines: string[] = [];
    expect(await runDemo((line) => lines.push(line))).toBe(true);
    const report = lines.join('\n');
    for (const method of ['claims_header', 'jwt_header', 'bearer', 'spoofing']) expect(report).toContain(`✔ ${method}`);
    expect(report).toContain('All forwarding methods work.');
  });

  it("makes the demo identity provider's key with its first token: before that no token verifies", async () => {
    const demo = embeddedDefault('http://127.0.0.1:1/unused', {});
    await expect(demo.demoIdentityProviderKeys.getKey(undefined)).rejects.toBeInstanceOf(UnknownKeyError);
    const token = demo.mintDemoToken();
    const { kid } = jose.decodeProtectedHeader(token);
    const key = await demo.demoIdentityProviderKeys.getKey(kid);
    await expect(jose.jwtVerify(token, key, { issuer: DEMO_ISSUER, audience: 'gateway' })).resolves.toBeTruthy();
    // The same key for every later token.
    expect(jose.decodeProtectedHeader(demo.mintDemoToken()).kid).toBe(kid);
  });

  it('gw keys generate prints a PEM key, its kid and its JWKS entry', async () => {
    let output = '';
    expect(runCli(['keys', 'generate'], (text) => (output += text))).toBe(0);
    const kid = /kid: (\S+)/.exec(output)?.[1];
    const entry = JSON.parse(/JWKS entry: (.*)/.exec(output)?.[1] ?? '{}') as jose.JWK;
    expect(output).toContain('-----BEGIN PRIVATE KEY-----');
    expect(kid).toBe(await jose.calculateJwkThumbprint(entry));
    expect(runCli(['keys', 'rotate'], () => undefined)).toBe(2);
  });

  it('gw has help for each command, and refuses a key file inside a git work tree unless told to', () => {
    const said = (args: string[]) => {
      let output = '';
      const code = runCli(args, (text) => (output += text));
      return { code, output };
    };
    expect(said(['--help'])).toMatchObject({ code: 0, output: expect.stringContaining('keys generate') });
    expect(said(['keys', 'generate', '--help']).output).toContain('--allow-in-git-tree');
    expect(said(['catalog', 'reseal', '--help']).output).toContain('GATEWAY_PREVIOUS_ENCRYPTION_KEYS');
    expect(said(['keys', 'generate', '--bits', '4096'])).toMatchObject({
      code: 2,
      output: expect.stringContaining('unknown option --bits'),
    });
    const repo = mkdtempSync(join(tmpdir(), 'gw-cli-'));
    mkdirSync(join(repo, '.git'));
    const inside = join(repo, 'keys', 'gateway-key.pem');
    mkdirSync(join(repo, 'keys'));
    expect(said(['keys', 'generate', '--out', inside])).toMatchObject({
      code: 2,
      output: expect.stringContaining('inside the git work tree'),
    });
    expect(existsSync(inside)).toBe(false);
    expect(said(['keys', 'generate', '--out', inside, '--allow-in-git-tree']).code).toBe(0);
    expect(readFileSync(inside, 'utf8')).toContain('-----BEGIN PRIVATE KEY-----');
    const outside = join(mkdtempSync(join(tmpdir(), 'gw-cli-plain-')), 'key.pem');
    expect(said(['keys', 'generate', '--out', outside]).code).toBe(0);
  });
});

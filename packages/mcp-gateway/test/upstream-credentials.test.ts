import express from 'express';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CONNECTION_REQUIRED_CODE, type UpstreamCredential, type UpstreamCredentialSource } from '../src';
import { alice, listen, setup, type Listening } from './support';

/*
 * A server's own credential (CONTRACT section 15, through the `upstreamCredentials` hook): the
 * header is sent over the client's, a `401` is followed by one renewal and one retry with the same
 * bytes, and a refusal with a JSON-RPC form answers each JSON-RPC request and reaches no server.
 */

/** A real MCP server (the SDK, stateless) that takes only the bearer tokens in `accepted`. */
async function tokenCheckingServer(): Promise<
  Listening & { accepted: Set<string>; seen: { authorization?: string; body: string }[] }
> {
  const accepted = new Set<string>();
  const seen: { authorization?: string; body: string }[] = [];
  const app = express();
  app.use(express.json({ limit: '4mb' }));
  app.all('/mcp', async (req, res) => {
    seen.push({ authorization: req.headers.authorization, body: JSON.stringify(req.body) });
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (token === undefined || !accepted.has(token)) {
      res.status(401).set('www-authenticate', 'Bearer resource_metadata="https://elsewhere.example/rm"').end();
      return;
    }
    const server = new McpServer({ name: 'own-credential', version: '1.0.0' });
    server.registerTool('whoami', { description: 'The bearer token it got' }, async () => ({
      content: [{ type: 'text', text: String(req.headers.authorization) }],
    }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  return Object.assign(await listen(app), { accepted, seen });
}

/** A refusal with a JSON-RPC form, as a host's credential source throws it. */
class ConnectFirst extends Error {
  readonly status = 403;
  readonly code = CONNECTION_REQUIRED_CODE;
  readonly jsonRpc = {
    code: -32042,
    message: 'Connect first',
    data: { code: 'connection_required', elicitations: [{ mode: 'url', elicitationId: 'e1', url: 'https://gw/c' }] },
  };
}

let upstream: Awaited<ReturnType<typeof tokenCheckingServer>>;
let gateway: Awaited<ReturnType<typeof setup>>;
/** What the source does now: give a token (sync or not), or refuse. */
const source = {
  token: 't1' as string | undefined,
  async: false,
  /** The tokens `rejected` renews to, in order; none left: refuse. */
  renewals: [] as string[],
  finals: [] as boolean[],
};

function credentialFor(token: string): UpstreamCredential {
  return {
    headers: { Authorization: `Bearer ${token}` },
    rejected: async (final) => {
      source.finals.push(final);
      const next = source.renewals.shift();
      if (final || next === undefined) throw new ConnectFirst('connect');
      return credentialFor(next);
    },
  };
}

const credentials: UpstreamCredentialSource = {
  appliesTo: (slug) => slug === 'own',
  credential: () => {
    const token = source.token;
    if (token === undefined) {
      if (source.async) return Promise.reject(new ConnectFirst('connect'));
      throw new ConnectFirst('connect');
    }
    return source.async ? Promise.resolve(credentialFor(token)) : credentialFor(token);
  },
};

beforeAll(async () => {
  upstream = await tokenCheckingServer();
  gateway = await setup({
    apiKeys: [alice],
    mcpServers: [
      { slug: 'own', url: `${upstream.url}/mcp` },
      { slug: 'plain', url: `${upstream.url}/mcp` },
    ],
    forwarding: { upstreamCredentials: credentials },
  });
});

afterAll(async () => {
  await gateway.close();
  await upstream.close();
});

beforeEach(() => {
  upstream.accepted.clear();
  upstream.seen.length = 0;
  Object.assign(source, { token: 't1', async: false, renewals: [], finals: [] });
});

const headers = {
  'x-gateway-api-key': alice.key as string,
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
};

function call(id: number) {
  return { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'whoami', arguments: {} } };
}

async function post(body: unknown, slug = 'own', extra: Record<string, string> = {}) {
  const response = await fetch(`${gateway.url}/mcp/${slug}`, {
    method: 'POST',
    headers: { ...headers, ...extra },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  const json = response.headers.get('content-type')?.startsWith('application/json')
    ? (JSON.parse(text) as unknown)
    : undefined;
  return { status: response.status, text, json };
}

test("the official SDK client's calls reach the server with the source's token, never the client's credential", async () => {
  upstream.accepted.add('t1');
  for (const async of [false, true]) {
    source.async = async;
    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${gateway.url}/mcp/own`), {
        requestInit: { headers: { authorization: `Bearer ${alice.key}` } },
      }),
    );
    const result = (await client.callTool({ name: 'whoami', arguments: {} })) as { content: { text: string }[] };
    expect(result.content[0]?.text).toBe('Bearer t1');
    await client.close();
  }
  expect(upstream.seen.every((s) => s.authorization === 'Bearer t1')).toBe(true);
});

test('a server the source does not apply to gets no credential of it', async () => {
  const answer = await post(call(1), 'plain');
  expect(answer.status).toBe(401);
  expect(upstream.seen[0]?.authorization).toBeUndefined();
});

test('a refusal answers each JSON-RPC request with its error, and nothing reaches the server', async () => {
  source.token = undefined;
  for (const async of [false, true]) {
    source.async = async;
    const initialize = {
      jsonrpc: '2.0',
      id: 'init-1',
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'c', version: '1' } },
    };
    const one = await post(initialize);
    expect(one.status).toBe(200);
    expect(one.json).toEqual({ jsonrpc: '2.0', id: 'init-1', error: new ConnectFirst('x').jsonRpc });

    const batch = await post([call(7), { jsonrpc: '2.0', method: 'notifications/initialized' }, call(8)]);
    expect(batch.status).toBe(200);
    expect((batch.json as { id: number; error: { code: number } }[]).map((a) => [a.id, a.error.code])).toEqual([
      [7, -32042],
      [8, -32042],
    ]);

    const notification = await post({ jsonrpc: '2.0', method: 'notifications/initialized' });
    expect(notification.status).toBe(202);
    expect(notification.text).toBe('');

    const stream = await fetch(`${gateway.url}/mcp/own`, { headers: { ...headers, accept: 'text/event-stream' } });
    expect(stream.status).toBe(405);
    expect(((await stream.json()) as { error: { code: string } }).error.code).toBe('connection_required');
  }
  expect(upstream.seen).toHaveLength(0);
});

test("a 401 is followed by one renewal and one retry with the same bytes; the server's challenge never reaches the client", async () => {
  upstream.accepted.add('t2');
  source.renewals = ['t2'];
  const body = JSON.stringify(call(3));
  const answer = await post(body);
  expect(answer.status).toBe(200);
  expect(answer.text).toContain('Bearer t2');
  expect(upstream.seen.map((s) => s.authorization)).toEqual(['Bearer t1', 'Bearer t2']);
  expect(upstream.seen[0]?.body).toBe(upstream.seen[1]?.body);
  expect(source.finals).toEqual([false]);
});

test('a body over 64 KiB is retried whole after a 401', async () => {
  upstream.accepted.add('t2');
  source.renewals = ['t2'];
  const big = { ...call(4), params: { name: 'whoami', arguments: {}, _meta: { pad: 'x'.repeat(200_000) } } };
  const answer = await post(big);
  expect(answer.status).toBe(200);
  expect(upstream.seen).toHaveLength(2);
  expect(upstream.seen[1]?.body).toBe(JSON.stringify(big));
});

test('a retry refused again ends with the JSON-RPC error, asked once with final', async () => {
  source.renewals = ['t2', 't3'];
  const answer = await post(call(5));
  expect(answer.status).toBe(200);
  expect(answer.json).toEqual({ jsonrpc: '2.0', id: 5, error: new ConnectFirst('x').jsonRpc });
  expect(upstream.seen.map((s) => s.authorization)).toEqual(['Bearer t1', 'Bearer t2']);
  expect(source.finals).toEqual([false, true]);
  expect(answer.text).not.toContain('elsewhere.example');
});

test('a GET the server refuses with 401 is 405 for the client, and the credential is renewed', async () => {
  source.renewals = ['t2'];
  const stream = await fetch(`${gateway.url}/mcp/own`, { headers: { ...headers, accept: 'text/event-stream' } });
  expect(stream.status).toBe(405);
  expect(stream.headers.get('www-authenticate')).toBeNull();
  expect(source.finals).toEqual([false]);
});

test('the request record names the failure the gateway answered with', async () => {
  source.token = undefined;
  gateway.records.length = 0;
  await post(call(6));
  await new Promise((resolve) => setTimeout(resolve, 50));
  expect(gateway.records.at(-1)).toMatchObject({ upstreamCredentialError: 'connection_required', target: 'own' });
});

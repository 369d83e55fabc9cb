import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import fc from 'fast-check';
import { z } from 'zod';
import { startPostgres, type RunningPostgres } from '../../../../packages/catalog/test/postgres';
import { startRedis, type RunningRedis } from '../cache/cache-support';
import { newAdminKey, newEncryptionKey, within } from '../catalog/catalog-support';
import { startGateway, writeConfig, type RunningGateway } from '../support';

jest.setTimeout(240_000);

/**
 * A real MCP server (the official SDK's `McpServer`, stateless Streamable HTTP, JSON answers) that
 * reads each request body itself, as deployed servers do: whatever the SDK accepts (a media type in
 * any case, parameters, a byte-order mark, batches of up to 100 messages) it executes. Counts the
 * executions of its tool `count`.
 */
async function startCountingSdkServer(): Promise<{ url: string; executions: () => number; close(): Promise<void> }> {
  let executions = 0;
  const http: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const server = new McpServer({ name: 'counting-tools', version: '1.0.0' });
    server.registerTool(
      'count',
      { description: 'Counts its calls.', inputSchema: { n: z.number().optional() } },
      () => {
        executions++;
        return { content: [{ type: 'text', text: 'counted' }] };
      },
    );
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    void server.connect(transport).then(() => transport.handleRequest(req, res));
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    executions: () => executions,
    close: () =>
      new Promise((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}

const LIMIT = 3;
/** Keys with their own counters (`per: "each"` on the group), one per case so the cases do not share a minute. */
const KEYS = Array.from({ length: 50 }, (_, i) => `gw-mcp-limit-${String(i).padStart(4, '0')}`);
let nextKey = 0;
const freshKey = () => KEYS[nextKey++] as string;

const BOM = Buffer.from([0xef, 0xbb, 0xbf]);

interface RawCall {
  contentType: string;
  body: Buffer;
}

function toolCall(id: number): object {
  return { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'count', arguments: { n: id } } };
}

function raw(body: unknown, contentType = 'application/json', bom = false): RawCall {
  const json = Buffer.from(JSON.stringify(body));
  return { contentType, body: bom ? Buffer.concat([BOM, json]) : json };
}

describe('MCP tools/call limits on three gateway instances sharing Redis: one strict reading decides', () => {
  let postgres: RunningPostgres;
  let redis: RunningRedis;
  let mcp: Awaited<ReturnType<typeof startCountingSdkServer>>;
  let gateways: RunningGateway[] = [];
  let turn = 0;

  /** Sends `call` with `key` to the next instance, round robin. */
  async function post(key: string, call: RawCall): Promise<{ status: number; code?: string; text: string }> {
    const gateway = gateways[turn++ % gateways.length] as RunningGateway;
    const res = await fetch(`${gateway.url}/mcp/counting`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': call.contentType, accept: 'application/json, text/event-stream' },
      body: call.body,
      signal: AbortSignal.timeout(20_000),
    });
    const text = await res.text();
    let code: string | undefined;
    try {
      code = (JSON.parse(text) as { error?: { code?: unknown } }).error?.code as string | undefined;
    } catch {
      code = undefined;
    }
    return { status: res.status, code: typeof code === 'string' ? code : undefined, text };
  }

  /** Sends `calls` concurrently with a fresh key; answers the tool executions they made at the server and the answers. */
  async function executionsOf(calls: RawCall[], key = freshKey()) {
    const before = mcp.executions();
    const answers = await Promise.all(calls.map((call) => post(key, call)));
    return { executions: mcp.executions() - before, answers };
  }

  beforeAll(async () => {
    [postgres, redis, mcp] = await Promise.all([startPostgres(), startRedis(), startCountingSdkServer()]);
    const env = {
      DATABASE_URL: await postgres.createDatabase(),
      REDIS_URL: redis.url,
      GATEWAY_CONFIG: writeConfig({
        auth: { apiKeys: KEYS.map((key, i) => ({ key, user: { user_id: `u-mcp-${i}`, groups: ['mcp-callers'] } })) },
        mcpServers: [{ slug: 'counting', url: mcp.url }],
        limits: [{ slug: 'mcp-three', subjects: { groups: ['mcp-callers'] }, per: 'each', requests_per_minute: LIMIT }],
      }),
      GATEWAY_ADMIN_KEY: newAdminKey(),
      GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
      JWT_PRIVATE_KEY: undefined,
      GATEWAY_LIMITS_REDIS_TIMEOUT_MS: '1000',
    };
    gateways = await Promise.all([startGateway(env), startGateway(env), startGateway(env)]);
  });

  afterAll(async () => {
    await Promise.all(gateways.map((g) => g.stop()));
    await Promise.all([postgres?.destroy(), redis?.stop(), mcp?.close()]);
  });

  it('the official SDK client: three calls pass, the fourth is refused before the server', async () => {
    const key = freshKey();
    const client = new Client({ name: 'limits-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${gateways[0]!.url}/mcp/counting`), {
        requestInit: { headers: { 'x-api-key': key } },
      }),
    );
    const before = mcp.executions();
    for (let i = 0; i < LIMIT; i++) await client.callTool({ name: 'count', arguments: { n: i } });
    await expect(client.callTool({ name: 'count', arguments: { n: 9 } })).rejects.toThrow(/429|rate/i);
    expect(mcp.executions() - before).toBe(LIMIT);
    await client.close();
  });

  it.each([
    'Application/json',
    'APPLICATION/JSON',
    'application/json; charset=utf-8',
    'Application/JSON;charset="UTF-8"',
    'application/json ; charset=utf-8',
  ])('a tools/call sent as %s counts like any other: 3 of 8 execute, the rest are 429', async (contentType) => {
    const { executions, answers } = await executionsOf(
      Array.from({ length: 8 }, (_, i) => raw(toolCall(i + 1), contentType)),
    );
    expect(executions).toBe(LIMIT);
    expect(answers.filter((a) => a.status === 200)).toHaveLength(LIMIT);
    expect(answers.filter((a) => a.status === 429 && a.code === 'rate_limited')).toHaveLength(8 - LIMIT);
  });

  it('a body with a byte-order mark (which the SDK server reads) is refused 400 invalid_mcp_message: never executed uncounted', async () => {
    const { executions, answers } = await executionsOf(
      Array.from({ length: 6 }, (_, i) => raw(toolCall(i + 1), 'application/json', true)),
    );
    expect(executions).toBe(0);
    expect(answers.every((a) => a.status === 400 && a.code === 'invalid_mcp_message')).toBe(true);
  });

  it('every tools/call of a batch counts: a batch of 50 is refused whole, a batch of 3 uses the minute', async () => {
    const key = freshKey();
    const fifty = await executionsOf([raw(Array.from({ length: 50 }, (_, i) => toolCall(i + 1)))], key);
    expect(fifty.executions).toBe(0);
    expect(fifty.answers[0]).toMatchObject({ status: 429, code: 'rate_limited' });
    const three = await executionsOf(
      [raw([toolCall(1), { jsonrpc: '2.0', id: 2, method: 'tools/list' }, toolCall(3), toolCall(4)])],
      key,
    );
    expect(three.executions).toBe(3);
    expect(three.answers[0]?.status).toBe(200);
    const after = await executionsOf([raw(toolCall(5))], key);
    expect(after.executions).toBe(0);
    expect(after.answers[0]).toMatchObject({ status: 429, code: 'rate_limited' });
  });

  it('twenty concurrent batches of 50 on three instances: at most the limit executes', async () => {
    const { executions } = await executionsOf(
      Array.from({ length: 20 }, () => raw(Array.from({ length: 50 }, (_, i) => toolCall(i + 1)))),
    );
    expect(executions).toBeLessThanOrEqual(LIMIT);
  });

  it('a batch of more than 100 messages is refused 400 invalid_mcp_message, as the SDK server would', async () => {
    const { executions, answers } = await executionsOf([
      raw(Array.from({ length: 101 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'ping' }))),
    ]);
    expect(executions).toBe(0);
    expect(answers[0]).toMatchObject({ status: 400, code: 'invalid_mcp_message' });
  });

  /**
   * Generated bodies in every form the SDK server accepts (media type in any case, with
   * parameters, a byte-order mark, single messages and batches of up to 100 with mixed methods and
   * notifications), sent concurrently to the three instances with a fresh key each run: the tool
   * executions at the real SDK server never pass the limit.
   */
  it('property: however the tools/call requests are written and batched, executions never pass the limit', async () => {
    const contentType = fc.constantFrom(
      'application/json',
      'Application/json',
      'APPLICATION/JSON',
      'application/json; charset=utf-8',
      'application/JSON;charset=UTF-8',
      'application/json; foo=bar',
    );
    const message = fc.oneof(
      { weight: 3, arbitrary: fc.constant('tools/call') },
      { weight: 1, arbitrary: fc.constantFrom('tools/list', 'ping', 'notifications/initialized') },
    );
    const body = fc.oneof(
      message.map((method) => ({ batch: false, methods: [method] })),
      fc.array(message, { minLength: 1, maxLength: 100 }).map((methods) => ({ batch: true, methods })),
    );
    const request = fc.record({ contentType, bom: fc.boolean(), body });
    let executed = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(request, { minLength: 1, maxLength: 4 }), async (requests) => {
        const calls = requests.map(({ contentType, bom, body }) => {
          const messages = body.methods.map((method, i) =>
            method === 'tools/call'
              ? toolCall(i + 1)
              : method.startsWith('notifications/')
                ? { jsonrpc: '2.0', method }
                : { jsonrpc: '2.0', id: i + 1, method },
          );
          return raw(body.batch ? messages : messages[0], contentType, bom);
        });
        const { executions, answers } = await executionsOf(calls);
        executed += executions;
        expect(executions).toBeLessThanOrEqual(LIMIT);
        for (const answer of answers) expect([200, 202, 400, 429]).toContain(answer.status);
      }),
      { numRuns: 25, seed: Number(process.env.FC_SEED ?? 4646) },
    );
    // The gate is not closed to everything: the forms it reads are served up to the limit.
    expect(executed).toBeGreaterThan(0);
    expect(nextKey).toBeLessThanOrEqual(KEYS.length);
  });

  it('with Redis down (deny, the default), every form of tools/call answers 503 limits_unavailable and nothing executes', async () => {
    await redis.stop();
    try {
      const { executions, answers } = await executionsOf([
        raw(toolCall(1)),
        raw(toolCall(2), 'Application/json'),
        raw(toolCall(3), 'APPLICATION/JSON; charset=utf-8'),
        raw([toolCall(4), toolCall(5)], 'application/json'),
      ]);
      expect(executions).toBe(0);
      for (const answer of answers) expect(answer).toMatchObject({ status: 503, code: 'limits_unavailable' });
    } finally {
      await redis.start();
    }
    const key = freshKey();
    // The instances serve again once Redis is back.
    await within(10_000, async () => (await post(key, raw(toolCall(1)))).status === 200);
  });
});

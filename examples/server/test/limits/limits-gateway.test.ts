import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { adminClient, newAdminKey, newEncryptionKey, startMcpDouble, within } from '../catalog/catalog-support';
import { failedStart, startGateway, writeConfig, type RunningGateway } from '../support';

jest.setTimeout(120_000);

/**
 * An Anthropic double: non-streamed answers report 10 input and 20 output tokens; a streamed
 * answer sends `message_start` (10 input tokens, 1 output), then a text delta every 40 ms, and
 * `message_delta` (20 output tokens) and `message_stop` after 25 of them — or, for a model named
 * `*-cut`, closes the connection after three deltas (a stream ended early).
 */
async function startStreamingAnthropic(): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString() || '{}') as { model: string; stream?: boolean };
      if (!body.stream) {
        res.setHeader('content-type', 'application/json');
        res.end(
          JSON.stringify({
            id: 'msg_1',
            type: 'message',
            role: 'assistant',
            model: body.model,
            content: [{ type: 'text', text: 'hello' }],
            stop_reason: 'end_turn',
            stop_sequence: null,
            usage: { input_tokens: 10, output_tokens: 20 },
          }),
        );
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const event = (name: string, data: unknown) => res.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
      event('message_start', {
        type: 'message_start',
        message: {
          id: 'msg_s',
          type: 'message',
          role: 'assistant',
          model: body.model,
          content: [],
          usage: { input_tokens: 10, output_tokens: 1 },
        },
      });
      event('content_block_start', {
        type: 'content_block_start',
        index: 0,
        content_block: { type: 'text', text: '' },
      });
      let sent = 0;
      const timer = setInterval(() => {
        event('content_block_delta', {
          type: 'content_block_delta',
          index: 0,
          delta: { type: 'text_delta', text: 'x' },
        });
        sent++;
        if (body.model.endsWith('-cut') && sent === 3) {
          clearInterval(timer);
          res.destroy();
          return;
        }
        if (sent === 25) {
          clearInterval(timer);
          event('content_block_stop', { type: 'content_block_stop', index: 0 });
          event('message_delta', {
            type: 'message_delta',
            delta: { stop_reason: 'end_turn' },
            usage: { output_tokens: 20 },
          });
          event('message_stop', { type: 'message_stop' });
          res.end();
        }
      }, 40);
      res.on('close', () => clearInterval(timer));
    });
  });
  const url = await new Promise<string>((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)),
  );
  return {
    url,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

const ONE = { input: 1, output: 1, cacheWrite: 1, cacheRead: 1 };

describe('limits, budgets and cost on one gateway (counters in memory)', () => {
  let anthropic: Awaited<ReturnType<typeof startStreamingAnthropic>>;
  let mcpServer: Awaited<ReturnType<typeof startMcpDouble>>;
  let gateway: RunningGateway;
  let admin: ReturnType<typeof adminClient>;

  beforeAll(async () => {
    [anthropic, mcpServer] = await Promise.all([startStreamingAnthropic(), startMcpDouble()]);
    const adminKey = newAdminKey();
    gateway = await startGateway({
      GATEWAY_CONFIG: writeConfig({
        auth: {
          apiKeys: [
            { key: 'gw-mcp-0000000001', user: { user_id: 'u-mcp' } },
            { key: 'gw-stream-0000001', user: { user_id: 'u-stream' } },
            { key: 'gw-cache-00000001', user: { user_id: 'u-cache' } },
            { key: 'gw-admin-limit-01', user: { user_id: 'u-admin-limit' } },
            { key: 'gw-responses-0001', user: { user_id: 'u-responses' } },
          ],
        },
        providers: [
          {
            slug: 'slow',
            provider: 'anthropic',
            apiKey: 'sk-ant-slow-0001',
            baseUrl: anthropic.url,
            pricing: { 'claude-haiku-4-5': ONE, 'claude-haiku-4-5-cut': ONE },
          },
        ],
        mcpServers: [{ slug: 'tools', url: mcpServer.url }],
        limits: [
          { slug: 'mcp-two', subjects: { users: ['u-mcp'] }, requests_per_minute: 2 },
          {
            slug: 'stream-tokens',
            subjects: { users: ['u-stream'] },
            tokens_per_minute: 1_000_000,
            cost_usd_per_day: 100,
          },
          { slug: 'cache-rpm', subjects: { users: ['u-cache'] }, requests_per_minute: 100, cost_usd_per_month: 100 },
          { slug: 'responses-one', subjects: { users: ['u-responses'] }, requests_per_minute: 1 },
        ],
      }),
      GATEWAY_ADMIN_KEY: adminKey,
      GATEWAY_ENCRYPTION_KEY: newEncryptionKey(),
      JWT_PRIVATE_KEY: undefined,
    });
    admin = adminClient(gateway.url, adminKey);
  });

  afterAll(async () => {
    await gateway?.stop();
    await Promise.all([anthropic?.close(), mcpServer?.close()]);
  });

  const mcp = (method: string, params: unknown = {}) =>
    fetch(`${gateway.url}/mcp/tools`, {
      method: 'POST',
      headers: {
        'x-api-key': 'gw-mcp-0000000001',
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });

  it('counts an MCP tools/call as a request (other methods are not), refusing the third of two per minute', async () => {
    expect((await mcp('tools/list')).status).toBe(200);
    expect((await mcp('tools/call', { name: 'search', arguments: {} })).status).toBe(200);
    expect((await mcp('tools/call', { name: 'search', arguments: {} })).status).toBe(200);
    const refused = await mcp('tools/call', { name: 'search', arguments: {} });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(refused.headers.get('x-ratelimit-limit-requests')).toBe('2');
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('rate_limited');
    expect((await mcp('tools/list')).status).toBe(200);
  });

  const streamBody = (model: string) =>
    JSON.stringify({
      model: `@slow/${model}`,
      stream: true,
      max_tokens: 5000,
      messages: [{ role: 'user', content: 'hi' }],
    });
  /** The largest use of a request: max_tokens plus the input estimate (a token per 4 bytes of the body). */
  const largestUse = (model: string) => 5000 + Math.ceil(Buffer.byteLength(streamBody(model)) / 4);
  const stream = (model: string, signal?: AbortSignal) =>
    fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer gw-stream-0000001', 'content-type': 'application/json' },
      body: streamBody(model),
      signal,
    });
  const streamStatus = async () => (await admin('GET', '/limits/stream-tokens/status?user=u-stream')).body;

  it('settles a stream the client abandons, and one the provider ends early, at their largest use (no final usage): never for free', async () => {
    const controller = new AbortController();
    const res = await stream('claude-haiku-4-5', controller.signal);
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    await reader.read();
    // While the answer streams, its largest use (max_tokens and the input estimate) is reserved.
    const reserved = (await streamStatus()).tokens_per_minute.used;
    expect(reserved).toBe(largestUse('claude-haiku-4-5'));
    controller.abort();
    // The provider reported no final usage: the reservation stands, settled once (at $1 per million tokens).
    await within(5_000, async () => (await admin('GET', '/requests?user=u-stream')).body.data.length === 1);
    const [abandoned] = (await admin('GET', '/requests?user=u-stream')).body.data as {
      status: number;
      cost_usd: number;
    }[];
    expect(abandoned).toMatchObject({ status: 200 });
    expect(abandoned!.cost_usd).toBeCloseTo(reserved / 1e6, 12);
    expect(await streamStatus()).toMatchObject({ tokens_per_minute: { used: reserved } });
    const cut = await stream('claude-haiku-4-5-cut');
    await cut.text();
    await within(5_000, async () => (await admin('GET', '/requests?user=u-stream')).body.data.length === 2);
    const [ended] = (await admin('GET', '/requests?user=u-stream')).body.data as {
      error_code: string;
      cost_usd: number;
    }[];
    expect(ended).toMatchObject({ error_code: 'upstream_stream_ended' });
    const both = reserved + largestUse('claude-haiku-4-5-cut');
    expect((await streamStatus()).tokens_per_minute.used).toBe(both);
    expect((await streamStatus()).cost_usd_per_day.spent).toBeCloseTo(both / 1e6, 12);
    // A stream that ends normally is settled to its reported usage: 10 input and 20 output tokens.
    await (await stream('claude-haiku-4-5')).text();
    await within(5_000, async () => (await streamStatus()).tokens_per_minute.used === both + 30);
  });

  it('records cost_usd on every request (a cache hit at 0) and sums it in /admin/v1/usage', async () => {
    const ask = () =>
      fetch(`${gateway.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': 'gw-cache-00000001', 'content-type': 'application/json', 'x-gateway-cache': 'simple' },
        body: JSON.stringify({
          model: '@slow/claude-haiku-4-5',
          max_tokens: 50,
          messages: [{ role: 'user', content: 'cache me' }],
        }),
      });
    expect((await ask()).headers.get('x-gateway-cache-status')).toBe('MISS');
    const hit = await ask();
    expect(hit.headers.get('x-gateway-cache-status')).toBe('HIT');
    expect(hit.headers.get('x-ratelimit-remaining-requests')).toBe('98');
    await within(10_000, async () => (await admin('GET', '/requests?user=u-cache')).body.data.length === 2);
    const records = (await admin('GET', '/requests?user=u-cache')).body.data as {
      cache_status: string;
      cost_usd: number;
    }[];
    expect(records.map((r) => [r.cache_status, r.cost_usd])).toEqual([
      ['HIT', 0],
      ['MISS', 30 / 1e6],
    ]);
    const usage = await admin('GET', '/usage?group_by=user');
    expect(
      (usage.body.data as { key: string; cost_usd: number }[]).find((r) => r.key === 'u-cache')?.cost_usd,
    ).toBeCloseTo(30 / 1e6, 12);
    // A refused caller's record costs 0 too.
    const stranger = await fetch(`${gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': 'gw-unknown-000001', 'content-type': 'application/json' },
      body: '{}',
    });
    expect(stranger.status).toBe(401);
    await within(10_000, async () => (await admin('GET', '/requests?status=401')).body.data.length >= 1);
    expect((await admin('GET', '/requests?status=401')).body.data[0].cost_usd).toBe(0);
    // The month's spend is what the records say.
    const status = await admin('GET', '/limits/cache-rpm/status?user=u-cache');
    expect(status.body.cost_usd_per_month.spent).toBeCloseTo(30 / 1e6, 12);
  });

  it('counts /v1/responses like chat completions: the second of one per minute is refused, the first costs what it used', async () => {
    const ask = () =>
      fetch(`${gateway.url}/v1/responses`, {
        method: 'POST',
        headers: { 'x-api-key': 'gw-responses-0001', 'content-type': 'application/json' },
        body: JSON.stringify({ model: '@slow/claude-haiku-4-5', max_output_tokens: 50, input: 'hello', store: false }),
      });
    const first = await ask();
    expect(first.status).toBe(200);
    expect(first.headers.get('x-ratelimit-limit-requests')).toBe('1');
    expect(first.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    const second = await ask();
    expect(second.status).toBe(429);
    expect(second.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(((await second.json()) as { error: { code: string } }).error.code).toBe('rate_limited');
    await within(10_000, async () => (await admin('GET', '/requests?user=u-responses')).body.data.length === 2);
    const records = (await admin('GET', '/requests?user=u-responses')).body.data as {
      route: string;
      status: number;
      cost_usd: number;
    }[];
    expect(records.map((r) => [r.route, r.status])).toEqual([
      ['responses', 429],
      ['responses', 200],
    ]);
    expect(records[1]?.cost_usd).toBeGreaterThan(0);
  });

  it('manages limits through the admin API: create, read, change on version, delete, audited; config limits are read-only', async () => {
    const created = await admin('POST', '/limits', {
      slug: 'admin-made',
      subjects: { users: ['u-admin-limit'] },
      per: 'shared',
      requests_per_minute: 1,
    });
    expect(created.status).toBe(201);
    const call = () =>
      fetch(`${gateway.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': 'gw-admin-limit-01', 'content-type': 'application/json' },
        body: JSON.stringify({
          model: '@slow/claude-haiku-4-5',
          max_tokens: 5,
          messages: [{ role: 'user', content: 'a' }],
        }),
      });
    // The next request on this instance sees it.
    expect((await call()).status).toBe(200);
    const refused = await call();
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { code: string }).code).toBe('rate_limited');
    const changed = await admin('PATCH', '/limits/admin-made', { version: 1, requests_per_minute: 5 });
    expect(changed.body).toMatchObject({ version: 2, requests_per_minute: 5 });
    expect((await call()).status).toBe(200);
    expect((await admin('PATCH', '/limits/admin-made', { version: 1, requests_per_minute: 9 })).body.error.code).toBe(
      'version_conflict',
    );
    expect(
      (await admin('POST', '/limits', { slug: 'bad', subjects: {}, cost_usd_per_day: -1 })).body.error,
    ).toMatchObject({
      code: 'invalid_request',
      param: 'cost_usd_per_day',
    });
    expect((await admin('PATCH', '/limits/mcp-two', { version: 1, requests_per_minute: 9 })).body.error.code).toBe(
      'managed_by_config_file',
    );
    expect((await admin('GET', '/limits')).body.data.map((l: { slug: string }) => l.slug)).toEqual(
      expect.arrayContaining(['mcp-two', 'stream-tokens', 'cache-rpm', 'admin-made']),
    );
    expect((await admin('GET', '/limits/nope/status')).status).toBe(404);
    expect((await admin('DELETE', '/limits/admin-made')).body).toMatchObject({ object: 'limit', deleted: true });
    const audit = await admin('GET', '/audit?record=limits/admin-made');
    expect(audit.body.data.map((e: { action: string }) => e.action)).toEqual(['delete', 'update', 'create']);
    // Pricing on a provider is validated too.
    const badPricing = await admin('POST', '/providers', {
      slug: 'priced',
      provider: 'anthropic',
      apiKey: 'sk-ant-priced-0001',
      pricing: { 'claude-haiku-4-5': { input: -1, output: 1 } },
    });
    expect(badPricing.body.error).toMatchObject({ code: 'invalid_request', param: 'pricing.claude-haiku-4-5.input' });
  });

  it('refuses at start-up a limit of the config file that is not valid, naming the field', async () => {
    const failure = await failedStart({
      GATEWAY_CONFIG: writeConfig({ limits: [{ slug: 'x', subjects: {}, per: 'everyone' }] }),
    });
    expect(failure.code).toBe(1);
    expect(failure.stderr).toMatch(/limits\[0\]\.per/);
  });
});

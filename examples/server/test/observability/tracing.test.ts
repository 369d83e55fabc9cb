import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import OpenAI from 'openai';
import { startGateway, writeConfig, type RunningGateway } from '../support';
import {
  ANSWERED_MODEL,
  eventually,
  metric,
  startMcpRecorder,
  startOtlpReceiver,
  startProviderDouble,
  type OtlpReceiver,
  type ProviderDouble,
} from './otel-support';

jest.setTimeout(180_000);

const API_KEY = 'gw-trace-key-SECRET-0123456789abcdef';
const PROVIDER_KEY = 'sk-ant-PROVIDER-SECRET-0123456789';
const PROMPT = 'SECRET-PROMPT tell me something';
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';
const TRACEPARENT = `00-${TRACE_ID}-${CALLER_SPAN}-01`;
const W3C = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/;

let receiver: OtlpReceiver;
let provider: ProviderDouble;
let mcp: Awaited<ReturnType<typeof startMcpRecorder>>;

function gatewayConfig() {
  return writeConfig({
    auth: { apiKeys: [{ key: API_KEY, user: { user_id: 'u_trace' } }] },
    providers: [{ slug: 'claude', provider: 'anthropic', apiKey: PROVIDER_KEY, baseUrl: provider.url }],
    mcpServers: [{ slug: 'signed-tools', url: mcp.url, user_identity_forwarding: { method: 'jwt_header' } }],
  });
}

beforeAll(async () => {
  [receiver, provider, mcp] = await Promise.all([startOtlpReceiver(), startProviderDouble(), startMcpRecorder()]);
});

afterAll(async () => {
  await Promise.all([receiver.close(), provider.close(), mcp.close()]);
});

/** Every string a span attribute must never contain: keys, tokens and message content. */
function secretsSeen(): string[] {
  const tokens = mcp.headers.map((h) => h['x-user-jwt']).filter((t): t is string => typeof t === 'string');
  return [API_KEY, PROVIDER_KEY, 'SECRET-PROMPT', 'SECRET-ANSWER', ...tokens];
}

describe('with an OTLP endpoint', () => {
  let gateway: RunningGateway;

  beforeAll(async () => {
    receiver.mode = 'ok';
    gateway = await startGateway({
      GATEWAY_CONFIG: gatewayConfig(),
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_BSP_SCHEDULE_DELAY: '100',
    });
  });

  afterAll(async () => {
    await gateway.stop();
  });

  it('joins the caller trace, exports GenAI spans, and sends the provider a traceparent naming the upstream span', async () => {
    const openai = new OpenAI({
      apiKey: API_KEY,
      baseURL: `${gateway.url}/v1`,
      defaultHeaders: { traceparent: TRACEPARENT, 'x-gateway-metadata': '{"team":"search"}' },
    });
    const { data: completion, response } = await openai.chat.completions
      .create({ model: '@claude/claude-haiku-4-5', max_tokens: 32, messages: [{ role: 'user', content: PROMPT }] })
      .withResponse();
    expect(completion.choices[0]?.message.content).toBe('SECRET-ANSWER');
    expect(response.headers.get('x-gateway-trace-id')).toBe(TRACE_ID);
    const [input, output] = provider.reported.at(-1) as [number, number];

    await eventually(15_000, () =>
      receiver.spans.some((s) => s.traceId === TRACE_ID && s.attributes['gen_ai.operation.name'] === 'chat'),
    );
    const trace = receiver.spans.filter((s) => s.traceId === TRACE_ID);
    const server = trace.find((s) => s.kind === 2) as (typeof trace)[number];
    expect(server.parentSpanId).toBe(CALLER_SPAN);
    expect(server.serviceName).toBe('gateway');
    const auth = trace.find((s) => s.name === 'gateway.authenticate');
    expect(auth?.parentSpanId).toBe(server.spanId);
    const model = trace.find((s) => s.attributes['gen_ai.operation.name'] === 'chat') as (typeof trace)[number];
    expect(model.parentSpanId).toBe(server.spanId);
    expect(model.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'anthropic',
      'gen_ai.request.model': 'claude-haiku-4-5',
      'gen_ai.response.model': ANSWERED_MODEL,
      'gen_ai.usage.input_tokens': input,
      'gen_ai.usage.output_tokens': output,
    });
    // The provider's traceparent: this trace, its parent the gateway's upstream span.
    const sent = W3C.exec(String(provider.headers.at(-1)?.traceparent));
    expect(sent?.[1]).toBe(TRACE_ID);
    expect(sent?.[2]).toBe(model.spanId);
  });

  it('records a stream span with the time to first token, and the usage the stream reported', async () => {
    const res = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json', traceparent: TRACEPARENT },
      body: JSON.stringify({
        model: '@claude/claude-haiku-4-5',
        max_tokens: 32,
        stream: true,
        messages: [{ role: 'user', content: PROMPT }],
      }),
    });
    expect(await res.text()).toContain('SECRET-ANSWER');
    const [input, output] = provider.reported.at(-1) as [number, number];
    await eventually(15_000, () => receiver.spans.some((s) => s.name === 'gateway.stream'));
    const stream = receiver.spans.find((s) => s.name === 'gateway.stream') as OtlpReceiver['spans'][number];
    expect(stream.events).toContain('first_token');
    expect(stream.attributes['gateway.stream.time_to_first_token_ms']).toEqual(expect.any(Number));
    const parent = receiver.spans.find((s) => s.spanId === stream.parentSpanId);
    expect(parent?.attributes).toMatchObject({
      'gen_ai.response.model': ANSWERED_MODEL,
      'gen_ai.usage.input_tokens': input,
      'gen_ai.usage.output_tokens': output,
    });
  });

  it('traces an MCP tools/call through jwt_header forwarding; the MCP server gets the traceparent', async () => {
    const transport = new StreamableHTTPClientTransport(new URL(`${gateway.url}/mcp/signed-tools`), {
      requestInit: { headers: { 'x-gateway-api-key': API_KEY, traceparent: TRACEPARENT } },
    });
    const client = new Client({ name: 'trace-test', version: '1.0.0' });
    await client.connect(transport);
    await client.callTool({ name: 'whoami', arguments: { note: 'SECRET-PROMPT' } });
    await client.close();

    await eventually(15_000, () => receiver.spans.some((s) => s.attributes['mcp.method.name'] === 'tools/call'));
    const call = receiver.spans.find(
      (s) => s.attributes['mcp.method.name'] === 'tools/call',
    ) as OtlpReceiver['spans'][number];
    expect(call.traceId).toBe(TRACE_ID);
    expect(call.attributes).toMatchObject({ 'gateway.mcp_server.slug': 'signed-tools', 'gen_ai.tool.name': 'whoami' });
    expect(call.name).toBe('tools/call whoami');
    const toolCallHeaders = mcp.headers.find((h) => W3C.exec(String(h.traceparent))?.[2] === call.spanId);
    expect(toolCallHeaders).toBeDefined();
    expect(W3C.exec(String(toolCallHeaders?.traceparent))?.[1]).toBe(TRACE_ID);
    const signing = receiver.spans.filter((s) => s.name === 'gateway.identity_token.sign');
    expect(signing.map((s) => s.attributes['gateway.token_cache.hit'])).toEqual(expect.arrayContaining([false, true]));
  });

  it('puts no secret, token or message content in any attribute of any span', async () => {
    await eventually(15_000, () => receiver.spans.length > 10);
    const secrets = secretsSeen();
    expect(secrets.length).toBeGreaterThan(4);
    for (const span of receiver.spans) {
      for (const [key, value] of Object.entries(span.attributes)) {
        for (const secret of secrets) {
          if (String(value).includes(secret)) throw new Error(`span ${span.name} attribute ${key} carries a secret`);
        }
      }
      for (const secret of secrets) expect(span.name).not.toContain(secret);
    }
  });

  it('counts the spans it exported', async () => {
    await eventually(10_000, async () => (await metric(gateway.url, 'gateway_trace_spans_exported_total')) > 0);
  });
});

describe('without an OTLP endpoint', () => {
  it('starts no SDK, still continues the trace and sends each upstream a traceparent with a span id of its own', async () => {
    const gateway = await startGateway({ GATEWAY_CONFIG: gatewayConfig() });
    try {
      const res = await fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json', traceparent: TRACEPARENT },
        body: JSON.stringify({
          model: '@claude/claude-haiku-4-5',
          max_tokens: 8,
          messages: [{ role: 'user', content: 'hi' }],
        }),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-gateway-trace-id')).toBe(TRACE_ID);
      const sent = W3C.exec(String(provider.headers.at(-1)?.traceparent));
      expect(sent?.[1]).toBe(TRACE_ID);
      expect(sent?.[2]).not.toBe(CALLER_SPAN);
      // Without a traceparent, a new trace whose id the response names.
      const fresh = await fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: '@claude/claude-haiku-4-5',
          max_tokens: 8,
          messages: [{ role: 'user', content: 'hi' }],
        }),
      });
      const traceId = fresh.headers.get('x-gateway-trace-id');
      expect(traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(W3C.exec(String(provider.headers.at(-1)?.traceparent))?.[1]).toBe(traceId);
      expect(await metric(gateway.url, 'gateway_trace_spans_exported_total')).toBe(0);
    } finally {
      await gateway.stop();
    }
  });
});

describe('with the collector down or hanging', () => {
  for (const mode of ['refuse', 'hang'] as const) {
    it(`serves every request (${mode}), drops and counts spans, and keeps memory bounded`, async () => {
      receiver.mode = mode;
      const gateway = await startGateway({
        GATEWAY_CONFIG: gatewayConfig(),
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces`,
        OTEL_BSP_SCHEDULE_DELAY: '50',
        OTEL_BSP_MAX_QUEUE_SIZE: '64',
        OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '16',
        OTEL_BSP_EXPORT_TIMEOUT: '500',
        OTEL_EXPORTER_OTLP_TIMEOUT: '500',
      });
      try {
        const rss = () =>
          Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${gateway.child.pid}/status`, 'utf8'))?.[1]) * 1024;
        const body = JSON.stringify({
          model: '@claude/claude-haiku-4-5',
          max_tokens: 8,
          messages: [{ role: 'user', content: 'hi' }],
        });
        const send = async () => {
          const started = Date.now();
          const res = await fetch(`${gateway.url}/v1/chat/completions`, {
            method: 'POST',
            headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
            body,
          });
          await res.arrayBuffer();
          return { status: res.status, ms: Date.now() - started };
        };
        for (let i = 0; i < 50; i++) await send();
        const before = rss();
        const results = [];
        for (let round = 0; round < 20; round++) results.push(...(await Promise.all(Array.from({ length: 20 }, send))));
        expect(results.every((r) => r.status === 200)).toBe(true);
        // No request waits on the collector (its timeout is 500 ms).
        expect(Math.max(...results.map((r) => r.ms))).toBeLessThan(2_000);
        await eventually(20_000, async () => (await metric(gateway.url, 'gateway_trace_spans_dropped_total')) > 0);
        expect(await metric(gateway.url, 'gateway_trace_spans_queued')).toBeLessThanOrEqual(64);
        expect(rss() - before).toBeLessThan(64 * 1024 * 1024);
      } finally {
        await gateway.stop();
        receiver.mode = 'ok';
      }
    });
  }
});

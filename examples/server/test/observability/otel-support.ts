import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One span as the OTLP/JSON exporter sends it, with its attributes flattened. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, string | number | boolean>;
  events: string[];
  serviceName: string | undefined;
}

/** How the receiver answers: accept, refuse every export (500 once then closing), or never answer. */
export type ReceiverMode = 'ok' | 'refuse' | 'hang';

/** A real OTLP/HTTP receiver on 127.0.0.1 that decodes what the exporter sends (OTLP/JSON). */
export interface OtlpReceiver {
  url: string;
  spans: ReceivedSpan[];
  mode: ReceiverMode;
  /** Requests received, whatever the mode. */
  posts: number;
  close(): Promise<void>;
}

type OtlpValue = {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
};

function value(v: OtlpValue): string | number | boolean {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  return JSON.stringify(v);
}

/** OTLP/JSON ids are hex (the JS exporter's JSON serializer), or base64 per the spec: both are read. */
function hexId(id: string | undefined, bytes: number): string {
  if (!id) return '';
  if (new RegExp(`^[0-9a-f]{${bytes * 2}}$`).test(id)) return id;
  return Buffer.from(id, 'base64').toString('hex');
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const hanging: ServerResponse[] = [];
  const receiver = {
    spans: [] as ReceivedSpan[],
    mode: 'ok' as ReceiverMode,
    posts: 0,
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      receiver.posts++;
      if (receiver.mode === 'hang') {
        hanging.push(res);
        return;
      }
      if (receiver.mode === 'refuse') {
        res.writeHead(400, { 'content-type': 'application/json' }).end('{}');
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        resourceSpans: {
          resource?: { attributes?: { key: string; value: OtlpValue }[] };
          scopeSpans: {
            spans: {
              traceId: string;
              spanId: string;
              parentSpanId?: string;
              name: string;
              kind: number;
              attributes?: { key: string; value: OtlpValue }[];
              events?: { name: string }[];
            }[];
          }[];
        }[];
      };
      for (const resource of body.resourceSpans ?? []) {
        const serviceName = resource.resource?.attributes?.find((a) => a.key === 'service.name')?.value.stringValue;
        for (const scope of resource.scopeSpans ?? []) {
          for (const span of scope.spans ?? []) {
            receiver.spans.push({
              traceId: hexId(span.traceId, 16),
              spanId: hexId(span.spanId, 8),
              parentSpanId: hexId(span.parentSpanId, 8),
              name: span.name,
              kind: span.kind,
              attributes: Object.fromEntries((span.attributes ?? []).map((a) => [a.key, value(a.value)])),
              events: (span.events ?? []).map((e) => e.name),
              serviceName,
            });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  const url = await listen(server);
  return Object.assign(receiver, {
    url,
    close: async () => {
      for (const res of hanging) res.destroy();
      await close(server);
    },
  });
}

/**
 * A provider double that records each request's headers and answers like Anthropic (JSON or a
 * stream): a message saying "please fail" gets a 429 `rate_limit_error`, one saying "fail plainly"
 * a 503 with a text body.
 */
export interface ProviderDouble {
  url: string;
  headers: IncomingHttpHeaders[];
  /** Every usage it reported, as [input, output]. */
  reported: [number, number][];
  close(): Promise<void>;
}

/** The model the double reports, different from the one asked, so the record shows which is which. */
export const ANSWERED_MODEL = 'claude-sonnet-4-5-20250929';

export async function startProviderDouble(): Promise<ProviderDouble> {
  const double = { headers: [] as IncomingHttpHeaders[], reported: [] as [number, number][] };
  let n = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      double.headers.push(req.headers);
      const body = JSON.parse(Buffer.concat(chunks).toString() || '{}') as {
        stream?: boolean;
        messages?: { content: unknown }[];
      };
      const text = JSON.stringify(body.messages ?? '');
      if (text.includes('fail plainly')) {
        res.writeHead(503, { 'content-type': 'text/plain' });
        res.end('upstream connect error');
        return;
      }
      if (text.includes('please fail')) {
        res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' });
        res.end(JSON.stringify({ type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } }));
        return;
      }
      n++;
      const input = 10 + (n % 7);
      const output = 3 + (n % 5);
      double.reported.push([input, output]);
      const usage = {
        input_tokens: input,
        output_tokens: output,
        cache_creation_input_tokens: 2,
        cache_read_input_tokens: 1,
      };
      if (body.stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const events: [string, unknown][] = [
          [
            'message_start',
            {
              type: 'message_start',
              message: {
                id: 'msg_1',
                type: 'message',
                role: 'assistant',
                model: ANSWERED_MODEL,
                content: [],
                stop_reason: null,
                usage: { ...usage, output_tokens: 1 },
              },
            },
          ],
          ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
          [
            'content_block_delta',
            { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'SECRET-ANSWER' } },
          ],
          ['content_block_stop', { type: 'content_block_stop', index: 0 }],
          [
            'message_delta',
            { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: output } },
          ],
          ['message_stop', { type: 'message_stop' }],
        ];
        res.end(events.map(([e, d]) => `event: ${e}\ndata: ${JSON.stringify(d)}\n\n`).join(''));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'msg_1',
          type: 'message',
          role: 'assistant',
          model: ANSWERED_MODEL,
          content: [{ type: 'text', text: 'SECRET-ANSWER' }],
          stop_reason: 'end_turn',
          stop_sequence: null,
          usage,
        }),
      );
    });
  });
  const url = await listen(server);
  return Object.assign(double, { url, close: () => close(server) });
}

/** An MCP server double that records each request's headers and answers every JSON-RPC POST. */
export async function startMcpRecorder(): Promise<{
  url: string;
  headers: IncomingHttpHeaders[];
  close(): Promise<void>;
}> {
  const headers: IncomingHttpHeaders[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      headers.push(req.headers);
      if (req.method !== 'POST') {
        res.writeHead(405).end();
        return;
      }
      const rpc = JSON.parse(Buffer.concat(chunks).toString() || '{}') as {
        id?: unknown;
        method?: string;
        params?: { protocolVersion?: string };
      };
      if (rpc.id === undefined) {
        res.writeHead(202).end();
        return;
      }
      const result =
        rpc.method === 'initialize'
          ? {
              protocolVersion: rpc.params?.protocolVersion ?? '2025-06-18',
              capabilities: { tools: {} },
              serverInfo: { name: 'recorder', version: '1.0.0' },
            }
          : { content: [] };
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ jsonrpc: '2.0', id: rpc.id, result }));
    });
  });
  const url = await listen(server);
  return { url: `${url}/mcp`, headers, close: () => close(server) };
}

export function listen(server: Server): Promise<string> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)),
  );
}

export function close(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

/** Polls `check` until it is true, or fails after `ms`. */
export async function eventually(ms: number, check: () => boolean | Promise<boolean>): Promise<void> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > ms) throw new Error(`not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Reads one counter or gauge (summed over its labels, or the one with `label`) from the Prometheus scrape. */
export async function metric(base: string, name: string, label?: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name) || (line[name.length] !== ' ' && line[name.length] !== '{')) continue;
    if (label !== undefined && !line.includes(label)) continue;
    total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expectMatchesOpenApi } from '../../../../packages/catalog/test/openapi';

/** A real HTTP server that answers like Anthropic's Messages API and remembers the keys it was sent. */
export interface AnthropicDouble {
  url: string;
  /** The `x-api-key` of every request, in order. */
  keys: string[];
  /** The models its `GET /v1/models` lists; change it to publish a new model. */
  models: string[];
  /** The `model` of every Messages request, in order. */
  requestedModels: string[];
  close(): Promise<void>;
}

export async function startAnthropicDouble(): Promise<AnthropicDouble> {
  const double = {
    keys: [] as string[],
    models: ['claude-haiku-4-5', 'claude-sonnet-4-5', 'claude-opus-4-1'],
    requestedModels: [] as string[],
  };
  const server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      double.keys.push(String(req.headers['x-api-key']));
      res.setHeader('content-type', 'application/json');
      res.setHeader('request-id', 'req_double');
      if (req.method === 'GET' && req.url?.startsWith('/v1/models')) {
        const data = double.models.map((id) => ({
          type: 'model',
          id,
          display_name: id,
          created_at: '2025-01-01T00:00:00Z',
        }));
        res.end(
          JSON.stringify({ data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null }),
        );
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString() || '{}') as { model?: string };
      if (req.url?.startsWith('/v1/messages/count_tokens')) {
        res.end(JSON.stringify({ input_tokens: 5 }));
        return;
      }
      double.requestedModels.push(String(body.model));
      res.end(
        JSON.stringify({
          id: 'msg_double',
          type: 'message',
          role: 'assistant',
          model: body.model ?? 'claude-sonnet-4-5',
          content: [{ type: 'text', text: 'hello from the double' }],
          stop_reason: 'end_turn',
          stop_sequence: null,
          usage: { input_tokens: 3, output_tokens: 4 },
        }),
      );
    });
  });
  const url = await listen(server);
  return Object.assign(double, { url, close: () => close(server) });
}

/** A real HTTP server standing in for an MCP server: answers every JSON-RPC POST with its id. */
export async function startMcpDouble(): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    if (req.method === 'GET') {
      // A server-to-client event stream that takes its time: three events, 150 ms apart.
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      let sent = 0;
      const timer = setInterval(() => {
        res.write(
          `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"n":${++sent}}}\n\n`,
        );
        if (sent === 3) {
          clearInterval(timer);
          res.end();
        }
      }, 150);
      res.on('close', () => clearInterval(timer));
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const rpc = JSON.parse(Buffer.concat(chunks).toString() || '{}') as { id?: unknown };
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ jsonrpc: '2.0', id: rpc.id ?? null, result: { ok: true } }));
    });
  });
  const url = await listen(server);
  return { url: `${url}/mcp`, close: () => close(server) };
}

function listen(server: Server): Promise<string> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)),
  );
}

function close(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

export const newAdminKey = () => `admin-${randomBytes(18).toString('base64url')}`;
export const newEncryptionKey = () => randomBytes(32).toString('base64');

/** An answer of the admin API: status, parsed body and the text as sent. */
export interface AdminAnswer {
  status: number;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  text: string;
}

/**
 * A client of one gateway's admin API that checks every answer against the OpenAPI document and
 * keeps every answer's text (so a test can assert no secret ever appeared in one).
 */
export function adminClient(base: string, adminKey: string, seen: string[] = []) {
  return async function admin(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = { authorization: `Bearer ${adminKey}` },
  ): Promise<AdminAnswer> {
    const res = await fetch(`${base}/admin/v1${path}`, {
      method,
      headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    seen.push(text);
    const parsed = text === '' ? undefined : JSON.parse(text);
    expectMatchesOpenApi(method, `/admin/v1${path}`, res.status, parsed);
    return { status: res.status, body: parsed, text };
  };
}

/** One chat completion through the gateway with `apiKey`, as the OpenAI SDK would send it. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function chat(base: string, apiKey: string, model: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }),
  });
  return { status: res.status, body: await res.json() };
}

/** Polls `check` until it returns true or `ms` pass; resolves with the time it took, or rejects. */
export async function within(ms: number, check: () => Promise<boolean>): Promise<number> {
  const started = Date.now();
  for (;;) {
    if (await check()) return Date.now() - started;
    if (Date.now() - started > ms) throw new Error(`not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

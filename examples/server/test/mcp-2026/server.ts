import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A small MCP server of protocol revision 2026-07-28, written from the specification's text
 * (Streamable HTTP, "Request Metadata", "Multi Round-Trip Requests", "Subscriptions"), with
 * node:http: every request is a stateless POST carrying its protocol version and capabilities in
 * `params._meta`; `server/discover`; `tools/list` with `ttlMs` and `cacheScope`; `tools/call`
 * (`book_trip` answers `resultType: "input_required"` first and completes on the retry that
 * carries `inputResponses` and the `requestState`); `subscriptions/listen` answered with an event
 * stream that stays open; `405` for GET and DELETE. Like a 2026 server (or a load balancer routing
 * on them), it checks `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*` against
 * the body and answers `400` with `-32020` (HeaderMismatch) when they disagree.
 *
 * It also answers clients of 2025-11-25 (no `_meta` version: `initialize`, then the same methods,
 * no session), so one server serves both revisions.
 */
export interface Mcp2026Server {
  /** The MCP endpoint, `http://127.0.0.1:<port>/mcp`. */
  url: string;
  /** The tools `tools/list` returns (change it to publish a new tool). */
  tools: Mcp2026Tool[];
  /** Every request received, in order. */
  received: Received[];
  /** Sends `notifications/tools/list_changed` on every open listen stream that asked for it. */
  toolsChanged(): void;
  /** Listen streams open now. */
  readonly openStreams: number;
  close(): Promise<void>;
}

/** One request as the server received it. */
export interface Received {
  httpMethod: string;
  /** Every `mcp-*` request header, lower-cased. */
  mcpHeaders: Record<string, string>;
  /** The parsed body (POST). */
  body?: { id?: unknown; method?: string; params?: Record<string, unknown> };
  /** The status answered. */
  status?: number;
}

/** A tool of the server. */
export interface Mcp2026Tool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

export const PROTOCOL_2026 = '2026-07-28';
export const PROTOCOL_2025 = '2025-11-25';
const META_VERSION = 'io.modelcontextprotocol/protocolVersion';
const META_SUBSCRIPTION = 'io.modelcontextprotocol/subscriptionId';
/** The value `book_trip` hands out with its input request and expects back on the retry. */
export const BOOK_TRIP_STATE = 'trip-state-7f3a';

/** The tools every new server starts with. */
export function defaultTools(): Mcp2026Tool[] {
  return [
    {
      name: 'get_weather',
      description: 'The weather of a region.',
      inputSchema: {
        type: 'object',
        properties: { region: { type: 'string', 'x-mcp-header': 'Region' }, city: { type: 'string' } },
        required: ['region'],
      },
    },
    {
      name: 'book_trip',
      description: 'Books a trip once the traveller confirms.',
      inputSchema: { type: 'object', properties: { to: { type: 'string' } } },
    },
    {
      name: 'delete_everything',
      description: 'Deletes every record.',
      inputSchema: { type: 'object', properties: {} },
    },
  ];
}

const MAX_BODY = 1024 * 1024;

/** `=?base64?…?=` values are decoded as the specification's "Value Encoding" says. */
function decodeHeaderValue(value: string): string {
  const match = /^=\?base64\?([A-Za-z0-9+/=]*)\?=$/.exec(value);
  return match ? Buffer.from(match[1] as string, 'base64').toString('utf8') : value;
}

function mcpHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (name.startsWith('mcp-') && typeof value === 'string') out[name] = value;
  }
  return out;
}

/** The `x-mcp-header` names of a tool's top-level properties, by argument name. */
function headerParameters(tool: Mcp2026Tool | undefined): Map<string, string> {
  const out = new Map<string, string>();
  const properties = (tool?.inputSchema.properties ?? {}) as Record<string, { 'x-mcp-header'?: string }>;
  for (const [argument, schema] of Object.entries(properties)) {
    const header = schema['x-mcp-header'];
    if (typeof header === 'string') out.set(argument, `mcp-param-${header.toLowerCase()}`);
  }
  return out;
}

export async function listen2026Server(): Promise<Mcp2026Server> {
  const tools = defaultTools();
  const received: Received[] = [];
  const streams = new Set<{ res: ServerResponse; subscription: unknown; tools: boolean }>();

  const json = (res: ServerResponse, record: Received, status: number, body: unknown) => {
    record.status = status;
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  };
  const error = (id: unknown, code: number, message: string) => ({
    jsonrpc: '2.0',
    id: id ?? null,
    error: { code, message },
  });

  /** The header checks of "Server Validation": undefined when the headers agree with the body. */
  const headerMismatch = (req: IncomingMessage, body: NonNullable<Received['body']>): string | undefined => {
    const version = req.headers['mcp-protocol-version'];
    const meta = (body.params?._meta ?? {}) as Record<string, unknown>;
    if (version !== meta[META_VERSION]) return 'MCP-Protocol-Version does not match _meta';
    const method = req.headers['mcp-method'];
    if (method !== body.method) return `Mcp-Method header value '${String(method)}' does not match body value`;
    if (body.method === 'tools/call' || body.method === 'prompts/get' || body.method === 'resources/read') {
      const name = req.headers['mcp-name'];
      const expected = body.method === 'resources/read' ? body.params?.uri : body.params?.name;
      if (typeof name !== 'string' || decodeHeaderValue(name) !== expected) {
        return `Mcp-Name header value '${String(name)}' does not match body value`;
      }
    }
    if (body.method === 'tools/call') {
      const tool = tools.find((t) => t.name === body.params?.name);
      const args = (body.params?.arguments ?? {}) as Record<string, unknown>;
      for (const [argument, header] of headerParameters(tool)) {
        const value = args[argument];
        const sent = req.headers[header];
        if (value === undefined || value === null) continue;
        if (typeof sent !== 'string' || decodeHeaderValue(sent) !== String(value)) {
          return `${header} does not match argument ${argument}`;
        }
      }
    }
    return undefined;
  };

  const callTool = (params: Record<string, unknown>, modern: boolean): unknown => {
    const name = params.name;
    if (name === 'get_weather') {
      const region = (params.arguments as { region?: unknown } | undefined)?.region;
      return {
        content: [{ type: 'text', text: `sunny in ${String(region)}` }],
        ...(modern ? { resultType: 'complete' } : {}),
      };
    }
    if (name === 'book_trip') {
      const responses = params.inputResponses as
        { confirm?: { action?: string; content?: { ok?: boolean } } } | undefined;
      if (modern && (params.requestState !== BOOK_TRIP_STATE || responses?.confirm?.action !== 'accept')) {
        return {
          resultType: 'input_required',
          inputRequests: {
            confirm: {
              method: 'elicitation/create',
              params: {
                mode: 'form',
                message: 'Book this trip?',
                requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
              },
            },
          },
          requestState: BOOK_TRIP_STATE,
        };
      }
      return { content: [{ type: 'text', text: 'trip booked' }], ...(modern ? { resultType: 'complete' } : {}) };
    }
    if (name === 'delete_everything' || tools.some((t) => t.name === name)) {
      return {
        content: [{ type: 'text', text: `ran ${String(name)}` }],
        ...(modern ? { resultType: 'complete' } : {}),
      };
    }
    return undefined;
  };

  const server = createServer((req, res) => {
    const record: Received = { httpMethod: req.method ?? '', mcpHeaders: mcpHeaders(req.headers) };
    received.push(record);
    if (req.method !== 'POST') {
      // 2026-07-28 has no GET stream and no sessions to delete.
      record.status = 405;
      res.writeHead(405, { allow: 'POST' }).end();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY) chunks.push(chunk);
    });
    req.on('end', () => {
      let body: Received['body'];
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Received['body'];
      } catch {
        return json(res, record, 400, error(null, -32700, 'Parse error'));
      }
      record.body = body;
      if (body === undefined || body === null || typeof body !== 'object' || typeof body.method !== 'string') {
        return json(res, record, 400, error(null, -32600, 'Invalid Request'));
      }
      const params = (body.params ?? {}) as Record<string, unknown>;
      const meta = (params._meta ?? {}) as Record<string, unknown>;
      const modern = meta[META_VERSION] !== undefined || req.headers['mcp-protocol-version'] === PROTOCOL_2026;
      if (body.id === undefined) {
        record.status = 202;
        res.writeHead(202).end();
        return;
      }
      if (modern) {
        const mismatch = headerMismatch(req, body);
        if (mismatch !== undefined)
          return json(res, record, 400, error(body.id, -32020, `Header mismatch: ${mismatch}`));
        if (meta[META_VERSION] !== PROTOCOL_2026) {
          return json(res, record, 400, {
            jsonrpc: '2.0',
            id: body.id,
            error: { code: -32022, message: 'Unsupported protocol version', data: { supported: [PROTOCOL_2026] } },
          });
        }
      }
      const answer = (result: unknown) => json(res, record, 200, { jsonrpc: '2.0', id: body.id, result });
      switch (body.method) {
        case 'initialize':
          if (modern) break;
          return answer({
            protocolVersion: PROTOCOL_2025,
            capabilities: { tools: { listChanged: true } },
            serverInfo: { name: 'mcp-2026-test-server', version: '1.0.0' },
          });
        case 'ping':
          return answer(modern ? { resultType: 'complete' } : {});
        case 'server/discover':
          if (!modern) break;
          return answer({
            resultType: 'complete',
            supportedVersions: [PROTOCOL_2026],
            capabilities: { tools: { listChanged: true } },
            _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'mcp-2026-test-server', version: '1.0.0' } },
            ttlMs: 60_000,
            cacheScope: 'public',
          });
        case 'tools/list':
          return answer(modern ? { resultType: 'complete', tools, ttlMs: 30_000, cacheScope: 'public' } : { tools });
        case 'tools/call': {
          const result = callTool(params, modern);
          if (result === undefined)
            return json(res, record, 200, error(body.id, -32602, `Unknown tool: ${String(params.name)}`));
          return answer(result);
        }
        case 'subscriptions/listen': {
          if (!modern) break;
          const wanted = (params.notifications ?? {}) as { toolsListChanged?: boolean };
          record.status = 200;
          res.writeHead(200, {
            'content-type': 'text/event-stream',
            'cache-control': 'no-cache',
            'x-accel-buffering': 'no',
          });
          const stream = { res, subscription: body.id, tools: wanted.toolsListChanged === true };
          streams.add(stream);
          res.write(
            `event: message\ndata: ${JSON.stringify({
              jsonrpc: '2.0',
              method: 'notifications/subscriptions/acknowledged',
              params: { notifications: { toolsListChanged: stream.tools }, _meta: { [META_SUBSCRIPTION]: body.id } },
            })}\n\n`,
          );
          res.once('close', () => streams.delete(stream));
          return;
        }
      }
      return json(res, record, 404, error(body.id, -32601, 'Method not found'));
    });
  });
  server.keepAliveTimeout = 120_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    tools,
    received,
    toolsChanged() {
      for (const stream of streams) {
        if (!stream.tools) continue;
        stream.res.write(
          `event: message\ndata: ${JSON.stringify({
            jsonrpc: '2.0',
            method: 'notifications/tools/list_changed',
            params: { _meta: { [META_SUBSCRIPTION]: stream.subscription } },
          })}\n\n`,
        );
      }
    },
    get openStreams() {
      return streams.size;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const stream of streams) stream.res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

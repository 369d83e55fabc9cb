import { PROTOCOL_2026, type Mcp2026Tool } from './server';

/** A JSON-RPC answer of a 2026-07-28 POST. */
export interface Mcp2026Answer {
  status: number;
  headers: Headers;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

/** What every 2026-07-28 request carries in `params._meta` instead of an `initialize` handshake. */
export function requestMeta(): Record<string, unknown> {
  return {
    'io.modelcontextprotocol/protocolVersion': PROTOCOL_2026,
    'io.modelcontextprotocol/clientInfo': { name: 'gateway-2026-test', version: '1.0.0' },
    'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } },
  };
}

/** Header value as "Value Encoding" says: plain when safe ASCII, else `=?base64?…?=`. */
export function headerValue(value: string): string {
  const safe = /^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(value) && !/^=\?base64\?.*\?=$/.test(value);
  return safe ? value : `=?base64?${Buffer.from(value, 'utf8').toString('base64')}?=`;
}

/**
 * The request headers a 2026-07-28 client sends for `body`: `MCP-Protocol-Version`, `Mcp-Method`,
 * `Mcp-Name` (tools/call, prompts/get, resources/read) and `Mcp-Param-<Name>` for every argument
 * the tool's schema marks with `x-mcp-header`.
 */
export function routingHeaders(
  body: { method: string; params?: Record<string, unknown> },
  tools: readonly Mcp2026Tool[] = [],
): Record<string, string> {
  const headers: Record<string, string> = { 'mcp-protocol-version': PROTOCOL_2026, 'mcp-method': body.method };
  const params = body.params ?? {};
  const name = body.method === 'resources/read' ? params.uri : params.name;
  if (['tools/call', 'prompts/get', 'resources/read'].includes(body.method) && typeof name === 'string') {
    headers['mcp-name'] = headerValue(name);
  }
  if (body.method === 'tools/call') {
    const tool = tools.find((t) => t.name === name);
    const properties = (tool?.inputSchema.properties ?? {}) as Record<string, { 'x-mcp-header'?: string }>;
    const args = (params.arguments ?? {}) as Record<string, unknown>;
    for (const [argument, schema] of Object.entries(properties)) {
      const header = schema['x-mcp-header'];
      const value = args[argument];
      if (typeof header === 'string' && value !== undefined && value !== null) {
        headers[`mcp-param-${header.toLowerCase()}`] = headerValue(String(value));
      }
    }
  }
  return headers;
}

let nextId = 1;

/**
 * One stateless 2026-07-28 request: a POST with the request metadata in `_meta` and in headers
 * (override or add headers with `headers`), no session, no `initialize`.
 */
export async function call2026(
  endpoint: string,
  credentials: Record<string, string>,
  method: string,
  params: Record<string, unknown> = {},
  options: { tools?: readonly Mcp2026Tool[]; headers?: Record<string, string> } = {},
): Promise<Mcp2026Answer> {
  const body = { jsonrpc: '2.0', id: nextId++, method, params: { ...params, _meta: requestMeta() } };
  const res = await fetch(endpoint, {
    method: 'POST',
    headers: {
      ...credentials,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...routingHeaders(body, options.tools),
      ...options.headers,
    },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text === '' ? undefined : JSON.parse(text) };
}

/** An open `subscriptions/listen` stream: its events as they arrive. */
export interface ListenStream {
  status: number;
  contentType: string | null;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  events: any[];
  /** Resolves with the first event `match` accepts (rejects after `timeoutMs`). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  next(match: (event: any) => boolean, timeoutMs?: number): Promise<any>;
  /** Whether the server ended the stream. */
  readonly ended: boolean;
  close(): void;
}

/** Opens a `subscriptions/listen` stream for tool list changes. */
export async function listen2026(endpoint: string, credentials: Record<string, string>): Promise<ListenStream> {
  const body = {
    jsonrpc: '2.0',
    id: nextId++,
    method: 'subscriptions/listen',
    params: { _meta: requestMeta(), notifications: { toolsListChanged: true } },
  };
  const abort = new AbortController();
  const res = await fetch(endpoint, {
    method: 'POST',
    headers: {
      ...credentials,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...routingHeaders(body),
    },
    body: JSON.stringify(body),
    signal: abort.signal,
  });
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const events: any[] = [];
  const waiters = new Set<() => void>();
  let ended = false;
  if (res.body) {
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    void (async () => {
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          buffer += decoder.decode(value, { stream: true });
          let end: number;
          while ((end = buffer.indexOf('\n\n')) !== -1) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const data = block
              .split('\n')
              .filter((line) => line.startsWith('data:'))
              .map((line) => line.slice(5).trimStart())
              .join('\n');
            if (data !== '') events.push(JSON.parse(data));
          }
          for (const wake of waiters) wake();
        }
      } catch {
        // Closed by the test.
      }
      ended = true;
      for (const wake of waiters) wake();
    })();
  }
  return {
    status: res.status,
    contentType: res.headers.get('content-type'),
    events,
    get ended() {
      return ended;
    },
    next(match, timeoutMs = 5_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = events.find(match);
          if (found !== undefined) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve(found);
          } else if (ended) {
            waiters.delete(check);
            clearTimeout(timer);
            reject(new Error(`the stream ended; events: ${JSON.stringify(events)}`));
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no matching event within ${timeoutMs} ms; events: ${JSON.stringify(events)}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    close: () => abort.abort(),
  };
}

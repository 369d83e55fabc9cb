import type { IncomingMessage, ServerResponse } from 'node:http';
import type { McpAccess } from '../src';
import { alice, listen, setup, type Listening } from './support';

jest.setTimeout(30_000);

/** A gate holding `held` (a new tool waiting for approval), as tool pinning does. */
const access: McpAccess = {
  allowed: true,
  tools: {
    namesOnly: true,
    listed: (tool) => (tool.name === 'held' ? 'tool_pending_approval' : 'allowed'),
    called: (name) => (name === 'held' ? 'tool_pending_approval' : 'allowed'),
  },
};

const META_VERSION = 'io.modelcontextprotocol/protocolVersion';
const TOOLS =
  '{"tools":[{"name":"ok_a","inputSchema":{"type":"object"}},{"name":"held","inputSchema":{"type":"object"}}]}';

/** Every POST body the upstream received, and the listen answers it keeps open. */
const received: { method: string; headers: IncomingMessage['headers'] }[] = [];
const listens = new Set<ServerResponse>();
let upstream: Listening;
let open: Awaited<ReturnType<typeof setup>>;
let gated: Awaited<ReturnType<typeof setup>>;

/**
 * A 2026-07-28 server that answers `subscriptions/listen` with newline-delimited JSON on an
 * answer without a length that never ends (the acknowledgement first), and everything else
 * with one JSON line written at once, also without a length.
 */
beforeAll(async () => {
  upstream = await listen((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const message = JSON.parse(Buffer.concat(chunks).toString()) as {
        id?: unknown;
        method: string;
        params?: { name?: string };
      };
      received.push({ method: message.method, headers: req.headers });
      if (message.method === 'tools/call' && message.params?.name === 'progress_lines') {
        // Another method's answer that lasts: progress as JSON lines, no result yet.
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}\n');
        listens.add(res);
        res.once('close', () => listens.delete(res));
        return;
      }
      if (message.method === 'subscriptions/listen') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write(
          `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":${JSON.stringify(message.id)}}}}\n`,
        );
        listens.add(res);
        res.once('close', () => listens.delete(res));
        return;
      }
      const result = message.method === 'tools/list' ? TOOLS : '{}';
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(`{"jsonrpc":"2.0","id":${JSON.stringify(message.id)},"result":${result}}`);
    });
  });
  const mcpServers = [
    { slug: 'lines', url: `${upstream.url}/mcp`, user_identity_forwarding: { method: 'claims_header' as const } },
  ];
  [open, gated] = await Promise.all([
    setup({ mcpServers, apiKeys: [alice] }),
    setup({ mcpServers, apiKeys: [alice], forwarding: { authorize: () => access } }),
  ]);
});

afterAll(async () => {
  await Promise.all([open?.close(), gated?.close()]);
  await upstream?.close();
});

/** Writes `text` on every listen answer the upstream keeps open. */
function pushToListeners(text: string): void {
  for (const res of listens) res.write(text);
}

/** Reads lines of a streamed answer, each within 5 s. */
function lineReader(body: ReadableStream<Uint8Array>) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffered = '';
  return {
    async next(): Promise<string> {
      const deadline = Date.now() + 5_000;
      for (;;) {
        const newline = buffered.indexOf('\n');
        if (newline !== -1) {
          const line = buffered.slice(0, newline);
          buffered = buffered.slice(newline + 1);
          if (line.trim() !== '') return line;
          continue;
        }
        let timer: NodeJS.Timeout | undefined;
        const chunk = await Promise.race([
          reader.read(),
          new Promise<never>((_, reject) => {
            timer = setTimeout(
              () => reject(new Error(`no line within 5 s (held so far: ${JSON.stringify(buffered)})`)),
              Math.max(0, deadline - Date.now()),
            );
          }),
        ]).finally(() => clearTimeout(timer));
        if (chunk.done) throw new Error(`the answer ended (held: ${JSON.stringify(buffered)})`);
        buffered += decoder.decode(chunk.value, { stream: true });
      }
    },
    cancel: () => reader.cancel().catch(() => undefined),
  };
}

/** POSTs to the gateway; the answer's headers must come within 5 s. */
async function post(gateway: Listening, body: unknown, headers: Record<string, string>, signal?: AbortSignal) {
  const timeout = AbortSignal.timeout(5_000);
  return fetch(`${gateway.url}/mcp/lines`, {
    method: 'POST',
    headers: {
      'x-gateway-api-key': alice.key as string,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...headers,
    },
    body: JSON.stringify(body),
    signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]),
  });
}

const listenRequest = (id: number) => ({
  jsonrpc: '2.0',
  id,
  method: 'subscriptions/listen',
  params: { notifications: { toolsListChanged: true }, _meta: { [META_VERSION]: '2026-07-28' } },
});
const MODERN = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'subscriptions/listen' };

describe.each([
  ['without a gate', () => open],
  ['under a gate', () => gated],
])('a subscriptions/listen answered as JSON lines that never end (%s)', (_name, gateway) => {
  it('reaches the client message by message while the answer stays open', async () => {
    const abort = new AbortController();
    const res = await post(gateway(), listenRequest(41), MODERN, abort.signal);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    const lines = lineReader(res.body as ReadableStream<Uint8Array>);
    try {
      expect(JSON.parse(await lines.next())).toMatchObject({
        method: 'notifications/subscriptions/acknowledged',
        params: { _meta: { 'io.modelcontextprotocol/subscriptionId': 41 } },
      });
      pushToListeners('{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n');
      expect(JSON.parse(await lines.next())).toEqual({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
      // One message in two writes, then two in one write: each reaches the client whole.
      pushToListeners('{"jsonrpc":"2.0","method":"notifications/');
      await new Promise((resolve) => setImmediate(resolve));
      pushToListeners('prompts/list_changed"}\n{"jsonrpc":"2.0","method":"a"}\n{"jsonrpc":"2.0","method":"b"}\n');
      expect(JSON.parse(await lines.next())).toMatchObject({ method: 'notifications/prompts/list_changed' });
      expect(JSON.parse(await lines.next())).toMatchObject({ method: 'a' });
      expect(JSON.parse(await lines.next())).toMatchObject({ method: 'b' });
    } finally {
      await lines.cancel();
      abort.abort();
    }
  });

  it('passes another answer without a length that does not end on as it arrives, after a short hold', async () => {
    const abort = new AbortController();
    const body = { jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: 'progress_lines', arguments: {} } };
    const res = await post(gateway(), body, {}, abort.signal);
    const lines = lineReader(res.body as ReadableStream<Uint8Array>);
    try {
      expect(JSON.parse(await lines.next())).toMatchObject({ params: { progress: 1 } });
      pushToListeners(`{"jsonrpc":"2.0","id":8,"result":${TOOLS}}\n`);
      const result = JSON.parse(await lines.next()) as { result: { tools: { name: string }[] } };
      expect(result.result.tools.map((t) => t.name)).toEqual(gateway() === gated ? ['ok_a'] : ['ok_a', 'held']);
    } finally {
      await lines.cancel();
      abort.abort();
    }
  });

  it('still answers a JSON answer that ends at once whole, with its length', async () => {
    const res = await post(gateway(), { jsonrpc: '2.0', id: 3, method: 'ping' }, {});
    expect(res.headers.get('content-length')).toBe(String((await res.clone().arrayBuffer()).byteLength));
    expect(await res.json()).toEqual({ jsonrpc: '2.0', id: 3, result: {} });
  });
});

describe('JSON lines through a tool gate', () => {
  it('filters the tools of every message of the stream', async () => {
    const abort = new AbortController();
    const res = await post(gated, listenRequest(42), MODERN, abort.signal);
    const lines = lineReader(res.body as ReadableStream<Uint8Array>);
    try {
      await lines.next();
      pushToListeners(`{"jsonrpc":"2.0","id":99,"result":${TOOLS}}\n`);
      const filtered = JSON.parse(await lines.next()) as { result: { tools: { name: string }[] } };
      expect(filtered.result.tools.map((t) => t.name)).toEqual(['ok_a']);
      // Pretty-printed across lines: still one message, still filtered.
      pushToListeners(`${JSON.stringify({ jsonrpc: '2.0', id: 100, result: JSON.parse(TOOLS) }, null, 2)}\n`);
      // Written as received (its lines kept): read up to the line that completes it.
      const seen: string[] = [];
      for (let line = await lines.next(); ; line = await lines.next()) {
        seen.push(line);
        if (line === '}') break;
      }
      const pretty = JSON.parse(seen.join('\n')) as { result: { tools: { name: string }[] } };
      expect(pretty.result.tools.map((t) => t.name)).toEqual(['ok_a']);
    } finally {
      await lines.cancel();
      abort.abort();
    }
  });

  it('ends the stream at a message it cannot read, and passes nothing of it', async () => {
    const abort = new AbortController();
    const res = await post(gated, listenRequest(43), MODERN, abort.signal);
    const lines = lineReader(res.body as ReadableStream<Uint8Array>);
    try {
      await lines.next();
      pushToListeners(`not json ${TOOLS}\n`);
      await expect(lines.next()).rejects.toThrow(/terminated|ended|no line/);
    } finally {
      await lines.cancel();
      abort.abort();
    }
  });
});

describe('SEP-2243 headers of a 2026-07-28 request under a gate', () => {
  const call = { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'ok_a', arguments: {} } };
  const modernCall = { ...call, params: { ...call.params, _meta: { [META_VERSION]: '2026-07-28' } } };

  it.each([
    ['Mcp-Method missing', modernCall, { 'mcp-protocol-version': '2026-07-28', 'mcp-name': 'ok_a' }, /Mcp-Method/],
    [
      'Mcp-Name missing on tools/call',
      modernCall,
      { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call' },
      /Mcp-Name/,
    ],
    ['both missing, the revision only in _meta', modernCall, {}, /Mcp-Method/],
    ['both missing, the revision only in the header', call, { 'mcp-protocol-version': '2026-07-28' }, /Mcp-Method/],
  ])('%s: 400 with -32020, and the server sees nothing', async (_name, body, headers, message) => {
    const before = received.length;
    const res = await post(gated, body, headers);
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      jsonrpc: '2.0',
      id: 5,
      error: { code: -32020, message: expect.stringMatching(message) },
    });
    expect(received.length).toBe(before);
  });

  it('forwards a 2025-11-25 request without those headers, and a 2026-07-28 one that has them', async () => {
    const before = received.length;
    const old = await post(gated, call, { 'mcp-protocol-version': '2025-11-25' });
    expect(old.status).toBe(200);
    expect(await old.json()).toEqual({ jsonrpc: '2.0', id: 5, result: {} });
    const modern = await post(gated, modernCall, {
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': 'ok_a',
    });
    expect(modern.status).toBe(200);
    expect(received.slice(before).map((r) => r.method)).toEqual(['tools/call', 'tools/call']);
  });

  it('leaves a request without a gate to the server', async () => {
    const before = received.length;
    const res = await post(open, modernCall, { 'mcp-protocol-version': '2026-07-28' });
    expect(res.status).toBe(200);
    expect(received.length).toBe(before + 1);
  });
});

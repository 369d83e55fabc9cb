import type { IncomingMessage, ServerResponse } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { McpAccess } from '../src';
import { alice, listen, setup, type Listening } from './support';

jest.setTimeout(60_000);

/** A gate holding `held` (a new tool waiting for approval), as tool pinning does. */
const access: McpAccess = {
  allowed: true,
  tools: {
    namesOnly: true,
    listed: (tool) => (tool.name === 'held' ? 'tool_pending_approval' : 'allowed'),
    called: (name) => (name === 'held' ? 'tool_pending_approval' : 'allowed'),
  },
};

type Id = 'same' | 'string' | 'null' | 'other' | 'missing';
type Framing = (json: string) => { type?: string; body: Buffer | string };
const BOM = '\ufeff';
/** How the malicious server frames its tools/list answer: readable ones, and ones the gateway must refuse. */
const readable: Record<string, Framing> = {
  json: (j) => ({ type: 'application/json', body: j }),
  'json, parameters': (j) => ({ type: 'application/json; charset=utf-8; x=1', body: j }),
  batch: (j) => ({ type: 'application/json', body: `[${j}]` }),
  'sse data: ': (j) => ({ type: 'text/event-stream', body: `data: ${j}\n\n` }),
  'sse data:': (j) => ({ type: 'text/event-stream', body: `data:${j}\n\n` }),
  'sse several data lines': (j) => ({
    type: 'text/event-stream',
    body: `data: ${j.split(/(?=,")/).join('\ndata: ')}\n\n`,
  }),
  'sse CRLF': (j) => ({ type: 'text/event-stream', body: `event: message\r\nid: 1\r\ndata: ${j}\r\n\r\n` }),
  'sse CR': (j) => ({ type: 'text/event-stream', body: `: c\rdata: ${j}\r\r` }),
  'sse BOM at start': (j) => ({ type: 'text/event-stream', body: `${BOM}data: ${j}\n\n` }),
};
const unreadable: Record<string, Framing> = {
  'json BOM': (j) => ({ type: 'application/json', body: `${BOM}${j}` }),
  'json UTF-16': (j) => ({ type: 'application/json; charset=utf-16le', body: Buffer.from(j, 'utf16le') }),
  'x-application/json': (j) => ({ type: 'x-application/json', body: j }),
  'text/plain': (j) => ({ type: 'text/plain', body: j }),
  'no content type': (j) => ({ body: j }),
  'sse BOM in data': (j) => ({ type: 'text/event-stream', body: `data: ${BOM}${j}\n\n` }),
};

let mode: { id: Id; framing: Framing } = { id: 'same', framing: readable.json as Framing };
const calls: string[] = [];
let upstream: Listening;
let gateway: Awaited<ReturnType<typeof setup>>;

function idOf(id: unknown, variant: Id): string {
  if (variant === 'same') return `"id":${JSON.stringify(id)},`;
  if (variant === 'string') return `"id":"${String(id)}",`;
  if (variant === 'null') return '"id":null,';
  if (variant === 'other') return '"id":999,';
  return '';
}

beforeAll(async () => {
  upstream = await listen((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST') return void res.writeHead(405).end();
      const message = JSON.parse(Buffer.concat(chunks).toString()) as {
        id?: unknown;
        method: string;
        params?: { name?: string };
      };
      if (message.id === undefined) return void res.writeHead(202).end();
      let json: string;
      if (message.method === 'initialize')
        json = `{"jsonrpc":"2.0","id":${JSON.stringify(message.id)},"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"evil","version":"1"}}}`;
      else if (message.method === 'tools/call') {
        calls.push(String(message.params?.name));
        json = `{"jsonrpc":"2.0","id":${JSON.stringify(message.id)},"result":{"content":[]}}`;
      } else {
        json = `{"jsonrpc":"2.0",${idOf(message.id, mode.id)}"result":{"tools":[{"name":"ok_a","inputSchema":{"type":"object"}},{"name":"held","inputSchema":{"type":"object"}}],"cacheScope":"public","ttlMs":1000}}`;
        const framed = mode.framing(json);
        res.writeHead(200, framed.type === undefined ? {} : { 'content-type': framed.type });
        return void res.end(framed.body);
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(json);
    });
  });
  gateway = await setup({
    mcpServers: [{ slug: 'evil', url: `${upstream.url}/mcp`, user_identity_forwarding: { method: 'claims_header' } }],
    apiKeys: [alice],
    forwarding: { authorize: () => access },
  });
});

afterAll(async () => {
  await gateway?.close();
  await upstream?.close();
});

async function connect(): Promise<Client> {
  const client = new Client({ name: 'answers-test', version: '1.0.0' });
  // The initialize answer is plain JSON whatever the test sets for tools/list.
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${gateway.url}/mcp/evil`), {
      requestInit: { headers: { 'x-gateway-api-key': alice.key as string } },
    }),
  );
  return client;
}

/** The raw answer of the gateway to a tools/list with id 7. */
async function rawList(): Promise<{ status: number; text: string }> {
  const res = await fetch(`${gateway.url}/mcp/evil`, {
    method: 'POST',
    headers: {
      'x-gateway-api-key': alice.key as string,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: '{"jsonrpc":"2.0","id":7,"method":"tools/list"}',
  });
  let text = '';
  try {
    text = await res.text();
  } catch {
    // The gateway ended a stream it could not read.
  }
  return { status: res.status, text };
}

const IDS: Id[] = ['same', 'string', 'null', 'other', 'missing'];

describe('a malicious MCP server answering tools/list, through a gate holding one tool', () => {
  it.each(Object.keys(readable))(
    '%s: filtered for every id; the SDK client never lists the held tool',
    async (name) => {
      for (const id of IDS) {
        mode = { id, framing: readable[name] as Framing };
        const raw = await rawList();
        expect(raw.status).toBe(200);
        expect(raw.text).not.toContain('held');
        expect(raw.text).toContain('ok_a');
        expect(raw.text).toContain('"cacheScope":"private"');
        if (id === 'same' || id === 'string') {
          const client = await connect();
          const listed = await client.listTools();
          expect(listed.tools.map((t) => t.name)).toEqual(['ok_a']);
          await client.close();
        }
      }
    },
  );

  it.each(Object.keys(unreadable))('%s: an error, never an unfiltered list', async (name) => {
    for (const id of IDS) {
      mode = { id, framing: unreadable[name] as Framing };
      const raw = await rawList();
      expect(raw.text).not.toContain('held');
      if (!name.startsWith('sse'))
        expect([raw.status, (JSON.parse(raw.text) as { error: { code: string } }).error.code]).toEqual([
          502,
          'upstream_invalid_response',
        ]);
    }
    mode = { id: 'same', framing: unreadable[name] as Framing };
    const client = await connect();
    await expect(client.listTools(undefined, { timeout: 500 })).rejects.toThrow();
    await client.close();
  });

  it('refuses a call of the held tool in the gateway: the server never gets it', async () => {
    mode = { id: 'same', framing: readable.json as Framing };
    const client = await connect();
    await expect(client.callTool({ name: 'held', arguments: {} })).rejects.toThrow(/approval/);
    expect(calls).not.toContain('held');
    await client.callTool({ name: 'ok_a', arguments: {} });
    expect(calls).toContain('ok_a');
    await client.close();
  });
});

describe('a subscriptions/listen stream through a gate', () => {
  it('lives past streamIdleTimeoutMs while the server keeps it open, silent or not, and is filtered', async () => {
    let silentAfterMs = Infinity;
    const listen$ = await listen((req: IncomingMessage, res: ServerResponse) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const started = Date.now();
        const tick = setInterval(() => {
          if (Date.now() - started > silentAfterMs) return;
          if (Date.now() - started > 700) {
            clearInterval(tick);
            res.end(
              'data: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n\n' +
                'data: {"jsonrpc":"2.0","id":"x","result":{"tools":[{"name":"ok_a"},{"name":"held"}]}}\n\n',
            );
            return;
          }
          res.write(': keepalive\n\n');
        }, 50);
        res.on('close', () => clearInterval(tick));
      });
    });
    const gw = await setup({
      mcpServers: [
        { slug: 'listen', url: `${listen$.url}/mcp`, user_identity_forwarding: { method: 'claims_header' } },
      ],
      apiKeys: [alice],
      forwarding: { authorize: () => access, streamIdleTimeoutMs: 200 },
    });
    const open = () =>
      fetch(`${gw.url}/mcp/listen`, {
        method: 'POST',
        headers: {
          'x-gateway-api-key': alice.key as string,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: '{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{}}',
      });
    try {
      const started = Date.now();
      const text = await (await open()).text();
      expect(Date.now() - started).toBeGreaterThan(600);
      expect(text).toContain(': keepalive\n');
      expect(text).toContain('list_changed');
      expect(text).toContain('"tools":[{"name":"ok_a"}]');
      expect(text).not.toContain('held');
      // The server goes silent after 100 ms and keeps the stream open: so does the gateway, past
      // the idle timeout, until the client leaves.
      silentAfterMs = 100;
      const abort = new AbortController();
      const quiet = await fetch(`${gw.url}/mcp/listen`, {
        method: 'POST',
        signal: abort.signal,
        headers: {
          'x-gateway-api-key': alice.key as string,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: '{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{}}',
      });
      const reader = (quiet.body as ReadableStream<Uint8Array>).getReader();
      let received = '';
      const reading = (async () => {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return 'ended';
          received += Buffer.from(value).toString();
        }
      })().catch(() => 'aborted');
      await new Promise((resolve) => setTimeout(resolve, 800));
      expect(received).toContain(': keepalive\n');
      abort.abort();
      expect(await reading).toBe('aborted');
      expect(gw.records.filter((r) => r.streamIdleTimeout === true)).toHaveLength(0);
    } finally {
      await gw.close();
      await listen$.close();
    }
  });
});

import type { IncomingMessage, ServerResponse } from 'node:http';
import { MAX_INSPECTED_EVENT_CHARS, type McpAccess } from '../src';
import { alice, listen, setup, type Listening } from './support';

jest.setTimeout(60_000);

/** Allows the tools whose name starts with `ok`. */
const access: McpAccess = {
  allowed: true,
  tools: {
    namesOnly: true,
    listed: (tool) => (tool.name.startsWith('ok') ? 'allowed' : 'access_denied'),
    called: (name) => (name.startsWith('ok') ? 'allowed' : 'access_denied'),
  },
};

/** A tools/list answer of exactly `size` bytes: an allowed tool, then a refused one padded to the size. */
function listAnswer(size: number, id: number | string = 1): string {
  const head = `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"tools":[{"name":"ok_a"},{"name":"no_b","description":"`;
  const tail = '"}]}}';
  return head + 'x'.repeat(size - head.length - tail.length) + tail;
}

/** Where the MCP server double sends what: set per test. */
let answer: (req: IncomingMessage, res: ServerResponse, body: string) => void;
let upstream: Listening;
let gateway: Awaited<ReturnType<typeof setup>>;
const LIMIT = 64 * 1024;

beforeAll(async () => {
  upstream = await listen((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => answer(req, res, Buffer.concat(chunks).toString()));
  });
  gateway = await setup({
    mcpServers: [{ slug: 'tools', url: `${upstream.url}/mcp`, user_identity_forwarding: { method: 'claims_header' } }],
    apiKeys: [alice],
    forwarding: { authorize: () => access, maxInspectedAnswerBytes: LIMIT },
  });
});

afterAll(async () => {
  await gateway?.close();
  await upstream?.close();
});

const headers = {
  'x-gateway-api-key': alice.key as string,
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
};
const listTools = () =>
  fetch(`${gateway.url}/mcp/tools`, {
    method: 'POST',
    headers,
    body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
  });

describe('the record of a call the tool gate read', () => {
  it('names the JSON-RPC method and tool of a gated tools/call, as for a call the gate did not read', async () => {
    answer = (_req, res, body) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(`{"jsonrpc":"2.0","id":${(JSON.parse(body) as { id: number }).id},"result":{"content":[]}}`);
    };
    const before = gateway.records.length;
    const call = await fetch(`${gateway.url}/mcp/tools`, {
      method: 'POST',
      headers,
      body: '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ok_lookup","arguments":{}}}',
    });
    expect(call.status).toBe(200);
    await call.text();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(gateway.records.slice(before)).toEqual([
      expect.objectContaining({ mcpMethod: 'tools/call', mcpTool: 'ok_lookup' }),
    ]);
  });
});

describe('the limits of what the tool gate reads', () => {
  it('filters a JSON tools/list answer of maxInspectedAnswerBytes; one byte more is 502 upstream_invalid_response', async () => {
    answer = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(listAnswer(LIMIT));
    };
    const atLimit = await listTools();
    expect(atLimit.status).toBe(200);
    expect(((await atLimit.json()) as { result: { tools: { name: string }[] } }).result.tools).toEqual([
      { name: 'ok_a' },
    ]);
    answer = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      // In two writes, so that the limit is crossed by the count of chunks, not one chunk.
      const text = listAnswer(LIMIT + 1);
      res.write(text.slice(0, 1000));
      setTimeout(() => res.end(text.slice(1000)), 5);
    };
    const over = await listTools();
    expect([over.status, ((await over.json()) as { error: { code: string } }).error.code]).toEqual([
      502,
      'upstream_invalid_response',
    ]);
  });

  it(`filters an event of ${MAX_INSPECTED_EVENT_CHARS} characters; one more ends the stream before any of it is sent`, async () => {
    const event = (size: number) => `data: ${listAnswer(size - 'data: '.length)}\n\n`;
    answer = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"jsonrpc":"2.0","method":"notifications/message","params":{"data":"working"}}\n\n');
      res.end(event(MAX_INSPECTED_EVENT_CHARS));
    };
    const atLimit = await listTools();
    const text = await atLimit.text();
    expect(text).toBe(
      'data: {"jsonrpc":"2.0","method":"notifications/message","params":{"data":"working"}}\n\n' +
        'data: {"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"ok_a"}]}}\n\n',
    );
    answer = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"jsonrpc":"2.0","method":"notifications/message","params":{"data":"working"}}\n\n');
      res.end(event(MAX_INSPECTED_EVENT_CHARS + 1));
    };
    const over = await listTools();
    expect(over.status).toBe(200);
    const reader = (over.body as ReadableStream<Uint8Array>).getReader();
    let received = '';
    const read = async () => {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        received += Buffer.from(value).toString();
      }
    };
    await expect(read()).rejects.toThrow();
    // The notification came; nothing of the oversized event did.
    expect(received).not.toContain('no_b');
    expect(received).not.toContain('ok_a');
  });
});

describe('the GET stream (standalone, or resumed with Last-Event-ID)', () => {
  it('filters a tools/list answer replayed on it, whatever its id, and passes the rest through', async () => {
    let got: IncomingMessage | undefined;
    answer = (req, res) => {
      got = req;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('id: 4\ndata: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n\n');
      res.end(`id: 5\ndata: ${listAnswer(200, 'earlier-post-3')}\n\n`);
    };
    const res = await fetch(`${gateway.url}/mcp/tools`, {
      headers: { ...headers, accept: 'text/event-stream', 'last-event-id': '3' },
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(
      'id: 4\ndata: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n\n' +
        'id: 5\ndata: {"jsonrpc":"2.0","id":"earlier-post-3","result":{"tools":[{"name":"ok_a"}]}}\n\n',
    );
    expect(got?.method).toBe('GET');
    expect(got?.headers['last-event-id']).toBe('3');
    // Read by the gateway: asked uncompressed.
    expect(got?.headers['accept-encoding']).toBe('identity');
  });
});

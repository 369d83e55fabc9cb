import { request, type IncomingMessage, type ServerResponse } from 'node:http';
import express from 'express';
import fc from 'fast-check';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { McpAccess } from '../src';
import { alice, listen, setup, type Listening } from './support';

jest.setTimeout(60_000);

const TOOLS = ['ok_a', 'ok_b', 'no_x', 'no_y'];
/** The names the gate was asked about, in order. */
const checked: string[] = [];
const access: McpAccess = {
  allowed: true,
  tools: {
    namesOnly: true,
    listed: (tool) => (tool.name.startsWith('ok') ? 'allowed' : 'access_denied'),
    called: (name) => {
      checked.push(name);
      return name.startsWith('ok') ? 'allowed' : 'access_denied';
    },
  },
};

/** A real MCP SDK server (stateless, behind express.json as its examples show) that records what it ran. */
const executed: string[] = [];
let arrived = 0;
let sdk: Listening;
/** A raw upstream that records each request and answers a JSON-RPC result. */
const received: { headers: IncomingMessage['headers']; body: string }[] = [];
let raw: Listening;
let gateway: Awaited<ReturnType<typeof setup>>;

beforeAll(async () => {
  const app = express();
  app.use((_req, _res, next) => {
    arrived++;
    next();
  });
  app.use(express.json());
  app.all('/mcp', async (req, res) => {
    const server = new McpServer({ name: 'recorder', version: '1.0.0' });
    for (const name of TOOLS)
      server.registerTool(name, { description: name }, async () => {
        executed.push(name);
        return { content: [{ type: 'text', text: name }] };
      });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  sdk = await listen(app);
  raw = await listen((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      received.push({ headers: req.headers, body });
      const answer = `{"jsonrpc":"2.0","id":${(JSON.parse(body) as { id?: number }).id ?? null},"result":{}}`;
      // `/sse` answers as an event stream, as servers do that stream their answers.
      if (req.url === '/sse') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(`event: message\ndata: ${answer}\n\n`);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(answer);
    });
  });
  gateway = await setup({
    mcpServers: [
      { slug: 'sdk', url: `${sdk.url}/mcp`, user_identity_forwarding: { method: 'claims_header' } },
      { slug: 'raw', url: `${raw.url}/mcp`, user_identity_forwarding: { method: 'claims_header' } },
      { slug: 'raw-sse', url: `${raw.url}/sse`, user_identity_forwarding: { method: 'claims_header' } },
    ],
    apiKeys: [alice],
    forwarding: { authorize: () => access },
  });
});

afterAll(async () => {
  await gateway?.close();
  await sdk?.close();
  await raw?.close();
});

/** POSTs raw bytes through the gateway; the status and the body as text. */
function post(slug: string, body: Buffer, headers: Record<string, string | string[]>) {
  return new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = request(
      `${gateway.url}/mcp/${slug}`,
      {
        method: 'POST',
        headers: {
          'x-gateway-api-key': alice.key as string,
          accept: 'application/json, text/event-stream',
          'content-length': body.length,
          ...headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode as number, text: Buffer.concat(chunks).toString() }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const callBody = (name: string) =>
  `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"${name}","arguments":{}}}`;
const BOM = Buffer.from([0xef, 0xbb, 0xbf]);

describe('byte-level variants of a denied tools/call', () => {
  it.each([
    ['a UTF-8 byte-order mark', Buffer.concat([BOM, Buffer.from(callBody('no_x'))]), 'application/json'],
    ['UTF-16LE with its charset', Buffer.from(callBody('no_x'), 'utf16le'), 'application/json; charset=utf-16le'],
    ['UTF-16 with a BOM', Buffer.from(`\ufeff${callBody('no_x')}`, 'utf16le'), 'application/json; charset="UTF-16"'],
    ['charset latin1', Buffer.from(callBody('no_x')), 'application/json; charset=latin1'],
    ['x-application/json', Buffer.from(callBody('no_x')), 'x-application/json'],
    ['application/jsonx', Buffer.from(callBody('no_x')), 'application/jsonx'],
    ['no content type', Buffer.from(callBody('no_x')), ''],
  ])('%s: 400 invalid_mcp_message, and the tool never runs', async (_name, body, type) => {
    const [before, ran] = [arrived, executed.length];
    const res = await post('sdk', body, type === '' ? {} : { 'content-type': type });
    expect([res.status, (JSON.parse(res.text) as { error: { code: string } }).error.code]).toEqual([
      400,
      'invalid_mcp_message',
    ]);
    expect([arrived, executed.length]).toEqual([before, ran]);
  });

  it('the same bytes, strict, reach the server: an allowed tool runs, a denied one is refused by the gateway', async () => {
    const ok = await post('sdk', Buffer.from(callBody('ok_a')), { 'content-type': 'application/json; charset=UTF-8' });
    expect(ok.status).toBe(200);
    expect(executed.at(-1)).toBe('ok_a');
    const denied = await post('sdk', Buffer.from(callBody('no_x')), { 'content-type': 'application/json' });
    expect(JSON.parse(denied.text)).toMatchObject({ error: { code: -32602, data: { code: 'access_denied' } } });
    expect(executed).not.toContain('no_x');
  });
});

describe('the MCP SDK client through a gate', () => {
  it('lists only allowed tools, runs an allowed one, and is refused a denied one', async () => {
    const client = new Client({ name: 'gate-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${gateway.url}/mcp/sdk`), {
        requestInit: { headers: { 'x-gateway-api-key': alice.key as string } },
      }),
    );
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['ok_a', 'ok_b']);
    expect((await client.callTool({ name: 'ok_b', arguments: {} })).content).toEqual([{ type: 'text', text: 'ok_b' }]);
    await expect(client.callTool({ name: 'no_y', arguments: {} })).rejects.toThrow(/not allowed/);
    expect(executed).not.toContain('no_y');
    await client.close();
  });
});

/** Encodes `text` as the variant says, with the content type that names it. */
const ENCODINGS: Record<string, { bytes: (t: string) => Buffer; charset?: string }> = {
  utf8: { bytes: (t) => Buffer.from(t) },
  'utf8 bom': { bytes: (t) => Buffer.concat([BOM, Buffer.from(t)]) },
  utf16le: { bytes: (t) => Buffer.from(t, 'utf16le'), charset: 'utf-16le' },
  'utf16le bom': { bytes: (t) => Buffer.from(`\ufeff${t}`, 'utf16le'), charset: 'utf-16' },
  utf16be: { bytes: (t) => Buffer.from(t, 'utf16le').swap16(), charset: 'utf-16be' },
  'utf8 labelled': { bytes: (t) => Buffer.from(t), charset: 'UTF-8' },
};

describe('the gate decides on exactly what the MCP SDK server runs', () => {
  it('for bodies in every encoding, content type, spacing, repeated key and escape (differential)', async () => {
    const escape = (s: string) => s.replace(/[a-z]/, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
    const body = fc.record({
      names: fc.array(fc.constantFrom(...TOOLS), { minLength: 1, maxLength: 2 }),
      caseVariant: fc.boolean(),
      escapeKey: fc.boolean(),
      escapeValue: fc.boolean(),
      space: fc.constantFrom('', ' ', '\n\t', '\r\n'),
      method: fc.constantFrom('"tools/call"', '"tools/\\u0063all"'),
    });
    const anyType = fc.constantFrom(
      'application/json',
      'Application/JSON',
      'application/json; charset="utf-8"',
      'x-application/json',
      'application/jsonx',
      'text/plain',
      '',
    );
    // Strict bodies are drawn often enough that the forwarding side is always exercised (about a
    // fifth of the runs), the other variants the rest of the time.
    const type = fc.oneof({ arbitrary: fc.constant('application/json'), weight: 3 }, { arbitrary: anyType, weight: 2 });
    const encodings = fc.oneof(
      { arbitrary: fc.constant('utf8'), weight: 2 },
      { arbitrary: fc.constantFrom(...Object.keys(ENCODINGS)), weight: 1 },
    );
    let forwarded = 0;
    await fc.assert(
      fc.asyncProperty(body, type, encodings, async (b, contentType, encoding) => {
        const w = b.space;
        const members = b.names.map((name, i) => {
          const key = i > 0 && b.caseVariant ? '"Name"' : b.escapeKey ? `"${escape('name')}"` : '"name"';
          return `${key}${w}:${w}"${b.escapeValue ? escape(name) : name}"`;
        });
        const text = `${w}{"jsonrpc":"2.0",${w}"id":9,"method":${b.method},"params":{${members.join(`,${w}`)},"arguments":{}}}${w}`;
        const enc = ENCODINGS[encoding] as (typeof ENCODINGS)[string];
        const header = contentType === '' ? '' : enc.charset ? `${contentType}; charset=${enc.charset}` : contentType;
        const [before, ran, asked] = [arrived, executed.length, checked.length];
        const res = await post('sdk', enc.bytes(text), header === '' ? {} : { 'content-type': header });
        const newRuns = executed.slice(ran);
        // A denied tool never runs.
        expect(newRuns.filter((n) => n.startsWith('no'))).toEqual([]);
        if (res.status === 400) {
          // Refused: the server saw nothing.
          expect((JSON.parse(res.text) as { error: { code: string } }).error.code).toBe('invalid_mcp_message');
          expect([arrived, newRuns]).toEqual([before, []]);
          return;
        }
        const asks = checked.slice(asked);
        expect(asks).toHaveLength(1);
        if ((asks[0] as string).startsWith('no')) {
          expect(JSON.parse(res.text)).toMatchObject({ id: 9, error: { code: -32602 } });
          expect(arrived).toBe(before);
          return;
        }
        // Forwarded: the server ran exactly the tool the gate checked.
        forwarded++;
        expect(newRuns).toEqual(asks);
      }),
      { numRuns: 150 },
    );
    // The run exercised the forwarding side, not only refusals.
    expect(forwarded).toBeGreaterThan(5);
  });
});

describe('Mcp-Method and Mcp-Name against the body', () => {
  const b64 = (s: string) => `=?base64?${Buffer.from(s).toString('base64')}?=`;
  const mirrored = (h: string | undefined) =>
    h === undefined ? undefined : /^=\?base64\?/.test(h) ? Buffer.from(h.slice(9, -2), 'base64').toString() : h;

  it.each(['raw', 'raw-sse'])(
    'answers 400 -32020 for an allowed header with a denied body, and a denied header with an allowed body (server %s)',
    async (slug) => {
      for (const [header, body] of [
        ['ok_a', 'no_x'],
        ['no_x', 'ok_a'],
      ] as const) {
        const before = received.length;
        const res = await post(slug, Buffer.from(callBody(body)), {
          'content-type': 'application/json',
          'mcp-method': 'tools/call',
          'mcp-name': header,
        });
        expect(res.status).toBe(400);
        expect(JSON.parse(res.text)).toEqual({
          jsonrpc: '2.0',
          id: 1,
          error: { code: -32020, message: expect.any(String) },
        });
        expect(received.length).toBe(before);
      }
      const agreeing = await post(slug, Buffer.from(callBody('ok_a')), {
        'content-type': 'application/json',
        'mcp-method': 'tools/call',
        'mcp-name': 'ok_a',
      });
      expect(agreeing.status).toBe(200);
      expect(agreeing.text).toContain('"result":{}');
      const repeated = await post(slug, Buffer.from(callBody('ok_a')), {
        'content-type': 'application/json',
        'mcp-method': ['tools/call', 'tools/call'],
      });
      expect(repeated.status).toBe(400);
    },
  );

  it('never carries a body upstream that its headers do not name, nor a denied tool (fuzz)', async () => {
    const methods = ['tools/call', 'tools/list', 'prompts/get', 'ping'];
    const names = ['ok_a', 'no_x', 'ok_é'];
    await fc.assert(
      fc.asyncProperty(
        fc.option(fc.constantFrom(...methods, 'TOOLS/CALL'), { nil: undefined }),
        fc.option(fc.constantFrom(...names, b64('ok_a'), b64('no_x'), b64('ok_é'), '=?base64?@@?='), {
          nil: undefined,
        }),
        fc.constantFrom(...methods),
        fc.option(fc.constantFrom(...names), { nil: undefined }),
        async (hMethod, hName, method, name) => {
          const params = name === undefined ? '' : `,"params":{"name":${JSON.stringify(name)}}`;
          const headers: Record<string, string> = { 'content-type': 'application/json' };
          if (hMethod !== undefined) headers['mcp-method'] = hMethod;
          // A header value is ASCII: a non-ASCII name goes Base64-wrapped.
          if (hName !== undefined) headers['mcp-name'] = /^[\x20-\x7e]*$/.test(hName) ? hName : b64(hName);
          const before = received.length;
          const res = await post('raw', Buffer.from(`{"jsonrpc":"2.0","id":3,"method":"${method}"${params}}`), headers);
          const arrivedUpstream = received.length > before;
          const named = method === 'tools/call' || method === 'prompts/get';
          const agrees =
            (hMethod === undefined || hMethod === method) &&
            (hName === undefined || (named && mirrored(headers['mcp-name']) === name));
          if (!agrees)
            expect([res.status, (JSON.parse(res.text) as { error: { code: number } }).error.code]).toEqual([
              400, -32020,
            ]);
          if (arrivedUpstream) {
            expect(agrees).toBe(true);
            if (method === 'tools/call') expect(name?.startsWith('ok')).toBe(true);
          }
        },
      ),
      { numRuns: 120 },
    );
  });
});

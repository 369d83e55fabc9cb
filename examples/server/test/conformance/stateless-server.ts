import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Listening } from './sdk-server';

const REVISION = '2026-07-28';
const META_VERSION = 'io.modelcontextprotocol/protocolVersion';
const META_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';
const META_SUBSCRIPTION = 'io.modelcontextprotocol/subscriptionId';
/** Methods 2026-07-28 removed: `404` with `-32601`, as for an unknown method. */
const REMOVED = new Set(['initialize', 'ping', 'logging/setLevel', 'resources/subscribe', 'resources/unsubscribe']);
/** The tools the conformance suite's `server-stateless` scenario calls. */
const TOOLS = [
  'test_missing_capability',
  'test_streaming_elicitation',
  'test_logging_tool',
  'test_trigger_tool_change',
];

interface Message {
  id?: string | number | null;
  method?: unknown;
  params?: { _meta?: Record<string, unknown>; name?: unknown; notifications?: { toolsListChanged?: unknown } };
}

/**
 * A stateless MCP server of revision 2026-07-28 (no SDK speaks it yet), written to what the
 * conformance suite's `server-stateless` scenario checks (SEP-2575): every request carries its
 * revision and capabilities in `params._meta` (`400` `-32602` without them), agreeing with
 * `MCP-Protocol-Version` (`400` `-32020`), of a revision it supports (`400` `-32022`);
 * `server/discover`; `tools/list` and `tools/call` of the scenario's test tools
 * (`test_missing_capability` needs `sampling`: `400` `-32021`); removed and unknown methods are
 * `404` `-32601`. It answers `subscriptions/listen` with newline-delimited JSON
 * (`application/json`, no length) that never ends: the acknowledgement first, then
 * `notifications/tools/list_changed` when `test_trigger_tool_change` is called, each tagged with
 * the subscription id. Everything else is one JSON answer with its length.
 */
export async function startStatelessServer(): Promise<Listening> {
  const listens = new Set<{ res: ServerResponse; id: unknown; tools: boolean }>();
  const json = (res: ServerResponse, status: number, body: unknown) => {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  };
  const handle = (req: IncomingMessage, res: ServerResponse, message: Message) => {
    const id = message.id ?? null;
    const fail = (status: number, code: number, text: string, data?: unknown) =>
      json(res, status, { jsonrpc: '2.0', id, error: { code, message: text, ...(data ? { data } : {}) } });
    const header = req.headers['mcp-protocol-version'];
    if (header === undefined) return fail(400, -32020, 'Missing MCP-Protocol-Version header');
    if (req.headers['mcp-method'] !== message.method) return fail(400, -32020, 'Mcp-Method does not match the body');
    const meta = message.params?._meta;
    if (meta?.[META_VERSION] === undefined || meta[META_CAPABILITIES] === undefined)
      return fail(400, -32602, 'Invalid params: _meta needs protocolVersion and clientCapabilities');
    if (meta[META_VERSION] !== header) return fail(400, -32020, 'MCP-Protocol-Version does not match _meta');
    if (header !== REVISION)
      return fail(400, -32022, 'Unsupported protocol version', { supported: [REVISION], requested: header });
    const result = (value: object) =>
      json(res, 200, { jsonrpc: '2.0', id, result: { resultType: 'complete', ...value } });
    switch (message.method) {
      case 'server/discover':
        return result({
          supportedVersions: [REVISION],
          capabilities: { tools: { listChanged: true } },
          _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'gateway-stateless', version: '1.0.0' } },
        });
      case 'tools/list':
        return result({ tools: TOOLS.map((name) => ({ name, inputSchema: { type: 'object' } })) });
      case 'tools/call': {
        const name = message.params?.name;
        if (name === 'test_missing_capability') {
          const declared = meta[META_CAPABILITIES] as { sampling?: unknown } | null;
          if (declared?.sampling === undefined)
            return fail(400, -32021, 'Missing required client capability', {
              requiredCapabilities: { sampling: {} },
            });
        } else if (name === 'test_trigger_tool_change') {
          for (const listen of listens)
            if (listen.tools)
              listen.res.write(
                `${JSON.stringify({
                  jsonrpc: '2.0',
                  method: 'notifications/tools/list_changed',
                  params: { _meta: { [META_SUBSCRIPTION]: listen.id } },
                })}\n`,
              );
        } else if (typeof name !== 'string' || !TOOLS.includes(name)) return fail(200, -32602, 'Unknown tool');
        return result({ content: [{ type: 'text', text: `ran ${String(name)}` }] });
      }
      case 'subscriptions/listen': {
        const listen = { res, id, tools: message.params?.notifications?.toolsListChanged === true };
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write(
          `${JSON.stringify({
            jsonrpc: '2.0',
            method: 'notifications/subscriptions/acknowledged',
            params: { notifications: { toolsListChanged: listen.tools }, _meta: { [META_SUBSCRIPTION]: id } },
          })}\n`,
        );
        listens.add(listen);
        res.once('close', () => listens.delete(listen));
        return;
      }
    }
    return fail(404, -32601, REMOVED.has(String(message.method)) ? 'Method removed in 2026-07-28' : 'Method not found');
  };
  const server = createServer((req, res) => {
    if (req.method !== 'POST') return void res.writeHead(405, { allow: 'POST' }).end();
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      let message: Message;
      try {
        message = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Message;
      } catch {
        return json(res, 400, { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
      }
      if (typeof message !== 'object' || message === null) {
        return json(res, 400, { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid Request' } });
      }
      if (message.id === undefined) return void res.writeHead(202).end();
      handle(req, res, message);
    });
  });
  server.keepAliveTimeout = 120_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const listen of listens) listen.res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

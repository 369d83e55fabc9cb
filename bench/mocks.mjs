// Mock upstreams for the benchmark, in their own process so their CPU is not the gateway's:
// Anthropic (JSON and SSE: see `sendStream` for how a stream leaves), an MCP Streamable HTTP endpoint (JSON-RPC: `tools/list` answers 200
// tools, `tools/call` a text result, `initialize` a stateless server, each with the request's id;
// a notification `202`), a Bedrock retrieve endpoint, and
// Bedrock Runtime's `POST /model/<model id>/invoke` (the same message as JSON, as Bedrock answers
// an Anthropic model's invoke; a request not SigV4-signed for `bedrock` gets Bedrock's 403).
// `MOCK_DELAY_MS=N` (default 0: at once) answers every request N ms after it arrived (a timer, no
// CPU spent waiting), as a provider that takes its time.
import { createServer } from 'node:http';
import { BENCH_TOOLS as TOOLS } from './lib.mjs';

const MESSAGE = JSON.stringify({
  id: 'msg_bench',
  type: 'message',
  role: 'assistant',
  model: 'claude-sonnet-4-5',
  content: [{ type: 'text', text: 'The quick brown fox jumps over the lazy dog.' }],
  stop_reason: 'end_turn',
  stop_sequence: null,
  usage: { input_tokens: 25, output_tokens: 12, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
});

function streamBody(events) {
  const parts = [
    `event: message_start\ndata: {"type":"message_start","message":{"id":"msg_stream","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","usage":{"input_tokens":25,"output_tokens":1}}}\n\n`,
    `event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n`,
  ];
  for (let i = 0; i < events; i++) {
    parts.push(
      `event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"token ${i} "}}\n\n`,
    );
  }
  parts.push(
    `event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n`,
    `event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":${events}}}\n\n`,
    `event: message_stop\ndata: {"type":"message_stop"}\n\n`,
  );
  return parts.join('');
}

const STREAM = Buffer.from(streamBody(1000));
const FIRST_EVENT_END = STREAM.indexOf('\n\n') + 2;
const STREAM_START = STREAM.subarray(0, FIRST_EVENT_END);
const STREAM_REST = STREAM.subarray(FIRST_EVENT_END);
/** A stream's bytes cut into its events, one buffer each. */
function eventsOf(stream) {
  const events = [];
  for (let at = 0; at < stream.length;) {
    const end = stream.indexOf('\n\n', at) + 2;
    events.push(stream.subarray(at, end));
    at = end;
  }
  return events;
}
/** The same stream cut into its events. */
const STREAM_EVENTS = eventsOf(STREAM);
/** Milliseconds between the events of a paced stream (a provider generating tokens). */
const PACED_EVENT_MS = 5;
/** A short answer's stream (20 text deltas, 25 events), for the time-to-first-byte rows. */
const SHORT_EVENTS = eventsOf(Buffer.from(streamBody(20)));

/**
 * Sends the 1,000-event stream the way the request's path asks (the path is the provider's base
 * URL in the gateway's config: the gateway only sends it on):
 * - `/v1/messages` (default): like a provider, one event per write, each write on its own turn of
 *   the event loop, so the events leave back to back as separate chunks;
 * - `/paced/v1/messages`: the same with 5 ms between events (a stream that lasts about 5 s);
 * - `/short/v1/messages`: a short answer (20 text deltas, 25 events) paced the same way, about
 *   0.1 s: time to first byte as a provider's stream has it, without 1,000 events sent back to
 *   back competing for the CPU with the process measuring;
 * - `/burst/v1/messages`: `message_start` on its own, then the other 1,004 events in one write.
 */
function sendStream(res, mode) {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  if (mode === 'burst') {
    res.write(STREAM_START);
    setImmediate(() => res.end(STREAM_REST));
    return;
  }
  const events = mode === 'short' ? SHORT_EVENTS : STREAM_EVENTS;
  let next = 0;
  let timer;
  const step = () => {
    if (res.destroyed) return;
    const event = events[next++];
    if (next === events.length) return res.end(event);
    res.write(event);
    if (mode === 'paced' || mode === 'short') timer = setTimeout(step, PACED_EVENT_MS);
    else setImmediate(step);
  };
  res.once('close', () => clearTimeout(timer));
  step();
}

const TOOLS_RESULT = JSON.stringify({ tools: TOOLS });
const CALL_RESULT = '{"content":[{"type":"text","text":"ok"}]}';

/** The answer to `initialize`: a stateless server (no session id) with tools, as an SDK client expects it. */
const INITIALIZE_RESULT = JSON.stringify({
  protocolVersion: '2025-06-18',
  capabilities: { tools: {} },
  serverInfo: { name: 'bench-mock', version: '1.0.0' },
});

/**
 * A JSON-RPC answer to an MCP request, with its id (what a Streamable HTTP server answers in JSON);
 * undefined for a notification (`202`, no body).
 */
function mcpAnswer(body) {
  let id = 1;
  let method = '';
  try {
    const request = JSON.parse(body);
    id = request.id ?? null;
    method = request.method ?? '';
  } catch {
    return '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}';
  }
  if (method.startsWith('notifications/')) return undefined;
  const result = method === 'tools/list' ? TOOLS_RESULT : method === 'initialize' ? INITIALIZE_RESULT : CALL_RESULT;
  return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${result}}`;
}

/**
 * Bedrock Runtime's answer to `InvokeModel` of an Anthropic model: the Messages answer as JSON
 * (Bedrock names the model without its `us.anthropic.` profile prefix), with a request id.
 */
const INVOKE = JSON.stringify({ ...JSON.parse(MESSAGE), model: 'claude-sonnet-4-5-20250929' });
const INVOKE_HEADERS = { 'content-type': 'application/json', 'x-amzn-requestid': 'bench-invoke' };
/** Bedrock's answer to a request without a SigV4 signature for `bedrock`. */
const UNSIGNED = JSON.stringify({ message: 'Missing Authentication Token' });

const RETRIEVE = JSON.stringify({ retrievalResults: [{ content: { text: 'Refunds take five business days.' } }] });

/** Milliseconds the mock waits before answering (`MOCK_DELAY_MS`, a whole number 0 – 60,000; default 0). */
const DELAY_MS = (() => {
  const raw = process.env.MOCK_DELAY_MS ?? '0';
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value > 60_000) {
    process.stderr.write(`mocks: MOCK_DELAY_MS takes a whole number of milliseconds from 0 to 60000, not "${raw}"\n`);
    process.exit(2);
  }
  return value;
})();

const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    if (DELAY_MS === 0) answer(req, res, chunks);
    else {
      const timer = setTimeout(() => answer(req, res, chunks), DELAY_MS);
      res.once('close', () => clearTimeout(timer));
    }
  });
});

/** Answers one request whose body has arrived (`chunks`), by its path. */
function answer(req, res, chunks) {
  const url = req.url ?? '';
  const mode = /^\/(paced|burst|short)\//.exec(url)?.[1];
  const path = mode ? url.slice(mode.length + 1) : url;
  if (path.startsWith('/v1/messages')) {
    const body = Buffer.concat(chunks).toString();
    if (body.includes('"stream":true')) {
      sendStream(res, mode);
    } else {
      res.writeHead(200, { 'content-type': 'application/json' }).end(MESSAGE);
    }
  } else if (url.startsWith('/mcp')) {
    const mcp = mcpAnswer(Buffer.concat(chunks).toString());
    if (mcp === undefined) res.writeHead(202).end();
    else res.writeHead(200, { 'content-type': 'application/json' }).end(mcp);
  } else if (/^\/model\/[^/]+\/invoke$/.test(url)) {
    if (
      !/^AWS4-HMAC-SHA256 Credential=[^/]+\/\d{8}\/[^/]+\/bedrock\/aws4_request,/.test(req.headers.authorization ?? '')
    )
      res
        .writeHead(403, { ...INVOKE_HEADERS, 'x-amzn-errortype': 'MissingAuthenticationTokenException:' })
        .end(UNSIGNED);
    else res.writeHead(200, INVOKE_HEADERS).end(INVOKE);
  } else if (url.includes('/retrieve')) {
    res.writeHead(200, { 'content-type': 'application/json' }).end(RETRIEVE);
  } else {
    res.writeHead(404).end();
  }
}
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`));
process.on('SIGTERM', () => process.exit(0));

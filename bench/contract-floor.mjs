// The contract's floor: the least per-request work a Node gateway does to serve a pass-through
// `/v1/messages`, an MCP `tools/call` with an identity header and a signed Bedrock call (a
// knowledge base's `retrieve`) as the contract asks, written
// straight on node:http with nothing else (no framework, no tracing, no policies, no limits, no
// cache, no error rendering). It is not a gateway: it trusts its one config and answers nothing but
// the two bench paths. It is measured beside the gateway and the bare proxy in the same rounds
// (bench/shapes.mjs), so the bare proxy's floor and the contract's can be told apart.
//
// Per request it does what the contract makes every gateway do:
// - authenticate: the API key header, hashed (SHA-256), looked up in a Map;
// - `/v1/messages`: read the body, parse it to route its `@slug/model`, send it on re-serialized
//   with the provider's credential (keep-alive agent), read the answer and parse it for its usage;
// - `/mcp/<slug>`: read the body, parse it (a tool gate decides on the method and tool name), send it
//   on with the caller's identity token (signed once per caller, then cached), pipe the answer;
// - `/v1/knowledgebases/…`: the AWS integration named by `x-gateway-provider`, the custom host
//   checked against its allowed origin, the exact body bytes signed with SigV4 (the day's signing
//   key derived once) and sent on with a `traceparent`, the answer piped back;
// - one JSON log line (written in batches), one request record (batched: a multi-row INSERT into
//   PostgreSQL each second when DATABASE_URL is set);
// - a request id and a trace id for the client (`x-gateway-request-id`, `x-gateway-trace-id`), a
//   `traceparent` naming this hop for the upstream, a deadline for the upstream's answer, the
//   request counted and timed for /metrics, the provider's headers filtered to an allowlist.
import { createHash, createHmac, createSign, randomFillSync, randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { Agent, createServer, request } from 'node:http';
import { setInterval, setTimeout, clearTimeout } from 'node:timers';

const require = createRequire(new URL('../packages/catalog/package.json', import.meta.url));
const target = Number(process.env.TARGET_PORT);
const apiKeys = new Map(
  (process.env.API_KEYS ?? 'gw-bench-key-000000').split(',').map((key, i) => [sha256(key), { user: `user-${i}` }]),
);
const privateKey = process.env.JWT_PRIVATE_KEY;
const agent = new Agent({ keepAlive: true, maxSockets: 256 });
const BODY_LIMIT = 32 * 1024 * 1024;

function sha256(text) {
  return createHash('sha256').update(text).digest('hex');
}

// Trace and span ids from a pool of random bytes, as a tracer makes them.
const idPool = Buffer.alloc(4096);
let idOffset = idPool.length;
function randomHex(bytes) {
  if (idOffset + bytes > idPool.length) {
    randomFillSync(idPool);
    idOffset = 0;
  }
  idOffset += bytes;
  return idPool.toString('hex', idOffset - bytes, idOffset);
}

// For /metrics: requests by route and status, the upstream's time in histogram buckets by route.
const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
const requestCounts = new Map();
const upstreamBuckets = new Map();
function countRequest(route, status, upstreamSeconds) {
  const key = `${route}|${status}`;
  requestCounts.set(key, (requestCounts.get(key) ?? 0) + 1);
  let buckets = upstreamBuckets.get(route);
  if (!buckets) upstreamBuckets.set(route, (buckets = new Float64Array(BUCKETS.length + 2)));
  let i = 0;
  while (i < BUCKETS.length && upstreamSeconds > BUCKETS[i]) i++;
  buckets[i] += 1;
  buckets[BUCKETS.length + 1] += upstreamSeconds;
}

// The AWS integration `@kb` (the bench's): its credentials, region and the one origin it may call.
const AWS = {
  accessKeyId: 'AKIABENCH',
  secretAccessKey: 'bench-secret',
  region: 'us-east-1',
  allowedOrigin: `http://127.0.0.1:${target}`,
};
const signingKeys = new Map();
/** SigV4 headers for a POST of `body` to `path` on the allowed origin (service `bedrock`). */
function sigv4(path, contentType, body) {
  const longDate = new Date()
    .toISOString()
    .replace(/\.\d{3}Z$/, 'Z')
    .replace(/[-:]/g, '');
  const day = longDate.slice(0, 8);
  const scope = `${day}/${AWS.region}/bedrock/aws4_request`;
  let key = signingKeys.get(day);
  if (!key) {
    const hmac = (k, data) => createHmac('sha256', k).update(data).digest();
    key = hmac(hmac(hmac(hmac(`AWS4${AWS.secretAccessKey}`, day), AWS.region), 'bedrock'), 'aws4_request');
    signingKeys.set(day, key);
  }
  const host = `127.0.0.1:${target}`;
  const signed = 'content-length;content-type;host;x-amz-date';
  const canonical = `POST\n${path}\n\ncontent-length:${body.length}\ncontent-type:${contentType}\nhost:${host}\nx-amz-date:${longDate}\n\n${signed}\n${createHash('sha256').update(body).digest('hex')}`;
  const toSign = `AWS4-HMAC-SHA256\n${longDate}\n${scope}\n${sha256(canonical)}`;
  const signature = createHmac('sha256', key).update(toSign).digest('hex');
  return {
    'content-type': contentType,
    'content-length': body.length,
    host,
    'x-amz-date': longDate,
    authorization: `AWS4-HMAC-SHA256 Credential=${AWS.accessKeyId}/${scope}, SignedHeaders=${signed}, Signature=${signature}`,
  };
}
const AWS_FORWARDED = new Set(['content-type', 'content-length', 'x-amzn-requestid']);

/** The provider's response headers a client gets. */
function forwardedHeaders(headers) {
  const out = {};
  for (const name in headers)
    if (FORWARDED.has(name) || name.startsWith('anthropic-ratelimit-')) out[name] = headers[name];
  return out;
}
const FORWARDED = new Set(['content-type', 'content-length', 'request-id', 'retry-after']);

const tokens = new Map();
/** The caller's identity token for MCP servers, signed once (RS256), then from the cache. */
function identityToken(user) {
  let token = tokens.get(user);
  if (token) return token;
  const b64 = (value) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const now = Math.floor(Date.now() / 1000);
  const input = `${b64({ alg: 'RS256', typ: 'JWT' })}.${b64({ sub: user, iat: now, exp: now + 300 })}`;
  token = `${input}.${createSign('RSA-SHA256').update(input).sign(privateKey, 'base64url')}`;
  tokens.set(user, token);
  return token;
}

let logBatch = '';
let logTimer;
function logLine(fields) {
  logBatch += `${JSON.stringify(fields)}\n`;
  if (logBatch.length >= 32768) flushLog();
  else logTimer ??= setTimeout(flushLog, 200);
}
function flushLog() {
  clearTimeout(logTimer);
  logTimer = undefined;
  process.stdout.write(logBatch);
  logBatch = '';
}

let records = [];
let pool;
if (process.env.DATABASE_URL) {
  const { Pool } = require('pg');
  pool = new Pool({ connectionString: process.env.DATABASE_URL, max: 2 });
  // The bench stops PostgreSQL before this process: its idle connections' errors are expected then.
  pool.on('error', () => undefined);
  await pool.query(`CREATE TABLE IF NOT EXISTS floor_records (
    at timestamptz, request_id text, trace_id text, caller text, route text, target text, status int,
    input_tokens int, output_tokens int, duration_ms double precision)`);
  setInterval(() => {
    if (records.length === 0) return;
    const rows = records;
    records = [];
    const columns = rows[0].length;
    // At most 6,000 rows per statement (PostgreSQL's 65,535 parameters).
    for (let at = 0; at < rows.length; at += 6000) {
      const slice = rows.slice(at, at + 6000);
      const params = slice.map((row, i) => `(${row.map((_, j) => `$${i * columns + j + 1}`).join(',')})`);
      pool.query(`INSERT INTO floor_records VALUES ${params.join(',')}`, slice.flat()).catch(() => undefined);
    }
  }, 1000).unref();
}

/** The request's log line, record and metrics. */
function record(hop, route, status, usage) {
  const ended = process.hrtime.bigint();
  const duration = Number(ended - hop.started) / 1e6;
  countRequest(route, status, Number(ended - hop.upstreamStarted) / 1e9);
  logLine({
    level: 30,
    time: Date.now(),
    msg: 'request',
    request_id: hop.requestId,
    trace_id: hop.traceId,
    caller: hop.caller,
    route,
    target: hop.target,
    status,
    input_tokens: usage?.input_tokens,
    output_tokens: usage?.output_tokens,
    duration_ms: duration,
  });
  if (pool)
    records.push([
      new Date(),
      hop.requestId,
      hop.traceId,
      hop.caller,
      route,
      hop.target,
      status,
      usage?.input_tokens ?? null,
      usage?.output_tokens ?? null,
      duration,
    ]);
}

function readBody(req, then) {
  const chunks = [];
  let size = 0;
  req.on('data', (chunk) => {
    size += chunk.length;
    if (size > BODY_LIMIT) req.destroy();
    else chunks.push(chunk);
  });
  req.on('end', () => then(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
}

function fail(res, status) {
  res.writeHead(status, { 'content-type': 'application/json' }).end('{"error":{"type":"error"}}');
}

const UPSTREAM_TIMEOUT_MS = 600_000;

/** Sends `body` to the upstream at `path` with `headers`; `onAnswer(up)` gets its answer. */
function callUpstream(hop, res, path, headers, body, onAnswer) {
  const upstream = request(
    {
      agent,
      host: '127.0.0.1',
      port: target,
      method: 'POST',
      path,
      headers: { ...headers, traceparent: hop.traceparent },
    },
    (up) => {
      clearTimeout(deadline);
      onAnswer(up);
    },
  );
  hop.upstreamStarted = process.hrtime.bigint();
  const deadline = setTimeout(() => upstream.destroy(), UPSTREAM_TIMEOUT_MS);
  upstream.on('error', () => fail(res, 502));
  upstream.end(body);
}

const server = createServer((req, res) => {
  const hop = { started: process.hrtime.bigint(), requestId: randomUUID(), traceId: randomHex(16) };
  res.setHeader('x-gateway-request-id', hop.requestId);
  res.setHeader('x-gateway-trace-id', hop.traceId);
  const caller = apiKeys.get(sha256(String(req.headers['x-gateway-api-key'] ?? '')));
  if (!caller) return fail(res, 401);
  hop.caller = caller.user;
  hop.traceparent = `00-${hop.traceId}-${randomHex(8)}-01`;
  if (req.url.startsWith('/v1/knowledgebases/')) {
    if (req.headers['x-gateway-provider'] !== '@kb') return fail(res, 404);
    if (req.headers['x-gateway-custom-host'] !== AWS.allowedOrigin) return fail(res, 400);
    hop.target = 'kb';
    const path = req.url.slice(3);
    return readBody(req, (raw) => {
      const headers = sigv4(path, String(req.headers['content-type'] ?? 'application/json'), raw);
      callUpstream(hop, res, path, headers, raw, (up) => {
        const out = {};
        for (const name in up.headers) if (AWS_FORWARDED.has(name)) out[name] = up.headers[name];
        res.writeHead(up.statusCode ?? 502, out);
        up.pipe(res);
        up.on('end', () => record(hop, 'aws', up.statusCode));
      });
    });
  }
  readBody(req, (raw) => {
    let body;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      return fail(res, 400);
    }
    if (req.url === '/v1/messages') {
      const [, slug, model] = /^@([^/]+)\/(.+)$/.exec(String(body.model)) ?? [];
      if (slug !== 'bench') return fail(res, 404);
      hop.target = slug;
      body.model = model;
      const out = Buffer.from(JSON.stringify(body));
      const headers = {
        'content-type': 'application/json',
        'content-length': out.length,
        'anthropic-version': req.headers['anthropic-version'] ?? '2023-06-01',
        'x-api-key': 'sk-bench',
      };
      callUpstream(hop, res, '/v1/messages', headers, out, (up) => {
        const chunks = [];
        up.on('data', (chunk) => chunks.push(chunk));
        up.on('end', () => {
          const answer = Buffer.concat(chunks);
          let usage;
          try {
            usage = JSON.parse(answer.toString('utf8')).usage;
          } catch {
            usage = undefined;
          }
          res.writeHead(up.statusCode ?? 502, forwardedHeaders(up.headers));
          res.end(answer);
          record(hop, 'messages', up.statusCode, usage);
        });
      });
    } else if (req.url === '/mcp/tools') {
      if (body.method === 'tools/call' && typeof body.params?.name !== 'string') return fail(res, 400);
      hop.target = 'tools';
      const headers = {
        'content-type': 'application/json',
        accept: req.headers.accept ?? 'application/json, text/event-stream',
        'content-length': raw.length,
        'x-user-jwt': identityToken(caller.user),
      };
      callUpstream(hop, res, '/mcp', headers, raw, (up) => {
        res.writeHead(up.statusCode ?? 502, forwardedHeaders(up.headers));
        up.pipe(res);
        up.on('end', () => record(hop, 'mcp', up.statusCode));
      });
    } else fail(res, 404);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`));
process.on('SIGTERM', () => process.exit(0));

// The contract's floor: the least per-request work a Node gateway does to serve a pass-through
// `/v1/messages` and an MCP `tools/call` with an identity header as the contract asks, written
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
// - one JSON log line (written in batches), one request record (batched: a multi-row INSERT into
//   PostgreSQL each second when DATABASE_URL is set).
import { createHash, createSign } from 'node:crypto';
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
  await pool.query(`CREATE TABLE IF NOT EXISTS floor_records (
    at timestamptz, request_id text, caller text, route text, target text, status int,
    input_tokens int, output_tokens int, duration_ms double precision)`);
  setInterval(() => {
    if (records.length === 0) return;
    const rows = records;
    records = [];
    const values = [];
    const params = rows.map((row, i) => {
      values.push(...row);
      return `(${row.map((_, j) => `$${i * row.length + j + 1}`).join(',')})`;
    });
    // 9 columns: at most 7,000 rows per statement (PostgreSQL's 65,535 parameters).
    for (let at = 0; at < params.length; at += 7000)
      pool
        .query(
          `INSERT INTO floor_records VALUES ${params.slice(at, at + 7000).join(',')}`,
          values.slice(at * 9, (at + 7000) * 9),
        )
        .catch(() => undefined);
  }, 1000).unref();
}

let sequence = 0;
function record(started, caller, route, targetName, status, usage) {
  const duration = Number(process.hrtime.bigint() - started) / 1e6;
  const requestId = `req_${(++sequence).toString(36)}`;
  logLine({
    level: 30,
    time: Date.now(),
    msg: 'request',
    request_id: requestId,
    caller,
    route,
    target: targetName,
    status,
    duration_ms: duration,
  });
  if (pool)
    records.push([
      new Date(),
      requestId,
      caller,
      route,
      targetName,
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

const server = createServer((req, res) => {
  const started = process.hrtime.bigint();
  const caller = apiKeys.get(sha256(String(req.headers['x-gateway-api-key'] ?? '')));
  if (!caller) return fail(res, 401);
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
      body.model = model;
      const out = Buffer.from(JSON.stringify(body));
      const upstream = request(
        {
          agent,
          host: '127.0.0.1',
          port: target,
          method: 'POST',
          path: '/v1/messages',
          headers: {
            'content-type': 'application/json',
            'content-length': out.length,
            'anthropic-version': req.headers['anthropic-version'] ?? '2023-06-01',
            'x-api-key': 'sk-bench',
          },
        },
        (up) => {
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
            res.writeHead(up.statusCode ?? 502, {
              'content-type': 'application/json',
              'content-length': answer.length,
            });
            res.end(answer);
            record(started, caller.user, 'messages', 'bench', up.statusCode, usage);
          });
        },
      );
      upstream.on('error', () => fail(res, 502));
      upstream.end(out);
    } else if (req.url === '/mcp/tools') {
      if (body.method === 'tools/call' && typeof body.params?.name !== 'string') return fail(res, 400);
      const upstream = request(
        {
          agent,
          host: '127.0.0.1',
          port: target,
          method: 'POST',
          path: '/mcp',
          headers: {
            'content-type': 'application/json',
            accept: req.headers.accept ?? 'application/json, text/event-stream',
            'content-length': raw.length,
            'x-user-jwt': identityToken(caller.user),
          },
        },
        (up) => {
          res.writeHead(up.statusCode ?? 502, { 'content-type': up.headers['content-type'] ?? 'application/json' });
          up.pipe(res);
          up.on('end', () => record(started, caller.user, 'mcp', 'tools', up.statusCode));
        },
      );
      upstream.on('error', () => fail(res, 502));
      upstream.end(raw);
    } else fail(res, 404);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`));
process.on('SIGTERM', () => process.exit(0));

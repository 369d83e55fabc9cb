// The credentials of an MCP caller, side by side on one gateway: an API key, an identity-provider
// token (RS256, verified against the provider's JWKS) and the gateway's own OAuth access token
// (RS256, bound to the MCP server's URL, obtained through the gateway's real endpoints: client
// registration, authorization with PKCE, API-key sign-in, consent, token). Each figure beside the
// bare node:http proxy and the mock measured in the same interleaved rounds. Embedded shape (the
// catalog in GATEWAY_DATA_DIR).
//
//   node bench/mcp-auth.mjs [--rounds 5] [--count 300] [--cpu 1000]
//
// (`pnpm bench` runs it as its `mcp-auth` section, on its own mock and bare proxy;
// `node bench/run.mjs --quick --only mcp-auth` runs that section alone.)
// Prints JSON: per credential, added p50 over the mock (1 connection) and CPU per request
// (10 connections), each as median, min and max over the rounds, their ratio to the bare proxy's
// in the same round, and the access token's CPU over the identity-provider token's in the same round.
import { spawn } from 'node:child_process';
import { createHash, createPublicKey, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { probe } from './features.mjs';
import { benchScratch, closedLoop, median, processCpuMicros, removeWhenExited } from './lib.mjs';

const here = dirname(fileURLToPath(import.meta.url));

function startProcess(script, env = {}) {
  const child = spawn(process.execPath, [script], {
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      try {
        const parsed = JSON.parse(line);
        if (parsed.port) resolve({ child, port: parsed.port });
        else if (typeof parsed.msg === 'string' && parsed.msg.startsWith('gateway listening'))
          resolve({ child, port: Number(new URL(parsed.url).port) });
      } catch {
        // not a JSON line
      }
    });
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
  });
}

/** A free TCP port on 127.0.0.1 (PUBLIC_BASE_URL names the gateway's port before it starts). */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = createNetServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

const rsaPem = () =>
  generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });

/**
 * An identity provider's key set over HTTP (what `jwt_validation.jwksUri` names) and a token it
 * signed for `audience`, as an OpenID Provider's access token for the gateway.
 */
async function identityProvider(audience) {
  const { privateKey, publicKey } = rsaPem();
  const kid = 'bench-idp-1';
  // Exported from a re-imported PEM: exporting a freshly generated key as a JWK can hang on Node 20.
  const jwk = { ...createPublicKey(publicKey).export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' };
  const body = JSON.stringify({ keys: [jwk] });
  const server = createServer((req, res) =>
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=300' }).end(body),
  );
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = 'https://idp.bench.example/';
  const now = Math.floor(Date.now() / 1000);
  const part = (value) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const signed = `${part({ alg: 'RS256', typ: 'JWT', kid })}.${part({
    iss: issuer,
    aud: audience,
    sub: 'idp-user-1',
    email: 'idp-user-1@example.com',
    iat: now,
    exp: now + 3600,
  })}`;
  const token = `${signed}.${sign('sha256', Buffer.from(signed), privateKey).toString('base64url')}`;
  return { server, issuer, jwksUri: `http://127.0.0.1:${server.address().port}/jwks.json`, token };
}

/**
 * Stores a user's upstream connection in the embedded catalog at `dataDir` (migrated first), sealed
 * with `encryptionKey` as the gateway will open it: what a user's connect flow leaves behind.
 */
async function storeUpstreamConnection(dataDir, encryptionKey, connection) {
  const catalog = await import(pathToFileURL(join(here, '..', 'packages/catalog/dist/index.js')).href);
  const db = await catalog.openEmbeddedDatabase(dataDir);
  try {
    await catalog.migrate(db);
    await catalog.createUpstreamConnectionStore(db, new catalog.SecretBox(encryptionKey)).saveConnection(connection);
  } finally {
    await db.close();
  }
}

/** The hidden fields of an authorization page's form. */
function hiddenFields(html) {
  const fields = {};
  for (const match of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g))
    fields[match[1]] = match[2].replace(/&#(\d+);/g, (_, c) => String.fromCharCode(Number(c)));
  return fields;
}

/**
 * A gateway access token for `resource`, as an MCP client gets one: registers a public client,
 * opens the authorization URL with PKCE, signs in with `apiKey`, consents and exchanges the code.
 */
async function gatewayAccessToken(base, apiKey, resource) {
  const redirectUri = 'http://127.0.0.1:7/callback';
  const timeout = () => globalThis.AbortSignal.timeout(10_000);
  const registered = await fetch(`${base}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'bench client',
      redirect_uris: [redirectUri],
      token_endpoint_auth_method: 'none',
    }),
    signal: timeout(),
  });
  if (registered.status !== 201) throw new Error(`registration answered ${registered.status}`);
  const clientId = (await registered.json()).client_id;
  const verifier = randomBytes(32).toString('base64url');
  const authorize = new URL(`${base}/oauth/authorize`);
  for (const [name, value] of Object.entries({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirectUri,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    state: 'bench',
    resource,
  }))
    authorize.searchParams.set(name, value);
  const cookies = new Map();
  const jar = (response) => {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair.indexOf('=');
      if (/Max-Age=0/i.test(line)) cookies.delete(pair.slice(0, eq));
      else cookies.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
    return response;
  };
  const cookie = () => [...cookies].map(([n, v]) => `${n}=${v}`).join('; ');
  const post = async (path, fields) =>
    jar(
      await fetch(`${base}${path}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookie(), origin: base },
        body: new globalThis.URLSearchParams(fields).toString(),
        signal: timeout(),
      }),
    );
  const page = jar(await fetch(authorize, { redirect: 'manual', signal: timeout() }));
  const signInHtml = await page.text();
  if (!signInHtml.includes('name="api_key"'))
    throw new Error(`authorization answered ${page.status} without a sign-in form`);
  const consentPage = await post('/oauth/authorize/sign-in', { ...hiddenFields(signInHtml), api_key: apiKey });
  const consentHtml = await consentPage.text();
  if (!consentHtml.includes('name="decision"'))
    throw new Error(`sign-in answered ${consentPage.status} without consent`);
  const redirect = await post('/oauth/authorize/consent', { ...hiddenFields(consentHtml), decision: 'allow' });
  const code = new URL(redirect.headers.get('location') ?? 'http://x/').searchParams.get('code');
  if (redirect.status !== 302 || !code) throw new Error(`consent answered ${redirect.status} without a code`);
  const answer = await fetch(`${base}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new globalThis.URLSearchParams({
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      client_id: clientId,
      redirect_uri: redirectUri,
      resource,
    }).toString(),
    signal: timeout(),
  });
  if (answer.status !== 200) throw new Error(`token request answered ${answer.status}`);
  return (await answer.json()).access_token;
}

/** Median, min and max of the rounds' values; null when no round had one. */
const summary = (values) =>
  values.length === 0 ? null : { median: median(values), min: Math.min(...values), max: Math.max(...values) };
const json = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const mcpCall = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}';
const apiKey = 'gw-bench-mcp-auth-key-0001';

/** `a / b` of each round where `b` read a CPU tick (a round that read none has no ratio). */
const ratios = (a, b) => a.map((v, i) => v / b[i]).filter(Number.isFinite);

/**
 * MCP tools/call through a gateway of its own (embedded catalog, `oauth` on) with each credential,
 * and through `bare`, in `rounds` interleaved rounds: `count` requests at 1 connection (p50, added
 * over `mock` directly) and `cpuCount` at 10 connections (CPU per request from /proc).
 */
export async function mcpAuthBenchmarks({ mock, bare, rounds, count, cpuCount }) {
  const started = [];
  const idp = await identityProvider('gateway');
  try {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const dir = mkdtempSync(join(tmpdir(), 'gateway-mcp-auth-bench-'));
    const configPath = join(dir, 'gateway.json');
    writeFileSync(
      configPath,
      JSON.stringify({
        auth: {
          apiKeys: [{ key: apiKey, user: { user_id: 'key-user-1', email: 'key-user-1@example.com' } }],
          jwt_validation: { jwksUri: idp.jwksUri, issuer: idp.issuer, audience: 'gateway' },
        },
        providers: [
          { slug: 'bench', provider: 'anthropic', apiKey: 'sk-bench', baseUrl: `http://127.0.0.1:${mock.port}` },
        ],
        mcpServers: [
          {
            slug: 'tools',
            url: `http://127.0.0.1:${mock.port}/mcp`,
            user_identity_forwarding: { method: 'jwt_header' },
          },
          // A server that takes each user's own token (CONTRACT section 15), on the same mock.
          {
            slug: 'owntoken',
            url: `http://127.0.0.1:${mock.port}/mcp`,
            upstream_auth: { type: 'oauth', client: { client_id: 'gw-bench' } },
          },
        ],
        oauth: { login: { type: 'api_key' } },
      }),
    );
    const dataDir = mkdtempSync(join(tmpdir(), 'gw-mcp-auth-bench-data-'));
    const encryptionKey = randomBytes(32);
    await storeUpstreamConnection(dataDir, encryptionKey, {
      userId: 'key-user-1',
      server: 'owntoken',
      issuer: 'https://as.bench.example',
      clientId: 'gw-bench',
      accessToken: `bench-upstream-access-${randomBytes(16).toString('hex')}`,
      refreshToken: `bench-upstream-refresh-${randomBytes(16).toString('hex')}`,
      expiresAt: Date.now() + 24 * 3600_000,
      scopes: ['read'],
      createdAt: Date.now(),
    });
    const gateway = await startProcess(join(here, '..', 'examples/server/dist/main.js'), {
      GATEWAY_CONFIG: configPath,
      GATEWAY_DATA_DIR: dataDir,
      GATEWAY_ENCRYPTION_KEY: encryptionKey.toString('base64'),
      JWT_PRIVATE_KEY: rsaPem().privateKey,
      PORT: String(port),
      PUBLIC_BASE_URL: base,
      LOG_LEVEL: 'info',
      NODE_ENV: 'production',
    });
    started.push(gateway);
    removeWhenExited(gateway.child, dataDir);
    const accessToken = await gatewayAccessToken(base, apiKey, `${base}/mcp/tools`);
    const at = (headers) => ({
      pid: gateway.child.pid,
      target: { port, path: '/mcp/tools', body: mcpCall, headers: { ...json, ...headers } },
    });
    const subjects = {
      apiKey: at({ 'x-gateway-api-key': apiKey }),
      identityProviderToken: at({ authorization: `Bearer ${idp.token}` }),
      gatewayAccessToken: at({ authorization: `Bearer ${accessToken}` }),
      // The same API-key caller on the server of its own token: the stored, unexpired token sent.
      upstreamOAuthToken: {
        pid: gateway.child.pid,
        target: { port, path: '/mcp/owntoken', body: mcpCall, headers: { ...json, 'x-gateway-api-key': apiKey } },
      },
      bareProxy: { pid: bare.child.pid, target: { port: bare.port, path: '/mcp', body: mcpCall, headers: json } },
    };
    for (const [name, subject] of Object.entries(subjects)) {
      const answer = await probe(subject.target);
      if (answer.status !== 200 || answer.body?.result === undefined)
        throw new Error(`${name}: tools/call answered ${answer.status} ${JSON.stringify(answer.body).slice(0, 200)}`);
    }
    const direct = { port: mock.port, path: '/mcp', body: mcpCall, headers: json };
    const names = Object.keys(subjects);
    // Warm-up: every path compiled and every identity token in the gateway's token cache.
    for (const name of names) await closedLoop(subjects[name].target, { connections: 10, count: cpuCount });
    const p50 = Object.fromEntries([...names, 'direct'].map((n) => [n, []]));
    const cpu = Object.fromEntries(names.map((n) => [n, []]));
    for (let r = 0; r < rounds; r++) {
      // Every subject in every round, in an order rotated per round.
      const order = [...names.slice(r % names.length), ...names.slice(0, r % names.length)];
      for (const name of order)
        p50[name].push(
          median((await closedLoop(subjects[name].target, { connections: 1, count })).map((s) => s.total)),
        );
      p50.direct.push(median((await closedLoop(direct, { connections: 1, count })).map((s) => s.total)));
      for (const name of order) {
        const before = processCpuMicros(subjects[name].pid);
        await closedLoop(subjects[name].target, { connections: 10, count: cpuCount });
        cpu[name].push((processCpuMicros(subjects[name].pid) - before) / cpuCount);
      }
    }
    const idx = [...Array(rounds).keys()];
    const out = { shape: 'embedded', rounds, count, cpuCount, paths: {} };
    for (const name of names) {
      out.paths[name] = {
        addedP50Micros: summary(idx.map((i) => p50[name][i] - p50.direct[i])),
        cpuMicrosPerRequest: summary(cpu[name]),
        cpuOverBareProxy: summary(ratios(cpu[name], cpu.bareProxy)),
      };
    }
    // A stored upstream token against a jwt_header server's cached signed token: same caller, rounds.
    out.upstreamOAuthTokenOverJwtHeader = {
      cpu: summary(ratios(cpu.upstreamOAuthToken, cpu.apiKey)),
      addedP50: summary(
        ratios(
          idx.map((i) => p50.upstreamOAuthToken[i] - p50.direct[i]),
          idx.map((i) => p50.apiKey[i] - p50.direct[i]),
        ),
      ),
    };
    out.gatewayAccessTokenOverIdentityProviderToken = {
      cpu: summary(ratios(cpu.gatewayAccessToken, cpu.identityProviderToken)),
      addedP50: summary(
        ratios(
          idx.map((i) => p50.gatewayAccessToken[i] - p50.direct[i]),
          idx.map((i) => p50.identityProviderToken[i] - p50.direct[i]),
        ),
      ),
    };
    return out;
  } finally {
    for (const proc of started) proc.child.kill('SIGTERM');
    idp.server.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  benchScratch('gateway-mcp-auth-bench-run-');
  const args = process.argv.slice(2);
  const option = (name, fallback) => {
    const at = args.indexOf(name);
    return at === -1 ? fallback : Number(args[at + 1]);
  };
  const mock = await startProcess(join(here, 'mocks.mjs'));
  const bare = await startProcess(join(here, 'bare-proxy.mjs'), { TARGET_PORT: String(mock.port) });
  try {
    const out = await mcpAuthBenchmarks({
      mock,
      bare,
      rounds: option('--rounds', 5),
      count: option('--count', 300),
      cpuCount: option('--cpu', 1000),
    });
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
  } finally {
    for (const proc of [mock, bare]) proc.child.kill('SIGTERM');
  }
}

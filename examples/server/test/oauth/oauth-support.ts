import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { createServer as createNetServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { request as httpRequest, type Server } from 'node:http';
import express from 'express';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import { createRemoteJWKSet, jwtVerify } from 'jose';

/** A free TCP port on 127.0.0.1 (so PUBLIC_BASE_URL can name the gateway's port before it starts). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createNetServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** One request the MCP server received: every header, and the `sub` its verifier saw in X-User-JWT. */
export interface SeenRequest {
  headers: Record<string, string | string[] | undefined>;
  verifiedSub?: string;
  verifiedEmail?: string;
  claimsHeader?: string;
}

/**
 * A real MCP SDK server (stateless Streamable HTTP) at `/mcp/<name>` with a `whoami` tool. Its
 * verifier checks `X-User-JWT` against the gateway's published keys (`jwksUrl`, set once the
 * gateway runs) and `aud` = its own URL, as a `jwt_header` server in production would.
 */
export async function startVerifyingMcpServer(): Promise<{
  url: string;
  seen: SeenRequest[];
  /** Resolves once every request received so far has been verified (or refused). */
  settled(): Promise<void>;
  setJwksUrl(url: string): void;
  close(): Promise<void>;
}> {
  const seen: SeenRequest[] = [];
  // The verifications under way: a request the client sent in the background (the SDK's
  // notification, its event stream) may still be verifying when a test reads `seen`.
  const verifying: Promise<unknown>[] = [];
  let jwks: ReturnType<typeof createRemoteJWKSet> | undefined;
  let base = '';
  const app = express();
  app.use(express.json());
  app.all('/mcp/:name', async (req, res) => {
    const record: SeenRequest = { headers: { ...req.headers } };
    seen.push(record);
    const jwt = req.headers['x-user-jwt'];
    if (typeof jwt === 'string' && jwks) {
      try {
        const verification = jwtVerify(jwt, jwks, {
          issuer: 'gateway-mcp-gateway',
          audience: `${base}/mcp/${req.params.name}`,
        });
        verifying.push(verification.catch(() => undefined));
        const { payload } = await verification;
        record.verifiedSub = String(payload.sub);
        record.verifiedEmail = payload.email as string | undefined;
      } catch {
        res.status(401).json({ error: 'X-User-JWT does not verify' });
        return;
      }
    }
    if (typeof req.headers['x-user-claims'] === 'string') record.claimsHeader = req.headers['x-user-claims'];
    const server = new McpServer({ name: 'verifying-tools', version: '1.0.0' });
    server.registerTool('whoami', { description: 'The verified user' }, async () => ({
      content: [
        {
          type: 'text',
          text: JSON.stringify({ sub: record.verifiedSub ?? null, claims: record.claimsHeader ?? null }),
        },
      ],
    }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: base,
    seen,
    // A turn of the event loop after the last verification, so that its handler has recorded it.
    settled: () => Promise.all(verifying).then(() => new Promise<void>((resolve) => setImmediate(resolve))),
    setJwksUrl: (url) => {
      jwks = createRemoteJWKSet(new URL(url));
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The MCP SDK client's OAuth state, in memory; `redirectToAuthorization` keeps the URL for the test to open. */
export class MemoryOAuthProvider implements OAuthClientProvider {
  authorizationUrl: URL | undefined;
  private info: OAuthClientInformationMixed | undefined;
  private stored: OAuthTokens | undefined;
  private verifier = '';

  constructor(readonly redirectUrl: string) {}

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'SDK test client',
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
  tokens() {
    return this.stored;
  }
  saveTokens(tokens: OAuthTokens) {
    this.stored = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}

/** The hidden fields of the page's form. */
export function hiddenFields(html: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const match of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    fields[match[1] as string] = (match[2] as string).replace(/&#(\d+);/g, (_, c: string) =>
      String.fromCharCode(Number(c)),
    );
  }
  return fields;
}

/** A browser's cookie jar for one origin, just enough for the authorization pages. */
export class CookieJar {
  private readonly cookies = new Map<string, string>();
  take(response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = (pair as string).indexOf('=');
      const name = (pair as string).slice(0, eq);
      const value = (pair as string).slice(eq + 1);
      if (/Max-Age=0/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }
  header(): string {
    return [...this.cookies].map(([n, v]) => `${n}=${v}`).join('; ');
  }
}

/** What a user's browser gets through the pages: each page and the final redirect. */
export interface BrowserRun {
  signIn?: Response;
  signInHtml?: string;
  consent?: Response;
  consentHtml?: string;
  /** The redirect to the client, when there was one. */
  location?: URL;
}

async function post(url: string, jar: CookieJar, fields: Record<string, string>, origin: string): Promise<Response> {
  const response = await fetch(url, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: jar.header(), origin },
    body: new URLSearchParams(fields).toString(),
  });
  jar.take(response);
  return response;
}

/**
 * Opens `authorizationUrl` as a user's browser would (plain HTTP requests, cookies kept): the
 * sign-in page with `apiKey`, then the consent page with `decision`. Stops at the first answer that
 * is neither.
 */
export async function signInAndConsent(
  authorizationUrl: URL | string,
  apiKey: string,
  options: { jar?: CookieJar; decision?: 'allow' | 'deny' } = {},
): Promise<BrowserRun> {
  const jar = options.jar ?? new CookieJar();
  const url = new URL(authorizationUrl);
  const origin = url.origin;
  const run: BrowserRun = {};
  let response = await fetch(url, { redirect: 'manual', headers: { cookie: jar.header() } });
  jar.take(response);
  let html = response.status === 200 ? await response.text() : '';
  if (html.includes('name="api_key"')) {
    run.signIn = response;
    run.signInHtml = html;
    response = await post(`${origin}/oauth/authorize/sign-in`, jar, { ...hiddenFields(html), api_key: apiKey }, origin);
    html = response.status === 200 ? await response.text() : '';
  }
  if (html.includes('name="decision"')) {
    run.consent = response;
    run.consentHtml = html;
    response = await post(
      `${origin}/oauth/authorize/consent`,
      jar,
      { ...hiddenFields(html), decision: options.decision ?? 'allow' },
      origin,
    );
  }
  const location = response.headers.get('location');
  if (response.status === 302 && location) run.location = new URL(location);
  return run;
}

/** A PKCE verifier and its S256 challenge. */
export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** Registers a public client (RFC 7591); resolves with its client_id. */
export async function registerClient(base: string, redirectUri: string, name = 'manual client'): Promise<string> {
  const response = await fetch(`${base}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: name, redirect_uris: [redirectUri], token_endpoint_auth_method: 'none' }),
  });
  if (response.status !== 201) throw new Error(`registration answered ${response.status}: ${await response.text()}`);
  return ((await response.json()) as { client_id: string }).client_id;
}

/** The authorization URL of a request with these parameters (`undefined` leaves one out). */
export function authorizeUrl(base: string, params: Record<string, string | undefined>): URL {
  const url = new URL(`${base}/oauth/authorize`);
  for (const [name, value] of Object.entries({ response_type: 'code', ...params }))
    if (value !== undefined) url.searchParams.set(name, value);
  return url;
}

/** `POST /oauth/token` with form fields. */
export async function tokenRequest(
  base: string,
  fields: Record<string, string>,
): Promise<{ status: number; body: Record<string, unknown>; headers: Headers }> {
  const response = await fetch(`${base}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  });
  return {
    status: response.status,
    body: (await response.json()) as Record<string, unknown>,
    headers: response.headers,
  };
}

/** A client that went through the whole flow by hand: its registration, the code's redirect and the tokens. */
export interface ManualFlow {
  clientId: string;
  redirectUri: string;
  verifier: string;
  code: string;
  location: URL;
  tokens: { access_token: string; refresh_token: string; [field: string]: unknown };
}

/** Registers a client, signs in with `apiKey`, consents and exchanges the code for tokens for `resource`. */
export async function manualFlow(
  base: string,
  apiKey: string,
  resource: string,
  options: { jar?: CookieJar; clientId?: string; redirectUri?: string } = {},
): Promise<ManualFlow> {
  const redirectUri = options.redirectUri ?? 'http://127.0.0.1:7/callback';
  const clientId = options.clientId ?? (await registerClient(base, redirectUri));
  const { verifier, challenge } = pkcePair();
  const run = await signInAndConsent(
    authorizeUrl(base, {
      client_id: clientId,
      redirect_uri: redirectUri,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 'st-1',
      resource,
    }),
    apiKey,
    { jar: options.jar },
  );
  const code = run.location?.searchParams.get('code');
  if (!run.location || !code) throw new Error('the authorization did not redirect with a code');
  const answer = await tokenRequest(base, {
    grant_type: 'authorization_code',
    code,
    code_verifier: verifier,
    client_id: clientId,
    redirect_uri: redirectUri,
    resource,
  });
  if (answer.status !== 200) throw new Error(`token request answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  return { clientId, redirectUri, verifier, code, location: run.location, tokens: answer.body as ManualFlow['tokens'] };
}

/** A JSON-RPC `initialize` POST to `/mcp/<slug>` with a bearer token; resolves with the status, body and challenge. */
export async function mcpPost(
  base: string,
  slug: string,
  token: string,
  /** The `Host` to send, as a load balancer in front of several instances passes the public one. Default: `base`'s. */
  host?: string,
): Promise<{ status: number; body: string; challenge: string | null }> {
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
  });
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${base}/mcp/${slug}`,
      {
        method: 'POST',
        headers: {
          ...(host === undefined ? {} : { host }),
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const challenge = res.headers['www-authenticate'];
          resolve({
            status: res.statusCode as number,
            body: Buffer.concat(chunks).toString(),
            challenge: challenge === undefined ? null : String(challenge),
          });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Resolves once `check` holds (tried every 50 ms), with the time it took; rejects after `ms`. */
export async function within(ms: number, check: () => Promise<boolean>): Promise<number> {
  const start = Date.now();
  for (;;) {
    if (await check()) return Date.now() - start;
    if (Date.now() - start > ms) throw new Error(`not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A real OpenID Provider (panva's oidc-provider) in its own process, as the company's provider of a test. */
export interface OidcProviderProcess {
  issuer: string;
  stop(): Promise<void>;
}

/**
 * Starts `packages/oauth/test/oidc-login-provider.mjs` on 127.0.0.1 with one confidential client
 * (`clientId`, `clientSecret`, `redirectUri`); every login name is an account whose `sub` is that
 * name, with `email` `<name>@example.com`, `preferred_username` and `groups`
 * `["engineering", "mcp-admins"]`. Rejects when it has not started within 15 s.
 */
export async function startOidcProvider(options: {
  clientId: string;
  clientSecret: string;
  redirectUri: string;
}): Promise<OidcProviderProcess> {
  const script = join(__dirname, '..', '..', '..', '..', 'packages', 'oauth', 'test', 'oidc-login-provider.mjs');
  const child = spawn(process.execPath, [script, JSON.stringify(options)], { stdio: 'pipe' });
  child.stderr.resume();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const issuer = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the OpenID Provider did not start within 15 s')), 15_000);
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const newline = out.indexOf('\n');
      if (newline === -1) return;
      clearTimeout(timer);
      resolve((JSON.parse(out.slice(0, newline)) as { issuer: string }).issuer);
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`the OpenID Provider exited with ${String(child.exitCode)}`));
    });
  });
  return {
    issuer,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.stdin.end();
        child.kill();
      }
      await exited;
    },
  };
}

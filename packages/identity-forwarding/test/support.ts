import { createPrivateKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type ErrorRequestHandler } from 'express';
import * as jose from 'jose';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { SigningKey, buildJwks, createIdentityTokenSigner, jwksHandler, parsePublicKeyBundle } from '@gw/jwks';
import { identityForwarding, type IdentityForwardingOptions } from '@gw/mcp-gateway';
import {
  authenticate,
  mcpResourceMetadataUrl,
  type ApiKeyEntry,
  type JwtValidationOptions,
  type McpServerConfig,
} from '../src';

export interface Listening {
  server: Server;
  url: string;
  close: () => Promise<void>;
}

/** Listens on 127.0.0.1 with an ephemeral port. */
export async function listen(handler: Parameters<typeof createServer>[1] | express.Express): Promise<Listening> {
  const server = createServer(handler as Parameters<typeof createServer>[1]);
  // Idle keep-alive connections stay open for the whole test: with Node's 5 s default, a
  // connection the server closes just as a client reuses it (a busy machine delays the client's
  // own 4 s expiry) fails that request with ECONNRESET, a race of the test machine, not a finding.
  server.keepAliveTimeout = 120_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    server,
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** What an upstream received. */
export interface Recorded {
  method: string;
  url: string;
  rawHeaders: string[];
  headers: IncomingMessage['headers'];
  body: string;
}

/** An upstream that records every request and answers with the identity headers it got. */
export async function recordingUpstream(): Promise<Listening & { requests: Recorded[] }> {
  const requests: Recorded[] = [];
  const upstream = await listen((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const record = {
        method: req.method as string,
        url: req.url as string,
        rawHeaders: req.rawHeaders,
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
      };
      requests.push(record);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ url: req.url, headers: req.headers }));
    });
  });
  return Object.assign(upstream, { requests });
}

/** A real MCP server (stateless Streamable HTTP) with `whoami` and `slow` (progress) tools. */
export async function mcpUpstream(): Promise<Listening> {
  const app = express();
  app.use(express.json());
  app.all('/mcp', async (req, res) => {
    const server = new McpServer({ name: 'test-tools', version: '1.0.0' });
    server.registerTool('whoami', { description: 'The identity headers this server received' }, async () => ({
      content: [
        {
          type: 'text',
          text: JSON.stringify({
            claims: req.headers['x-user-claims'] ?? null,
            jwt: req.headers['x-user-jwt'] ?? null,
            authorization: req.headers.authorization ?? null,
            apiKey: req.headers['x-gateway-api-key'] ?? req.headers['x-api-key'] ?? null,
          }),
        },
      ],
    }));
    server.registerTool('slow', { description: 'Reports progress before its result' }, async (extra) => {
      const progressToken = extra._meta?.progressToken;
      for (let progress = 1; progress <= 3; progress++) {
        if (progressToken !== undefined) {
          await extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken, progress, total: 3 },
          });
        }
      }
      return { content: [{ type: 'text', text: 'done' }] };
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  return listen(app);
}

/** A local identity provider: a JWKS route and a function minting its tokens. */
export async function identityProvider() {
  const pair = () =>
    generateKeyPairSync('rsa', {
      modulusLength: 2048,
      publicKeyEncoding: { type: 'spki', format: 'pem' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    });
  const keys: { kid: string; privateKey: KeyObject; jwk: object }[] = [];
  const addKey = () => {
    const { privateKey, publicKey } = pair();
    const jwk = parsePublicKeyBundle(publicKey)[0] as { kid: string };
    keys.push({ kid: jwk.kid, privateKey: createPrivateKey(privateKey), jwk });
    return keys[keys.length - 1] as (typeof keys)[number];
  };
  addKey();
  let fetches = 0;
  /** While true the provider is down: every connection is reset. */
  const outage = { down: false };
  const server = await listen((req: IncomingMessage, res: ServerResponse) => {
    fetches++;
    if (outage.down) return void req.socket.destroy();
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: keys.map((k) => k.jwk) }));
  });
  const issuer = 'https://idp.test/';
  const mint = (claims: jose.JWTPayload = {}, options: { kid?: string; key?: KeyObject; alg?: string } = {}) => {
    const key = keys[0] as (typeof keys)[number];
    return new jose.SignJWT({
      iss: issuer,
      aud: 'gateway',
      sub: 'idp-user',
      exp: Math.floor(Date.now() / 1000) + 300,
      ...claims,
    })
      .setProtectedHeader({ alg: options.alg ?? 'RS256', kid: options.kid ?? key.kid })
      .sign(options.key ?? key.privateKey);
  };
  return { ...server, issuer, jwksUri: `${server.url}/jwks`, keys, addKey, mint, outage, fetches: () => fetches };
}

/** The gateway under test: `authenticate` + `identityForwarding` at /mcp, JWKS at /jwks, a JSON error handler. */
export async function setup(options: {
  mcpServers: McpServerConfig[];
  apiKeys?: ApiKeyEntry[];
  jwtValidation?: JwtValidationOptions;
  forwarding?: Partial<IdentityForwardingOptions>;
  signingKey?: SigningKey;
}) {
  const signingKey = options.signingKey ?? SigningKey.generate();
  const signer = createIdentityTokenSigner(signingKey);
  const app = express();
  app.get('/jwks', jwksHandler(buildJwks(signingKey, [])));
  const auth = authenticate({
    apiKeys: options.apiKeys ?? [],
    jwtValidation: options.jwtValidation,
    resourceMetadataUrl: mcpResourceMetadataUrl(
      undefined,
      options.mcpServers.map((s) => s.slug),
    ),
  });
  const forwarding = identityForwarding({
    mcpServers: options.mcpServers,
    signer,
    acceptsIdentityTokens: options.jwtValidation !== undefined,
    ...options.forwarding,
  });
  // What each call left in `res.locals.gateway` (the request record's fields), once it is answered.
  const records: Record<string, unknown>[] = [];
  app.use((_req, res, next) => {
    res.once('close', () => records.push({ ...((res.locals as { gateway?: Record<string, unknown> }).gateway ?? {}) }));
    next();
  });
  app.use('/mcp', auth, forwarding);
  // Every error a request ended with, in order (what the host's error handler would log).
  const errors: unknown[] = [];
  const renderError: ErrorRequestHandler = (error, _req, res, _next) => {
    errors.push(error);
    const e = error as {
      status?: number;
      code?: string;
      message: string;
      type?: string;
      headers?: Record<string, string>;
    };
    res.status(e.status ?? 500).set(e.headers ?? {});
    res.json({ error: { message: e.message, type: e.type ?? 'api_error', code: e.code ?? 'internal_error' } });
  };
  app.use(renderError);
  const gateway = await listen(app);
  return { ...gateway, signingKey, signer, forwarding, records, errors, jwksUri: `${gateway.url}/jwks` };
}

export const alice: ApiKeyEntry = {
  key: 'gw-test-alice-0000000000',
  user: {
    user_id: 'u_alice',
    email: 'alice@example.com',
    username: 'alice',
    workspace_id: 'ws_1',
    organisation_id: 'org_1',
    groups: ['eng'],
  },
};
export const bob: ApiKeyEntry = {
  key: 'gw-test-bob-00000000000',
  user: { user_id: 'u_bob', email: 'bob@example.com' },
};

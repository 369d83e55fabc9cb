import { spawn } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Server } from 'node:http';
import express from 'express';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createRemoteJWKSet, jwtVerify } from 'jose';

/** One request the hosted MCP server received, as it judged it. */
export interface HostedServerRequest {
  authorization?: string;
  /** The verified token's `sub`, `client_id` and `aud`, when it verified. */
  sub?: string;
  clientId?: string;
  audience?: unknown;
  refused?: string;
}

/**
 * A hosted MCP server as people connect to them now (the official SDK, stateless Streamable HTTP,
 * at `/mcp`): it accepts only access tokens its own authorization server issued for it — a JWT of
 * `issuer`, signed with the keys at `jwksUri`, whose `aud` is its URL — answers anything else
 * with `401` and a `resource_metadata` challenge, and publishes its RFC 9728 metadata at
 * `/.well-known/oauth-protected-resource/mcp`. Its `whoami` tool answers the token's `sub`.
 */
export async function startHostedMcpServer(): Promise<{
  url: string;
  /** The resource: `<url>/mcp`. */
  resource: string;
  seen: HostedServerRequest[];
  /** Names the authorization server once it runs. */
  trust(issuer: string, jwksUri: string): void;
  close(): Promise<void>;
}> {
  const seen: HostedServerRequest[] = [];
  let issuer = '';
  let jwks: ReturnType<typeof createRemoteJWKSet> | undefined;
  let base = '';
  const app = express();
  app.get('/.well-known/oauth-protected-resource/mcp', (_req, res) => {
    res.json({ resource: `${base}/mcp`, authorization_servers: [issuer], bearer_methods_supported: ['header'] });
  });
  app.use(express.json());
  app.all('/mcp', async (req, res) => {
    const record: HostedServerRequest = { authorization: req.headers.authorization };
    seen.push(record);
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const challenge = `Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`;
    if (token === undefined || jwks === undefined) {
      record.refused = 'no token';
      res.status(401).set('www-authenticate', challenge).json({ error: 'invalid_token' });
      return;
    }
    try {
      const { payload } = await jwtVerify(token, jwks, { issuer, audience: `${base}/mcp` });
      record.sub = String(payload.sub);
      record.clientId = payload.client_id as string | undefined;
      record.audience = payload.aud;
    } catch (error) {
      record.refused = (error as { code?: string }).code ?? 'invalid';
      res.status(401).set('www-authenticate', `${challenge}, error="invalid_token"`).json({ error: 'invalid_token' });
      return;
    }
    const server = new McpServer({ name: 'hosted-tracker', version: '1.0.0' });
    server.registerTool('whoami', { description: 'The user of the access token' }, async () => ({
      content: [{ type: 'text', text: JSON.stringify({ sub: record.sub, client_id: record.clientId ?? null }) }],
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
    resource: `${base}/mcp`,
    seen,
    trust: (iss, jwksUri) => {
      issuer = iss;
      jwks = createRemoteJWKSet(new URL(jwksUri));
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * The hosted authorization server (`hosted-authorization-server.mjs`, oidc-provider) in its own
 * process, with its test routes. Rejects when it has not started within 15 s.
 */
export async function startHostedAuthorizationServer(options: Record<string, unknown>) {
  const child = spawn(process.execPath, [join(__dirname, 'hosted-authorization-server.mjs'), JSON.stringify(options)], {
    stdio: 'pipe',
  });
  child.stderr.resume();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const issuer = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the authorization server did not start within 15 s')), 15_000);
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const newline = out.indexOf('\n');
      if (newline === -1) return;
      clearTimeout(timer);
      resolve((JSON.parse(out.slice(0, newline)) as { issuer: string }).issuer);
    });
    void exited.then(() => reject(new Error(`the authorization server exited with ${String(child.exitCode)}`)));
  });
  return {
    issuer,
    stats: async () =>
      (await (await fetch(`${issuer}/test/stats`)).json()) as {
        token: Record<string, number>;
        refused: Record<string, number>;
        revocations: number;
        refreshTokens: string[];
      },
    /** An access token of this issuer for `sub` and `aud`, as the company's identity provider issues them. */
    mint: async (sub: string, aud: string) =>
      (
        (await (await fetch(`${issuer}/test/mint`, { method: 'POST', body: JSON.stringify({ sub, aud }) })).json()) as {
          access_token: string;
        }
      ).access_token,
    disable: (login: string) =>
      fetch(`${issuer}/test/accounts/${login}`, { method: 'POST', body: JSON.stringify({ disabled: true }) }),
    stop: async () => {
      child.stdin.end();
      child.kill();
      await exited;
    },
  };
}

import { failedStart, rsaPem, startGateway, writeConfig } from '../support';
import { MemoryOAuthProvider, freePort, signInAndConsent } from './oauth-support';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';

jest.setTimeout(90_000);

/** `pnpm start` with no config file: MCP clients sign in at the gateway with the demo API key. */
describe('the development default turns OAuth on with API-key sign-in', () => {
  it('lets the MCP SDK client sign in with the demo API key and call the demo server', async () => {
    const port = await freePort();
    const gateway = await startGateway({ PORT: String(port) });
    try {
      const base = `http://127.0.0.1:${port}`;
      const metadata = (await (await fetch(`${base}/.well-known/oauth-authorization-server`)).json()) as {
        issuer: string;
      };
      expect(metadata.issuer).toBe(base);
      const provider = new MemoryOAuthProvider('http://127.0.0.1:7/dev-callback');
      const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp/demo-claims`), {
        authProvider: provider,
      });
      await expect(new Client({ name: 'dev', version: '1' }).connect(transport)).rejects.toThrow(UnauthorizedError);
      const run = await signInAndConsent(provider.authorizationUrl as URL, 'gw-demo-key-not-a-secret');
      await transport.finishAuth(run.location?.searchParams.get('code') as string);
      const client = new Client({ name: 'dev', version: '1' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${base}/mcp/demo-claims`), { authProvider: provider }),
      );
      const tools = await client.listTools();
      expect(tools.tools.length).toBeGreaterThan(0);
      await client.close();
    } finally {
      await gateway.stop();
    }
  });
});

describe('the oauth config object', () => {
  it.each([
    [
      'without PUBLIC_BASE_URL',
      { oauth: { login: { type: 'api_key' } } },
      {},
      'gateway: config oauth needs PUBLIC_BASE_URL: set it to the address MCP clients use, such as "https://gateway.example.com".',
    ],
    [
      'with an unknown login type',
      { oauth: { login: { type: 'password' } } },
      { PUBLIC_BASE_URL: 'https://gw.example' },
      'gateway: config oauth.login.type: must be {"type":"api_key"} or {"type":"oidc","issuer":…,"clientId":…,"clientSecret":…}.',
    ],
    [
      'with a token lifetime out of range',
      { oauth: { login: { type: 'api_key' }, accessTokenTtlSeconds: 5 } },
      { PUBLIC_BASE_URL: 'https://gw.example' },
      'gateway: config oauth.accessTokenTtlSeconds: must be a whole number of seconds from 60 to 86400, such as 3600.',
    ],
    [
      'in production without JWT_PRIVATE_KEY',
      { oauth: { login: { type: 'api_key' } } },
      {
        PUBLIC_BASE_URL: 'https://gw.example',
        NODE_ENV: 'production',
        GATEWAY_ENCRYPTION_KEY: Buffer.alloc(32, 1).toString('base64'),
      },
      'gateway: config oauth signs access tokens with JWT_PRIVATE_KEY: set it (the same RSA key on every instance).',
    ],
  ])('stops start-up with one line %s', async (_what, config, env, expected) => {
    const { code, stderr } = await failedStart({ GATEWAY_CONFIG: writeConfig(config), ...env });
    expect(code).toBe(1);
    if (typeof expected === 'string') expect(stderr.trim()).toBe(expected);
    else expect(stderr.trim()).toMatch(expected);
  });

  it('starts with PUBLIC_BASE_URL and a signing key in production', async () => {
    const gateway = await startGateway({
      GATEWAY_CONFIG: writeConfig({ oauth: { login: { type: 'api_key' } } }),
      PUBLIC_BASE_URL: 'https://gw.example',
      NODE_ENV: 'production',
      JWT_PRIVATE_KEY: rsaPem().privateKey,
      GATEWAY_ENCRYPTION_KEY: Buffer.alloc(32, 1).toString('base64'),
    });
    try {
      const metadata = (await (await fetch(`${gateway.url}/.well-known/oauth-authorization-server`)).json()) as {
        issuer: string;
      };
      expect(metadata.issuer).toBe('https://gw.example');
    } finally {
      await gateway.stop();
    }
  });
});

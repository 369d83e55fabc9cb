import * as jose from 'jose';
import { SigningKey } from '@gw/jwks';
import { failedStart, rsaPem, startGateway, writeConfig } from './support';
import { generateKeyPairSync } from 'node:crypto';

jest.setTimeout(30_000);

const mcpUrl = 'http://127.0.0.1:9/mcp';

describe('start-up', () => {
  it('serves /healthz and a JWKS whose kid is the thumbprint of the key in use, with no config', async () => {
    const gateway = await startGateway();
    expect(await (await fetch(`${gateway.url}/healthz`)).json()).toEqual({ status: 'ok' });
    const jwks = (await (await fetch(`${gateway.url}/.well-known/jwks.json`)).json()) as { keys: jose.JWK[] };
    const [key] = jwks.keys;
    expect(key?.kid).toBe(await jose.calculateJwkThumbprint(key as jose.JWK));
    expect(gateway.logs.join('\n')).toContain('development default');
    expect(gateway.logs.join('\n')).toContain('temporary development key');
    expect(await gateway.stop()).toBe(0);
  });

  it('publishes the configured key, first, beside retired keys', async () => {
    const current = rsaPem();
    const retired = rsaPem();
    const gateway = await startGateway({
      JWT_PRIVATE_KEY: current.privateKey,
      JWT_PREVIOUS_PUBLIC_KEYS: retired.publicKey,
    });
    const jwks = (await (await fetch(`${gateway.url}/mcp/.well-known/jwks.json`)).json()) as { keys: jose.JWK[] };
    expect(jwks.keys.map((k) => k.kid)[0]).toBe(SigningKey.fromPem(current.privateKey).kid);
    expect(jwks.keys).toHaveLength(2);
    expect(gateway.logs.join('\n')).not.toContain('temporary development key');
    await gateway.stop();
  });

  it('warns in production when PUBLIC_BASE_URL is unset, and not when it is set', async () => {
    const config = writeConfig({ auth: { apiKeys: [{ key: 'gw-startup-key-0001', user: { user_id: 'u' } }] } });
    const unset = await startGateway({ GATEWAY_CONFIG: config, NODE_ENV: 'production' });
    await unset.stop();
    expect(unset.logs.join('\n')).toContain('PUBLIC_BASE_URL is not set');
    const set = await startGateway({
      GATEWAY_CONFIG: config,
      NODE_ENV: 'production',
      PUBLIC_BASE_URL: 'https://gateway.example.com',
    });
    await set.stop();
    expect(set.logs.join('\n')).not.toContain('PUBLIC_BASE_URL is not set');
  });

  it.each([
    ['TRUSTED_PROXIES', '10.0.0.0/8', /^gateway: TRUSTED_PROXIES must be a comma-separated list of IP addresses/],
    ['SHUTDOWN_GRACE_MS', '10s', /^gateway: SHUTDOWN_GRACE_MS must be a whole number/],
  ])('stops with one line and exit 1 for a bad %s', async (name, value, message) => {
    const { code, stderr } = await failedStart({ [name]: value });
    expect(code).toBe(1);
    expect(stderr.trim()).toMatch(message);
  });

  it.each([
    ['a 1024-bit key', () => rsaPem(1024).privateKey, 'The signing key has 1024 bits; at least 2048 are required.'],
    [
      'an EC key',
      () =>
        generateKeyPairSync('ec', {
          namedCurve: 'P-256',
          publicKeyEncoding: { type: 'spki', format: 'pem' },
          privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
        }).privateKey,
      'The signing key is an EC key; an RSA key is required.',
    ],
  ])('stops with one line and exit 1 for %s', async (_what, key, message) => {
    const { code, stderr } = await failedStart({ JWT_PRIVATE_KEY: key() });
    expect(code).toBe(1);
    expect(stderr).toBe(`gateway: ${message}\n`);
  });

  it('fails closed in production when jwt_header is used without a key', async () => {
    const config = writeConfig({
      mcpServers: [{ slug: 't', url: mcpUrl, user_identity_forwarding: { method: 'jwt_header' } }],
    });
    const { code, stderr } = await failedStart({ GATEWAY_CONFIG: config, NODE_ENV: 'production' });
    expect(code).toBe(1);
    expect(stderr).toMatch(/^gateway: JWT_PRIVATE_KEY is not set: in production, jwt_header forwarding needs/);
    expect(stderr.trim().split('\n')).toHaveLength(1);
  });

  it.each([
    [
      'an unset ${VAR}',
      { providers: [{ slug: 'a', provider: 'anthropic', apiKey: '${GW_TEST_UNSET_KEY}' }] },
      'gateway: config providers[0].apiKey: the environment variable GW_TEST_UNSET_KEY is not set.',
    ],
    ['bad JSON', '{"mcpServers": [', /^gateway: config: .* is not valid JSON/],
    [
      'an unknown method',
      { mcpServers: [{ slug: 'a', url: mcpUrl, user_identity_forwarding: { method: 'jwt' } }] },
      /^gateway: config mcpServers\[0\]\.user_identity_forwarding\.method: /,
    ],
    [
      'a duplicate slug',
      {
        mcpServers: [
          { slug: 'a', url: mcpUrl },
          { slug: 'a', url: mcpUrl },
        ],
      },
      'gateway: config mcpServers[1]: repeats the MCP server slug "a".',
    ],
    ['an unknown field', { mcpServer: [] }, 'gateway: config (root): unknown field "mcpServer".'],
    [
      'a bearer server without jwt_validation',
      { mcpServers: [{ slug: 'b', url: mcpUrl, user_identity_forwarding: { method: 'bearer' } }] },
      /^gateway: mcpServers\[b\]\.user_identity_forwarding\.method is bearer, which needs auth\.jwt_validation/,
    ],
  ])('stops with one line naming the field for %s', async (_what, config, expected) => {
    const { code, stderr } = await failedStart({ GATEWAY_CONFIG: writeConfig(config) });
    expect(code).toBe(1);
    expect(stderr.trim().split('\n')).toHaveLength(1);
    if (typeof expected === 'string') expect(stderr.trim()).toBe(expected);
    else expect(stderr.trim()).toMatch(expected);
  });

  it('names PUBLIC_BASE_URL in RFC 9728 challenges and metadata, and refuses a value that is not an origin', async () => {
    const gateway = await startGateway({ PUBLIC_BASE_URL: 'https://gateway.example.com' });
    const challenge = (await fetch(`${gateway.url}/mcp/demo-claims`, { method: 'POST' })).headers.get(
      'www-authenticate',
    );
    expect(challenge).toBe(
      'Bearer resource_metadata="https://gateway.example.com/.well-known/oauth-protected-resource/mcp/demo-claims"',
    );
    const metadata = await (await fetch(`${gateway.url}/.well-known/oauth-protected-resource/mcp/demo-claims`)).json();
    expect(metadata).toEqual({
      resource: 'https://gateway.example.com/mcp/demo-claims',
      // The development default has OAuth on: MCP clients sign in at the gateway itself.
      authorization_servers: ['https://gateway.example.com'],
      bearer_methods_supported: ['header'],
    });
    await gateway.stop();
    const { code, stderr } = await failedStart({ PUBLIC_BASE_URL: 'https://gateway.example.com/path' });
    expect(code).toBe(1);
    expect(stderr).toBe('gateway: PUBLIC_BASE_URL must be an origin only, such as "https://gateway.example.com".\n');
  });

  it('substitutes ${VAR} and ${VAR:-default}', async () => {
    const config = writeConfig({
      auth: { apiKeys: [{ key: '${GW_TEST_KEY}', user: { user_id: '${GW_TEST_USER:-fallback-user}' } }] },
      mcpServers: [],
    });
    const gateway = await startGateway({ GATEWAY_CONFIG: config, GW_TEST_KEY: 'gw-from-environment' });
    const response = await fetch(`${gateway.url}/mcp/none`, {
      headers: { 'x-gateway-api-key': 'gw-from-environment' },
    });
    expect(response.status).toBe(404);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('mcp_server_not_found');
    await gateway.stop();
  });
});

import { request } from 'node:http';
import { alice, identityProvider, recordingUpstream, setup, type Recorded } from './support';
import type { McpServerConfig } from '../src';

let upstream: Awaited<ReturnType<typeof recordingUpstream>>;
let idp: Awaited<ReturnType<typeof identityProvider>>;
let gateway: Awaited<ReturnType<typeof setup>>;
let idpToken: string;

const spoofed: [string, string][] = [
  ['X-User-Claims', '{"sub":"admin"}'],
  ['x-user-claims', '{"sub":"admin2"}'],
  ['X-USER-JWT', 'forged.jwt.value'],
  ['x_user_jwt', 'forged.underscore.jwt'],
  ['X_User_Claims', '{"sub":"admin3"}'],
  ['x-user-jwt', 'second.copy.jwt'],
  ['X-Custom-Identity', 'forged-custom'],
  ['x_custom_identity', 'forged-custom-underscore'],
  ['x-gateway-config', '{"secret":true}'],
  ['x-portkey-provider', '@evil'],
  ['connection', 'keep-alive, x-hop'],
  ['x-hop', 'hop-by-hop'],
  ['x-trace-me', 'kept'],
];

function servers(url: string): McpServerConfig[] {
  return [
    { slug: 'claims', url, user_identity_forwarding: { method: 'claims_header' } },
    { slug: 'bearer', url, user_identity_forwarding: { method: 'bearer' } },
    { slug: 'signed', url, user_identity_forwarding: { method: 'jwt_header' } },
    { slug: 'custom', url, user_identity_forwarding: { method: 'claims_header', header_name: 'X-Custom-Identity' } },
    {
      slug: 'empty-list',
      url,
      user_identity_forwarding: { method: 'jwt_header' },
      forward_headers: { mode: 'all-except', headers: [] },
    },
    { slug: 'none', url },
    {
      slug: 'only',
      url,
      user_identity_forwarding: { method: 'claims_header' },
      forward_headers: { mode: 'only', headers: ['X-User-Claims', 'x-trace-me'] },
    },
  ];
}

beforeAll(async () => {
  upstream = await recordingUpstream();
  idp = await identityProvider();
  gateway = await setup({
    apiKeys: [alice],
    jwtValidation: { jwksUri: idp.jwksUri, issuer: idp.issuer },
    mcpServers: servers(`${upstream.url}/mcp`),
  });
  idpToken = await idp.mint({ sub: 'dave' });
});

afterAll(async () => {
  await gateway.close();
  await upstream.close();
  await idp.close();
});

/** Sends raw headers (duplicates and underscores included) and returns what the upstream received. */
function send(slug: string, credentials: [string, string][]): Promise<Recorded> {
  const before = upstream.requests.length;
  const { port } = new URL(gateway.url);
  const headers = [
    ['host', `127.0.0.1:${port}`],
    ...credentials,
    ...spoofed,
    ['content-type', 'application/json'],
    ['content-length', '2'],
    ['mcp-session-id', 'sess-1'],
  ].flat();
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: `/mcp/${slug}`, headers }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c));
      res.on('end', () => {
        if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}: ${body}`));
        else resolve(upstream.requests[before] as Recorded);
      });
    });
    req.on('error', reject);
    req.end('{}');
  });
}

function namesOf(recorded: Recorded): string[] {
  return recorded.rawHeaders.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase().replace(/_/g, '-'));
}

describe('identity header protection', () => {
  it.each(['claims', 'signed', 'custom', 'empty-list', 'none', 'only'])(
    'strips client-sent identity headers in any case, with underscores and duplicated (%s)',
    async (slug) => {
      const recorded = await send(slug, [['x-gateway-api-key', alice.key as string]]);
      const values = recorded.rawHeaders.filter((_, i) => i % 2 === 1).join('\n');
      const customHeader = (n: string) => n.toLowerCase().replace(/_/g, '-') === 'x-custom-identity';
      const mustNotPass = spoofed.filter(([n]) => n !== 'x-trace-me' && (slug === 'custom' || !customHeader(n)));
      for (const [, value] of mustNotPass) expect(values).not.toContain(value);
      const names = namesOf(recorded);
      expect(names.filter((n) => n === 'x-user-claims').length).toBeLessThanOrEqual(1);
      expect(names.filter((n) => n === 'x-user-jwt').length).toBeLessThanOrEqual(1);
      expect(names.some((n) => n.startsWith('x-gateway-') || n.startsWith('x-portkey-') || n === 'x-hop')).toBe(false);
      expect(recorded.headers['mcp-session-id']).toBe('sess-1');
      expect(recorded.headers['content-type']).toBe('application/json');
    },
  );

  it('sends the body whole to an only-mode server whose list leaves out content-length', async () => {
    const recorded = await send('only', [['x-gateway-api-key', alice.key as string]]);
    expect(recorded.body).toBe('{}');
  });

  it('puts the gateway identity header in place of the spoofed one', async () => {
    expect(
      JSON.parse((await send('claims', [['x-api-key', alice.key as string]])).headers['x-user-claims'] as string).sub,
    ).toBe('u_alice');
    expect(
      JSON.parse((await send('custom', [['x-api-key', alice.key as string]])).headers['x-custom-identity'] as string)
        .sub,
    ).toBe('u_alice');
    expect((await send('signed', [['x-api-key', alice.key as string]])).headers['x-user-jwt']).toMatch(/^eyJ/);
  });

  it('forwards other headers in all-except mode and only listed ones in only mode (never identity headers)', async () => {
    expect((await send('empty-list', [['x-gateway-api-key', alice.key as string]])).headers['x-trace-me']).toBe('kept');
    const only = await send('only', [['x-gateway-api-key', alice.key as string]]);
    expect(only.headers['x-trace-me']).toBe('kept');
    expect(JSON.parse(only.headers['x-user-claims'] as string).sub).toBe('u_alice');
  });

  it('bearer: strips spoofed identity headers and forwards only the caller token', async () => {
    const recorded = await send('bearer', [['authorization', `Bearer ${idpToken}`]]);
    expect(recorded.headers.authorization).toBe(`Bearer ${idpToken}`);
    expect(recorded.headers['x-user-claims']).toBeUndefined();
    expect(recorded.headers['x-user-jwt']).toBeUndefined();
  });

  it.each([['x-gateway-api-key'], ['x-portkey-api-key'], ['x-api-key'], ['authorization']])(
    'never sends the gateway API key upstream when it comes in %s',
    async (header) => {
      const value = header === 'authorization' ? `Bearer ${alice.key}` : (alice.key as string);
      for (const slug of ['claims', 'signed', 'custom', 'empty-list', 'none', 'only']) {
        const recorded = await send(slug, [[header, value]]);
        expect(recorded.rawHeaders.join('\n')).not.toContain(alice.key as string);
      }
    },
  );
});

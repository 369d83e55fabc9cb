/**
 * Discovery as an MCP client does it, and the guarded fetch, against small servers started here
 * whose answers each test chooses: well-known forms, mismatched resource or issuer, redirects,
 * oversized metadata, endpoints at link-local or metadata addresses, names resolving there.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import {
  AuthorizationServerDiscovery,
  MemoryConnectionStore,
  UpstreamAuthUnavailableError,
  UpstreamOAuth,
  clientMetadataDocumentUrl,
  createGuardedFetch,
  renderClientMetadataDocument,
} from '../src';
import { rejection } from './support';

type Route = (req: IncomingMessage, res: ServerResponse) => void;

/** A server on 127.0.0.1 answering `routes[path]`, 404 elsewhere; records the paths asked. */
async function site(routes: (origin: string) => Record<string, Route>) {
  const asked: string[] = [];
  let table: Record<string, Route> = {};
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    asked.push(`${req.method} ${path}`);
    req.resume();
    const route = table[path];
    if (route) route(req, res);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  table = routes(origin);
  opened.push(server);
  return { origin, asked };
}

const opened: Server[] = [];
afterAll(async () => {
  await Promise.all(opened.map((s) => new Promise((resolve) => s.close(resolve))));
});

const json =
  (body: unknown, status = 200): Route =>
  (_req, res) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };

function asMetadata(issuer: string, extra: Record<string, unknown> = {}) {
  return {
    issuer,
    authorization_endpoint: `${issuer}/authorize`,
    token_endpoint: `${issuer}/token`,
    code_challenge_methods_supported: ['S256'],
    response_types_supported: ['code'],
    ...extra,
  };
}

function discovery() {
  return new AuthorizationServerDiscovery({ fetch: createGuardedFetch({ timeoutMs: 3000 }) });
}

async function refused(promise: Promise<unknown>, reason: string) {
  const err = await rejection(promise);
  expect(err).toBeInstanceOf(UpstreamAuthUnavailableError);
  expect(err.code).toBe('upstream_auth_unavailable');
  expect(err.status).toBe(502);
  expect(err.reason).toBe(reason);
  return err;
}

describe('AuthorizationServerDiscovery', () => {
  it('uses the path-based well-known resource metadata when the server gives no 401 hint, then RFC 8414', async () => {
    const { origin, asked } = await site((o) => ({
      '/.well-known/oauth-protected-resource/mcp': json({ resource: `${o}/mcp`, authorization_servers: [o] }),
      '/.well-known/oauth-protected-resource': json({ resource: 'https://wrong.example/', authorization_servers: [o] }),
      '/.well-known/oauth-authorization-server': json(asMetadata(o)),
    }));
    const found = await discovery().discover(`${origin}/mcp`);
    expect(found.issuer).toBe(origin);
    expect(asked).toEqual([
      'POST /mcp',
      'GET /.well-known/oauth-protected-resource/mcp',
      'GET /.well-known/oauth-authorization-server',
    ]);
  });

  it('falls back to the root well-known form, and to OpenID discovery (path-inserted, then appended)', async () => {
    const { origin, asked } = await site((o) => ({
      '/.well-known/oauth-protected-resource': json({ resource: `${o}/mcp`, authorization_servers: [`${o}/tenant`] }),
      '/tenant/.well-known/openid-configuration': json(asMetadata(`${o}/tenant`)),
    }));
    const found = await discovery().discover(`${origin}/mcp`);
    expect(found.issuer).toBe(`${origin}/tenant`);
    expect(asked).toEqual([
      'POST /mcp',
      'GET /.well-known/oauth-protected-resource/mcp',
      'GET /.well-known/oauth-protected-resource',
      'GET /.well-known/oauth-authorization-server/tenant',
      'GET /.well-known/openid-configuration/tenant',
      'GET /tenant/.well-known/openid-configuration',
    ]);
  });

  it('caches a discovery, and a refusal briefly', async () => {
    const { origin, asked } = await site((o) => ({
      '/.well-known/oauth-protected-resource/mcp': json({ resource: `${o}/mcp`, authorization_servers: [o] }),
      '/.well-known/oauth-authorization-server': json(asMetadata(o)),
    }));
    const d = discovery();
    await d.discover(`${origin}/mcp`);
    const count = asked.length;
    await d.discover(`${origin}/mcp`);
    expect(asked.length).toBe(count);
    await refused(d.discover(`${origin}/other`), 'invalid_metadata');
    const afterRefusal = asked.length;
    await refused(d.discover(`${origin}/other`), 'invalid_metadata');
    expect(asked.length).toBe(afterRefusal);
  });

  it('refuses resource metadata naming another resource than the server', async () => {
    const { origin } = await site((o) => ({
      '/mcp': (_req, res) => {
        res.writeHead(401, { 'www-authenticate': `Bearer resource_metadata="${o}/prm"` }).end();
      },
      '/prm': json({ resource: `${o}/another`, authorization_servers: [o] }),
      '/.well-known/oauth-authorization-server': json(asMetadata(o)),
    }));
    await refused(discovery().discover(`${origin}/mcp`), 'resource_mismatch');
  });

  it('refuses authorization server metadata naming another issuer', async () => {
    const { origin } = await site((o) => ({
      '/.well-known/oauth-protected-resource/mcp': json({ resource: `${o}/mcp`, authorization_servers: [o] }),
      '/.well-known/oauth-authorization-server': json(asMetadata('https://evil.example')),
    }));
    await refused(discovery().discover(`${origin}/mcp`), 'issuer_mismatch');
  });

  it('refuses a redirect during discovery', async () => {
    const { origin } = await site((o) => ({
      '/.well-known/oauth-protected-resource/mcp': (_req, res) => {
        res.writeHead(302, { location: `${o}/elsewhere` }).end();
      },
      '/elsewhere': json({ resource: `${o}/mcp`, authorization_servers: [o] }),
    }));
    const err = await refused(discovery().discover(`${origin}/mcp`), 'redirect');
    expect(err.message).toContain('302');
  });

  it('refuses metadata over 64 KiB, declared or streamed', async () => {
    const big = asMetadata('x', { padding: 'a'.repeat(70_000) });
    const { origin } = await site((o) => ({
      '/.well-known/oauth-protected-resource/mcp': json({ resource: `${o}/mcp`, authorization_servers: [o] }),
      '/.well-known/oauth-authorization-server': json({ ...big, issuer: o }),
    }));
    await refused(discovery().discover(`${origin}/mcp`), 'too_large');
    const { origin: chunked } = await site((o) => ({
      '/.well-known/oauth-protected-resource': (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write(`{"resource":"${o}/","authorization_servers":["${o}"],"padding":"`);
        for (let i = 0; i < 20; i++) res.write('b'.repeat(4096));
        res.end('"}');
      },
    }));
    await refused(discovery().discover(`${chunked}/`), 'too_large');
  });

  it.each(['169.254.169.254', '[fe80::1]', '[fd00:ec2::254]', '0.0.0.0'])(
    'refuses metadata whose endpoints point at %s',
    async (host) => {
      const { origin } = await site((o) => ({
        '/.well-known/oauth-protected-resource/mcp': json({ resource: `${o}/mcp`, authorization_servers: [o] }),
        '/.well-known/oauth-authorization-server': json(asMetadata(o, { token_endpoint: `http://${host}/token` })),
      }));
      const err = await rejection(discovery().discover(`${origin}/mcp`));
      expect(err.code).toBe('upstream_auth_unavailable');
      // http to a non-loopback address is refused as well: the address is what is checked here.
      expect(['forbidden_address', 'invalid_metadata']).toContain(err.reason);
      const https = await site((o) => ({
        '/.well-known/oauth-protected-resource/mcp': json({ resource: `${o}/mcp`, authorization_servers: [o] }),
        '/.well-known/oauth-authorization-server': json(asMetadata(o, { token_endpoint: `https://${host}/token` })),
      }));
      await refused(discovery().discover(`${https.origin}/mcp`), 'forbidden_address');
    },
  );

  it('requires PKCE S256 in the metadata', async () => {
    const { origin } = await site((o) => ({
      '/.well-known/oauth-protected-resource/mcp': json({ resource: `${o}/mcp`, authorization_servers: [o] }),
      '/.well-known/oauth-authorization-server': json(asMetadata(o, { code_challenge_methods_supported: ['plain'] })),
    }));
    await refused(discovery().discover(`${origin}/mcp`), 'invalid_metadata');
  });
});

describe('createGuardedFetch', () => {
  it('checks the resolved addresses: a name resolving to a link-local or metadata address is refused', async () => {
    for (const address of ['169.254.169.254', 'fe80::1', '10.0.0.1']) {
      const guarded = createGuardedFetch({
        lookup: async () => [{ address, family: address.includes(':') ? 6 : 4 }],
        allowPrivateAddresses: address !== '10.0.0.1' ? true : false,
      });
      await refused(guarded('https://login.example.test/.well-known/openid-configuration'), 'forbidden_address');
    }
    await refused(createGuardedFetch()('http://metadata.google.internal/computeMetadata/v1/'), 'forbidden_address');
  });

  it('uses http only on loopback addresses; private addresses are allowed over https only', async () => {
    const guarded = createGuardedFetch({ lookup: async () => [{ address: '10.0.0.1', family: 4 }] });
    await refused(guarded('http://idp.internal.test/token'), 'insecure_url');
  });

  it('times out', async () => {
    const { origin } = await site(() => ({ '/slow': () => undefined }));
    await refused(createGuardedFetch({ timeoutMs: 200 })(`${origin}/slow`), 'timeout');
  });

  it('reports a closed port as unreachable', async () => {
    const { origin } = await site(() => ({}));
    const port = new URL(origin).port;
    await new Promise((resolve) => opened.pop()!.close(resolve));
    await refused(createGuardedFetch()(`http://127.0.0.1:${port}/`), 'unreachable');
  });
});

describe('client identity', () => {
  it("uses the gateway's Client ID Metadata Document when the server supports them", async () => {
    const { origin } = await site((o) => ({
      '/.well-known/oauth-protected-resource/mcp': json({ resource: `${o}/mcp`, authorization_servers: [o] }),
      '/.well-known/oauth-authorization-server': json(
        asMetadata(o, {
          client_id_metadata_document_supported: true,
          registration_endpoint: `${o}/reg`,
          scopes_supported: ['mcp'],
        }),
      ),
    }));
    const store = new MemoryConnectionStore();
    const oauth = new UpstreamOAuth({ publicBaseUrl: 'https://gw.example.com/', store, discovery: discovery() });
    const started = await oauth.startAuthorization('alice', {
      slug: 'crm',
      url: `${origin}/mcp`,
      auth: { type: 'oauth' },
    });
    const url = new URL(started.authorizationUrl);
    expect(url.searchParams.get('client_id')).toBe('https://gw.example.com/oauth/upstream/crm/client.json');
    expect(url.searchParams.get('scope')).toBe('mcp');
    expect(await store.getRegisteredClient('crm', origin)).toBeUndefined();
    expect(clientMetadataDocumentUrl('https://gw.example.com', 'crm')).toBe(url.searchParams.get('client_id'));
    expect(renderClientMetadataDocument('https://gw.example.com', 'crm', 'Acme Gateway')).toEqual({
      client_id: 'https://gw.example.com/oauth/upstream/crm/client.json',
      client_name: 'Acme Gateway',
      client_uri: 'https://gw.example.com',
      redirect_uris: ['https://gw.example.com/oauth/upstream/callback'],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    });
  });

  it('uses the configured client first', async () => {
    const { origin } = await site((o) => ({
      '/.well-known/oauth-authorization-server': json(asMetadata(o, { client_id_metadata_document_supported: true })),
    }));
    const oauth = new UpstreamOAuth({
      publicBaseUrl: 'https://gw.example.com',
      store: new MemoryConnectionStore(),
      discovery: discovery(),
    });
    const started = await oauth.startAuthorization('alice', {
      slug: 'crm',
      url: 'https://mcp.crm.example/mcp',
      auth: {
        type: 'oauth',
        authorization_server: origin,
        client: { client_id: 'gw-prod', client_secret: 's3cret-value' },
      },
    });
    expect(new URL(started.authorizationUrl).searchParams.get('client_id')).toBe('gw-prod');
    expect(started.authorizationUrl).not.toContain('s3cret-value');
  });
});

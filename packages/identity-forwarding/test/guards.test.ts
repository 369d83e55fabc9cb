import { request } from 'node:http';
import * as jose from 'jose';
import { readCredential } from '../src';
import { alice, recordingUpstream, setup, type Recorded } from './support';

interface RawResponse {
  status: number;
  body: string;
}

/** Posts with a raw header list, so repeated headers reach the gateway as sent. */
function rawPost(base: string, path: string, headers: string[]): Promise<RawResponse> {
  const { port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path,
        headers: ['host', `127.0.0.1:${port}`, 'content-type', 'application/json', 'content-length', '2', ...headers],
      },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode as number, body }));
      },
    );
    req.on('error', reject);
    req.end('{}');
  });
}

describe('repeated Authorization headers', () => {
  const bearer = `Bearer ${alice.key}`;

  it('readCredential refuses two identical Authorization headers, and Basic followed by Bearer', () => {
    expect(readCredential(['Authorization', bearer])).toEqual({ kind: 'api_key', value: alice.key });
    expect(() => readCredential(['Authorization', bearer, 'authorization', bearer])).toThrow(
      expect.objectContaining({ code: 'ambiguous_credentials', status: 400 }),
    );
    expect(() => readCredential(['authorization', 'Basic dXNlcjpwYXNz', 'Authorization', bearer])).toThrow(
      expect.objectContaining({ code: 'ambiguous_credentials', status: 400 }),
    );
  });

  it('the gateway answers 400 ambiguous_credentials and calls no upstream', async () => {
    const upstream = await recordingUpstream();
    const gateway = await setup({
      apiKeys: [alice],
      mcpServers: [
        { slug: 'tools', url: `${upstream.url}/mcp`, user_identity_forwarding: { method: 'claims_header' } },
      ],
    });
    try {
      const single = await rawPost(gateway.url, '/mcp/tools', ['authorization', bearer]);
      expect(single.status).toBe(200);
      expect(upstream.requests).toHaveLength(1);

      for (const headers of [
        ['authorization', bearer, 'authorization', bearer],
        ['Authorization', 'Basic dXNlcjpwYXNz', 'Authorization', bearer],
      ]) {
        const result = await rawPost(gateway.url, '/mcp/tools', headers);
        expect(result.status).toBe(400);
        expect(JSON.parse(result.body).error.code).toBe('ambiguous_credentials');
        expect(result.body).not.toContain(alice.key as string);
      }
      expect(upstream.requests).toHaveLength(1);
    } finally {
      await gateway.close();
      await upstream.close();
    }
  });
});

describe('signed identity tokens of servers with different audiences', () => {
  it('gives each server a token for its own audience from the shared cache', async () => {
    const upstream = await recordingUpstream();
    const url = `${upstream.url}/mcp`;
    const gateway = await setup({
      apiKeys: [alice],
      mcpServers: [
        {
          slug: 'crm',
          url,
          jwt_audience: 'https://crm.internal/',
          user_identity_forwarding: { method: 'jwt_header', jwt_expiry_seconds: 120 },
        },
        {
          slug: 'billing',
          url,
          jwt_audience: 'https://billing.internal/',
          user_identity_forwarding: { method: 'jwt_header', jwt_expiry_seconds: 120 },
        },
      ],
    });
    try {
      const keys = jose.createRemoteJWKSet(new URL(gateway.jwksUri));
      const tokenFor = async (slug: string): Promise<string> => {
        const before = upstream.requests.length;
        const response = await fetch(`${gateway.url}/mcp/${slug}`, {
          method: 'POST',
          headers: { 'x-gateway-api-key': alice.key as string, 'content-type': 'application/json' },
          body: '{}',
        });
        expect(response.status).toBe(200);
        await response.arrayBuffer();
        return (upstream.requests[before] as Recorded).headers['x-user-jwt'] as string;
      };

      for (const [slug, audience, other] of [
        ['crm', 'https://crm.internal/', 'https://billing.internal/'],
        ['billing', 'https://billing.internal/', 'https://crm.internal/'],
        ['crm', 'https://crm.internal/', 'https://billing.internal/'],
      ] as const) {
        const token = await tokenFor(slug);
        const { payload } = await jose.jwtVerify(token, keys, { audience, issuer: 'gateway-mcp-gateway' });
        expect(payload.sub).toBe('u_alice');
        await expect(jose.jwtVerify(token, keys, { audience: other })).rejects.toThrow();
      }
      // Two tokens in the cache (one per audience); the third call is a hit.
      expect(gateway.forwarding.tokenCache.stats).toEqual({ hits: 1, misses: 2, size: 2 });
    } finally {
      await gateway.close();
      await upstream.close();
    }
  });
});

describe('forward_headers all-except with a list', () => {
  it('drops the listed headers (any spelling) and forwards the others', async () => {
    const upstream = await recordingUpstream();
    const gateway = await setup({
      apiKeys: [alice],
      mcpServers: [
        {
          slug: 'filtered',
          url: `${upstream.url}/mcp`,
          user_identity_forwarding: { method: 'claims_header' },
          forward_headers: { mode: 'all-except', headers: ['Cookie', 'X-Internal-Trace', 'x_tenant_hint'] },
        },
      ],
    });
    try {
      const result = await rawPost(gateway.url, '/mcp/filtered', [
        'x-gateway-api-key',
        alice.key as string,
        'cookie',
        'session=secret-cookie',
        'X-Internal-Trace',
        'trace-123',
        'x-tenant-hint',
        'tenant-9',
        'x-request-id',
        'req-42',
        'x-trace-me',
        'kept',
        'mcp-session-id',
        'sess-1',
      ]);
      expect(result.status).toBe(200);
      const recorded = upstream.requests[0] as Recorded;
      expect(recorded.headers.cookie).toBeUndefined();
      expect(recorded.headers['x-internal-trace']).toBeUndefined();
      expect(recorded.headers['x-tenant-hint']).toBeUndefined();
      expect(recorded.rawHeaders.join('\n')).not.toMatch(/secret-cookie|trace-123|tenant-9/);
      expect(recorded.headers['x-request-id']).toBe('req-42');
      expect(recorded.headers['x-trace-me']).toBe('kept');
      expect(recorded.headers['mcp-session-id']).toBe('sess-1');
      expect(JSON.parse(recorded.headers['x-user-claims'] as string).sub).toBe('u_alice');
    } finally {
      await gateway.close();
      await upstream.close();
    }
  });
});

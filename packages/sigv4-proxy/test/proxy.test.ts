import { request } from 'node:http';
import { CREDENTIALS, gatewayWith, integration, listen, mockBedrock } from './support';

let bedrock: Awaited<ReturnType<typeof mockBedrock>>;
let gateway: Awaited<ReturnType<typeof gatewayWith>>;

beforeAll(async () => {
  bedrock = await mockBedrock((req, res) => {
    if (req.url.startsWith('/forbidden')) {
      res
        .writeHead(403, { 'content-type': 'application/json', 'x-amzn-requestid': 'req-403' })
        .end('{"message":"not authorized"}');
    } else if (req.method === 'PUT' && req.url === '/knowledgebases/') {
      res
        .writeHead(202, { 'content-type': 'application/json' })
        .end(JSON.stringify({ knowledgeBase: { knowledgeBaseId: 'KB123', status: 'CREATING' } }));
    } else if (req.url.endsWith('/retrieve')) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          retrievalResults: [{ content: { text: 'Refunds take 5 days.' } }, { content: { text: 'Contact support.' } }],
        }),
      );
    } else {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    }
  });
  gateway = await gatewayWith({ integrations: [integration(bedrock.origin)] });
});

afterAll(async () => {
  await gateway.close();
  await bedrock.close();
});

const headers = (extra: Record<string, string> = {}) => ({
  'x-gateway-provider': '@kb',
  'x-gateway-custom-host': bedrock.origin,
  'content-type': 'application/json',
  authorization: 'Bearer gw-client-key-secret',
  'x-gateway-api-key': 'gw-client-key-secret',
  ...extra,
});

describe('signed Bedrock knowledge-base calls', () => {
  it('signs PUT /knowledgebases/ (trailing slash kept) and passes the 202 back', async () => {
    const body = JSON.stringify({
      name: 'kb',
      roleArn: 'arn:aws:iam::1:role/x',
      knowledgeBaseConfiguration: { type: 'VECTOR' },
    });
    const response = await fetch(`${gateway.origin}/v1/knowledgebases/`, { method: 'PUT', headers: headers(), body });
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({ knowledgeBase: { knowledgeBaseId: 'KB123', status: 'CREATING' } });
    const received = bedrock.received.at(-1)!;
    expect(received).toMatchObject({
      method: 'PUT',
      url: '/knowledgebases/',
      signatureValid: true,
      service: 'bedrock',
      region: 'us-east-1',
    });
    expect(received.headers['x-amz-security-token']).toBe(CREDENTIALS.sessionToken);
  });

  it('signs POST /knowledgebases/<id>/retrieve and passes retrievalResults back', async () => {
    const response = await fetch(`${gateway.origin}/v1/knowledgebases/KB123/retrieve`, {
      method: 'POST',
      headers: headers(),
      body: JSON.stringify({ retrievalQuery: { text: 'How long do refunds take?' } }),
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { retrievalResults: { content: { text: string } }[] };
    expect(body.retrievalResults.map((r) => r.content.text)).toEqual(['Refunds take 5 days.', 'Contact support.']);
    expect(bedrock.received.at(-1)?.signatureValid).toBe(true);
  });

  it('sends the exact body bytes, unusual whitespace included, and the query and encoding as sent', async () => {
    const body = '{ "retrievalQuery" :\n\t{"text":"caf\u00e9  \\u00e9"} ,\r\n  "x":[1 ,2]   }\n';
    const response = await fetch(`${gateway.origin}/v1/knowledgebases/KB%20A/retrieve?b=2&a=1%2F2&a=0`, {
      method: 'POST',
      headers: headers(),
      body,
    });
    expect(response.status).toBe(200);
    const received = bedrock.received.at(-1)!;
    expect(received.body.equals(Buffer.from(body))).toBe(true);
    expect(received.url).toBe('/knowledgebases/KB%20A/retrieve?b=2&a=1%2F2&a=0');
    expect(received.signatureValid).toBe(true);
  });

  it('passes an upstream 403 back with its status and body', async () => {
    const response = await fetch(`${gateway.origin}/v1/forbidden/thing`, {
      method: 'POST',
      headers: headers(),
      body: '{}',
    });
    expect(response.status).toBe(403);
    expect(response.headers.get('x-amzn-requestid')).toBe('req-403');
    expect(await response.text()).toBe('{"message":"not authorized"}');
  });

  it('sends only content-type, accept, the signed headers and the trace context: never client credentials or gateway headers', async () => {
    await fetch(`${gateway.origin}/v1/knowledgebases/KB123/retrieve`, {
      method: 'POST',
      headers: headers({ cookie: 'session=1', 'x-portkey-trace-id': 't', 'x-custom': 'y', accept: 'application/json' }),
      body: '{}',
    });
    const received = bedrock.received.at(-1)!;
    const names = Object.keys(received.headers).sort();
    expect(names).toEqual([
      'accept',
      'authorization',
      'connection',
      'content-length',
      'content-type',
      'host',
      // W3C trace context, unsigned (the signature covers only SignedHeaders): the gateway's span as parent.
      'traceparent',
      'x-amz-date',
      'x-amz-security-token',
    ]);
    expect(received.headers.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/);
    expect(received.headers.authorization).not.toContain('traceparent');
    expect(JSON.stringify(received.headers)).not.toContain('gw-client-key-secret');
    expect(received.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIATESTGATEWAY0001\//);
  });

  it('reads the provider and custom host from x-portkey- aliases and from x-gateway-config', async () => {
    const viaAlias = await fetch(`${gateway.origin}/v1/knowledgebases/KB1/retrieve`, {
      method: 'POST',
      headers: {
        'x-portkey-provider': 'kb',
        'x-portkey-custom-host': bedrock.origin,
        'content-type': 'application/json',
      },
      body: '{}',
    });
    expect(viaAlias.status).toBe(200);
    const viaConfig = await fetch(`${gateway.origin}/v1/knowledgebases/KB1/retrieve`, {
      method: 'POST',
      headers: {
        'x-gateway-config': JSON.stringify({ provider: '@kb', custom_host: bedrock.origin }),
        'content-type': 'application/json',
      },
      body: '{}',
    });
    expect(viaConfig.status).toBe(200);
    expect(bedrock.received.at(-1)?.signatureValid).toBe(true);
  });
});

describe('refusals and failures', () => {
  const code = async (response: Response) => ((await response.json()) as { error: { code: string } }).error.code;

  it('passes requests for other providers on (404 route_not_found here)', async () => {
    const response = await fetch(`${gateway.origin}/v1/knowledgebases/`, {
      method: 'PUT',
      headers: { 'x-gateway-provider': '@anthropic' },
    });
    expect(response.status).toBe(404);
    expect(await code(response)).toBe('route_not_found');
  });

  it('answers 400 custom_host_required, custom_host_not_allowed and invalid_config', async () => {
    expect(
      await code(await fetch(`${gateway.origin}/v1/x`, { method: 'POST', headers: { 'x-gateway-provider': '@kb' } })),
    ).toBe('custom_host_required');
    expect(
      await code(
        await fetch(`${gateway.origin}/v1/x`, {
          method: 'POST',
          headers: { 'x-gateway-provider': '@kb', 'x-gateway-custom-host': 'evil.example.com' },
        }),
      ),
    ).toBe('custom_host_not_allowed');
    expect(await code(await fetch(`${gateway.origin}/v1/x`, { headers: { 'x-gateway-config': '{not json' } }))).toBe(
      'invalid_config',
    );
  });

  it('answers 413 body_too_large past the limit', async () => {
    const small = await gatewayWith({ integrations: [integration(bedrock.origin)], maxBodyBytes: 16 });
    const response = await fetch(`${small.origin}/v1/x`, { method: 'POST', headers: headers(), body: 'x'.repeat(100) });
    expect(response.status).toBe(413);
    expect(await code(response)).toBe('body_too_large');
    await small.close();
  });

  it('does not follow redirects', async () => {
    const elsewhere = await listen((_req, res) => res.end('followed'));
    const redirecting = await mockBedrock((_req, res) =>
      res.writeHead(307, { location: `${elsewhere.origin}/stolen` }).end(),
    );
    const gw = await gatewayWith({ integrations: [integration(redirecting.origin)] });
    const response = await fetch(`${gw.origin}/v1/knowledgebases/`, {
      method: 'PUT',
      headers: { ...headers(), 'x-gateway-custom-host': redirecting.origin },
      body: '{}',
      redirect: 'manual',
    });
    expect(response.status).toBe(307);
    expect(elsewhere.connections()).toBe(0);
    await Promise.all([gw.close(), redirecting.close(), elsewhere.close()]);
  });

  it('ignores HTTP_PROXY and HTTPS_PROXY for signed calls', async () => {
    const proxy = await listen((_req, res) => res.end('proxied'));
    const saved = { http: process.env.HTTP_PROXY, https: process.env.HTTPS_PROXY };
    process.env.HTTP_PROXY = proxy.origin;
    process.env.HTTPS_PROXY = proxy.origin;
    try {
      const gw = await gatewayWith({ integrations: [integration(bedrock.origin)] });
      const response = await fetch(`${gw.origin}/v1/knowledgebases/KB1/retrieve`, {
        method: 'POST',
        headers: headers(),
        body: '{}',
      });
      expect(response.status).toBe(200);
      expect(proxy.connections()).toBe(0);
      await gw.close();
    } finally {
      process.env.HTTP_PROXY = saved.http;
      process.env.HTTPS_PROXY = saved.https;
      if (saved.http === undefined) delete process.env.HTTP_PROXY;
      if (saved.https === undefined) delete process.env.HTTPS_PROXY;
      await proxy.close();
    }
  });

  it('answers 504 upstream_timeout and 502 upstream_unreachable', async () => {
    const silent = await listen(() => undefined);
    const closed = await listen(() => undefined);
    const closedOrigin = closed.origin;
    await closed.close();
    const gw = await gatewayWith({
      integrations: [integration(silent.origin), { ...integration(closedOrigin), slug: 'down' }],
      timeoutMs: 200,
    });
    const slow = await fetch(`${gw.origin}/v1/x`, {
      method: 'POST',
      headers: { ...headers(), 'x-gateway-custom-host': silent.origin },
      body: '{}',
    });
    expect(slow.status).toBe(504);
    expect(await code(slow)).toBe('upstream_timeout');
    const down = await fetch(`${gw.origin}/v1/x`, {
      method: 'POST',
      headers: { ...headers(), 'x-gateway-provider': '@down', 'x-gateway-custom-host': closedOrigin },
      body: '{}',
    });
    expect(down.status).toBe(502);
    expect(await code(down)).toBe('upstream_unreachable');
    await Promise.all([gw.close(), silent.close()]);
  });

  it('streams a raw request with a body to the signer only once (no JSON body parser needed)', async () => {
    const { port } = new URL(gateway.origin);
    const status = await new Promise<number>((resolve) => {
      const req = request(
        { host: '127.0.0.1', port, method: 'POST', path: '/v1/knowledgebases/KB1/retrieve', headers: headers() },
        (res) => {
          res.resume();
          resolve(res.statusCode as number);
        },
      );
      req.write('{"retrievalQuery":');
      req.end('{"text":"chunked"}}');
    });
    expect(status).toBe(200);
    expect(bedrock.received.at(-1)?.body.toString()).toBe('{"retrievalQuery":{"text":"chunked"}}');
    expect(bedrock.received.at(-1)?.signatureValid).toBe(true);
  });
});

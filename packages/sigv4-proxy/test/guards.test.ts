import aws4 from 'aws4';
import { IntegrationSigner, resolveCustomHost, resolveIntegration } from '../src';
import { CREDENTIALS, gatewayWith, mockBedrock } from './support';

const SCOPE = /Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request/;

describe('signing region', () => {
  it("signs a call to an allowed origin for the integration's region (eu-west-2), not the signer's default", async () => {
    const bedrock = await mockBedrock((_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"retrievalResults":[]}'),
    );
    const gateway = await gatewayWith({
      integrations: [
        { slug: 'london', ...CREDENTIALS, region: 'eu-west-2', allowedHosts: [bedrock.origin] },
        { slug: 'tokyo', ...CREDENTIALS, region: 'ap-northeast-1', allowedHosts: [bedrock.origin] },
      ],
    });
    try {
      for (const [slug, region] of [
        ['london', 'eu-west-2'],
        ['tokyo', 'ap-northeast-1'],
      ]) {
        const response = await fetch(`${gateway.origin}/v1/knowledgebases/KB1/retrieve`, {
          method: 'POST',
          headers: {
            'x-gateway-provider': `@${slug}`,
            'x-gateway-custom-host': bedrock.origin,
            'content-type': 'application/json',
          },
          body: JSON.stringify({ retrievalQuery: { text: 'refunds' } }),
        });
        expect(response.status).toBe(200);
        await response.arrayBuffer();
        const received = bedrock.received.at(-1)!;
        expect(received).toMatchObject({ signatureValid: true, service: 'bedrock', region });
        expect(SCOPE.exec(String(received.headers.authorization))?.[3]).toBe(region);
      }
    } finally {
      await gateway.close();
      await bedrock.close();
    }
  });

  it('signs for the region named in a Bedrock agent host, verified independently with aws4', async () => {
    const integration = resolveIntegration({ slug: 'kb', ...CREDENTIALS, region: 'us-east-1' });
    const target = resolveCustomHost('bedrock-agent-runtime.eu-west-2.amazonaws.com', integration);
    expect(target.region).toBe('eu-west-2');

    const body = Buffer.from(JSON.stringify({ retrievalQuery: { text: 'refunds' } }));
    const signed = await new IntegrationSigner(integration).sign(
      {
        method: 'POST',
        origin: target.origin,
        path: '/knowledgebases/KB1/retrieve',
        query: '',
        headers: { 'content-type': 'application/json', 'content-length': String(body.length) },
        body,
      },
      target.region,
      new Date('2025-03-04T05:06:07Z'),
    );
    expect(signed.host).toBe('bedrock-agent-runtime.eu-west-2.amazonaws.com');
    expect(SCOPE.exec(signed.authorization ?? '')?.slice(1)).toEqual([
      CREDENTIALS.accessKeyId,
      '20250304',
      'eu-west-2',
      'bedrock',
    ]);

    const signedNames = /SignedHeaders=([^,]+)/.exec(signed.authorization ?? '')?.[1]?.split(';') ?? [];
    const headers: Record<string, string> = {};
    for (const name of signedNames) headers[name] = signed[name] as string;
    const expected = aws4.sign(
      {
        host: signed.host,
        method: 'POST',
        path: '/knowledgebases/KB1/retrieve',
        service: 'bedrock',
        region: 'eu-west-2',
        headers,
        body,
      },
      CREDENTIALS,
    ) as { headers: Record<string, string> };
    expect(signed.authorization).toBe(expected.headers.Authorization);
  });
});

describe('Host of a signed call to an allowed origin with an explicit port', () => {
  it('sends on the wire exactly the host:port it signed', async () => {
    const bedrock = await mockBedrock((_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}'),
    );
    const gateway = await gatewayWith({
      integrations: [{ slug: 'kb', ...CREDENTIALS, region: 'eu-west-2', allowedHosts: [bedrock.origin] }],
    });
    try {
      const response = await fetch(`${gateway.origin}/v1/knowledgebases/KB1/retrieve`, {
        method: 'POST',
        headers: {
          'x-gateway-provider': '@kb',
          'x-gateway-custom-host': bedrock.origin,
          'content-type': 'application/json',
          host: 'client-chosen.example.com',
        },
        body: '{}',
      });
      expect(response.status).toBe(200);
      await response.arrayBuffer();
      const received = bedrock.received.at(-1)!;
      const originHost = new URL(bedrock.origin).host;
      expect(originHost).toMatch(/^127\.0\.0\.1:\d+$/);
      expect(received.headers.host).toBe(originHost);
      const signedNames = /SignedHeaders=([^,]+)/.exec(String(received.headers.authorization))?.[1]?.split(';');
      expect(signedNames).toContain('host');
      // The mock re-derives the signature over the Host it received: valid only if that is the signed one.
      expect(received.signatureValid).toBe(true);
    } finally {
      await gateway.close();
      await bedrock.close();
    }
  });
});

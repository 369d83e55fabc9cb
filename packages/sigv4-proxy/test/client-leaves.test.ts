import { request } from 'node:http';
import { gatewayWith, integration, mockBedrock } from './support';

const PATH = '/v1/knowledgebases/KB1/retrieve';
const HEADERS = { 'x-gateway-provider': '@kb', 'content-type': 'application/json' };

describe('a client that leaves before AWS answers', () => {
  it('cancels the signed call: the AWS connection is closed, and the gateway keeps serving', async () => {
    let upstreamClosed!: () => void;
    const closed = new Promise<void>((resolve) => (upstreamClosed = resolve));
    let held = 0;
    const bedrock = await mockBedrock((_req, res) => {
      // The first call is held (AWS still thinking); the next is answered.
      if (held++ === 0) {
        res.once('close', upstreamClosed);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"retrievalResults":[]}');
    });
    const gateway = await gatewayWith({ integrations: [integration(bedrock.origin)] });
    const url = new URL(PATH, gateway.origin);
    const leaving = request(url, {
      method: 'POST',
      headers: { ...HEADERS, 'x-gateway-custom-host': bedrock.origin },
    });
    leaving.on('error', () => undefined);
    leaving.end('{"retrievalQuery":{"text":"refunds?"}}');
    // Once AWS has the call, the client goes.
    while (bedrock.received.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    leaving.destroy();
    await closed;
    const next = await fetch(url, {
      method: 'POST',
      headers: { ...HEADERS, 'x-gateway-custom-host': bedrock.origin },
      body: '{"retrievalQuery":{"text":"refunds?"}}',
    });
    expect(next.status).toBe(200);
    expect(await next.json()).toEqual({ retrievalResults: [] });
    await gateway.close();
    await bedrock.close();
  }, 10_000);
});

describe('custom hosts resolved once per integration', () => {
  it('refuses a host every time, before and after an allowed one, and past the kept number of hosts', async () => {
    const bedrock = await mockBedrock((_req, res) => res.writeHead(200).end('{}'));
    const gateway = await gatewayWith({ integrations: [integration(bedrock.origin)] });
    const send = (customHost: string) =>
      fetch(new URL(PATH, gateway.origin), {
        method: 'POST',
        headers: { ...HEADERS, 'x-gateway-custom-host': customHost },
        body: '{}',
      }).then(async (r) => ({
        status: r.status,
        code: ((await r.json()) as { error?: { code?: string } }).error?.code,
      }));
    const refused = { status: 400, code: 'custom_host_not_allowed' };
    const bad = 'evil.example.com';
    expect(await send(bad)).toEqual(refused);
    expect(await send(bedrock.origin)).toEqual({ status: 200, code: undefined });
    expect(await send(bad)).toEqual(refused);
    // More allowed texts than are kept (the same origin, spelt with a trailing space each time: trimmed alike).
    for (let i = 0; i < 40; i++) expect((await send(`${bedrock.origin}${' '.repeat(i)}`)).status).toBe(200);
    expect(await send(bad)).toEqual(refused);
    expect(await send(`${bedrock.origin}/path`)).toEqual(refused);
    expect(await send(bedrock.origin)).toEqual({ status: 200, code: undefined });
    // Every call that reached AWS was signed for the integration's region, on the allowed origin.
    expect(bedrock.received.every((r) => r.signatureValid && r.region === 'us-east-1')).toBe(true);
    expect(bedrock.received).toHaveLength(42);
    await gateway.close();
    await bedrock.close();
  });

  it('follows an integration replaced by resolveIntegration: its allowed hosts are read afresh', async () => {
    const bedrock = await mockBedrock((_req, res) => res.writeHead(200).end('{}'));
    let current = integration(bedrock.origin);
    const gateway = await gatewayWith({ resolveIntegration: (slug) => (slug === 'kb' ? current : undefined) });
    const send = () =>
      fetch(new URL(PATH, gateway.origin), {
        method: 'POST',
        headers: { ...HEADERS, 'x-gateway-custom-host': bedrock.origin },
        body: '{}',
      }).then((r) => r.status);
    expect(await send()).toBe(200);
    current = integration('http://127.0.0.1:1');
    expect(await send()).toBe(400);
    await gateway.close();
    await bedrock.close();
  });
});

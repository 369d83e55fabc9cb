import { request, type IncomingMessage, type ServerResponse } from 'node:http';
import { gatewayWith, integration, mockBedrock } from './support';

// A streamed AWS answer may be quiet for long before its first event: its headers reach the
// client as soon as AWS sends them, so a client or load balancer with a header timeout keeps it.

const held: ServerResponse[] = [];
let bedrock: Awaited<ReturnType<typeof mockBedrock>>;
let gateway: Awaited<ReturnType<typeof gatewayWith>>;

beforeAll(async () => {
  bedrock = await mockBedrock((req, res) => {
    const type = req.url.includes('binary') ? 'application/vnd.amazon.eventstream' : 'text/event-stream';
    res.writeHead(200, { 'content-type': type }).flushHeaders();
    held.push(res);
  });
  gateway = await gatewayWith({ integrations: [integration(bedrock.origin)] });
});

afterAll(async () => {
  for (const res of held) res.end();
  await gateway.close();
  await bedrock.close();
});

it.each(['text', 'binary'])('sends the headers of a quiet %s event stream before its first event', async (kind) => {
  const { port } = new URL(gateway.origin);
  const headers = new Promise<IncomingMessage | 'timeout'>((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: `/v1/knowledgebases/KB1/${kind}/retrieveAndGenerateStream`,
        headers: {
          'x-gateway-provider': '@kb',
          'x-gateway-custom-host': bedrock.origin,
          'content-type': 'application/json',
        },
      },
      resolve,
    );
    req.on('error', reject);
    req.end('{}');
    setTimeout(() => resolve('timeout'), 3000).unref();
  });
  const response = await headers;
  expect(response).not.toBe('timeout');
  expect((response as IncomingMessage).statusCode).toBe(200);
  (response as IncomingMessage).resume();
  held.shift()?.end();
});

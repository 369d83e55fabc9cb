import { startGateway } from './support';

jest.setTimeout(30_000);

describe('log lines on stdout', () => {
  it('leaves a request line within about a second of the request, though its batch is not full', async () => {
    const gateway = await startGateway();
    try {
      // A request below /v1 without credentials: refused, and logged with its record.
      const res = await fetch(`${gateway.url}/v1/models`);
      expect(res.status).toBe(401);
      const requestId = res.headers.get('x-gateway-request-id');
      const sent = Date.now();
      const seen = () => gateway.logs.some((line) => line.includes(`"requestId":"${requestId}"`));
      while (!seen() && Date.now() - sent < 5_000) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(seen()).toBe(true);
      expect(Date.now() - sent).toBeLessThan(2_500);
    } finally {
      await gateway.stop();
    }
  });
});

import express from 'express';
import { sigv4ErrorHandler, sigv4Proxy } from '../src';
import { integration, listen } from './support';

describe('sigv4ErrorHandler', () => {
  it("renders the proxy's refusals in the generic error shape with their status", async () => {
    const app = express();
    app.use('/v1', sigv4Proxy({ integrations: [integration('http://127.0.0.1:9')] }));
    app.use(sigv4ErrorHandler());
    const gateway = await listen(app);
    try {
      const res = await fetch(`${gateway.origin}/v1/knowledgebases/KB1/retrieve`, {
        method: 'POST',
        headers: { 'x-gateway-provider': '@kb', 'content-type': 'application/json' },
        body: '{}',
      });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({
        error: { message: expect.any(String), type: 'invalid_request_error', code: 'custom_host_required' },
      });
    } finally {
      await gateway.close();
    }
  });
});

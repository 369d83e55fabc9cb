import express from 'express';
import { authenticate, identityForwarding } from '../src';
import { alice, listen, mcpUpstream } from './support';

describe('identityForwarding mounted after a body parser', () => {
  it('answers 500 raw_body_unavailable at once, logs it once, and still serves GET', async () => {
    const upstream = await mcpUpstream();
    const warnings: string[] = [];
    const app = express();
    app.use(express.json());
    app.use(
      '/mcp',
      authenticate({ apiKeys: [alice] }),
      identityForwarding({
        mcpServers: [
          { slug: 'tools', url: `${upstream.url}/mcp`, user_identity_forwarding: { method: 'claims_header' } },
        ],
        logger: { warn: (_o, message) => warnings.push(message) },
      }),
    );
    app.use(((error, _req, res, _next) => {
      const e = error as { status: number; code: string; message: string };
      res.status(e.status).json({ error: { code: e.code, message: e.message } });
    }) as express.ErrorRequestHandler);
    const gateway = await listen(app);
    try {
      for (let i = 0; i < 2; i++) {
        const started = performance.now();
        const res = await fetch(`${gateway.url}/mcp/tools`, {
          method: 'POST',
          headers: {
            'x-api-key': alice.key as string,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
          },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
        });
        expect(performance.now() - started).toBeLessThan(1_000);
        expect(res.status).toBe(500);
        const body = (await res.json()) as { error: { code: string; message: string } };
        expect(body.error.code).toBe('raw_body_unavailable');
        expect(body.error.message).toMatch(/before any body parser/);
      }
      expect(warnings.filter((w) => w.includes('raw_body_unavailable'))).toHaveLength(1);
      // A request without a body has nothing a parser could take: it is proxied as before.
      const get = await fetch(`${gateway.url}/mcp/tools`, {
        headers: { 'x-api-key': alice.key as string, accept: 'text/event-stream' },
      });
      expect(get.status).not.toBe(500);
    } finally {
      await gateway.close();
      await upstream.close();
    }
  });
});

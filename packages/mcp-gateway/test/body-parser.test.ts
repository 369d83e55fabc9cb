import express from 'express';
import { authenticate, identityForwardingErrorHandler } from '@gw/identity-forwarding/identity';
import { identityForwarding } from '../src';
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
    app.use(identityForwardingErrorHandler());
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

  it("renders the MCP gateway's errors with their status and headers through identityForwardingErrorHandler", async () => {
    const app = express();
    app.use(
      '/mcp',
      authenticate({ apiKeys: [alice] }),
      identityForwarding({ mcpServers: [{ slug: 'tools', url: 'http://127.0.0.1:9/mcp' }] }),
    );
    app.use(identityForwardingErrorHandler());
    const gateway = await listen(app);
    try {
      const anonymous = await fetch(`${gateway.url}/mcp/tools`, { method: 'POST' });
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect(await anonymous.json()).toEqual({
        error: { message: expect.any(String), type: 'authentication_error', code: 'missing_credentials' },
      });
      const put = await fetch(`${gateway.url}/mcp/tools`, {
        method: 'PUT',
        headers: { 'x-api-key': alice.key as string },
      });
      expect([put.status, put.headers.get('allow')]).toEqual([405, 'GET, POST, DELETE']);
    } finally {
      await gateway.close();
    }
  });
});

import express from 'express';
import { authenticate, identityForwardingErrorHandler } from '@gw/identity-forwarding/identity';
import { MCP_REQUEST_BODY, identityForwarding, type McpAccess, type RequestWithBody } from '../src';
import { alice, listen, recordingUpstream } from './support';

// A host that read an MCP request body itself hands its bytes to the proxy in process
// (MCP_REQUEST_BODY): the proxy decides on exactly those bytes and forwards exactly them. No client
// can set it: every other request whose body was read already is refused, whatever it carries.

/** Allows the tools whose name starts with `ok`. */
const access: McpAccess = {
  allowed: true,
  tools: {
    namesOnly: true,
    listed: (tool) => (tool.name.startsWith('ok') ? 'allowed' : 'access_denied'),
    called: (name) => (name.startsWith('ok') ? 'allowed' : 'access_denied'),
  },
};

const call = (name: string) => JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name } });

const headers = {
  'x-api-key': alice.key as string,
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
};

/**
 * A gateway whose host reads each POST body first (as a body parser does); `hand` says what it
 * hands over (undefined: nothing). The tool gate applies when `gated`.
 */
async function gatewayReadingBodies(
  upstreamUrl: string,
  gated: boolean,
  hand: (body: Buffer) => Buffer | undefined,
  maxInspectedBodyBytes?: number,
) {
  const app = express();
  app.use('/mcp', (req, _res, next) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const handed = hand(Buffer.concat(chunks));
      if (handed !== undefined) (req as RequestWithBody)[MCP_REQUEST_BODY] = handed;
      next();
    });
  });
  app.use(
    '/mcp',
    authenticate({ apiKeys: [alice] }),
    identityForwarding({
      mcpServers: [{ slug: 'tools', url: `${upstreamUrl}/mcp` }],
      ...(gated ? { authorize: () => access } : {}),
      ...(maxInspectedBodyBytes === undefined ? {} : { maxInspectedBodyBytes }),
    }),
  );
  app.use(identityForwardingErrorHandler());
  return listen(app);
}

describe('a body handed to the MCP proxy in process (MCP_REQUEST_BODY)', () => {
  it.each([
    ['with the tool gate', true],
    ['without a gate', false],
  ])('is what the proxy decides on and forwards, %s, not the bytes the stream carried', async (_label, gated) => {
    const upstream = await recordingUpstream();
    const gateway = await gatewayReadingBodies(upstream.url, gated, () => Buffer.from(call('ok_handed')));
    try {
      const res = await fetch(`${gateway.url}/mcp/tools`, { method: 'POST', headers, body: call('ok_sent') });
      expect(res.status).toBe(200);
      expect(upstream.requests.map((r) => [r.body, r.headers['content-length']])).toEqual([
        [call('ok_handed'), String(Buffer.byteLength(call('ok_handed')))],
      ]);
    } finally {
      await gateway.close();
      await upstream.close();
    }
  });

  it('is gated as handed: a refused tool in the handed bytes is refused, whatever the stream named', async () => {
    const upstream = await recordingUpstream();
    const gateway = await gatewayReadingBodies(upstream.url, true, () => Buffer.from(call('no_secret')));
    try {
      const res = await fetch(`${gateway.url}/mcp/tools`, { method: 'POST', headers, body: call('ok_sent') });
      const answer = (await res.json()) as { error?: { data?: { code?: string } } };
      expect(answer.error?.data?.code).toBe('access_denied');
      expect(upstream.requests).toEqual([]);
    } finally {
      await gateway.close();
      await upstream.close();
    }
  });

  it('is bounded as a streamed body is: handed bytes over maxInspectedBodyBytes are refused 413, nothing forwarded', async () => {
    const upstream = await recordingUpstream();
    const large = Buffer.from(call(`ok_${'x'.repeat(2048)}`));
    const gateway = await gatewayReadingBodies(upstream.url, true, () => large, 1024);
    try {
      const res = await fetch(`${gateway.url}/mcp/tools`, { method: 'POST', headers, body: call('ok_sent') });
      expect(res.status).toBe(413);
      expect(upstream.requests).toEqual([]);
    } finally {
      await gateway.close();
      await upstream.close();
    }
  });

  it('cannot be claimed by a client: a body read with nothing handed is refused (500 raw_body_unavailable), whatever headers it carries', async () => {
    const upstream = await recordingUpstream();
    const gateway = await gatewayReadingBodies(upstream.url, false, () => undefined);
    try {
      const res = await fetch(`${gateway.url}/mcp/tools`, {
        method: 'POST',
        headers: {
          ...headers,
          'gateway.mcpRequestBody': call('ok_claimed'),
          'x-gateway-mcp-request-body': call('ok_claimed'),
          'mcp-request-body': call('ok_claimed'),
        },
        body: call('ok_sent'),
      });
      expect(res.status).toBe(500);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('raw_body_unavailable');
      expect(upstream.requests).toEqual([]);
    } finally {
      await gateway.close();
      await upstream.close();
    }
  });
});

import { sigv4Proxy } from '../src';
import { gatewayWith, integration, mockBedrock } from './support';

describe('the idle timeout of AWS response bodies', () => {
  it('is validated at the factory', () => {
    for (const bad of [0, -1, Number.NaN, Infinity]) {
      expect(() => sigv4Proxy({ integrations: [], idleTimeoutMs: bad })).toThrow(
        /idleTimeoutMs must be a positive number of milliseconds/,
      );
      expect(() => sigv4Proxy({ integrations: [], timeoutMs: bad })).toThrow(
        /timeoutMs must be a positive number of milliseconds/,
      );
    }
  });

  it.each([
    ['sends stream headers, then nothing', ''],
    ['stops mid-stream', 'data: {"partial":true}\n\n'],
  ])('closes the client connection when AWS %s, and the upstream one with it', async (_name, first) => {
    let upstreamClosed!: () => void;
    const closed = new Promise<void>((resolve) => (upstreamClosed = resolve));
    const bedrock = await mockBedrock((_req, res) => {
      res.once('close', upstreamClosed);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders();
      if (first) res.write(first);
    });
    const gateway = await gatewayWith({ integrations: [integration(bedrock.origin)], idleTimeoutMs: 200 });
    const response = await fetch(`${gateway.origin}/v1/agents/A/agentAliases/B/sessions/S/text`, {
      method: 'POST',
      headers: {
        'x-gateway-provider': '@kb',
        'x-gateway-custom-host': bedrock.origin,
        'content-type': 'application/json',
      },
      body: '{"inputText":"hi"}',
    });
    expect(response.status).toBe(200);
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    if (first) expect(new TextDecoder().decode((await reader.read()).value)).toBe(first);
    await expect(reader.read()).rejects.toThrow();
    await closed;
    expect(bedrock.received).toHaveLength(1);
    await gateway.close();
    await bedrock.close();
  });
});

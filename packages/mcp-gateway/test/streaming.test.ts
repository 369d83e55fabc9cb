import type { IncomingMessage, ServerResponse } from 'node:http';
import { alice, listen, setup } from './support';

describe('streaming through the MCP proxy', () => {
  it('writes each SSE event as it arrives and aborts the upstream when the client disconnects', async () => {
    let upstreamClosed!: () => void;
    const closed = new Promise<void>((resolve) => (upstreamClosed = resolve));
    let sendEvent!: (data: string) => void;
    const upstream = await listen((req: IncomingMessage, res: ServerResponse) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders();
      sendEvent = (data) => res.write(`data: ${data}\n\n`);
      sendEvent('first');
      req.socket.on('close', upstreamClosed);
    });
    const gateway = await setup({ apiKeys: [alice], mcpServers: [{ slug: 'sse', url: `${upstream.url}/mcp` }] });
    const controller = new AbortController();
    const response = await fetch(`${gateway.url}/mcp/sse`, {
      headers: { 'x-gateway-api-key': alice.key as string, accept: 'text/event-stream' },
      signal: controller.signal,
    });
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    expect(decoder.decode((await reader.read()).value)).toBe('data: first\n\n');
    // The second event is sent only after the first was received: nothing is buffered.
    sendEvent('second');
    expect(decoder.decode((await reader.read()).value)).toBe('data: second\n\n');
    controller.abort();
    await closed;
    await gateway.close();
    await upstream.close();
  });
});

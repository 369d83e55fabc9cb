import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { startGateway, writeConfig } from './support';

// After SIGTERM, streams shorter than the grace finish (gateway.test.ts); longer ones end with
// their route family's error frame, so SDKs raise rather than return half an answer, and the
// process exits 0.

jest.setTimeout(30_000);

const KEY = 'gw-shutdown-key-000001';

it('ends converted and native streams that outlast the shutdown grace with an error frame', async () => {
  const frame = (e: string, d: unknown) => `event: ${e}\ndata: ${JSON.stringify(d)}\n\n`;
  // A provider that sends its first events and then holds every stream open.
  const provider: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(
        frame('message_start', {
          type: 'message_start',
          message: {
            id: 'msg_s',
            type: 'message',
            role: 'assistant',
            model: 'claude-sonnet-4-5',
            content: [],
            usage: {},
          },
        }) +
          frame('content_block_delta', {
            type: 'content_block_delta',
            index: 0,
            delta: { type: 'text_delta', text: 'before shutdown' },
          }),
      );
    });
  });
  await new Promise<void>((resolve) => provider.listen(0, '127.0.0.1', resolve));
  const providerUrl = `http://127.0.0.1:${(provider.address() as AddressInfo).port}`;
  const running = await startGateway({
    GATEWAY_CONFIG: writeConfig({
      auth: { apiKeys: [{ key: KEY, user: { user_id: 'u' } }] },
      providers: [{ slug: 'claude', provider: 'anthropic', apiKey: 'sk-ant-shutdown', baseUrl: providerUrl }],
    }),
    SHUTDOWN_GRACE_MS: '300',
  });
  try {
    const client = new OpenAI({ apiKey: KEY, baseURL: `${running.url}/v1`, maxRetries: 0 });
    const chat = await client.chat.completions.create({
      model: '@claude/claude-sonnet-4-5',
      max_tokens: 5,
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    });
    const chunks = chat[Symbol.asyncIterator]();
    expect((await chunks.next()).done).toBe(false);
    const native = await fetch(`${running.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ model: '@claude/claude-sonnet-4-5', max_tokens: 5, stream: true, messages: [] }),
    });
    const reader = (native.body as ReadableStream<Uint8Array>).getReader();
    let nativeText = new TextDecoder().decode((await reader.read()).value);
    running.child.kill('SIGTERM');
    await expect(
      (async () => {
        for (let next = await chunks.next(); !next.done; next = await chunks.next()) void next;
      })(),
    ).rejects.toThrow(/shutting down/);
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      nativeText += new TextDecoder().decode(chunk.value);
    }
    expect(nativeText).toContain('before shutdown');
    expect(nativeText).toMatch(
      /event: error\ndata: \{"type":"error","error":\{"type":"api_error","message":"The gateway is shutting down/,
    );
    expect(await running.exited).toBe(0);
  } finally {
    if (running.child.exitCode === null) running.child.kill('SIGKILL');
    provider.closeAllConnections();
    provider.close();
  }
});

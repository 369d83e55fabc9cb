// In-process micro-benchmarks: token cache hit, signing, SSE conversion, the PDF check,
// and the memory of 10,000 cached tokens.
import { createRequire } from 'node:module';
import { median } from './lib.mjs';

const require = createRequire(import.meta.url);
const { SigningKey, createIdentityTokenSigner } = require('@gw/jwks');
const { IdentityForwarder, IdentityTokenCache } = require('@gw/identity-forwarding');
const { ChatStreamTranslator, checkPdf } = require('@gw/model-router');

function perOperation(fn, count, rounds = 5) {
  for (let i = 0; i < Math.min(count, 2000); i++) fn(i);
  const samples = [];
  for (let r = 0; r < rounds; r++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < count; i++) fn(i);
    samples.push(Number(process.hrtime.bigint() - start) / 1000 / count);
  }
  return median(samples);
}

export async function microBenchmarks(quick, smoke, cryptoSign) {
  const scale = smoke ? 0.05 : quick ? 0.3 : 1;
  const key = SigningKey.generate();
  const signer = createIdentityTokenSigner(key);
  const forwarder = new IdentityForwarder(
    { slug: 'tools', url: 'http://127.0.0.1:9000/mcp', user_identity_forwarding: { method: 'jwt_header' } },
    { signer, acceptsTokens: false },
  );
  const users = Array.from({ length: 100 }, (_, i) => ({
    method: 'api_key',
    subject: `key:${i}`,
    claims: Object.freeze({ sub: `u${i}`, user_id: `u${i}`, email: `u${i}@example.com` }),
  }));
  const tokenCacheHitMicros = perOperation(
    (i) => forwarder.identityHeaderValue(users[i % 100]),
    Math.round(200_000 * scale),
  );

  const data = Buffer.from('x'.repeat(450));
  const signs = Math.max(20, Math.round(600 * scale));
  const cryptoSignMicros = perOperation(() => cryptoSign('sha256', data, key.privateKey), signs, 3);
  const signMicros = perOperation(
    (i) =>
      signer.signIdentityToken(
        { sub: `u${i}`, email: 'a@example.com' },
        { audience: 'http://mcp', expiresInSeconds: 300 },
      ),
    signs,
    3,
  );

  const events = [
    [
      'message_start',
      JSON.stringify({ type: 'message_start', message: { id: 'msg_1', usage: { input_tokens: 5, output_tokens: 1 } } }),
    ],
    ['content_block_start', '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}'],
  ];
  for (let i = 0; i < 1000; i++)
    events.push([
      'content_block_delta',
      `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"token ${i} "}}`,
    ]);
  events.push(
    ['message_delta', '{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1000}}'],
    ['message_stop', '{"type":"message_stop"}'],
  );
  const perStream = perOperation(
    () => {
      const translator = new ChatStreamTranslator({ strict: true, includeUsage: true, model: 'm' });
      for (const [name, payload] of events) translator.push(name, payload);
    },
    Math.max(5, Math.round(100 * scale)),
    3,
  );
  const sseEventsPerSecond = events.length / (perStream / 1e6);

  const header = Buffer.from(
    '%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj\n3 0 obj << /Type /Page /Parent 2 0 R >> endobj\n',
  );
  const pdf = Buffer.concat([header, Buffer.alloc(32 * 1024 * 1024 - header.length, 0x20)]).toString('base64');
  // The check is async (it yields to the event loop every few ms): timed from call to settle.
  await checkPdf(pdf, 'p');
  const pdfSamples = [];
  for (let r = 0; r < (smoke ? 1 : 3); r++) {
    const start = process.hrtime.bigint();
    await checkPdf(pdf, 'p');
    pdfSamples.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  const pdfCheckMillis = median(pdfSamples);

  // Memory of 10,000 cached tokens, each a distinct token of realistic length.
  const sample = signer.signIdentityToken(
    { sub: 'u', email: 'user@example.com', user_id: 'u' },
    { audience: 'http://127.0.0.1:9000/mcp', expiresInSeconds: 300 },
  );
  globalThis.gc?.();
  const before = process.memoryUsage().heapUsed;
  const cache = new IdentityTokenCache({ maxSize: 10_000 });
  for (let i = 0; i < 10_000; i++)
    cache.getOrSign(
      `http://127.0.0.1:9000/mcp\n300\nkey:${i}\n{"sub":"u${i}","email":"u${i}@example.com"}`,
      300,
      () => `${sample.slice(0, -8)}${String(i).padStart(8, '0')}`,
    );
  globalThis.gc?.();
  const tokenCacheMemory = {
    entries: cache.stats.size,
    bytes: process.memoryUsage().heapUsed - before,
    gcExposed: typeof globalThis.gc === 'function',
  };

  return {
    tokenCacheHitMicros,
    cryptoSignMicros,
    signMicros,
    signOverCryptoSign: signMicros / cryptoSignMicros,
    sseEventsPerSecond,
    sseMicrosPerEventInProcess: perStream / events.length,
    pdfCheckMillis,
    tokenCacheMemory,
  };
}

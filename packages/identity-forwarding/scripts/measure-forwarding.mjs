// Cost of the identity-forwarding step per request (headers filtered + identity header), with a
// cached signed token and on a miss. Run after the build: node packages/identity-forwarding/scripts/measure-forwarding.mjs
import { SigningKey, createIdentityTokenSigner } from '@gw/jwks';
import { IdentityForwarder } from '../dist/index.js';

const signer = createIdentityTokenSigner(SigningKey.generate());
const forwarder = new IdentityForwarder(
  { slug: 'tools', url: 'http://127.0.0.1:9000/mcp', user_identity_forwarding: { method: 'jwt_header' } },
  { signer, acceptsTokens: false },
);
const users = Array.from({ length: 100 }, (_, i) => ({
  method: 'api_key',
  subject: `key:${i}`,
  claims: Object.freeze({ sub: `u${i}`, user_id: `u${i}`, email: `u${i}@example.com`, workspace_id: 'ws_1' }),
}));
const headers = {
  host: 'gateway',
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-session-id': 'abc',
  'mcp-protocol-version': '2025-06-18',
  'x-gateway-api-key': 'gw-live-secret',
  'user-agent': 'node',
};

function median(fn, n, rounds = 7) {
  const samples = [];
  for (let r = 0; r < rounds; r++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < n; i++) fn(i);
    samples.push(Number(process.hrtime.bigint() - start) / n / 1000);
  }
  return samples.sort((a, b) => a - b)[rounds >> 1];
}

median((i) => forwarder.upstreamHeaders(headers, users[i % 100]), 20000, 3); // warm up
const identityOnly = median((i) => forwarder.identityHeaderValue(users[i % 100]), 200000);
const withHeaders = median((i) => forwarder.upstreamHeaders(headers, users[i % 100]), 200000);
let fresh = 0;
const miss = median(
  () =>
    forwarder.identityHeaderValue({
      method: 'api_key',
      subject: `new:${fresh++}`,
      claims: Object.freeze({ sub: `n${fresh}` }),
    }),
  300,
);
console.log(
  JSON.stringify({ cacheHitMicros: identityOnly, cacheHitWithHeaderFilterMicros: withHeaders, cacheMissMicros: miss }),
);

// Measures what one identity-token signature costs, beside crypto.sign alone.
// Run after `tsc -b packages/jwks`: node packages/jwks/scripts/measure-signing.mjs
import { sign } from 'node:crypto';
import { createRequire } from 'node:module';
import { SigningKey, createIdentityTokenSigner } from '../dist/index.js';

const require = createRequire(import.meta.url);
const jwt = require('jsonwebtoken');

const key = SigningKey.generate();
const signer = createIdentityTokenSigner(key);
const claims = { sub: 'u_1', email: 'alice@example.com', username: 'alice', user_id: 'u_1', workspace_id: 'ws_1' };
const data = Buffer.from('x'.repeat(400));

function perOp(fn, rounds = 2000) {
  for (let i = 0; i < 300; i++) fn(i);
  const samples = [];
  for (let r = 0; r < 5; r++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < rounds / 5; i++) fn(i);
    samples.push(Number(process.hrtime.bigint() - start) / (rounds / 5) / 1000);
  }
  return samples.sort((a, b) => a - b)[2];
}

const cryptoSign = perOp(() => sign('sha256', data, key.privateKey));
const gatewaySigner = perOp((i) =>
  signer.signIdentityToken({ ...claims, sub: `u_${i}` }, { audience: 'http://mcp/x', expiresInSeconds: 300 }),
);
const jsonwebtoken = perOp((i) =>
  jwt.sign({ ...claims, sub: `u_${i}`, iss: 'gateway-mcp-gateway', aud: 'http://mcp/x' }, key.privateKey, {
    algorithm: 'RS256',
    keyid: key.kid,
    expiresIn: 300,
  }),
);
const fmt = (v) => `${v.toFixed(1)} µs`;
console.log(`crypto.sign alone:        ${fmt(cryptoSign)}`);
console.log(`signIdentityToken:        ${fmt(gatewaySigner)} (${(gatewaySigner / cryptoSign).toFixed(2)}x)`);
console.log(`jsonwebtoken (KeyObject): ${fmt(jsonwebtoken)} (${(jsonwebtoken / cryptoSign).toFixed(2)}x)`);

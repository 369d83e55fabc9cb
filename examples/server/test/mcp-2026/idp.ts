import { createPrivateKey, createPublicKey, generateKeyPairSync, sign } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A local identity provider: its key set at `jwksUri`, and `token(claims)` minting RS256 tokens for `aud: "gateway"`. */
export interface TestIdentityProvider {
  issuer: string;
  jwksUri: string;
  token(claims: Record<string, unknown>): string;
  close(): Promise<void>;
}

export async function startIdentityProvider(): Promise<TestIdentityProvider> {
  // Generated as PEM and re-imported (exporting a fresh KeyObject as a JWK can hang on Node 20).
  const { privateKey, publicKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  const key = createPrivateKey(privateKey);
  const jwk = { ...createPublicKey(publicKey).export({ format: 'jwk' }), kid: 'idp-1', alg: 'RS256', use: 'sig' };
  const server = createServer((_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = 'https://idp.test/';
  return {
    issuer,
    jwksUri: `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`,
    token(claims) {
      const encode = (v: object) => Buffer.from(JSON.stringify(v)).toString('base64url');
      const now = Math.floor(Date.now() / 1000);
      const input = `${encode({ alg: 'RS256', kid: 'idp-1', typ: 'JWT' })}.${encode({ iss: issuer, aud: 'gateway', iat: now, exp: now + 600, ...claims })}`;
      return `${input}.${sign('sha256', Buffer.from(input), key).toString('base64url')}`;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

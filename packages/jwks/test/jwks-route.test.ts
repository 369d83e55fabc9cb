import { createPrivateKey } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import * as jose from 'jose';
import { SigningKey, createIdentityTokenSigner, jwksHandler, loadSigningKey, verifyGatewayIdentity } from '../src';
import { rsaPem } from './helpers';

const current = rsaPem();
const retired = rsaPem();
const loaded = loadSigningKey({
  privateKeyPem: current.privateKey,
  previousPublicKeysPem: retired.publicKey,
  production: true,
  jwtHeaderInUse: true,
});
const audience = 'http://127.0.0.1/mcp/tools';
let server: Server;
let base: string;

beforeAll(async () => {
  const app = express();
  app.get('/.well-known/jwks.json', jwksHandler(loaded.jwks));
  server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise((resolve) => server.close(resolve)));

describe('jwksHandler', () => {
  it('serves the key set with the current key first and a five-minute public cache', async () => {
    const response = await fetch(`${base}/.well-known/jwks.json`);
    expect(response.headers.get('cache-control')).toBe('public, max-age=300');
    const body = (await response.json()) as { keys: jose.JWK[] };
    expect(body.keys).toHaveLength(2);
    expect(body.keys[0]).toEqual({ ...loaded.key?.publicJwk });
    for (const jwk of body.keys) {
      expect(Object.keys(jwk).sort()).toEqual(['alg', 'e', 'kid', 'kty', 'n', 'use']);
      expect(jwk.kid).toBe(await jose.calculateJwkThumbprint(jwk));
    }
  });

  it('publishes keys that jose verifies our tokens with, through createRemoteJWKSet', async () => {
    const signer = createIdentityTokenSigner(loaded.key as SigningKey);
    const jwt = signer.signIdentityToken({ sub: 'u1', email: 'a@example.com' }, { audience, expiresInSeconds: 300 });
    const jwks = jose.createRemoteJWKSet(new URL(`${base}/.well-known/jwks.json`));
    const { payload, protectedHeader } = await jose.jwtVerify(jwt, jwks, { issuer: 'gateway-mcp-gateway', audience });
    expect(protectedHeader).toEqual({ alg: 'RS256', typ: 'JWT', kid: loaded.key?.kid });
    expect(payload.exp! - payload.iat!).toBe(300);
    expect(payload.email).toBe('a@example.com');
  });

  it('keeps tokens signed with a retired key verifiable while that key is published', async () => {
    const retiredKey = SigningKey.fromPem(retired.privateKey);
    const jwt = createIdentityTokenSigner(retiredKey).signIdentityToken(
      { sub: 'u1' },
      { audience, expiresInSeconds: 60 },
    );
    const jwks = jose.createRemoteJWKSet(new URL(`${base}/.well-known/jwks.json`));
    await expect(jose.jwtVerify(jwt, jwks, { issuer: 'gateway-mcp-gateway', audience })).resolves.toBeDefined();
    const stranger = await new jose.SignJWT({ sub: 'u1' })
      .setProtectedHeader({ alg: 'RS256', kid: 'stranger' })
      .setIssuer('gateway-mcp-gateway')
      .setAudience(audience)
      .setExpirationTime('1m')
      .sign(createPrivateKey(rsaPem().privateKey));
    await expect(jose.jwtVerify(stranger, jwks)).rejects.toThrow();
  });
});

describe('factories', () => {
  it('explain a factory mounted without being called', () => {
    const fakeRequest = { method: 'GET', headers: {} } as unknown as Parameters<typeof jwksHandler>[0];
    expect(() => jwksHandler(fakeRequest)).toThrow('app.use(jwksHandler({ ... }))');
  });

  it('refuse verifyGatewayIdentity without an audience or with a bad jwksUri', () => {
    expect(() => verifyGatewayIdentity({ jwksUri: 'http://x/jwks', audience: '' })).toThrow(/audience/);
    expect(() => verifyGatewayIdentity({ jwksUri: 'ftp://x/jwks', audience: 'a' })).toThrow(/http or https/);
  });
});

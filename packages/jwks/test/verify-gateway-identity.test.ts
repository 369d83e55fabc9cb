import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import { SigningKey, buildJwks, createIdentityTokenSigner, jwksHandler, verifyGatewayIdentity } from '../src';

const key = SigningKey.generate();
const signer = createIdentityTokenSigner(key);
const audience = 'http://mcp.internal/mcp';
let server: Server;
let base: string;

beforeAll(async () => {
  const app = express();
  app.get('/jwks', jwksHandler(buildJwks(key, [])));
  server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  app.post('/tool', verifyGatewayIdentity({ jwksUri: `${base}/jwks`, audience }), (req, res) => {
    res.json({ identity: req.gatewayIdentity });
  });
});

afterAll(() => new Promise((resolve) => server.close(resolve)));

const call = (headers: Record<string, string>) => fetch(`${base}/tool`, { method: 'POST', headers });

describe('verifyGatewayIdentity', () => {
  it('puts the verified claims on the request', async () => {
    const jwt = signer.signIdentityToken({ sub: 'u1', email: 'a@example.com' }, { audience, expiresInSeconds: 60 });
    const response = await call({ 'X-User-JWT': jwt });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { identity: unknown }).identity).toMatchObject({
      sub: 'u1',
      email: 'a@example.com',
    });
  });

  it('answers 401 with a code when the header is missing', async () => {
    const response = await call({});
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toContain('Bearer');
    expect(await response.json()).toEqual({
      error: { message: expect.any(String), type: 'authentication_error', code: 'missing_identity_token' },
    });
  });

  it('answers 401 for a token minted for another server, and for an expired one', async () => {
    const other = signer.signIdentityToken({ sub: 'u1' }, { audience: 'http://other/mcp', expiresInSeconds: 60 });
    expect(((await (await call({ 'x-user-jwt': other })).json()) as { error: { code: string } }).error.code).toBe(
      'audience_mismatch',
    );
    const old = signer.signIdentityToken({ sub: 'u1' }, { audience, expiresInSeconds: 60, issuedAt: 1_000_000 });
    expect(((await (await call({ 'x-user-jwt': old })).json()) as { error: { code: string } }).error.code).toBe(
      'token_expired',
    );
  });
});

import { createPrivateKey, createPublicKey, sign } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import * as jose from 'jose';
import {
  IdentityProviderUnavailableError,
  LocalKeySet,
  RemoteKeySet,
  SigningKey,
  buildJwks,
  createIdentityTokenSigner,
  jwksHandler,
  parsePublicKeyBundle,
  verifyGatewayIdentity,
  verifyToken,
  type VerifyTokenOptions,
} from '../src';
import { listen, rsaPem } from './helpers';

const now = Math.floor(Date.now() / 1000);

async function refusalCode(jwt: string, options: VerifyTokenOptions): Promise<string> {
  try {
    await verifyToken(jwt, options);
  } catch (error) {
    return (error as { code: string }).code;
  }
  throw new Error('the token was accepted');
}

describe('verifyToken: claims that are missing altogether', () => {
  const pem = rsaPem();
  const signingKey = SigningKey.fromPem(pem.privateKey);
  const keys = new LocalKeySet(buildJwks(signingKey, []));
  const privateKey = createPrivateKey(pem.privateKey);

  const token = (claims: jose.JWTPayload): Promise<string> =>
    new jose.SignJWT({ sub: 'u1', exp: now + 300, ...claims })
      .setProtectedHeader({ alg: 'RS256', kid: signingKey.kid })
      .sign(privateKey);

  it('refuses a token with no aud when an audience is configured', async () => {
    const options = { keys, audience: 'gateway' };
    await expect(verifyToken(await token({ aud: 'gateway' }), options)).resolves.toBeDefined();
    expect(await refusalCode(await token({}), options)).toBe('audience_mismatch');
    expect(await refusalCode(await token({ aud: [] }), options)).toBe('audience_mismatch');
  });

  it('refuses a token with no iss when an issuer is configured', async () => {
    const options = { keys, issuer: 'https://idp.test/' };
    await expect(verifyToken(await token({ iss: 'https://idp.test/' }), options)).resolves.toBeDefined();
    expect(await refusalCode(await token({}), options)).toBe('issuer_mismatch');
  });
});

describe('verifyGatewayIdentity: default issuer', () => {
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

  afterAll(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );

  const call = (jwt: string) => fetch(`${base}/tool`, { method: 'POST', headers: { 'x-user-jwt': jwt } });

  it('refuses a token signed with the gateway key whose iss is not the gateway', async () => {
    const genuine = signer.signIdentityToken({ sub: 'u1' }, { audience, expiresInSeconds: 60 });
    expect((await call(genuine)).status).toBe(200);

    for (const iss of ['https://idp.example.com/', 'gateway-mcp-gateway-2']) {
      const forged = await new jose.SignJWT({ sub: 'u1', iss, aud: audience, iat: now, exp: now + 60 })
        .setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: key.kid })
        .sign(key.privateKey);
      const response = await call(forged);
      expect(response.status).toBe(401);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('issuer_mismatch');
    }

    const noIssuer = await new jose.SignJWT({ sub: 'u1', aud: audience, iat: now, exp: now + 60 })
      .setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: key.kid })
      .sign(key.privateKey);
    expect((await call(noIssuer)).status).toBe(401);
  });
});

describe('RemoteKeySet: answers that must not provide keys', () => {
  const good = rsaPem();
  const goodJwk = parsePublicKeyBundle(good.publicKey)[0]!;

  it('does not follow a redirect from the key set address', async () => {
    let redirectTargetHits = 0;
    const idp = await listen((req, res) => {
      if (req.url === '/moved') {
        redirectTargetHits++;
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [goodJwk] }));
        return;
      }
      res.writeHead(302, { location: '/moved' }).end();
    });
    try {
      for (const status of [301, 302, 307, 308]) {
        const redirecting = await listen((_req, res) => res.writeHead(status, { location: `${idp.url}/moved` }).end());
        try {
          const outcomes: string[] = [];
          const keys = new RemoteKeySet({ jwksUri: `${redirecting.url}/jwks`, onFetch: (o) => outcomes.push(o) });
          await expect(keys.getKey(goodJwk.kid)).rejects.toBeInstanceOf(IdentityProviderUnavailableError);
          expect(outcomes).toEqual(['error']);
        } finally {
          await redirecting.close();
        }
      }
      const sameOrigin = new RemoteKeySet({ jwksUri: `${idp.url}/jwks` });
      await expect(sameOrigin.getKey(goodJwk.kid)).rejects.toBeInstanceOf(IdentityProviderUnavailableError);
      expect(redirectTargetHits).toBe(0);
    } finally {
      await idp.close();
    }
  });

  it('does not use a 1024-bit RSA key published in the set', async () => {
    const weak = rsaPem(1024);
    // Export from a key parsed from PEM, never from a freshly generated key object (Node 20 trap).
    const { n, e } = createPublicKey(weak.publicKey).export({ format: 'jwk' });
    const weakJwk = { kty: 'RSA', n, e, kid: 'weak-1024', use: 'sig', alg: 'RS256' };

    const idp = await listen((_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [goodJwk, weakJwk] })),
    );
    try {
      const keys = new RemoteKeySet({ jwksUri: `${idp.url}/jwks` });
      const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
      // jose refuses to sign with RSA keys under 2048 bits, so sign with node:crypto.
      const input = `${encode({ alg: 'RS256', kid: 'weak-1024' })}.${encode({ sub: 'u1', exp: now + 60 })}`;
      const weakToken = `${input}.${sign('sha256', Buffer.from(input), createPrivateKey(weak.privateKey)).toString('base64url')}`;
      expect(await refusalCode(weakToken, { keys })).toBe('unknown_key');

      const strongToken = await new jose.SignJWT({ sub: 'u1' })
        .setProtectedHeader({ alg: 'RS256', kid: goodJwk.kid })
        .setExpirationTime('5m')
        .sign(createPrivateKey(good.privateKey));
      await expect(verifyToken(strongToken, { keys })).resolves.toMatchObject({ payload: { sub: 'u1' } });
    } finally {
      await idp.close();
    }
  });

  it('has no key at all when the only key in the set has 1024 bits', async () => {
    const weak = rsaPem(1024);
    const { n, e } = createPublicKey(weak.publicKey).export({ format: 'jwk' });
    const idp = await listen((_req, res) =>
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ keys: [{ kty: 'RSA', n, e, kid: 'weak', use: 'sig' }] })),
    );
    try {
      const keys = new RemoteKeySet({ jwksUri: `${idp.url}/jwks` });
      await expect(keys.getKey('weak')).rejects.toBeInstanceOf(IdentityProviderUnavailableError);
    } finally {
      await idp.close();
    }
  });
});

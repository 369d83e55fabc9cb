import type * as Crypto from 'node:crypto';
import { inspect } from 'node:util';
import * as jose from 'jose';
import { startFromEnvironment } from '../src/main';
import { deferredSigner, signingKeyAtStart } from '../src/deferred-signing-key';
import { freshDataDir, rsaPem, writeConfig } from './support';

/*
 * Without JWT_PRIVATE_KEY, a gateway makes its temporary RSA key when first needed (JWKS, first
 * identity token, OAuth), not at every start (0.15 to 0.3 s of CPU).
 * RSA key generations are counted as jest loads node:crypto for the gateway's modules.
 */
jest.mock('node:crypto', () => {
  const actual = jest.requireActual<typeof Crypto>('node:crypto');
  return {
    ...actual,
    generateKeyPairSync: (...args: unknown[]) => {
      const seen = globalThis as { rsaKeysMade?: number };
      if (args[0] === 'rsa') seen.rsaKeysMade = (seen.rsaKeysMade ?? 0) + 1;
      return (actual.generateKeyPairSync as (...a: unknown[]) => unknown)(...args);
    },
  };
});
const rsaKeysMade = () => (globalThis as { rsaKeysMade?: number }).rsaKeysMade ?? 0;
const madeBefore = { count: 0 };
beforeEach(() => {
  madeBefore.count = rsaKeysMade();
});
const madeSince = () => rsaKeysMade() - madeBefore.count;

describe('the temporary signing key, made when first needed', () => {
  it('a gateway without jwt_header or OAuth starts without making it; the JWKS makes it, once', async () => {
    const config = writeConfig({
      auth: { apiKeys: [{ key: 'gw-deferred-key-0001', user: { user_id: 'u' } }] },
      mcpServers: [
        { slug: 'claims', url: 'http://127.0.0.1:9/mcp', user_identity_forwarding: { method: 'claims_header' } },
      ],
    });
    const gateway = await startFromEnvironment({
      GATEWAY_CONFIG: config,
      GATEWAY_DATA_DIR: freshDataDir('gw-deferred-key-'),
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'error',
    });
    try {
      expect(madeSince()).toBe(0);
      const address = gateway.server.address() as { port: number };
      const jwksAt = async (path: string) =>
        (await (await fetch(`http://127.0.0.1:${address.port}${path}`)).json()) as { keys: jose.JWK[] };
      const first = await jwksAt('/.well-known/jwks.json');
      expect(first.keys).toHaveLength(1);
      expect(first.keys[0]?.kid).toBe(await jose.calculateJwkThumbprint(first.keys[0] as jose.JWK));
      expect(madeSince()).toBe(1);
      // The same key from then on, on both paths.
      expect(await jwksAt('/mcp/.well-known/jwks.json')).toEqual(first);
      expect(madeSince()).toBe(1);
    } finally {
      await gateway.stop();
    }
  }, 60_000);

  it('is made on the first token signed with it, which the published key verifies', async () => {
    const keys = signingKeyAtStart({ production: false, jwtHeaderInUse: false });
    const signer = deferredSigner(keys.key as NonNullable<typeof keys.key>);
    expect(keys.ephemeral).toBe(true);
    expect(keys.generated()).toBe(false);
    // Printing it neither makes it nor shows key material.
    for (const printed of [String(keys.key), JSON.stringify(keys.key), inspect(keys.key)])
      expect(printed).not.toMatch(/BEGIN|PRIVATE KEY-----/);
    expect(keys.generated()).toBe(false);
    expect(madeSince()).toBe(0);
    const token = signer.signIdentityToken({ sub: 'u' }, { audience: 'https://mcp.example', expiresInSeconds: 60 });
    expect(keys.generated()).toBe(true);
    expect(madeSince()).toBe(1);
    const { payload, protectedHeader } = await jose.jwtVerify(
      token,
      jose.createLocalJWKSet(keys.jwks as jose.JSONWebKeySet),
    );
    expect(payload.sub).toBe('u');
    expect(protectedHeader.kid).toBe(keys.key?.kid);
    expect(signer.kid).toBe(keys.key?.kid);
    expect(String(keys.key)).toContain(keys.key?.kid);
    expect(JSON.stringify(keys.key)).not.toMatch(/PRIVATE KEY-----/);
    expect(madeSince()).toBe(1);
  });

  it('the development default (a jwt_header server) starts without making it either; its first token does', async () => {
    const gateway = await startFromEnvironment({
      GATEWAY_DATA_DIR: freshDataDir('gw-deferred-key-'),
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'error',
    });
    try {
      expect(madeSince()).toBe(0);
    } finally {
      await gateway.stop();
    }
    const keys = signingKeyAtStart({ production: false, jwtHeaderInUse: true });
    expect(keys.generated()).toBe(false);
    const signer = deferredSigner(keys.key as NonNullable<typeof keys.key>);
    signer.signIdentityToken({ sub: 'u' }, { audience: 'https://mcp.example', expiresInSeconds: 60 });
    expect(madeSince()).toBe(1);
  }, 60_000);

  it('a configured key is parsed at start, never made', () => {
    const pem = rsaPem();
    const made = madeSince();
    const configured = signingKeyAtStart({ privateKeyPem: pem.privateKey, production: true, jwtHeaderInUse: true });
    expect(configured.ephemeral).toBe(false);
    expect(configured.generated()).toBe(true);
    expect(configured.jwks.keys).toHaveLength(1);
    expect(madeSince()).toBe(made);
  });

  it('refuses at start what loadSigningKey refuses', () => {
    expect(() =>
      signingKeyAtStart({ previousPublicKeysPem: 'not a key', production: false, jwtHeaderInUse: false }),
    ).toThrow(/previous public keys/i);
    expect(() => signingKeyAtStart({ production: true, jwtHeaderInUse: true })).toThrow(/JWT_PRIVATE_KEY/);
  });
});

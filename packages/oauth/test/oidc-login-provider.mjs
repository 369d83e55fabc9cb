// A real OpenID Provider (panva's oidc-provider) on 127.0.0.1 for the sign-in tests, run as its
// own Node process because oidc-provider is an ES module that jest's CommonJS runtime cannot load.
// Usage: node oidc-login-provider.mjs '<json options>'; prints {"issuer": "..."} once listening
// and exits when its standard input closes (the test ended or died).
//
// Options: redirectUri, clientId, clientSecret, wrongKey (publish another key under the signing
// key's kid), idTokenClaims (put the scope's claims in the ID token, not only in userinfo).
import { createServer } from 'node:http';
import { createPrivateKey, createPublicKey, generateKeyPairSync } from 'node:crypto';
import Provider from 'oidc-provider';

const options = JSON.parse(process.argv[2] ?? '{}');

// Generated as PEM and re-imported: exporting a freshly generated RSA KeyObject as a JWK can
// deadlock on Node 20.
function rsaJwk(kid) {
  const { privateKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  return { ...createPrivateKey(privateKey).export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' };
}

const signingKey = rsaJwk('signing-key');
const otherKey = rsaJwk('signing-key');
const publicOf = (jwk) => ({
  ...createPublicKey({ key: jwk, format: 'jwk' }).export({ format: 'jwk' }),
  kid: jwk.kid,
  alg: 'RS256',
  use: 'sig',
});

const server = createServer();
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address();
  const issuer = `http://127.0.0.1:${port}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: options.clientId,
        client_secret: options.clientSecret,
        redirect_uris: [options.redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    jwks: { keys: [signingKey] },
    cookies: { keys: ['oidc-login-test-cookie-key'] },
    // Every authorization request must carry a PKCE S256 challenge, confidential client or not.
    pkce: { required: () => true },
    conformIdTokenClaims: !options.idTokenClaims,
    claims: {
      openid: ['sub'],
      email: ['email', 'email_verified'],
      profile: ['preferred_username', 'name', 'groups'],
    },
    async findAccount(_ctx, id) {
      return {
        accountId: id,
        async claims() {
          return {
            sub: id,
            email: `${id}@example.com`,
            email_verified: true,
            preferred_username: id,
            name: `User ${id}`,
            groups: ['engineering', 'mcp-admins'],
          };
        },
      };
    },
  });
  const handle = provider.callback();
  server.on('request', (req, res) => {
    if (options.wrongKey && req.method === 'GET' && req.url === '/jwks') {
      res.writeHead(200, { 'content-type': 'application/jwk-set+json' });
      res.end(JSON.stringify({ keys: [publicOf(otherKey)] }));
      return;
    }
    handle(req, res);
  });
  process.stdout.write(`${JSON.stringify({ issuer })}\n`);
});

process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
process.stdin.on('close', () => process.exit(0));

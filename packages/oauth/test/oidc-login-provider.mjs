// A real OpenID Provider (panva's oidc-provider) on 127.0.0.1 for the sign-in tests, run as its
// own Node process because oidc-provider is an ES module that jest's CommonJS runtime cannot load.
// Usage: node oidc-login-provider.mjs '<json options>'; prints {"issuer": "..."} once listening
// and exits when its standard input closes (the test ended or died).
//
// Options: redirectUri, clientId, clientSecret, wrongKey (publish another key under the signing
// key's kid), idTokenClaims (put the scope's claims in the ID token, not only in userinfo).
// accessTokenTtls ({"<account>": seconds}: access-token lifetimes, default 3600 s), rotateRefreshTokens
// (every refresh token is used once; a used one presented again revokes the provider's grant).
// It issues refresh tokens to its client. `POST /test/accounts/<name>` with {"groups": [...]} or
// {"disabled": true} changes an account, as an administrator of the company's provider would.
// `GET /test/token-requests` answers how many token requests of each grant type it has handled
// ({"refresh_token": 2, ...}), refused ones included.
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

/** Accounts changed by the test: name → { groups?, disabled? }. */
const accounts = new Map();
/** Token requests handled, by grant type. */
const tokenRequests = {};

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
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    jwks: { keys: [signingKey] },
    cookies: { keys: ['oidc-login-test-cookie-key'] },
    // Every authorization request must carry a PKCE S256 challenge, confidential client or not.
    pkce: { required: () => true },
    // A refresh token to every sign-in of its client (no offline_access needed), as many providers are set up.
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    ...(options.rotateRefreshTokens ? { rotateRefreshToken: true } : {}),
    ttl: {
      AccessToken: (_ctx, token) => options.accessTokenTtls?.[token.accountId] ?? 3600,
    },
    conformIdTokenClaims: !options.idTokenClaims,
    claims: {
      openid: ['sub'],
      email: ['email', 'email_verified'],
      profile: ['preferred_username', 'name', 'groups'],
    },
    async findAccount(_ctx, id) {
      const changed = accounts.get(id) ?? {};
      if (changed.disabled) return undefined;
      return {
        accountId: id,
        async claims() {
          return {
            sub: id,
            email: `${id}@example.com`,
            email_verified: true,
            preferred_username: id,
            name: `User ${id}`,
            groups: changed.groups ?? ['engineering', 'mcp-admins'],
          };
        },
      };
    },
  });
  const count = (ctx) => {
    const type = String(ctx.oidc?.params?.grant_type ?? 'unknown');
    tokenRequests[type] = (tokenRequests[type] ?? 0) + 1;
  };
  provider.on('grant.success', count);
  provider.on('grant.error', count);
  const handle = provider.callback();
  server.on('request', (req, res) => {
    const account = /^\/test\/accounts\/([\w.-]+)$/.exec(req.url ?? '');
    if (account && req.method === 'POST') {
      let body = '';
      req.on('data', (chunk) => (body += chunk));
      req.on('end', () => {
        accounts.set(account[1], JSON.parse(body));
        res.writeHead(204).end();
      });
      return;
    }
    if (req.method === 'GET' && req.url === '/test/token-requests') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(tokenRequests));
      return;
    }
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

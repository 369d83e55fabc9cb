// A real authorization server (panva's oidc-provider) on 127.0.0.1 for the upstream-credential
// tests, run as its own Node process because oidc-provider is an ES module that jest's CommonJS
// runtime cannot load. It plays two parts:
//   - a hosted MCP server's own authorization server: PKCE S256 required, resource indicators
//     (RFC 8707; access tokens are RS256 JWTs whose `aud` is the resource), short-lived access
//     tokens, rotating refresh tokens, revocation (RFC 7009), dynamic registration (RFC 7591),
//     `iss` in authorization responses (RFC 9207);
//   - the company's identity provider: `POST /test/mint` signs a user's access token for the
//     gateway, and the token-exchange grant (RFC 8693) mints a token for another audience from one.
//
// Usage: node hosted-authorization-server.mjs '<json options>'; prints {"issuer": "..."} once
// listening, and exits when its standard input closes (the test ended or died).
// Options:
//   resource          the protected resource (the MCP server's URL) tokens may be asked for
//   accessTokenTtl    access token lifetime in seconds (default 60)
//   clients           pre-registered clients: [{client_id, client_secret?, redirect_uris, token_endpoint_auth_method?, grant_types?}]
//   cimd              advertise client_id_metadata_document_supported (default false)
// Test routes:
//   GET  /test/stats               {"token": {<grant_type>: n}, "refused": {<grant_type>: n}, "revocations": n,
//                                   "registrations": n, "refreshTokens": [every refresh token issued]}
//   POST /test/accounts/<name>     {"disabled": true}: the account is gone (its refresh is refused)
//   POST /test/mint                {"sub", "aud", "ttl"?}: an RS256 access token of this issuer
// Every login name is an account whose `sub` is that name; the password is not checked.
import { createServer } from 'node:http';
import { createPrivateKey, createPublicKey, generateKeyPairSync } from 'node:crypto';
import Provider, { errors } from 'oidc-provider';
import { SignJWT, jwtVerify, importJWK } from 'jose';

const options = JSON.parse(process.argv[2] ?? '{}');
const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';

// Generated as PEM and re-imported: exporting a freshly generated RSA KeyObject as a JWK can
// deadlock on Node 20.
const { privateKey: pem } = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  publicKeyEncoding: { type: 'spki', format: 'pem' },
});
const signingJwk = { ...createPrivateKey(pem).export({ format: 'jwk' }), kid: 'hosted-as', alg: 'RS256', use: 'sig' };
const publicJwk = {
  ...createPublicKey({ key: signingJwk, format: 'jwk' }).export({ format: 'jwk' }),
  kid: 'hosted-as',
  alg: 'RS256',
};

const accounts = new Map();
const stats = { token: {}, refused: {}, revocations: 0, registrations: 0, refreshTokens: [] };
const count = (bucket, key) => (bucket[key] = (bucket[key] ?? 0) + 1);
const ttl = options.accessTokenTtl ?? 60;

const server = createServer();
server.listen(0, '127.0.0.1', async () => {
  const { port } = server.address();
  const issuer = `http://127.0.0.1:${port}`;
  const signer = await importJWK(signingJwk, 'RS256');
  const verifier = await importJWK(publicJwk, 'RS256');
  const mint = (claims, lifetime) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid: 'hosted-as', typ: 'at+jwt' })
      .setIssuer(issuer)
      .setIssuedAt()
      .setExpirationTime(`${lifetime}s`)
      .sign(signer);

  const provider = new Provider(issuer, {
    clients: (options.clients ?? []).map((client) => ({
      grant_types: ['authorization_code', 'refresh_token', TOKEN_EXCHANGE],
      response_types: ['code'],
      token_endpoint_auth_method: client.client_secret ? 'client_secret_basic' : 'none',
      ...client,
    })),
    jwks: { keys: [signingJwk] },
    cookies: { keys: ['hosted-as-test-cookie-key'] },
    pkce: { required: () => true },
    scopes: ['openid', 'offline_access', 'read', 'write'],
    // A refresh token to every authorization of a client allowed the grant, rotated on every use.
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: () => true,
    ttl: { AccessToken: ttl, RefreshToken: 24 * 3600, Grant: 24 * 3600 },
    features: {
      devInteractions: { enabled: true },
      registration: { enabled: true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => options.resource,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, resource) => {
          if (resource !== options.resource) throw new errors.InvalidTarget();
          return {
            scope: 'read write',
            audience: resource,
            accessTokenTTL: ttl,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'RS256' } },
          };
        },
      },
    },
    extraClientMetadata: { properties: [] },
    discovery: options.cimd ? { client_id_metadata_document_supported: true } : {},
    async findAccount(_ctx, id) {
      if (accounts.get(id)?.disabled) return undefined;
      return { accountId: id, claims: async () => ({ sub: id }) };
    },
  });
  provider.on('grant.success', (ctx) => count(stats.token, ctx.oidc.params.grant_type));
  provider.on('grant.error', (ctx) => count(stats.refused, ctx.oidc.params?.grant_type ?? 'unknown'));
  provider.on('registration_create.success', () => stats.registrations++);
  // The refresh tokens issued (an opaque token's value is its jti), for the tests that look for them.
  provider.on('refresh_token.saved', (token) => stats.refreshTokens.push(token.jti));
  provider.on('server_error', (_ctx, error) => process.stderr.write(`server_error: ${error?.stack ?? error}\n`));

  // RFC 8693: a token for `audience` (or `resource`) from a valid access token of this issuer.
  provider.registerGrantType(
    TOKEN_EXCHANGE,
    async (ctx) => {
      const params = ctx.oidc.params;
      if (
        params.subject_token_type !== ACCESS_TOKEN_TYPE &&
        params.subject_token_type !== 'urn:ietf:params:oauth:token-type:id_token'
      )
        throw new errors.InvalidRequest('unsupported subject_token_type');
      let subject;
      try {
        ({ payload: subject } = await jwtVerify(String(params.subject_token), verifier, { issuer }));
      } catch {
        throw new errors.InvalidGrant('subject token invalid');
      }
      if (accounts.get(subject.sub)?.disabled) throw new errors.InvalidGrant('subject disabled');
      const audience = params.audience ?? params.resource;
      if (!audience) throw new errors.InvalidTarget('audience or resource required');
      const clientId = ctx.oidc.client.clientId;
      const token = await mint(
        { sub: subject.sub, aud: audience, client_id: clientId, act: { sub: clientId }, scope: params.scope ?? '' },
        300,
      );
      ctx.body = { access_token: token, issued_token_type: ACCESS_TOKEN_TYPE, token_type: 'Bearer', expires_in: 300 };
    },
    ['subject_token', 'subject_token_type', 'audience', 'resource', 'requested_token_type', 'scope'],
  );

  const handle = provider.callback();
  const readJson = (req) =>
    new Promise((resolve) => {
      let body = '';
      req.on('data', (chunk) => (body += chunk));
      req.on('end', () => resolve(body === '' ? {} : JSON.parse(body)));
    });
  server.on('request', async (req, res) => {
    const url = req.url ?? '';
    if (req.method === 'GET' && url === '/test/stats') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(stats));
      return;
    }
    const account = /^\/test\/accounts\/([\w.-]+)$/.exec(url);
    if (account && req.method === 'POST') {
      accounts.set(account[1], await readJson(req));
      res.writeHead(204).end();
      return;
    }
    if (url === '/test/mint' && req.method === 'POST') {
      const { sub, aud, ttl: lifetime } = await readJson(req);
      const token = await mint({ sub, aud, scope: 'openid' }, lifetime ?? 300);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ access_token: token }));
      return;
    }
    if (req.method === 'POST' && url.startsWith('/token/revocation')) stats.revocations++;
    handle(req, res);
  });
  process.stdout.write(`${JSON.stringify({ issuer })}\n`);
});

process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
process.stdin.on('close', () => process.exit(0));

import type { IdentityTokenSigner, SignIdentityTokenOptions } from '@gw/jwks';
import { IdentityForwarder, toAsciiJson } from '../../src/core/forwarder';
import type { McpServerConfig } from '../../src/core/forwarding-config';
import type { GatewayIdentity } from '../../src/core/identity';
import { IdentityTokenCache } from '../../src/core/token-cache';

const signed: { claims: Record<string, unknown>; options: SignIdentityTokenOptions }[] = [];
const signer: IdentityTokenSigner = {
  kid: 'kid-1',
  signIdentityToken(claims, options) {
    signed.push({ claims: { ...claims }, options });
    return `token-${signed.length}`;
  },
};
beforeEach(() => (signed.length = 0));

const server = (extra: Partial<McpServerConfig> = {}): McpServerConfig => ({
  slug: 'files',
  url: 'http://127.0.0.1:9/mcp',
  ...extra,
});
const forwarder = (
  extra: Partial<McpServerConfig>,
  deps: Partial<ConstructorParameters<typeof IdentityForwarder>[1]> = {},
) => new IdentityForwarder(server(extra), { signer, acceptsTokens: true, ...deps });
const apiKeyCaller = (claims: Record<string, unknown> = { sub: 'alice' }): GatewayIdentity => ({
  method: 'api_key',
  subject: 'key:0',
  claims,
});
const tokenCaller = (claims: Record<string, unknown>, token: string | undefined = 'idp.tok.en'): GatewayIdentity => ({
  method: 'identity_token',
  subject: `idp:|${String(claims.sub)}`,
  claims,
  token,
});
function thrown(fn: () => unknown): {
  code?: string;
  message: string;
  headers?: unknown;
  reason?: string;
  status?: number;
} {
  try {
    fn();
  } catch (error) {
    return error as { code?: string; message: string };
  }
  throw new Error('nothing was thrown');
}

describe('toAsciiJson', () => {
  it('escapes everything from DEL up, so the header value is printable ASCII that parses back', () => {
    const value = { a: 'é\u007f~ 😀', b: ['ü'] };
    const text = toAsciiJson(value);
    expect(text).toBe('{"a":"\\u00e9\\u007f~ \\ud83d\\ude00","b":["\\u00fc"]}');
    expect(JSON.parse(text)).toEqual(value);
    expect(toAsciiJson('\uffff')).toBe('"\\uffff"');
  });
});

describe('IdentityForwarder configuration', () => {
  it('refuses jwt_header without a signer and bearer without token validation', () => {
    expect(
      () =>
        new IdentityForwarder(server({ user_identity_forwarding: { method: 'jwt_header' } }), { acceptsTokens: true }),
    ).toThrow(
      new TypeError(
        'mcpServers[files].user_identity_forwarding.method is jwt_header, but no signing key is configured (set JWT_PRIVATE_KEY).',
      ),
    );
    expect(() => forwarder({ user_identity_forwarding: { method: 'bearer' } }, { acceptsTokens: false })).toThrow(
      new TypeError(
        'mcpServers[files].user_identity_forwarding.method is bearer, which needs auth.jwt_validation so callers have a token to forward.',
      ),
    );
    expect(
      () =>
        new IdentityForwarder(server({ user_identity_forwarding: { method: 'claims_header' } }), {
          acceptsTokens: false,
        }),
    ).not.toThrow();
    expect(forwarder({}).server.slug).toBe('files');
  });
});

describe('upstreamHeaders', () => {
  it('filters the client headers and adds none without identity forwarding', () => {
    const f = forwarder({ forward_headers: { mode: 'only', headers: ['x-trace'] } });
    expect(f.upstreamHeaders({ 'x-trace': '1', 'x-other': '2', 'x-user-claims': 'forged' }, apiKeyCaller())).toEqual({
      'x-trace': '1',
    });
    expect(() => f.identityHeaderValue(apiKeyCaller())).toThrow(
      new Error('identity forwarding is not configured for this server'),
    );
  });
  it('replaces a forged identity header with the gateway one, and blocks the other servers’ identity headers', () => {
    const f = forwarder(
      { user_identity_forwarding: { method: 'claims_header', header_name: 'X-Who' } },
      { identityHeaderNames: ['x-elsewhere'] },
    );
    expect(
      f.upstreamHeaders({ 'x-who': 'forged', 'x-elsewhere': 'forged', 'x-keep': 'k' }, apiKeyCaller({ sub: 'alice' })),
    ).toEqual({
      'x-keep': 'k',
      'x-who': '{"sub":"alice"}',
    });
  });
});

describe('claims_header', () => {
  it('sends the included claims in include_claims order, without absent or null ones, as ASCII JSON', () => {
    const f = forwarder({
      user_identity_forwarding: { method: 'claims_header', include_claims: ['email', 'sub', 'gone', 'nil', 'zero'] },
    });
    expect(f.identityHeaderValue(apiKeyCaller({ sub: 'ü', email: 'a@b', nil: null, zero: 0, extra: 'x' }))).toBe(
      '{"email":"a@b","sub":"\\u00fc","zero":0}',
    );
  });
  it('selects the claims of one identity once', () => {
    let reads = 0;
    const claims = Object.freeze({
      get sub() {
        reads++;
        return 'alice';
      },
    });
    const f = forwarder({ user_identity_forwarding: { method: 'claims_header' } });
    const caller = apiKeyCaller(claims);
    expect(f.identityHeaderValue(caller)).toBe('{"sub":"alice"}');
    expect(f.identityHeaderValue(caller)).toBe('{"sub":"alice"}');
    expect(reads).toBe(1);
  });
});

describe('bearer', () => {
  const bearer = (extra: Partial<McpServerConfig> = {}) =>
    forwarder({ user_identity_forwarding: { method: 'bearer' }, ...extra });
  it("forwards the caller's identity-provider token", () => {
    expect(bearer().identityHeaderValue(tokenCaller({ sub: 'a' }, 'x.y.z'))).toBe('Bearer x.y.z');
    expect(bearer().upstreamHeaders({ authorization: 'Bearer other' }, tokenCaller({ sub: 'a' }, 'x.y.z'))).toEqual({
      authorization: 'Bearer x.y.z',
    });
  });
  it('never forwards an API key', () => {
    for (const caller of [apiKeyCaller(), { ...tokenCaller({ sub: 'a' }), token: undefined }])
      expect(thrown(() => bearer().identityHeaderValue(caller))).toMatchObject({
        code: 'identity_token_required',
        message:
          'MCP server "files" takes the caller\'s identity-provider token; a gateway API key is never forwarded.',
        headers: { 'www-authenticate': 'Bearer error="invalid_token"' },
      });
  });
  it('checks bearer_audience against aud (a string or a list)', () => {
    const f = bearer({ bearer_audience: 'files-api' });
    expect(f.identityHeaderValue(tokenCaller({ aud: 'files-api' }, 't'))).toBe('Bearer t');
    expect(f.identityHeaderValue(tokenCaller({ aud: ['x', 'files-api'] }, 't'))).toBe('Bearer t');
    for (const aud of ['other', ['other'], undefined, { 'files-api': 1 }])
      expect(thrown(() => f.identityHeaderValue(tokenCaller({ aud }, 't')))).toMatchObject({
        code: 'token_audience_mismatch',
        message: 'The token is not meant for MCP server "files".',
      });
    expect(bearer().identityHeaderValue(tokenCaller({ aud: 'anything' }, 't'))).toBe('Bearer t');
  });
});

describe('jwt_header', () => {
  const jwt = (extra: Partial<McpServerConfig> = {}, cache = new IdentityTokenCache()) =>
    forwarder(
      { user_identity_forwarding: { method: 'jwt_header', include_claims: ['sub', 'email'] }, ...extra },
      { tokenCache: cache },
    );

  it('signs the selected claims for the server URL (or jwt_audience) with the configured lifetime', () => {
    const before = Math.floor(Date.now() / 1000);
    expect(jwt().upstreamHeaders({}, apiKeyCaller({ sub: 'a', email: 'e', other: 1 }))).toEqual({
      'x-user-jwt': 'token-1',
    });
    expect(signed[0]?.claims).toEqual({ sub: 'a', email: 'e' });
    expect(signed[0]?.options).toMatchObject({ audience: 'http://127.0.0.1:9/mcp', expiresInSeconds: 300 });
    expect(Math.abs((signed[0]?.options.issuedAt as number) - before)).toBeLessThanOrEqual(1);
    const f = forwarder({
      jwt_audience: 'files',
      user_identity_forwarding: { method: 'jwt_header', jwt_expiry_seconds: 60 },
    });
    f.identityHeaderValue(apiKeyCaller());
    expect(signed[1]?.options).toMatchObject({ audience: 'files', expiresInSeconds: 60 });
  });

  it('reuses the token of the same caller and claims; another subject or claims sign again', () => {
    const f = jwt();
    expect(f.identityHeaderValue(apiKeyCaller({ sub: 'a' }))).toBe('token-1');
    expect(f.identityHeaderValue(apiKeyCaller({ sub: 'a' }))).toBe('token-1');
    expect(f.identityHeaderValue({ ...apiKeyCaller({ sub: 'a' }), subject: 'key:1' })).toBe('token-2');
    expect(f.identityHeaderValue(apiKeyCaller({ sub: 'a', email: 'x' }))).toBe('token-3');
    expect(signed).toHaveLength(3);
  });

  it('never shares a cached token between audiences or lifetimes', () => {
    const cache = new IdentityTokenCache();
    const caller = apiKeyCaller({ sub: 'a' });
    jwt({}, cache).identityHeaderValue(caller);
    jwt({ jwt_audience: 'other' }, cache).identityHeaderValue(caller);
    jwt(
      { user_identity_forwarding: { method: 'jwt_header', include_claims: ['sub', 'email'], jwt_expiry_seconds: 60 } },
      cache,
    ).identityHeaderValue(caller);
    jwt({}, cache).identityHeaderValue(caller);
    expect(signed.map((s) => [s.options.audience, s.options.expiresInSeconds])).toEqual([
      ['http://127.0.0.1:9/mcp', 300],
      ['other', 300],
      ['http://127.0.0.1:9/mcp', 60],
    ]);
  });

  it('never outlives the identity-provider token it was minted from', () => {
    const now = Math.floor(Date.now() / 1000);
    const f = jwt();
    f.identityHeaderValue(tokenCaller({ sub: 'a', exp: now + 100 }));
    expect(signed[0]?.options.expiresInSeconds).toBeGreaterThanOrEqual(99);
    expect(signed[0]?.options.expiresInSeconds).toBeLessThanOrEqual(100);
    // a later token of the same caller with a later exp is another cache entry
    f.identityHeaderValue(tokenCaller({ sub: 'a', exp: now + 10_000 }));
    expect(signed[1]?.options.expiresInSeconds).toBe(300);
    // an API key's claims have no say over the lifetime; neither has a non-numeric exp
    f.identityHeaderValue(apiKeyCaller({ sub: 'b', exp: now + 50 }));
    expect(signed[2]?.options.expiresInSeconds).toBe(300);
    f.identityHeaderValue(tokenCaller({ sub: 'c', exp: String(now + 50) }));
    expect(signed[3]?.options.expiresInSeconds).toBe(300);
    expect(thrown(() => f.identityHeaderValue(tokenCaller({ sub: 'd', exp: now - 1 })))).toMatchObject({
      code: 'invalid_credentials',
      reason: 'token_expired',
      message: 'The identity-provider token has expired.',
      headers: { 'www-authenticate': 'Bearer error="invalid_token"' },
    });
  });
});

import { createHash } from 'node:crypto';
import { LocalKeySet, type KeyResolver } from '@gw/jwks';
import { Authenticator, type AuthenticatorOptions } from '../../src/core/authenticator';
import { rsaKey, token } from '../../../jwks/test/unit/keys';

const jwk = () => ({ ...(rsaKey('a').publicKey.export({ format: 'jwk' }) as object), kid: 'k1' });
const keys = () => new LocalKeySet([jwk()] as never);
const now = () => Math.floor(Date.now() / 1000);
const idToken = (claims: Record<string, unknown>, alg = 'RS256') =>
  token({ alg, kid: 'k1' }, { exp: now() + 300, ...claims });
const sha = (s: string) => createHash('sha256').update(s).digest('hex');

async function failure(promise: Promise<unknown>) {
  return promise.then(
    () => {
      throw new Error('resolved');
    },
    (e: unknown) =>
      e as { code: string; message: string; reason?: string; headers: Record<string, string>; status: number },
  );
}
function thrown(fn: () => unknown): Error {
  try {
    fn();
  } catch (error) {
    return error as Error;
  }
  throw new Error('nothing was thrown');
}

describe('Authenticator options', () => {
  it('refuses options that are not an object, or unknown', () => {
    expect(() => new Authenticator(null as never)).toThrow(new TypeError('authenticate options must be an object.'));
    expect(() => new Authenticator('x' as never)).toThrow(new TypeError('authenticate options must be an object.'));
    expect(() => new Authenticator({ apiKey: [] } as never)).toThrow(/^authenticate has an unknown option "apiKey"/);
    expect(() => new Authenticator({ resourceMetadataUrl: 'x' } as never)).not.toThrow();
    expect(new Authenticator().acceptsTokens).toBe(false);
  });
  it('refuses a jwtValidation that is not an object, unknown, or without keys or jwksUri', () => {
    for (const jwtValidation of [null, 'x'])
      expect(() => new Authenticator({ jwtValidation } as never)).toThrow(
        new TypeError('authenticate jwtValidation must be an object such as { jwksUri, issuer, audience }.'),
      );
    expect(() => new Authenticator({ jwtValidation: { keys: keys(), issuers: 'x' } } as never)).toThrow(
      /^authenticate jwtValidation has an unknown option "issuers"/,
    );
    expect(() => new Authenticator({ jwtValidation: {} as never })).toThrow(
      new TypeError('jwt_validation needs a jwksUri, for example "https://idp.example.com/.well-known/jwks.json".'),
    );
  });
  it('fetches the key set from jwksUri (with its timing and fetch callback), or uses the keys given', async () => {
    const withKeys = new Authenticator({ jwtValidation: { keys: keys() } });
    expect(withKeys.keySet).toBeUndefined();
    expect(withKeys.acceptsTokens).toBe(true);
    const outcomes: string[] = [];
    const fetched: string[] = [];
    const spy = jest.spyOn(globalThis, 'fetch').mockImplementation(async (url) => {
      fetched.push(String(url));
      return new Response(JSON.stringify({ keys: [jwk()] }), { status: 200 });
    });
    try {
      let clock = 0;
      const auth = new Authenticator({
        jwtValidation: {
          jwksUri: 'https://idp.example/jwks',
          onKeySetFetch: (o) => outcomes.push(o),
          keySet: { now: () => clock, cooldownMs: 1 },
        },
      });
      expect(auth.keySet).toBeDefined();
      await auth.authenticate(['authorization', `Bearer ${idToken({ sub: 'a' })}`]);
      clock = 10; // past the 1 ms cooldown: an unknown kid fetches again
      await failure(
        auth.authenticate(['authorization', `Bearer ${token({ alg: 'RS256', kid: 'k2' }, { exp: now() + 300 })}`]),
      );
      expect(fetched).toEqual(['https://idp.example/jwks', 'https://idp.example/jwks']);
      expect(outcomes).toEqual(['ok', 'ok']);
    } finally {
      spy.mockRestore();
    }
  });
});

describe('jwtValidation field checks', () => {
  const problem = (jwtValidation: object) =>
    thrown(() => new Authenticator({ jwtValidation: { keys: keys(), ...jwtValidation } as never })).message;
  const accepts = (jwtValidation: object) =>
    expect(() => new Authenticator({ jwtValidation: { keys: keys(), ...jwtValidation } as never })).not.toThrow();
  const where = 'authenticate jwtValidation';

  it('refuses a jwksUri that is not a string, and needs none when keys are given', () => {
    for (const jwksUri of [5, null, {}])
      expect(problem({ jwksUri })).toBe(
        `${where}.jwksUri must be a URL such as "https://idp.example.com/.well-known/jwks.json".`,
      );
    accepts({});
  });

  it('refuses an issuer or audience that is not a non-empty string, naming the field', () => {
    for (const field of ['issuer', 'audience'])
      for (const value of [5, '', null, ['a']]) {
        expect(problem({ [field]: value })).toBe(`${where}.${field} must be a non-empty string.`);
        accepts({ [field]: 'a' });
      }
  });

  it('refuses requiredClaims that are not a list of non-empty names', () => {
    const message = `${where}.requiredClaims must be a list of claim names such as ["email"].`;
    for (const requiredClaims of ['email', [''], [5], ['email', ''], ['', 'email'], [null], { 0: 'email' }])
      expect(problem({ requiredClaims })).toBe(message);
    accepts({ requiredClaims: [] });
    accepts({ requiredClaims: ['email', 'tenant'] });
  });

  it('refuses algorithms outside RS256, RS384, RS512', () => {
    const message = `${where}.algorithms must be a list of RS256, RS384, RS512.`;
    for (const algorithms of ['RS256', ['HS256'], ['RS256', 'HS256'], ['HS256', 'RS256'], [''], [5], ['rs256']])
      expect(problem({ algorithms })).toBe(message);
    accepts({ algorithms: ['RS256', 'RS384', 'RS512'] });
    accepts({ algorithms: ['RS512'] });
  });

  it('refuses a clock tolerance that is not a finite number of at least 0 seconds', () => {
    const message = `${where}.clockToleranceSeconds must be a number of seconds of at least 0, such as 30.`;
    for (const clockToleranceSeconds of [-1, -0.001, NaN, Infinity, -Infinity, '30', null])
      expect(problem({ clockToleranceSeconds })).toBe(message);
    accepts({ clockToleranceSeconds: 0 });
    accepts({ clockToleranceSeconds: 0.5 });
  });

  it('uses the clock tolerance given, not the 30 s default', async () => {
    const auth = new Authenticator({ jwtValidation: { keys: keys(), clockToleranceSeconds: 10 } });
    await expect(auth.authenticate(['authorization', `Bearer ${idToken({ exp: now() - 20 })}`])).rejects.toMatchObject({
      reason: 'token_expired',
    });
    await expect(auth.authenticate(['authorization', `Bearer ${idToken({ exp: now() - 5 })}`])).resolves.toBeDefined();
  });

  it('refuses keys without getKey, even beside a jwksUri', () => {
    const message = `${where}.keys must be a key resolver with getKey(kid), such as a RemoteKeySet.`;
    for (const value of [null, {}, { getKey: 'x' }, 'x', 5])
      expect(
        thrown(() => new Authenticator({ jwtValidation: { jwksUri: 'https://idp/jwks', keys: value } as never }))
          .message,
      ).toBe(message);
    accepts({ keys: { getKey: () => Promise.reject(new Error('unused')) } });
  });

  it('refuses an onKeySetFetch that is not a function', () => {
    for (const onKeySetFetch of ['x', null, {}])
      expect(problem({ onKeySetFetch })).toBe(`${where}.onKeySetFetch must be a function (outcome) => void.`);
    accepts({ onKeySetFetch: () => undefined });
  });

  it('refuses a keySet that is not an object or has an unknown option, saying what to write', () => {
    for (const keySet of [null, 'x', 5])
      expect(problem({ keySet })).toBe(`${where}.keySet must be an object such as { cacheMaxAgeMs: 600000 }.`);
    expect(problem({ keySet: { cache_max_age_ms: 1 } })).toBe(
      `${where}.keySet has an unknown option "cache_max_age_ms"; did you mean "cacheMaxAgeMs"?`,
    );
    expect(problem({ keySet: { maxAge: 1 } })).toBe(
      `${where}.keySet has an unknown option "maxAge"; the options are cacheMaxAgeMs, cooldownMs, firstRetryMs, timeoutMs, now.`,
    );
    accepts({ keySet: { cacheMaxAgeMs: 1, cooldownMs: 1, firstRetryMs: 1, timeoutMs: 1, now: () => 0 } });
    accepts({ keySet: {} });
  });

  it('names the misspelt jwtValidation or option, with the spelling to write', () => {
    expect(thrown(() => new Authenticator({ jwt_validation: {} } as never)).message).toBe(
      'authenticate has an unknown option "jwt_validation"; did you mean "jwtValidation"?',
    );
    expect(problem({ jwks_uri: 'https://idp/jwks' })).toBe(
      `${where} has an unknown option "jwks_uri"; did you mean "jwksUri"?`,
    );
  });
});

describe('API keys', () => {
  const entry = (extra: object = {}) => ({ key: 'sk-12345678', user: { user_id: 'u1' }, ...extra });
  const problem = (apiKeys: unknown[]) => thrown(() => new Authenticator({ apiKeys: apiKeys as never })).message;

  it('refuses an invalid list or entry, saying which', () => {
    expect(() => new Authenticator({ apiKeys: 'x' as never })).toThrow(
      new TypeError('apiKeys must be a list of { key | keySha256, user }.'),
    );
    expect(problem([entry(), null])).toBe('auth.apiKeys[1] must be an object with "key" or "keySha256" and "user".');
    expect(problem(['x'])).toBe('auth.apiKeys[0] must be an object with "key" or "keySha256" and "user".');
    expect(problem([entry({ name: 'x' })])).toMatch(/^auth\.apiKeys\[0\] has an unknown option "name"/);
    expect(problem([{ user: {} }])).toBe('auth.apiKeys[0] needs exactly one of "key" or "keySha256".');
    expect(problem([entry({ keySha256: sha('x') })])).toBe(
      'auth.apiKeys[0] needs exactly one of "key" or "keySha256".',
    );
    expect(problem([entry({ key: 'sk-1234' })])).toBe('auth.apiKeys[0].key must be a string of at least 8 characters.');
    expect(() => new Authenticator({ apiKeys: [entry({ key: 'sk-12345' })] })).not.toThrow();
    expect(problem([entry({ key: 12345678 })])).toBe('auth.apiKeys[0].key must be a string of at least 8 characters.');
    for (const keySha256 of [sha('x').slice(1), `${sha('x')}0`, `${sha('x').slice(1)}g`, ` ${sha('x')}`])
      expect(problem([{ keySha256, user: {} }])).toBe(
        'auth.apiKeys[0].keySha256 must be 64 hexadecimal characters (the SHA-256 of the key).',
      );
    expect(problem([entry({ user: null })])).toBe('auth.apiKeys[0].user must be an object.');
    expect(problem([entry({ user: 'u' })])).toBe('auth.apiKeys[0].user must be an object.');
    expect(problem([entry(), { keySha256: sha('sk-12345678').toUpperCase(), user: {} }])).toBe(
      'auth.apiKeys[1] repeats an API key configured before it.',
    );
  });

  it('identifies a key by its plain text or its SHA-256, as key:<id> or key:<position>', async () => {
    const auth = new Authenticator({
      apiKeys: [
        entry(),
        { keySha256: sha('sk-second-key').toUpperCase(), user: { sub: 's2', email: 'e' }, id: 'rec-2' },
        { key: 'sk-third-key', user: {} },
      ],
    });
    expect(() => new Authenticator({ apiKeys: [{ key: 'sk-third-key', user: {}, id: '' }] })).toThrow(
      new TypeError('auth.apiKeys[0].id must be a non-empty string.'),
    );
    for (const id of [5, null, {}])
      expect(() => new Authenticator({ apiKeys: [{ key: 'sk-third-key', user: {}, id } as never] })).toThrow(
        new TypeError('auth.apiKeys[0].id must be a non-empty string.'),
      );
    const first = await auth.authenticate(['x-api-key', 'sk-12345678']);
    expect(first).toEqual({ method: 'api_key', subject: 'key:0', claims: { user_id: 'u1', sub: 'u1' } });
    expect(Object.isFrozen(first)).toBe(true);
    expect(await auth.authenticate(['authorization', 'Bearer sk-second-key'])).toEqual({
      method: 'api_key',
      subject: 'key:rec-2',
      claims: { sub: 's2', email: 'e' },
    });
    expect((await auth.authenticate(['x-gateway-api-key', 'sk-third-key'])).subject).toBe('key:2');
    expect(auth.isApiKey('sk-12345678')).toBe(true);
    expect(auth.isApiKey('sk-second-key')).toBe(true);
    expect(auth.isApiKey('sk-nope-nope')).toBe(false);
  });

  it("carries a key's named config on its identity as apiKeyConfig, and nothing for a key without one", async () => {
    const auth = new Authenticator({
      apiKeys: [entry({ config: 'claude-fallback' }), { key: 'sk-no-config-1', user: { user_id: 'u2' } }],
    });
    expect(await auth.authenticate(['x-api-key', 'sk-12345678'])).toStrictEqual({
      method: 'api_key',
      subject: 'key:0',
      claims: { user_id: 'u1', sub: 'u1' },
      apiKeyConfig: 'claude-fallback',
    });
    const without = await auth.authenticate(['x-api-key', 'sk-no-config-1']);
    expect(Object.keys(without)).toEqual(['method', 'subject', 'claims']);
    for (const config of ['', 5, null, {}])
      expect(problem([entry({ config })])).toBe(
        'auth.apiKeys[0].config must be the slug of a named config, such as "claude-fallback".',
      );
  });

  it('refuses an unknown key with a challenge', async () => {
    const auth = new Authenticator({ apiKeys: [entry()] });
    expect(await failure(auth.authenticate(['x-api-key', 'sk-87654321']))).toMatchObject({
      code: 'invalid_credentials',
      reason: 'unknown_api_key',
      message: 'The API key is not valid.',
      headers: { 'www-authenticate': 'Bearer error="invalid_token"' },
    });
  });

  it('replaces the keys at once, keeping the old ones when the new list is invalid', async () => {
    const auth = new Authenticator({ apiKeys: [entry()] });
    expect(() => auth.setApiKeys([entry({ key: 'short' })])).toThrow();
    expect(auth.isApiKey('sk-12345678')).toBe(true);
    auth.setApiKeys([entry({ key: 'sk-new-new-new' })]);
    expect(auth.isApiKey('sk-12345678')).toBe(false);
    expect((await auth.authenticate(['x-api-key', 'sk-new-new-new'])).subject).toBe('key:0');
    await expect(auth.authenticate(['x-api-key', 'sk-12345678'])).rejects.toMatchObject({ reason: 'unknown_api_key' });
  });
});

describe('authenticate', () => {
  const tokens = (validation: Partial<NonNullable<AuthenticatorOptions['jwtValidation']>> = {}) =>
    new Authenticator({ jwtValidation: { keys: keys(), ...validation } });

  it('asks for credentials when none were sent, pointing at the resource metadata when tokens are accepted', async () => {
    expect(await failure(new Authenticator().authenticate([]))).toMatchObject({
      code: 'missing_credentials',
      message: 'No credentials were sent.',
      headers: { 'www-authenticate': 'Bearer' },
    });
    expect(await failure(new Authenticator().authenticate([], { resourceMetadataUrl: 'https://gw/x' }))).toMatchObject({
      headers: { 'www-authenticate': 'Bearer' },
    });
    expect(await failure(tokens().authenticate([], { resourceMetadataUrl: 'https://gw/.well-known/x' }))).toMatchObject(
      {
        headers: { 'www-authenticate': 'Bearer resource_metadata="https://gw/.well-known/x"' },
      },
    );
    expect(
      await failure(
        tokens().authenticate(['authorization', 'Basic x'], { resourceMetadataUrl: 'https://gw/"a\\b\u0001\u007f' }),
      ),
    ).toMatchObject({
      headers: { 'www-authenticate': 'Bearer error="invalid_token", resource_metadata="https://gw/\\"a\\\\b"' },
    });
  });

  it('refuses other schemes and tokens when none are accepted', async () => {
    expect(await failure(new Authenticator().authenticate(['authorization', 'Basic x']))).toMatchObject({
      code: 'invalid_credentials',
      reason: 'unsupported_scheme',
      message: 'Only Bearer authorization is accepted.',
      headers: { 'www-authenticate': 'Bearer error="invalid_token"' },
    });
    expect(
      await failure(new Authenticator().authenticate(['authorization', `Bearer ${idToken({ sub: 'a' })}`])),
    ).toMatchObject({
      code: 'invalid_credentials',
      reason: 'tokens_not_accepted',
      message: 'The credential is not valid.',
      headers: { 'www-authenticate': 'Bearer error="invalid_token"' },
    });
  });

  it('identifies a token caller by issuer and subject, or by the token digest without sub', async () => {
    const auth = tokens();
    const t = idToken({ sub: 'alice', iss: 'https://idp', azp: 'app', preferred_username: 'al' });
    const identity = await auth.authenticate(['authorization', `Bearer ${t}`]);
    expect(identity).toMatchObject({ method: 'identity_token', subject: 'idp:https://idp|alice', token: t });
    expect(identity.claims).toMatchObject({ sub: 'alice', client_id: 'app', username: 'al' });
    expect((await auth.authenticate(['authorization', `Bearer ${idToken({ sub: 'bob' })}`])).subject).toBe('idp:|bob');
    const anonymous = idToken({ scope: 'x' });
    expect((await auth.authenticate(['authorization', `Bearer ${anonymous}`])).subject).toBe(
      `idp-token:${createHash('sha256').update(anonymous).digest('base64url')}`,
    );
  });

  it('validates with the configured issuer, audience, algorithms, required claims and clock tolerance (defaults RS256, none, 30 s)', async () => {
    const bearer = (t: string) => ['authorization', `Bearer ${t}`];
    await expect(tokens().authenticate(bearer(idToken({}, 'RS384')))).rejects.toMatchObject({
      reason: 'algorithm_not_allowed',
    });
    await expect(tokens({ algorithms: ['RS384'] }).authenticate(bearer(idToken({}, 'RS384')))).resolves.toBeDefined();
    await expect(tokens({ issuer: 'a' }).authenticate(bearer(idToken({ iss: 'b' })))).rejects.toMatchObject({
      reason: 'issuer_mismatch',
    });
    await expect(tokens({ audience: 'a' }).authenticate(bearer(idToken({ aud: 'b' })))).rejects.toMatchObject({
      reason: 'audience_mismatch',
    });
    await expect(tokens().authenticate(bearer(idToken({ exp: now() - 20 })))).resolves.toBeDefined();
    await expect(tokens().authenticate(bearer(idToken({ exp: now() - 40 })))).rejects.toMatchObject({
      code: 'invalid_credentials',
      reason: 'token_expired',
      message: 'The token is not valid.',
      headers: { 'www-authenticate': 'Bearer error="invalid_token"' },
    });
    await expect(
      tokens({ clockToleranceSeconds: 0 }).authenticate(bearer(idToken({ exp: now() - 5 }))),
    ).rejects.toMatchObject({
      reason: 'token_expired',
    });
    expect(
      await failure(tokens({ requiredClaims: ['tenant'] }).authenticate(bearer(idToken({ sub: 'a' })))),
    ).toMatchObject({
      code: 'missing_required_claim',
      message: 'The token has no "tenant" claim, which is required.',
      headers: { 'www-authenticate': 'Bearer error="invalid_token"' },
    });
  });

  it('answers 503 with retry-after when the key set cannot be fetched, and passes other errors on', async () => {
    const { IdentityProviderUnavailableError } = await import('@gw/jwks');
    const down: KeyResolver = { getKey: () => Promise.reject(new IdentityProviderUnavailableError('down', 7)) };
    expect(
      await failure(
        new Authenticator({ jwtValidation: { keys: down } }).authenticate(['authorization', `Bearer ${idToken({})}`]),
      ),
    ).toMatchObject({
      code: 'identity_provider_unavailable',
      status: 503,
      message: "The identity provider's keys cannot be fetched just now; retry shortly.",
      headers: { 'retry-after': '7' },
    });
    const broken: KeyResolver = { getKey: () => Promise.reject(new RangeError('bug')) };
    await expect(
      new Authenticator({ jwtValidation: { keys: broken } }).authenticate(['authorization', `Bearer ${idToken({})}`]),
    ).rejects.toThrow(new RangeError('bug'));
  });
});

describe('Authenticator accessTokens (the gateway as OAuth authorization server)', () => {
  const ISSUER = 'https://gw.example';
  const gatewayToken = idToken({ iss: ISSUER, sub: 'u-1', aud: `${ISSUER}/mcp/a` });
  const verifier = (outcome: 'ok' | { code?: unknown } = 'ok') => {
    const calls: [string, string | undefined][] = [];
    return {
      calls,
      issuer: ISSUER,
      issuedHere: (t: string) => t === gatewayToken,
      verify: async (t: string, resource: string | undefined) => {
        calls.push([t, resource]);
        if (outcome !== 'ok') throw Object.assign(new Error('refused'), outcome);
        return { claims: { iss: ISSUER, sub: 'u-1', azp: 'client-1', preferred_username: 'ann', gid: 'g-1' } };
      },
    };
  };

  it('refuses an accessTokens that is not a verifier', () => {
    const message = new TypeError(
      "authenticate accessTokens must be the OAuth server's verifier, with issuedHere(token) and verify(token, resource).",
    );
    expect(() => new Authenticator({ accessTokens: {} as never })).toThrow(message);
    expect(() => new Authenticator({ accessTokens: null as never })).toThrow(message);
    expect(() => new Authenticator({ accessTokens: { verify: async () => ({}) } as never })).toThrow(message);
    expect(() => new Authenticator({ accessTokens: { issuedHere: () => true } as never })).toThrow(message);
  });

  it("verifies the gateway's own token for the request's resource: method oauth_token, no token kept", async () => {
    const tokens = verifier();
    const auth = new Authenticator({ accessTokens: tokens });
    const identity = await auth.authenticate(['authorization', `Bearer ${gatewayToken}`], {
      resource: `${ISSUER}/mcp/a`,
    });
    expect(tokens.calls).toEqual([[gatewayToken, `${ISSUER}/mcp/a`]]);
    expect(identity).toEqual({
      method: 'oauth_token',
      subject: 'oauth:u-1',
      claims: {
        iss: ISSUER,
        sub: 'u-1',
        azp: 'client-1',
        client_id: 'client-1',
        preferred_username: 'ann',
        username: 'ann',
        gid: 'g-1',
      },
    });
    expect(Object.isFrozen(identity.claims)).toBe(true);
  });

  it('refuses a token the verifier refuses: 401 invalid_credentials with its reason and the challenge', async () => {
    const auth = new Authenticator({ accessTokens: verifier({ code: 'wrong_resource' }) });
    const error = await failure(
      auth.authenticate(['authorization', `Bearer ${gatewayToken}`], {
        resource: `${ISSUER}/mcp/b`,
        resourceMetadataUrl: `${ISSUER}/.well-known/oauth-protected-resource/mcp/b`,
      }),
    );
    expect(error).toMatchObject({ code: 'invalid_credentials', status: 401, reason: 'wrong_resource' });
    expect(error.message).toBe('The access token is not valid here.');
    expect(error.headers['www-authenticate']).toBe(
      `Bearer error="invalid_token", resource_metadata="${ISSUER}/.well-known/oauth-protected-resource/mcp/b"`,
    );
    const unnamed = await failure(
      new Authenticator({ accessTokens: verifier({ code: 7 }) }).authenticate([
        'authorization',
        `Bearer ${gatewayToken}`,
      ]),
    );
    expect(unnamed.reason).toBe('token_invalid');
    const bare = await failure(
      new Authenticator({
        accessTokens: { issuer: ISSUER, issuedHere: () => true, verify: () => Promise.reject(null) },
      }).authenticate(['authorization', `Bearer ${gatewayToken}`]),
    );
    expect(bare).toMatchObject({ code: 'invalid_credentials', reason: 'token_invalid' });
  });

  it('names the metadata in a challenge when only its own tokens are accepted', async () => {
    const auth = new Authenticator({ accessTokens: verifier() });
    const error = await failure(auth.authenticate([], { resourceMetadataUrl: `${ISSUER}/.well-known/x` }));
    expect(error.headers['www-authenticate']).toBe(`Bearer resource_metadata="${ISSUER}/.well-known/x"`);
    const plain = await failure(
      new Authenticator().authenticate([], { resourceMetadataUrl: `${ISSUER}/.well-known/x` }),
    );
    expect(plain.headers['www-authenticate']).toBe('Bearer');
  });

  it('leaves other tokens to jwtValidation', async () => {
    const tokens = verifier();
    const auth = new Authenticator({ accessTokens: tokens, jwtValidation: { keys: keys() } });
    const identity = await auth.authenticate(['authorization', `Bearer ${idToken({ sub: 'idp-user' })}`]);
    expect(identity.method).toBe('identity_token');
    expect(tokens.calls).toEqual([]);
    const refused = await failure(
      new Authenticator({ accessTokens: tokens }).authenticate(['authorization', `Bearer ${idToken({ sub: 'x' })}`]),
    );
    expect(refused.reason).toBe('tokens_not_accepted');
  });
});

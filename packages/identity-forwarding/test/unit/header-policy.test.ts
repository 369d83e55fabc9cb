import { createHeaderPolicy, normalizeHeaderName } from '../../src/core/header-policy';
import { looksLikeJwt, readCredential } from '../../src/core/credentials';
import { IdentityTokenCache, refreshMargin } from '../../src/core/token-cache';

describe('normalizeHeaderName', () => {
  it('lower-cases and turns every _ into -', () => {
    expect(normalizeHeaderName('X_User__Claims')).toBe('x-user--claims');
  });
});

describe('createHeaderPolicy', () => {
  const policy = (extra: Partial<Parameters<typeof createHeaderPolicy>[0]> = {}) =>
    createHeaderPolicy({ identityHeaderName: undefined, mode: 'all-except', headers: [], ...extra });
  const passes = (p: ReturnType<typeof policy>, name: string, connection?: string) =>
    name in p.filter(connection === undefined ? { [name]: 'v' } : { [name]: 'v', connection });

  it('never forwards identity, origin, credential or hop-by-hop headers, in either mode', () => {
    const never = [
      'x-user-claims',
      'x-user-jwt',
      'x_user_claims',
      'x_user_jwt',
      'x-my-id',
      'x_my_id',
      'x-other-id',
      'x-second-id',
      'x-forwarded-for',
      'x_forwarded_for',
      'forwarded',
      'x-real-ip',
      'authorization',
      'x-api-key',
      'x_api_key',
      'x-gateway-api-key',
      'x-gateway-anything',
      'x_gateway_anything',
      'x-portkey-api-key',
      'x-portkey-x',
      'connection',
      'keep-alive',
      'proxy-authenticate',
      'proxy-authorization',
      'proxy-connection',
      'te',
      'trailer',
      'transfer-encoding',
      'upgrade',
      'host',
    ];
    for (const mode of ['all-except', 'only'] as const) {
      const p = policy({
        identityHeaderName: 'X_My_Id',
        otherIdentityHeaderNames: ['X-Other-Id', 'x_second_id'],
        mode,
        headers: never,
      });
      for (const name of never) expect([mode, name, passes(p, name)]).toEqual([mode, name, false]);
    }
  });

  it('forwards the protocol headers in both modes, even when listed for exclusion', () => {
    const always = ['content-type', 'accept', 'mcp-session-id', 'mcp-protocol-version', 'last-event-id'];
    for (const mode of ['all-except', 'only'] as const) {
      const p = policy({ mode, headers: always });
      for (const name of always) expect([mode, name, passes(p, name)]).toEqual([mode, name, true]);
    }
  });

  it('all-except forwards every other header but the listed ones (compared normalised)', () => {
    const p = policy({ headers: ['X_Secret', 'x-drop'] });
    expect(passes(p, 'x-secret')).toBe(false);
    expect(passes(p, 'x_secret')).toBe(false);
    expect(passes(p, 'x-drop')).toBe(false);
    expect(passes(p, 'x-keep')).toBe(true);
    expect(passes(p, 'x-gatewayish')).toBe(true);
    expect(passes(p, 'x-portkeyish')).toBe(true);
    expect(passes(p, 'x-user-claims-extra')).toBe(true);
  });

  it('only forwards just the listed headers (compared normalised)', () => {
    const p = policy({ mode: 'only', headers: ['X_Trace', 'x-span'] });
    expect(passes(p, 'x-trace')).toBe(true);
    expect(passes(p, 'x_trace')).toBe(true);
    expect(passes(p, 'x-span')).toBe(true);
    expect(passes(p, 'x-other')).toBe(false);
  });

  it('drops the headers the Connection header names (trimmed, normalised)', () => {
    const p = policy();
    expect(p.filter({ connection: ' X_Hop ,x-two', 'x-hop': '1', 'x-two': '2', 'x-three': '3' })).toEqual({
      'x-three': '3',
    });
    expect(passes(p, 'x-hop', 'close')).toBe(true);
  });

  it('copies the values it keeps unchanged, under their own names', () => {
    const p = policy();
    expect(
      p.filter({ 'x-list': ['a', 'b'], x_under: 'u', accept: 'text/event-stream', authorization: 'Bearer x' }),
    ).toEqual({
      'x-list': ['a', 'b'],
      x_under: 'u',
      accept: 'text/event-stream',
    });
  });

  it('blocks only the protected identity headers without an identity header of its own', () => {
    const p = policy({ identityHeaderName: '' });
    expect(passes(p, 'x-user-claims')).toBe(false);
    expect(passes(p, 'x-whatever')).toBe(true);
  });
});

describe('looksLikeJwt', () => {
  it('needs three base64url segments, the last possibly empty', () => {
    expect(looksLikeJwt('a.b.c')).toBe(true);
    expect(looksLikeJwt('a-_9.B.')).toBe(true);
    for (const v of ['a.b', '.b.c', 'a..c', 'a.b.c.d', 'a.b+.c', ' a.b.c', 'a.b.c '])
      expect([v, looksLikeJwt(v)]).toEqual([v, false]);
  });
});

describe('readCredential', () => {
  const jwt = 'aaa.bbb.ccc';
  it('finds nothing without credential headers', () => {
    expect(readCredential([])).toBeUndefined();
    expect(readCredential(['Accept', 'x', 'X-Other', 'y'])).toBeUndefined();
    expect(readCredential(['X-Api-Key', ' '])).toBeUndefined();
  });
  it('reads a Bearer JWT as a token and any other bearer value as an API key', () => {
    expect(readCredential(['Authorization', `Bearer ${jwt}`])).toEqual({ kind: 'token', value: jwt });
    expect(readCredential(['authorization', `  bEaReR   ${jwt}  `])).toEqual({ kind: 'token', value: jwt });
    expect(readCredential(['Authorization', 'Bearer sk-1234'])).toEqual({ kind: 'api_key', value: 'sk-1234' });
  });
  it('reads the API key headers, trimmed', () => {
    for (const name of ['x-gateway-api-key', 'X-Portkey-Api-Key', 'x-api-key'])
      expect(readCredential([name, ' sk-1 '])).toEqual({ kind: 'api_key', value: 'sk-1' });
    // a JWT-shaped value outside Authorization is an API key
    expect(readCredential(['x-api-key', jwt])).toEqual({ kind: 'api_key', value: jwt });
  });
  it('calls any other Authorization scheme unsupported', () => {
    for (const value of ['Basic dXNlcjpwYXNz', 'Bearer', 'Bearer a b', 'Bearera.b.c', ''])
      expect([value, readCredential(['Authorization', value])]).toEqual([value, { kind: 'unsupported_scheme' }]);
  });
  it('takes an API key beside an unsupported Authorization', () => {
    expect(readCredential(['Authorization', 'Basic x', 'x-api-key', 'sk-1'])).toEqual({
      kind: 'api_key',
      value: 'sk-1',
    });
  });
  it('accepts the same credential in several headers', () => {
    expect(readCredential(['x-api-key', 'sk-1', 'Authorization', 'Bearer sk-1', 'x-gateway-api-key', 'sk-1'])).toEqual({
      kind: 'api_key',
      value: 'sk-1',
    });
    expect(readCredential(['x-api-key', jwt, 'Authorization', `Bearer ${jwt}`])).toEqual({ kind: 'token', value: jwt });
  });
  it('refuses two Authorization headers, or different credentials', () => {
    const ambiguous = (raw: string[], message: string) => {
      let error: { code?: string; message?: string } = {};
      try {
        readCredential(raw);
      } catch (e) {
        error = e as typeof error;
      }
      expect(error).toMatchObject({ code: 'ambiguous_credentials', message });
    };
    ambiguous(['Authorization', 'Bearer a', 'authorization', 'Bearer a'], 'The request has two Authorization headers.');
    ambiguous(['Authorization', 'Basic a', 'Authorization', 'Basic a'], 'The request has two Authorization headers.');
    ambiguous(
      ['x-api-key', 'sk-1', 'x-gateway-api-key', 'sk-2'],
      'The request carries different credentials in several headers; send one.',
    );
    ambiguous(
      ['Authorization', 'Bearer sk-1', 'x-api-key', 'sk-2'],
      'The request carries different credentials in several headers; send one.',
    );
  });
});

describe('refreshMargin', () => {
  it('is a tenth of the lifetime, rounded down, at most 30 s', () => {
    expect([5, 9, 10, 99, 100, 300, 301, 310, 3600].map(refreshMargin)).toEqual([0, 0, 1, 9, 10, 30, 30, 30, 30]);
  });
});

describe('IdentityTokenCache', () => {
  let clock = 1_000_000_000;
  const signs: [number, number][] = [];
  const signer = (issuedAt: number, lifetime: number) => {
    signs.push([issuedAt, lifetime]);
    return `t${signs.length}`;
  };
  beforeEach(() => {
    clock = 1_000_000_000;
    signs.length = 0;
  });

  it('refuses a size that is not a positive whole number', () => {
    for (const maxSize of [0, -1, 1.5, Number.NaN])
      expect(() => new IdentityTokenCache({ maxSize })).toThrow(
        new TypeError('IdentityTokenCache maxSize must be a positive whole number, for example 10000.'),
      );
    expect(() => new IdentityTokenCache({ maxSize: 1 })).not.toThrow();
  });

  it('signs once, then serves the token until its refresh margin', () => {
    const cache = new IdentityTokenCache({ now: () => clock });
    expect(cache.getOrSign('k', 300, signer)).toBe('t1');
    expect(signs).toEqual([[1_000_000, 300]]);
    clock += 269_999;
    expect(cache.getOrSign('k', 300, signer)).toBe('t1');
    clock += 1;
    expect(cache.getOrSign('k', 300, signer)).toBe('t2');
    expect(signs[1]).toEqual([1_000_270, 300]);
    expect(cache.stats).toEqual({ hits: 1, misses: 2, size: 1 });
  });

  it('rounds the clock down to whole seconds', () => {
    clock = 1_000_000_999;
    const cache = new IdentityTokenCache({ now: () => clock });
    cache.getOrSign('k', 100, signer);
    expect(signs).toEqual([[1_000_000, 100]]);
    clock = 1_000_089_999;
    expect(cache.getOrSign('k', 100, signer)).toBe('t1');
    clock = 1_000_090_000;
    expect(cache.getOrSign('k', 100, signer)).toBe('t2');
  });

  it('cuts the lifetime at notAfter and signs nothing once it has passed', () => {
    const cache = new IdentityTokenCache({ now: () => clock });
    expect(cache.getOrSign('a', 300, signer, 1_000_100.9)).toBe('t1');
    expect(signs).toEqual([[1_000_000, 100]]);
    expect(cache.getOrSign('b', 300, signer, 1_000_500)).toBe('t2');
    expect(signs[1]).toEqual([1_000_000, 300]);
    expect(cache.getOrSign('c', 300, signer, 1_000_001)).toBe('t3');
    expect(signs[2]).toEqual([1_000_000, 1]);
    expect(cache.getOrSign('d', 300, signer, 1_000_000)).toBeUndefined();
    expect(cache.getOrSign('e', 300, signer, 999_000)).toBeUndefined();
    expect(signs).toHaveLength(3);
    expect(cache.stats).toEqual({ hits: 0, misses: 3, size: 3 });
  });

  it('re-signs a token cut at notAfter when its shorter refresh margin is reached', () => {
    const cache = new IdentityTokenCache({ now: () => clock });
    cache.getOrSign('a', 300, signer, 1_000_100); // lifetime 100, margin 10
    clock += 89_999;
    expect(cache.getOrSign('a', 300, signer, 1_000_100)).toBe('t1');
    clock += 1;
    expect(cache.getOrSign('a', 300, signer, 1_000_100)).toBe('t2');
    expect(signs[1]).toEqual([1_000_090, 10]);
  });

  it('evicts the least recently used key beyond maxSize', () => {
    const cache = new IdentityTokenCache({ maxSize: 2, now: () => clock });
    cache.getOrSign('a', 300, signer);
    cache.getOrSign('b', 300, signer);
    cache.getOrSign('a', 300, signer);
    cache.getOrSign('c', 300, signer);
    expect(cache.stats.size).toBe(2);
    expect(cache.getOrSign('a', 300, signer)).toBe('t1');
    expect(cache.getOrSign('b', 300, signer)).toBe('t4');
  });

  it('keeps 10000 tokens by default and uses the system clock', () => {
    const cache = new IdentityTokenCache();
    for (let i = 0; i <= 10_000; i++) cache.getOrSign(String(i), 300, () => 't');
    expect(cache.stats.size).toBe(10_000);
    const now = Math.floor(Date.now() / 1000);
    const seen: number[] = [];
    new IdentityTokenCache().getOrSign('x', 300, (issuedAt) => (seen.push(issuedAt), 't'));
    expect(Math.abs((seen[0] as number) - now)).toBeLessThanOrEqual(1);
  });
});

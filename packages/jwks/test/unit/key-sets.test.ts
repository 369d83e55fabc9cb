import { createPublicKey, type KeyObject } from 'node:crypto';
import { LocalKeySet, RemoteKeySet, importRsaSigningKeys, type RemoteKeySetOptions } from '../../src/core/key-sets';
import { rsaKey } from './keys';

const jwkOf = (name: string, bits = 2048) => {
  const { n, e } = rsaKey(name, bits).publicKey.export({ format: 'jwk' }) as { n: string; e: string };
  return { kty: 'RSA', n, e };
};
const A = { ...jwkOf('a'), kid: 'A' };
const B = { ...jwkOf('b'), kid: 'B' };
const same = (key: KeyObject | undefined, name: string) =>
  expect(key?.export({ format: 'jwk' })).toEqual(rsaKey(name).publicKey.export({ format: 'jwk' }));

async function rejection(promise: Promise<unknown>) {
  return promise.then(
    () => {
      throw new Error('resolved');
    },
    (e: unknown) => e as { code: string; message: string; retryAfterSeconds?: number },
  );
}

describe('importRsaSigningKeys', () => {
  it('is empty for a document without a keys list', () => {
    for (const doc of [undefined, null, 'x', {}, { keys: 'x' }, { keys: {} }])
      expect(importRsaSigningKeys(doc)).toEqual([]);
  });
  it('imports RSA signing keys of at least 2048 bits and skips everything else', () => {
    const imported = importRsaSigningKeys({
      keys: [
        null,
        'x',
        { ...A, kty: 'EC' },
        { ...A, n: 5 },
        { ...A, e: 5 },
        { ...A, n: `${A.n}=` },
        { ...A, e: 'AQ+B' },
        { ...A, n: '' },
        { ...A, use: 'enc' },
        { ...A, alg: 'HS256' },
        { ...A, alg: 'RS256x' },
        { ...A, kid: 7 },
        { ...jwkOf('small', 1024), kid: 'S' },
        { ...A, n: 'AAAA', kid: 'bad' },
        { ...A, use: 'sig', alg: 'RS384' },
        { ...B, alg: 'RS512' },
        { ...B, alg: 'RS256', kid: undefined },
      ],
    });
    expect(imported.map((k) => k.kid)).toEqual(['A', 'B', undefined]);
    same(imported[0]?.key, 'a');
    same(imported[1]?.key, 'b');
  });
  it('keeps a key without kid, and skips holes in the list', () => {
    const imported = importRsaSigningKeys({ keys: [undefined, null, 7, { ...B, kid: undefined }] });
    expect(imported).toHaveLength(1);
    expect(imported[0]?.kid).toBeUndefined();
    same(imported[0]?.key, 'b');
  });
  it('keeps a key whose use is sig and skips one whose use is anything else', () => {
    expect(importRsaSigningKeys({ keys: [{ ...A, use: 'sig' }] }).map((k) => k.kid)).toStrictEqual(['A']);
    for (const use of ['enc', 'SIG', '', null])
      expect(importRsaSigningKeys({ keys: [{ ...A, use }] })).toStrictEqual([]);
  });
});

describe('LocalKeySet', () => {
  it('finds a key by kid, from a key set or a list', async () => {
    same(await new LocalKeySet({ keys: [A, B] } as never).getKey('B'), 'b');
    same(await new LocalKeySet([A, B] as never).getKey('A'), 'a');
  });
  it('takes the only key for a token without kid, and no key when there are several', async () => {
    same(await new LocalKeySet([A] as never).getKey(undefined), 'a');
    const error = await rejection(new LocalKeySet([A, B] as never).getKey(undefined));
    expect(error).toMatchObject({ code: 'unknown_key', message: 'No published key matches the token.' });
    await expect(new LocalKeySet([] as never).getKey(undefined)).rejects.toMatchObject({ code: 'unknown_key' });
    await expect(new LocalKeySet([A] as never).getKey('B')).rejects.toMatchObject({ code: 'unknown_key' });
  });
});

describe('RemoteKeySet options', () => {
  it('needs an absolute http(s) jwksUri', () => {
    expect(() => new RemoteKeySet({ jwksUri: 'idp/jwks' })).toThrow(
      new TypeError(
        'jwksUri must be an absolute http(s) URL, for example "https://idp.example.com/.well-known/jwks.json".',
      ),
    );
    expect(() => new RemoteKeySet({ jwksUri: 'ftp://idp/jwks' })).toThrow(
      new TypeError('jwksUri must use http or https, not "ftp:".'),
    );
    expect(() => new RemoteKeySet({ jwksUri: 'http://idp/jwks' })).not.toThrow();
    expect(() => new RemoteKeySet({ jwksUri: 'https://idp/jwks' })).not.toThrow();
  });
  it.each(['cacheMaxAgeMs', 'cooldownMs', 'firstRetryMs', 'timeoutMs', 'maxResponseBytes'])(
    'refuses a %s that is not positive',
    (name) => {
      for (const value of [0, -1, Number.NaN, Number.POSITIVE_INFINITY])
        expect(() => new RemoteKeySet({ jwksUri: 'https://idp/jwks', [name]: value })).toThrow(
          new TypeError(`${name} must be a positive number of milliseconds.`),
        );
      expect(() => new RemoteKeySet({ jwksUri: 'https://idp/jwks', [name]: 0.5 })).not.toThrow();
    },
  );
});

describe('RemoteKeySet option checks', () => {
  const uri = 'https://idp/jwks';
  it('needs an options object', () => {
    for (const options of [undefined, null, 'https://idp/jwks', 7])
      expect(() => new RemoteKeySet(options as never)).toThrow(
        new TypeError('RemoteKeySet needs { jwksUri: "https://idp.example.com/.well-known/jwks.json" }.'),
      );
  });
  it('refuses an unknown option, naming the spelling to write or the options', () => {
    expect(() => new RemoteKeySet({ jwks_uri: uri } as never)).toThrow(
      new TypeError('RemoteKeySet has an unknown option "jwks_uri"; did you mean "jwksUri"?'),
    );
    expect(() => new RemoteKeySet({ jwksUri: uri, CooldownMs: 5 } as never)).toThrow(
      new TypeError('RemoteKeySet has an unknown option "CooldownMs"; did you mean "cooldownMs"?'),
    );
    expect(() => new RemoteKeySet({ jwksUri: uri, retries: 3 } as never)).toThrow(
      new TypeError(
        'RemoteKeySet has an unknown option "retries"; the options are jwksUri, cacheMaxAgeMs, cooldownMs, firstRetryMs, timeoutMs, maxResponseBytes, now, onFetch.',
      ),
    );
  });
  it.each(['now', 'onFetch'])('needs %s to be a function when given', (name) => {
    for (const value of [0, 'Date.now', {}, null])
      expect(() => new RemoteKeySet({ jwksUri: uri, [name]: value } as never)).toThrow(
        new TypeError(`RemoteKeySet ${name} must be a function.`),
      );
    expect(() => new RemoteKeySet({ jwksUri: uri, [name]: undefined })).not.toThrow();
    expect(() => new RemoteKeySet({ jwksUri: uri, [name]: () => 1 })).not.toThrow();
  });
});

describe('RemoteKeySet fetching', () => {
  let clock = 0;
  let answers: (() => Response | Promise<Response>)[] = [];
  let calls: { url: string; init: RequestInit }[] = [];
  const outcomes: string[] = [];
  const ok =
    (doc: unknown, headers: Record<string, string> = {}) =>
    () =>
      new Response(JSON.stringify(doc), { status: 200, headers });
  const fail = () => () => Promise.reject(new Error('down'));
  const set = (options: Partial<RemoteKeySetOptions> = {}) =>
    new RemoteKeySet({
      jwksUri: 'https://idp.example/jwks',
      now: () => clock,
      onFetch: (o) => outcomes.push(o),
      ...options,
    });

  beforeEach(() => {
    clock = 1_000_000;
    answers = [];
    calls = [];
    outcomes.length = 0;
    jest.spyOn(globalThis, 'fetch').mockImplementation(async (url, init) => {
      calls.push({ url: String(url), init: init as RequestInit });
      const next = answers.shift();
      if (!next) throw new Error('unexpected fetch');
      return next();
    });
  });
  afterEach(() => jest.restoreAllMocks());

  it('fetches once with a timeout, no redirects and accept: application/json, then serves from the cache', async () => {
    answers.push(ok({ keys: [A, B] }));
    const keys = set();
    expect(keys.fetchCount).toBe(0);
    same(await keys.getKey('A'), 'a');
    same(await keys.getKey('B'), 'b');
    expect(keys.fetchCount).toBe(1);
    expect(calls).toHaveLength(1);
    expect(calls[0]?.url).toBe('https://idp.example/jwks');
    expect(calls[0]?.init.redirect).toBe('error');
    expect(calls[0]?.init.headers).toEqual({ accept: 'application/json' });
    expect(calls[0]?.init.signal).toBeInstanceOf(AbortSignal);
    expect(outcomes).toEqual(['ok']);
  });

  it('aborts a fetch after timeoutMs', async () => {
    jest.restoreAllMocks();
    let signal: AbortSignal | undefined;
    jest.spyOn(globalThis, 'fetch').mockImplementation(
      (_url, init) =>
        new Promise((_resolve, reject) => {
          signal = init?.signal ?? undefined;
          signal?.addEventListener('abort', () => reject(signal?.reason));
        }),
    );
    const started = Date.now();
    await expect(set({ timeoutMs: 30 }).getKey('A')).rejects.toMatchObject({ code: 'identity_provider_unavailable' });
    expect(signal?.aborted).toBe(true);
    expect(Date.now() - started).toBeLessThan(4000);
  });

  it('fetches again once the cache is stale, but not within the cooldown', async () => {
    answers.push(ok({ keys: [A] }), ok({ keys: [B] }));
    const keys = set({ cacheMaxAgeMs: 1000, cooldownMs: 5000 });
    same(await keys.getKey('A'), 'a');
    clock += 999;
    same(await keys.getKey('A'), 'a');
    expect(keys.fetchCount).toBe(1);
    clock += 1; // stale, but in the cooldown: the old keys serve
    same(await keys.getKey('A'), 'a');
    expect(keys.fetchCount).toBe(1);
    clock += 4000; // cooldown over
    const error = await rejection(keys.getKey('A'));
    expect(keys.fetchCount).toBe(2);
    expect(error).toMatchObject({
      code: 'unknown_key',
      message: "No key of the identity provider matches the token's kid.",
    });
    same(await keys.getKey('B'), 'b');
  });

  it('fetches for an unknown kid at most once per cooldown', async () => {
    answers.push(ok({ keys: [A] }), ok({ keys: [A, B] }));
    const keys = set({ cooldownMs: 100 });
    await keys.getKey('A');
    await expect(keys.getKey('B')).rejects.toMatchObject({ code: 'unknown_key' });
    clock += 99;
    await expect(keys.getKey('B')).rejects.toMatchObject({ code: 'unknown_key' });
    expect(keys.fetchCount).toBe(1);
    clock += 1;
    same(await keys.getKey('B'), 'b');
    expect(keys.fetchCount).toBe(2);
  });

  it('shares one fetch between concurrent callers', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    answers.push(async () => {
      await gate;
      return ok({ keys: [A, B] })();
    });
    const keys = set();
    const both = Promise.all([keys.getKey('A'), keys.getKey('B')]);
    release();
    const [a, b] = await both;
    same(a, 'a');
    same(b, 'b');
    expect(keys.fetchCount).toBe(1);
  });

  it('backs off from firstRetryMs, doubling up to the cooldown, and says when it tries again', async () => {
    answers.push(fail(), fail(), fail(), fail());
    const keys = set({ firstRetryMs: 1000, cooldownMs: 3500 });
    const first = await rejection(keys.getKey('A'));
    expect(first).toMatchObject({
      code: 'identity_provider_unavailable',
      message: "The identity provider's key set cannot be fetched just now; try again shortly.",
      retryAfterSeconds: 1,
    });
    clock += 999;
    expect(await rejection(keys.getKey('A'))).toMatchObject({ retryAfterSeconds: 1 });
    expect(keys.fetchCount).toBe(1);
    clock += 1;
    expect(await rejection(keys.getKey('A'))).toMatchObject({ retryAfterSeconds: 2 }); // second failure: 2 s
    clock += 1999;
    await rejection(keys.getKey('A'));
    expect(keys.fetchCount).toBe(2);
    clock += 1;
    expect(await rejection(keys.getKey('A'))).toMatchObject({ retryAfterSeconds: 4 }); // third: min(4000, 3500)
    clock += 1500;
    expect(await rejection(keys.getKey('A'))).toMatchObject({ retryAfterSeconds: 2 }); // 2000 ms left
    clock += 1999;
    expect(await rejection(keys.getKey('A'))).toMatchObject({ retryAfterSeconds: 1 }); // 1 ms left
    clock += 1;
    await rejection(keys.getKey('A'));
    expect(keys.fetchCount).toBe(4);
    expect(outcomes).toEqual(['error', 'error', 'error', 'error']);
  });

  it('keeps verifying with the last good keys while fetches fail, and resets the back-off on success', async () => {
    answers.push(ok({ keys: [A] }), fail(), fail(), ok({ keys: [A, B] }), fail());
    const keys = set({ cacheMaxAgeMs: 10, cooldownMs: 10_000, firstRetryMs: 100 });
    await keys.getKey('A');
    clock += 10_000;
    same(await keys.getKey('A'), 'a'); // stale, the fetch fails, the known key still serves
    expect(keys.fetchCount).toBe(2);
    expect(await rejection(keys.getKey('B'))).toMatchObject({
      code: 'identity_provider_unavailable',
      retryAfterSeconds: 1,
    });
    clock += 100;
    await rejection(keys.getKey('B')); // third fetch fails: the next try is 200 ms away
    expect(keys.fetchCount).toBe(3);
    clock += 200;
    same(await keys.getKey('B'), 'b');
    clock += 10_000;
    await keys.getKey('A');
    expect(await rejection(keys.getKey('C'))).toMatchObject({ code: 'identity_provider_unavailable' });
    expect(keys.fetchCount).toBe(5);
    // after the success the back-off starts again at firstRetryMs
    clock += 100;
    answers.push(ok({ keys: [A] }));
    await expect(keys.getKey('C')).rejects.toMatchObject({ code: 'unknown_key' });
    expect(keys.fetchCount).toBe(6);
    expect(outcomes).toEqual(['ok', 'error', 'error', 'ok', 'error', 'ok']);
  });

  it.each([
    ['a non-200 status', () => new Response(JSON.stringify({ keys: [A] }), { status: 201 })],
    ['no body', () => new Response(null, { status: 200 })],
    ['not JSON', () => new Response('{', { status: 200 })],
    ['no usable key', ok({ keys: [{ ...A, kty: 'oct' }] })],
    ['a declared length above the limit', ok({ keys: [A] }, { 'content-length': '100000' })],
  ])('treats %s as a failed fetch', async (_what, answer) => {
    answers.push(answer);
    const keys = set({ maxResponseBytes: 2000 });
    await expect(keys.getKey('A')).rejects.toMatchObject({ code: 'identity_provider_unavailable' });
    expect(outcomes).toEqual(['error']);
  });

  it('accepts a body of exactly maxResponseBytes and refuses one byte more, however it is sent', async () => {
    const body = JSON.stringify({ keys: [A] });
    const chunked = (text: string) =>
      new Response(
        new ReadableStream({
          start(controller) {
            const bytes = new TextEncoder().encode(text);
            controller.enqueue(bytes.subarray(0, 100));
            controller.enqueue(bytes.subarray(100));
            controller.close();
          },
        }),
        { status: 200 },
      );
    answers.push(() => chunked(body));
    same(await set({ maxResponseBytes: body.length }).getKey('A'), 'a');
    answers.push(() => chunked(`${body} `));
    await expect(set({ maxResponseBytes: body.length }).getKey('A')).rejects.toMatchObject({
      code: 'identity_provider_unavailable',
    });
    answers.push(ok({ keys: [A] }, { 'content-length': String(body.length) }));
    same(await set({ maxResponseBytes: body.length }).getKey('A'), 'a');
  });

  it('serves a fresh cache after the cooldown, and fetches again at exactly cacheMaxAgeMs', async () => {
    answers.push(ok({ keys: [A] }), ok({ keys: [B] }));
    const keys = set({ cooldownMs: 1_000, cacheMaxAgeMs: 10_000 });
    same(await keys.getKey('A'), 'a');
    clock += 9_999;
    same(await keys.getKey('A'), 'a');
    expect(keys.fetchCount).toBe(1);
    clock += 1;
    await expect(keys.getKey('A')).rejects.toMatchObject({ code: 'unknown_key' });
    expect(keys.fetchCount).toBe(2);
    same(await keys.getKey('B'), 'b');
  });

  it('works without onFetch, after a good fetch and after a failed one', async () => {
    answers.push(ok({ keys: [A] }));
    const keys = new RemoteKeySet({ jwksUri: 'https://idp.example/jwks', now: () => clock });
    await expect(keys.getKey('Z')).rejects.toMatchObject({
      code: 'unknown_key',
      message: "No key of the identity provider matches the token's kid.",
    });
    answers.push(fail());
    const down = new RemoteKeySet({ jwksUri: 'https://idp.example/jwks', now: () => clock });
    await expect(down.getKey('A')).rejects.toMatchObject({
      code: 'identity_provider_unavailable',
      retryAfterSeconds: 1,
    });
  });

  it('uses the system clock by default', async () => {
    answers.push(ok({ keys: [A] }));
    const keys = new RemoteKeySet({ jwksUri: 'https://idp.example/jwks' });
    same(await keys.getKey('A'), 'a');
    same(await keys.getKey('A'), 'a');
    expect(keys.fetchCount).toBe(1);
    expect(createPublicKey).toBeDefined();
  });
});

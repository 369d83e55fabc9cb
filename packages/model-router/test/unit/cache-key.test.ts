import { createHash } from 'node:crypto';
import { cacheKey, callerScope, canonicalJson, keyedBody, type CacheKeyMaterial } from '../../src/core/cache/cache-key';
import { RawJsonString } from '../../src/core/raw-json-string';

const sha = (text: string) => createHash('sha256').update(text).digest('hex');

describe('canonicalJson', () => {
  it('sorts keys, drops undefined, functions and symbols, and writes no white space', () => {
    expect(
      canonicalJson({
        b: 1,
        a: [1, 'x', null, undefined, () => 1],
        c: { z: undefined, y: true, f: () => 1, s: Symbol('s') },
        d: undefined,
      }),
    ).toBe('{"a":[1,"x",null,null,null],"b":1,"c":{"y":true}}');
    expect(canonicalJson({ é: 1, Z: 2, a: 3, '10': 4, '9': 5 })).toBe('{"10":4,"9":5,"Z":2,"a":3,"é":1}');
    expect(canonicalJson([])).toBe('[]');
    expect(canonicalJson({})).toBe('{}');
    expect(canonicalJson({ a: undefined, b: 1 })).toBe('{"b":1}');
    expect(canonicalJson(undefined)).toBe('null');
    expect(canonicalJson('a"b')).toBe('"a\\"b"');
    expect(canonicalJson([[1, 2], [3]])).toBe('[[1,2],[3]]');
  });
  it('walks 512 levels and refuses deeper values', () => {
    const nest = (depth: number) => {
      let value: unknown = 1;
      for (let i = 0; i < depth; i++) value = [value];
      return value;
    };
    expect(canonicalJson(nest(512))).toBe(`${'['.repeat(512)}1${']'.repeat(512)}`);
    expect(() => canonicalJson(nest(513))).toThrow(new RangeError('The value is nested too deeply for the cache key.'));
    const nestObjects = (depth: number) => {
      let value: unknown = 1;
      for (let i = 0; i < depth; i++) value = { a: value };
      return value;
    };
    expect(canonicalJson(nestObjects(512))).toBe(`${'{"a":'.repeat(512)}1${'}'.repeat(512)}`);
    expect(() => canonicalJson(nestObjects(513))).toThrow(RangeError);
  });
  it('writes a raw string as the string it is', () => {
    const raw = new RawJsonString(Buffer.from('JVBERi0x+/='));
    expect(canonicalJson({ b: [raw], a: raw })).toBe('{"a":"JVBERi0x+/=","b":["JVBERi0x+/="]}');
    expect(canonicalJson(raw)).toBe('"JVBERi0x+/="');
  });
  it('keeps the whole text of a large value', () => {
    const list = Array.from({ length: 40_000 }, () => 'ab');
    expect(canonicalJson(list)).toBe(`[${list.map(() => '"ab"').join(',')}]`);
  });
});

describe('keyedBody', () => {
  it('leaves out stream, stream_options and model, and keeps everything else', () => {
    expect(keyedBody({ model: 'm', stream: true, stream_options: {}, messages: [], x: 1 })).toEqual({
      messages: [],
      x: 1,
    });
    expect(keyedBody('text')).toBe('text');
    expect(keyedBody(null)).toBeNull();
    const list = [1];
    expect(keyedBody(list)).toBe(list);
  });
});

describe('cacheKey', () => {
  const material = (extra: Partial<CacheKeyMaterial> = {}): CacheKeyMaterial => ({
    route: 'chat.completions',
    provider: 'p',
    model: 'm',
    body: { model: '@p/m', messages: [{ role: 'user', content: 'hi' }], stream: true },
    headers: { version: '2023-06-01' },
    scope: { kind: 'user', id: 'u1' },
    ...extra,
  });
  it('is the SHA-256 of the canonical material', () => {
    expect(cacheKey(material())).toBe(
      sha(
        '{"body":{"messages":[{"content":"hi","role":"user"}]},"headers":{"beta":null,"version":"2023-06-01"},"model":"m","provider":"p","route":"chat.completions","scope":{"id":"u1","kind":"user"},"v":1}',
      ),
    );
    expect(cacheKey(material({ headers: { beta: 'b1', version: 'v' }, scope: { kind: 'shared' }, body: 'x' }))).toBe(
      sha(
        '{"body":"x","headers":{"beta":"b1","version":"v"},"model":"m","provider":"p","route":"chat.completions","scope":"shared","v":1}',
      ),
    );
    expect(cacheKey(material({ scope: { kind: 'token', iss: 'i', sub: 's' } }))).toBe(
      sha(
        '{"body":{"messages":[{"content":"hi","role":"user"}]},"headers":{"beta":null,"version":"2023-06-01"},"model":"m","provider":"p","route":"chat.completions","scope":{"iss":"i","kind":"token","sub":"s"},"v":1}',
      ),
    );
  });
  it('differs with each part', () => {
    const keys = new Set([
      cacheKey(material()),
      cacheKey(material({ route: 'messages' })),
      cacheKey(material({ provider: 'q' })),
      cacheKey(material({ model: 'n' })),
      cacheKey(material({ headers: { version: 'x' } })),
      cacheKey(material({ scope: { kind: 'key', id: 'u1' } })),
      cacheKey(material({ scope: { kind: 'caller', id: 'u1' } })),
      cacheKey(material({ body: { messages: [] } })),
    ]);
    expect(keys.size).toBe(8);
    expect(
      cacheKey(material({ body: { messages: [{ role: 'user', content: 'hi' }], model: 'other', stream: false } })),
    ).toBe(cacheKey(material()));
  });
});

describe('cacheKey, hashed as it is written', () => {
  const canonical = (body: string) =>
    `{"body":${body},"headers":{"beta":null,"version":"v"},"model":"m","provider":"p","route":"r","scope":"shared","v":1}`;
  const material = (body: unknown): CacheKeyMaterial => ({
    route: 'r',
    provider: 'p',
    model: 'm',
    body,
    headers: { version: 'v' },
    scope: { kind: 'shared' },
  });
  /** The parts the hash is given while `cacheKey` runs. */
  const hashed = (run: () => string) => {
    const update = jest.spyOn(Object.getPrototypeOf(createHash('sha256')) as { update: () => unknown }, 'update');
    try {
      const key = run();
      return { key, parts: update.mock.calls.map((call: unknown[]) => call[0]) };
    } finally {
      update.mockRestore();
    }
  };

  it('hashes the bytes of a raw string as they are, between the text before and after it', () => {
    const raw = new RawJsonString(Buffer.from('JVBERi0x'));
    const { key, parts } = hashed(() => cacheKey(material({ data: raw, model: 'x' })));
    const text = canonical('{"data":"JVBERi0x"}');
    expect(parts).toEqual(['{"body":{"data":"', raw.bytes, text.slice('{"body":{"data":"JVBERi0x'.length)]);
    expect(parts[1]).toBe(raw.bytes);
    expect(key).toBe(sha(text));
    expect(key).toBe(cacheKey(material({ data: 'JVBERi0x' })));
  });

  it('hands the text to the hash 64 KiB at a time, whole tokens each', () => {
    // '{"body":[' then '"a"' and ',' tokens: the text reaches 65536 characters exactly at the 16382nd string
    const list = Array.from({ length: 20_000 }, () => 'a');
    const text = canonical(`[${list.map(() => '"a"').join(',')}]`);
    const { key, parts } = hashed(() => cacheKey(material(list)));
    expect(parts.map((part) => (part as string).length)).toEqual([65536, text.length - 65536]);
    expect(parts.join('')).toBe(text);
    expect(key).toBe(sha(text));
  });

  it('hashes a text of exactly 64 KiB in one part', () => {
    const text = canonical(`{"messages":"${'x'.repeat(65536 - canonical('{"messages":""}').length)}"}`);
    expect(text).toHaveLength(65536);
    const body = JSON.parse(text).body as unknown;
    const { key, parts } = hashed(() => cacheKey(material(body)));
    expect(parts).toEqual([text]);
    expect(key).toBe(sha(text));
  });
});

describe('callerScope', () => {
  it("scopes an API key to its user's user_id, else sub, else the key", () => {
    expect(callerScope({ method: 'api_key', subject: 'key:1', claims: { user_id: 'u', sub: 's' } })).toEqual({
      kind: 'user',
      id: 'u',
    });
    expect(callerScope({ method: 'api_key', subject: 'key:1', claims: { user_id: '', sub: 's' } })).toEqual({
      kind: 'user',
      id: 's',
    });
    expect(callerScope({ method: 'api_key', subject: 'key:1', claims: { user_id: 5 } })).toEqual({
      kind: 'key',
      id: 'key:1',
    });
    expect(callerScope({ method: 'api_key', subject: 'key:1' })).toEqual({ kind: 'key', id: 'key:1' });
    expect(callerScope({ method: 'api_key', claims: {} }, 'host-id')).toEqual({ kind: 'caller', id: 'host-id' });
  });
  it('scopes a token to iss and sub, else to its subject', () => {
    expect(callerScope({ method: 'identity_token', subject: 'idp:x', claims: { iss: 'i', sub: 's' } })).toEqual({
      kind: 'token',
      iss: 'i',
      sub: 's',
    });
    expect(callerScope({ method: 'identity_token', subject: 'idp:x', claims: { iss: 5, sub: 's' } })).toEqual({
      kind: 'token',
      iss: '',
      sub: 's',
    });
    expect(callerScope({ method: 'identity_token', subject: 'idp:x', claims: { sub: '' } })).toEqual({
      kind: 'caller',
      id: 'idp:x',
    });
    expect(callerScope({ method: 'identity_token', claims: {} })).toBeUndefined();
    expect(callerScope({ method: 'identity_token', subject: 'idp:y' })).toEqual({ kind: 'caller', id: 'idp:y' });
  });
  it('scopes any other caller by its subject, else the fallback id, else not at all', () => {
    expect(callerScope({ method: 'other', subject: 's' })).toEqual({ kind: 'caller', id: 's' });
    expect(callerScope({ method: 'other', subject: 's', claims: { iss: 'i', sub: 'x', user_id: 'u' } })).toEqual({
      kind: 'caller',
      id: 's',
    });
    // only an object is an identity
    expect(callerScope(Object.assign(() => 1, { method: 'api_key', subject: 's' }) as never, 'f')).toEqual({
      kind: 'caller',
      id: 'f',
    });
    expect(callerScope({ subject: '' }, 'f')).toEqual({ kind: 'caller', id: 'f' });
    expect(callerScope(undefined, 'f')).toEqual({ kind: 'caller', id: 'f' });
    expect(callerScope('x' as never, 'f')).toEqual({ kind: 'caller', id: 'f' });
    expect(callerScope(undefined, '')).toBeUndefined();
    expect(callerScope(undefined)).toBeUndefined();
  });
});

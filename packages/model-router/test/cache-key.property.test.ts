import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { cacheKey, callerScope, canonicalJson, type CacheKeyMaterial, type CacheScope } from '../src';

/** The fields the key leaves out, written here again so the oracle does not reuse the module's list. */
const NOT_KEYED = new Set(['stream', 'stream_options', 'model']);

const small = fc.constantFrom('a', 'b', 'a|b', 'b|c', '', 'c');

/** A caller as `@gw/identity-forwarding` describes it, from a small pool so two often coincide. */
const identity = fc.oneof(
  fc.record({
    method: fc.constant('api_key'),
    subject: fc.constantFrom('key:1', 'key:2'),
    claims: fc.record({ user_id: small }, { requiredKeys: [] }),
  }),
  fc.record({
    method: fc.constant('identity_token'),
    subject: fc.constantFrom('idp:x', 'idp:y'),
    claims: fc.record({ iss: small, sub: small }, { requiredKeys: [] }),
  }),
);

const body = fc.record(
  {
    model: fc.constantFrom('@p/m', 'm', 'other'),
    messages: fc.array(fc.record({ role: fc.constantFrom('user', 'assistant'), content: fc.string() }), {
      maxLength: 3,
    }),
    temperature: fc.constantFrom(0, 0.5, 1),
    max_tokens: fc.constantFrom(16, 64),
    user: small,
    stream: fc.boolean(),
    stream_options: fc.constant({ include_usage: true }),
    extra: fc.jsonValue({ maxDepth: 3 }),
  },
  { requiredKeys: ['messages'] },
);

const BODY_FIELDS = [
  'model',
  'messages',
  'temperature',
  'max_tokens',
  'user',
  'stream',
  'stream_options',
  'extra',
  'n',
];

const request = fc.record({
  route: fc.constantFrom('chat.completions', 'messages'),
  provider: fc.constantFrom('p', 'q'),
  model: fc.constantFrom('m', 'n'),
  body,
  headers: fc.record({ beta: fc.option(fc.constantFrom('x', 'y'), { nil: undefined }), version: fc.constant('v') }),
  identity,
});

type Request = typeof request extends fc.Arbitrary<infer T> ? T : never;

/** The same request with its body keys in another order (and `stream` possibly changed). */
function reordered(r: Request, stream: boolean): Request {
  const entries = Object.entries({ ...r.body, stream }).reverse();
  return { ...r, body: Object.fromEntries(entries) as Request['body'] };
}

function material(r: Request, shared: boolean): CacheKeyMaterial | undefined {
  const scope: CacheScope | undefined = shared ? { kind: 'shared' } : callerScope(r.identity);
  if (!scope) return undefined;
  return { route: r.route, provider: r.provider, model: r.model, body: r.body, headers: r.headers, scope };
}

/** What must be equal for two requests to share an entry, computed without the module. */
function oracle(r: Request, shared: boolean): unknown {
  const kept = Object.fromEntries(Object.entries(r.body).filter(([k]) => !NOT_KEYED.has(k)));
  let who: unknown = 'shared';
  if (!shared) {
    const claims = r.identity.claims as Record<string, string | undefined>;
    if (r.identity.method === 'api_key') who = claims.user_id ? ['user', claims.user_id] : ['key', r.identity.subject];
    else who = claims.sub ? ['token', claims.iss ?? '', claims.sub] : ['caller', r.identity.subject];
  }
  return JSON.parse(
    JSON.stringify({
      r: r.route,
      p: r.provider,
      m: r.model,
      h: [r.headers.beta ?? null, r.headers.version],
      who,
      kept,
    }),
  );
}

describe('the cache key', () => {
  it('is equal exactly when the key material and the scopes are equal (or the provider shares)', () => {
    fc.assert(
      fc.property(
        request,
        fc.oneof(
          request,
          fc.record({ stream: fc.boolean() }),
          fc.record({ field: fc.constantFrom(...BODY_FIELDS), value: fc.jsonValue({ maxDepth: 2 }) }),
          fc.record({ caller: identity }),
        ),
        fc.boolean(),
        (a, other, shared) => {
          // The second request: another one, or the first with its keys reordered, one body field
          // changed, or another caller.
          let b: Request;
          if ('route' in other) b = other;
          else if ('stream' in other) b = reordered(a, other.stream);
          else if ('field' in other) b = { ...a, body: { ...a.body, [other.field]: other.value } as Request['body'] };
          else b = { ...a, identity: other.caller };
          const ma = material(a, shared);
          const mb = material(b, shared);
          if (!ma || !mb) return;
          const same = isDeepStrictEqual(oracle(a, shared), oracle(b, shared));
          expect(cacheKey(ma) === cacheKey(mb)).toBe(same);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('keeps one caller apart from every other, even when the provider of another request shares', () => {
    fc.assert(
      fc.property(request, identity, (r, other) => {
        const mine = material(r, false);
        const theirs = material({ ...r, identity: other }, false);
        const everyone = material(r, true);
        if (!mine || !theirs || !everyone) return;
        expect(cacheKey(mine) === cacheKey(theirs)).toBe(
          isDeepStrictEqual(oracle(r, false), oracle({ ...r, identity: other }, false)),
        );
        expect(cacheKey(mine)).not.toBe(cacheKey(everyone));
      }),
      { numRuns: 1000 },
    );
  });

  it('tells an issuer and subject apart however they split around "|"', () => {
    const key = (iss: string, sub: string) =>
      cacheKey({
        route: 'chat.completions',
        provider: 'p',
        model: 'm',
        body: {},
        headers: { version: 'v' },
        scope: { kind: 'token', iss, sub },
      });
    expect(key('a|b', 'c')).not.toBe(key('a', 'b|c'));
  });

  it('writes canonical JSON: sorted keys, no whitespace, undefined members left out', () => {
    expect(canonicalJson({ b: 1, a: [{ d: undefined, c: 'x' }, null], e: { g: true, f: 1.5 } })).toBe(
      '{"a":[{"c":"x"},null],"b":1,"e":{"f":1.5,"g":true}}',
    );
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(JSON.parse(canonicalJson(value))).toEqual(JSON.parse(JSON.stringify(value)));
      }),
    );
  });

  it('has no scope for an unknown caller, and falls back to the host id of one', () => {
    expect(callerScope(undefined)).toBeUndefined();
    expect(callerScope(undefined, 'host-7')).toEqual({ kind: 'caller', id: 'host-7' });
    expect(callerScope({ method: 'api_key', subject: 'key:9', claims: {} })).toEqual({ kind: 'key', id: 'key:9' });
  });
});

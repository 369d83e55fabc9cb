import fc from 'fast-check';
import { createHeaderPolicy, normalizeHeaderName, toAsciiJson } from '../src';

const protectedNames = ['x-user-claims', 'x-user-jwt', 'x-identity'];

/** Arbitrary spellings of a header name: any letter case, any mix of `-` and `_`. */
function spelling(name: string) {
  return fc
    .array(fc.boolean(), { minLength: name.length * 2, maxLength: name.length * 2 })
    .map((flips) =>
      [...name]
        .map((c, i) => (c === '-' ? (flips[i] ? '_' : '-') : flips[i + name.length] ? c.toUpperCase() : c))
        .join(''),
    );
}

describe('header policy (property)', () => {
  it('never lets a spelling of a protected or credential header through, in any mode', () => {
    const blockedName = fc.oneof(
      ...[
        ...protectedNames,
        'x-gateway-api-key',
        'x-portkey-api-key',
        'x-api-key',
        'authorization',
        'x-gateway-config',
      ].map(spelling),
    );
    fc.assert(
      fc.property(
        blockedName,
        fc.constantFrom<'all-except' | 'only'>('all-except', 'only'),
        fc.array(fc.constantFrom('x-user-claims', 'X_User_JWT', 'authorization', 'cookie'), { maxLength: 3 }),
        (name, mode, headers) => {
          const policy = createHeaderPolicy({ identityHeaderName: 'X-Identity', mode, headers });
          // Node lower-cases incoming header names but keeps underscores.
          const out = policy.filter({ [name.toLowerCase()]: 'spoofed', accept: 'application/json' });
          expect(Object.keys(out).map(normalizeHeaderName)).toEqual(['accept']);
        },
      ),
    );
  });

  it('always forwards the MCP protocol headers, even in only mode with an empty list', () => {
    const policy = createHeaderPolicy({ identityHeaderName: 'x-user-jwt', mode: 'only', headers: [] });
    const out = policy.filter({
      'content-type': 'application/json',
      accept: 'text/event-stream',
      'mcp-session-id': 's',
      'mcp-protocol-version': '2025-06-18',
      'last-event-id': '7',
      cookie: 'c=1',
    });
    expect(Object.keys(out).sort()).toEqual([
      'accept',
      'content-type',
      'last-event-id',
      'mcp-protocol-version',
      'mcp-session-id',
    ]);
  });

  it('writes claims as printable ASCII that JSON.parse turns back into the same value', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string(), fc.oneof(fc.string({ unit: 'binary' }), fc.integer(), fc.array(fc.string()))),
        (claims) => {
          const header = toAsciiJson(claims);
          expect(header).toMatch(/^[\x20-\x7e]*$/);
          expect(JSON.parse(header)).toEqual(JSON.parse(JSON.stringify(claims)));
        },
      ),
    );
    expect(JSON.parse(toAsciiJson({ name: 'José 🚀' }))).toEqual({ name: 'José 🚀' });
  });
});

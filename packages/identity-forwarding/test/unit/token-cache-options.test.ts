import { IdentityTokenCache, type IdentityTokenCacheOptions } from '../../src/core/token-cache';

const make = (options: unknown) => () => new IdentityTokenCache(options as IdentityTokenCacheOptions);

describe('IdentityTokenCache options', () => {
  it('takes no options, an empty object, and every option', () => {
    expect(make(undefined)).not.toThrow();
    expect(make({})).not.toThrow();
    expect(make({ maxSize: 1, now: () => 0 })).not.toThrow();
  });

  it('refuses options that are not an object, saying what to write', () => {
    for (const options of [null, 10_000, 'big'])
      expect(make(options)).toThrow(
        new TypeError('IdentityTokenCache options must be an object such as { maxSize: 10000 }.'),
      );
  });

  it('refuses a misspelt option, naming it as written and the spelling to write', () => {
    expect(make({ max_size: 5 })).toThrow(
      new TypeError('IdentityTokenCache has an unknown option "max_size"; did you mean "maxSize"?'),
    );
    expect(make({ Now: () => 0 })).toThrow(
      new TypeError('IdentityTokenCache has an unknown option "Now"; did you mean "now"?'),
    );
    expect(make({ ttl: 5 })).toThrow(
      new TypeError('IdentityTokenCache has an unknown option "ttl"; the options are maxSize, now.'),
    );
  });

  it('refuses a maxSize of the wrong type', () => {
    for (const maxSize of ['100', true, null, Infinity])
      expect(make({ maxSize })).toThrow(
        new TypeError('IdentityTokenCache maxSize must be a positive whole number, for example 10000.'),
      );
  });

  it('refuses a now that is not a function, and uses the one given', () => {
    for (const now of [0, 'now', null])
      expect(make({ now })).toThrow(
        new TypeError('IdentityTokenCache now must be a function () => milliseconds since the epoch.'),
      );
    let clock = 5_000_000;
    const cache = new IdentityTokenCache({ now: () => clock });
    const issued: number[] = [];
    cache.getOrSign('k', 300, (issuedAt) => (issued.push(issuedAt), 't'));
    expect(issued).toEqual([5_000]);
    clock += 1000;
    expect(cache.getOrSign('k', 300, () => 'other')).toBe('t');
  });
});

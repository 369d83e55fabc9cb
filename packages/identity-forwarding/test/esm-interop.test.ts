import QuickLRU from 'quick-lru';
import { decodeProtectedHeader } from 'jose';

describe('ESM-only dependencies', () => {
  it('loads quick-lru and jose under jest', () => {
    const lru = new QuickLRU<string, number>({ maxSize: 1 });
    lru.set('a', 1);
    lru.set('b', 2);
    expect(lru.has('a')).toBe(false);
    expect(decodeProtectedHeader('eyJhbGciOiJSUzI1NiJ9.e30.sig').alg).toBe('RS256');
  });
});

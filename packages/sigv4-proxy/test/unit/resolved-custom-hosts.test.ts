import { MAX_RESOLVED_CUSTOM_HOSTS, ResolvedCustomHosts, resolveCustomHost } from '../../src/core/custom-host';
import { resolveIntegration } from '../../src/core/integration';

const kb = resolveIntegration({
  slug: 'kb',
  accessKeyId: 'AKIATESTGATEWAY0001',
  secretAccessKey: 'test/secret+key/for/the/gateway/0123456789',
  region: 'eu-west-1',
  allowedHosts: ['http://127.0.0.1:9100'],
} as never);

describe('ResolvedCustomHosts', () => {
  it('resolves a text as resolveCustomHost does, once', () => {
    const hosts = new ResolvedCustomHosts(kb);
    const first = hosts.resolve('bedrock-agent-runtime.us-east-1.amazonaws.com');
    expect(first).toEqual(resolveCustomHost('bedrock-agent-runtime.us-east-1.amazonaws.com', kb));
    expect(hosts.resolve('bedrock-agent-runtime.us-east-1.amazonaws.com')).toBe(first);
    expect(hosts.resolve('http://127.0.0.1:9100').region).toBe('eu-west-1');
    expect(hosts.size).toBe(2);
  });

  it('refuses a text every time and never keeps it', () => {
    const hosts = new ResolvedCustomHosts(kb);
    for (let i = 0; i < 3; i++) expect(() => hosts.resolve('evil.example.com')).toThrow(/not allowed/);
    expect(hosts.size).toBe(0);
  });

  it('keeps at most its bound of the client’s texts (32 by default)', () => {
    expect(MAX_RESOLVED_CUSTOM_HOSTS).toBe(32);
    const hosts = new ResolvedCustomHosts(kb);
    // Distinct texts of one allowed host (trailing spaces are trimmed away).
    for (let i = 0; i < 100; i++) {
      expect(hosts.resolve(`http://127.0.0.1:9100${' '.repeat(i)}`).origin.origin).toBe('http://127.0.0.1:9100');
      expect(hosts.size).toBeLessThanOrEqual(MAX_RESOLVED_CUSTOM_HOSTS);
    }
  });
});

import { identityForwarding } from '@gw/mcp-gateway';
import { Authenticator } from '../src';

// What a host hands the package is checked or escaped: the metadata URL of a 401 challenge is a
// quoted-string whatever the host's function returns, and trusted proxies must be IP addresses.

describe('the 401 challenge of a host-supplied metadata URL', () => {
  const authenticator = new Authenticator({
    jwtValidation: { keys: { getKey: () => Promise.reject(new Error('no keys')) } },
  });

  it('is an RFC 9110 quoted-string: quotes and backslashes escaped, control characters dropped', async () => {
    const refused = await authenticator
      .authenticate([], { resourceMetadataUrl: 'https://gw.example/m"eta\\data\r\n, scope="admin"' })
      .catch((error: { headers: Record<string, string> }) => error);
    expect((refused as { headers: Record<string, string> }).headers['www-authenticate']).toBe(
      'Bearer resource_metadata="https://gw.example/m\\"eta\\\\data, scope=\\"admin\\""',
    );
  });
});

describe('trustedProxies', () => {
  it.each([[['not-an-ip']], [['10.0.0.0/8']], [[42]], ['10.0.0.5']])('refuses %j at the factory', (list) => {
    expect(() => identityForwarding({ mcpServers: [], trustedProxies: list as unknown as string[] })).toThrow(
      /trustedProxies must be a list of IP addresses/,
    );
  });

  it('accepts IPv4, IPv6 and IPv4-mapped addresses', () => {
    expect(() =>
      identityForwarding({ mcpServers: [], trustedProxies: ['10.0.0.5', '::1', '::ffff:10.0.0.6'] }),
    ).not.toThrow();
  });
});

import fc from 'fast-check';
import { createHeaderPolicy, normalizeHeaderName } from '../../src/core/header-policy';
import { IdentityForwarder } from '../../src/core/forwarder';

/** The request headers of MCP 2026-07-28 (routing) beside those of the older revisions. */
const routingHeaders = {
  'mcp-protocol-version': '2026-07-28',
  'mcp-method': 'tools/call',
  'mcp-name': 'get_weather',
  'mcp-param-region': 'eu-west',
  'mcp-param-tenant-id': 't-42',
};

describe('MCP protocol headers of every revision', () => {
  it.each([
    ['all-except', [] as string[]],
    ['all-except', ['mcp-method', 'mcp-name', 'mcp-param-region', 'MCP_Param_Tenant_Id', 'cookie']],
    ['only', [] as string[]],
    ['only', ['cookie']],
  ] as const)('forwards mcp-method, mcp-name and every mcp-param-* in %s mode with %j', (mode, headers) => {
    const policy = createHeaderPolicy({ identityHeaderName: 'x-user-claims', mode, headers });
    const out = policy.filter({ ...routingHeaders, cookie: 'c=1', 'x-custom': '1' });
    for (const [name, value] of Object.entries(routingHeaders)) expect(out[name]).toBe(value);
  });

  it('forwards a header that only starts like mcp-param- exactly as it came, and not mcp-params or mcp-paramx', () => {
    const policy = createHeaderPolicy({ identityHeaderName: undefined, mode: 'only', headers: [] });
    const out = policy.filter({ 'mcp-param-': 'empty', 'mcp-params': 'x', 'mcp-paramx': 'y', 'mcp-param-a': 'b' });
    expect(Object.keys(out).sort()).toEqual(['mcp-param-', 'mcp-param-a']);
  });

  it('still drops a routing header the client names in Connection, and an identity header named mcp-param-*', () => {
    const hop = createHeaderPolicy({ identityHeaderName: undefined, mode: 'all-except', headers: [] });
    expect(hop.filter({ 'mcp-name': 'x', 'mcp-param-a': 'b', connection: 'mcp-name, mcp-param-a' })).toEqual({});
    const identity = createHeaderPolicy({ identityHeaderName: 'Mcp-Param-User', mode: 'all-except', headers: [] });
    expect(identity.filter({ 'mcp-param-user': 'spoofed', mcp_param_user: 'spoofed' })).toEqual({});
  });

  it('passes any mcp-param-* name in only mode (property), and never a credential spelled as one', () => {
    const policy = createHeaderPolicy({ identityHeaderName: 'x-user-jwt', mode: 'only', headers: [] });
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z0-9-]{1,30}$/), fc.string({ maxLength: 40 }), (suffix, value) => {
        const name = `mcp-param-${suffix}`;
        const out = policy.filter({ [name]: value, authorization: 'Bearer gw-key', 'x-api-key': 'k' });
        expect(Object.keys(out).map(normalizeHeaderName)).toEqual([name]);
        expect(out[name]).toBe(value);
      }),
    );
  });

  it('reaches the MCP server beside the identity header, which wins', () => {
    const forwarder = new IdentityForwarder(
      {
        slug: 'tools',
        url: 'http://127.0.0.1:9/mcp',
        user_identity_forwarding: { method: 'claims_header', include_claims: ['sub'] },
        forward_headers: { mode: 'only', headers: [] },
      },
      { acceptsTokens: false },
    );
    const headers = forwarder.upstreamHeaders(
      { ...routingHeaders, 'x-user-claims': '{"sub":"admin"}' },
      { method: 'api_key', subject: 'u1', claims: { sub: 'u1' } },
    );
    expect(headers).toEqual({ ...routingHeaders, 'x-user-claims': '{"sub":"u1"}' });
  });
});

import {
  ROUTING_FIELDS,
  SECRET_FIELDS,
  SECRET_HOLDERS,
  SecretsRequiredForRoutingChangeError,
  checkSecretsGivenForRoutingChange,
  recordSchemas,
  secretHolderOf,
  secretsMissingForRoutingChange,
} from '../src';

describe('SECRET_HOLDERS, where each record shape with a secret sends it', () => {
  it('declares routing fields for every shape, each secret a field of its schema', () => {
    for (const holder of SECRET_HOLDERS) {
      expect([holder.kind, holder.provider, holder.routing.length > 0]).toEqual([holder.kind, holder.provider, true]);
      if (holder.kind !== 'providers') continue;
      const schema = holder.provider === 'anthropic' ? recordSchemas.anthropicProvider : recordSchemas.bedrockProvider;
      for (const field of [...holder.secrets, ...holder.routing]) expect(Object.keys(schema.shape)).toContain(field);
      // A provider's routing fields are also bound to its sealed secrets at rest.
      for (const field of holder.routing) expect(ROUTING_FIELDS).toContain(field);
    }
  });

  it('is what the provider secret fields are read from', () => {
    expect(SECRET_FIELDS.get('anthropic')).toEqual(['apiKey']);
    expect(SECRET_FIELDS.get('bedrock')).toEqual(['accessKeyId', 'secretAccessKey', 'sessionToken']);
    expect(secretHolderOf('settings', {})?.secrets).toEqual(['clientSecret']);
    expect(secretHolderOf('mcp-servers', { url: 'http://x' })).toMatchObject({
      secrets: ['upstream_auth.client.client_secret'],
      secretMaps: ['upstream_auth.headers'],
    });
    expect(secretHolderOf('providers', { provider: 'other' })).toBeUndefined();
  });
});

describe('secretsMissingForRoutingChange', () => {
  const stored = { provider: 'bedrock', region: 'us-east-1', allowedHosts: ['http://a', 'http://b'] };
  const held = ['accessKeyId', 'secretAccessKey'];

  it('sees no change in a value sent again, in any key order', () => {
    expect(secretsMissingForRoutingChange('providers', stored, { ...stored }, held, [])).toBeUndefined();
    const settings = { value: { login: { type: 'oidc', issuer: 'https://a' }, x: 1 } };
    const reordered = { value: { x: 1, login: { issuer: 'https://a', type: 'oidc' } } };
    expect(secretsMissingForRoutingChange('settings', settings, reordered, ['clientSecret'], [])).toBeUndefined();
  });

  it('names the routing field moved and the first held secret not given', () => {
    const next = { ...stored, allowedHosts: ['http://b', 'http://a'] };
    expect(secretsMissingForRoutingChange('providers', stored, next, held, [])).toEqual({
      routingField: 'allowedHosts',
      secretField: 'accessKeyId',
    });
    expect(secretsMissingForRoutingChange('providers', stored, next, held, ['accessKeyId'])).toEqual({
      routingField: 'allowedHosts',
      secretField: 'secretAccessKey',
    });
    expect(secretsMissingForRoutingChange('providers', stored, next, held, held)).toBeUndefined();
    const removed = { provider: 'bedrock', region: 'us-east-1' };
    expect(secretsMissingForRoutingChange('providers', stored, removed, held, [])?.routingField).toBe('allowedHosts');
    const issuer = { value: { login: { issuer: 'https://b' } } };
    expect(
      secretsMissingForRoutingChange(
        'settings',
        { value: { login: { issuer: 'https://a' } } },
        issuer,
        ['clientSecret'],
        [],
      ),
    ).toEqual({ routingField: 'value.login.issuer', secretField: 'clientSecret' });
  });

  it('asks nothing of a record without secrets or a kind that holds none', () => {
    expect(
      secretsMissingForRoutingChange('providers', stored, { ...stored, region: 'eu-west-1' }, [], []),
    ).toBeUndefined();
    expect(
      secretsMissingForRoutingChange('mcp-servers', { url: 'http://a' }, { url: 'http://b' }, [], []),
    ).toBeUndefined();
    // An MCP server holding upstream_auth secrets: a moved url asks for each, map entries by name.
    const held = ['upstream_auth.headers.X-B', 'upstream_auth.headers.X-A', 'upstream_auth.client.client_secret'];
    expect(secretsMissingForRoutingChange('mcp-servers', { url: 'http://a' }, { url: 'http://b' }, held, [])).toEqual({
      routingField: 'url',
      secretField: 'upstream_auth.client.client_secret',
    });
    expect(
      secretsMissingForRoutingChange('mcp-servers', { url: 'http://a' }, { url: 'http://b' }, held, [
        'upstream_auth.client.client_secret',
      ]),
    ).toEqual({ routingField: 'url', secretField: 'upstream_auth.headers.X-A' });
  });

  it('is thrown as 400 invalid_request naming the secret as the caller spells it', () => {
    const call = () =>
      checkSecretsGivenForRoutingChange(
        'settings',
        { value: { login: { issuer: 'https://a' } } },
        { value: { login: { issuer: 'https://b' } } },
        ['clientSecret'],
        [],
        (field) => (field === 'clientSecret' ? 'login.clientSecret' : field.replace(/^value\./, '')),
      );
    expect(call).toThrow(SecretsRequiredForRoutingChangeError);
    expect(call).toThrow(
      expect.objectContaining({
        code: 'invalid_request',
        status: 400,
        param: 'login.clientSecret',
        message:
          'Changing login.issuer sends the stored secrets to a new place: give login.clientSecret again in the same change.',
      }),
    );
  });
});

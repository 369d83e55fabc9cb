import { authenticate, identityForwarding } from '@gw/identity-forwarding';
import { modelRouter } from '@gw/model-router';
import { sigv4Proxy } from '@gw/sigv4-proxy';

const anthropic = { slug: 'claude', provider: 'anthropic' as const, apiKey: 'sk-ant-options-test' };
const aws = { slug: 'kb', accessKeyId: 'AKIA0000', secretAccessKey: 'secret', region: 'us-east-1' };

/**
 * Every factory refuses a misspelt or mistyped option when it is called, naming the option as the
 * caller wrote it (and the one to write when it is another spelling of it).
 */
describe('factories refuse what they do not understand', () => {
  it.each<[string, () => unknown, RegExp]>([
    [
      'authenticate apikeys',
      () => authenticate({ apikeys: [] } as never),
      /unknown option "apikeys"; did you mean "apiKeys"/,
    ],
    [
      'authenticate jwt_validation',
      () => authenticate({ jwt_validation: {} } as never),
      /unknown option "jwt_validation"; did you mean "jwtValidation"/,
    ],
    [
      'authenticate jwtValidation.jwks_uri',
      () => authenticate({ jwtValidation: { jwks_uri: 'https://idp/jwks' } } as never),
      /jwtValidation has an unknown option "jwks_uri"; did you mean "jwksUri"/,
    ],
    [
      'authenticate jwtValidation not an object',
      () => authenticate({ jwtValidation: 'x' } as never),
      /jwtValidation must be an object/,
    ],
    [
      'authenticate apiKeys[0].sha256',
      () => authenticate({ apiKeys: [{ sha256: 'x', user: {} }] } as never),
      /auth\.apiKeys\[0\] has an unknown option "sha256"/,
    ],
    [
      'identityForwarding mcp_servers',
      () => identityForwarding({ mcpServers: [], trusted_proxies: [] } as never),
      /unknown option "trusted_proxies"; did you mean "trustedProxies"/,
    ],
    [
      'modelRouter baseURL',
      () => modelRouter({ baseURL: 'http://x' } as never),
      /modelRouter has an unknown option "baseURL"/,
    ],
    [
      'modelRouter providers[].base_url',
      () => modelRouter({ providers: [{ ...anthropic, base_url: 'http://x' }] } as never),
      /providers\[claude\] has an unknown option "base_url"; did you mean "baseUrl"/,
    ],
    [
      'modelRouter provider openai',
      () => modelRouter({ providers: [{ ...anthropic, provider: 'openai' }] } as never),
      /providers\[claude\]\.provider must be "anthropic"/,
    ],
    [
      'modelRouter models mode some',
      () => modelRouter({ providers: [{ ...anthropic, models: { mode: 'some' } }] } as never),
      /providers\[claude\]\.models must be \{ mode: "all" \}/,
    ],
    [
      'modelRouter slug @a',
      () => modelRouter({ providers: [{ ...anthropic, slug: '@a' }] }),
      /providers\[@a\]\.slug must be/,
    ],
    [
      'modelRouter baseUrl not a url',
      () => modelRouter({ providers: [{ ...anthropic, baseUrl: 'not a url' }] }),
      /providers\[claude\]\.baseUrl must be an http\(s\) URL/,
    ],
    [
      'modelRouter models.models not a list',
      () => modelRouter({ providers: [{ ...anthropic, models: { mode: 'custom', models: 'claude' } }] } as never),
      /models\.models must be a list/,
    ],
    [
      'sigv4Proxy allowed_hosts',
      () => sigv4Proxy({ integrations: [{ ...aws, allowed_hosts: [] }] } as never),
      /providers\[kb\] has an unknown option "allowed_hosts"; did you mean "allowedHosts"/,
    ],
    [
      'sigv4Proxy timeout',
      () => sigv4Proxy({ integrations: [], timeout: 5 } as never),
      /sigv4Proxy has an unknown option "timeout"/,
    ],
  ])('%s', (_name, call, message) => {
    expect(call).toThrow(message);
  });

  it('accepts every option spelled as documented', () => {
    expect(() =>
      modelRouter({
        providers: [
          {
            ...anthropic,
            baseUrl: 'https://api.anthropic.com',
            models: { mode: 'custom', models: ['m'], autoEnableNew: true },
          },
        ],
        timeoutMs: 1000,
      }),
    ).not.toThrow();
    expect(() =>
      sigv4Proxy({ integrations: [{ ...aws, allowedHosts: ['http://127.0.0.1:9'] }], timeoutMs: 1000 }),
    ).not.toThrow();
    expect(() =>
      authenticate({
        apiKeys: [{ key: 'gw-options-key', user: { user_id: 'u' } }],
        jwtValidation: { jwksUri: 'https://idp/jwks' },
      }),
    ).not.toThrow();
  });
});

import { sign } from 'node:crypto';
import { LocalKeySet, SigningKey, UnknownKeyError, buildJwks, type KeyResolver } from '@gw/jwks';
import type { GatewayConfig } from '../config/schema';

/** The demo API key of the embedded default. It is public: never use it outside development. */
export const DEMO_API_KEY = 'gw-demo-key-not-a-secret';
/** Issuer of the embedded demo identity provider's tokens. */
export const DEMO_ISSUER = 'https://demo-idp.gateway.local/';

/** The embedded development default: what runs when `GATEWAY_CONFIG` is unset. */
export interface EmbeddedDefault {
  config: GatewayConfig;
  /** Keys of the embedded demo identity provider (used instead of fetching a jwksUri). */
  demoIdentityProviderKeys: KeyResolver;
  /** Mints a demo identity-provider token (one hour), for trying the `bearer` method. */
  mintDemoToken: (claims?: Record<string, unknown>) => string;
}

/**
 * A demo API key, a demo identity provider, and the demo MCP server under one slug per
 * forwarding method; `ANTHROPIC_API_KEY` adds an `@anthropic` provider.
 */
export function embeddedDefault(demoMcpUrl: string, env: NodeJS.ProcessEnv): EmbeddedDefault {
  // The demo identity provider's key is made when its first token is minted: until then no token
  // can carry its signature, and a gateway that never mints one (every gateway but `pnpm demo`)
  // does not spend an RSA key generation (hundreds of ms of CPU) on each start.
  let demoKeys: { key: SigningKey; keySet: LocalKeySet } | undefined;
  const demoKeysNow = (): { key: SigningKey; keySet: LocalKeySet } => {
    if (demoKeys === undefined) {
      const key = SigningKey.generate();
      demoKeys = { key, keySet: new LocalKeySet(buildJwks(key, [])) };
    }
    return demoKeys;
  };
  const config: GatewayConfig = {
    auth: {
      apiKeys: [
        {
          key: DEMO_API_KEY,
          user: { user_id: 'demo-user', email: 'demo@example.com', username: 'demo', workspace_id: 'demo-workspace' },
        },
      ],
      jwt_validation: { jwksUri: 'http://127.0.0.1/embedded-demo-idp', issuer: DEMO_ISSUER, audience: 'gateway' },
    },
    providers: env.ANTHROPIC_API_KEY
      ? [{ slug: 'anthropic', name: 'Anthropic', provider: 'anthropic', apiKey: env.ANTHROPIC_API_KEY }]
      : [],
    mcpServers: [
      { slug: 'demo-claims', url: demoMcpUrl, user_identity_forwarding: { method: 'claims_header' } },
      { slug: 'demo-jwt', url: demoMcpUrl, user_identity_forwarding: { method: 'jwt_header' } },
      { slug: 'demo-bearer', url: demoMcpUrl, user_identity_forwarding: { method: 'bearer' } },
    ],
    // MCP clients sign in at the gateway with the demo API key (CONTRACT section 11).
    oauth: { login: { type: 'api_key' } },
  };
  return {
    config,
    demoIdentityProviderKeys: {
      getKey: (kid) =>
        demoKeys === undefined
          ? Promise.reject(new UnknownKeyError('No published key matches the token.'))
          : demoKeys.keySet.getKey(kid),
    },
    mintDemoToken: (claims = {}) => {
      const idpKey = demoKeysNow().key;
      const iat = Math.floor(Date.now() / 1000);
      const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
      const payload = {
        sub: 'demo-idp-user',
        email: 'idp-user@example.com',
        ...claims,
        iss: DEMO_ISSUER,
        aud: 'gateway',
        iat,
        exp: iat + 3600,
      };
      const input = `${encode({ alg: 'RS256', typ: 'JWT', kid: idpKey.kid })}.${encode(payload)}`;
      return `${input}.${sign('sha256', Buffer.from(input), idpKey.privateKey).toString('base64url')}`;
    },
  };
}

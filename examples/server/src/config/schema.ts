import { recordSchemas } from '@gw/catalog';
import type * as RoutingConfigCheck from '../catalog/routing-config-check';
import { z } from 'zod';
import type * as McpGateway from '@gw/mcp-gateway';
import type { VirtualServerConfig } from '@gw/mcp-gateway';

const { httpUrl, anthropicProvider, mcpServer, prompt, policy, limit, namedConfig, slug } = recordSchemas;
const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === '' ? undefined : v));
const user = recordSchemas.apiKeyUser;

const apiKey = z
  .strictObject({
    key: z.string().min(8, 'must be at least 8 characters').optional(),
    keySha256: z
      .string()
      .regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hexadecimal characters')
      .optional(),
    user,
    // The slug of a named config of the file's `configs` (CONTRACT section 17): the key's calls use it.
    config: slug.optional(),
  })
  .refine((k) => (k.key === undefined) !== (k.keySha256 === undefined), 'needs exactly one of "key" or "keySha256"');

const jwtValidation = z.strictObject({
  jwksUri: httpUrl,
  requiredClaims: z.array(z.string().min(1)).optional(),
  issuer: z.string().min(1).optional(),
  audience: z.string().min(1).optional(),
  algorithms: z
    .array(z.enum(['RS256', 'RS384', 'RS512']))
    .min(1)
    .optional(),
  clockToleranceSeconds: z.number().int().min(0).max(600).optional(),
});

// The gateway as OAuth authorization server (CONTRACT section 11). `PUBLIC_BASE_URL` is required
// with it (checked at start-up, where the environment is known).
const oauthLogin = z.discriminatedUnion(
  'type',
  [
    z.strictObject({ type: z.literal('api_key') }),
    z.strictObject({
      type: z.literal('oidc'),
      issuer: z.url({
        protocol: /^https?$/,
        error: 'must be the OpenID Provider\'s issuer URL, such as "https://login.example.com"',
      }),
      clientId: z.string().min(1, 'must be the client id the OpenID Provider gave the gateway'),
      clientSecret: z.string().min(1, 'must be the client secret, such as "${OIDC_CLIENT_SECRET}"'),
      scopes: z.array(z.string().min(1)).min(1).optional(),
    }),
  ],
  { error: 'must be {"type":"api_key"} or {"type":"oidc","issuer":…,"clientId":…,"clientSecret":…}' },
);
const oauth = z.strictObject({
  login: oauthLogin,
  accessTokenTtlSeconds: z
    .number()
    .int()
    .min(60, 'must be a whole number of seconds from 60 to 86400, such as 3600')
    .max(86_400, 'must be a whole number of seconds from 60 to 86400, such as 3600')
    .optional(),
  refreshTokenTtlSeconds: z
    .number()
    .int()
    .min(300, 'must be a whole number of seconds from 300 to 31536000, such as 2592000')
    .max(31_536_000, 'must be a whole number of seconds from 300 to 31536000, such as 2592000')
    .optional(),
  allowedClientHosts: z
    .array(z.string().regex(/^https?:\/\/[^/?#]+$/, 'must be an origin such as "http://127.0.0.1:9300"'))
    .optional(),
});

// Providers, MCP servers and prompts have the catalog's shapes, so a record moves between the
// config file and the admin API unchanged. In the file, an empty session token (`${AWS_SESSION_TOKEN:-}`)
// means none.
const bedrockProvider = recordSchemas.bedrockProvider.extend({ sessionToken: optionalString });

function unique<T>(items: T[], key: (item: T) => string, what: string, ctx: z.RefinementCtx, path: string): void {
  const seen = new Set<string>();
  items.forEach((item, index) => {
    const value = key(item);
    if (seen.has(value))
      ctx.addIssue({ code: 'custom', path: [path, index], message: `repeats the ${what} "${value}"` });
    seen.add(value);
  });
}

/** The gateway's JSON config file. */
export const gatewayConfigSchema = z
  .strictObject({
    auth: z
      .strictObject({
        apiKeys: z.array(apiKey).optional(),
        jwt_validation: jwtValidation.optional(),
        groups_claim: z.string().min(1).max(200).optional(),
      })
      .optional(),
    access: z.strictObject({ mode: z.enum(['open', 'report', 'policies']).optional() }).optional(),
    // Roles of named admins (console sign-in at oauth.login's OpenID Provider, identity-provider
    // tokens on the admin API): the claim, and which of its values make each role.
    adminRoles: z
      .strictObject({
        claim: z.string().min(1).max(128),
        admin: z.array(z.string().min(1).max(256)).max(100).optional(),
        operator: z.array(z.string().min(1).max(256)).max(100).optional(),
        viewer: z.array(z.string().min(1).max(256)).max(100).optional(),
      })
      .refine(
        (roles) => (roles.admin?.length ?? 0) + (roles.operator?.length ?? 0) + (roles.viewer?.length ?? 0) > 0,
        'must name at least one claim value, such as {"claim": "groups", "admin": ["gateway-admins"]}',
      )
      .optional(),
    policies: z.array(policy).optional(),
    limits: z.array(limit).optional(),
    providers: z.array(z.discriminatedUnion('provider', [anthropicProvider, bedrockProvider])).optional(),
    mcpServers: z.array(mcpServer).optional(),
    // Virtual MCP servers (CONTRACT section 16): checked by the MCP gateway's own validator below.
    virtualServers: z
      .array(
        z.custom<VirtualServerConfig>(
          (value) => typeof value === 'object' && value !== null && !Array.isArray(value),
          'must be an object such as {"slug": "workbench", "members": [{"server": "tracker"}]}',
        ),
      )
      .optional(),
    prompts: z.array(prompt).optional(),
    // Named routing configs (CONTRACT section 17): `x-gateway-config: <slug>` and API keys' `config`.
    configs: z.array(namedConfig).optional(),
    oauth: oauth.optional(),
  })
  .superRefine((config, ctx) => {
    unique(config.providers ?? [], (p) => p.slug, 'provider slug', ctx, 'providers');
    unique(config.mcpServers ?? [], (s) => s.slug, 'MCP server slug', ctx, 'mcpServers');
    // Servers and virtual servers share one namespace of slugs; members name servers of the file.
    const serverSlugs = new Set((config.mcpServers ?? []).map((s) => s.slug));
    const virtualSlugs = new Set<string>();
    (config.virtualServers ?? []).forEach((entry, index) => {
      try {
        // @gw/mcp-gateway loads with a config that has virtual servers only: main.ts checks the
        // config file before the gateway's modules load.
        // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded only when used
        const { resolveVirtualServer } = require('@gw/mcp-gateway') as typeof McpGateway;
        const resolved = resolveVirtualServer(entry, serverSlugs, `virtualServers[${index}]`);
        if (serverSlugs.has(resolved.slug) || virtualSlugs.has(resolved.slug))
          ctx.addIssue({
            code: 'custom',
            path: ['virtualServers', index, 'slug'],
            message: `repeats the MCP server slug "${resolved.slug}" (servers and virtual servers share one namespace)`,
          });
        virtualSlugs.add(resolved.slug);
      } catch (error) {
        ctx.addIssue({ code: 'custom', path: ['virtualServers', index], message: (error as Error).message });
      }
    });
    unique(config.prompts ?? [], (p) => p.id, 'prompt id', ctx, 'prompts');
    unique(config.policies ?? [], (p) => p.slug, 'policy slug', ctx, 'policies');
    unique(config.limits ?? [], (l) => l.slug, 'limit slug', ctx, 'limits');
    unique(config.configs ?? [], (c) => c.slug, 'config slug', ctx, 'configs');
    // Each named config is read as x-gateway-config would be: a request never finds one it cannot use.
    (config.configs ?? []).forEach((entry, index) => {
      // @gw/model-router (which the check reads configs with) loads with named configs only.
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded only when used
      const { routingConfigRefusal } = require('../catalog/routing-config-check') as typeof RoutingConfigCheck;
      const refusal = routingConfigRefusal(entry.config);
      if (refusal !== undefined) ctx.addIssue({ code: 'custom', path: ['configs', index, 'config'], message: refusal });
    });
    // A key of the file names a config of the file: one of the database could be deleted under it.
    const configSlugs = new Set((config.configs ?? []).map((c) => c.slug));
    (config.auth?.apiKeys ?? []).forEach((key, index) => {
      if (key.config !== undefined && !configSlugs.has(key.config))
        ctx.addIssue({
          code: 'custom',
          path: ['auth', 'apiKeys', index, 'config'],
          message: `names no entry of "configs": add {"slug": "${key.config}", "config": {…}} to the top-level "configs" list, or remove "config"`,
        });
    });
  });

/** A validated config. */
export type GatewayConfig = z.infer<typeof gatewayConfigSchema>;
export type AnthropicProviderConfig = z.infer<typeof anthropicProvider>;
export type BedrockProviderConfig = z.infer<typeof bedrockProvider>;
export type OAuthConfig = z.infer<typeof oauth>;

/** The `oauth` object's schema: the config file's, and the body of `PUT /admin/v1/oauth/settings`. */
export const oauthSettingsSchema = oauth;

import { recordSchemas } from '@gw/catalog';
import { z } from 'zod';

const { httpUrl, anthropicProvider, mcpServer, prompt, policy } = recordSchemas;
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
    access: z.strictObject({ mode: z.enum(['open', 'policies']).optional() }).optional(),
    policies: z.array(policy).optional(),
    providers: z.array(z.discriminatedUnion('provider', [anthropicProvider, bedrockProvider])).optional(),
    mcpServers: z.array(mcpServer).optional(),
    prompts: z.array(prompt).optional(),
  })
  .superRefine((config, ctx) => {
    unique(config.providers ?? [], (p) => p.slug, 'provider slug', ctx, 'providers');
    unique(config.mcpServers ?? [], (s) => s.slug, 'MCP server slug', ctx, 'mcpServers');
    unique(config.prompts ?? [], (p) => p.id, 'prompt id', ctx, 'prompts');
    unique(config.policies ?? [], (p) => p.slug, 'policy slug', ctx, 'policies');
  });

/** A validated config. */
export type GatewayConfig = z.infer<typeof gatewayConfigSchema>;
export type AnthropicProviderConfig = z.infer<typeof anthropicProvider>;
export type BedrockProviderConfig = z.infer<typeof bedrockProvider>;

import { z } from 'zod';

const slug = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'must be letters, digits, ".", "_" or "-"');
const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });
const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === '' ? undefined : v));

const user = z.looseObject({
  user_id: z.string().optional(),
  sub: z.string().optional(),
  email: z.string().optional(),
  username: z.string().optional(),
  workspace_id: z.string().optional(),
  organisation_id: z.string().optional(),
});

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

const models = z.discriminatedUnion('mode', [
  z.strictObject({ mode: z.literal('all') }),
  z.strictObject({
    mode: z.literal('custom'),
    models: z.array(z.string().min(1)),
    autoEnableNew: z.boolean().optional(),
  }),
]);

const anthropicProvider = z.strictObject({
  slug,
  name: z.string().optional(),
  provider: z.literal('anthropic'),
  apiKey: z.string().min(1, 'must not be empty'),
  baseUrl: httpUrl.optional(),
  models: models.optional(),
  defaultMaxTokens: z.number().int().min(1).optional(),
});

const bedrockProvider = z.strictObject({
  slug,
  name: z.string().optional(),
  provider: z.literal('bedrock'),
  accessKeyId: z.string().min(1, 'must not be empty'),
  secretAccessKey: z.string().min(1, 'must not be empty'),
  sessionToken: optionalString,
  region: z.string().regex(/^[a-z]{2}(-[a-z]+)+-\d+$/, 'must be an AWS region such as "us-east-1"'),
  allowedHosts: z.array(z.string()).optional(),
  models: models.optional(),
});

const mcpServer = z.strictObject({
  slug,
  url: httpUrl,
  user_identity_forwarding: z
    .strictObject({
      method: z.enum(['claims_header', 'bearer', 'jwt_header']),
      include_claims: z.array(z.string().min(1)).optional(),
      header_name: z.string().min(1).optional(),
      jwt_expiry_seconds: z.number().int().min(1).max(86_400).optional(),
    })
    .optional(),
  forward_headers: z
    .strictObject({ mode: z.enum(['all-except', 'only']).optional(), headers: z.array(z.string()).optional() })
    .optional(),
  jwt_audience: z.string().min(1).optional(),
  bearer_audience: z.string().min(1).optional(),
});

const prompt = z.looseObject({
  id: z.string().min(1),
  provider: z.string().min(1),
  model: z.string().min(1),
  messages: z.array(z.looseObject({ role: z.string(), content: z.unknown() })).min(1),
});

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
    auth: z.strictObject({ apiKeys: z.array(apiKey).optional(), jwt_validation: jwtValidation.optional() }).optional(),
    providers: z.array(z.discriminatedUnion('provider', [anthropicProvider, bedrockProvider])).optional(),
    mcpServers: z.array(mcpServer).optional(),
    prompts: z.array(prompt).optional(),
  })
  .superRefine((config, ctx) => {
    unique(config.providers ?? [], (p) => p.slug, 'provider slug', ctx, 'providers');
    unique(config.mcpServers ?? [], (s) => s.slug, 'MCP server slug', ctx, 'mcpServers');
    unique(config.prompts ?? [], (p) => p.id, 'prompt id', ctx, 'prompts');
  });

/** A validated config. */
export type GatewayConfig = z.infer<typeof gatewayConfigSchema>;
export type AnthropicProviderConfig = z.infer<typeof anthropicProvider>;
export type BedrockProviderConfig = z.infer<typeof bedrockProvider>;

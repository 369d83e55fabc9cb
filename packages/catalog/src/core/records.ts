import { BlockList, isIP } from 'node:net';
import { z } from 'zod';
import { REFUSED_STATIC_HEADER_NAMES } from '@gw/upstream';
import { InvalidRecordError, SecretsRequiredForRoutingChangeError } from './errors';

/**
 * The kinds of record, as named in the admin API's paths; `settings` holds the gateway's own
 * settings (one record per setting, such as `settings/oauth`), written by the host's own routes,
 * never by the generic record routes.
 */
export type RecordKind =
  | 'providers'
  | 'mcp-servers'
  | 'prompts'
  | 'api-keys'
  | 'policies'
  | 'limits'
  | 'configs'
  | 'virtual-servers'
  | 'settings';

/** Every kind, in the order the admin API lists them. */
export const RECORD_KINDS: readonly RecordKind[] = [
  'providers',
  'mcp-servers',
  'prompts',
  'api-keys',
  'policies',
  'limits',
  'configs',
  'virtual-servers',
];

const slug = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'must be letters, digits, ".", "_" or "-" (at most 64)');
const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });

/**
 * Link-local and cloud metadata addresses: never an upstream of the gateway (CONTRACT section 8).
 * IPv4-mapped, IPv4-compatible and NAT64 spellings of `169.254.0.0/16` are listed too.
 */
const METADATA_ADDRESSES = (() => {
  const list = new BlockList();
  list.addSubnet('169.254.0.0', 16, 'ipv4');
  list.addSubnet('fe80::', 10, 'ipv6');
  list.addAddress('fd00:ec2::254', 'ipv6');
  list.addSubnet('::ffff:169.254.0.0', 112, 'ipv6');
  list.addSubnet('::169.254.0.0', 112, 'ipv6');
  list.addSubnet('64:ff9b::169.254.0.0', 112, 'ipv6');
  return list;
})();
/** Host names of cloud metadata services (compared lower case, trailing dots removed). */
const METADATA_HOSTS: ReadonlySet<string> = new Set(['metadata.google.internal', 'metadata.goog']);

/**
 * Why `value` may not be an upstream of the gateway, or undefined when it may: a link-local or
 * cloud metadata address (`169.254.0.0/16`, `fe80::/10`, `fd00:ec2::254`,
 * `metadata.google.internal`) in any spelling the URL parser reads as one (decimal, hex or octal
 * IPv4, IPv4-mapped IPv6, upper case, trailing dots). `value` is a URL, or a bare host
 * (`allowedHosts`). Loopback and private addresses are allowed. A name that only resolves to
 * such an address is not caught here.
 */
export function forbiddenUpstreamAddress(value: string): string | undefined {
  let host: string;
  try {
    host = new URL(/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(value) ? value : `http://${value}`).hostname;
  } catch {
    return undefined;
  }
  host = host
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/\.+$/, '');
  if (METADATA_HOSTS.has(host)) return `must not be a cloud metadata address (${host})`;
  const family = isIP(host);
  if (family !== 0 && METADATA_ADDRESSES.check(host, family === 4 ? 'ipv4' : 'ipv6')) {
    return `must not be a link-local or cloud metadata address (${host})`;
  }
  return undefined;
}

/** An http(s) URL the gateway sends requests (and credentials) to: never a link-local or metadata address. */
const upstreamUrl = httpUrl.superRefine((value, ctx) => {
  const reason = forbiddenUpstreamAddress(value);
  if (reason !== undefined) ctx.addIssue({ code: 'custom', message: reason });
});
/** A host (or URL) an AWS integration may be sent to: never a link-local or metadata address. */
const upstreamHost = z
  .string()
  .min(1)
  .superRefine((value, ctx) => {
    const reason = forbiddenUpstreamAddress(value);
    if (reason !== undefined) ctx.addIssue({ code: 'custom', message: reason });
  });
const models = z.discriminatedUnion('mode', [
  z.strictObject({ mode: z.literal('all') }),
  z.strictObject({
    mode: z.literal('custom'),
    models: z.array(z.string().min(1)).max(1000),
    autoEnableNew: z.boolean().optional(),
  }),
]);

/** A provider's response cache settings: on by default, entries per caller unless `scope: "shared"`. */
const providerCache = z.strictObject({
  enabled: z.boolean().optional(),
  scope: z.enum(['caller', 'shared']).optional(),
});

/** USD per million tokens: a price of the price table. */
const usdPerMillion = z.number().min(0).max(100_000);
/** A provider's `pricing`: per model id, USD per million input, output, cache-write and cache-read tokens. */
const pricing = z
  .record(
    z.string().min(1).max(256),
    z.strictObject({
      input: usdPerMillion,
      output: usdPerMillion,
      cacheWrite: usdPerMillion.optional(),
      cacheRead: usdPerMillion.optional(),
    }),
  )
  .refine((table) => Object.keys(table).length <= 1000, 'has more than 1000 models');

const anthropicProvider = z.strictObject({
  slug,
  name: z.string().min(1).max(200).optional(),
  provider: z.literal('anthropic'),
  apiKey: z.string().min(1, 'must not be empty'),
  baseUrl: upstreamUrl.optional(),
  models: models.optional(),
  defaultMaxTokens: z.number().int().min(1).max(1_000_000).optional(),
  cache: providerCache.optional(),
  pricing: pricing.optional(),
});

const bedrockProvider = z.strictObject({
  slug,
  name: z.string().min(1).max(200).optional(),
  provider: z.literal('bedrock'),
  accessKeyId: z.string().min(1, 'must not be empty'),
  secretAccessKey: z.string().min(1, 'must not be empty'),
  sessionToken: z.string().min(1).optional(),
  region: z.string().regex(/^[a-z]{2}(-[a-z]+)+-\d+$/, 'must be an AWS region such as "us-east-1"'),
  allowedHosts: z.array(upstreamHost).max(100).optional(),
  models: models.optional(),
});

/** An HTTP header name (an RFC 9110 token). */
const headerName = z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'must be an HTTP header name');
/** Scopes an `upstream_auth` asks: RFC 6749 scope tokens. */
const upstreamScopes = z
  .array(z.string().regex(/^[\x21\x23-\x5B\x5D-\x7E]+$/, 'must be a scope token (no spaces or quotes)'))
  .max(100);
/** The gateway's client identity at an authorization server (`upstream_auth.client`); `client_secret` is a secret. */
const upstreamClient = z
  .strictObject({
    client_id: z.string().min(1, 'must not be empty').max(1024),
    client_secret: z.string().min(1, 'must not be empty').max(4096).optional(),
    token_endpoint_auth_method: z.enum(['client_secret_basic', 'client_secret_post', 'none']).optional(),
  })
  .superRefine((client, ctx) => {
    const method = client.token_endpoint_auth_method;
    if (method === 'none' && client.client_secret !== undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['client_secret'],
        message: 'must be left out with token_endpoint_auth_method "none"',
      });
    if (method !== undefined && method !== 'none' && client.client_secret === undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['client_secret'],
        message: `is required with token_endpoint_auth_method "${method}"`,
      });
  });
/**
 * An MCP server's `upstream_auth` (CONTRACT section 15): `oauth`, `token_exchange` or `static`.
 * Secrets: `client.client_secret` and every value of a `static` `headers` map.
 */
const upstreamAuth = z.discriminatedUnion(
  'type',
  [
    z.strictObject({
      type: z.literal('oauth'),
      scopes: upstreamScopes.optional(),
      authorization_server: upstreamUrl.optional(),
      client: upstreamClient.optional(),
    }),
    z.strictObject({
      type: z.literal('token_exchange'),
      token_endpoint: upstreamUrl.optional(),
      issuer: upstreamUrl.optional(),
      audience: z.string().min(1).max(1024).optional(),
      resource: z.string().min(1).max(2048).optional(),
      scopes: upstreamScopes.optional(),
      client: upstreamClient,
    }),
    z.strictObject({
      type: z.literal('static'),
      headers: z
        .record(
          headerName,
          z
            .string()
            .min(1, 'must not be empty')
            .max(8192)
            .regex(/^[\t\x20-\x7E\x80-\xFF]*$/, 'must be a header value (no line breaks)'),
        )
        .superRefine((headers, ctx) => {
          for (const name of Object.keys(headers))
            if (REFUSED_STATIC_HEADER_NAMES.has(name.toLowerCase()))
              ctx.addIssue({ code: 'custom', path: [name], message: 'is a header the gateway sets itself' });
        })
        .refine((headers) => Object.keys(headers).length >= 1, 'must name at least one header')
        .refine((headers) => Object.keys(headers).length <= 20, 'has more than 20 headers'),
    }),
  ],
  { error: 'must have type "oauth", "token_exchange" or "static"' },
);

const mcpServer = z.strictObject({
  slug,
  url: upstreamUrl,
  user_identity_forwarding: z
    .strictObject({
      method: z.enum(['claims_header', 'bearer', 'jwt_header']),
      include_claims: z.array(z.string().min(1)).max(100).optional(),
      header_name: z
        .string()
        .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'must be an HTTP header name')
        .optional(),
      jwt_expiry_seconds: z.number().int().min(1).max(86_400).optional(),
    })
    .optional(),
  forward_headers: z
    .strictObject({
      mode: z.enum(['all-except', 'only']).optional(),
      headers: z.array(z.string().min(1)).max(100).optional(),
    })
    .optional(),
  jwt_audience: z.string().min(1).optional(),
  bearer_audience: z.string().min(1).optional(),
  tool_pinning: z.boolean().optional(),
  upstream_auth: upstreamAuth.optional(),
});

const prompt = z.looseObject({
  id: slug,
  provider: z.string().min(1),
  model: z.string().min(1),
  messages: z.array(z.looseObject({ role: z.string(), content: z.unknown() })).min(1),
});

const apiKeyUser = z.looseObject({
  user_id: z.string().optional(),
  sub: z.string().optional(),
  email: z.string().optional(),
  username: z.string().optional(),
  workspace_id: z.string().optional(),
  organisation_id: z.string().optional(),
  groups: z.array(z.string().min(1).max(256)).max(100).optional(),
});
const apiKey = z.strictObject({
  user: apiKeyUser,
  name: z.string().min(1).max(200).optional(),
  config: slug.optional(),
  expiresAt: z.iso
    .datetime({ offset: true, error: 'must be an ISO 8601 time such as "2030-01-31T00:00:00Z"' })
    .optional(),
});

/** The fields of an API key a PATCH may change (the key and its user never change). */
export const API_KEY_CHANGEABLE_FIELDS: readonly string[] = ['name', 'expiresAt', 'config'];

/** Largest `config` of a named config, in bytes of its JSON text: 16 KiB. */
export const MAX_NAMED_CONFIG_BYTES = 16 * 1024;
/** Deepest nesting of a named config's `config`, in objects and arrays (the `config` object itself is 1). */
export const MAX_NAMED_CONFIG_DEPTH = 8;

/** How deep `value` nests objects and arrays (a scalar is 0), counted without recursion. */
function jsonDepth(value: unknown): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop() as [unknown, number];
    if (typeof item !== 'object' || item === null) continue;
    deepest = Math.max(deepest, depth);
    for (const child of Object.values(item)) stack.push([child, depth + 1]);
  }
  return deepest;
}

/**
 * A named config's `config` (CONTRACT section 17): a JSON object (what `x-gateway-config` takes),
 * at most {@link MAX_NAMED_CONFIG_BYTES} serialized and {@link MAX_NAMED_CONFIG_DEPTH} deep. Its
 * routing shape is checked by the model router when it is used, not here.
 */
const namedConfigBody = z
  .record(z.string(), z.unknown(), { error: 'must be a JSON object, such as {"retry": {"attempts": 2}}' })
  .superRefine((value, ctx) => {
    const depth = jsonDepth(value);
    if (depth > MAX_NAMED_CONFIG_DEPTH)
      ctx.addIssue({ code: 'custom', message: `is nested ${depth} levels deep, more than ${MAX_NAMED_CONFIG_DEPTH}` });
    else if (Buffer.byteLength(JSON.stringify(value)) > MAX_NAMED_CONFIG_BYTES)
      ctx.addIssue({ code: 'custom', message: `is larger than ${MAX_NAMED_CONFIG_BYTES} bytes as JSON` });
  });

/** A named config (CONTRACT section 17): a routing config stored under a slug, used by `x-gateway-config: <slug>` and API keys' `config`. */
const namedConfig = z.strictObject({
  slug,
  name: z.string().min(1).max(200).optional(),
  config: namedConfigBody,
});

/** Characters of an MCP tool name (letters, digits, `_`, `-`, `.`, `/`), at most 128. */
const toolName = z
  .string()
  .regex(/^[A-Za-z0-9_./-]{1,128}$/, 'must be a tool name: letters, digits, "_", "-", "." or "/" (at most 128)');

/** One member of a virtual MCP server (CONTRACT section 16): field names as in the config file. */
const virtualMember = z.strictObject({
  server: slug,
  prefix: z
    .string()
    .regex(/^[A-Za-z0-9_./-]{1,64}$/, 'must be letters, digits, "_", "-", "." or "/" (at most 64)')
    .optional(),
  tools: z.array(z.string().min(1).max(200)).min(1).max(100).optional(),
  rename: z.record(toolName, toolName).optional(),
  timeout_ms: z.number().int().min(1).max(60_000).optional(),
});

/**
 * A virtual MCP server (CONTRACT section 16): several MCP servers behind `/mcp/<slug>`. The shape
 * is checked here; the host checks the rest as the config file's `virtualServers` are (patterns,
 * renames to one name), and the store that each member names an MCP server.
 */
const virtualServer = z.strictObject({
  slug,
  name: z.string().min(1).max(200).optional(),
  members: z.array(virtualMember).min(1, 'must list at least one member, such as {"server": "tracker"}').max(64),
});

/** The fields of a virtual server a PATCH removes when it gives them as null: its name. */
export const VIRTUAL_SERVER_REMOVABLE_FIELDS: readonly string[] = ['name'];

/** The fields of a named config a PATCH removes when it gives them as null: its name. */
export const NAMED_CONFIG_REMOVABLE_FIELDS: readonly string[] = ['name'];

/**
 * Throws {@link InvalidRecordError} naming `expiresAt` when an API key's expiry, given in a
 * creation or a change, is not in the future.
 */
export function checkApiKeyExpiry(expiresAt: unknown, now = Date.now()): void {
  if (typeof expiresAt === 'string' && Date.parse(expiresAt) <= now)
    throw new InvalidRecordError('expiresAt: must be in the future.', 'expiresAt');
}

/** A `*` pattern of an access policy: `*` stands for any run of characters. */
const pattern = z
  .string()
  .min(1, 'must not be empty')
  .max(256)
  .refine((p) => p.split('*').length <= 17, 'has more than 16 "*"');
const names = z.array(z.string().min(1).max(256)).max(1000);
const patterns = z.array(pattern).max(1000);

const policy = z.strictObject({
  slug,
  name: z.string().min(1).max(200).optional(),
  subjects: z.strictObject({ users: names.optional(), groups: names.optional(), apiKeys: names.optional() }),
  allow: z.strictObject({
    models: patterns.optional(),
    mcpServers: z
      .array(z.strictObject({ server: pattern, tools: patterns.optional() }))
      .max(1000)
      .optional(),
    integrations: patterns.optional(),
  }),
});

const usd = z.number().min(0).max(1_000_000);
/** A limit (CONTRACT section 14): who it is for, as a policy's subjects, and its caps (each optional). */
const limit = z.strictObject({
  slug,
  name: z.string().min(1).max(200).optional(),
  subjects: z.strictObject({ users: names.optional(), groups: names.optional(), apiKeys: names.optional() }),
  per: z.enum(['each', 'shared']).optional(),
  requests_per_minute: z.number().int().min(0).max(1_000_000).optional(),
  tokens_per_minute: z.number().int().min(0).max(1_000_000_000).optional(),
  cost_usd_per_day: usd.optional(),
  cost_usd_per_month: usd.optional(),
});

/** The fields of a limit a PATCH removes when it gives them as null: its name and each cap. */
export const LIMIT_REMOVABLE_FIELDS: readonly string[] = [
  'name',
  'requests_per_minute',
  'tokens_per_minute',
  'cost_usd_per_day',
  'cost_usd_per_month',
];

/**
 * The shapes of the catalog's records (zod schemas), the one definition of what a provider, an
 * AWS integration, an MCP server, a prompt template and an API key's user look like: the admin API
 * validates with them, and a host's config file can build on them so both sources accept the same
 * records.
 */
export const recordSchemas = {
  slug,
  httpUrl,
  upstreamUrl,
  upstreamHost,
  models,
  providerCache,
  anthropicProvider,
  bedrockProvider,
  mcpServer,
  upstreamAuth,
  upstreamClient,
  prompt,
  apiKeyUser,
  policy,
  pricing,
  limit,
  namedConfig,
  virtualServer,
};

/**
 * A record of the gateway's own settings: `value` is what the host validated with its own schema
 * (stored as given), `clientSecret` the one secret a setting may carry (sealed).
 */
const setting = z.strictObject({
  slug: z.enum(['oauth', 'access-mode'], 'must be "oauth" or "access-mode"'),
  value: z.record(z.string(), z.unknown()),
  clientSecret: z.string().min(1).optional(),
});

/**
 * What one shape of record holds in secret and where it sends it: the record kind (and, for
 * providers, the `provider` type) whose records hold `secrets` (stored sealed, answered only as
 * `<field>Hint`), and the `routing` fields (dotted paths into the record) that say where the gateway
 * sends them. A change of a routing field sends the secrets to a new place, so it must give every
 * secret the record holds again (see {@link secretsMissingForRoutingChange}).
 */
export interface SecretHolder {
  /** The record kind. */
  kind: RecordKind;
  /** For `providers`: the `provider` type these records are; undefined: every record of `kind`. */
  provider?: string;
  /** The fields that are secrets, in the order a refusal names the first one missing. */
  secrets: readonly string[];
  /** The fields (dotted paths, such as `value.login.issuer`) that say where the secrets are sent. Never empty. */
  routing: readonly string[];
  /**
   * Dotted paths of maps whose every value is a secret (a `static` `upstream_auth.headers`): the
   * value of key `<name>` is the secret field `<path>.<name>`, answered in place as its hint
   * (`"headers": {"<name>": "…<last 4>"}`). Default: none.
   */
  secretMaps?: readonly string[];
}

/**
 * Every shape of record that holds a secret, with its secret and routing fields: the one definition
 * the store seals by and checks changes against. A new secret field is sealed only once it is
 * listed here, with the fields that say where it goes.
 */
export const SECRET_HOLDERS: readonly SecretHolder[] = [
  { kind: 'providers', provider: 'anthropic', secrets: ['apiKey'], routing: ['baseUrl'] },
  {
    kind: 'providers',
    provider: 'bedrock',
    secrets: ['accessKeyId', 'secretAccessKey', 'sessionToken'],
    routing: ['region', 'allowedHosts'],
  },
  // `settings/oauth`: the OpenID Provider's client secret goes to the token endpoint of `login.issuer`.
  { kind: 'settings', secrets: ['clientSecret'], routing: ['value.login.issuer'] },
  // An MCP server's upstream credentials: the client secret goes to the authorization server's (or
  // the identity provider's) token endpoint, the static headers to the server's `url`.
  {
    kind: 'mcp-servers',
    secrets: ['upstream_auth.client.client_secret'],
    secretMaps: ['upstream_auth.headers'],
    routing: [
      'url',
      'upstream_auth.type',
      'upstream_auth.authorization_server',
      'upstream_auth.token_endpoint',
      'upstream_auth.issuer',
    ],
  },
];

/** The {@link SecretHolder} a record of `kind` with `data` is, or undefined when it holds no secret. */
export function secretHolderOf(kind: RecordKind, data: Record<string, unknown>): SecretHolder | undefined {
  return SECRET_HOLDERS.find(
    (holder) => holder.kind === kind && (holder.provider === undefined || holder.provider === data.provider),
  );
}

/** The fields of each provider type that are secrets: stored sealed, answered only as `<field>Hint`. */
export const SECRET_FIELDS: ReadonlyMap<string, readonly string[]> = new Map(
  SECRET_HOLDERS.filter((holder) => holder.kind === 'providers').map((holder) => [
    String(holder.provider),
    holder.secrets,
  ]),
);

/**
 * The steps of the path to a secret field of `holder`: a dotted field splits at its dots; an entry
 * of a secret map (`upstream_auth.headers.X-Api.Key`) is the map's steps and the key as it is.
 */
export function secretFieldSteps(holder: SecretHolder | undefined, field: string): string[] {
  const map = holder?.secretMaps?.find((path) => field.startsWith(`${path}.`));
  return map === undefined ? field.split('.') : [...map.split('.'), field.slice(map.length + 1)];
}

/** Whether `field` is a secret of `holder`: one of its `secrets`, or an entry of one of its `secretMaps`. */
export function isSecretField(holder: SecretHolder | undefined, field: string): boolean {
  if (holder === undefined) return false;
  return holder.secrets.includes(field) || (holder.secretMaps ?? []).some((path) => field.startsWith(`${path}.`));
}

/**
 * The secret fields `data` (a record of `kind`) gives, as string values: its holder's `secrets`
 * (dotted paths) in order, then each entry of its `secretMaps` (`<path>.<key>`).
 */
export function secretFieldsIn(kind: RecordKind, data: Record<string, unknown>): string[] {
  const holder = secretHolderOf(kind, data);
  if (holder === undefined) return [];
  const fields = holder.secrets.filter((field) => typeof valueAtSteps(data, field.split('.')) === 'string');
  for (const path of holder.secretMaps ?? []) {
    const map = valueAtSteps(data, path.split('.'));
    if (typeof map !== 'object' || map === null || Array.isArray(map)) continue;
    for (const [key, value] of Object.entries(map)) if (typeof value === 'string') fields.push(`${path}.${key}`);
  }
  return fields;
}

/** A copy of `data` whose objects along `steps` are copies too (so setting or deleting there leaves `data` as it was). */
function copyAlong(data: Record<string, unknown>, steps: readonly string[]): Record<string, unknown> {
  const root = { ...data };
  let at: Record<string, unknown> = root;
  for (const step of steps.slice(0, -1)) {
    const next = at[step];
    if (typeof next !== 'object' || next === null || Array.isArray(next)) break;
    at[step] = { ...(next as Record<string, unknown>) };
    at = at[step] as Record<string, unknown>;
  }
  return root;
}

/** The object holding the last step of `steps` in `data`, or undefined when a step before it is missing. */
function parentAt(data: Record<string, unknown>, steps: readonly string[]): Record<string, unknown> | undefined {
  const parent = valueAtSteps(data, steps.slice(0, -1));
  return typeof parent === 'object' && parent !== null && !Array.isArray(parent)
    ? (parent as Record<string, unknown>)
    : undefined;
}

/**
 * `data` (a record of `kind`) without its secrets, and the secrets it gave by field
 * ({@link secretFieldsIn}). A secret map left empty stays, empty: the record keeps saying its type.
 */
export function withoutSecrets(
  kind: RecordKind,
  data: Record<string, unknown>,
): { rest: Record<string, unknown>; secrets: Record<string, string> } {
  const holder = secretHolderOf(kind, data);
  let rest = { ...data };
  const secrets: Record<string, string> = {};
  for (const field of secretFieldsIn(kind, data)) {
    const steps = secretFieldSteps(holder, field);
    secrets[field] = valueAtSteps(data, steps) as string;
    rest = copyAlong(rest, steps);
    const parent = parentAt(rest, steps);
    if (parent !== undefined) delete parent[steps[steps.length - 1] as string];
  }
  // A secret field the record gives as something else than a string (left out, null) is no secret to keep.
  for (const field of holder?.secrets ?? []) {
    const steps = field.split('.');
    const parent = parentAt(rest, steps);
    if (parent !== undefined && Object.hasOwn(parent, steps[steps.length - 1] as string)) {
      rest = copyAlong(rest, steps);
      delete (parentAt(rest, steps) as Record<string, unknown>)[steps[steps.length - 1] as string];
    }
  }
  return { rest, secrets };
}

/**
 * `data` (a record of `kind` without its secrets) with `secrets` (by field) put back in place: what
 * the gateway reads an MCP server's `upstream_auth` from (`OpenedRecord.data` and `.secrets`). A
 * secret whose place is gone (its object left out) is dropped.
 */
export function withSecrets(
  kind: RecordKind,
  data: Record<string, unknown>,
  secrets: Readonly<Record<string, string>>,
): Record<string, unknown> {
  const holder = secretHolderOf(kind, data);
  let record = { ...data };
  for (const [field, value] of Object.entries(secrets)) {
    const steps = secretFieldSteps(holder, field);
    if (parentAt(record, steps) === undefined) continue;
    record = copyAlong(record, steps);
    (parentAt(record, steps) as Record<string, unknown>)[steps[steps.length - 1] as string] = value;
  }
  return record;
}

/**
 * `record` (as answered, no secret) with each hint in place: a top-level or nested secret field
 * `a.b.field` as `a.b.fieldHint`, an entry of a secret map as the map's value itself
 * (`"headers": {"Authorization": "…7f3a"}`). A hint whose place is gone is left out.
 */
export function withHints(
  kind: RecordKind,
  record: Record<string, unknown>,
  hints: Readonly<Record<string, string>>,
): Record<string, unknown> {
  const holder = secretHolderOf(kind, record);
  let answered = { ...record };
  for (const [field, hint] of Object.entries(hints)) {
    const steps = secretFieldSteps(holder, field);
    const inMap = (holder?.secretMaps ?? []).some((path) => field.startsWith(`${path}.`));
    const last = inMap ? (steps[steps.length - 1] as string) : `${steps[steps.length - 1] as string}Hint`;
    if (steps.length > 1 && parentAt(answered, steps) === undefined) continue;
    answered = copyAlong(answered, steps);
    const parent = steps.length > 1 ? (parentAt(answered, steps) as Record<string, unknown>) : answered;
    parent[last] = hint;
  }
  return answered;
}

/** The value at `steps` of `record` (undefined when any step is missing). */
function valueAtSteps(record: Record<string, unknown>, steps: readonly string[]): unknown {
  let value: unknown = record;
  for (const step of steps) {
    if (typeof value !== 'object' || value === null || !Object.hasOwn(value, step)) return undefined;
    value = (value as Record<string, unknown>)[step];
  }
  return value;
}

/** The value at a dotted `path` of `record` (undefined when any step is missing). */
function valueAt(record: Record<string, unknown>, path: string): unknown {
  let value: unknown = record;
  for (const step of path.split('.')) {
    if (typeof value !== 'object' || value === null || !Object.hasOwn(value, step)) return undefined;
    value = (value as Record<string, unknown>)[step];
  }
  return value;
}

/** Whether two JSON values are the same (object keys in any order, arrays in order). */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const keysA = Object.keys(a);
  const keysB = Object.keys(b);
  return (
    keysA.length === keysB.length &&
    keysA.every(
      (key) =>
        Object.hasOwn(b, key) && sameJson((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]),
    )
  );
}

/**
 * The routing field a change moves and the first secret it leaves out, or undefined when it may be
 * written: `stored` is the record's non-secret fields as stored, `next` the same after the change,
 * `heldSecrets` the secret fields the record holds now, `givenSecrets` those the change gives again.
 * A routing field resent with the value it has is no change.
 */
export function secretsMissingForRoutingChange(
  kind: RecordKind,
  stored: Record<string, unknown>,
  next: Record<string, unknown>,
  heldSecrets: readonly string[],
  givenSecrets: readonly string[],
): { routingField: string; secretField: string } | undefined {
  const holder = secretHolderOf(kind, stored);
  if (holder === undefined) return undefined;
  const routingField = holder.routing.find((path) => !sameJson(valueAt(stored, path), valueAt(next, path)));
  if (routingField === undefined) return undefined;
  const mapEntries = heldSecrets
    .filter((field) => !holder.secrets.includes(field) && isSecretField(holder, field))
    .sort();
  const secretField = [...holder.secrets, ...mapEntries].find(
    (field) => heldSecrets.includes(field) && !givenSecrets.includes(field),
  );
  return secretField === undefined ? undefined : { routingField, secretField };
}

/**
 * Refuses a change that moves a routing field of a record holding secrets without giving every one
 * of them again: {@link InvalidRecordError} (`400 invalid_request`) whose `param` is the first
 * missing secret (as `names` spells it, default: its field name) and whose message says what to write.
 */
export function checkSecretsGivenForRoutingChange(
  kind: RecordKind,
  stored: Record<string, unknown>,
  next: Record<string, unknown>,
  heldSecrets: readonly string[],
  givenSecrets: readonly string[],
  names: (field: string) => string = (field) => field,
): void {
  const missing = secretsMissingForRoutingChange(kind, stored, next, heldSecrets, givenSecrets);
  if (missing === undefined) return;
  const holder = secretHolderOf(kind, stored) as SecretHolder;
  const held = [
    ...holder.secrets.filter((field) => heldSecrets.includes(field)),
    ...heldSecrets.filter((field) => !holder.secrets.includes(field) && isSecretField(holder, field)).sort(),
  ].map(names);
  throw new SecretsRequiredForRoutingChangeError(
    `Changing ${names(missing.routingField)} sends the stored secrets to a new place: give ${held.join(', ')} again in the same change.`,
    names(missing.secretField),
  );
}

/** What a new record of `kind` is built from, validated; throws {@link InvalidRecordError} naming the field. */
export function validateInput(kind: RecordKind, input: unknown): Record<string, unknown> {
  const schema = schemaOf(kind, input);
  const result = schema.safeParse(input);
  if (!result.success) throw invalid(result.error);
  return result.data as Record<string, unknown>;
}

function schemaOf(kind: RecordKind, input: unknown): z.ZodType {
  switch (kind) {
    case 'providers': {
      const provider =
        typeof input === 'object' && input !== null ? (input as { provider?: unknown }).provider : undefined;
      if (provider === 'bedrock') return bedrockProvider;
      if (provider === 'anthropic') return anthropicProvider;
      throw new InvalidRecordError('provider must be "anthropic" or "bedrock".', 'provider');
    }
    case 'mcp-servers':
      return mcpServer;
    case 'prompts':
      return prompt;
    case 'api-keys':
      return apiKey;
    case 'policies':
      return policy;
    case 'limits':
      return limit;
    case 'configs':
      return namedConfig;
    case 'virtual-servers':
      return virtualServer;
    case 'settings':
      return setting;
  }
}

function invalid(error: z.ZodError): InvalidRecordError {
  const issue = error.issues[0];
  const path = (issue?.path ?? []).map(String);
  if (issue?.code === 'unrecognized_keys') {
    const key = issue.keys[0] ?? '';
    return new InvalidRecordError(`Unknown field "${key.slice(0, 64)}".`, [...path, key].join('.'));
  }
  const param = path.join('.') || null;
  return new InvalidRecordError(`${param ?? 'The record'}: ${issue?.message ?? 'is not valid'}.`, param);
}

/** The slug (or prompt id) that names a record in paths, from its validated input. */
export function slugOf(kind: RecordKind, data: Record<string, unknown>): string {
  return String(kind === 'prompts' ? data.id : data.slug);
}

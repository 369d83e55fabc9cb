import { rejectUnknownOptions } from '@gw/options';
import { Secret } from './secret';

/** An AWS integration of the catalog: credentials the gateway signs with, and where it may send them. */
export interface AwsIntegration {
  /** Referenced as `@<slug>` in `x-gateway-provider`: letters, digits, `.`, `_` or `-`. Required. */
  slug: string;
  /** The provider kind, as in the config's `providers`. Default `bedrock`. */
  provider?: 'bedrock';
  /** Display name. Default: the slug. */
  name?: string;
  /** AWS access key id. Required. */
  accessKeyId: string;
  /** AWS secret access key. Required. */
  secretAccessKey: string;
  /** Session token of temporary credentials. Default: none. */
  sessionToken?: string;
  /** Signing region for `allowedHosts`, for example `us-east-1`. Required. */
  region: string;
  /** Extra exact origins (`https://vpce-….amazonaws.com`, `http://127.0.0.1:9100`) requests may go to. Default `[]`. */
  allowedHosts?: readonly string[];
  /**
   * The model selection the catalog keeps with the integration (`{ mode: "all" }` or
   * `{ mode: "custom", models: [...] }`); not used for signing. Default: none.
   */
  models?: { mode: 'all' } | { mode: 'custom'; models: readonly string[]; autoEnableNew?: boolean };
}

/** A validated integration: secrets wrapped, allowed origins normalised. */
export interface ResolvedIntegration {
  slug: string;
  name: string;
  accessKeyId: string;
  secretAccessKey: Secret;
  sessionToken: Secret | undefined;
  region: string;
  allowedOrigins: ReadonlySet<string>;
}

/** A well-formed AWS region name. */
export const AWS_REGION = /^[a-z]{2}(?:-gov|-iso[a-z]?)?-[a-z]+-\d{1,2}$/;

/** Validates an integration (throws TypeError naming the field and what to write). */
export function resolveIntegration(integration: AwsIntegration): ResolvedIntegration {
  const where = `providers[${String(integration?.slug)}]`;
  if (typeof integration !== 'object' || integration === null)
    throw new TypeError('An AWS integration must be an object.');
  rejectUnknownOptions(
    integration,
    ['slug', 'name', 'provider', 'accessKeyId', 'secretAccessKey', 'sessionToken', 'region', 'allowedHosts', 'models'],
    where,
  );
  if (typeof integration.slug !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(integration.slug)) {
    throw new TypeError(`${where}.slug must be letters, digits, ".", "_" or "-".`);
  }
  if (integration.provider !== undefined && integration.provider !== 'bedrock') {
    throw new TypeError(`${where}.provider must be "bedrock" (or left out).`);
  }
  for (const field of ['name', 'sessionToken'] as const) {
    if (integration[field] !== undefined && typeof integration[field] !== 'string')
      throw new TypeError(`${where}.${field} must be a string.`);
  }
  if (integration.allowedHosts !== undefined && !Array.isArray(integration.allowedHosts))
    throw new TypeError(
      `${where}.allowedHosts must be a list of origins such as ["https://bedrock-vpce.example.com"].`,
    );
  const models = integration.models as { mode?: unknown } | undefined;
  if (
    models !== undefined &&
    (typeof models !== 'object' || models === null || (models.mode !== 'all' && models.mode !== 'custom'))
  )
    throw new TypeError(`${where}.models must be { mode: "all" } or { mode: "custom", models: [...] }.`);
  for (const field of ['accessKeyId', 'secretAccessKey'] as const) {
    if (typeof integration[field] !== 'string' || integration[field] === '')
      throw new TypeError(`${where}.${field} must be a non-empty string.`);
  }
  if (typeof integration.region !== 'string' || !AWS_REGION.test(integration.region)) {
    throw new TypeError(`${where}.region must be an AWS region such as "us-east-1".`);
  }
  const allowedOrigins = new Set<string>();
  for (const [index, origin] of (integration.allowedHosts ?? []).entries()) {
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      throw new TypeError(
        `${where}.allowedHosts[${index}] must be an origin such as "https://bedrock-vpce.example.com".`,
      );
    }
    if (
      (url.protocol !== 'https:' && url.protocol !== 'http:') ||
      url.username ||
      url.password ||
      url.pathname !== '/' ||
      url.search ||
      url.hash ||
      origin.replace(/\/$/, '') !== url.origin
    ) {
      throw new TypeError(
        `${where}.allowedHosts[${index}] must be an origin only (scheme, host and port), such as "https://bedrock-vpce.example.com".`,
      );
    }
    allowedOrigins.add(url.origin);
  }
  return {
    slug: integration.slug,
    name: integration.name ?? integration.slug,
    accessKeyId: integration.accessKeyId,
    secretAccessKey: new Secret(integration.secretAccessKey),
    sessionToken: integration.sessionToken ? new Secret(integration.sessionToken) : undefined,
    region: integration.region,
    allowedOrigins,
  };
}

import { join } from 'node:path';
import type { z } from 'zod';
import { loadConfigFile } from '../../src/config/load';
import { gatewayConfigSchema } from '../../src/config/schema';

// examples/gateway.sample.json is the complete sample config: the loader accepts it, and it sets
// every field the config file has (so a new field without a sample fails here).
const sample = join(__dirname, '..', '..', '..', 'gateway.sample.json');
const env = {
  ANTHROPIC_API_KEY: 'sk-ant-sample',
  AWS_ACCESS_KEY_ID: 'AKIDSAMPLE',
  AWS_SECRET_ACCESS_KEY: 'sample-secret',
  EXCHANGE_CLIENT_SECRET: 'sample-exchange-secret',
  CRM_SERVICE_KEY: 'sample-crm-key',
  WIKI_CLIENT_SECRET: 'sample-wiki-secret',
};

type Def = {
  type: string;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  element?: z.ZodType;
  options?: z.ZodType[];
  in?: z.ZodType;
  catchall?: z.ZodType;
};
const defOf = (schema: z.ZodType) => (schema as unknown as { _zod: { def: Def } })._zod.def;

/** Every field path the schema declares (`providers[].models.mode`), open records' own keys left out. */
function schemaPaths(schema: z.ZodType, prefix = ''): string[] {
  const def = defOf(schema);
  switch (def.type) {
    case 'optional':
    case 'nullable':
    case 'default':
      return schemaPaths(def.innerType!, prefix);
    case 'pipe':
      return schemaPaths(def.in!, prefix);
    case 'array':
      return schemaPaths(def.element!, `${prefix}[]`);
    case 'union':
      return [...new Set(def.options!.flatMap((option) => schemaPaths(option, prefix)))];
    case 'object':
      return Object.entries(def.shape!).flatMap(([key, value]) => {
        const path = prefix ? `${prefix}.${key}` : key;
        return [path, ...schemaPaths(value, path)];
      });
    default:
      return [];
  }
}

function valuePaths(value: unknown, prefix = ''): string[] {
  if (Array.isArray(value)) return value.flatMap((item) => valuePaths(item, `${prefix}[]`));
  if (typeof value === 'object' && value !== null) {
    return Object.entries(value).flatMap(([key, item]) => {
      const path = prefix ? `${prefix}.${key}` : key;
      return [path, ...valuePaths(item, path)];
    });
  }
  return [];
}

describe('examples/gateway.sample.json', () => {
  it('is accepted by the config loader', () => {
    const config = loadConfigFile(sample, env);
    expect(config.providers?.map((p) => p.slug)).toEqual(['anthropic', 'bedrock-kb']);
    expect(config.mcpServers?.map((s) => s.user_identity_forwarding?.method)).toEqual([
      'jwt_header',
      'bearer',
      'claims_header',
    ]);
  });

  it('sets every field of the config file', () => {
    const set = new Set(valuePaths(loadConfigFile(sample, env)));
    const missing = schemaPaths(gatewayConfigSchema as unknown as z.ZodType).filter((path) => !set.has(path));
    expect(missing).toEqual([]);
  });
});

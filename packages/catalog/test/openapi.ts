import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import type { ErrorObject, ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

/**
 * Checks answers of the admin API against its OpenAPI document (packages/catalog/openapi/admin-v1.json)
 * with Ajv's JSON Schema 2020-12 (the dialect of OpenAPI 3.1).
 *
 *   expectMatchesOpenApi('GET', '/admin/v1/providers/anthropic-prod', res.status, res.body);
 *
 * The document's schemas are added to Ajv once, as one schema whose `$id` is {@link COMPONENTS_ID}
 * (its `#/components/schemas/X` references rewritten to `<id>#/$defs/X`); each response's schema is
 * compiled the first time it is asked for, then cached.
 */

export const OPENAPI_DOCUMENT_PATH = join(__dirname, '..', 'openapi', 'admin-v1.json');

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
const COMPONENTS_ID = 'urn:gateway:admin-v1:components';
const SCHEMA_REF = '#/components/schemas/';
const RESPONSE_REF = '#/components/responses/';

type Json = Record<string, unknown>;

interface Operation {
  method: string;
  path: string;
  pattern: RegExp;
  /** The number of literal segments: a literal path wins over a template that also matches. */
  literals: number;
  responses: Json;
}

interface Loaded {
  document: Json;
  operations: Operation[];
  ajv: Ajv2020;
  validators: Map<string, ValidateFunction>;
}

let loaded: Loaded | undefined;

function load(): Loaded {
  if (loaded) return loaded;
  const document = JSON.parse(readFileSync(OPENAPI_DOCUMENT_PATH, 'utf8')) as Json;
  const paths = (document.paths ?? {}) as Record<string, Json>;
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries(paths)) {
    for (const method of METHODS) {
      const operation = item[method] as Json | undefined;
      if (!operation) continue;
      operations.push({
        method: method.toUpperCase(),
        path,
        pattern: templatePattern(path),
        literals: path.split('/').filter((segment) => segment !== '' && !segment.includes('{')).length,
        responses: (operation.responses ?? {}) as Json,
      });
    }
  }
  operations.sort((a, b) => b.literals - a.literals);

  // Strict about keywords (a misspelt one fails), not about style: the document lists `required`
  // fields beside an `allOf` that declares them, and types a few schemas only through their `$ref`.
  const ajv = new Ajv2020({
    allErrors: true,
    strictSchema: true,
    strictNumbers: true,
    strictTypes: false,
    strictRequired: false,
    allowUnionTypes: true,
  });
  addFormats(ajv);
  // OpenAPI's own keywords: annotations for validation. (Ajv's `discriminator` option would refuse
  // `mapping`; `oneOf` decides alone, the `provider` constants keeping its branches apart.)
  for (const keyword of ['discriminator', 'example', 'externalDocs', 'xml']) ajv.addKeyword({ keyword });
  const components = (document.components ?? {}) as Json;
  ajv.addSchema({ $id: COMPONENTS_ID, $defs: rewriteRefs(components.schemas ?? {}) });

  loaded = { document, operations, ajv, validators: new Map() };
  return loaded;
}

/** `/admin/v1/providers/{slug}` → a pattern matching `/admin/v1/providers/anthropic-prod`. */
function templatePattern(template: string): RegExp {
  const source = template
    .split(/(\{[^}/]+\})/)
    .map((part) => (/^\{[^}/]+\}$/.test(part) ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`);
}

/** A copy of `value` whose `#/components/schemas/X` references point into the schema added to Ajv. */
function rewriteRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(rewriteRefs);
  if (typeof value !== 'object' || value === null) return value;
  const copy: Json = {};
  for (const [key, child] of Object.entries(value)) {
    copy[key] =
      key === '$ref' && typeof child === 'string' && child.startsWith(SCHEMA_REF)
        ? `${COMPONENTS_ID}#/$defs/${child.slice(SCHEMA_REF.length)}`
        : rewriteRefs(child);
  }
  return copy;
}

/** Every operation the document describes, as `{ method: 'GET', path: '/admin/v1/providers/{slug}' }`. */
export function documentedOperations(): { method: string; path: string }[] {
  return load().operations.map(({ method, path }) => ({ method, path }));
}

/** The documented operation a concrete request path (query string ignored) falls under, if any. */
export function findOperation(method: string, path: string): { method: string; path: string } | undefined {
  const found = operationFor(method, path);
  return found && { method: found.method, path: found.path };
}

function operationFor(method: string, path: string): Operation | undefined {
  const bare = path.split(/[?#]/, 1)[0] ?? path;
  const upper = method.toUpperCase();
  return load().operations.find((op) => op.method === upper && op.pattern.test(bare));
}

/**
 * Throws unless `body` is what the admin API's OpenAPI document says `method path` answers with
 * `status` (or, if that status is not listed, its `default` response). `path` is the concrete path
 * requested, such as `/admin/v1/providers/anthropic-prod/models`. The error names the method, path,
 * status and every schema violation Ajv found.
 */
export function expectMatchesOpenApi(method: string, path: string, status: number, body: unknown): void {
  const where = `${method.toUpperCase()} ${path} → ${status}`;
  const operation = operationFor(method, path);
  if (!operation) throw new Error(`${where}: no such operation in the OpenAPI document.`);
  const key = Object.hasOwn(operation.responses, String(status))
    ? String(status)
    : Object.hasOwn(operation.responses, 'default')
      ? 'default'
      : undefined;
  if (key === undefined) {
    throw new Error(`${where}: the OpenAPI document lists no ${status} (nor default) answer for ${operation.path}.`);
  }
  const validate = validatorFor(operation, key);
  if (validate === null) {
    if (body === undefined || body === '' || body === null) return;
    throw new Error(`${where}: the OpenAPI document gives this answer no body, but one came.`);
  }
  if (!validate(body)) {
    const errors = (validate.errors ?? []).map(describe).join('\n  ');
    throw new Error(
      `${where} does not match the OpenAPI document (${operation.method} ${operation.path}, response ${key}):\n  ${errors}\nBody: ${preview(body)}`,
    );
  }
}

/** The compiled schema of one response (null: the response has no JSON body), compiled once. */
function validatorFor(operation: Operation, key: string): ValidateFunction | null {
  const { document, ajv, validators } = load();
  const cacheKey = `${operation.method} ${operation.path} ${key}`;
  const cached = validators.get(cacheKey);
  if (cached) return cached;
  let response = operation.responses[key] as Json;
  const ref = response.$ref;
  if (typeof ref === 'string') {
    if (!ref.startsWith(RESPONSE_REF)) throw new Error(`${cacheKey}: cannot follow ${ref}.`);
    const responses = ((document.components as Json | undefined)?.responses ?? {}) as Json;
    const target = responses[ref.slice(RESPONSE_REF.length)] as Json | undefined;
    if (!target) throw new Error(`${cacheKey}: ${ref} is not in the document.`);
    response = target;
  }
  const content = response.content as Record<string, Json> | undefined;
  const schema = content?.['application/json']?.schema;
  if (schema === undefined) return null;
  const validate = ajv.compile(rewriteRefs(schema) as Json);
  validators.set(cacheKey, validate);
  return validate;
}

function describe(error: ErrorObject): string {
  const at = error.instancePath === '' ? '(body)' : error.instancePath;
  const params = Object.keys(error.params).length > 0 ? ` ${JSON.stringify(error.params)}` : '';
  return `${at} ${error.message ?? 'is not valid'}${params} [${error.schemaPath}]`;
}

function preview(body: unknown): string {
  const text = JSON.stringify(body) ?? String(body);
  return text.length > 2000 ? `${text.slice(0, 2000)}…` : text;
}

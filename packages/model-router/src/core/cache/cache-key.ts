/**
 * The response cache's key: a SHA-256 over a canonical form of everything that can change an
 * answer, and of who may receive it. No web framework, no I/O.
 */
import { createHash } from 'node:crypto';
import { RawJsonString } from '../raw-json-string';

/**
 * Whose answers an entry is: one caller's, or every caller's of a provider whose record says
 * `"cache": {"scope": "shared"}`.
 *
 * - `user`: an API key's `user.user_id` (or, without one, its `user.sub`): every key of that
 *   user shares the entries;
 * - `key`: an API key whose user has neither (its subject, `key:<record id>`);
 * - `token`: an identity-provider token's `iss` and `sub`;
 * - `caller`: any other authenticated caller, by the host's own id of it;
 * - `shared`: everyone.
 */
export type CacheScope =
  | { kind: 'user'; id: string }
  | { kind: 'key'; id: string }
  | { kind: 'token'; iss: string; sub: string }
  | { kind: 'caller'; id: string }
  | { kind: 'shared' };

/** Everything the key is made of. */
export interface CacheKeyMaterial {
  /** The route, `chat.completions` or `messages`, with a native route's query string (`messages?beta=true`). */
  route: string;
  /** The provider's slug. */
  provider: string;
  /** The model sent upstream (the body's model without its `@slug/` prefix). */
  model: string;
  /** The request body as the client sent it (the fields of {@link EXCLUDED_BODY_FIELDS} are left out here). */
  body: unknown;
  /** Request headers that change the answer: the merged `anthropic-beta` names and `anthropic-version`. */
  headers: { beta?: string; version: string };
  /** Who may receive the answer. */
  scope: CacheScope;
}

/**
 * Body fields that never change the answer, only how it is delivered: `stream` and
 * `stream_options`. `model` is replaced by the provider slug and the resolved model, so
 * `"@p/m"` and `"m"` with `x-gateway-provider: p` share entries. Every other field, known or
 * not, is part of the key (see docs/decisions.md).
 */
export const EXCLUDED_BODY_FIELDS: readonly string[] = ['stream', 'stream_options', 'model'];

/** Deepest nesting the canonical form walks; the router refuses deeper bodies before this (default 128). */
const MAX_DEPTH = 512;

/**
 * JSON with object keys sorted (by UTF-16 code units) and no whitespace, so two values that
 * `JSON.parse` alike, whatever their key order, have one form. `undefined` members are left out as
 * `JSON.stringify` does; a value deeper than 512 levels throws a `RangeError`. A
 * {@link RawJsonString} is written as the string it is.
 */
export function canonicalJson(value: unknown): string {
  const out = new CanonicalText();
  write(value, 0, out);
  return out.text;
}

/** Text written out in parts, whole tokens at a time, to a sink (a hash) when there is one. */
class CanonicalText {
  text = '';
  constructor(private readonly sink?: (part: string | Buffer) => void) {}

  put(token: string): void {
    this.text += token;
    if (this.sink !== undefined && this.text.length >= 64 * 1024) this.flush();
  }

  /** A raw string: the bytes it refers to go to the sink as they are (they are its JSON text). */
  raw(string: RawJsonString): void {
    if (this.sink === undefined) {
      this.text += `"${string.toString()}"`;
      return;
    }
    this.text += '"';
    this.flush();
    this.sink(string.bytes);
    this.text = '"';
  }

  flush(): void {
    // Stryker disable next-line OptionalChaining: flush() only runs with a sink (put and raw check for one first)
    if (this.text !== '') this.sink?.(this.text);
    this.text = '';
  }
}

function write(value: unknown, depth: number, out: CanonicalText): void {
  if (depth > MAX_DEPTH) throw new RangeError('The value is nested too deeply for the cache key.');
  if (value instanceof RawJsonString) return out.raw(value);
  if (value === null || typeof value !== 'object') {
    const text = JSON.stringify(value);
    // undefined, functions and symbols: as JSON.stringify writes them inside an array.
    return out.put(text === undefined ? 'null' : text);
  }
  if (Array.isArray(value)) {
    out.put('[');
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out.put(',');
      write(value[i], depth + 1, out);
    }
    return out.put(']');
  }
  const object = value as Record<string, unknown>;
  const keys = Object.keys(object).sort();
  out.put('{');
  let first = true;
  for (const key of keys) {
    const member = object[key];
    if (member === undefined || typeof member === 'function' || typeof member === 'symbol') continue;
    out.put(`${first ? '' : ','}${JSON.stringify(key)}:`);
    write(member, depth + 1, out);
    first = false;
  }
  out.put('}');
}

/** The body without the fields of {@link EXCLUDED_BODY_FIELDS}; a body that is not an object is kept whole. */
export function keyedBody(body: unknown): unknown {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return body;
  const kept: Record<string, unknown> = {};
  for (const key of Object.keys(body)) {
    if (!EXCLUDED_BODY_FIELDS.includes(key)) kept[key] = (body as Record<string, unknown>)[key];
  }
  return kept;
}

/** The scope's canonical value: every kind is a tagged object, so no two kinds can collide. */
function scopeValue(scope: CacheScope): unknown {
  switch (scope.kind) {
    case 'shared':
      return 'shared';
    case 'token':
      return { kind: 'token', iss: scope.iss, sub: scope.sub };
    default:
      return { kind: scope.kind, id: scope.id };
  }
}

/**
 * The cache key of a request: 64 hexadecimal characters, the SHA-256 of the canonical JSON of
 * the material (version 1 of the form), hashed as it is written (a raw string from the bytes it
 * refers to, never copied). Equal exactly when the route, provider, model, keyed body,
 * headers and scope are equal.
 */
export function cacheKey(material: CacheKeyMaterial): string {
  const hash = createHash('sha256');
  const out = new CanonicalText((part) => hash.update(part));
  write(
    {
      v: 1,
      route: material.route,
      provider: material.provider,
      model: material.model,
      headers: { beta: material.headers.beta ?? null, version: material.headers.version },
      scope: scopeValue(material.scope),
      body: keyedBody(material.body),
    },
    0,
    out,
  );
  out.flush();
  return hash.digest('hex');
}

/** What the key needs to know about an authenticated caller (the shape `@gw/identity-forwarding` sets). */
export interface CallerIdentityLike {
  method?: unknown;
  subject?: unknown;
  claims?: Readonly<Record<string, unknown>>;
}

const text = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);

/**
 * The caller's scope: an API key's `user.user_id` (else its `user.sub`, else the key's subject), an identity-provider
 * token's `iss` + `sub` (else its subject, which names the token), else `fallbackId` (the host's
 * own id of the caller). Undefined when the caller is unknown: such a request is not cached.
 */
export function callerScope(
  identity: CallerIdentityLike | undefined,
  fallbackId?: string,
): Exclude<CacheScope, { kind: 'shared' }> | undefined {
  if (identity && typeof identity === 'object') {
    const subject = text(identity.subject);
    if (identity.method === 'api_key') {
      const userId = text(identity.claims?.user_id) ?? text(identity.claims?.sub);
      if (userId !== undefined) return { kind: 'user', id: userId };
      if (subject !== undefined) return { kind: 'key', id: subject };
    }
    if (identity.method === 'identity_token') {
      const sub = text(identity.claims?.sub);
      if (sub !== undefined)
        // Stryker disable next-line OptionalChaining: sub is only defined when the claims are
        return { kind: 'token', iss: typeof identity.claims?.iss === 'string' ? identity.claims.iss : '', sub };
      // else by its subject, below
    }
    if (subject !== undefined) return { kind: 'caller', id: subject };
  }
  const fallback = text(fallbackId);
  return fallback === undefined ? undefined : { kind: 'caller', id: fallback };
}

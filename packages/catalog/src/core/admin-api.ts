import { rejectUnknownOptions } from '@gw/options';
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import type { AdminAccess, AdminPrincipal } from './admin-access';
import type { ConfigRecords } from './config-records';
import { TooManyAttemptsError } from './sign-in-guard';
import {
  AdminCredentialsMissingError,
  AdminRouteNotFoundError,
  AdminInternalError,
  BodyTooLargeError,
  CatalogError,
  CatalogUnavailableError,
  InvalidJsonError,
  InvalidRecordError,
  ManagedByConfigFileError,
  MethodNotAllowedError,
  RecordNotFoundError,
  RoleForbiddenError,
  SlugTakenError,
  UnsupportedMediaTypeError,
  UpstreamConnectionNotFoundError,
} from './errors';
import { RECORD_KINDS, type RecordKind } from './records';
import type { CatalogStore, PublicRecord } from './store';
import type { ToolPinView } from './tool-pins';
import type { ConnectionSummary } from '@gw/upstream-auth';

/** The question of `GET /admin/v1/access/explain`. */
export interface AccessQuestion {
  /** The user id (`user=`). Default: none. */
  user?: string;
  /** The groups (`groups=a,b`). Default `[]`. */
  groups: string[];
  /** The API key id (`apiKey=`). Default: none. */
  apiKey?: string;
  /** The resource as written: `@<slug>/<model>`, `mcp:<server>`, `mcp:<server>/<tool>` or `integration:<slug>`. */
  resource: string;
}

/** The answer of `GET /admin/v1/access/explain`. */
export interface AccessAnswer {
  allowed: boolean;
  mode: string;
  policies: string[];
  reason: string;
}
import type { CatalogDatabase } from './database';
import { queryRequestRecords, usageSummary } from './request-log';

/** One model of a provider's list, as `GET /admin/v1/providers/<slug>/models` answers it. */
export interface AdminModel {
  id: string;
  enabled: boolean;
  display_name?: string;
  created_at?: string;
}

/** A provider's model list as the admin API answers it. */
export interface AdminModelList {
  data: AdminModel[];
  /** `provider`: from the provider's own `GET /v1/models`; `bundled`: the gateway's list (the provider could not be asked). */
  source: 'provider' | 'bundled';
}

/** Options of {@link createAdminApi}. */
export interface AdminApiOptions {
  /** The catalog's records in the database. Required. */
  store: CatalogStore;
  /** Who may call it. Required. */
  access: AdminAccess;
  /** The config file's records: shown, never changed. Default: none. */
  configRecords?: ConfigRecords;
  /**
   * Called after every successful write, before the answer: the host reloads its snapshot here, so
   * the next request on this instance sees the change. Default: none.
   */
  afterWrite?: (kind: RecordKind) => Promise<void>;
  /**
   * An asynchronous check of a creation (`POST`) or a change (`PATCH`) before the store writes it,
   * for what needs a look outside the database (a virtual server's members' tool lists): `record`
   * is the body of a creation, or the stored record's fields with the change's fields over them;
   * `changed` names the fields the request gives (`version` left out). Throws a
   * {@link CatalogError} to refuse the write. It runs before the store's own validation, so it
   * must accept (return) for a record it cannot read. Default: none.
   */
  beforeWrite?: (kind: RecordKind, record: Record<string, unknown>, changed: readonly string[]) => Promise<void>;
  /** The model list of a provider, with `enabled` per model; undefined when there is no such provider. Default: none (404). */
  providerModels?: (slug: string) => AdminModelList | undefined | Promise<AdminModelList | undefined>;
  /** Largest request body, in bytes. Default 1048576 (1 MiB). */
  bodyLimitBytes?: number;
  /**
   * Answers `GET /admin/v1/access/explain` with the gateway's own access decision; throws an error
   * with `code: "invalid_resource"` for a resource it cannot read. Default: none (404).
   */
  explainAccess?: (question: AccessQuestion) => AccessAnswer;
  /**
   * Tool pinning of MCP servers: `GET /admin/v1/mcp-servers/<slug>/tools` and
   * `POST /admin/v1/mcp-servers/<slug>/tools/<name>/approve`. Default: none (404).
   */
  toolPins?: {
    list(server: string): Promise<ToolPinView[]>;
    /** Approves the tool only when `digest` (the one reviewed) is still its last seen digest. */
    approve(server: string, name: string, digest: string, actor: string): Promise<ToolPinView>;
  };
  /**
   * The database holding request records (`gw_requests`): `GET /admin/v1/requests` and
   * `GET /admin/v1/usage` read it. Default: none (those routes answer 404).
   */
  requestRecords?: CatalogDatabase;
  /**
   * `GET` and `PUT /admin/v1/access/mode` (CONTRACT section 10): `read` answers the mode in force
   * and where it comes from; `write` sets it (the host validates `mode`, throws
   * {@link InvalidRecordError} or {@link ManagedByConfigFileError}); the answer of a `PUT` is
   * `read`'s after `afterWrite`. Only an `admin` may write it. Default: none (404).
   */
  accessMode?: {
    read(): Promise<Record<string, unknown>>;
    write(mode: unknown, actor: string): Promise<unknown>;
  };
  /**
   * Answers `GET /admin/v1/limits/<slug>/status?user=<id>` with the limit's counters (for `per:
   * "each"`, the user's; `apiKey=<id>` for a key without a user); undefined when there is no such
   * limit. Default: none (404).
   */
  limitStatus?: (slug: string, counterOf: { user?: string; apiKey?: string }) => Promise<unknown>;
  /**
   * The upstream connections of MCP servers (CONTRACT section 15):
   * `GET /admin/v1/mcp-servers/<slug>/connections` (`limit`, default 100, at most 500; `after`, the
   * last user id of the page before) and `DELETE /admin/v1/mcp-servers/<slug>/connections/<user>`.
   * `list` is a store's `listConnections`; `disconnect` deletes the connection and revokes its token
   * at the server, resolving false when there was none. The admin API writes the audit line
   * (`upstream_disconnected`, by the admin): `disconnect` must not. Default: none (404).
   */
  upstreamConnections?: {
    list(server: string, page: { limit: number; after?: string }): Promise<ConnectionSummary[]>;
    disconnect(userId: string, server: string, actor: string): Promise<boolean>;
  };
  /** Called with every failure that is not the admin API's own (answered `503 catalog_unavailable`), for the host's log. Default: none. */
  onInternalError?: (error: unknown) => void;
}

/** The admin API's handler: `path` is below the mount point (`/providers/claude?x=1`). Never rejects. */
export type AdminApiHandler = (req: IncomingMessage, res: ServerResponse, path: string) => Promise<void>;

/** Most upstream connections one page of `GET /admin/v1/mcp-servers/<slug>/connections` answers. */
export const MAX_CONNECTIONS_LIMIT = 500;

/** An upstream connection as the admin API answers it: who, since when, what scopes, no token. */
export interface AdminUpstreamConnection {
  object: 'upstream_connection';
  user_id: string;
  server: string;
  issuer: string;
  scopes: string[];
  /** ISO 8601. */
  createdAt: string;
  /** ISO 8601, or null when the server did not say. */
  expiresAt: string | null;
  /** ISO 8601, or null when never refreshed. */
  lastRefreshedAt: string | null;
}

/** A connection summary as {@link AdminUpstreamConnection}. */
export function adminUpstreamConnection(summary: ConnectionSummary): AdminUpstreamConnection {
  const at = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());
  return {
    object: 'upstream_connection',
    user_id: summary.userId,
    server: summary.server,
    issuer: summary.issuer,
    scopes: summary.scopes,
    createdAt: new Date(summary.createdAt).toISOString(),
    expiresAt: at(summary.expiresAt),
    lastRefreshedAt: at(summary.lastRefreshedAt),
  };
}

/** Whether a request body is a JSON object (a record or a change); anything else is the store's to refuse. */
function isRecordBody(body: unknown): body is Record<string, unknown> {
  return typeof body === 'object' && body !== null && !Array.isArray(body);
}

/** Most records an audit query answers. */
export const MAX_AUDIT_LIMIT = 500;
/** Deepest nesting of a request body, in objects and arrays. */
const MAX_BODY_DEPTH = 32;

const OBJECT_NAMES = new Map<RecordKind, string>([
  ['providers', 'provider'],
  ['mcp-servers', 'mcp_server'],
  ['prompts', 'prompt'],
  ['api-keys', 'api_key'],
  ['policies', 'policy'],
  ['limits', 'limit'],
  ['configs', 'config'],
  ['virtual-servers', 'virtual_server'],
]);

/** Most groups one explain question names. */
const MAX_EXPLAIN_GROUPS = 100;

let openApiDocument: string | undefined;
/** The OpenAPI document of the admin API, as shipped with the package. */
export function adminOpenApiDocument(): string {
  openApiDocument ??= readFileSync(join(__dirname, '..', '..', 'openapi', 'admin-v1.json'), 'utf8');
  return openApiDocument;
}

/**
 * The admin API (CONTRACT section 8) without a web framework: list, read, create, update (on
 * `version`) and delete providers, MCP servers and prompts; create and revoke API keys; the audit
 * log; a provider's model list. Secrets are write-only. Records of the config file are listed and
 * read like the others but never changed.
 */
export function createAdminApi(options: AdminApiOptions): AdminApiHandler {
  if (!options?.store || !options.access) throw new TypeError('createAdminApi needs { store, access }.');
  checkAdminApiOptions(options);
  const limit = options.bodyLimitBytes ?? 1024 * 1024;
  if (!Number.isInteger(limit) || limit <= 0)
    throw new TypeError('bodyLimitBytes must be a positive whole number of bytes.');
  const { store, access, configRecords } = options;

  /** API keys as answered: `name`, `expiresAt` and `lastUsedAt` always present (null when none). */
  const withKeyUse = async (records: PublicRecord[]): Promise<PublicRecord[]> => {
    const lastUse = await store.apiKeyLastUse();
    return records.map((record) => ({
      ...record,
      name: record.name ?? null,
      expiresAt: record.expiresAt ?? null,
      lastUsedAt: lastUse.get(record.id) ?? null,
    }));
  };

  const written = async (kind: RecordKind) => {
    await options.afterWrite?.(kind);
  };

  async function route(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    // A principal the host vouches for (the console's session) still needs admin access enabled.
    const trusted = trustedPrincipal(req);
    if (trusted) access.assertEnabled();
    const principal = trusted ?? (await access.authorizeRequest(req));
    const question = path.indexOf('?');
    const query = new URLSearchParams(question === -1 ? '' : path.slice(question + 1));
    const segments = (question === -1 ? path : path.slice(0, question)).split('/').filter((s) => s !== '');
    if (segments.length > 5) throw new AdminRouteNotFoundError('No admin route has this path.');
    const method = req.method ?? 'GET';
    const [first, second, third, fourth, fifth] = segments.map(decodeSegment);
    checkRole(principal, method, first === 'access' ? 'admin' : 'operator');

    if (first === 'access' && second === 'mode' && segments.length === 2 && options.accessMode) {
      allow(method, ['GET', 'PUT']);
      if (method === 'GET') {
        send(res, 200, await options.accessMode.read());
        return;
      }
      const body = await readAdminJsonBody(req, limit);
      if (typeof body !== 'object' || body === null || Array.isArray(body))
        throw new InvalidRecordError('The body must be {"mode": "open" | "report" | "policies"}.', null);
      const unknown = Object.keys(body).find((k) => k !== 'mode');
      if (unknown !== undefined)
        throw new InvalidRecordError(`Unknown field "${unknown.slice(0, 64)}".`, unknown.slice(0, 64));
      await options.accessMode.write((body as { mode?: unknown }).mode, principal.actor);
      // Answered once this instance applies it.
      await written('settings');
      send(res, 200, await options.accessMode.read());
      return;
    }

    if (first === 'access' && second === 'explain' && segments.length === 2 && options.explainAccess) {
      allow(method, ['GET']);
      const resource = query.get('resource');
      if (resource === null || resource === '') {
        throw new InvalidRecordError('resource is required, for example "@anthropic/claude-sonnet-4-5".', 'resource');
      }
      const groups = (query.get('groups') ?? '')
        .split(',')
        .map((g) => g.trim())
        .filter((g) => g !== '');
      if (groups.length > MAX_EXPLAIN_GROUPS) {
        throw new InvalidRecordError(`groups names more than ${MAX_EXPLAIN_GROUPS} groups.`, 'groups');
      }
      const question: AccessQuestion = { groups, resource };
      const user = query.get('user');
      if (user !== null && user !== '') question.user = user;
      const apiKey = query.get('apiKey');
      if (apiKey !== null && apiKey !== '') question.apiKey = apiKey;
      let answer: AccessAnswer;
      try {
        answer = options.explainAccess(question);
      } catch (error) {
        if ((error as { code?: unknown })?.code === 'invalid_resource') {
          throw new InvalidRecordError((error as Error).message, 'resource');
        }
        throw error;
      }
      send(res, 200, answer);
      return;
    }
    if (first === 'mcp-servers' && second !== undefined && third === 'tools' && options.toolPins) {
      if (configRecords?.get('mcp-servers', second) === undefined) await store.get('mcp-servers', second);
      if (segments.length === 3) {
        allow(method, ['GET']);
        send(res, 200, { object: 'list', data: await options.toolPins.list(second) });
        return;
      }
      if (segments.length === 5 && fourth !== undefined && fifth === 'approve') {
        allow(method, ['POST']);
        // A POST without a body names no digest: 400 naming it (not 415 for the missing content type).
        const bodyless =
          (req as IncomingMessage & { [PARSED_BODY]?: unknown })[PARSED_BODY] === undefined &&
          req.headers['transfer-encoding'] === undefined &&
          Number(req.headers['content-length'] ?? 0) === 0;
        const body = bodyless ? undefined : await readAdminJsonBody(req, limit);
        const digest =
          typeof body === 'object' && body !== null && !Array.isArray(body)
            ? (body as Record<string, unknown>).digest
            : undefined;
        if (typeof digest !== 'string' || digest === '') {
          throw new InvalidRecordError(
            'digest is required: the currentDigest of the tool as reviewed, as {"digest": "sha256-tool:…"}.',
            'digest',
          );
        }
        const approved = await options.toolPins.approve(second, fourth, digest, principal.actor);
        await written('mcp-servers');
        send(res, 200, approved);
        return;
      }
      throw new AdminRouteNotFoundError('No admin route has this path.');
    }
    if (first === 'mcp-servers' && second !== undefined && third === 'connections' && options.upstreamConnections) {
      // An unknown server is 404 not_found, as for its record.
      if (configRecords?.get('mcp-servers', second) === undefined) await store.get('mcp-servers', second);
      if (segments.length === 3) {
        allow(method, ['GET']);
        const limitParam = query.get('limit');
        const count = limitParam === null ? 100 : Number(limitParam);
        if (!Number.isInteger(count) || count < 1 || count > MAX_CONNECTIONS_LIMIT)
          throw new InvalidRecordError(`limit must be a whole number from 1 to ${MAX_CONNECTIONS_LIMIT}.`, 'limit');
        const after = query.get('after') ?? undefined;
        if (after !== undefined && (after === '' || after.length > 256))
          throw new InvalidRecordError('after must be the user_id of the last connection of the page before.', 'after');
        // One more than asked says whether there is a next page.
        const page = await options.upstreamConnections.list(second, { limit: count + 1, after });
        send(res, 200, {
          object: 'list',
          data: page.slice(0, count).map(adminUpstreamConnection),
          has_more: page.length > count,
        });
        return;
      }
      if (segments.length === 4 && fourth !== undefined) {
        allow(method, ['DELETE']);
        if (!(await options.upstreamConnections.disconnect(fourth, second, principal.actor)))
          throw new UpstreamConnectionNotFoundError(
            `User "${fourth.slice(0, 64)}" has no connection to MCP server "${second.slice(0, 64)}".`,
          );
        await store.auditUpstreamConnection(principal.actor, 'upstream_disconnected', second, fourth);
        send(res, 200, { object: 'upstream_connection', user_id: fourth, server: second, deleted: true });
        return;
      }
      throw new AdminRouteNotFoundError('No admin route has this path.');
    }
    if (segments.length > 3) throw new AdminRouteNotFoundError('No admin route has this path.');
    if (first === 'limits' && second !== undefined && third === 'status' && options.limitStatus) {
      allow(method, ['GET']);
      const counterOf: { user?: string; apiKey?: string } = {};
      for (const name of ['user', 'apiKey'] as const) {
        const value = query.get(name);
        if (value !== null && value !== '') {
          if (value.length > 256) throw new InvalidRecordError(`${name} is longer than 256 characters.`, name);
          counterOf[name] = value;
        }
      }
      const status = await options.limitStatus(second, counterOf);
      if (status === undefined) throw new RecordNotFoundError(`No limit "${second.slice(0, 64)}".`);
      send(res, 200, status);
      return;
    }

    if (first === 'openapi.json' && segments.length === 1) {
      allow(method, ['GET']);
      res.statusCode = 200;
      res.setHeader('content-type', 'application/json; charset=utf-8');
      res.setHeader('cache-control', 'no-store');
      res.end(adminOpenApiDocument());
      return;
    }
    if (first === 'audit' && segments.length === 1) {
      allow(method, ['GET']);
      const record = query.get('record') ?? undefined;
      if (
        record !== undefined &&
        !/^(providers|mcp-servers|prompts|api-keys|policies|limits|configs|virtual-servers|settings|console|admin-api|oauth-grants|oauth-clients)\/[^/]{1,128}$/.test(
          record,
        )
      ) {
        throw new InvalidRecordError(
          'record must be <kind>/<slug-or-id>, for example "providers/anthropic-prod".',
          'record',
        );
      }
      const limitParam = query.get('limit');
      const count = limitParam === null ? 100 : Number(limitParam);
      if (!Number.isInteger(count) || count < 1 || count > MAX_AUDIT_LIMIT) {
        throw new InvalidRecordError(`limit must be a whole number from 1 to ${MAX_AUDIT_LIMIT}.`, 'limit');
      }
      send(res, 200, { object: 'list', data: await store.auditLog(record, count) });
      return;
    }
    if ((first === 'requests' || first === 'usage') && segments.length === 1 && options.requestRecords) {
      allow(method, ['GET']);
      const db = options.requestRecords;
      send(res, 200, first === 'requests' ? await queryRequestRecords(db, query) : await usageSummary(db, query));
      return;
    }
    const kind = RECORD_KINDS.find((k) => k === first);
    if (kind === undefined || (third !== undefined && !(kind === 'providers' && third === 'models'))) {
      throw new AdminRouteNotFoundError('No admin route has this path.');
    }

    if (second === undefined) {
      allow(method, ['GET', 'POST']);
      if (method === 'GET') {
        const records = [...(configRecords?.list(kind) ?? []), ...(await store.list(kind))];
        send(res, 200, { object: 'list', data: kind === 'api-keys' ? await withKeyUse(records) : records });
        return;
      }
      const body = await readAdminJsonBody(req, limit);
      const name = kind === 'prompts' ? 'id' : 'slug';
      const named = typeof body === 'object' && body !== null ? (body as Record<string, unknown>)[name] : undefined;
      if (kind !== 'api-keys' && typeof named === 'string' && configRecords?.has(kind, named)) {
        throw new SlugTakenError(`"${named.slice(0, 64)}" is used by a record of the config file.`, name);
      }
      if (options.beforeWrite && isRecordBody(body)) await options.beforeWrite(kind, body, Object.keys(body));
      const created = await store.create(kind, body, principal.actor);
      await written(kind);
      send(res, 201, kind === 'api-keys' ? { ...(await withKeyUse([created]))[0], key: created.key } : created);
      return;
    }

    if (third === 'models') {
      allow(method, ['GET']);
      const models = await options.providerModels?.(second);
      if (!models) throw new RecordNotFoundError(`No provider "${second.slice(0, 64)}".`);
      send(res, 200, { object: 'list', data: models.data, source: models.source });
      return;
    }

    allow(method, ['GET', 'PATCH', 'DELETE']);
    const fromConfig = configRecords?.get(kind, second);
    if (method === 'GET') {
      const record = fromConfig ?? (await store.get(kind, second));
      send(res, 200, kind === 'api-keys' ? (await withKeyUse([record]))[0] : record);
      return;
    }
    if (fromConfig) {
      throw new ManagedByConfigFileError(
        `"${second.slice(0, 64)}" is defined in the config file (GATEWAY_CONFIG): change it there.`,
      );
    }
    if (method === 'PATCH') {
      const body = await readAdminJsonBody(req, limit);
      if (options.beforeWrite && isRecordBody(body)) {
        const { version: _version, ...changes } = body;
        const {
          id: _id,
          version: _stored,
          createdAt: _c,
          updatedAt: _u,
          source: _s,
          ...current
        } = await store.get(kind, second);
        await options.beforeWrite(kind, { ...current, ...changes }, Object.keys(changes));
      }
      const updated = await store.update(kind, second, body, principal.actor);
      await written(kind);
      send(res, 200, kind === 'api-keys' ? (await withKeyUse([updated]))[0] : updated);
      return;
    }
    const id = (await store.get(kind, second)).id;
    await store.delete(kind, second, principal.actor);
    await written(kind);
    send(res, 200, { id, object: OBJECT_NAMES.get(kind), deleted: true });
  }

  return async function adminApi(req, res, path) {
    try {
      await route(req, res, path);
    } catch (error) {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      if (error instanceof CatalogError) {
        sendError(res, error);
        return;
      }
      options.onInternalError?.(error);
      sendError(
        res,
        isDatabaseUnavailable(error)
          ? new CatalogUnavailableError("The catalog's database cannot be reached just now; retry shortly.")
          : new AdminInternalError('The admin API failed to handle the request.'),
      );
    }
  };
}

/**
 * Refuses a change the principal's role does not allow (`403 role_forbidden`): a `viewer` changes
 * nothing; writes that `needs` an `admin` (a gateway setting) are refused to an `operator`. Reads
 * are every role's.
 */
export function checkRole(principal: AdminPrincipal, method: string, needs: 'operator' | 'admin'): void {
  if (method === 'GET' || method === 'HEAD') return;
  const role = principal.role ?? 'admin';
  if (role === 'admin') return;
  if (role === 'operator' && needs === 'operator') return;
  throw new RoleForbiddenError(
    role === 'viewer'
      ? 'The signed-in role "viewer" may only read.'
      : 'The signed-in role "operator" may not change gateway settings (access mode, OAuth): an "admin" may.',
  );
}

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
]);

/**
 * Whether an error means the database cannot be reached (then `503 catalog_unavailable`, worth a
 * retry) rather than a fault of the gateway (`500 internal_error`): a network error, a PostgreSQL
 * connection exception (SQLSTATE class 08), a shutdown (57P01–57P03), or the pool's timeouts.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  if (typeof code === 'string' && (NETWORK_CODES.has(code) || code.startsWith('08') || /^57P0[123]$/.test(code))) {
    return true;
  }
  const message = error instanceof Error ? error.message : '';
  return /Connection terminated|timeout exceeded when trying to connect|Query read timeout|connection is closed|Client has encountered a connection error/i.test(
    message,
  );
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new AdminRouteNotFoundError('The path is not valid percent-encoding.');
  }
}

function allow(method: string, methods: readonly string[]): void {
  if (!methods.includes(method)) {
    throw new MethodNotAllowedError(`This admin route takes ${methods.join(', ')}.`);
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.setHeader('cache-control', 'no-store');
  res.setHeader('content-length', Buffer.byteLength(text));
  res.end(text);
}

/** Answers `error` in the generic error shape of CONTRACT section 7, with `param` naming the field. */
export function sendError(res: ServerResponse, error: CatalogError): void {
  if (error instanceof MethodNotAllowedError) res.setHeader('allow', error.message.replace(/^.* takes |\.$/g, ''));
  if (error instanceof TooManyAttemptsError) res.setHeader('retry-after', String(error.retryAfterSeconds));
  send(res, error.status, {
    error: { message: error.message, type: error.type, code: error.code, param: error.param },
  });
}

const PARSED_BODY = Symbol.for('gw.catalog.parsedBody');
const PRINCIPAL = Symbol('gw.catalog.adminPrincipal');

/**
 * Marks a request as made by an admin the host authenticated itself (the console's signed-in
 * session): the admin API skips its own credential check. Only code in the process can set it;
 * nothing a client sends can.
 */
export function withAdminPrincipal(req: IncomingMessage, principal: AdminPrincipal): void {
  (req as IncomingMessage & { [PRINCIPAL]?: AdminPrincipal })[PRINCIPAL] = principal;
}

function trustedPrincipal(req: IncomingMessage): AdminPrincipal | undefined {
  return (req as IncomingMessage & { [PRINCIPAL]?: AdminPrincipal })[PRINCIPAL];
}

/**
 * The admin a request was authenticated as ({@link withAdminPrincipal}), for routes the host
 * serves behind its one admin authentication; throws `401 admin_credentials_missing` when the
 * request was not authenticated (a route mounted outside that path fails closed).
 */
export function adminPrincipalOf(req: IncomingMessage): AdminPrincipal {
  const principal = trustedPrincipal(req);
  if (!principal)
    throw new AdminCredentialsMissingError('Send the admin key as "Authorization: Bearer <GATEWAY_ADMIN_KEY>".');
  return principal;
}

/** Marks a body a framework parsed already (Express's `express.json()`), so the admin API does not read the stream again. */
export function useParsedBody(req: IncomingMessage, body: unknown): void {
  (req as IncomingMessage & { [PARSED_BODY]?: unknown })[PARSED_BODY] = body;
}

/**
 * Reads an admin route's JSON body as the admin API does: the body an Express parser already read
 * ({@link useParsedBody}), else at most `limit` bytes sent as `application/json`. Throws
 * `UnsupportedMediaTypeError` (415 `unsupported_media_type`), `BodyTooLargeError` (413
 * `body_too_large`) or `InvalidJsonError` (400 `invalid_json`), and refuses JSON nested too deep.
 */
export async function readAdminJsonBody(req: IncomingMessage, limit: number): Promise<unknown> {
  const parsed = (req as IncomingMessage & { [PARSED_BODY]?: unknown })[PARSED_BODY];
  if (parsed !== undefined) {
    checkDepth(parsed);
    return parsed;
  }
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/json') throw new UnsupportedMediaTypeError('Send the body as application/json.');
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume();
    throw new BodyTooLargeError(`The body is larger than ${limit} bytes.`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      req.resume();
      throw new BodyTooLargeError(`The body is larger than ${limit} bytes.`);
    }
    chunks.push(chunk);
  }
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new InvalidJsonError('The body is not valid JSON.');
  }
  checkDepth(body);
  return body;
}

/** Refuses bodies nested deeper than {@link MAX_BODY_DEPTH}, iteratively (no recursion on client input). */
function checkDepth(body: unknown): void {
  const stack: [unknown, number][] = [[body, 1]];
  let visited = 0;
  while (stack.length > 0) {
    const [value, depth] = stack.pop() as [unknown, number];
    if (typeof value !== 'object' || value === null) continue;
    if (depth > MAX_BODY_DEPTH)
      throw new InvalidRecordError(`The body is nested deeper than ${MAX_BODY_DEPTH} levels.`, null);
    if (++visited > 100_000) throw new InvalidRecordError('The body has too many values.', null);
    for (const child of Object.values(value)) stack.push([child, depth + 1]);
  }
}

const ADMIN_API_OPTIONS = [
  'store',
  'access',
  'configRecords',
  'afterWrite',
  'beforeWrite',
  'providerModels',
  'bodyLimitBytes',
  'explainAccess',
  'toolPins',
  'requestRecords',
  'limitStatus',
  'onInternalError',
  'accessMode',
  'upstreamConnections',
];

/** Refuses an unknown option, or one of the wrong type, when the admin API is created. */
function checkAdminApiOptions(options: AdminApiOptions): void {
  rejectUnknownOptions(options, ADMIN_API_OPTIONS, 'adminApi');
  const has = (value: unknown, methods: readonly string[]) =>
    typeof value === 'object' &&
    value !== null &&
    methods.every((m) => typeof (value as Record<string, unknown>)[m] === 'function');
  if (!has(options.store, ['list', 'get', 'create', 'update', 'delete']))
    throw new TypeError('adminApi store must be a CatalogStore (new CatalogStore(database, secretBox)).');
  if (!has(options.access, ['authorize']))
    throw new TypeError('adminApi access must be an AdminAccess (new AdminAccess({ adminKey })).');
  if (options.configRecords !== undefined && !has(options.configRecords, ['get', 'list']))
    throw new TypeError('adminApi configRecords must be a ConfigRecords (new ConfigRecords(config)).');
  if (options.toolPins !== undefined && !has(options.toolPins, ['list', 'approve']))
    throw new TypeError(
      'adminApi toolPins must be an object with list(server) and approve(server, name, digest, actor), such as a ToolPins.',
    );
  if (options.upstreamConnections !== undefined && !has(options.upstreamConnections, ['list', 'disconnect']))
    throw new TypeError(
      'adminApi upstreamConnections must be an object with list(server, page) and disconnect(userId, server, actor).',
    );
  if (options.accessMode !== undefined && !has(options.accessMode, ['read', 'write']))
    throw new TypeError('adminApi accessMode must be an object with read() and write(mode, actor).');
  if (options.requestRecords !== undefined && !has(options.requestRecords, ['query', 'transaction']))
    throw new TypeError('adminApi requestRecords must be a catalog database (openPostgres(url) or openEmbedded()).');
  for (const name of [
    'afterWrite',
    'beforeWrite',
    'providerModels',
    'explainAccess',
    'limitStatus',
    'onInternalError',
  ] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'function')
      throw new TypeError(`adminApi ${name} must be a function.`);
  }
}

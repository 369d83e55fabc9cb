import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  CatalogError,
  adminPrincipalOf,
  checkRole,
  checkSecretsGivenForRoutingChange,
  readAdminJsonBody,
  InvalidRecordError,
  ManagedByConfigFileError,
  RecordNotFoundError,
  type CatalogSnapshot,
  type CatalogStore,
  secretHint,
} from '@gw/catalog';
import { oauthSettingsSchema, type OAuthConfig } from '../config/schema';

/** The largest body `PUT /admin/v1/oauth/settings` reads. */
const MAX_BODY_BYTES = 64 * 1024;

/** Where the OAuth settings in force come from. */
export type OAuthSettingsSource = 'config' | 'catalog' | 'none';

/** The OAuth settings in force: the config file's `oauth` object, else the catalog's `settings/oauth` record. */
export interface OAuthSettings {
  source: OAuthSettingsSource;
  /** What to build the authorization server from; undefined when OAuth is off. */
  config?: OAuthConfig;
  /** Changes whenever the settings do (the record's version), to tell when to rebuild. */
  version: string;
}

/**
 * The OAuth settings of a catalog snapshot (the config file's `oauth` wins). A stored record that
 * no longer validates turns OAuth off (fails closed) and is reported to `onInvalid`.
 */
export function oauthSettingsOf(
  fileConfig: OAuthConfig | undefined,
  snapshot: CatalogSnapshot | undefined,
  onInvalid: (message: string) => void,
): OAuthSettings {
  if (fileConfig) return { source: 'config', config: fileConfig, version: 'config' };
  const record = snapshot?.records.get('settings')?.get('oauth');
  if (!record) return { source: 'none', version: 'none' };
  const value = record.data.value as Record<string, unknown>;
  const login = value?.login as Record<string, unknown> | undefined;
  const withSecret =
    login?.type === 'oidc' ? { ...value, login: { ...login, clientSecret: record.secrets.clientSecret } } : value;
  const parsed = oauthSettingsSchema.safeParse(withSecret);
  if (!parsed.success) {
    onInvalid(describe(parsed.error.issues[0]));
    return { source: 'catalog', version: `invalid:${record.id}:${record.version}` };
  }
  return { source: 'catalog', config: parsed.data, version: `${record.id}:${record.version}` };
}

function describe(issue: { path: PropertyKey[]; message: string; code: string; keys?: string[] } | undefined): string {
  const where = (issue?.path ?? []).map(String).join('.') || '(root)';
  if (issue?.code === 'unrecognized_keys')
    return `oauth.${where}: unknown field "${String(issue.keys?.[0]).slice(0, 64)}".`;
  return `oauth.${where}: ${(issue?.message ?? 'is not valid').replace(/^Invalid input: /, '')}.`;
}

/** What {@link oauthSettingsRoutes} needs. */
export interface OAuthSettingsRoutesOptions {
  store: CatalogStore;
  /** The config file's `oauth` object: when set, the routes answer it and refuse changes. */
  fileConfig: OAuthConfig | undefined;
  /** `PUBLIC_BASE_URL` (required to turn OAuth on). */
  publicBaseUrl: string | undefined;
  /** Runs after a write, before the answer (reloads this instance's snapshot). */
  afterWrite: () => Promise<void>;
}

/** The answer of the OAuth settings routes. */
export interface OAuthSettingsAnswer {
  status: number;
  body: unknown;
}

/** The settings as answered: the `oauth` object with `login.clientSecretHint` in place of the secret. */
async function view(options: OAuthSettingsRoutesOptions): Promise<Record<string, unknown>> {
  if (options.fileConfig) {
    const { login, ...rest } = options.fileConfig;
    const shown =
      login.type === 'oidc'
        ? { ...login, clientSecret: undefined, clientSecretHint: secretHint(login.clientSecret) }
        : login;
    return { source: 'config', enabled: true, ...rest, login: JSON.parse(JSON.stringify(shown)) };
  }
  let record;
  try {
    record = await options.store.get('settings', 'oauth');
  } catch (error) {
    if (error instanceof RecordNotFoundError) return { source: 'none', enabled: false };
    throw error;
  }
  const value = record.value as Record<string, unknown>;
  const login = { ...(value.login as Record<string, unknown>) };
  if (typeof record.clientSecretHint === 'string') login.clientSecretHint = record.clientSecretHint;
  return {
    source: 'catalog',
    enabled: true,
    ...value,
    login,
    version: record.version,
    updatedAt: record.updatedAt,
  };
}

/**
 * `GET`, `PUT` and `DELETE /admin/v1/oauth/settings` (CONTRACT sections 8 and 11): the gateway's
 * OAuth settings as a catalog record, audited, `login.clientSecret` sealed and answered only as
 * `clientSecretHint`. `PUT` takes the config file's `oauth` object (validated with its schema);
 * `{"enabled": false}` or `DELETE` turns OAuth off. With the config file's `oauth`, changes
 * answer `409 managed_by_config_file`.
 */
export async function handleOAuthSettings(
  options: OAuthSettingsRoutesOptions,
  method: string,
  body: unknown,
  actor: string,
): Promise<OAuthSettingsAnswer> {
  if (method === 'GET' || method === 'HEAD') return { status: 200, body: await view(options) };
  if (method !== 'PUT' && method !== 'DELETE') return failure(405, 'method_not_allowed', 'Use GET, PUT or DELETE.');
  if (options.fileConfig)
    throw new ManagedByConfigFileError(
      'The OAuth settings come from the config file\'s "oauth" object: change them there.',
      null,
    );
  const turnOff =
    method === 'DELETE' ||
    (typeof body === 'object' && body !== null && (body as { enabled?: unknown }).enabled === false);
  if (turnOff) {
    if (method === 'PUT' && Object.keys(body as object).length !== 1)
      throw new InvalidRecordError('{"enabled": false} turns OAuth off and takes no other field.', null);
    try {
      await options.store.delete('settings', 'oauth', actor);
    } catch (error) {
      if (!(error instanceof RecordNotFoundError)) throw error;
    }
    await options.afterWrite();
    return { status: 200, body: await view(options) };
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new InvalidRecordError('The body must be the "oauth" object, such as {"login":{"type":"api_key"}}.', null);
  const { enabled, ...settings } = body as Record<string, unknown>;
  if (enabled !== undefined && enabled !== true)
    throw new InvalidRecordError('enabled must be true or false.', 'enabled');
  const existing = await options.store.getOpened('settings', 'oauth');
  const parsed = oauthSettingsSchema.safeParse(keepStoredSecret(settings, existing));
  if (!parsed.success) {
    const param = (parsed.error.issues[0]?.path ?? []).map(String).join('.') || null;
    throw new InvalidRecordError(describe(parsed.error.issues[0]), param);
  }
  if (!options.publicBaseUrl)
    throw new InvalidRecordError('OAuth needs PUBLIC_BASE_URL: set it in the environment of every instance.', null);
  const { login, ...rest } = parsed.data;
  const clientSecret = login.type === 'oidc' ? login.clientSecret : undefined;
  const storedLogin = login.type === 'oidc' ? { ...login, clientSecret: undefined } : login;
  const value = JSON.parse(JSON.stringify({ ...rest, login: storedLogin })) as Record<string, unknown>;
  if (existing) {
    await options.store.update('settings', 'oauth', { version: existing.version, value, clientSecret }, actor);
  } else {
    await options.store.create('settings', { slug: 'oauth', value, ...(clientSecret ? { clientSecret } : {}) }, actor);
  }
  await options.afterWrite();
  return { status: 200, body: await view(options) };
}

/**
 * The settings with the stored `login.clientSecret` filled in when an `oidc` login omits it (or sends
 * it empty) and the stored login is `oidc` too, like a PATCH that omits a secret keeps it (CONTRACT
 * section 8), unless `login.issuer` changes (the secret would go to another provider). Otherwise an
 * omitted secret is refused: `400 invalid_request` naming `login.clientSecret`.
 */
function keepStoredSecret(
  settings: Record<string, unknown>,
  existing: { data: Record<string, unknown>; secrets: Record<string, unknown> } | undefined,
): Record<string, unknown> {
  const login = settings.login as Record<string, unknown> | undefined;
  if (typeof login !== 'object' || login === null || login.type !== 'oidc') return settings;
  if (login.clientSecret !== undefined && login.clientSecret !== '') return settings;
  const storedLogin = (existing?.data.value as { login?: { type?: unknown } } | undefined)?.login;
  const storedSecret = existing?.secrets.clientSecret;
  if (storedLogin?.type !== 'oidc' || typeof storedSecret !== 'string' || storedSecret === '')
    throw new InvalidRecordError(
      'login.clientSecret is required: no OpenID Provider client secret is stored to keep.',
      'login.clientSecret',
    );
  // A new issuer would receive the stored secret at its token endpoint: it must be given again.
  checkSecretsGivenForRoutingChange(
    'settings',
    (existing as { data: Record<string, unknown> }).data,
    { ...(existing as { data: Record<string, unknown> }).data, value: settings },
    Object.keys((existing as { secrets: Record<string, unknown> }).secrets),
    [],
    (field) => (field === 'clientSecret' ? 'login.clientSecret' : field.replace(/^value\./, '')),
  );
  return { ...settings, login: { ...login, clientSecret: storedSecret } };
}

function failure(status: number, code: string, message: string): OAuthSettingsAnswer {
  return { status, body: { error: { message, type: 'invalid_request_error', code, param: null } } };
}

/**
 * Reads a PUT's JSON body as every admin route does (`readAdminJsonBody`): at most
 * {@link MAX_BODY_BYTES} of `application/json` (413 `body_too_large`, 400 `invalid_json`, 415
 * `unsupported_media_type`), or the body an Express parser already read.
 */
async function readJson(req: IncomingMessage & { body?: unknown; _body?: boolean }): Promise<unknown> {
  if (req._body === true) return req.body;
  return readAdminJsonBody(req, MAX_BODY_BYTES);
}

/** The routes of {@link handleOAuthSettings} as a handler; mount it at `/admin/v1/oauth/settings`. */
export function oauthSettingsRoutes(options: OAuthSettingsRoutesOptions) {
  return function oauthSettings(req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void): void {
    const path = new URL(req.url ?? '/', 'http://gateway.invalid').pathname;
    if (path !== '/' && path !== '') return next();
    const send = (answer: OAuthSettingsAnswer) => sendOAuthAdminAnswer(res, answer);
    (async () => {
      // Authenticated by the admin routes' one gate (section 8); unauthenticated, this throws.
      const principal = adminPrincipalOf(req);
      // Reads for every role; changes for admins only.
      checkRole(principal, req.method ?? 'GET', 'admin');
      const { actor } = principal;
      const body = req.method === 'PUT' ? await readJson(req) : undefined;
      return handleOAuthSettings(options, req.method ?? 'GET', body, actor);
    })().then(send, (error: unknown) => {
      const answer = oauthSettingsErrorAnswer(error);
      if (answer) send(answer);
      else next(error);
    });
  };
}

/** Sends an answer of the OAuth operator routes as JSON, not to be cached. */
export function sendOAuthAdminAnswer(res: ServerResponse, answer: OAuthSettingsAnswer): void {
  res.statusCode = answer.status;
  res.setHeader('cache-control', 'no-store');
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.end(JSON.stringify(answer.body));
}

/** The answer for an error of {@link handleOAuthSettings} with a status and code; undefined for others. */
export function oauthSettingsErrorAnswer(error: unknown): OAuthSettingsAnswer | undefined {
  const e = error as { status?: unknown; code?: unknown; message?: unknown; type?: unknown; param?: unknown };
  if (!(error instanceof CatalogError) && !(typeof e.status === 'number' && typeof e.code === 'string'))
    return undefined;
  return {
    status: e.status as number,
    body: {
      error: {
        message: String(e.message),
        type: typeof e.type === 'string' ? e.type : 'invalid_request_error',
        code: e.code,
        param: (e.param as string | null | undefined) ?? null,
      },
    },
  };
}

import { rejectUnknownOptions } from '@gw/options';
import { existsSync, readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import {
  CatalogError,
  TooManyAttemptsError,
  isDatabaseUnavailable,
  withAdminPrincipal,
  type AdminAccess,
  type AdminApiHandler,
  type AdminPrincipal,
  type AdminRole,
  type ConsoleSessionStore,
} from '@gw/catalog';
import { ConsoleSessions, type ConsoleSession } from './sessions';

/** The outcome of a console "test" button: one real call through the gateway. */
export interface RecordTestOutcome {
  ok: boolean;
  /** The gateway's HTTP status. */
  status: number;
  /** The gateway's error code when it failed. */
  code?: string;
  /** What happened, for a person. Never a secret. */
  message: string;
}

/** One request to the OAuth operator routes, made by the signed-in admin. */
export interface ConsoleOAuthAdminRequest {
  method: string;
  /** The path below `/admin/v1/oauth`, such as `/grants/<id>`. */
  path: string;
  query: URLSearchParams;
  /** The signed-in admin (the audit log's actor). */
  actor: string;
  /** The signed-in admin's role. Default `admin`. */
  role?: AdminRole;
  /** The JSON body of a `PUT` or `POST` (at most 64 KiB); undefined when there is none. */
  body?: unknown;
}

/** The OAuth operator routes' answer: a status and a JSON body. */
export interface ConsoleOAuthAdminAnswer {
  status: number;
  body: unknown;
}

/**
 * The console's sign-in at the company's OpenID Provider (CONTRACT section 11's `oauth.login`
 * settings), as the host provides it: `start` gives the provider's authorization URL and the state
 * to keep; `finish` checks the callback against that state and answers the signed-in admin (with
 * its role and an `oidc` credential carrying the ID token's `exp`), or throws an error with a
 * stable `code` (`role_required` when the claims map to no role).
 */
export interface ConsoleOidcSignIn {
  /** The provider's name for the sign-in link ("Sign in with <name>"). */
  readonly name: () => string | undefined;
  start(): Promise<{ url: string; state: Record<string, unknown> }>;
  finish(callbackUrl: URL, state: Record<string, unknown>): Promise<AdminPrincipal>;
}

/** Options of {@link createConsole}. */
export interface ConsoleOptions {
  /** Who may sign in: the admin API's access rules (the admin key, or an admin identity-provider token). Required. */
  access: AdminAccess;
  /** The admin API the console calls (its only back end). Required. */
  adminApi: AdminApiHandler;
  /** Signs session cookies: 32 bytes, the same on every instance. Required. */
  sessionSecret: Buffer;
  /** How long a session lasts at most, in ms. Default 28800000 (8 hours). */
  sessionLifetimeMs?: number;
  /** How long a session lasts without being used, in ms. Default 1800000 (30 minutes). */
  sessionIdleTimeoutMs?: number;
  /**
   * Where sessions live: a `DatabaseConsoleSessionStore` of `@gw/catalog` on the catalog's database
   * shares them, and their sign-out, with every instance. Default: in this process only.
   */
  sessionStore?: ConsoleSessionStore;
  /** Millisecond clock of the sessions. Default `Date.now`. */
  now?: () => number;
  /** Makes one real call through the gateway for a record's "test" button. Default: no test buttons. */
  testRecord?: (kind: 'providers' | 'mcp-servers', slug: string) => Promise<RecordTestOutcome>;
  /** The gateway's public origin, for the pages' snippets and the cookie's `Secure`. Default: from each request. */
  publicBaseUrl?: string;
  /**
   * Answers the OAuth operator routes (`/admin/v1/oauth/…`, CONTRACT section 11) for the signed-in
   * admin: the console's `/api/oauth/…` and its "Connected apps" page. Default: none (the gateway
   * has no `oauth`; `/api/oauth/…` answers `404 oauth_disabled` and the page says OAuth is off).
   */
  oauthAdmin?: (request: ConsoleOAuthAdminRequest) => Promise<ConsoleOAuthAdminAnswer>;
  /**
   * Sign-in at the company's OpenID Provider: `GET /console/oidc/start` sends the browser there,
   * `GET /console/oidc/callback` opens the session. Default: none (those routes answer `404 oidc_disabled`).
   */
  oidcSignIn?: ConsoleOidcSignIn;
}

/** The console's handler: `path` is below its mount point (`/`, `/api/providers`). Never rejects. */
export type ConsoleHandler = (req: IncomingMessage, res: ServerResponse, path: string) => Promise<void>;

/** The name of the session cookie. */
export const SESSION_COOKIE = 'gw_console';

/** The Content-Security-Policy of every console answer: no inline script or style, nothing from another host. */
export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/** The built page script: `dist/web` beside this file once compiled (from the sources, the package's `dist/web`). */
const WEB_BUILD =
  [join(__dirname, '..', 'web'), join(__dirname, '..', '..', 'dist', 'web')].find((dir) =>
    existsSync(join(dir, 'console.js')),
  ) ?? join(__dirname, '..', 'web');

const ASSETS = new Map<string, { file: string; type: string }>([
  ['/', { file: join(__dirname, '..', '..', 'web', 'index.html'), type: 'text/html; charset=utf-8' }],
  ['/console.css', { file: join(__dirname, '..', '..', 'web', 'console.css'), type: 'text/css; charset=utf-8' }],
  ['/console.js', { file: join(WEB_BUILD, 'console.js'), type: 'text/javascript; charset=utf-8' }],
]);
const assetCache = new Map<string, Buffer>();
/** The page script's modules, built into `dist/web/lib` and `dist/web/pages`: `/lib/forms.js`, `/pages/keys.js`. */
const MODULE_PATH = /^\/(lib|pages)\/([a-z][a-z0-9-]{0,63})\.js$/;

/** The asset a path names: a fixed file, or one of the page script's modules; undefined otherwise. */
function assetOf(path: string): { file: string; type: string } | undefined {
  const fixed = ASSETS.get(path === '' || path === '/index.html' ? '/' : path);
  if (fixed) return fixed;
  const module = MODULE_PATH.exec(path);
  if (!module) return undefined;
  const file = join(WEB_BUILD, module[1] as string, `${module[2] as string}.js`);
  return existsSync(file) ? { file, type: 'text/javascript; charset=utf-8' } : undefined;
}

const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * The web console at `/console`: static pages built with the package, sign-in with the admin
 * credential into a signed `HttpOnly; SameSite=Strict` cookie, and `/console/api/…` passed to the
 * admin API as the signed-in admin. Every state-changing request needs the session's CSRF token
 * (`x-csrf-token`) and, when the browser names one, the console's own origin.
 */
export function createConsole(options: ConsoleOptions): ConsoleHandler {
  if (!options?.access || typeof options.adminApi !== 'function') {
    throw new TypeError('createConsole needs { access, adminApi, sessionSecret }.');
  }
  rejectUnknownOptions(
    options,
    [
      'access',
      'adminApi',
      'sessionSecret',
      'sessionLifetimeMs',
      'sessionIdleTimeoutMs',
      'sessionStore',
      'now',
      'testRecord',
      'publicBaseUrl',
      'oauthAdmin',
      'oidcSignIn',
    ],
    'gatewayConsole',
  );
  if (
    options.oidcSignIn !== undefined &&
    (typeof options.oidcSignIn?.start !== 'function' || typeof options.oidcSignIn.finish !== 'function')
  )
    throw new TypeError('gatewayConsole oidcSignIn must be an object with start() and finish(callbackUrl, state).');
  if (options.now !== undefined && typeof options.now !== 'function')
    throw new TypeError('gatewayConsole now must be a function () => milliseconds since the epoch.');
  if (typeof options.access.authorize !== 'function')
    throw new TypeError('gatewayConsole access must be an AdminAccess (new AdminAccess({ adminKey })).');
  if (options.testRecord !== undefined && typeof options.testRecord !== 'function')
    throw new TypeError('gatewayConsole testRecord must be a function (kind, slug) => Promise<outcome>.');
  if (options.oauthAdmin !== undefined && typeof options.oauthAdmin !== 'function')
    throw new TypeError(
      'gatewayConsole oauthAdmin must be a function ({ method, path, query, actor }) => Promise<answer>.',
    );
  if (options.publicBaseUrl !== undefined && !/^https?:\/\/[^/?#]+\/?$/.test(String(options.publicBaseUrl)))
    throw new TypeError(
      'gatewayConsole publicBaseUrl must be an http(s) origin, such as "https://gateway.example.com".',
    );
  const sessions = new ConsoleSessions({
    secret: options.sessionSecret,
    lifetimeMs: options.sessionLifetimeMs,
    idleTimeoutMs: options.sessionIdleTimeoutMs,
    store: options.sessionStore,
    now: options.now,
  });
  const { access } = options;
  const clock = options.now ?? Date.now;

  return async function consoleHandler(req, res, path) {
    res.setHeader('content-security-policy', CONSOLE_CSP);
    res.setHeader('x-content-type-options', 'nosniff');
    res.setHeader('referrer-policy', 'no-referrer');
    res.setHeader('x-frame-options', 'DENY');
    try {
      await route(req, res, path);
    } catch (failure) {
      if (res.headersSent) res.destroy();
      else if (isDatabaseUnavailable(failure))
        send(
          res,
          503,
          error("The catalog's database cannot be reached just now; retry shortly.", 'catalog_unavailable'),
        );
      else send(res, 500, error('The console could not answer.', 'internal_error'));
    }
  };

  async function route(req: IncomingMessage, res: ServerResponse, fullPath: string): Promise<void> {
    const question = fullPath.indexOf('?');
    const path = question === -1 ? fullPath : fullPath.slice(0, question);
    const method = req.method ?? 'GET';
    const asset = assetOf(path);
    if (asset) {
      if (method !== 'GET' && method !== 'HEAD') return send(res, 405, error('Assets take GET.', 'method_not_allowed'));
      let body = assetCache.get(asset.file);
      if (!body) assetCache.set(asset.file, (body = readFileSync(asset.file)));
      res.statusCode = 200;
      res.setHeader('content-type', asset.type);
      res.setHeader('cache-control', path === '/' ? 'no-store' : 'no-cache');
      res.end(method === 'HEAD' ? undefined : body);
      return;
    }
    if (STATE_CHANGING.has(method) && !sameOrigin(req)) {
      return send(res, 403, error('The request comes from another site.', 'cross_origin_refused'));
    }
    if (path === '/session' && method === 'POST') return signIn(req, res);
    if (path === '/oidc' && (method === 'GET' || method === 'HEAD')) {
      // Read before sign-in: whether the sign-in page shows "Sign in with <name>".
      const name = options.oidcSignIn?.name();
      return send(
        res,
        200,
        name === undefined ? { enabled: false } : { enabled: true, name, startUrl: '/console/oidc/start' },
      );
    }
    if (path === '/oidc/start' || path === '/oidc/callback') {
      if (method !== 'GET') return send(res, 405, error('The sign-in takes GET.', 'method_not_allowed'));
      if (!options.oidcSignIn || options.oidcSignIn.name() === undefined)
        return send(
          res,
          404,
          error('Sign-in at an OpenID Provider is off: set oauth.login (type oidc) and adminRoles.', 'oidc_disabled'),
        );
      return path === '/oidc/start'
        ? oidcStart(req, res, options.oidcSignIn)
        : oidcCallback(req, res, fullPath, options.oidcSignIn);
    }
    const isSession = path === '/session';
    if (!isSession && !path.startsWith('/api/'))
      return send(res, 404, error('No console page has this path.', 'route_not_found'));
    if (isSession && method !== 'GET' && method !== 'DELETE')
      return send(res, 405, error('The session takes GET, POST and DELETE.', 'method_not_allowed'));
    // Every request re-checks its session: the row, its lifetimes, and the credential it signed in with.
    const session = await sessions.read(readCookie(req.headers.cookie, SESSION_COOKIE), access);

    if (isSession && method === 'DELETE') {
      if (session) {
        if (!sessions.checkCsrf(session, header(req, 'x-csrf-token'))) {
          return send(res, 403, error('The CSRF token is missing or wrong.', 'csrf_token_invalid'));
        }
        await sessions.revoke(session, access.addressOf(req));
      }
      res.setHeader('set-cookie', cookie(req, '', 0));
      return send(res, 200, { signedIn: false });
    }
    if (!access.enabled) return send(res, 403, CONSOLE_DISABLED);
    if (isSession) {
      if (!session) return send(res, 401, error('Not signed in.', 'missing_credentials'));
      return send(res, 200, sessionBody(session));
    }

    if (!session) return send(res, 401, error('Sign in first.', 'missing_credentials'));
    if (STATE_CHANGING.has(method) && !sessions.checkCsrf(session, header(req, 'x-csrf-token'))) {
      return send(res, 403, error('The CSRF token is missing or wrong.', 'csrf_token_invalid'));
    }
    const rest = path.slice('/api'.length);
    const test = /^\/test\/(providers|mcp-servers)\/([^/]{1,128})$/.exec(rest);
    if (test) {
      if (method !== 'POST') return send(res, 405, error('A test is a POST.', 'method_not_allowed'));
      if (!options.testRecord) return send(res, 404, error('Tests are not available.', 'route_not_found'));
      // A viewer only reads; a test is a real call through the gateway.
      if (session.role === 'viewer')
        return send(res, 403, {
          error: {
            message: 'The signed-in role "viewer" may not run tests: an "operator" or "admin" may.',
            type: 'permission_error',
            code: 'role_forbidden',
          },
        });
      let slug: string;
      try {
        slug = decodeURIComponent(test[2] as string);
      } catch {
        return send(res, 400, error('The path is not valid percent-encoding.', 'invalid_path'));
      }
      const outcome = await options.testRecord(test[1] as 'providers' | 'mcp-servers', slug);
      return send(res, 200, outcome);
    }
    if (rest === '/oauth' || rest.startsWith('/oauth/')) {
      if (!options.oauthAdmin)
        return send(res, 404, error("OAuth is off: this gateway's config has no oauth object.", 'oauth_disabled'));
      let body: unknown;
      if (method === 'PUT' || method === 'POST') {
        let text = '';
        for await (const chunk of req as AsyncIterable<Buffer>) {
          text += chunk.toString('utf8');
          if (text.length > 65_536) return send(res, 413, error('The body is too large.', 'body_too_large'));
        }
        try {
          body = text.trim() === '' ? undefined : (JSON.parse(text) as unknown);
        } catch {
          return send(res, 400, error('The body must be JSON.', 'invalid_request'));
        }
      }
      const answer = await options.oauthAdmin({
        method,
        path: rest.slice('/oauth'.length),
        query: new URLSearchParams(question === -1 ? '' : fullPath.slice(question + 1)),
        actor: session.actor,
        role: session.role,
        body,
      });
      return send(res, answer.status, answer.body);
    }
    withAdminPrincipal(req, { actor: session.actor, role: session.role });
    await options.adminApi(req, res, `${rest}${question === -1 ? '' : fullPath.slice(question)}`);
  }

  async function signIn(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
    if (type !== 'application/json')
      return send(res, 415, error('Send the sign-in as application/json.', 'unsupported_media_type'));
    let text = '';
    for await (const chunk of req as AsyncIterable<Buffer>) {
      text += chunk.toString('utf8');
      if (text.length > 16_384) return send(res, 413, error('The sign-in is too large.', 'body_too_large'));
    }
    let credential: unknown;
    try {
      credential = (JSON.parse(text) as { credential?: unknown }).credential;
    } catch {
      return send(res, 400, error('The body is not valid JSON.', 'invalid_json'));
    }
    if (typeof credential !== 'string' || credential === '' || /\s/.test(credential)) {
      return send(res, 400, {
        error: {
          message: 'Enter the admin key.',
          type: 'invalid_request_error',
          code: 'invalid_request',
          param: 'credential',
        },
      });
    }
    if (!access.enabled) return send(res, 403, CONSOLE_DISABLED);
    let principal: AdminPrincipal;
    try {
      principal = await access.authorizeRequest(req, 'console', { authorization: `Bearer ${credential}` });
      if (principal.credential?.kind === 'token' && principal.credential.expiresAt === undefined) {
        throw new TokenWithoutExpiryError('A token without an expiry (exp) cannot open a console session.');
      }
    } catch (failure) {
      if (failure instanceof TooManyAttemptsError) {
        res.setHeader('retry-after', String(failure.retryAfterSeconds));
        return send(res, 429, { error: { message: failure.message, type: failure.type, code: failure.code } });
      }
      if (!(failure instanceof CatalogError)) throw failure;
      const {
        status = 401,
        code = 'invalid_credentials',
        message = 'The credential is not valid.',
      } = failure as {
        status?: number;
        code?: string;
        message?: string;
      };
      return send(res, status, { error: { message, type: 'authentication_error', code, param: 'credential' } });
    }
    const created = await sessions.create(principal, access.addressOf(req));
    const maxAge = Math.max(0, Math.floor((created.session.expiresAt - clock()) / 1000));
    res.setHeader('set-cookie', cookie(req, created.cookie, Math.min(sessions.lifetimeSeconds, maxAge)));
    send(res, 200, sessionBody(created.session));
  }

  /** `GET /console/oidc/start`: to the provider, the sign-in's state kept in a sealed cookie for the callback. */
  async function oidcStart(req: IncomingMessage, res: ServerResponse, oidc: ConsoleOidcSignIn): Promise<void> {
    let started: { url: string; state: Record<string, unknown> };
    try {
      started = await oidc.start();
    } catch (failure) {
      return oidcFailure(res, failure);
    }
    res.setHeader('set-cookie', oidcCookie(req, sealState(options.sessionSecret, started.state), OIDC_STATE_SECONDS));
    res.statusCode = 303;
    res.setHeader('location', started.url);
    res.setHeader('cache-control', 'no-store');
    res.end();
  }

  /** `GET /console/oidc/callback`: checks the sign-in, opens a session with the mapped role, back to the console. */
  async function oidcCallback(
    req: IncomingMessage,
    res: ServerResponse,
    fullPath: string,
    oidc: ConsoleOidcSignIn,
  ): Promise<void> {
    const state = openState(options.sessionSecret, readCookie(req.headers.cookie, OIDC_STATE_COOKIE));
    // The state is used once, whatever the outcome.
    res.setHeader('set-cookie', oidcCookie(req, '', 0));
    if (state === undefined)
      return oidcFailure(res, { code: 'login_state_mismatch', message: 'No sign-in was started here; start again.' });
    const question = fullPath.indexOf('?');
    const callbackUrl = new URL(
      `http://console.invalid/console/oidc/callback${question === -1 ? '' : fullPath.slice(question)}`,
    );
    let principal: AdminPrincipal;
    try {
      principal = await oidc.finish(callbackUrl, state);
    } catch (failure) {
      try {
        await sessions.sessionStore.recordSignIn({
          action: 'sign_in_failed',
          via: 'console',
          actor: 'anonymous',
          address: access.addressOf(req),
          code: String((failure as { code?: unknown })?.code ?? 'login_failed').slice(0, 64),
        });
      } catch {
        // The audit line is best effort here; the answer is the same.
      }
      return oidcFailure(res, failure);
    }
    const created = await sessions.create(principal, access.addressOf(req));
    const maxAge = Math.max(0, Math.floor((created.session.expiresAt - clock()) / 1000));
    res.setHeader('set-cookie', [
      oidcCookie(req, '', 0),
      cookie(req, created.cookie, Math.min(sessions.lifetimeSeconds, maxAge)),
    ]);
    res.statusCode = 303;
    res.setHeader('location', '/console/');
    res.setHeader('cache-control', 'no-store');
    res.end();
  }

  function oidcCookie(req: IncomingMessage, value: string, maxAge: number): string {
    const secure = options.publicBaseUrl?.startsWith('https:') || (req.socket as TLSSocket).encrypted === true;
    // Lax: the provider's redirect back is a top-level navigation from its site.
    return `${OIDC_STATE_COOKIE}=${value}; Path=/console/oidc; HttpOnly; SameSite=Lax; Max-Age=${maxAge}${secure ? '; Secure' : ''}`;
  }

  function sessionBody(session: ConsoleSession) {
    return {
      signedIn: true,
      actor: session.actor,
      role: session.role,
      expiresAt: new Date(session.expiresAt).toISOString(),
      idleExpiresAt: new Date(session.idleExpiresAt).toISOString(),
      csrfToken: sessions.csrfToken(session),
      tests: options.testRecord !== undefined,
      oauth: options.oauthAdmin !== undefined,
    };
  }

  function cookie(req: IncomingMessage, value: string, maxAge: number): string {
    const secure = options.publicBaseUrl?.startsWith('https:') || (req.socket as TLSSocket).encrypted === true;
    return `${SESSION_COOKIE}=${value}; Path=/console; HttpOnly; SameSite=Strict; Max-Age=${maxAge}${secure ? '; Secure' : ''}`;
  }

  /** A state-changing request must come from the console's own page: `Origin` (when sent) is this host. */
  function sameOrigin(req: IncomingMessage): boolean {
    if (header(req, 'sec-fetch-site') === 'cross-site') return false;
    const origin = header(req, 'origin');
    if (origin === undefined) return true;
    if (options.publicBaseUrl !== undefined && origin === new URL(options.publicBaseUrl).origin) return true;
    const host = req.headers.host;
    const scheme = (req.socket as TLSSocket).encrypted ? 'https' : 'http';
    return host !== undefined && origin === `${scheme}://${host}`;
  }
}

/** The cookie that carries a started OpenID Provider sign-in's state (sealed), and how long it lasts. */
const OIDC_STATE_COOKIE = 'gw_console_oidc';
const OIDC_STATE_SECONDS = 600;

function stateKey(secret: Buffer): Buffer {
  return createHmac('sha256', secret).update('console-oidc-state').digest();
}

/** The sign-in's state sealed with AES-256-GCM under a key derived from the session secret (base64url). */
function sealState(secret: Buffer, state: Record<string, unknown>): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', stateKey(secret), iv);
  const body = Buffer.concat([cipher.update(JSON.stringify(state), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
}

/** The state a cookie carries, or undefined when it is missing, altered or not sealed here. */
function openState(secret: Buffer, value: string | undefined): Record<string, unknown> | undefined {
  if (value === undefined || value.length < 40 || value.length > 4096) return undefined;
  try {
    const raw = Buffer.from(value, 'base64url');
    const decipher = createDecipheriv('aes-256-gcm', stateKey(secret), raw.subarray(0, 12));
    decipher.setAuthTag(raw.subarray(12, 28));
    const text = Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
    const state = JSON.parse(text) as unknown;
    return typeof state === 'object' && state !== null && !Array.isArray(state)
      ? (state as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** A failed OpenID Provider sign-in: a short page with the reason (never a secret) and a way back. */
function oidcFailure(res: ServerResponse, failure: unknown): void {
  const code = String((failure as { code?: unknown })?.code ?? 'login_failed')
    .replace(/[^a-z_]/g, '')
    .slice(0, 64);
  const status = code === 'provider_unreachable' ? 502 : code === 'role_required' ? 403 : 400;
  const message = String((failure as { message?: unknown })?.message ?? 'The sign-in failed.').slice(0, 300);
  const escaped = message.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  res.statusCode = status;
  res.setHeader('content-type', 'text/html; charset=utf-8');
  res.setHeader('cache-control', 'no-store');
  res.end(
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign-in failed</title></head><body><main><h1>Sign-in failed</h1><p>${escaped}</p><p>Code: <code>${code}</code></p><p><a href="/console/">Back to the console</a></p></main></body></html>`,
  );
}

/** A token without `exp` cannot sign in to the console: its session could not end with it. */
class TokenWithoutExpiryError extends CatalogError {
  readonly code = 'invalid_credentials';
  readonly status = 401;
  override readonly type = 'authentication_error';
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return typeof value === 'string' ? value : undefined;
}

/** The value of cookie `name` in a `Cookie` header, or undefined. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq !== -1 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** The answer while admin access is disabled (no admin key and no admin claim). */
const CONSOLE_DISABLED = {
  error: {
    message: 'The console is disabled: set GATEWAY_ADMIN_KEY (at least 24 characters) to enable it.',
    type: 'permission_error',
    code: 'admin_disabled',
  },
};

function error(message: string, code: string) {
  return { error: { message, type: 'invalid_request_error', code } };
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.setHeader('cache-control', 'no-store');
  res.end(text);
}

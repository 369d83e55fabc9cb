import express, { Router, type Request, type Response } from 'express';
import { ipKeyGenerator, rateLimit } from 'express-rate-limit';
import { tokenHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/token.js';
import { clientRegistrationHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/register.js';
import { revocationHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/revoke.js';
import { rejectUnknownOptions } from '@gw/options';
import type { AuthorizationServer, PageAnswer } from './core/authorization-server';
import { handleOAuthAdmin, type OAuthAdminAccess } from './core/admin';

/** A rate limit of one endpoint, per client address. */
export interface EndpointRateLimit {
  /** The window in ms. */
  windowMs: number;
  /** Requests allowed per address in the window; more are `429` with `retry-after`. */
  max: number;
}

/** Options of {@link oauthRoutes}. */
export interface OAuthRoutesOptions {
  /** `/oauth/token` and `/oauth/revoke`, per client address. Default 60 requests a minute. */
  tokenRateLimit?: EndpointRateLimit;
  /** `/oauth/register`, per client address. Default 20 registrations an hour. */
  registerRateLimit?: EndpointRateLimit;
  /** Refused posts of the sign-in page (API keys tried), per client address. Default 20 a minute. */
  signInRateLimit?: EndpointRateLimit;
  /**
   * `GET /oauth/authorize` (each may fetch a client ID metadata document), per client address.
   * Default 60 requests a minute.
   */
  authorizeRateLimit?: EndpointRateLimit;
  /**
   * The client's address, which the limits count by: behind a load balancer, the address it
   * forwards (`clientAddress` of `@gw/catalog` with the trusted proxies). IPv6 addresses count by
   * their /56. Default: the connection's address.
   */
  clientAddress?: (req: Request) => string;
}

/** Cookies of a request (the last of repeated names wins; at most 50 are read). */
export function readCookies(header: string | undefined): Record<string, string> {
  const cookies: Record<string, string> = Object.create(null) as Record<string, string>;
  if (!header) return cookies;
  for (const part of header.split(';').slice(0, 50)) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    cookies[part.slice(0, eq).trim()] = part.slice(eq + 1).trim();
  }
  return cookies;
}

/** Writes a page answer: HTML with its strict Content-Security-Policy, or a redirect; never cached or framed. */
export function sendPageAnswer(res: Response, answer: PageAnswer): void {
  res.setHeader('cache-control', 'no-store');
  res.setHeader('content-security-policy', answer.csp);
  res.setHeader('x-frame-options', 'DENY');
  // same-origin: nothing leaves for another site, and a browser still names the page's origin on its own form posts
  // (with no-referrer, Chromium sends `Origin: null` and the origin check refuses the form).
  res.setHeader('referrer-policy', 'same-origin');
  res.setHeader('x-content-type-options', 'nosniff');
  if (answer.cookies.length > 0) res.setHeader('set-cookie', answer.cookies);
  if (answer.kind === 'redirect') {
    res.status(302).setHeader('location', answer.location).end();
    return;
  }
  res.status(answer.status).type('text/html; charset=utf-8').send(answer.html);
}

function checkRateLimit(value: EndpointRateLimit | undefined, name: string): void {
  if (value === undefined) return;
  if (
    typeof value !== 'object' ||
    value === null ||
    !Number.isInteger(value.windowMs) ||
    !Number.isInteger(value.max) ||
    value.windowMs <= 0 ||
    value.max <= 0
  )
    throw new TypeError(
      `oauthRoutes ${name} must be { windowMs, max } (whole numbers above 0), such as { windowMs: 60000, max: 60 }.`,
    );
}

/**
 * `GET /.well-known/oauth-authorization-server`: RFC 8414 metadata with exactly the fields of
 * CONTRACT section 11. Mount it at that path.
 */
export function oauthMetadataHandler(server: AuthorizationServer) {
  const metadata = server.metadata();
  return function oauthMetadata(_req: Request, res: Response): void {
    res.setHeader('cache-control', 'public, max-age=300');
    res.setHeader('access-control-allow-origin', '*');
    res.json(metadata);
  };
}

/**
 * The authorization server's routes; mount them at `/oauth`: the pages of `/oauth/authorize`
 * (sign-in and consent forms, `/oauth/callback` for an OpenID Provider) and the MCP SDK's handlers
 * for `/oauth/token`, `/oauth/register` and `/oauth/revoke` (OAuth error shape, RFC 6749 section
 * 5.2; rate limited per client address, `429` with `retry-after`).
 */
export function oauthRoutes(server: AuthorizationServer, options: OAuthRoutesOptions = {}): Router {
  if (typeof options !== 'object' || options === null) throw new TypeError('oauthRoutes options must be an object.');
  rejectUnknownOptions(
    options,
    ['tokenRateLimit', 'registerRateLimit', 'signInRateLimit', 'authorizeRateLimit', 'clientAddress'],
    'oauthRoutes',
  );
  if (options.clientAddress !== undefined && typeof options.clientAddress !== 'function')
    throw new TypeError(
      'oauthRoutes clientAddress must be a function of the request, such as (req) => clientAddress(req, proxies).',
    );
  const addressOf = options.clientAddress ?? ((req: Request) => req.socket.remoteAddress ?? 'unknown');
  // Every limit counts by the client's address, an IPv6 one by its /56 (one host holds many addresses).
  const keyGenerator = (req: Request) => ipKeyGenerator(addressOf(req));
  checkRateLimit(options.tokenRateLimit, 'tokenRateLimit');
  checkRateLimit(options.registerRateLimit, 'registerRateLimit');
  checkRateLimit(options.signInRateLimit, 'signInRateLimit');
  checkRateLimit(options.authorizeRateLimit, 'authorizeRateLimit');
  const signInLimit = { windowMs: 60_000, max: 20, ...options.signInRateLimit, keyGenerator };
  const tokenLimit = { windowMs: 60_000, max: 60, ...options.tokenRateLimit, keyGenerator };
  const registerLimit = { windowMs: 3_600_000, max: 20, ...options.registerRateLimit, keyGenerator };
  const authorizeLimit = { windowMs: 60_000, max: 60, ...options.authorizeRateLimit, keyGenerator };
  const provider = server.provider();
  const router = Router();
  const form = express.urlencoded({ extended: false, limit: '32kb', parameterLimit: 20 });
  const answer =
    (work: (req: Request) => Promise<PageAnswer>) => (req: Request, res: Response, next: (e?: unknown) => void) => {
      work(req).then((a) => sendPageAnswer(res, a), next);
    };
  const body = (req: Request) =>
    typeof req.body === 'object' && req.body !== null ? (req.body as Record<string, unknown>) : {};
  router.get(
    '/authorize',
    // Each request may make the gateway fetch a client's metadata document: slowed down per address.
    rateLimit({
      ...authorizeLimit,
      standardHeaders: true,
      legacyHeaders: false,
      handler: (_req, res) => sendPageAnswer(res, server.tooManyAuthorizationRequests()),
    }),
    answer((req) => server.authorize(req.query as Record<string, unknown>, readCookies(req.headers.cookie))),
  );
  router.post(
    '/authorize/sign-in',
    // Guessing API keys on the sign-in page is slowed down per client address.
    rateLimit({
      ...signInLimit,
      // Only refused keys count: a user who signs in does not use up the address's tries.
      skipSuccessfulRequests: true,
      standardHeaders: true,
      legacyHeaders: false,
      handler: (_req, res) => sendPageAnswer(res, server.tooManySignIns()),
    }),
    form,
    answer((req) => server.signIn(body(req), readCookies(req.headers.cookie), req.headers.origin)),
  );
  router.post(
    '/authorize/consent',
    form,
    answer((req) => server.consent(body(req), readCookies(req.headers.cookie), req.headers.origin)),
  );
  router.get(
    '/callback',
    answer((req) => server.callback(new URL(req.originalUrl, `${server.issuer}/`), readCookies(req.headers.cookie))),
  );
  router.use('/token', tokenHandler({ provider, rateLimit: tokenLimit }));
  router.use('/revoke', revocationHandler({ provider, rateLimit: tokenLimit }));
  router.use('/register', clientRegistrationHandler({ clientsStore: provider.clientsStore, rateLimit: registerLimit }));
  return router;
}

/**
 * The operator routes (`/admin/v1/oauth/clients`, `/admin/v1/oauth/grants`,
 * `/admin/v1/oauth/grants/<id>`) as an Express handler; mount it at `/admin/v1/oauth`, before the
 * admin API.
 */
export function oauthAdminRoutes(server: AuthorizationServer, access: OAuthAdminAccess) {
  if (typeof access?.authorize !== 'function')
    throw new TypeError("oauthAdminRoutes access must be the admin API's access check (AdminAccess of @gw/catalog).");
  return function oauthAdmin(req: Request, res: Response, next: (error?: unknown) => void): void {
    const url = new URL(req.url, 'http://gateway.invalid');
    handleOAuthAdmin(server, access, {
      method: req.method,
      path: url.pathname,
      query: url.searchParams,
      headers: req.headers,
    }).then((answer) => {
      res.setHeader('cache-control', 'no-store');
      res.status(answer.status).json(answer.body);
    }, next);
  };
}

/**
 * The connections pages (CONTRACT section 15): `GET /connect` (the signed-in user's servers with
 * connect and disconnect), `GET /connect/<slug>?request=<id>` (the link of a `-32042` answer: it
 * completes only for the user who got it), the server's redirect back to
 * `/oauth/upstream/callback`, and the gateway's Client ID Metadata Document at
 * `/oauth/upstream/<slug>/client.json`. The user signs in with section 11's login.
 */
import { createHash } from 'node:crypto';
import express, { Router, type Request, type Response } from 'express';
import type { AuthorizationServer, PageAnswer } from '@gw/oauth';
import { oauthPackage } from '../oauth/oauth-package';
import type { ConnectRequestUse, ConnectionSummary, UpstreamAuthConfig } from '@gw/upstream-auth';
import { connectErrorPage, connectListPage, connectedPage } from './connect-pages';

/** What the pages need of the per-user connections (`@gw/upstream-auth`, over the catalog's store). */
export interface ConnectFlows {
  /** Uses a connect link's request for the signed-in user (see the store's `useConnectRequest`). */
  useConnectRequest(id: string, userId: string, now: number): Promise<ConnectRequestUse>;
  /** Starts the server's authorization for `userId`: the URL to send the browser to, and the `state` in it. */
  start(userId: string, server: string): Promise<{ url: string; state: string }>;
  /** Completes it from the server's redirect: the connection made. Throws when anything does not check. */
  finish(callbackUrl: URL, state: string): Promise<{ userId: string; server: string }>;
  /** The user's connections. */
  listUserConnections(userId: string): Promise<ConnectionSummary[]>;
  /** Ends a connection (revoked at the server when it can); `actor` is audited. False when there was none. */
  disconnect(userId: string, server: string, actor: string): Promise<boolean>;
  /** The gateway's Client ID Metadata Document for `server`, or undefined when the server is not an `oauth` one. */
  clientMetadataDocument(server: string): Record<string, unknown> | undefined;
}

/** What {@link connectRoutes} is built from. */
export interface ConnectRoutesOptions {
  /** The authorization server of section 11 now (its sign-in), or undefined while OAuth is off. */
  authorizationServer: () => AuthorizationServer | undefined;
  /** The servers' `upstream_auth` now, by slug. */
  servers: () => ReadonlyMap<string, UpstreamAuthConfig>;
  flows: ConnectFlows;
  /** Millisecond clock. Default `Date.now`. */
  now?: () => number;
}

/** The cookie that binds an authorization to the browser that started it, named after its state. */
function flowCookieName(state: string): string {
  return `gw_upstream_${createHash('sha256').update(state).digest('base64url').slice(0, 16)}`;
}
const FLOW_PATH = '/oauth/upstream';
const FLOW_TTL_SECONDS = 600;
const SLUG = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const REQUEST_ID = /^[A-Za-z0-9_-]{20,100}$/;
const STATE = /^[A-Za-z0-9._~-]{16,200}$/;

function page(server: AuthorizationServer, status: number, html: string, cookies: string[] = []): PageAnswer {
  return server.page(status, html, cookies);
}

function refusal(server: AuthorizationServer, status: number, code: string, message: string): PageAnswer {
  return page(server, status, connectErrorPage(code, message));
}

/** The connections pages (mounted at `/connect`) and the authorization servers' way back (at `/oauth/upstream`). */
export interface ConnectRouters {
  pages: Router;
  callback: Router;
}

/** The Express routers of the connections pages; mount `pages` at `/connect` and `callback` at `/oauth/upstream`, before `/oauth`. */
export function connectRoutes(options: ConnectRoutesOptions): ConnectRouters {
  const now = options.now ?? Date.now;
  const router = Router();
  const callbackRouter = Router();
  const form = express.urlencoded({ extended: false, limit: '4kb', parameterLimit: 5 });
  const answer =
    (work: (req: Request, server: AuthorizationServer) => Promise<PageAnswer>) =>
    (req: Request, res: Response, next: (error?: unknown) => void) => {
      const server = options.authorizationServer();
      if (server === undefined) {
        next();
        return;
      }
      work(req, server).then(
        (a) => oauthPackage().sendPageAnswer(res, a),
        (error: unknown) => {
          const status = (error as { status?: unknown })?.status;
          const code = (error as { code?: unknown })?.code;
          if (typeof status === 'number' && typeof code === 'string' && status < 600)
            oauthPackage().sendPageAnswer(res, refusal(server, status, code, (error as Error).message));
          else next(error);
        },
      );
    };
  const oauthServer = (slug: string) => options.servers().get(slug)?.type === 'oauth';

  /** Sends the browser to the server's authorization page, bound to it by a cookie. */
  const startAuthorization = async (server: AuthorizationServer, userId: string, slug: string) => {
    const { url, state } = await options.flows.start(userId, slug);
    const secure = server.issuer.startsWith('https:') ? '; Secure' : '';
    const cookie = `${flowCookieName(state)}=1; Path=${FLOW_PATH}; HttpOnly; SameSite=Lax; Max-Age=${FLOW_TTL_SECONDS}${secure}`;
    return { kind: 'redirect', location: url, csp: server.page(200, '').csp, cookies: [cookie] } satisfies PageAnswer;
  };

  router.get(
    '/',
    answer(async (req, server) => {
      const cookies = oauthPackage().readCookies(req.headers.cookie);
      const user = server.pageUser(cookies);
      if (user === undefined) return server.signInForPage('/connect', 'your MCP server connections');
      const connections = new Map((await options.flows.listUserConnections(user.sub)).map((c) => [c.server, c]));
      const entries = [...options.servers()]
        .filter(([, config]) => config.type === 'oauth')
        .map(([slug]) => ({ slug, connection: connections.get(slug) }));
      return page(
        server,
        200,
        connectListPage(String(user.claims.email ?? user.claims.username ?? user.sub), entries, {
          startToken: server.pageFormToken(cookies, 'connect-start') as string,
          disconnectToken: server.pageFormToken(cookies, 'connect-disconnect') as string,
        }),
      );
    }),
  );

  router.get(
    '/:slug',
    answer(async (req, server) => {
      const slug = req.params.slug as string;
      const id = typeof req.query.request === 'string' ? req.query.request : '';
      if (!SLUG.test(slug) || !oauthServer(slug))
        return refusal(
          server,
          404,
          'mcp_server_not_found',
          'No MCP server of this gateway needs a connection by that name.',
        );
      if (!REQUEST_ID.test(id))
        return refusal(
          server,
          400,
          'connect_link_invalid',
          'This connect link is not complete: open the link your application showed again.',
        );
      const cookies = oauthPackage().readCookies(req.headers.cookie);
      const user = server.pageUser(cookies);
      if (user === undefined)
        return server.signInForPage(`/connect/${slug}?request=${id}`, `the connection of ${slug}`);
      // Checked right after the sign-in, before the server's page: only the caller who got the link.
      const use = await options.flows.useConnectRequest(id, user.sub, now());
      switch (use.outcome) {
        case 'used_now':
          if (use.request.server !== slug)
            return refusal(server, 400, 'connect_link_invalid', 'This connect link is for another MCP server.');
          return startAuthorization(server, user.sub, slug);
        case 'user_mismatch':
          return refusal(
            server,
            403,
            'connection_user_mismatch',
            'This connect link was made for another user of the gateway. Nothing was connected: sign in as the user whose application showed the link.',
          );
        case 'already_used':
          return refusal(
            server,
            410,
            'connect_link_used',
            'This connect link was used already. Try the request in your application again for a new one.',
          );
        case 'expired':
          return refusal(
            server,
            410,
            'connect_link_expired',
            'This connect link has expired (links last 10 minutes). Try the request in your application again for a new one.',
          );
        default:
          return refusal(server, 404, 'connect_link_unknown', 'This connect link is not known here.');
      }
    }),
  );

  router.get(
    '/:slug/start',
    answer(async (req, server) => {
      const slug = req.params.slug as string;
      if (!SLUG.test(slug) || !oauthServer(slug))
        return refusal(
          server,
          404,
          'mcp_server_not_found',
          'No MCP server of this gateway needs a connection by that name.',
        );
      const cookies = oauthPackage().readCookies(req.headers.cookie);
      const user = server.pageUser(cookies);
      if (user === undefined) return server.signInForPage('/connect', 'your MCP server connections');
      if (!server.checkPageForm(cookies, undefined, req.query.csrf, 'connect-start'))
        return refusal(
          server,
          403,
          'csrf_token_invalid',
          'This link is not from your connections page: open /connect again.',
        );
      return startAuthorization(server, user.sub, slug);
    }),
  );

  router.post(
    '/:slug/disconnect',
    form,
    answer(async (req, server) => {
      const slug = req.params.slug as string;
      const cookies = oauthPackage().readCookies(req.headers.cookie);
      const user = server.pageUser(cookies);
      const body = (typeof req.body === 'object' && req.body !== null ? req.body : {}) as Record<string, unknown>;
      if (user === undefined || !server.checkPageForm(cookies, req.headers.origin, body.csrf, 'connect-disconnect'))
        return refusal(
          server,
          403,
          'csrf_token_invalid',
          'This form is not from your connections page: open /connect again.',
        );
      if (SLUG.test(slug)) await options.flows.disconnect(user.sub, slug, `user:${user.sub}`);
      return { kind: 'redirect', location: `${server.issuer}/connect`, csp: server.page(200, '').csp, cookies: [] };
    }),
  );

  callbackRouter.get(
    '/callback',
    answer(async (req, server) => {
      const state = typeof req.query.state === 'string' ? req.query.state : '';
      if (!STATE.test(state))
        return refusal(
          server,
          400,
          'connect_state_invalid',
          'The authorization server sent back no usable state: start the connection again.',
        );
      const cookieName = flowCookieName(state);
      const cookies = oauthPackage().readCookies(req.headers.cookie);
      // Only the browser that started this authorization may finish it (a code from another session is refused).
      if (cookies[cookieName] !== '1')
        return refusal(
          server,
          400,
          'connect_state_invalid',
          'This authorization was not started in this browser: start the connection again.',
        );
      const ended = `${cookieName}=; Path=${FLOW_PATH}; HttpOnly; SameSite=Lax; Max-Age=0`;
      const callbackUrl = new URL(req.originalUrl, `${server.issuer}/`);
      const made = await options.flows.finish(callbackUrl, state);
      return page(server, 200, connectedPage(made.server), [ended]);
    }),
  );

  callbackRouter.get('/:slug/client.json', (req, res, next) => {
    const document = options.flows.clientMetadataDocument(req.params.slug as string);
    if (document === undefined) {
      next();
      return;
    }
    res.setHeader('cache-control', 'public, max-age=3600');
    res.json(document);
  });
  return { pages: router, callback: callbackRouter };
}

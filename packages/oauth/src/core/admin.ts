import type { IncomingHttpHeaders } from 'node:http';
import type { AuthorizationServer } from './authorization-server';
import type { Grant } from './store';

/** The admin access check of the admin API (`AdminAccess` of @gw/catalog). */
export interface OAuthAdminAccess {
  /** Resolves with the admin behind the request's credential; throws an error with `status` and `code` otherwise. */
  authorize(headers: IncomingHttpHeaders): Promise<{ actor: string }>;
}

/** One admin request, framework-free. */
export interface OAuthAdminRequest {
  method: string;
  /** The path below `/admin/v1/oauth`, such as `/grants/<id>`. */
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
}

/** An admin answer: a status and a JSON body (the generic error shape of CONTRACT section 7 on failure). */
export interface OAuthAdminAnswer {
  status: number;
  body: unknown;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function failure(status: number, code: string, message: string, type = 'invalid_request_error'): OAuthAdminAnswer {
  return { status, body: { error: { message, type, code } } };
}

function grantView(grant: Grant) {
  return {
    id: grant.id,
    object: 'oauth.grant',
    clientId: grant.clientId,
    user: grant.userId,
    resource: grant.resource,
    scopes: grant.scopes,
    createdAt: grant.createdAt.toISOString(),
    lastUsedAt: grant.lastUsedAt?.toISOString() ?? null,
    expiresAt: grant.expiresAt.toISOString(),
    revokedAt: grant.revokedAt?.toISOString() ?? null,
    revokedReason: grant.revokedReason,
  };
}

/**
 * The operator routes of CONTRACT section 11, below `/admin/v1/oauth`, behind the admin API's
 * access check: `GET /clients` (registered clients), `GET /grants?user=<id>` (grants with client,
 * resource, scopes, created, last used), `DELETE /grants/<id>` (revokes the grant's tokens on
 * every instance within 1 s; audited).
 */
export async function handleOAuthAdmin(
  server: AuthorizationServer,
  access: OAuthAdminAccess,
  request: OAuthAdminRequest,
): Promise<OAuthAdminAnswer> {
  let actor: string;
  try {
    ({ actor } = await access.authorize(request.headers));
  } catch (error) {
    const e = error as { status?: unknown; code?: unknown; message?: unknown; type?: unknown };
    if (typeof e.status === 'number' && typeof e.code === 'string')
      return failure(e.status, e.code, String(e.message), typeof e.type === 'string' ? e.type : undefined);
    throw error;
  }
  const { method, path } = request;
  if (path === '/clients' || path === '/clients/') {
    if (method !== 'GET' && method !== 'HEAD') return failure(405, 'method_not_allowed', 'Use GET.');
    return { status: 200, body: { object: 'list', data: await server.store.listClients() } };
  }
  if (path === '/grants' || path === '/grants/') {
    if (method !== 'GET' && method !== 'HEAD') return failure(405, 'method_not_allowed', 'Use GET.');
    const user = request.query.get('user') ?? undefined;
    if (user !== undefined && (user === '' || user.length > 256))
      return {
        status: 400,
        body: {
          error: {
            message: 'user must be a user id of at most 256 characters.',
            type: 'invalid_request_error',
            code: 'invalid_request',
            param: 'user',
          },
        },
      };
    return { status: 200, body: { object: 'list', data: (await server.store.listGrants(user)).map(grantView) } };
  }
  const match = /^\/grants\/([^/]+)\/?$/.exec(path);
  if (match) {
    const id = decodeURIComponent(match[1] as string);
    if (!UUID.test(id)) return failure(404, 'not_found', 'No such grant.');
    const grant = await server.store.getGrant(id);
    if (!grant) return failure(404, 'not_found', 'No such grant.');
    if (method === 'GET' || method === 'HEAD') return { status: 200, body: grantView(grant) };
    if (method !== 'DELETE') return failure(405, 'method_not_allowed', 'Use GET or DELETE.');
    await server.revokeGrant(id, actor, 'revoked_by_admin');
    return { status: 200, body: grantView((await server.store.getGrant(id)) as Grant) };
  }
  return failure(404, 'route_not_found', 'No such OAuth admin route.');
}

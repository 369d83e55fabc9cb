import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { createAdminApi, useParsedBody, type AdminApiOptions } from './core/admin-api';

/**
 * The admin API as Express middleware: `app.use('/admin/v1', adminApi({ store, access, … }))`.
 * Safe after `express.json()`: a body the app parsed already is used as it is.
 */
export function adminApi(options: AdminApiOptions): RequestHandler {
  if (typeof options === 'object' && options !== null && 'method' in options && 'socket' in options) {
    throw new TypeError('adminApi is a factory: mount it as app.use("/admin/v1", adminApi({ store, access })).');
  }
  const handle = createAdminApi(options);
  return function adminApiMiddleware(req: Request, res: Response, next: NextFunction): void {
    if ((req as Request & { _body?: boolean })._body === true) useParsedBody(req, req.body);
    handle(req, res, req.url).catch(next);
  };
}

import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { createConsole, type ConsoleOptions } from './core/console';

/**
 * The console as Express middleware: `app.use('/console', gatewayConsole({ access, adminApi, sessionSecret }))`.
 * Mount it before any body parser, or after one: the sign-in and the admin calls read their own bodies
 * only when nothing parsed them.
 */
export function gatewayConsole(options: ConsoleOptions): RequestHandler {
  if (typeof options === 'object' && options !== null && 'method' in options && 'socket' in options) {
    throw new TypeError('gatewayConsole is a factory: mount it as app.use("/console", gatewayConsole({ ... })).');
  }
  const handle = createConsole(options);
  return function gatewayConsoleMiddleware(req: Request, res: Response, next: NextFunction): void {
    handle(req, res, req.url).catch(next);
  };
}

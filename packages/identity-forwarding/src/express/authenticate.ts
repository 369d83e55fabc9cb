import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { Authenticator, type AuthenticatorOptions } from '../core/authenticator';
import { detectMissingCall } from './shared';

/** Options of {@link authenticate}. */
export interface AuthenticateOptions extends AuthenticatorOptions {
  /**
   * The RFC 9728 metadata URL to name in 401 challenges (`resource_metadata`), for routes where
   * clients discover OAuth, such as `/mcp/*`. Used only when `jwtValidation` is set. Default: none.
   */
  resourceMetadataUrl?: (req: Request) => string | undefined;
}

/** The middleware returned by {@link authenticate}, with its core exposed for metrics. */
export type AuthenticateMiddleware = RequestHandler & { readonly authenticator: Authenticator };

/**
 * Express middleware that establishes who is calling (gateway API key from `x-gateway-api-key`,
 * `x-portkey-api-key`, `Authorization: Bearer` or `x-api-key`; or an identity-provider JWT in
 * `Authorization: Bearer`) and sets `req.callerIdentity`. Failures go to `next(err)` with a
 * stable `code`, `status` and a `WWW-Authenticate` header for 401s.
 */
export function authenticate(options: AuthenticateOptions = {}): AuthenticateMiddleware {
  detectMissingCall(options, 'authenticate');
  const authenticator = new Authenticator(options);
  const resourceMetadataUrl = options.resourceMetadataUrl;
  if (resourceMetadataUrl !== undefined && typeof resourceMetadataUrl !== 'function')
    throw new TypeError('authenticate resourceMetadataUrl must be a function (req) => URL string | undefined.');
  const middleware = function authenticateMiddleware(req: Request, _res: Response, next: NextFunction): void {
    const challenge = resourceMetadataUrl ? { resourceMetadataUrl: resourceMetadataUrl(req) } : {};
    authenticator.authenticate(req.rawHeaders, challenge).then(
      (identity) => {
        req.callerIdentity = identity;
        next();
      },
      (error: unknown) => next(error),
    );
  };
  return Object.assign(middleware, { authenticator });
}

import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { rejectUnknownOptions } from '@gw/options';
import { TokenVerificationError } from './core/errors';
import { RemoteKeySet } from './core/key-sets';
import { GATEWAY_TOKEN_ISSUER } from './core/signer';
import type { JsonWebKeySet } from './core/signing-key';
import { verifyToken } from './core/verify';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** The verified claims of the gateway's identity token (set by `verifyGatewayIdentity`). */
      gatewayIdentity?: Record<string, unknown>;
    }
  }
}

function detectMissingCall(options: unknown, factory: string): void {
  if (typeof options === 'object' && options !== null && 'method' in options && 'headers' in options) {
    throw new TypeError(`${factory} is a factory: mount it as app.use(${factory}({ ... })), not app.use(${factory}).`);
  }
}

/**
 * Serves a key set as `GET /.well-known/jwks.json` expects: `{"keys":[...]}` with
 * `Cache-Control: public, max-age=300`. The body is serialised once, here.
 */
export function jwksHandler(jwks: JsonWebKeySet): RequestHandler {
  detectMissingCall(jwks, 'jwksHandler');
  if (!jwks || !Array.isArray(jwks.keys))
    throw new TypeError('jwksHandler needs a key set: jwksHandler({ keys: [...] }).');
  const body = Buffer.from(JSON.stringify({ keys: jwks.keys }));
  return function jwksMiddleware(_req: Request, res: Response): void {
    res.setHeader('content-type', 'application/json; charset=utf-8');
    res.setHeader('cache-control', 'public, max-age=300');
    res.end(body);
  };
}

/** Options of {@link verifyGatewayIdentity}. */
export interface VerifyGatewayIdentityOptions {
  /** The gateway's JWKS address, for example `https://gateway.example.com/.well-known/jwks.json`. Required. */
  jwksUri: string;
  /** The audience the gateway signs for this server: its configured `url` or `jwt_audience`. Required. */
  audience: string;
  /** Header that carries the token. Default `x-user-jwt`. */
  headerName?: string;
  /** Expected `iss`. Default `gateway-mcp-gateway`. */
  issuer?: string;
  /** Allowed clock skew in seconds. Default 30. */
  clockToleranceSeconds?: number;
}

/**
 * Express middleware for MCP server authors: verifies the identity token the gateway forwards
 * (RS256, key by `kid` from the gateway's JWKS, cached; `iss`, `aud`, `exp`), then sets
 * `req.gatewayIdentity` to its claims. Answers 401 with a JSON error otherwise.
 */
export function verifyGatewayIdentity(options: VerifyGatewayIdentityOptions): RequestHandler {
  detectMissingCall(options, 'verifyGatewayIdentity');
  if (!options || typeof options.audience !== 'string' || options.audience === '') {
    throw new TypeError('verifyGatewayIdentity needs an audience: the URL the gateway uses for this server.');
  }
  rejectUnknownOptions(
    options,
    ['jwksUri', 'audience', 'headerName', 'issuer', 'clockToleranceSeconds'],
    'verifyGatewayIdentity',
  );
  for (const name of ['headerName', 'issuer'] as const) {
    if (options[name] !== undefined && (typeof options[name] !== 'string' || options[name] === ''))
      throw new TypeError(`verifyGatewayIdentity ${name} must be a non-empty string.`);
  }
  const tolerance = options.clockToleranceSeconds;
  if (tolerance !== undefined && !(Number.isFinite(tolerance) && tolerance >= 0))
    throw new TypeError(
      'verifyGatewayIdentity clockToleranceSeconds must be a number of seconds of at least 0, such as 30.',
    );
  const keys = new RemoteKeySet({ jwksUri: options.jwksUri });
  const headerName = (options.headerName ?? 'x-user-jwt').toLowerCase();
  const verifyOptions = {
    keys,
    issuer: options.issuer ?? GATEWAY_TOKEN_ISSUER,
    audience: options.audience,
    clockToleranceSeconds: options.clockToleranceSeconds ?? 30,
  };
  return function verifyGatewayIdentityMiddleware(req: Request, res: Response, next: NextFunction): void {
    const token = req.headers[headerName];
    if (typeof token !== 'string' || token === '') {
      reject(res, 'missing_identity_token', `The request has no ${headerName} header.`);
      return;
    }
    verifyToken(token, verifyOptions).then(
      ({ payload }) => {
        req.gatewayIdentity = payload;
        next();
      },
      (error: unknown) => {
        if (error instanceof TokenVerificationError) reject(res, error.code, error.message);
        else next(error);
      },
    );
  };
}

function reject(res: Response, code: string, message: string): void {
  res.status(401);
  res.setHeader('www-authenticate', 'Bearer error="invalid_token"');
  res.json({ error: { message, type: 'authentication_error', code } });
}

import type { ErrorRequestHandler, NextFunction, Request, Response } from 'express';
import { IdentityForwardingError } from '../core/errors';
import type { GatewayIdentity } from '../core/identity';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** Who is calling: set by `authenticate`. */
      callerIdentity?: GatewayIdentity;
    }
  }
}

/** A pino-compatible logger; only the levels used here. */
export interface Logger {
  warn(object: object, message: string): void;
  debug?(object: object, message: string): void;
}

/** What an upstream call records for the host's logs and metrics. */
export interface GatewayLocals {
  target?: string;
  upstreamStatus?: number;
  upstreamMs?: number;
  /** True when the response was cut off because the upstream sent nothing for `streamIdleTimeoutMs`. */
  streamIdleTimeout?: boolean;
  /** When the first byte of the MCP server's response body was passed on (`performance.now()`). */
  firstByteAt?: number;
  /** The JSON-RPC method of the call (`tools/call`…), when its body named one. */
  mcpMethod?: string;
  /** The tool of a `tools/call`. */
  mcpTool?: string;
  /**
   * The `code` of the server credential's failure the gateway answered with (`connection_required`,
   * `token_exchange_failed`…), when it answered a JSON-RPC error in place of the server.
   */
  upstreamCredentialError?: string;
}

/** Throws when a factory is mounted without being called (`app.use(authenticate)`). */
export function detectMissingCall(options: unknown, factory: string): void {
  if (typeof options === 'object' && options !== null && 'method' in options && 'socket' in options) {
    throw new TypeError(`${factory} is a factory: mount it as app.use(${factory}({ ... })), not app.use(${factory}).`);
  }
}

/**
 * Express error handler for the MCP gateway's routes: renders an {@link IdentityForwardingError}
 * (and anything else, as `500 internal_error`) in the generic error shape
 * `{"error":{"message","type","code"}}`, with its headers (`WWW-Authenticate`, `Allow`). Mount it
 * after `authenticate` and `identityForwarding`. A response already started is left to Express.
 */
export function identityForwardingErrorHandler(): ErrorRequestHandler {
  return function identityForwardingErrorHandler(error: unknown, _req: Request, res: Response, next: NextFunction) {
    if (res.headersSent) return next(error);
    if (error instanceof IdentityForwardingError) {
      res.status(error.status).set(error.headers);
      res.json({ error: { message: error.message, type: error.type, code: error.code } });
      return;
    }
    res.status(500).json({
      error: { message: 'The gateway failed to handle the request.', type: 'api_error', code: 'internal_error' },
    });
  };
}

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
}

/** Throws when a factory is mounted without being called (`app.use(authenticate)`). */
export function detectMissingCall(options: unknown, factory: string): void {
  if (typeof options === 'object' && options !== null && 'method' in options && 'socket' in options) {
    throw new TypeError(`${factory} is a factory: mount it as app.use(${factory}({ ... })), not app.use(${factory}).`);
  }
}

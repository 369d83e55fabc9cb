import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import type { IncomingHttpHeaders } from 'node:http';
import type { NextFunction, Response } from 'express';
import type { Span } from '@gw/tracing';
import type { GatewayLocals } from '@gw/identity-forwarding/identity';
import type { McpToolGate } from '../gate/tool-gate';
import type { UpstreamCredential } from '../upstream-credentials/upstream-credentials';

export const UPSTREAM_PATH = Symbol('gateway.upstreamPath');
export const PROXY_STATE = Symbol('gateway.proxyState');

export interface ProxyState {
  next: NextFunction;
  started: number;
  timedOut: boolean;
  /** The request body read for inspection: sent instead of the (consumed) stream. */
  body?: Buffer;
  /**
   * A small body read whole before it is forwarded when nothing inspects it (see
   * {@link readAheadLength}): sent as read, with the client's own headers.
   */
  readAhead?: Buffer;
  /** The tool gate every answer is read through. */
  gate?: McpToolGate;
  maxAnswerBytes?: number;
  /** The MCP call's span. */
  span: Span;
  /** Whether the client's request has a body (a length or a chunked body), which is then streamed on. */
  hasBody: boolean;
  /** The server credential this call carries (see `upstreamCredentials`). */
  credential?: UpstreamCredential;
  /** Whether the call was sent again after the server's `401`. */
  retried?: boolean;
}

/** The instrumentation scope of the MCP gateway's spans. */
export const TRACER_NAME = '@gw/identity-forwarding';

export type ProxiedRequest = IncomingMessage & { [UPSTREAM_PATH]?: string; [PROXY_STATE]?: ProxyState };

export function locals(res: Response | ServerResponse): GatewayLocals {
  const r = res as Response;
  r.locals ??= {};
  return ((r.locals as { gateway?: GatewayLocals }).gateway ??= {});
}

/** The answer of an MCP server, from undici (POST) or node:http (GET, DELETE). */
export interface UpstreamAnswer {
  statusCode: number;
  headers: IncomingHttpHeaders;
  body: Readable;
}

/** Marks an upstream body the gateway ended on purpose: its `error` then ends nothing else. */
const DISCARDED = Symbol('gateway.discarded');

/** Ends an upstream body on purpose (its error event is then not the client's concern). */
export function discard(body: Readable): void {
  (body as Readable & { [DISCARDED]?: boolean })[DISCARDED] = true;
  // Its abort error is expected: heard here, so an answer dropped before anything read it ends nothing.
  if (body.listenerCount('error') === 0) body.on('error', () => undefined);
  body.destroy();
}

/** Whether an upstream body ended on purpose (see {@link discard}). */
export function discarded(body: Readable): boolean {
  return (body as Readable & { [DISCARDED]?: boolean })[DISCARDED] === true;
}

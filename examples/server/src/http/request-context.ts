import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import type { GatewayLocals } from '@gw/model-router';
import type { GatewayMetrics } from '../observability/metrics';
import { routeFamily } from './route-family';

const TRACE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Gives the response `x-gateway-request-id` and `x-gateway-trace-id` (echoed from
 * `x-gateway-trace-id` or `x-portkey-trace-id` when well-formed, otherwise generated), and
 * writes one log line and the metrics of the request when it ends. `path` is the request path
 * without its query string. Works on any node:http request.
 */
export function trackRequest(
  logger: Logger,
  metrics: GatewayMetrics,
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
): void {
  const started = performance.now();
  const requestId = randomUUID();
  const sent = req.headers['x-gateway-trace-id'] ?? req.headers['x-portkey-trace-id'];
  const traceId = typeof sent === 'string' && TRACE_ID.test(sent) ? sent : randomUUID();
  res.setHeader('x-gateway-request-id', requestId);
  res.setHeader('x-gateway-trace-id', traceId);
  res.once('close', () => {
    const family = routeFamily(path);
    const gateway: GatewayLocals = (res as { locals?: { gateway?: GatewayLocals } }).locals?.gateway ?? {};
    const status = res.headersSent ? res.statusCode : 499;
    metrics.recordRequest(family, status, gateway.target, gateway.upstreamMs);
    if (gateway.streamIdleTimeout) metrics.recordStreamIdleTimeout(family, gateway.target);
    if (gateway.cacheStatus !== undefined) metrics.recordCache(gateway.cacheStatus, gateway.cacheTokensSaved);
    if (gateway.upstreamAttempts !== undefined && gateway.upstreamAttempts > 1) {
      metrics.recordRetries(family, gateway.target, gateway.upstreamAttempts - 1);
    }
    logger.info(
      {
        requestId,
        traceId,
        method: req.method,
        route: family,
        path,
        status,
        target: gateway.target,
        upstreamStatus: gateway.upstreamStatus,
        upstreamMs: gateway.upstreamMs === undefined ? undefined : Math.round(gateway.upstreamMs * 100) / 100,
        upstreamAttempts: gateway.upstreamAttempts,
        streamIdleTimeout: gateway.streamIdleTimeout,
        cacheStatus: gateway.cacheStatus,
        durationMs: Math.round((performance.now() - started) * 100) / 100,
        completed: res.writableFinished,
      },
      'request',
    );
  });
}

/** {@link trackRequest} as the Express app's first middleware. */
export function requestContext(logger: Logger, metrics: GatewayMetrics) {
  return function requestContextMiddleware(req: Request, res: Response, next: NextFunction): void {
    trackRequest(logger, metrics, req, res, req.path);
    next();
  };
}

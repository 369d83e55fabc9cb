import {
  Agent as HttpAgent,
  type ClientRequest,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
  type ServerResponse,
} from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { Readable } from 'node:stream';
import { parse as parseLegacyUrl } from 'node:url';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { createProxyMiddleware } from 'http-proxy-middleware';
import { Pool } from 'undici';
import { UpstreamAbort } from '@gw/upstream';
import { writeAnswer } from './answer-writer';
import { credentialFailed, setCredentialHeaders } from './call-credentials';
import { tapRpcMethod } from './call-naming';
import { PROXY_STATE, UPSTREAM_PATH, discard, locals, type ProxiedRequest, type ProxyState } from './proxy-state';
import { mapUpstreamError } from './upstream-errors';

/** One server's upstream connections: POSTs through an undici pool, GET and DELETE through http-proxy. */
export interface UpstreamConnections {
  /** Sends the prepared request (path, headers and state set by the middleware) and writes the answer. */
  forward(req: Request, res: Response, next: NextFunction): void;
  /** Closes the pool once its requests in flight are over. */
  close(): void;
}

/** Request headers undici refuses to send (it writes its own framing, and `Expect` is not supported). */
const UNDICI_REFUSED_HEADERS: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'upgrade',
  'expect',
  'host',
]);

/**
 * One server's keep-alive connections, built once per server: an undici `Pool` for POSTs (the
 * MCP calls; Node's HTTP client costs about a fifth more CPU per request) and an http-proxy
 * instance for the GET event stream and DELETE.
 */
export function createUpstream(url: URL, timeoutMs: number, idleTimeoutMs: number): UpstreamConnections {
  const pool = new Pool(url.origin, {
    connections: 256,
    pipelining: 1,
    keepAliveTimeout: 30_000,
    // The timeout covers connecting too, as it did with node:http.
    connect: { timeout: timeoutMs },
  });
  const proxy = createUpstreamProxy(url, timeoutMs, idleTimeoutMs);
  const post = (req: Request, res: Response): void => {
    const state = (req as ProxiedRequest)[PROXY_STATE] as ProxyState;
    const record = locals(res);
    // Here, just before the body is sent, so the tap sees every chunk.
    tapRpcMethod(req, record, state.span, state.body ?? state.readAhead);
    const headers: Record<string, string | string[]> = {};
    const incoming = req.headers as OutgoingHttpHeaders;
    for (const name in incoming) {
      const value = incoming[name];
      if (value === undefined || UNDICI_REFUSED_HEADERS.has(name)) continue;
      headers[name] = typeof value === 'number' ? String(value) : value;
    }
    let body: Buffer | Readable | undefined;
    if (state.body !== undefined) {
      // The stream was read for inspection: its bytes go as read, as the JSON the gate read (it
      // checked the client's type said just that).
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(state.body.length);
      body = state.body;
    } else if (state.readAhead !== undefined) {
      // Read whole as the client sent it (its declared length): its own headers, content type included.
      headers['content-length'] = String(state.readAhead.length);
      body = state.readAhead;
    } else if (state.hasBody) {
      // As the client sent it; without a forwarded `content-length`, undici sends it chunked.
      body = req;
      // The tap's listener set the stream flowing: it waits for undici, which resumes it once the
      // request is on a connection.
      req.pause();
    }
    const abort = new UpstreamAbort();
    res.once('close', () => {
      if (!res.writableFinished) abort.abort();
    });
    const send = (): void => {
      pool
        .request({
          path: (req as ProxiedRequest)[UPSTREAM_PATH] as string,
          method: 'POST',
          headers,
          body,
          // The timeout covers waiting for the response headers; a stream may then last (the idle
          // timeout between chunks is the gateway's own, see writeAnswer).
          headersTimeout: timeoutMs,
          bodyTimeout: 0,
          signal: abort,
        })
        .then(
          (answer) => {
            if (abort.aborted) {
              discard(answer.body);
              return;
            }
            const rejected = state.credential?.rejected;
            if (answer.statusCode === 401 && rejected !== undefined && Buffer.isBuffer(body)) {
              // The server refused its credential: renewed once and sent once more; a second
              // refusal ends it, and the caller is told what to do (never the server's challenge).
              discard(answer.body);
              const final = state.retried === true;
              state.retried = true;
              rejected(final).then(
                (renewed) => {
                  if (abort.aborted) return;
                  state.credential = renewed;
                  setCredentialHeaders(headers, renewed);
                  send();
                },
                (error: unknown) => credentialFailed(error, req, res, state),
              );
              return;
            }
            writeAnswer(
              { statusCode: answer.statusCode, headers: answer.headers as IncomingHttpHeaders, body: answer.body },
              res,
              state,
              idleTimeoutMs,
            );
          },
          (error: NodeJS.ErrnoException) => {
            if (abort.aborted || res.headersSent || res.destroyed) {
              res.destroy();
              return;
            }
            state.next(mapUpstreamError(error, false));
          },
        );
    };
    send();
  };
  return {
    forward(req, res, next) {
      if (req.method === 'POST') post(req, res);
      else proxy(req, res, next);
    },
    close() {
      pool.close().catch(() => undefined);
    },
  };
}

/** One http-proxy-middleware instance per server (GET and DELETE), with keep-alive connections. */
function createUpstreamProxy(url: URL, timeoutMs: number, idleTimeoutMs: number): RequestHandler {
  const agent =
    url.protocol === 'https:'
      ? new HttpsAgent({ keepAlive: true, maxSockets: 256 })
      : new HttpAgent({ keepAlive: true, maxSockets: 256 });
  return createProxyMiddleware<Request, Response>({
    // Parsed once here, as http-proxy would parse the string again on every request (legacy
    // `url.parse`, ~9 µs of CPU a request in a profile of MCP tools/call).
    target: parseLegacyUrl(url.origin),
    changeOrigin: true,
    agent,
    // The response is written here (proxyRes below): the proxy's own copy would pass hop-by-hop
    // headers on and add a `Connection` of its own.
    selfHandleResponse: true,
    pathRewrite: (_path, req) => (req as ProxiedRequest)[UPSTREAM_PATH] as string,
    on: {
      proxyReq: (proxyReq: ClientRequest, req, res) => {
        const state = (req as ProxiedRequest)[PROXY_STATE] as ProxyState;
        // The timeout covers waiting for the response headers; a stream may then last.
        const timer = setTimeout(() => {
          state.timedOut = true;
          proxyReq.destroy(new Error('upstream timeout'));
        }, timeoutMs);
        proxyReq.once('response', () => clearTimeout(timer));
        proxyReq.once('close', () => clearTimeout(timer));
        res.once('close', () => {
          if (!res.writableFinished) proxyReq.destroy();
        });
      },
      proxyRes: (proxyRes, req, res) => {
        const state = (req as ProxiedRequest)[PROXY_STATE] as ProxyState;
        writeAnswer(
          { statusCode: proxyRes.statusCode ?? 502, headers: proxyRes.headers, body: proxyRes },
          res as ServerResponse,
          state,
          idleTimeoutMs,
        );
      },
      error: (error, req, res) => {
        const state = (req as ProxiedRequest)[PROXY_STATE];
        const response = res as ServerResponse;
        if (!state || typeof response.writeHead !== 'function') {
          (res as { destroy?: () => void }).destroy?.();
          return;
        }
        if (response.headersSent || response.destroyed) {
          response.destroy();
          return;
        }
        state.next(mapUpstreamError(error as NodeJS.ErrnoException, state.timedOut));
      },
    },
  }) as unknown as RequestHandler;
}

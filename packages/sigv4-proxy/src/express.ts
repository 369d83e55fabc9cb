import type { ErrorRequestHandler, NextFunction, Request, RequestHandler, Response } from 'express';
import { ResolvedCustomHosts } from './core/custom-host';
import {
  AccessDeniedError,
  BodyTooLargeError,
  CustomHostRequiredError,
  InvalidConfigHeaderError,
  RawBodyUnavailableError,
  Sigv4ProxyError,
} from './core/errors';
import { resolveIntegration, type AwsIntegration, type ResolvedIntegration } from './core/integration';
import { rejectUnknownOptions } from '@gw/options';
import { IntegrationSigner } from './core/signer';
import {
  SpanKind,
  SpanStatusCode,
  injectTraceHeaders,
  requestTraceContext,
  setDefinedAttributes,
  startSpan,
  type Context,
} from '@gw/tracing';
import { UpstreamAbort } from '@gw/upstream';
import { createDispatcher, isEventStream, isForwardedResponseHeader, mapUpstreamError } from './core/upstream';

/** Options of {@link sigv4Proxy}. */
export interface Sigv4ProxyOptions {
  /** The catalog's AWS integrations. Give this or `resolveIntegration`. */
  integrations?: readonly AwsIntegration[];
  /**
   * Looks an integration up by slug on every request, for hosts whose catalog changes while they
   * run: return the same object while the integration is unchanged (its signer is kept per
   * object) and a new one when it changed (rotated credentials are used from the next request).
   */
  resolveIntegration?: (slug: string) => AwsIntegration | undefined;
  /** Largest request body, in bytes. Default 10485760 (10 MiB). */
  maxBodyBytes?: number;
  /** Time to wait for the AWS response headers, in ms. Default 30000. */
  timeoutMs?: number;
  /**
   * Longest silence between two chunks of an AWS response body once its headers arrived, in ms
   * (a stream included); after it the gateway closes the client connection and the upstream one.
   * A client that reads slowly does not count. Default 60000.
   */
  idleTimeoutMs?: number;
  /**
   * The host's access rule: called with the request and the integration's slug before anything
   * else is done for it; `false` answers `403 access_denied`. Must not wait. Default: none (every
   * caller may use every integration).
   */
  authorize?: (req: Request, integration: { slug: string }) => boolean;
}

interface GatewayLocals {
  target?: string;
  upstreamStatus?: number;
  upstreamMs?: number;
  streamIdleTimeout?: boolean;
}

function header(req: Request, name: string): string | undefined {
  const value = req.headers[`x-gateway-${name}`] ?? req.headers[`x-portkey-${name}`];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function gatewayConfig(req: Request): Record<string, unknown> {
  const raw = header(req, 'config');
  if (raw === undefined) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new InvalidConfigHeaderError('x-gateway-config is not valid JSON.');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new InvalidConfigHeaderError('x-gateway-config must be a JSON object.');
  }
  return parsed as Record<string, unknown>;
}

function readRawBody(req: Request, limit: number): Promise<Buffer> {
  if (req.readableEnded || (req as { body?: unknown }).body !== undefined) {
    return Promise.reject(
      new RawBodyUnavailableError('Mount sigv4Proxy before any body parser: it signs the exact request bytes.'),
    );
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.removeAllListeners('data');
        req.resume();
        reject(new BodyTooLargeError(`The request body is larger than ${limit} bytes.`));
        return;
      }
      chunks.push(chunk);
    });
    req.once('end', () => resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)));
    req.once('error', reject);
  });
}

/**
 * Express middleware, mounted by the host at `/v1` after the model routes. For a request whose
 * provider (`x-gateway-provider`, `x-portkey-provider`, or `provider` in `x-gateway-config`) is one
 * of its AWS integrations, it signs the request with SigV4 (service `bedrock`) and sends it to the
 * custom host plus the path without the mount prefix, with trailing slash, encoding and query
 * exactly as sent. Any other request goes to `next()`.
 */
export function sigv4Proxy(options: Sigv4ProxyOptions): RequestHandler {
  if (typeof options === 'object' && options !== null && 'method' in options && 'socket' in options) {
    throw new TypeError(
      'sigv4Proxy is a factory: mount it as app.use("/v1", sigv4Proxy({ ... })), not app.use(sigv4Proxy).',
    );
  }
  if (!options || (!options.integrations && !options.resolveIntegration)) {
    throw new TypeError(
      "sigv4Proxy needs { integrations: [...] } (the catalog's AWS integrations) or { resolveIntegration }.",
    );
  }
  rejectUnknownOptions(
    options,
    ['integrations', 'resolveIntegration', 'maxBodyBytes', 'timeoutMs', 'idleTimeoutMs', 'authorize'],
    'sigv4Proxy',
  );
  const authorize = options.authorize;
  if (authorize !== undefined && typeof authorize !== 'function') {
    throw new TypeError('authorize must be a function (req, { slug }) => boolean.');
  }
  if (options.integrations !== undefined && !Array.isArray(options.integrations)) {
    throw new TypeError('integrations must be a list such as [{ slug, accessKeyId, secretAccessKey, region }].');
  }
  if (options.resolveIntegration !== undefined && typeof options.resolveIntegration !== 'function') {
    throw new TypeError('resolveIntegration must be a function (slug) => integration | undefined.');
  }
  const maxBodyBytes = options.maxBodyBytes ?? 10 * 1024 * 1024;
  if (!Number.isSafeInteger(maxBodyBytes) || maxBodyBytes <= 0)
    throw new TypeError('maxBodyBytes must be a positive whole number of bytes, for example 10485760.');
  const timeoutMs = options.timeoutMs ?? 30_000;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0)
    throw new TypeError('timeoutMs must be a positive number of milliseconds, for example 30000.');
  const idleTimeoutMs = options.idleTimeoutMs ?? 60_000;
  if (!Number.isFinite(idleTimeoutMs) || idleTimeoutMs <= 0)
    throw new TypeError('idleTimeoutMs must be a positive number of milliseconds, for example 60000.');
  const known = new Map<string, SigningEntry>();
  const add = (integration: AwsIntegration) => {
    const resolved = resolveIntegration(integration);
    const entry = signingEntry(resolved);
    known.set(resolved.slug, entry);
    return entry;
  };
  for (const integration of options.integrations ?? []) {
    if (known.has(integration.slug)) throw new TypeError(`Two AWS integrations have the slug "${integration.slug}".`);
    add(integration);
  }
  // Integrations from `resolveIntegration` are looked up on every request, so a rotated or removed
  // one takes effect at once; each integration object gets its signer once.
  const resolvedSigners = new WeakMap<AwsIntegration, SigningEntry>();
  const lookup = (slug: string) => {
    const entry = known.get(slug);
    if (entry || !options.resolveIntegration) return entry;
    const found = options.resolveIntegration(slug);
    if (!found) return undefined;
    let signed = resolvedSigners.get(found);
    if (!signed) {
      signed = signingEntry(resolveIntegration(found));
      resolvedSigners.set(found, signed);
    }
    return signed;
  };
  const dispatcher = createDispatcher();

  return function sigv4ProxyMiddleware(req: Request, res: Response, next: NextFunction): void {
    let config: Record<string, unknown>;
    try {
      config = gatewayConfig(req);
    } catch (error) {
      next(error);
      return;
    }
    const named = header(req, 'provider') ?? (typeof config.provider === 'string' ? config.provider : undefined);
    const entry = named === undefined ? undefined : lookup(named.replace(/^@/, ''));
    if (entry === undefined) {
      next();
      return;
    }
    if (authorize !== undefined && authorize(req, { slug: entry.integration.slug }) !== true) {
      next(new AccessDeniedError(`The caller may not use the integration "${entry.integration.slug}".`));
      return;
    }
    const customHost =
      header(req, 'custom-host') ?? (typeof config.custom_host === 'string' ? config.custom_host : undefined);
    if (customHost === undefined) {
      next(
        new CustomHostRequiredError(
          'An AWS integration needs a custom host: send x-gateway-custom-host, for example bedrock-agent-runtime.us-east-1.amazonaws.com.',
        ),
      );
      return;
    }
    let target;
    try {
      target = entry.targets.resolve(customHost);
    } catch (error) {
      next(error);
      return;
    }
    // `locals` is Express's; on a plain node:http response it is created here.
    const holder = res as { locals?: { gateway?: GatewayLocals } };
    const locals = ((holder.locals ??= {}).gateway ??= {});
    locals.target = entry.integration.slug;
    void forward(req, res, next, entry.signer, target, locals);
  };

  async function forward(
    req: Request,
    res: Response,
    next: NextFunction,
    signer: IntegrationSigner,
    target: { origin: URL; region: string },
    locals: GatewayLocals,
  ): Promise<void> {
    let body: Buffer;
    try {
      body = await readRawBody(req, maxBodyBytes);
    } catch (error) {
      next(error);
      return;
    }
    const url = req.url;
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    const query = q === -1 ? '' : url.slice(q + 1);
    const headers: Record<string, string> = {};
    const contentType = req.headers['content-type'];
    if (contentType) headers['content-type'] = contentType;
    if (req.headers.accept) headers.accept = req.headers.accept;
    if (body.length > 0 || !['GET', 'HEAD', 'DELETE'].includes(req.method))
      headers['content-length'] = String(body.length);
    const abort = new UpstreamAbort();
    const started = performance.now();
    // The AWS call's span; the endpoint gets a traceparent naming it (outside the signed headers).
    const { span, context } = startSpan(
      TRACER_NAME,
      `${req.method} bedrock`,
      requestTraceContext(req),
      SpanKind.CLIENT,
      {
        'http.request.method': req.method,
        'server.address': target.origin.hostname,
        'cloud.region': target.region,
        'gateway.provider.slug': locals.target,
      },
    );
    // `on`, not `once`: a response closes once, and `once` wraps the listener to remove it again.
    res.on('close', () => {
      if (!res.writableFinished) abort.abort();
      setDefinedAttributes(span, { 'http.response.status_code': locals.upstreamStatus });
      if (locals.upstreamStatus === undefined || locals.upstreamStatus >= 500)
        span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    });
    try {
      const signed = signer.signNow(
        { method: req.method, origin: target.origin, path, query, headers, body },
        target.region,
      );
      const upstream = await dispatcher.request({
        origin: target.origin.origin,
        method: req.method as 'GET',
        path: q === -1 ? path : `${path}?${query}`,
        headers: withTraceHeaders(context, signed),
        body: body.length > 0 ? body : undefined,
        headersTimeout: timeoutMs,
        // undici refreshes this timer with every chunk and stops it while the client holds the body back.
        bodyTimeout: idleTimeoutMs,
        signal: abort,
      });
      locals.upstreamStatus = upstream.statusCode;
      locals.upstreamMs = performance.now() - started;
      res.statusCode = upstream.statusCode;
      for (const name in upstream.headers) {
        const value = upstream.headers[name];
        if (value !== undefined && isForwardedResponseHeader(name)) res.setHeader(name, value);
      }
      // A stream may stay quiet for long: its headers leave now, not with its first event.
      if (isEventStream(upstream.headers['content-type'])) res.flushHeaders();
      upstream.body.on('error', (error: { code?: string }) => {
        if (error.code === 'UND_ERR_BODY_TIMEOUT') locals.streamIdleTimeout = true;
        res.destroy();
      });
      upstream.body.pipe(res);
    } catch (error) {
      if (abort.aborted) return;
      next(error instanceof Sigv4ProxyError ? error : mapUpstreamError(error));
    }
  }
}

/** The instrumentation scope of the proxy's spans. */
const TRACER_NAME = '@gw/sigv4-proxy';

/** The signed headers (a fresh object of the signer's) given `traceparent`/`tracestate` of the call's span. */
function withTraceHeaders(context: Context, signed: Record<string, string>): Record<string, string> {
  injectTraceHeaders(context, signed);
  return signed;
}

/** An integration with its signer, and the custom hosts already resolved for it. */
interface SigningEntry {
  integration: ResolvedIntegration;
  signer: IntegrationSigner;
  targets: ResolvedCustomHosts;
}

function signingEntry(integration: ResolvedIntegration): SigningEntry {
  return { integration, signer: new IntegrationSigner(integration), targets: new ResolvedCustomHosts(integration) };
}

/**
 * Express error handler for the SigV4 proxy's routes: renders a {@link Sigv4ProxyError} (and
 * anything else, as `500 internal_error`) in the generic error shape
 * `{"error":{"message","type","code"}}`. Mount it after `sigv4Proxy`. A response already started
 * is left to Express.
 */
export function sigv4ErrorHandler(): ErrorRequestHandler {
  return function sigv4ErrorHandler(error: unknown, _req: Request, res: Response, next: NextFunction) {
    if (res.headersSent) return next(error);
    if (error instanceof Sigv4ProxyError) {
      res.status(error.status).json({ error: { message: error.message, type: error.type, code: error.code } });
      return;
    }
    res.status(500).json({
      error: { message: 'The gateway failed to handle the request.', type: 'api_error', code: 'internal_error' },
    });
  };
}

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import aws4 from 'aws4';
import express, { type ErrorRequestHandler } from 'express';
import { sigv4Proxy, type Sigv4ProxyOptions } from '../src';

export const CREDENTIALS = {
  accessKeyId: 'AKIATESTGATEWAY0001',
  secretAccessKey: 'test/secret+key/for/the/gateway/0123456789',
  sessionToken: 'session-token-for-tests',
};

export async function listen(handler: (req: IncomingMessage, res: ServerResponse) => void) {
  const server = createServer(handler);
  let connections = 0;
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    server,
    origin: `http://127.0.0.1:${port}`,
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface Received {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: Buffer;
  signatureValid: boolean;
  region: string;
  service: string;
}

/**
 * A mock Bedrock endpoint that re-verifies each request's SigV4 signature independently with
 * aws4, over exactly what it received: method, raw path and query, the signed headers, the body
 * bytes, the service and region of the credential scope.
 */
export async function mockBedrock(answer: (req: Received, res: ServerResponse) => void) {
  const received: Received[] = [];
  const server = await listen((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const authorization = String(req.headers.authorization ?? '');
      const scope = /Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request/.exec(authorization);
      const signedNames = /SignedHeaders=([^,]+)/.exec(authorization)?.[1]?.split(';') ?? [];
      const headers: Record<string, string> = {};
      for (const name of signedNames) headers[name] = String(req.headers[name] ?? '');
      const region = scope?.[3] ?? '';
      const service = scope?.[4] ?? '';
      const check = aws4.sign(
        {
          host: req.headers.host,
          method: req.method,
          path: req.url,
          service,
          region,
          headers,
          body: body.length ? body : undefined,
        },
        CREDENTIALS,
      ) as { headers: Record<string, string> };
      const record: Received = {
        method: req.method as string,
        url: req.url as string,
        headers: req.headers,
        body,
        signatureValid: authorization !== '' && check.headers.Authorization === authorization,
        region,
        service,
      };
      received.push(record);
      answer(record, res);
    });
  });
  return { ...server, received };
}

export function errorRenderer(): ErrorRequestHandler {
  return (error, _req, res, _next) => {
    const e = error as { status?: number; code?: string; message: string; type?: string };
    res
      .status(e.status ?? 500)
      .json({ error: { message: e.message, type: e.type ?? 'api_error', code: e.code ?? 'internal_error' } });
  };
}

/** A gateway app: the proxy at /v1, then 404 route_not_found. */
export async function gatewayWith(options: Sigv4ProxyOptions) {
  const app = express();
  app.use('/v1', sigv4Proxy(options));
  app.use((_req, _res, next) => next({ status: 404, code: 'route_not_found', message: 'No route.' }));
  app.use(errorRenderer());
  const server = await listen(app as unknown as (req: IncomingMessage, res: ServerResponse) => void);
  return server;
}

export function integration(allowedOrigin: string) {
  return { slug: 'kb', name: 'KB account', ...CREDENTIALS, region: 'us-east-1', allowedHosts: [allowedOrigin] };
}

export type { Server };

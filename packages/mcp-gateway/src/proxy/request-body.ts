import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NextFunction, Request } from 'express';
import { McpBodyTooLargeError } from '@gw/identity-forwarding/identity';

/** Most bytes of a request body read for its JSON-RPC method: 64 KiB (a larger body's method is not read). */
export const MAX_METHOD_SCAN_BYTES = 64 * 1024;

/**
 * The declared length of a POST body small enough to read whole before it is forwarded (at most
 * 64 KiB, with a `content-length` and no `transfer-encoding`), else undefined: such a body is
 * streamed to the server.
 *
 * Measured: a streamed body (undici's stream writer listens on the long-lived upstream connection
 * for each request) kept each request's objects alive until the next full garbage collection; the
 * MCP `tools/call` of the benchmarks promoted 8.7 KB a request to the old generation streamed and
 * 1.0 KB read whole, for 20 µs more CPU (docs/decisions.md, "Request objects that outlived their
 * request"). A body read whole also leaves in the same write as the headers.
 */
export function readAheadLength(req: IncomingMessage): number | undefined {
  if (req.method !== 'POST' || req.headers['transfer-encoding'] !== undefined) return undefined;
  const declared = req.headers['content-length'];
  if (declared === undefined || !/^[0-9]{1,5}$/.test(declared)) return undefined;
  const length = Number(declared);
  return length > 0 && length <= MAX_METHOD_SCAN_BYTES ? length : undefined;
}

/**
 * Where a host that has read an MCP POST's body whole itself hands its bytes to `identityForwarding`
 * in the same process: a property of the request keyed by this symbol, holding a `Buffer`. The
 * proxy then decides (tool gate, header mirror, limits, records) on exactly these bytes and
 * forwards exactly them, instead of reading the (consumed) stream. Only code in the process can set
 * it: no header, query or body of a client can. Default: absent (the stream is read).
 *
 * Used by the virtual MCP servers of `examples/server`, which read a call, route it to a member
 * and rewrite its tool name before handing it to the member's own endpoint.
 */
export const MCP_REQUEST_BODY: unique symbol = Symbol('gateway.mcpRequestBody');

/** An MCP request whose body a host handed over already read ({@link MCP_REQUEST_BODY}). */
export type RequestWithBody = IncomingMessage & { [MCP_REQUEST_BODY]?: Buffer };

/** The body a host handed over with the request ({@link MCP_REQUEST_BODY}), else undefined. */
export function handedBody(req: IncomingMessage): Buffer | undefined {
  const body = (req as RequestWithBody)[MCP_REQUEST_BODY];
  return Buffer.isBuffer(body) ? body : undefined;
}

/**
 * Whether a body parser read the request's body already: the request has one (a length or a
 * chunked body) and the stream is over, or Express's parsers marked it (`req._body`).
 */
export function bodyAlreadyRead(req: Request): boolean {
  const length = req.headers['content-length'];
  const hasBody = (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
  return hasBody && (req.readableEnded || (req as Request & { _body?: boolean })._body === true);
}

/**
 * Reads a request body of at most `limit` bytes (`413 body_too_large` past it): the body a host
 * handed over ({@link MCP_REQUEST_BODY}) when there is one, else the stream.
 */
export function readInspectedBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const handed = handedBody(req);
  if (handed !== undefined)
    return handed.length > limit
      ? Promise.reject(new McpBodyTooLargeError(`The MCP request body is larger than ${limit} bytes.`))
      : Promise.resolve(handed);
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume();
    return Promise.reject(new McpBodyTooLargeError(`The MCP request body is larger than ${limit} bytes.`));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.off('data', onData);
        req.resume();
        reject(new McpBodyTooLargeError(`The MCP request body is larger than ${limit} bytes.`));
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => resolve(Buffer.concat(chunks)));
    req.once('error', reject);
  });
}

/**
 * What follows a request body that could not be read whole: a body over the bound is refused
 * (`413 mcp_body_too_large`); a client that left before its body was whole is dropped quietly
 * (nothing to send, no one to answer, nothing for the host to log as an unhandled error).
 */
export function bodyUnread(res: ServerResponse, next: NextFunction): (error: unknown) => void {
  return (error) => {
    if (error instanceof McpBodyTooLargeError) next(error);
    else res.destroy();
  };
}

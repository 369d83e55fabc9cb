import type { IncomingMessage } from 'node:http';
import type { Readable, Transform } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import {
  BodyTooLargeError,
  InvalidJsonError,
  JsonTooDeepError,
  UnsupportedContentEncodingError,
  UnsupportedMediaTypeError,
} from './errors';

/** Default largest JSON body: 50 MiB, which fits a 32 MiB PDF in base64 with room to spare. */
export const DEFAULT_BODY_LIMIT_BYTES = 50 * 1024 * 1024;

/**
 * Default deepest nesting of a JSON body: 128 levels of objects and arrays (the body itself is
 * level 1). Real requests (tool schemas included) stay far below; thousands of levels would
 * overflow the stack of the conversions and serialisations that follow.
 */
export const DEFAULT_MAX_JSON_DEPTH = 128;

/**
 * Validates a `maxJsonDepth` option: a whole number of levels, at least 1. Throws a `TypeError`
 * that says what to write.
 */
export function parseMaxJsonDepth(depth: number | undefined, option = 'maxJsonDepth'): number {
  if (depth === undefined) return DEFAULT_MAX_JSON_DEPTH;
  if (!Number.isInteger(depth) || depth < 1) {
    throw new TypeError(
      `${option} must be a whole number of nesting levels, at least 1, such as ${DEFAULT_MAX_JSON_DEPTH} (got ${String(depth)}).`,
    );
  }
  return depth;
}

/**
 * Whether `value` nests objects and arrays deeper than `maxDepth` levels (a top-level object or
 * array is level 1). Iterative, with its own stack: any depth is measured without recursion.
 */
export function exceedsJsonDepth(value: unknown, maxDepth: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const pending: object[] = [value];
  const depths: number[] = [1];
  while (pending.length > 0) {
    const container = pending.pop() as object;
    const depth = depths.pop() as number;
    if (depth > maxDepth) return true;
    const children: unknown[] = Array.isArray(container) ? container : Object.values(container);
    for (const child of children) {
      if (typeof child === 'object' && child !== null) {
        pending.push(child);
        depths.push(depth + 1);
      }
    }
  }
  return false;
}

const tooDeep = (maxDepth: number) =>
  new JsonTooDeepError(
    `The request body is JSON nested more than ${maxDepth} levels deep, the most the gateway accepts.`,
  );

const UNITS: ReadonlyMap<string, number> = new Map([
  ['b', 1],
  ['kb', 1024],
  ['mb', 1024 ** 2],
  ['gb', 1024 ** 3],
]);
const SIZE = /^(\d+(?:\.\d+)?)\s*(b|kb|mb|gb)?$/i;

/**
 * A body limit in bytes from a number of bytes or a size such as `"50mb"` (b, kb, mb, gb; powers
 * of 1024). Throws a `TypeError` that says what to write.
 */
export function parseBodyLimit(limit: string | number | undefined, option = 'bodyLimit'): number {
  if (limit === undefined) return DEFAULT_BODY_LIMIT_BYTES;
  if (typeof limit === 'number' && Number.isInteger(limit) && limit > 0) return limit;
  const match = typeof limit === 'string' ? SIZE.exec(limit.trim()) : null;
  const bytes = match ? Math.floor(Number(match[1]) * (UNITS.get((match[2] ?? 'b').toLowerCase()) as number)) : 0;
  if (bytes <= 0) {
    throw new TypeError(
      `${option} must be a positive number of bytes or a size such as "50mb" (got ${String(limit)}).`,
    );
  }
  return bytes;
}

/** Content codings by name. A Map: the name is the client's, and must never reach `Object.prototype`. */
const INFLATERS: ReadonlyMap<string, () => Transform> = new Map([
  ['gzip', createGunzip],
  ['x-gzip', createGunzip],
  ['deflate', createInflate],
  ['br', createBrotliDecompress],
]);

/** `application/json`, or any `+json` type, with or without parameters. */
const JSON_MEDIA_TYPE = /^\s*application\/(?:[\w.-]+\+)?json\s*(?:;|$)/i;

/** A request that a host framework may already have parsed (`express.json()` sets `body`). */
type MaybeParsed = IncomingMessage & { body?: unknown; _body?: boolean };

/**
 * Reads a request's JSON body, at most `limitBytes` of it: `413 body_too_large` past the limit
 * (from `content-length` before reading, or while reading), `400 invalid_json` for text that is
 * not JSON. Bodies sent with `content-encoding` gzip, deflate or br are inflated (the limit applies
 * to the inflated bytes); any other encoding is `415 unsupported_content_encoding`. A body sent
 * with a `content-type` that is not JSON (`application/json` or `+json`), or with none, is
 * `415 unsupported_media_type`. An empty body reads as `{}`. A body the host already parsed is used
 * as it is. Either way, JSON nested more than `maxDepth` levels is `400 json_too_deep` (checked
 * without recursion), before anything converts or serialises it.
 */
export function readJsonBody(
  req: IncomingMessage,
  limitBytes: number,
  maxDepth: number = DEFAULT_MAX_JSON_DEPTH,
): Promise<unknown> {
  const host = req as MaybeParsed;
  if (host._body === true || host.body !== undefined) {
    return exceedsJsonDepth(host.body, maxDepth) ? Promise.reject(tooDeep(maxDepth)) : Promise.resolve(host.body);
  }
  const contentType = req.headers['content-type'];
  const hasBody = req.headers['content-length'] !== '0' && req.headers['content-length'] !== undefined;
  if (
    (contentType !== undefined && !JSON_MEDIA_TYPE.test(contentType)) ||
    (contentType === undefined && (hasBody || req.headers['transfer-encoding'] !== undefined))
  ) {
    req.resume();
    return Promise.reject(
      new UnsupportedMediaTypeError('Send the request body as JSON, with content-type: application/json.'),
    );
  }
  const declared = Number(req.headers['content-length']);
  if (declared > limitBytes) {
    req.resume();
    return Promise.reject(new BodyTooLargeError('The request body is larger than the gateway accepts.'));
  }
  const encoding = req.headers['content-encoding']?.trim().toLowerCase();
  let source: Readable = req;
  if (encoding !== undefined && encoding !== 'identity') {
    const inflate = INFLATERS.get(encoding);
    if (!inflate) {
      req.resume();
      return Promise.reject(
        new UnsupportedContentEncodingError('The request body may be sent as identity, gzip, deflate or br only.'),
      );
    }
    source = req.pipe(inflate());
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received > limitBytes) {
        source.off('data', onData);
        source.off('end', onEnd);
        if (source !== req) source.destroy();
        req.resume();
        reject(new BodyTooLargeError('The request body is larger than the gateway accepts.'));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      source.off('error', onError);
      const text =
        chunks.length === 1 ? (chunks[0] as Buffer).toString('utf8') : Buffer.concat(chunks).toString('utf8');
      chunks.length = 0;
      if (text.length === 0) return resolve({});
      let parsed: unknown;
      try {
        // A leading byte order mark is not JSON; some clients send one.
        parsed = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
      } catch {
        return reject(new InvalidJsonError('The request body is not valid JSON.'));
      }
      if (exceedsJsonDepth(parsed, maxDepth)) reject(tooDeep(maxDepth));
      else resolve(parsed);
    };
    const onError = () => {
      if (source !== req) {
        source.destroy();
        // The rest of the body, if any, is read and dropped so the connection can answer.
        req.resume();
      }
      reject(new InvalidJsonError('The request body could not be read or inflated.'));
    };
    source.on('data', onData);
    source.once('end', onEnd);
    source.once('error', onError);
    // pipe() does not pass on the request's own errors (a client that hangs up mid-body).
    if (source !== req) req.once('error', onError);
  });
}

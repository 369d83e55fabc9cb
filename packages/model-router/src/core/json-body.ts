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
import { RawJsonString } from './raw-json-string';
import { parseJsonBytes, RAW_STRING_MIN_BYTES, RawStringScanner, type RawStringPolicy } from './json-reader';

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
 * array is level 1; a {@link RawJsonString} is a string). Iterative, with its own stack: any depth
 * is measured without recursion.
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
      if (typeof child === 'object' && child !== null && !(child instanceof RawJsonString)) {
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

/** The bytes of each JSON body read (after any content encoding), for the limits' input estimate. */
const bodySizes = new WeakMap<IncomingMessage, number>();

/** The bytes of the JSON body {@link readJsonBody} read from `req` (inflated), or 0 before it was read. */
export function receivedBodyBytes(req: IncomingMessage): number {
  return bodySizes.get(req) ?? 0;
}

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

/** Requests whose bodies hold strings kept as the bytes received (see {@link readJsonBody}). */
const withRawStrings = new WeakSet<IncomingMessage>();

/** Whether `req`'s body, as {@link readJsonBody} read it, holds {@link RawJsonString}s. */
export function hasRawStrings(req: IncomingMessage): boolean {
  return withRawStrings.has(req);
}

/**
 * Reads a request's JSON body, at most `limitBytes` of it: `413 body_too_large` past the limit
 * (from `content-length` before reading, or while reading), `400 invalid_json` for text that is
 * not JSON. Bodies sent with `content-encoding` gzip, deflate or br are inflated (the limit applies
 * to the inflated bytes); any other encoding is `415 unsupported_content_encoding`. A body sent
 * with a `content-type` that is not JSON (`application/json` or `+json`), or with none, is
 * `415 unsupported_media_type`. An empty body reads as `{}`. A body the host already parsed is used
 * as it is. Either way, JSON nested more than `maxDepth` levels is `400 json_too_deep` (checked
 * without recursion), before anything converts or serialises it.
 *
 * The body is received into one buffer (of its `content-length` when it is sent as it is), and
 * parsed as `JSON.parse` would, except that strings of at least 64 KiB of printable ASCII
 * without escapes (base64 data, data URLs) where `rawStrings` allows them (default: nowhere) are
 * {@link RawJsonString}s: references into the received bytes, never decoded. Their places are
 * found as the bytes arrive (see `RawStringScanner`), and the rest of the body is parsed as
 * small JSON, so a large PDF is held once, as received.
 */
export function readJsonBody(
  req: IncomingMessage,
  limitBytes: number,
  maxDepth: number = DEFAULT_MAX_JSON_DEPTH,
  rawStrings?: RawStringPolicy,
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
  // A body sent as it is, of a known length, is received into one buffer of that length (its
  // memory is used as the bytes arrive); others are joined once complete.
  const exact = source === req && Number.isInteger(declared) && declared > 0 ? declared : undefined;
  const scanner =
    rawStrings !== undefined && (exact === undefined || exact >= RAW_STRING_MIN_BYTES)
      ? new RawStringScanner(rawStrings)
      : undefined;
  return new Promise((resolve, reject) => {
    let body = exact === undefined ? undefined : Buffer.allocUnsafe(exact);
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
      scanner?.push(chunk);
      if (body !== undefined && received <= body.length) {
        chunk.copy(body, received - chunk.length);
        return;
      }
      if (body !== undefined) {
        // More than `content-length` said (the HTTP parser does not let this happen): joined at the end.
        chunks.push(body.subarray(0, received - chunk.length));
        body = undefined;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      source.off('error', onError);
      const bytes =
        body !== undefined
          ? body.subarray(0, received)
          : chunks.length === 1
            ? (chunks[0] as Buffer)
            : Buffer.concat(chunks, received);
      body = undefined;
      chunks.length = 0;
      if (bytes.length === 0) return resolve({});
      const raw = scanner?.found ?? [];
      let parsed: unknown;
      let deep = false;
      try {
        parsed = parseJsonBytes(bytes, raw, (value) => {
          deep = exceedsJsonDepth(value, maxDepth);
        });
      } catch {
        return reject(new InvalidJsonError('The request body is not valid JSON.'));
      }
      if (deep) return reject(tooDeep(maxDepth));
      if (raw.length > 0) withRawStrings.add(req);
      bodySizes.set(req, bytes.length);
      resolve(parsed);
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

import type { IncomingMessage } from 'node:http';
import { hasRawStrings } from './json-body';
import type { RawJsonString } from './raw-json-string';
import { collectRawStrings } from './raw-json-string';
/** Strings at least this long are sent in pieces instead of inside one serialised body. */
export const LARGE_STRING_CHARS = 1024 * 1024;
const PIECE_CHARS = 1024 * 1024;
const BASE64 = /^[A-Za-z0-9+/=]*$/;

/** A JSON body sent as chunks, with its exact byte length. */
export interface ChunkedJson {
  byteLength: number;
  /** A fresh iterable of chunks on every call (a retried request sends the body again). */
  chunks: () => Iterable<Buffer>;
}

/**
 * Serialises `value` as JSON without building the full text: base64 strings of at least
 * {@link LARGE_STRING_CHARS} (PDFs, images) are left out of the serialisation and streamed in
 * 1 MiB pieces, so a 32 MB PDF is not copied twice more on its way upstream; a
 * {@link RawJsonString} is streamed from the bytes it refers to, never copied. Base64 (and a raw
 * string) needs no JSON escaping, so the bytes are exactly those of `JSON.stringify(value)`.
 */
export function chunkedJson(value: unknown): ChunkedJson {
  const large: (string | RawJsonString)[] = [];
  const marker = `\u0000${Math.random().toString(36).slice(2)}\u0000`;
  const text = collectRawStrings(large, marker, () =>
    JSON.stringify(value, (_key, v: unknown) => {
      if (typeof v === 'string' && v.length >= LARGE_STRING_CHARS && BASE64.test(v)) {
        large.push(v);
        return marker;
      }
      return v;
    }),
  );
  // The marker is serialised with its control characters escaped, as a JSON string.
  const parts = text.split(JSON.stringify(marker));
  let byteLength = 0;
  for (const part of parts) byteLength += Buffer.byteLength(part);
  for (const string of large) byteLength += string.length + 2;
  return {
    byteLength,
    *chunks() {
      for (let i = 0; i < parts.length; i++) {
        yield Buffer.from(parts[i] as string);
        const string = large[i];
        if (string === undefined) continue;
        yield Buffer.from('"');
        for (let at = 0; at < string.length; at += PIECE_CHARS) {
          yield typeof string === 'string'
            ? Buffer.from(string.slice(at, at + PIECE_CHARS), 'latin1')
            : string.bytes.subarray(at, at + PIECE_CHARS);
        }
        yield Buffer.from('"');
      }
    },
  };
}

/**
 * The body of a provider request: requests that may hold large strings (a `content-length` of at
 * least {@link LARGE_STRING_CHARS}, or a size not known before reading: chunked or compressed),
 * or that hold {@link RawJsonString}s, as {@link chunkedJson}; the rest as one JSON text, which is
 * cheaper.
 */
export function upstreamJson(value: unknown, req: IncomingMessage): string | ChunkedJson {
  const incoming = req.headers;
  const length = incoming['content-length'];
  const mayBeLarge =
    hasRawStrings(req) ||
    length === undefined ||
    Number(length) >= LARGE_STRING_CHARS ||
    (incoming['content-encoding'] !== undefined && incoming['content-encoding'] !== 'identity');
  return mayBeLarge ? chunkedJson(value) : JSON.stringify(value);
}

import { RawJsonString, type JsonString } from '../raw-json-string';

/**
 * A parsed `data:` URL. `data` is the text after the comma (base64 when `base64` is true), a
 * reference into the same bytes when the URL is a {@link RawJsonString}.
 */
export interface DataUrl {
  mediaType: string;
  base64: boolean;
  data: JsonString;
}

/**
 * Parses `data:<media type>[;param=value]*[;base64],<data>`. Parameters such as `;name=x.pdf`
 * are understood (and ignored); the media type is lower-cased. Returns undefined for anything else.
 */
export function parseDataUrl(url: JsonString): DataUrl | undefined {
  if (
    // Stryker disable next-line ConditionalExpression: a fast path; a shorter string starting with "data:" is "data:" itself, which has no comma.
    url.length < 6 ||
    url.slice(0, 5).toLowerCase() !== 'data:'
  )
    return undefined;
  const comma = typeof url === 'string' ? url.indexOf(',') : url.bytes.indexOf(0x2c /* , */);
  if (comma === -1) return undefined;
  const parameters = url.slice(5, comma).split(';');
  // Stryker disable next-line StringLiteral: split() always returns at least one element, so the fallback is never used.
  const mediaType = (parameters[0] ?? '').trim().toLowerCase();
  const base64 = parameters.slice(1).some((p) => p.trim().toLowerCase() === 'base64');
  return { mediaType, base64, data: typeof url === 'string' ? url.slice(comma + 1) : url.subarray(comma + 1) };
}

/** Bytes a base64 string decodes to, computed without decoding it. */
export function base64DecodedLength(data: JsonString): number {
  const code =
    data instanceof RawJsonString ? (i: number) => data.bytes[i] as number : (i: number) => data.charCodeAt(i);
  let length = data.length;
  while (
    // Stryker disable next-line EqualityOperator: at length 0, code(-1) is NaN or undefined, which is neither "=" nor white space, so the loop stops alike.
    length > 0 &&
    (code(length - 1) === 61 /* = */ || code(length - 1) <= 32)
  )
    length--;
  return Math.floor((length * 3) / 4);
}

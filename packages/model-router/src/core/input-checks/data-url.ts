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
  if (url.length < 6 || url.slice(0, 5).toLowerCase() !== 'data:') return undefined;
  const comma = typeof url === 'string' ? url.indexOf(',') : url.bytes.indexOf(0x2c /* , */);
  if (comma === -1) return undefined;
  const parameters = url.slice(5, comma).split(';');
  const mediaType = (parameters[0] ?? '').trim().toLowerCase();
  const base64 = parameters.slice(1).some((p) => p.trim().toLowerCase() === 'base64');
  return { mediaType, base64, data: typeof url === 'string' ? url.slice(comma + 1) : url.subarray(comma + 1) };
}

/** Bytes a base64 string decodes to, computed without decoding it. */
export function base64DecodedLength(data: JsonString): number {
  const code =
    data instanceof RawJsonString ? (i: number) => data.bytes[i] as number : (i: number) => data.charCodeAt(i);
  let length = data.length;
  while (length > 0 && (code(length - 1) === 61 /* = */ || code(length - 1) <= 32)) length--;
  return Math.floor((length * 3) / 4);
}

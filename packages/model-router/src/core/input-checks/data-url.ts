/** A parsed `data:` URL. `data` is the text after the comma (base64 when `base64` is true). */
export interface DataUrl {
  mediaType: string;
  base64: boolean;
  data: string;
}

/**
 * Parses `data:<media type>[;param=value]*[;base64],<data>`. Parameters such as `;name=x.pdf`
 * are understood (and ignored); the media type is lower-cased. Returns undefined for anything else.
 */
export function parseDataUrl(url: string): DataUrl | undefined {
  if (url.length < 6 || url.slice(0, 5).toLowerCase() !== 'data:') return undefined;
  const comma = url.indexOf(',');
  if (comma === -1) return undefined;
  const parameters = url.slice(5, comma).split(';');
  const mediaType = (parameters[0] ?? '').trim().toLowerCase();
  const base64 = parameters.slice(1).some((p) => p.trim().toLowerCase() === 'base64');
  return { mediaType, base64, data: url.slice(comma + 1) };
}

/** Bytes a base64 string decodes to, computed without decoding it. */
export function base64DecodedLength(data: string): number {
  let length = data.length;
  while (length > 0 && (data.charCodeAt(length - 1) === 61 /* = */ || data.charCodeAt(length - 1) <= 32)) length--;
  return Math.floor((length * 3) / 4);
}

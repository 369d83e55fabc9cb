import { ImageUrlNotSupportedError, InvalidRequestError, UnsupportedImageTypeError } from '../errors';
import { parseDataUrl } from './data-url';
import type { JsonString } from '../raw-json-string';

/** Image types Anthropic models accept. */
export const SUPPORTED_IMAGE_TYPES: ReadonlySet<string> = new Set([
  'image/jpeg',
  'image/png',
  'image/gif',
  'image/webp',
]);

/** An Anthropic base64 image block. */
export interface ImageBlock {
  type: 'image';
  source: { type: 'base64'; media_type: string; data: JsonString };
}

/**
 * Converts an image data URL to an image block; http(s) URLs and other types are refused. The
 * block's data is the URL's, a reference into the same bytes when the URL is raw.
 */
export function toImageBlock(url: JsonString, param: string): ImageBlock {
  if (/^https?:\/\//i.test(url.slice(0, 8))) {
    throw new ImageUrlNotSupportedError(
      'Image URLs are not accepted and the gateway never fetches them: download the image and send it as a ' +
        'base64 data URL (data:image/png;base64,... with image/jpeg, image/png, image/gif or image/webp).',
      { param },
    );
  }
  const parsed = parseDataUrl(url);
  if (!parsed || !parsed.mediaType.startsWith('image/'))
    throw new InvalidRequestError('image_url.url must be a data URL of an image.', { param });
  if (!SUPPORTED_IMAGE_TYPES.has(parsed.mediaType)) {
    throw new UnsupportedImageTypeError(
      `Images of type ${parsed.mediaType} are not supported; use jpeg, png, gif or webp.`,
      { param },
    );
  }
  if (!parsed.base64) throw new InvalidRequestError('Image data URLs must be base64 encoded.', { param });
  return { type: 'image', source: { type: 'base64', media_type: parsed.mediaType, data: parsed.data } };
}

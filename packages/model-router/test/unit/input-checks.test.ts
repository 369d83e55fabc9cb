import { base64DecodedLength, parseDataUrl } from '../../src/core/input-checks/data-url';
import { toImageBlock } from '../../src/core/input-checks/image';
import { acceptsImages, acceptsPdf } from '../../src/core/input-checks/model-capabilities';
import { RawJsonString } from '../../src/core/raw-json-string';

const raw = (text: string) => new RawJsonString(Buffer.from(text, 'latin1'));

function thrown(fn: () => unknown): { code?: string; message: string; param?: string | null } {
  try {
    fn();
  } catch (error) {
    return error as { code?: string; message: string };
  }
  throw new Error('nothing was thrown');
}

describe('parseDataUrl', () => {
  it('reads the media type (lower-cased, trimmed), the base64 flag among the parameters, and the data', () => {
    expect(parseDataUrl('data:Image/PNG;base64,iVBOR')).toEqual({
      mediaType: 'image/png',
      base64: true,
      data: 'iVBOR',
    });
    expect(parseDataUrl('DATA: application/pdf ;name=a.pdf; BASE64 ,JVBER,x')).toEqual({
      mediaType: 'application/pdf',
      base64: true,
      data: 'JVBER,x',
    });
    expect(parseDataUrl('data:text/plain,hello')).toEqual({ mediaType: 'text/plain', base64: false, data: 'hello' });
    expect(parseDataUrl('data:base64,x')).toEqual({ mediaType: 'base64', base64: false, data: 'x' });
    expect(parseDataUrl('data:,')).toEqual({ mediaType: '', base64: false, data: '' });
  });
  it('is undefined for anything but a data URL with a comma', () => {
    for (const url of ['data:', 'data', 'dat:a,b', 'https://x/a.png', 'data:image/png;base64', ' data:a,b'])
      expect([url, parseDataUrl(url)]).toEqual([url, undefined]);
  });
  it('needs the base64 parameter itself: other parameters leave the data as text', () => {
    expect(parseDataUrl('data:image/png;name=a.png;charset=x,abc')).toEqual({
      mediaType: 'image/png',
      base64: false,
      data: 'abc',
    });
  });
  it('reads a raw string the same way, its data a reference into the received bytes', () => {
    const bytes = Buffer.from('data:Application/PDF;name=a.pdf;base64,JVBER,x=', 'latin1');
    const parsed = parseDataUrl(new RawJsonString(bytes));
    expect(parsed?.mediaType).toBe('application/pdf');
    expect(parsed?.base64).toBe(true);
    expect(parsed?.data).toBeInstanceOf(RawJsonString);
    expect(parsed?.data.toString()).toBe('JVBER,x=');
    const data = parsed?.data as RawJsonString;
    expect(data.bytes.buffer).toBe(bytes.buffer);
    expect(data.bytes.byteOffset).toBe(bytes.byteOffset + bytes.indexOf(','.charCodeAt(0)) + 1);
    expect(parseDataUrl(raw('data:,'))?.data.toString()).toBe('');
    expect(parseDataUrl(raw('data:text/plain,hi'))).toMatchObject({ mediaType: 'text/plain', base64: false });
    for (const url of ['data:', 'data:image/png;base64', 'dat:a,b', ' data:a,b'])
      expect([url, parseDataUrl(raw(url))]).toEqual([url, undefined]);
  });
});

describe('base64DecodedLength', () => {
  it('counts three bytes per four characters, without padding or trailing white space', () => {
    expect(base64DecodedLength('')).toBe(0);
    expect(base64DecodedLength('QQ==')).toBe(1);
    expect(base64DecodedLength('QUI=')).toBe(2);
    expect(base64DecodedLength('QUJD')).toBe(3);
    expect(base64DecodedLength('QUJD \n\t')).toBe(3);
    expect(base64DecodedLength('QUJDRA== \r\n')).toBe(4);
    expect(base64DecodedLength('====')).toBe(0);
    expect(base64DecodedLength('QUJD!')).toBe(3);
    expect(base64DecodedLength('QUJDRA')).toBe(4);
  });
  it('counts a raw string from its bytes alike', () => {
    for (const text of ['', 'QQ==', 'QUI=', 'QUJD', 'QUJD \n\t', 'QUJDRA== \r\n', '====', 'QUJD!', 'QUJDRA', '  '])
      expect([text, base64DecodedLength(raw(text))]).toEqual([text, base64DecodedLength(text)]);
    expect(base64DecodedLength(raw('QUJDRA== \r\n'))).toBe(4);
  });
});

describe('toImageBlock', () => {
  it('turns a base64 image data URL into an image block', () => {
    for (const type of ['jpeg', 'png', 'gif', 'webp'])
      expect(toImageBlock(`data:image/${type};base64,AAAA`, 'p')).toEqual({
        type: 'image',
        source: { type: 'base64', media_type: `image/${type}`, data: 'AAAA' },
      });
  });
  it('refuses image URLs, saying what to send instead', () => {
    for (const url of ['https://x/a.png', 'HTTP://x/a.png'])
      expect(thrown(() => toImageBlock(url, 'messages[0].content[1]'))).toMatchObject({
        code: 'image_url_not_supported',
        param: 'messages[0].content[1]',
        message:
          'Image URLs are not accepted and the gateway never fetches them: download the image and send it as a base64 data URL (data:image/png;base64,... with image/jpeg, image/png, image/gif or image/webp).',
      });
    // only an http(s) URL at the start is an image URL
    expect(thrown(() => toImageBlock('xhttps://x/a.png', 'p')).code).toBe('invalid_request');
  });
  it('refuses data that is not an image data URL, other image types and non-base64 data', () => {
    for (const url of ['data:text/plain;base64,AAAA', 'not a url', 'data:imagex/png;base64,AA'])
      expect(thrown(() => toImageBlock(url, 'p'))).toMatchObject({
        code: 'invalid_request',
        param: 'p',
        message: 'image_url.url must be a data URL of an image.',
      });
    expect(thrown(() => toImageBlock('data:image/svg+xml;base64,AAAA', 'p'))).toMatchObject({
      code: 'unsupported_image_type',
      param: 'p',
      message: 'Images of type image/svg+xml are not supported; use jpeg, png, gif or webp.',
    });
    expect(thrown(() => toImageBlock('data:image/png,AAAA', 'p'))).toMatchObject({
      code: 'invalid_request',
      param: 'p',
      message: 'Image data URLs must be base64 encoded.',
    });
  });
});

describe('model capabilities', () => {
  it('knows the models without PDF support, by prefix', () => {
    for (const model of [
      'claude-3-haiku-20240307',
      'claude-3-opus-x',
      'claude-3-sonnet-x',
      'claude-2.1',
      'claude-instant-1',
    ])
      expect([model, acceptsPdf(model)]).toEqual([model, false]);
    for (const model of ['claude-sonnet-4-5', 'claude-3-5-haiku', 'x-claude-2', 'unknown'])
      expect([model, acceptsPdf(model)]).toEqual([model, true]);
  });
  it('knows the models without vision, by prefix', () => {
    for (const model of ['claude-2.0', 'claude-instant-1.2', 'claude-3-5-haiku-latest'])
      expect([model, acceptsImages(model)]).toEqual([model, false]);
    for (const model of ['claude-3-haiku', 'claude-sonnet-4-5', 'x-claude-3-5-haiku'])
      expect([model, acceptsImages(model)]).toEqual([model, true]);
  });
});

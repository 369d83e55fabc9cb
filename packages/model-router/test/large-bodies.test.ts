import { request } from 'node:http';
import { base64DecodedLength } from '../src/core/input-checks/data-url';
import { RawJsonString } from '../src/core/raw-json-string';
import { GATEWAY_KEY, PROVIDER_KEY, gatewayFor, makePdf, message, mockAnthropic } from './support';

// Large base64 strings (PDFs, images) are read raw, as the bytes received (see readJsonBody).
// Each request here is also sent with its base64 written with one escape (`\u0051` for a `Q`),
// which the reader decodes as usual: both must reach the provider as the same bytes, fail alike,
// and share a cache entry.

let mock: Awaited<ReturnType<typeof mockAnthropic>>;
let gateway: Awaited<ReturnType<typeof gatewayFor>>;

beforeAll(async () => {
  mock = await mockAnthropic();
  gateway = await gatewayFor(mock.url, {
    providers: [
      {
        slug: 'big',
        provider: 'anthropic',
        apiKey: PROVIDER_KEY,
        baseUrl: mock.url,
        cache: { enabled: true, scope: 'shared' },
      },
    ],
  });
});

afterAll(async () => {
  await gateway.close();
  await mock.close();
});

/** A one-page PDF (or `pages` pages) padded with spaces to about `bytes` bytes. */
const pdf = (bytes = 150_000, pages = 1, encrypted = false) => {
  const head = makePdf(pages, { encrypted });
  return Buffer.concat([head, Buffer.alloc(Math.max(0, bytes - head.length), 0x20)]).toString('base64');
};
const png = (bytes = 150_000) =>
  Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47]), Buffer.alloc(bytes, 7)]).toString('base64');

/** The body as JSON text, plain, and with the base64's first character written as an escape (`\u0041` for `A`). */
function variants(body: unknown, base64: string): [string, string] {
  const text = JSON.stringify(body);
  const at = text.indexOf(base64);
  const escape = `\\u${text.charCodeAt(at).toString(16).padStart(4, '0')}`;
  return [text, `${text.slice(0, at)}${escape}${text.slice(at + 1)}`];
}

function post(path: string, body: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; json: Record<string, unknown>; headers: Record<string, unknown> }>(
    (resolve, reject) => {
      const req = request(
        `${gateway.url}${path}`,
        {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'content-length': String(Buffer.byteLength(body)),
            'x-api-key': GATEWAY_KEY,
            ...headers,
          },
        },
        (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => (text += chunk));
          res.on('end', () =>
            resolve({ status: res.statusCode as number, json: JSON.parse(text), headers: res.headers }),
          );
        },
      );
      req.on('error', reject);
      req.end(body);
    },
  );
}

/** Sends both variants; returns the bodies the provider received for each. */
async function bothReach(path: string, body: unknown, base64: string, headers: Record<string, string> = {}) {
  const received: string[] = [];
  for (const text of variants(body, base64)) {
    mock.reply({ json: message([{ type: 'text', text: 'ok' }]) });
    const calls = mock.requests.length;
    const answer = await post(path, text, headers);
    expect(answer.status).toBe(200);
    expect(mock.requests.length).toBe(calls + 1);
    received.push(mock.last().body);
  }
  expect(received[0]).toBe(received[1]);
  return JSON.parse(received[0] as string) as { messages: { content: Record<string, unknown>[] }[] };
}

const chat = (content: unknown[]) => ({
  model: '@big/claude-sonnet-4-5',
  max_tokens: 16,
  messages: [{ role: 'user', content }],
});

describe('large base64 strings of a request', () => {
  it('forwards a PDF file part as a document block, byte for byte', async () => {
    // Larger than the 1 MiB pieces the body is sent upstream in.
    const data = pdf(1_200_000);
    const sent = await bothReach(
      '/v1/chat/completions',
      chat([
        { type: 'file', file: { file_data: `data:application/pdf;base64,${data}` } },
        { type: 'text', text: 'é' },
      ]),
      data,
    );
    expect(sent.messages[0]?.content).toEqual([
      { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data } },
      { type: 'text', text: 'é' },
    ]);
  });

  it('forwards images from image_url (object and string forms) and from file parts', async () => {
    const data = png();
    const image = { type: 'image', source: { type: 'base64', media_type: 'image/png', data } };
    for (const part of [
      { type: 'image_url', image_url: { url: `data:image/png;base64,${data}` } },
      { type: 'image_url', image_url: `data:image/png;base64,${data}` },
      { type: 'file', file: { file_data: data, mime_type: 'image/png' } },
    ]) {
      const sent = await bothReach('/v1/chat/completions', chat([part]), data);
      expect(sent.messages[0]?.content).toEqual([image]);
    }
  });

  it('forwards a native messages body unchanged but for the model', async () => {
    const data = png();
    const body = {
      model: '@big/claude-sonnet-4-5',
      max_tokens: 16,
      messages: [
        { role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data } }] },
      ],
    };
    const sent = await bothReach('/v1/messages', body, data);
    expect(sent).toEqual({ ...body, model: 'claude-sonnet-4-5' });
  });

  it('refuses large PDFs that fail a check, with the same error and param either way', async () => {
    const cases: [string, string][] = [
      [pdf(150_000, 101), 'pdf_too_many_pages'],
      [pdf(150_000, 1, true), 'pdf_encrypted'],
      [Buffer.alloc(150_000, 0x41).toString('base64'), 'invalid_pdf'],
    ];
    for (const [data, code] of cases) {
      const body = chat([
        { type: 'text', text: 'read' },
        { type: 'file', file: { file_data: data } },
      ]);
      for (const text of variants(body, data)) {
        const answer = await post('/v1/chat/completions', text);
        expect(answer.json.error).toMatchObject({ code, param: 'messages[0].content[1].file.file_data' });
      }
    }
  });

  it('refuses an image of an unsupported type, or not base64, as before', async () => {
    const data = png();
    const gif = chat([{ type: 'image_url', image_url: { url: `data:image/bmp;base64,${data}` } }]);
    const plain = chat([{ type: 'image_url', image_url: { url: `data:image/png,${data}` } }]);
    for (const [body, code] of [
      [gif, 'unsupported_image_type'],
      [plain, 'invalid_request'],
    ] as const) {
      for (const text of variants(body, data)) {
        const answer = await post('/v1/chat/completions', text);
        expect(answer.json.error).toMatchObject({ code, param: 'messages[0].content[0].image_url.url' });
      }
    }
  });

  it('gives a raw body and its decoded twin one cache key', async () => {
    const data = pdf(120_000);
    const [raw, escaped] = variants(chat([{ type: 'file', file: { file_data: data } }]), data);
    const headers = { 'x-gateway-config': JSON.stringify({ cache: { mode: 'simple' } }) };
    mock.reply({ json: message([{ type: 'text', text: 'cached' }]) });
    const calls = mock.requests.length;
    expect((await post('/v1/chat/completions', raw, headers)).headers['x-gateway-cache-status']).toBe('MISS');
    expect((await post('/v1/chat/completions', escaped, headers)).headers['x-gateway-cache-status']).toBe('HIT');
    expect((await post('/v1/chat/completions', raw, headers)).headers['x-gateway-cache-status']).toBe('HIT');
    expect(mock.requests.length).toBe(calls + 1);
  });

  it('reads the decoded size of raw base64 as of the string', () => {
    for (const text of ['QUJD', 'QUI=', 'QQ==', 'QUJD\n', 'QUJD  ', '', '=']) {
      expect(base64DecodedLength(new RawJsonString(Buffer.from(text)))).toBe(base64DecodedLength(text));
    }
  });
});

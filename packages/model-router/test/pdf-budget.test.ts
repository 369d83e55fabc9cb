import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { deflateSync, inflateSync } from 'node:zlib';
import fc from 'fast-check';
import { checkPdf, createModelRoutes, MAX_PDF_CHECK_MS, MAX_PDF_PAGES, PdfCheckBudget } from '../src';
import { decodeBase64 } from '../src/core/input-checks/pdf';
import { RawJsonString } from '../src/core/raw-json-string';
import { makePdf, message } from './support';

// The PDF checks work in slices of a few milliseconds within a budget per request (bytes
// inflated from object streams, event-loop time). These tests build the PDFs that used to hold
// the event loop for seconds and check that other requests are answered meanwhile.

/** A PDF of object streams: `count` streams cycling through `bodies`, then `last` (uncompressed page tree object). */
function objectStreamPdf(bodies: Buffer[], count: number, last?: string): Buffer {
  const parts: Buffer[] = [Buffer.from('%PDF-1.7\n')];
  const stream = (n: number, body: Buffer) => [
    Buffer.from(`${n} 0 obj << /Type /ObjStm /N 1 /First 4 /Filter /FlateDecode /Length ${body.length} >>\nstream\n`),
    body,
    Buffer.from('\nendstream\nendobj\n'),
  ];
  for (let i = 0; i < count; i++) parts.push(...stream(i + 10, bodies[i % bodies.length] as Buffer));
  if (last !== undefined) parts.push(...stream(9, deflateSync(Buffer.from(last))));
  parts.push(Buffer.from('trailer << /Root 1 0 R >>\n%%EOF\n'));
  return Buffer.concat(parts);
}

/** About 13 MB of object streams, each holding 40 small objects (about 1 KB compressed). */
function manySmallStreamsPdf(pages: number): Buffer {
  let seed = 1;
  const random = () => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 8).toString(16);
  const bodies = Array.from({ length: 64 }, () =>
    deflateSync(
      Array.from(
        { length: 40 },
        () => `<< /Type /Annot /Rect [${random()} ${random()}] /Contents (${random()}${random()}${random()}) >>`,
      ).join('\n'),
    ),
  );
  const count = Math.ceil(13_000_000 / ((bodies[0] as Buffer).length + 100));
  return objectStreamPdf(bodies, count, `2 0 << /Type /Pages /Kids [3 0 R] /Count ${pages} >>`);
}

/** About 13 MB of object streams that each inflate to 16 MiB of spaces. */
function inflatingStreamsPdf(): Buffer {
  const body = deflateSync(Buffer.alloc(16 * 1024 * 1024, 0x20), { level: 9 });
  return objectStreamPdf([body], Math.ceil(13_000_000 / (body.length + 100)));
}

let bomb: Buffer | undefined;
/** One object stream of about 80 KB that inflates to 80 MiB, more than any request may inflate. */
function bombPdf(): Buffer {
  bomb ??= objectStreamPdf([deflateSync(Buffer.alloc(80 * 1024 * 1024, 0x20), { level: 9 })], 1);
  return bomb;
}

jest.setTimeout(60_000);

const failure = async (check: Promise<void>) => {
  try {
    await check;
  } catch (error) {
    const { code, status, message } = error as { code: string; status: number; message: string };
    return { code, status, message };
  }
  return { code: 'accepted' };
};

describe('PDF check budget', () => {
  it('refuses an object stream that inflates past the budget with 400 pdf_too_complex, quickly', async () => {
    const pdf = bombPdf().toString('base64');
    const started = Date.now();
    const result = await failure(checkPdf(pdf, 'messages[0].content[0].file.file_data'));
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(result).toEqual({
      code: 'pdf_too_complex',
      status: 400,
      message:
        'The PDF is too complex to check: its compressed object streams inflate to more than 4 times its size ' +
        '(or more than 64 MB for all PDFs of the request).',
    });
  });

  it('refuses object streams inflating past 4 times the PDF size, though each alone is small', async () => {
    // 300 streams of 20 KiB of text each, a few hundred bytes compressed: 6 MB from a 0.1 MB PDF.
    const body = deflateSync(Buffer.from('<< /Type /Annot >>\n'.repeat(1100)));
    const pdf = objectStreamPdf([body], 300);
    expect((await failure(checkPdf(pdf.toString('base64'), 'p'))).code).toBe('pdf_too_complex');
    // The same with fewer streams (under 1 MiB inflated) passes.
    expect((await failure(checkPdf(objectStreamPdf([body], 40).toString('base64'), 'p'))).code).toBe('accepted');
  });

  it('shares one budget between the PDFs of a request', async () => {
    const pdf = objectStreamPdf([deflateSync(Buffer.alloc(300_000, 0x20))], 1).toString('base64');
    const budget = new PdfCheckBudget({ inflatedBytes: 500_000 });
    expect((await failure(checkPdf(pdf, 'a', budget))).code).toBe('accepted');
    expect(await failure(checkPdf(pdf, 'b', budget))).toMatchObject({ code: 'pdf_too_complex', status: 400 });
    expect((await failure(checkPdf(pdf, 'c'))).code).toBe('accepted');
  });

  it('refuses a PDF whose checks take more than the time budget', async () => {
    const pdf = manySmallStreamsPdf(3).toString('base64');
    expect(await failure(checkPdf(pdf, 'p', new PdfCheckBudget({ milliseconds: 20 })))).toEqual({
      code: 'pdf_too_complex',
      status: 400,
      message: `The PDF is too complex to check: reading its structure takes more than ${MAX_PDF_CHECK_MS / 1000} s.`,
    });
  });

  it('reads a page tree hidden among 13 MB of small object streams, and enforces its page count', async () => {
    expect((await failure(checkPdf(manySmallStreamsPdf(3).toString('base64'), 'p'))).code).toBe('accepted');
    expect(await failure(checkPdf(manySmallStreamsPdf(MAX_PDF_PAGES + 1).toString('base64'), 'p'))).toEqual({
      code: 'pdf_too_many_pages',
      status: 400,
      message: 'The PDF has 101 pages; at most 100 are accepted.',
    });
  });

  it('reads 150,000 "/Type /Pages" outside any dictionary in linear time, within the budget', async () => {
    // Each used to search back to the start of the file for "<<": quadratic, minutes for 32 MB.
    const pdf = Buffer.from(`%PDF-1.7\n${'/Type /Pages '.repeat(150_000)}<< /Type /Pages /Count 101 >>`);
    expect((await failure(checkPdf(pdf.toString('base64'), 'p'))).code).toBe('pdf_too_many_pages');
  });
});

describe('PDF checks give the results of a plain reading', () => {
  /** The checks as a direct, unbudgeted reading of the PDF (the definition the sliced checks keep). */
  function plainCheck(pdf: Buffer): string {
    const header = pdf.indexOf('%PDF-');
    if (header === -1 || header > 1024) return 'invalid_pdf';
    const space = (b: number | undefined) =>
      b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09 || b === 0x0c || b === 0;
    for (let at = pdf.indexOf('/Encrypt'); at !== -1; at = pdf.indexOf('/Encrypt', at + 8)) {
      let i = at + 8;
      while (space(pdf[i])) i++;
      const next = pdf[i] as number;
      if ((next >= 0x30 && next <= 0x39) || next === 0x3c) return 'pdf_encrypted';
    }
    const count = (buffer: Buffer) => {
      let best: number | undefined;
      for (let at = buffer.indexOf('/Pages'); at !== -1; at = buffer.indexOf('/Pages', at + 6)) {
        let i = at - 1;
        while (i > 0 && space(buffer[i])) i--;
        if (i < 4 || buffer.toString('latin1', i - 4, i + 1) !== '/Type') continue;
        const start = buffer.lastIndexOf('<<', at);
        const end = buffer.indexOf('>>', at);
        if (start === -1 || end === -1) continue;
        const c = buffer.indexOf('/Count', start);
        if (c === -1 || c > end) continue;
        const digits = /^[ \n\r\t\f\0]*(\d{1,9})/.exec(buffer.toString('latin1', c + 6, c + 6 + 64));
        const value = digits ? Number(digits[1]) : undefined;
        if (value !== undefined && (best === undefined || value > best)) best = value;
      }
      return best;
    };
    let pages = count(pdf);
    if (pages === undefined) {
      for (let at = pdf.indexOf('/ObjStm'); at !== -1; at = pdf.indexOf('/ObjStm', at + 7)) {
        const streamAt = pdf.indexOf('stream', at);
        const endAt = pdf.indexOf('endstream', streamAt);
        if (streamAt === -1 || endAt === -1) continue;
        let data = streamAt + 6;
        if (pdf[data] === 0x0d) data++;
        if (pdf[data] === 0x0a) data++;
        try {
          const found = count(inflateSync(pdf.subarray(data, endAt)));
          if (found !== undefined && (pages === undefined || found > pages)) pages = found;
        } catch {
          // not readable
        }
      }
    }
    return pages !== undefined && pages > MAX_PDF_PAGES ? `pdf_too_many_pages:${pages}` : 'accepted';
  }

  const token = fc.constantFrom(
    '/Type',
    '/Pages',
    '/Type /Pages',
    '/Type/Pages',
    '<<',
    '>>',
    '/Count',
    ' 5',
    ' 150',
    ' 101',
    '/Count 200',
    ' ',
    '\n',
    '\r\n',
    '\0',
    '/Encrypt',
    ' 3 0 R',
    '/ObjStm',
    'stream',
    'stream\r\n',
    'endstream',
    'x',
  );
  const text = fc.array(token, { maxLength: 30 }).map((t) => t.join(''));
  const part = fc.oneof(
    { weight: 4, arbitrary: text.map((t) => Buffer.from(t)) },
    {
      weight: 1,
      arbitrary: text.map((t) => Buffer.concat([Buffer.from('stream\n'), deflateSync(t), Buffer.from('\nendstream')])),
    },
  );
  const pdf = fc
    .tuple(fc.boolean(), fc.array(part, { maxLength: 8 }))
    .map(([header, parts]) => Buffer.concat([Buffer.from(header ? '%PDF-1.5\n' : ''), ...parts]));

  it('agrees with the plain reading on random PDF-like documents', async () => {
    await fc.assert(
      fc.asyncProperty(pdf, async (document) => {
        const result = await failure(checkPdf(document.toString('base64'), 'p'));
        const expected = plainCheck(document);
        const got =
          result.code === 'pdf_too_many_pages'
            ? `${result.code}:${/\d+/.exec(result.message ?? '')?.[0]}`
            : result.code;
        expect(got).toBe(expected);
      }),
      { numRuns: 2000 },
    );
  });

  it('decodes base64 a piece at a time exactly as Buffer.from does, whatever else the text holds', async () => {
    const slices = { due: () => false, pause: async () => undefined };
    const char = fc.oneof(
      {
        weight: 8,
        arbitrary: fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_'),
      },
      {
        weight: 1,
        arbitrary: fc.constantFrom(' ', '\n', '\r', '=', '.', '\0', '\u00e9', '\u0141', '\u013d', '\u3d3d'),
      },
    );
    await fc.assert(
      fc.asyncProperty(fc.array(char, { maxLength: 80 }), fc.integer({ min: 1, max: 6 }), async (chars, quads) => {
        const text = chars.join('');
        const expected = Buffer.from(text, 'base64');
        expect((await decodeBase64(text, slices, quads * 4)).equals(expected)).toBe(true);
        // The same text kept raw (as the bytes received: printable ASCII only), read a piece at a time.
        if (/^[\x20-\x7e]*$/.test(text)) {
          const raw = new RawJsonString(Buffer.from(text, 'latin1'));
          expect((await decodeBase64(raw, slices, quads * 4)).equals(expected)).toBe(true);
        }
      }),
      { numRuns: 5000 },
    );
  });
});

describe('PDF checks through the route do not hold other requests', () => {
  let upstream: Server;
  let gateway: Server;
  let port: number;
  const received: string[] = [];

  beforeAll(async () => {
    // A mock Anthropic API that keeps each body as text (parsing 17 MB here would hold this
    // process, which the probes measure, for its own reasons).
    upstream = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        received.push(Buffer.concat(chunks).toString());
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(message([{ type: 'text', text: 'read it' }])));
      });
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const routes = createModelRoutes({
      providers: [
        {
          slug: 'p',
          provider: 'anthropic',
          apiKey: 'sk-ant-pdf-budget',
          baseUrl: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`,
        },
      ],
    });
    gateway = createServer((req, res) => {
      const handler = routes.match(req.method, (req.url ?? '/').slice(3));
      if (handler) return void handler(req, res);
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => gateway.listen(0, '127.0.0.1', resolve));
    port = (gateway.address() as AddressInfo).port;
  });

  afterAll(async () => {
    for (const server of [gateway, upstream]) {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  function call(method: string, path: string, body?: string) {
    return new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port, method, path, headers: body ? { 'content-type': 'application/json' } : {} },
        (res: IncomingMessage) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => resolve({ status: res.statusCode as number, text: Buffer.concat(chunks).toString() }));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  const chat = (pdf: Buffer) =>
    JSON.stringify({
      model: '@p/claude-sonnet-4-5',
      max_tokens: 5,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Summarise.' },
            { type: 'file', file: { file_data: pdf.toString('base64'), filename: 'big.pdf' } },
          ],
        },
      ],
    });

  /**
   * Sends `body` to chat completions and, until it is answered, GET /v1/models one after the
   * other, and a 5 ms timer in this process: the slowest probe and the longest timer gap.
   */
  async function withProbes(body: string) {
    let done = false;
    const answer = call('POST', '/v1/chat/completions', body).finally(() => (done = true));
    let last = performance.now();
    let longestGap = 0;
    const timer = setInterval(() => {
      const now = performance.now();
      longestGap = Math.max(longestGap, now - last);
      last = now;
    }, 5);
    const probes: number[] = [];
    while (!done) {
      const started = performance.now();
      const models = await call('GET', '/v1/models');
      expect(models.status).toBe(200);
      probes.push(performance.now() - started);
    }
    clearInterval(timer);
    return { answer: await answer, probes, slowest: Math.max(...probes), longestGap };
  }

  /**
   * The slowest probe and longest timer gap while a plain PDF of the same size goes through: what
   * reading, parsing and sending 13 MB of JSON costs on this machine under its present load.
   */
  async function baseline() {
    const head = makePdf(1);
    const plain = Buffer.concat([head, Buffer.alloc(13 * 1024 * 1024 - head.length, 0x20)]);
    const measured = await withProbes(chat(plain));
    expect(measured.answer.status).toBe(200);
    return measured;
  }

  /**
   * Measures `body` right after a plain baseline of the same size, up to three rounds, and returns
   * the first round within the allowance (or the last): the PDF checks may add at most 100 ms and
   * half of the baseline. A machine shared with other tests slows single rounds at random; the
   * checks before they were sliced added 300 ms to 12 s, which fails every round.
   */
  async function measureBeside(body: string) {
    let round: Awaited<ReturnType<typeof withProbes>> & { limit: { slowest: number; longestGap: number } };
    for (let attempt = 1; ; attempt += 1) {
      const plain = await baseline();
      const limit = { slowest: 100 + 1.5 * plain.slowest, longestGap: 100 + 1.5 * plain.longestGap };
      round = { ...(await withProbes(body)), limit };
      if ((round.slowest < limit.slowest && round.longestGap < limit.longestGap) || attempt === 3) return round;
    }
  }

  it('answers other requests within 100 ms while 13 MB of small object streams are read, then sends the PDF', async () => {
    const pdf = manySmallStreamsPdf(3);
    const before = received.length;
    const { answer, probes, slowest, longestGap, limit } = await measureBeside(chat(pdf));
    expect(answer.status).toBe(200);
    expect(probes.length).toBeGreaterThan(5);
    expect(slowest).toBeLessThan(limit.slowest);
    expect(longestGap).toBeLessThan(limit.longestGap);
    const sent = received
      .slice(before)
      .map((text) => JSON.parse(text) as { messages: { content: { source?: { data: string } }[] }[] });
    expect(sent.at(-1)?.messages[0]?.content[1]?.source?.data).toBe(pdf.toString('base64'));
  });

  it('answers other requests within 100 ms while 13 MB of inflating object streams are refused', async () => {
    const pdf = inflatingStreamsPdf();
    const before = received.length;
    const { answer, slowest, longestGap, limit } = await measureBeside(chat(pdf));
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.text)).toMatchObject({
      error: { code: 'pdf_too_complex', type: 'invalid_request_error', param: 'messages[0].content[1].file.file_data' },
    });
    expect(slowest).toBeLessThan(limit.slowest);
    expect(longestGap).toBeLessThan(limit.longestGap);
    // Only the plain baselines reached the upstream: the refused PDF never did.
    const pdfData = pdf.toString('base64');
    expect(
      received
        .slice(before)
        .some((text) => text.includes(pdfData.slice(pdfData.length / 2, pdfData.length / 2 + 4096))),
    ).toBe(false);
  });

  it('still sends an ordinary PDF and still refuses one over 100 pages', async () => {
    const ok = await call('POST', '/v1/chat/completions', chat(makePdf(3)));
    expect(ok.status).toBe(200);
    const tooMany = await call('POST', '/v1/chat/completions', chat(makePdf(MAX_PDF_PAGES + 1)));
    expect(tooMany.status).toBe(400);
    expect(JSON.parse(tooMany.text)).toMatchObject({ error: { code: 'pdf_too_many_pages' } });
  });

  it('refuses the object stream bomb through the route with 400 pdf_too_complex', async () => {
    const before = received.length;
    const bomb = await call('POST', '/v1/chat/completions', chat(bombPdf()));
    expect(bomb.status).toBe(400);
    expect(JSON.parse(bomb.text)).toMatchObject({ error: { code: 'pdf_too_complex' } });
    expect(received.length).toBe(before);
  });
});

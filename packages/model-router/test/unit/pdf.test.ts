import { deflateSync } from 'node:zlib';
import { MAX_PDF_BYTES, PdfCheckBudget, checkPdf, decodeBase64, type Slices } from '../../src/core/input-checks/pdf';

const b64 = (pdf: Buffer | string) => Buffer.from(pdf).toString('base64');
async function outcome(pdf: Buffer | string, budget?: PdfCheckBudget) {
  try {
    await checkPdf(typeof pdf === 'string' && !pdf.startsWith('%') ? pdf : b64(pdf), 'doc', budget);
    return 'accepted';
  } catch (error) {
    const e = error as { code: string; message: string; param: string };
    expect(e.param).toBe('doc');
    return `${e.code}: ${e.message}`;
  }
}
const pagesPdf = (body: string) =>
  Buffer.from(
    `%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n${body}\ntrailer << /Root 1 0 R >>\n%%EOF\n`,
  );
const objStm = (content: Buffer | string, { compress = true, eol = '\n' } = {}) => {
  const data = compress ? deflateSync(Buffer.from(content)) : Buffer.from(content);
  return Buffer.concat([
    Buffer.from(`5 0 obj << /Type /ObjStm /N 1 /First 4 /Filter /FlateDecode /Length ${data.length} >>\nstream${eol}`),
    data,
    Buffer.from('\nendstream\nendobj\n'),
  ]);
};
const withObjStm = (...streams: Buffer[]) =>
  Buffer.concat([Buffer.from('%PDF-1.7\n'), ...streams, Buffer.from('%%EOF\n')]);
const TOO_MANY = (n: number) => `pdf_too_many_pages: The PDF has ${n} pages; at most 100 are accepted.`;
const COMPLEX_INFLATE =
  'pdf_too_complex: The PDF is too complex to check: its compressed object streams inflate to more than 4 times its size (or more than 64 MB for all PDFs of the request).';

describe('checkPdf: size and header', () => {
  it('refuses more than 32 MiB from the base64 length alone, and reads exactly 32 MiB', async () => {
    expect(MAX_PDF_BYTES).toBe(32 * 1024 * 1024);
    const chars = Math.ceil((MAX_PDF_BYTES * 4) / 3);
    expect(await outcome('A'.repeat(chars + 2))).toBe('pdf_too_large: The PDF is larger than 32 MB.');
    expect(await outcome('A'.repeat(chars))).toBe('invalid_pdf: The document is not a PDF.');
  });
  it('needs %PDF- within the first KiB', async () => {
    expect(await outcome('JVBERi0=')).toBe('accepted'); // "%PDF-"
    expect(await outcome(b64(`${' '.repeat(1024)}%PDF-1.4`))).toBe('accepted');
    expect(await outcome(b64(`${' '.repeat(1025)}%PDF-1.4`))).toBe('invalid_pdf: The document is not a PDF.');
    expect(await outcome(b64('<html>'))).toBe('invalid_pdf: The document is not a PDF.');
  });
});

describe('checkPdf: encryption', () => {
  it('refuses /Encrypt used as a key, followed by a reference or a dictionary', async () => {
    const encrypted = 'pdf_encrypted: Encrypted or password-protected PDFs are not supported.';
    expect(await outcome(pagesPdf('trailer << /Encrypt 9 0 R >>'))).toBe(encrypted);
    expect(await outcome(pagesPdf('trailer << /Encrypt\n\t << /Filter /Standard >> >>'))).toBe(encrypted);
    expect(await outcome(pagesPdf('<< /Encrypted true /Encrypt /Name >> << /Encrypt 0 0 R >>'))).toBe(encrypted);
    expect(await outcome(pagesPdf('(a /Encrypt) << /Encrypt/x /Encryptx 1 >>'))).toBe('accepted');
    expect(await outcome(pagesPdf('/Encrypt :'))).toBe('accepted');
    expect(await outcome(pagesPdf('/Encrypt'))).toBe('accepted');
  });
});

describe('checkPdf: page count', () => {
  const tree = (n: number | string, extra = '') =>
    pagesPdf(`2 0 obj << /Type /Pages /Kids [] /Count ${n}${extra} >> endobj`);
  it('accepts 100 pages and refuses 101', async () => {
    expect(await outcome(tree(100))).toBe('accepted');
    expect(await outcome(tree(101))).toBe(TOO_MANY(101));
  });
  it('takes the largest /Count of the /Type /Pages dictionaries', async () => {
    expect(
      await outcome(pagesPdf('<< /Type /Pages /Count 5 >> << /Type/Pages /Count 150 >> << /Type\n/Pages /Count 7 >>')),
    ).toBe(TOO_MANY(150));
    expect(await outcome(pagesPdf('<< /Type /Pages /Count 150 >> << /Type /Pages /Count 5 >>'))).toBe(TOO_MANY(150));
  });
  it('reads /Count only inside a /Type /Pages dictionary', async () => {
    expect(
      await outcome(pagesPdf('<< /Type /Page /Count 500 >> << /Pages /Count 500 >> << /Kind /Pages /Count 500 >>')),
    ).toBe('accepted');
    expect(await outcome(pagesPdf('<< /Type /Pages >> /Count 500'))).toBe('accepted');
    expect(await outcome(pagesPdf('/Count 500 << /Type /Pages >>'))).toBe('accepted');
    expect(await outcome(Buffer.from('%PDF-1.4 /Type /Pages /Count 500 >>'))).toBe('accepted');
    expect(await outcome(Buffer.from('%PDF-1.4 << /Type /Pages /Count 500'))).toBe('accepted');
    expect(await outcome(Buffer.from('%PDF-1.4 /Pages'))).toBe('accepted');
    expect(await outcome(Buffer.from('/Type/Pages %PDF-'))).toBe('accepted');
  });
  it('finds each dictionary’s own << and /Count when there are several', async () => {
    expect(
      await outcome(
        pagesPdf('<< /Count 900 >> << /Type /Pages /Count 3 >> << /Type /Pages /Kids [] >> << /Count 800 >>'),
      ),
    ).toBe('accepted');
    expect(await outcome(pagesPdf('<< /Type /Pages /Kids [] >> << /Type /Pages /Count 120 >>'))).toBe(TOO_MANY(120));
    expect(
      await outcome(
        pagesPdf('<< /Type /Pages /Count 2 >> << /X 1 >> << /Type /Pages /Kids [<< /Type /Pages /Count 130 >>] >>'),
      ),
    ).toBe(TOO_MANY(130));
    expect(
      await outcome(pagesPdf('<< /Type /Pages /Count 4 /Kids [] /Type /Pages >> << /Type /Pages /Count 140 >>')),
    ).toBe(TOO_MANY(140));
  });
  it('reads at most nine digits, after white space, and ignores a count that is not a number', async () => {
    expect(await outcome(tree('\n\r\t\f\0 0000101'))).toBe(TOO_MANY(101));
    expect(await outcome(tree('1234567890'))).toBe(TOO_MANY(123456789));
    expect(await outcome(tree('x101'))).toBe('accepted');
    expect(await outcome(tree('-101'))).toBe('accepted');
    expect(await outcome(tree('/101'))).toBe('accepted');
    expect(await outcome(pagesPdf('<< /Type /Pages /Count 9a >> << /Type /Pages /Count 150 >>'))).toBe(TOO_MANY(150));
  });
  it('reads the page count inside compressed object streams when the file shows none', async () => {
    expect(await outcome(withObjStm(objStm('2 0 obj << /Type /Pages /Count 250 >> endobj')))).toBe(TOO_MANY(250));
    expect(await outcome(withObjStm(objStm('<< /Type /Pages /Count 250 >>', { eol: '\r\n' })))).toBe(TOO_MANY(250));
    expect(await outcome(withObjStm(objStm('<< /Type /Pages /Count 250 >>', { eol: '\r' })))).toBe(TOO_MANY(250));
    expect(
      await outcome(withObjStm(objStm('<< /Type /Pages /Count 5 >>'), objStm('<< /Type /Pages /Count 260 >>'))),
    ).toBe(TOO_MANY(260));
    expect(
      await outcome(withObjStm(objStm('<< /Type /Pages /Count 260 >>'), objStm('<< /Type /Pages /Count 5 >>'))),
    ).toBe(TOO_MANY(260));
    expect(await outcome(withObjStm(objStm('<< /Type /Pages /Count 50 >>')))).toBe('accepted');
    // the file's own page tree wins
    expect(await outcome(Buffer.concat([tree(3), objStm('<< /Type /Pages /Count 250 >>')]))).toBe('accepted');
  });
  it('leaves the count unknown for a stream it cannot inflate, or without stream data', async () => {
    expect(
      await outcome(withObjStm(objStm('junk', { compress: false }), objStm('<< /Type /Pages /Count 270 >>'))),
    ).toBe(TOO_MANY(270));
    expect(await outcome(Buffer.from('%PDF-1.7 /ObjStm no data'))).toBe('accepted');
    expect(await outcome(Buffer.from('%PDF-1.7 /ObjStm stream but no end'))).toBe('accepted');
  });
  it('reads a stream named by several /ObjStm once', async () => {
    const content = deflateSync(Buffer.from('<< /Type /Pages /Count 280 >>'));
    const pdf = Buffer.concat([
      Buffer.from('%PDF-1.7\n<< /Type /ObjStm >> << /Type /ObjStm >>\nstream\n'),
      content,
      Buffer.from('\nendstream\n'),
    ]);
    const budget = new PdfCheckBudget();
    expect(await outcome(pdf, budget)).toBe(TOO_MANY(280));
    expect(budget.inflatedBytes).toBe(64 * 1024 * 1024 - '<< /Type /Pages /Count 280 >>'.length);
  });
});

describe('checkPdf: budgets', () => {
  it('has 64 MiB and 5 s per request by default', () => {
    expect(new PdfCheckBudget()).toEqual({ inflatedBytes: 64 * 1024 * 1024, milliseconds: 5000 });
    expect(new PdfCheckBudget({ inflatedBytes: 1, milliseconds: 2 })).toEqual({ inflatedBytes: 1, milliseconds: 2 });
  });
  it('refuses a PDF once the request has no time left, and charges what it used', async () => {
    expect(await outcome(pagesPdf(''), new PdfCheckBudget({ milliseconds: -0.001 }))).toBe(
      'pdf_too_complex: The PDF is too complex to check: reading its structure takes more than 5 s.',
    );
    const budget = new PdfCheckBudget({ milliseconds: 1000 });
    await checkPdf(b64(pagesPdf('x'.repeat(300_000))), 'doc', budget);
    expect(budget.milliseconds).toBeLessThan(1000);
    expect(budget.milliseconds).toBeGreaterThan(0);
  });
  it('refuses object streams that inflate past the request budget, and charges what they inflate', async () => {
    const content = '<< /Type /Pages /Count 10 >>';
    const pdf = withObjStm(objStm(content));
    expect(await outcome(pdf, new PdfCheckBudget({ inflatedBytes: content.length - 1 }))).toBe(COMPLEX_INFLATE);
    const budget = new PdfCheckBudget({ inflatedBytes: content.length });
    expect(await outcome(pdf, budget)).toBe('accepted');
    expect(budget.inflatedBytes).toBe(0);
    expect(
      await outcome(
        withObjStm(objStm(content), objStm(content)),
        new PdfCheckBudget({ inflatedBytes: content.length }),
      ),
    ).toBe(COMPLEX_INFLATE);
    expect(await outcome(pdf, new PdfCheckBudget({ inflatedBytes: 0 }))).toBe(COMPLEX_INFLATE);
  });
  it('lets one PDF inflate 4 times its size, at least 1 MiB', async () => {
    // 1 MiB inflates from a small PDF; one byte more is refused (off the event loop, past 256 KiB)
    const mib = 1024 * 1024;
    const fits = `<< /Type /Pages /Count 150 >>${' '.repeat(mib - 29)}`;
    expect(fits).toHaveLength(mib);
    expect(await outcome(withObjStm(objStm(fits)))).toBe(TOO_MANY(150));
    expect(await outcome(withObjStm(objStm(`${fits} `)))).toBe(COMPLEX_INFLATE);
    // a larger PDF may inflate 4 times its size: padded so that the limit is exactly the content
    const content = `<< /Type /Pages /Count 160 >>${' '.repeat(4 * mib - 29)}`;
    const base = withObjStm(objStm(content));
    const pad = (bytes: number) => Buffer.concat([base, Buffer.alloc(bytes, 0x20)]);
    const exact = mib - base.length;
    expect(await outcome(pad(exact))).toBe(TOO_MANY(160));
    expect(await outcome(pad(exact - 1))).toBe(COMPLEX_INFLATE);
  });
  it('inflates a stream past 256 KiB of output off the event loop', async () => {
    const big = `${' '.repeat(300_000)}<< /Type /Pages /Count 170 >>`;
    expect(await outcome(withObjStm(objStm(big)))).toBe(TOO_MANY(170));
    // and a large compressed input too
    const random = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7919) % 251));
    expect(
      await outcome(withObjStm(objStm(Buffer.concat([random, Buffer.from(' << /Type /Pages /Count 180 >>')])))),
    ).toBe(TOO_MANY(180));
    expect(
      await outcome(
        withObjStm(objStm(Buffer.concat([Buffer.from([0x78, 0x9c, 1, 2, 3]), random]), { compress: false })),
      ),
    ).toBe('accepted');
  });
  it('lets the event loop run while it reads a large PDF', async () => {
    let turns = 0;
    let running = true;
    const tick = () => {
      turns++;
      if (running) setImmediate(tick);
    };
    setImmediate(tick);
    await checkPdf(
      b64(Buffer.concat([pagesPdf('<< /Type /Pages /Count 3 >>'), Buffer.alloc(12 * 1024 * 1024, 0x20)])),
      'doc',
    );
    running = false;
    expect(turns).toBeGreaterThan(1);
  });
});

describe('decodeBase64', () => {
  const idle: Slices = { due: () => false, pause: async () => undefined };
  const same = async (text: string, chunk?: number) =>
    expect((await decodeBase64(text, idle, chunk)).equals(Buffer.from(text, 'base64'))).toBe(true);
  it('decodes as Buffer.from does, whatever the chunk size', async () => {
    const data = Buffer.from(Array.from({ length: 300 }, (_, i) => (i * 31) % 256)).toString('base64');
    for (const chunk of [4, 5, 7, 8, 64, 1024 * 1024]) {
      await same(data, chunk);
      await same(data.replace(/(.{10})/g, '$1\n'), chunk);
      await same(data.replace(/\+/g, '-').replace(/\//g, '_'), chunk);
      await same(`${data.slice(0, 40)}=${data.slice(40)}`, chunk);
      await same(`${data.slice(0, 41)}==${data.slice(41)}`, chunk);
      await same(`${data.slice(0, 30)}\u0141\u0142\u00e9 ${data.slice(30)}`, chunk);
      await same(`${data.slice(0, 30)}\u0141=${data.slice(30)}`, chunk);
      await same('', chunk);
      await same('QQ', chunk);
      await same('Q', chunk);
    }
  });
  it('pauses between chunks when the slice is due', async () => {
    let pauses = 0;
    const busy: Slices = { due: () => true, pause: async () => void pauses++ };
    const data = Buffer.alloc(3000, 7).toString('base64');
    expect((await decodeBase64(data, busy, 1000)).equals(Buffer.alloc(3000, 7))).toBe(true);
    expect(pauses).toBe(4);
    pauses = 0;
    const wide = `${'\u0141'.repeat(70_000)}`;
    expect((await decodeBase64(wide, busy)).equals(Buffer.from('A'.repeat(70_000), 'base64'))).toBe(true);
    expect(pauses).toBe(3);
  });
});

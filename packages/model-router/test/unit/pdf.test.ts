import { performance } from 'node:perf_hooks';
import { deflateSync } from 'node:zlib';
import { RawJsonString } from '../../src/core/raw-json-string';
import { MAX_PDF_BYTES, PdfCheckBudget, checkPdf, decodeBase64, type Slices } from '../../src/core/input-checks/pdf';
import { PdfBytes } from '../../src/core/input-checks/pdf-bytes';

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
const BUSY_SPACES = 10;
const BUSY_BOUNDARY = 4;
const BUSY_END = 6;
const BUSY_BELOW = 12;
const CARRY_PAUSES = 70;
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
    expect(await outcome(withObjStm(objStm('<< /Type /Pages /Count 250 >>', { eol: '' })))).toBe(TOO_MANY(250));
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
    // zlib reads a stream and ignores what follows it: a stream without `endstream` is still not read
    const pages = (n: number) => deflateSync(Buffer.from(`<< /Type /Pages /Count ${n} >>`));
    expect(
      await outcome(
        Buffer.concat([Buffer.from('%PDF-1.7\n<< /Type /ObjStm >>\nstream\n'), pages(250), Buffer.from('\n')]),
      ),
    ).toBe('accepted');
    // nor is anything read for an /ObjStm with no `stream` after it
    expect(
      await outcome(
        Buffer.concat([
          Buffer.from('%PDF-'),
          pages(250),
          Buffer.from(' /ObjStm stream\n'),
          pages(5),
          Buffer.from('\nendstream /ObjStm'),
        ]),
      ),
    ).toBe('accepted');
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
      b64(Buffer.concat([pagesPdf('<< /Type /Pages /Count 3 >>'), Buffer.alloc(30 * 1024 * 1024, 0x20)])),
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

/**
 * Both clocks faked: the wall clock frozen ('idle': no slice is ever due) or moving 3 ms per
 * reading ('busy': every slice is due), and each charge costing exactly 1 ms of CPU, so the time
 * taken from the budget counts the slices charged.
 */
async function charged(pdf: Buffer, mode: 'idle' | 'busy', inflatedBytes?: number, milliseconds = 1000) {
  let now = 1000;
  jest.spyOn(performance, 'now').mockImplementation(() => (mode === 'busy' ? (now += 3) : now));
  jest
    .spyOn(process, 'cpuUsage')
    .mockImplementation((previous?: NodeJS.CpuUsage) =>
      previous ? { user: 600, system: 400 } : { user: 0, system: 0 },
    );
  const budget = new PdfCheckBudget({ milliseconds, inflatedBytes });
  try {
    return { result: await outcome(pdf, budget), slices: milliseconds - budget.milliseconds };
  } finally {
    jest.restoreAllMocks();
  }
}
/** Bytes that deflate stores as they are: `n` of them deflate to a few bytes more. */
const noise = (n: number) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 7919 + (i >> 8)) % 251));
const stored = (raw: Buffer) => deflateSync(raw, { level: 0 });
const rawObjStm = (data: Buffer) =>
  Buffer.concat([Buffer.from('%PDF-1.7\n<< /Type /ObjStm >>\nstream\n'), data, Buffer.from('endstream\n')]);

describe('checkPdf: slices and the time budget', () => {
  afterEach(() => jest.restoreAllMocks());
  it('charges one slice for a small PDF, none due, CPU time user plus system', async () => {
    expect(await charged(pagesPdf('<< /Type /Pages /Count 3 >>'), 'idle')).toEqual({ result: 'accepted', slices: 1 });
    // the last millisecond of the budget may be spent
    expect(await charged(pagesPdf('<< /Type /Pages /Count 3 >>'), 'idle', undefined, 1)).toEqual({
      result: 'accepted',
      slices: 1,
    });
  });
  it('inflates a small stream on the event loop, in the same slice', async () => {
    expect(await charged(withObjStm(objStm('<< /Type /Pages /Count 250 >>')), 'idle')).toEqual({
      result: TOO_MANY(250),
      slices: 1,
    });
    // not a Flate stream: refused by the synchronous inflate, not tried again off the loop
    expect(await charged(withObjStm(objStm('junk', { compress: false })), 'idle')).toEqual({
      result: 'accepted',
      slices: 1,
    });
  });
  it('inflates past 256 KiB of output off the event loop, charging the slice before', async () => {
    const big = `<< /Type /Pages /Count 250 >>${' '.repeat(300_000)}`;
    expect(await charged(withObjStm(objStm(big)), 'idle')).toEqual({ result: TOO_MANY(250), slices: 2 });
    // with exactly 256 KiB left, 256 KiB and more of output is refused at once, without a second try
    expect(await charged(withObjStm(objStm(big)), 'idle', 256 * 1024)).toEqual({
      result: COMPLEX_INFLATE,
      slices: 0,
    });
    expect(await charged(withObjStm(objStm(big)), 'idle', 256 * 1024 + 1)).toEqual({
      result: COMPLEX_INFLATE,
      slices: 1,
    });
  });
  it('inflates an input of more than 256 KiB off the event loop, and 256 KiB on it', async () => {
    // stored, not compressed: any page tree in it would show in the file, so none (the count is unknown)
    const content = noise(262_200);
    // stored data a few bytes (per block) longer than its content: trimmed to exactly `bytes`
    const storedOfLength = (bytes: number) => {
      let data = stored(content);
      for (let cut = content.length; data.length !== bytes;) {
        cut -= data.length - bytes;
        data = stored(content.subarray(0, cut));
      }
      return data;
    };
    let data = storedOfLength(256 * 1024);
    expect(data.length).toBe(256 * 1024);
    const atMost = rawObjStm(data);
    expect(await charged(atMost, 'idle')).toEqual({ result: 'accepted', slices: 1 });
    data = storedOfLength(256 * 1024 + 1);
    expect(data.length).toBe(256 * 1024 + 1);
    expect(await charged(rawObjStm(data), 'idle')).toEqual({ result: 'accepted', slices: 2 });
  });
  it('refuses the PDF when the slice before an inflate off the event loop spends the budget', async () => {
    const budget = new PdfCheckBudget({ milliseconds: 0.5 });
    jest
      .spyOn(process, 'cpuUsage')
      .mockImplementation((previous?: NodeJS.CpuUsage) =>
        previous ? { user: 1000, system: 0 } : { user: 0, system: 0 },
      );
    jest.spyOn(performance, 'now').mockReturnValue(1000);
    const big = `<< /Type /Pages /Count 250 >>${' '.repeat(300_000)}`;
    expect(await outcome(withObjStm(objStm(big)), budget)).toBe(
      'pdf_too_complex: The PDF is too complex to check: reading its structure takes more than 5 s.',
    );
    expect(budget.milliseconds).toBe(-0.5);
  });
  it('does not charge the time spent waiting for an inflate off the event loop', async () => {
    let cpu = 0;
    let running = true;
    const tick = () => {
      cpu += 1000;
      if (running) setImmediate(tick);
    };
    jest.spyOn(performance, 'now').mockReturnValue(1000);
    jest
      .spyOn(process, 'cpuUsage')
      .mockImplementation((previous?: NodeJS.CpuUsage) =>
        previous ? { user: cpu - previous.user, system: 0 } : { user: cpu, system: 0 },
      );
    const budget = new PdfCheckBudget({ milliseconds: 1000 });
    const content = `<< /Type /Pages /Count 150 >>${' '.repeat(3 * 1024 * 1024)}`;
    const pdf = Buffer.concat([withObjStm(objStm(content)), Buffer.alloc(1024 * 1024, 0x20)]);
    const done = outcome(pdf, budget);
    setImmediate(tick);
    const result = await done;
    running = false;
    expect(result).toBe(TOO_MANY(150));
    expect(budget.milliseconds).toBe(1000);
  });
  it('lets one PDF inflate its allowance once, across its streams', async () => {
    const part = `<< /Type /Pages /Count 5 >>${' '.repeat(600 * 1024)}`;
    expect(await outcome(withObjStm(objStm(part), objStm(part)))).toBe(COMPLEX_INFLATE);
    // a stream of one byte within one byte left
    expect(await charged(withObjStm(objStm('x')), 'idle', 1)).toEqual({ result: 'accepted', slices: 1 });
  });
  it('pauses once per 256 KiB window searched and per 64 Ki white-space characters, when due', async () => {
    const spaces = ' '.repeat(70_000);
    const pdf = Buffer.from(`%PDF-1.4 << /Type${spaces}/Pages /Count${spaces}150 >>`);
    expect(await charged(pdf, 'idle')).toEqual({ result: TOO_MANY(150), slices: 1 });
    const busy = await charged(pdf, 'busy');
    expect(busy.result).toBe(TOO_MANY(150));
    expect(busy.slices).toBe(BUSY_SPACES);
  });
  it('finds a name across a window boundary, in the window where it starts', async () => {
    const W = 256 * 1024;
    const at = (position: number, text: string) => {
      const head = '%PDF-1.4\n';
      return Buffer.from(`${head}${' '.repeat(position - head.length)}${text}`);
    };
    expect(await outcome(at(W - 3, '/Encrypt 1 0 R'))).toBe(
      'pdf_encrypted: Encrypted or password-protected PDFs are not supported.',
    );
    const onBoundary = await charged(at(W, '/Encrypt 1 0 R'), 'busy');
    expect(onBoundary.result).toBe('pdf_encrypted: Encrypted or password-protected PDFs are not supported.');
    expect(onBoundary.slices).toBe(BUSY_BOUNDARY);
    // `/Encrypt` last: nothing after it is searched
    expect(await charged(at(W - 8, '/Encrypt'), 'busy')).toEqual({ result: 'accepted', slices: BUSY_END });
  });
  it('finds the << of a dictionary one window below its /Pages', async () => {
    const W = 256 * 1024;
    const head = '%PDF-1.4\n<< /Count 150 ';
    const tail = '/Type /Pages >>';
    // `<<` at 9, /Pages at 9 + W: the second window down from /Pages starts with it
    const pdf = Buffer.from(`${head}${' '.repeat(9 + W - head.length - 6)}${tail}`);
    expect(pdf.indexOf('/Pages')).toBe(9 + W);
    expect(await charged(pdf, 'busy')).toEqual({ result: TOO_MANY(150), slices: BUSY_BELOW });
    // and down to the first byte: `<<` at 0, /Pages at W
    const first = `<< /Count 150 %PDF-1.4 `;
    const fromZero = Buffer.from(`${first}${' '.repeat(W - first.length - 6)}${tail}`);
    expect(fromZero.indexOf('/Pages')).toBe(W);
    expect(await outcome(fromZero)).toBe(TOO_MANY(150));
  });
});

describe('checkPdf: each /Type /Pages dictionary', () => {
  it('reads a << at the second byte', async () => {
    expect(await outcome(Buffer.from(' << /Type /Pages /Count 150 >> %PDF-1.4'))).toBe(TOO_MANY(150));
  });
  it('keeps the << of a dictionary with a second /Type /Pages', async () => {
    expect(await outcome(pagesPdf('<< /Type /Pages /X >> /Type /Pages /Count 150 >>'))).toBe(TOO_MANY(150));
  });
  it('reads no number where there is no /Count, and a count that is not a number is unknown', async () => {
    expect(await outcome(Buffer.from('%PDF-150 << /Type /Pages >>'))).toBe('accepted');
    expect(
      await outcome(Buffer.concat([pagesPdf('<< /Type /Pages /Count x >>'), objStm('<< /Type /Pages /Count 250 >>')])),
    ).toBe(TOO_MANY(250));
  });
});

describe('decodeBase64: slices', () => {
  const counting = (due: boolean) => {
    const slices = { pauses: 0, due: () => due, pause: async () => void slices.pauses++ };
    return slices;
  };
  it('does not pause when no slice is due, nor for nothing to decode', async () => {
    const idle = counting(false);
    await decodeBase64(Buffer.alloc(3000).toString('base64'), idle, 1000);
    expect(idle.pauses).toBe(0);
    const busy = counting(true);
    expect((await decodeBase64('', busy)).length).toBe(0);
    expect(busy.pauses).toBe(0);
  });
  it('reads a raw string 64 Ki characters at a time', async () => {
    const text = Buffer.alloc(3 * 64 * 1024 * 0.75, 9).toString('base64');
    const busy = counting(true);
    const decoded = await decodeBase64(new RawJsonString(Buffer.from(text, 'latin1')), busy);
    expect(decoded.equals(Buffer.alloc(3 * 64 * 1024 * 0.75, 9))).toBe(true);
    expect(busy.pauses).toBe(3);
  });
  it('decodes whole groups of four directly, the rest character by character', async () => {
    // characters past U+00FF are read by their low byte, in both paths
    const busy = counting(true);
    const wide = '\u0141'.repeat(140_000);
    expect((await decodeBase64(wide, busy, 70_000)).equals(Buffer.from('A'.repeat(140_000), 'base64'))).toBe(true);
    expect(busy.pauses).toBe(4);
    const exact = counting(true);
    await decodeBase64('\u0141'.repeat(65_536), exact);
    expect(exact.pauses).toBe(2);
  });
  it('carries an incomplete group to the next chunk, each chunk its full size', async () => {
    const data = Buffer.from(Array.from({ length: 300 }, (_, i) => (i * 31) % 256)).toString('base64');
    const text = data.replace(/(.{10})/g, '$1\n');
    const busy = counting(true);
    expect((await decodeBase64(text, busy, 8)).equals(Buffer.from(text, 'base64'))).toBe(true);
    expect(busy.pauses).toBe(CARRY_PAUSES);
  });
});

describe('checkPdf: base64 read a window at a time', () => {
  /** Bytes a window of base64 decodes to. */
  const D = 192 * 1024;
  /** A PDF with `text` at byte `position`, white space before it. */
  const placed = (position: number, text: Buffer | string, head = '%PDF-1.4\n') =>
    Buffer.concat([Buffer.from(head), Buffer.alloc(position - head.length, 0x20), Buffer.from(text)]);
  /** The outcome of `pdf` as a string, as a raw string, and as base64 in lines (decoded whole): the same. */
  async function outcomes(pdf: Buffer) {
    const string = await outcome(pdf);
    const text = b64(pdf);
    let raw: string;
    try {
      await checkPdf(new RawJsonString(Buffer.from(text, 'latin1')), 'doc');
      raw = 'accepted';
    } catch (error) {
      raw = `${(error as { code: string }).code}: ${(error as Error).message}`;
    }
    expect(raw).toBe(string);
    expect(await outcome(text.replace(/(.{76})/g, '$1\n'))).toBe(string);
    return string;
  }
  const ENCRYPTED = 'pdf_encrypted: Encrypted or password-protected PDFs are not supported.';
  it('finds a name that crosses from one window into the next', async () => {
    expect(await outcomes(placed(D - 4, '/Encrypt 1 0 R'))).toBe(ENCRYPTED);
    expect(await outcomes(placed(D - 8, '/Encrypt 1 0 R'))).toBe(ENCRYPTED);
    expect(await outcomes(placed(D - 7, '/Encrypt /x'))).toBe('accepted');
    // `/Type` and `/Pages` of a dictionary across the boundary, then its `<<`
    expect(await outcomes(placed(D - 3, '/Type /Pages /Count 150 >>', '%PDF-1.4\n<< '))).toBe(TOO_MANY(150));
    expect(await outcomes(placed(D - 9, '/Type /Pages /Count 150 >>', '%PDF-1.4\n<< '))).toBe(TOO_MANY(150));
    expect(await outcomes(placed(D - 1, '<< /Type /Pages /Count 160 >>'))).toBe(TOO_MANY(160));
    expect(await outcomes(placed(D - 15, '<< /Type /Pages /Count 160 >>'))).toBe(TOO_MANY(160));
  });
  it('reads a /Count whose digits are split between two windows', async () => {
    const text = '<< /Type /Pages /Count 150 >>';
    expect(await outcomes(placed(D - 1 - text.indexOf('150'), text))).toBe(TOO_MANY(150));
    expect(await outcomes(placed(D - 2 - text.indexOf('150'), text))).toBe(TOO_MANY(150));
    expect(await outcomes(placed(2 * D - 1 - text.indexOf('150'), text))).toBe(TOO_MANY(150));
  });
  it('finds the << of a dictionary windows below its /Pages', async () => {
    expect(await outcomes(placed(2 * D + 1000, '/Type /Pages /Count 170 >>', '%PDF-1.4\n<< '))).toBe(TOO_MANY(170));
  });
  it('inflates an object stream whose data crosses windows', async () => {
    const stream = objStm('<< /Type /Pages /Count 250 >>');
    const data = stream.indexOf('stream\n') + 7;
    for (const at of [D - data - 5, D - data + 1, D - data, D - stream.indexOf('endstream') - 3]) {
      expect(await outcomes(placed(at, stream, '%PDF-1.7\n'))).toBe(TOO_MANY(250));
    }
    // larger than 256 KiB: inflated off the event loop, fed a window at a time
    let seed = 7;
    const random = Buffer.from(
      Array.from({ length: 400_000 }, () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 24),
    );
    // the page tree first, compressed (repeated), then data that does not compress, stored
    const large = objStm(Buffer.concat([Buffer.from('<< /Type /Pages /Count 180 >> '.repeat(2000)), random]));
    expect(large.length).toBeGreaterThan(2 * D);
    expect(large.includes('/Count')).toBe(false);
    expect(await outcomes(placed(D - 100, large, '%PDF-1.7\n'))).toBe(TOO_MANY(180));
    // and one that cannot be inflated, across windows too
    const junk = objStm(Buffer.concat([Buffer.from([0x78, 0x9c]), noise(300_000)]), { compress: false });
    expect(await outcomes(placed(D - 100, junk, '%PDF-1.7\n'))).toBe('accepted');
  });
  it('decodes each window a few times, whatever the searches', async () => {
    const decodes = async (pdf: Buffer) => {
      const fromBase64 = jest.spyOn(PdfBytes, 'fromBase64');
      try {
        await outcome(pdf);
        const bytes = (await fromBase64.mock.results[0]?.value) as PdfBytes;
        return bytes.windowsDecoded / Math.ceil(pdf.length / D);
      } finally {
        jest.restoreAllMocks();
      }
    };
    const apart = ' '.repeat(D);
    const dictionaries = Array.from({ length: 8 }, (_, i) => `<< /Type /Pages${apart}/Count ${i} >>`).join('');
    // once to check the base64, once per search through the PDF: /Encrypt, /Pages
    expect(await decodes(Buffer.from(`%PDF-1.7\n${dictionaries}`))).toBeLessThanOrEqual(3);
    const spread = Array.from({ length: 8 }, (_, i) => `${apart}/Type /Pages /Count ${i}`).join('');
    // the `>>` and `/Count` searches ahead of the /Pages one
    expect(await decodes(Buffer.from(`%PDF-1.7\n<< ${spread} >>`))).toBeLessThanOrEqual(4);
    const streams = Array.from({ length: 8 }, () => objStm(stored(noise(D)), { compress: false }));
    // /ObjStm, and the streams inflated
    expect(await decodes(withObjStm(...streams))).toBeLessThanOrEqual(4);
  });
});

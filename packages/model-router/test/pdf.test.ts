import { deflateSync } from 'node:zlib';
import { checkPdf, MAX_PDF_BYTES } from '../src';
import { makePdf } from './support';

const code = async (fn: () => Promise<void>) => {
  try {
    await fn();
  } catch (error) {
    return (error as { code: string; status: number }).code;
  }
  return 'accepted';
};

describe('PDF checks', () => {
  it('accepts up to 100 pages and refuses more', async () => {
    expect(await code(() => checkPdf(makePdf(100).toString('base64'), 'p'))).toBe('accepted');
    expect(await code(() => checkPdf(makePdf(101).toString('base64'), 'p'))).toBe('pdf_too_many_pages');
  });

  it('reads the page count inside a compressed object stream', async () => {
    const pages = Buffer.from('2 0 obj << /Type /Pages /Kids [3 0 R] /Count 250 >> endobj');
    const stream = deflateSync(pages);
    const pdf = Buffer.concat([
      Buffer.from(
        '%PDF-1.7\n5 0 obj << /Type /ObjStm /N 1 /First 4 /Filter /FlateDecode /Length ' +
          stream.length +
          ' >>\nstream\n',
      ),
      stream,
      Buffer.from('\nendstream\nendobj\n%%EOF\n'),
    ]);
    expect(await code(() => checkPdf(pdf.toString('base64'), 'p'))).toBe('pdf_too_many_pages');
  });

  it('refuses encrypted PDFs and data that is not a PDF', async () => {
    expect(await code(() => checkPdf(makePdf(1, { encrypted: true }).toString('base64'), 'p'))).toBe('pdf_encrypted');
    expect(await code(() => checkPdf(Buffer.from('<html>').toString('base64'), 'p'))).toBe('invalid_pdf');
  });

  it('refuses a PDF over 32 MB from its base64 length, with 413', async () => {
    const tooBig = 'A'.repeat(Math.ceil(((MAX_PDF_BYTES + 3) * 4) / 3));
    let status = 0;
    try {
      await checkPdf(tooBig, 'p');
    } catch (error) {
      status = (error as { status: number }).status;
      expect((error as { code: string }).code).toBe('pdf_too_large');
    }
    expect(status).toBe(413);
  });

  it('accepts a PDF of exactly 32 MB', async () => {
    const header = makePdf(1);
    const pdf = Buffer.concat([header, Buffer.alloc(MAX_PDF_BYTES - header.length, 0x20)]);
    expect(await code(() => checkPdf(pdf.toString('base64'), 'p'))).toBe('accepted');
  });
});

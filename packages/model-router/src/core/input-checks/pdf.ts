import { inflateSync } from 'node:zlib';
import { InvalidPdfError, PdfEncryptedError, PdfTooLargeError, PdfTooManyPagesError } from '../errors';
import { base64DecodedLength } from './data-url';

/** Largest PDF accepted, decoded: 32 MiB. */
export const MAX_PDF_BYTES = 32 * 1024 * 1024;
/** Most pages a PDF may have. */
export const MAX_PDF_PAGES = 100;

const PDF_HEADER = Buffer.from('%PDF-');
const ENCRYPT = Buffer.from('/Encrypt');
const PAGES = Buffer.from('/Pages');
const TYPE = Buffer.from('/Type');
const COUNT = Buffer.from('/Count');
const OBJSTM = Buffer.from('/ObjStm');
const STREAM = Buffer.from('stream');
const ENDSTREAM = Buffer.from('endstream');

function isSpace(byte: number | undefined): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09 || byte === 0x0c || byte === 0x00;
}

function readInteger(buffer: Buffer, at: number): number | undefined {
  let i = at;
  while (isSpace(buffer[i])) i++;
  let value = 0;
  const start = i;
  while (i < buffer.length && (buffer[i] as number) >= 0x30 && (buffer[i] as number) <= 0x39 && i - start < 9) {
    value = value * 10 + ((buffer[i] as number) - 0x30);
    i++;
  }
  return i === start ? undefined : value;
}

/** True when `/Encrypt` is used as a dictionary key (followed by a reference or a dictionary). */
function isEncrypted(buffer: Buffer): boolean {
  for (let at = buffer.indexOf(ENCRYPT); at !== -1; at = buffer.indexOf(ENCRYPT, at + ENCRYPT.length)) {
    let i = at + ENCRYPT.length;
    while (isSpace(buffer[i])) i++;
    const next = buffer[i] as number;
    if ((next >= 0x30 && next <= 0x39) || next === 0x3c /* < */) return true;
  }
  return false;
}

/** The largest `/Count` of a `/Type /Pages` dictionary: the root page tree's page count. */
function pageTreeCount(buffer: Buffer): number | undefined {
  let best: number | undefined;
  for (let at = buffer.indexOf(PAGES); at !== -1; at = buffer.indexOf(PAGES, at + PAGES.length)) {
    let i = at - 1;
    while (i > 0 && isSpace(buffer[i])) i--;
    if (i < TYPE.length - 1 || !buffer.subarray(i - TYPE.length + 1, i + 1).equals(TYPE)) continue;
    const start = buffer.lastIndexOf('<<', at);
    const end = buffer.indexOf('>>', at);
    if (start === -1 || end === -1) continue;
    const count = buffer.indexOf(COUNT, start);
    if (count === -1 || count > end) continue;
    const value = readInteger(buffer, count + COUNT.length);
    if (value !== undefined && (best === undefined || value > best)) best = value;
  }
  return best;
}

/** Page count from compressed object streams (PDF 1.5+), which hide the page tree. */
function objectStreamPageCount(buffer: Buffer): number | undefined {
  let best: number | undefined;
  for (let at = buffer.indexOf(OBJSTM); at !== -1; at = buffer.indexOf(OBJSTM, at + OBJSTM.length)) {
    const streamAt = buffer.indexOf(STREAM, at);
    const endAt = buffer.indexOf(ENDSTREAM, streamAt);
    if (streamAt === -1 || endAt === -1) continue;
    let dataStart = streamAt + STREAM.length;
    if (buffer[dataStart] === 0x0d) dataStart++;
    if (buffer[dataStart] === 0x0a) dataStart++;
    try {
      const inflated = inflateSync(buffer.subarray(dataStart, endAt), { maxOutputLength: 16 * 1024 * 1024 });
      const count = pageTreeCount(inflated);
      if (count !== undefined && (best === undefined || count > best)) best = count;
    } catch {
      // Not a Flate stream we can read: the page count stays unknown.
    }
  }
  return best;
}

/**
 * Checks a base64 PDF before any upstream call: decoded size (from the base64 length, before
 * decoding), the `%PDF-` header, encryption, and the page count (page tree `/Count`, including
 * inside compressed object streams). A PDF whose page count cannot be read passes through to
 * the provider, which has the last word. Never converts the PDF to a string.
 */
export function checkPdf(base64: string, param: string): void {
  if (base64DecodedLength(base64) > MAX_PDF_BYTES) {
    throw new PdfTooLargeError('The PDF is larger than 32 MB.', { param });
  }
  const pdf = Buffer.from(base64, 'base64');
  const header = pdf.indexOf(PDF_HEADER);
  if (header === -1 || header > 1024) throw new InvalidPdfError('The document is not a PDF.', { param });
  if (isEncrypted(pdf))
    throw new PdfEncryptedError('Encrypted or password-protected PDFs are not supported.', { param });
  const pages = pageTreeCount(pdf) ?? objectStreamPageCount(pdf);
  if (pages !== undefined && pages > MAX_PDF_PAGES) {
    throw new PdfTooManyPagesError(`The PDF has ${pages} pages; at most ${MAX_PDF_PAGES} are accepted.`, { param });
  }
}

import { PdfBytes, type Slices } from '../../src/core/input-checks/pdf-bytes';
import { RawJsonString } from '../../src/core/raw-json-string';

const idle: Slices = { due: () => false, pause: async () => undefined };
/** `text` decoded `windowChars` characters a window, `pieceChars` at a time (as a raw string when `raw`). */
const open = (text: string, windowChars: number, pieceChars = windowChars, raw = false) =>
  PdfBytes.fromBase64(raw ? new RawJsonString(Buffer.from(text, 'latin1')) : text, idle, windowChars, pieceChars);
/** Every byte of `pdf` read with `at`, from one before the first to one past the last. */
const everyByte = (pdf: PdfBytes) => Array.from({ length: pdf.length + 2 }, (_, i) => pdf.at(i - 1));
const expectBytes = (pdf: PdfBytes | undefined, expected: Buffer) => {
  expect(pdf).toBeDefined();
  expect((pdf as PdfBytes).length).toBe(expected.length);
  expect(everyByte(pdf as PdfBytes)).toEqual([undefined, ...expected, undefined]);
  expect((pdf as PdfBytes).copy(0, expected.length).equals(expected)).toBe(true);
};

/** 31 bytes of all sorts (base64 with `=` at the end). */
const DATA = Buffer.from(Array.from({ length: 31 }, (_, i) => (i * 97 + 13) % 256));
const TEXT = DATA.toString('base64');

describe('PdfBytes.fromBase64: the bytes', () => {
  it.each([
    [4, 4],
    [8, 4],
    [8, 8],
    [12, 4],
    [40, 8],
    [44, 44],
    [256 * 1024, 256 * 1024],
  ])('decodes as Buffer.from does, %i characters a window, %i at a time', async (windowChars, pieceChars) => {
    const variants = [
      TEXT,
      TEXT.replace(/=+$/, ''),
      TEXT.slice(0, 41),
      TEXT.replace(/\+/g, '-').replace(/\//g, '_'),
      `${TEXT.slice(0, 40)}Q Q\n=A`,
      `${TEXT.slice(0, 40)}QQ==QUFB`,
      '',
    ];
    for (const text of variants) {
      // anything but letters in the last piece of the text is read as Node reads it; before it, undefined
      const lastPiece = Math.floor((text.length - 1) / pieceChars) * pieceChars;
      const linear = /^[A-Za-z0-9+/_-]*$/.test(text.slice(0, lastPiece));
      for (const raw of [false, true]) {
        const pdf = await open(text, windowChars, pieceChars, raw);
        if (linear) expectBytes(pdf, Buffer.from(text, 'base64'));
        else expect(pdf).toBeUndefined();
      }
    }
  });
  it('is undefined when anything but base64 letters comes before the last piece', async () => {
    expect(await open(`${TEXT.slice(0, 8)}\n${TEXT.slice(8)}`, 8)).toBeUndefined();
    expect(await open(`${TEXT.slice(0, 7)}=${TEXT.slice(8)}`, 8)).toBeUndefined();
    expect(await open(`${TEXT.slice(0, 7)} ${TEXT.slice(8)}`, 8, 4, true)).toBeUndefined();
    // the last window's pieces but the last, too
    expect(await open(`${TEXT.slice(0, 40)}QQ Q=`, 48, 4)).toBeUndefined();
    expectBytes(await open(`${TEXT.slice(0, 40)}QQ Q=`, 48, 48), Buffer.from(`${TEXT.slice(0, 40)}QQ Q=`, 'base64'));
    // a last piece of one group, short or not
    expectBytes(await open('QUFBQQ==', 4), Buffer.from('AAAA'));
  });
  it('decodes each window once, pausing before each when a slice is due', async () => {
    let pauses = 0;
    const busy: Slices = { due: () => true, pause: async () => void pauses++ };
    const pdf = (await PdfBytes.fromBase64(TEXT, busy, 8)) as PdfBytes;
    expect(pauses).toBe(6);
    expect(pdf.windowsDecoded).toBe(6);
    expect(pdf.length).toBe(31);
    pauses = 0;
    await PdfBytes.fromBase64('', busy, 8);
    expect(pauses).toBe(0);
  });
});

describe('PdfBytes: windows at hand', () => {
  it('keeps the four windows last used, decoding the others again', async () => {
    // 10 windows of 3 bytes: 6 to 9 at hand once all are decoded
    const pdf = (await open(TEXT.slice(0, 40), 4)) as PdfBytes;
    expect(pdf.windowsDecoded).toBe(10);
    const decodes = (...positions: number[]) => {
      const before = pdf.windowsDecoded;
      for (const at of positions) expect(pdf.at(at)).toBe(DATA[at]);
      return pdf.windowsDecoded - before;
    };
    expect(decodes(27, 18, 20, 19, 29)).toBe(0);
    expect(decodes(0, 3, 6, 9)).toBe(4);
    // used again: the first of the four at hand, not dropped by the next
    expect(decodes(0, 12)).toBe(1);
    expect(decodes(0)).toBe(0);
    // window 1 (bytes 3 to 5) was the least recently used
    expect(decodes(3)).toBe(1);
    expect(decodes(6)).toBe(1);
    expect(decodes(0, 3, 12)).toBe(0);
    expect(decodes(9)).toBe(1);
  });
  it('gives a piece up to the end of its window, and copies across windows', async () => {
    const pdf = (await open(TEXT, 8)) as PdfBytes;
    expect(pdf.piece(7, 20)).toEqual(DATA.subarray(7, 12));
    expect(pdf.piece(7, 9)).toEqual(DATA.subarray(7, 9));
    expect(pdf.piece(30, 40)).toEqual(DATA.subarray(30, 31));
    expect(pdf.copy(5, 25)).toEqual(DATA.subarray(5, 25));
    expect(pdf.copy(5, 5)).toEqual(Buffer.alloc(0));
    const plain = PdfBytes.of(DATA);
    expect(plain.piece(7, 20)).toEqual(DATA.subarray(7, 20));
    expect(plain.copy(0, 31)).toEqual(DATA);
    expect(plain.windowsDecoded).toBe(0);
  });
});

describe('PdfBytes: searches', () => {
  const data = Buffer.from('/Count 12 endstream/Countx<</Count>>stream', 'latin1');
  const needles = ['/Count', 'endstream', 'stream', '<<', 'x', 'zz'].map((n) => Buffer.from(n));
  /** Where each needle starts, read plainly. */
  const starts = needles.map((needle) =>
    Array.from({ length: data.length }, (_, s) => s).filter((s) => data.subarray(s, s + needle.length).equals(needle)),
  );
  const views = async () => [
    PdfBytes.of(data),
    (await open(data.toString('base64'), 4)) as PdfBytes,
    (await open(data.toString('base64'), 8)) as PdfBytes,
    (await open(data.toString('base64'), 16, 4, true)) as PdfBytes,
  ];
  /** `search(needle, from, to)` for every needle and range, against `plain(starts, from, to)`. */
  const everyRange = (
    search: (needle: Buffer, from: number, to: number) => number,
    plain: (starts: number[], from: number, to: number) => number,
  ) => {
    const wrong: unknown[] = [];
    needles.forEach((needle, n) => {
      for (let from = 0; from <= data.length + 1; from++) {
        for (let to = from - 1; to <= data.length + 2; to++) {
          const expected = plain(starts[n] as number[], from, to);
          const found = search(needle, from, to);
          if (found !== expected) wrong.push({ needle: needle.toString(), from, to, found, expected });
        }
      }
    });
    return wrong;
  };
  it('finds the first start in [from, to), wherever the windows end', async () => {
    for (const pdf of await views()) {
      const first = (s: number[], from: number, to: number) => s.find((at) => at >= from && at < to) ?? -1;
      expect(everyRange((needle, from, to) => pdf.indexOf(needle, from, to), first)).toEqual([]);
    }
  });
  it('finds the last start in [from, to], wherever the windows end', async () => {
    for (const pdf of await views()) {
      const last = (s: number[], from: number, to: number) => s.findLast((at) => at >= from && at <= to) ?? -1;
      expect(everyRange((needle, from, to) => pdf.lastIndexOf(needle, from, to), last)).toEqual([]);
    }
  });
  it('compares bytes at a position, false past either end', async () => {
    for (const pdf of await views()) {
      expect(pdf.startsWith(0, Buffer.from('/Count'))).toBe(true);
      expect(pdf.startsWith(10, Buffer.from('endstream'))).toBe(true);
      expect(pdf.startsWith(11, Buffer.from('endstream'))).toBe(false);
      expect(pdf.startsWith(data.length - 6, Buffer.from('stream'))).toBe(true);
      expect(pdf.startsWith(data.length - 5, Buffer.from('tream!'))).toBe(false);
      expect(pdf.startsWith(-1, Buffer.from('x/Count'))).toBe(false);
      expect(pdf.startsWith(5, Buffer.alloc(0))).toBe(true);
    }
  });
});

import { Readable } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import fc from 'fast-check';
import {
  MAX_RAW_STRINGS,
  parseJsonBytes,
  RAW_STRING_MAX_DEPTH,
  RAW_STRING_MIN_BYTES,
  RawStringScanner,
  type JsonPath,
  type RawStringPolicy,
} from '../src/core/json-reader';
import { readJsonBody } from '../src/core/json-body';
import { RawJsonString } from '../src/core/raw-json-string';
import { chunkedJson } from '../src/core/streaming-json';
import { canonicalJson, cacheKey } from '../src/core/cache/cache-key';

const anywhere: RawStringPolicy = () => true;

/** Reads `bytes` through the scanner, fed in pieces cut at `cuts`, then parses. */
function read(bytes: Buffer, options: { policy?: RawStringPolicy; min?: number; cuts?: number[] } = {}): unknown {
  const scanner = new RawStringScanner(options.policy ?? anywhere, options.min);
  let at = 0;
  for (const cut of [...(options.cuts ?? []), bytes.length]) {
    scanner.push(bytes.subarray(at, cut));
    at = cut;
  }
  return parseJsonBytes(bytes, scanner.found);
}

/** The value with every raw string decoded: what JSON.parse gives. */
function plain(value: unknown): unknown {
  if (value instanceof RawJsonString) return value.toString();
  if (Array.isArray(value)) return value.map(plain);
  if (typeof value === 'object' && value !== null)
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
  return value;
}

/** The paths of the raw strings in a value. */
function rawPaths(value: unknown, path: (string | number)[] = []): JsonPath[] {
  if (value instanceof RawJsonString) return [path];
  if (Array.isArray(value)) return value.flatMap((v, i) => rawPaths(v, [...path, i]));
  if (typeof value === 'object' && value !== null)
    return Object.entries(value).flatMap(([k, v]) => rawPaths(v, [...path, k]));
  return [];
}

const big = (char = 'A', length = RAW_STRING_MIN_BYTES) => char.repeat(length);

/** Whether JSON.parse (as the gateway parsed bodies before: UTF-8 text, a BOM ignored) throws. */
function jsonParseThrows(bytes: Buffer): boolean {
  const text = bytes.toString('utf8');
  try {
    JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
    return false;
  } catch {
    return true;
  }
}

const policies: Record<string, RawStringPolicy> = {
  anywhere,
  nowhere: () => false,
  'every other level': (path) => path.length % 2 === 0,
};

describe('the JSON body reader', () => {
  it('keeps a large plain string raw, a reference into the received bytes, and the rest as JSON.parse reads it', () => {
    const data = big('Q', 100_000);
    const bytes = Buffer.from(JSON.stringify({ a: [1, true, null, { b: data }], c: 'é\n' }));
    const value = read(bytes) as { a: [number, boolean, null, { b: RawJsonString }] };
    const raw = value.a[3].b;
    expect(raw).toBeInstanceOf(RawJsonString);
    expect(raw.bytes.buffer).toBe(bytes.buffer);
    expect(raw.length).toBe(data.length);
    expect(plain(value)).toEqual(JSON.parse(bytes.toString()));
  });

  it('keeps a string raw from its threshold on: one byte shorter is decoded as usual', () => {
    const at = read(Buffer.from(JSON.stringify({ s: big('x', RAW_STRING_MIN_BYTES) }))) as { s: unknown };
    const under = read(Buffer.from(JSON.stringify({ s: big('x', RAW_STRING_MIN_BYTES - 1) }))) as { s: unknown };
    expect(at.s).toBeInstanceOf(RawJsonString);
    expect(typeof under.s).toBe('string');
  });

  it('decodes strings with escapes as JSON.parse does, and an escaped quote does not end a string', () => {
    for (const data of [
      `${big()}\\"${big()}`,
      `${big()}\\n`,
      `\\u0041${big()}`,
      `${big()}\\\\`,
      `${big()}\\/${big()}`,
      `${big()}\\ud83d\\ude00`,
    ]) {
      const bytes = Buffer.from(`{"s":"${data}","t":"${big('B')}"}`);
      const value = read(bytes, { cuts: [3, 70_000, 70_001] }) as { s: unknown; t: unknown };
      expect(typeof value.s).toBe('string');
      expect(value.t).toBeInstanceOf(RawJsonString);
      expect(plain(value)).toEqual(JSON.parse(bytes.toString()));
    }
  });

  it('decodes strings with characters past ASCII (or control characters) as usual, even invalid UTF-8', () => {
    for (const data of [
      Buffer.from(`${big()}é`),
      Buffer.from(`😀${big()}`),
      Buffer.concat([Buffer.from(big()), Buffer.from([0xff, 0xc3])]),
      Buffer.from(`${big()}\u007f`),
    ]) {
      const bytes = Buffer.concat([Buffer.from('{"s":"'), data, Buffer.from('"}')]);
      const value = read(bytes) as { s: unknown };
      expect(typeof value.s).toBe('string');
      expect(value).toEqual(JSON.parse(bytes.toString('utf8')));
    }
    // Invalid UTF-8 right before a raw string's quote reads as it did.
    const bytes = Buffer.concat([Buffer.from('{"k\xe2'), Buffer.from('":"'), Buffer.from(big()), Buffer.from('"}')]);
    expect(plain(read(bytes))).toEqual(JSON.parse(bytes.toString('utf8')));
  });

  it('follows keys written with escapes, and keys past 256 bytes take nothing raw', () => {
    const policy: RawStringPolicy = (path) => path.join('.') === 'file.file_data';
    const escaped = read(Buffer.from(`{"file":{"file_d\\u0061ta":"${big()}"}}`), { policy }) as {
      file: { file_data: unknown };
    };
    expect(escaped.file.file_data).toBeInstanceOf(RawJsonString);
    const longKey = 'k'.repeat(300);
    const long = read(Buffer.from(`{"${longKey}":"${big()}"}`)) as Record<string, unknown>;
    expect(typeof long[longKey]).toBe('string');
  });

  it('asks the policy about each value string by its path, and keeps only what it allows', () => {
    const seen: string[] = [];
    const policy: RawStringPolicy = (path) => {
      seen.push(JSON.stringify(path));
      return path[0] === 'keep';
    };
    const value = read(
      Buffer.from(JSON.stringify({ keep: [{ x: big() }, big()], drop: { y: big() }, short: 'abc', n: [big()] })),
      { policy },
    );
    expect(seen).toEqual(['["keep",0,"x"]', '["keep",1]', '["drop","y"]', '["short"]', '["n",0]']);
    expect(rawPaths(value)).toEqual([
      ['keep', 0, 'x'],
      ['keep', 1],
    ]);
  });

  it(`takes nothing raw deeper than ${RAW_STRING_MAX_DEPTH} levels, and at most ${MAX_RAW_STRINGS} strings`, () => {
    const nest = (depth: number): unknown => (depth === 1 ? [big()] : [nest(depth - 1)]);
    expect(rawPaths(read(Buffer.from(JSON.stringify(nest(RAW_STRING_MAX_DEPTH)))))).toHaveLength(1);
    const deep = Buffer.from(JSON.stringify([nest(RAW_STRING_MAX_DEPTH - 1), nest(RAW_STRING_MAX_DEPTH + 5)]));
    expect(rawPaths(read(deep))).toHaveLength(1);
    expect(plain(read(deep))).toEqual(JSON.parse(deep.toString()));
    const many = Buffer.from(JSON.stringify(Array.from({ length: MAX_RAW_STRINGS + 3 }, () => 'z'.repeat(10))));
    const value = read(many, { min: 8 }) as unknown[];
    expect(rawPaths(value)).toHaveLength(MAX_RAW_STRINGS);
    expect(typeof value[MAX_RAW_STRINGS]).toBe('string');
  });

  it('keeps what JSON.parse keeps of duplicate keys', () => {
    const first = read(Buffer.from(`{"a":"${big()}","a":"short"}`)) as { a: unknown };
    expect(first.a).toBe('short');
    const last = read(Buffer.from(`{"a":"short","a":"${big('C')}"}`)) as { a: unknown };
    expect(last.a).toBeInstanceOf(RawJsonString);
    const twice = read(Buffer.from(`{"a":{"b":"${big('D')}"},"a":{"b":"${big('E')}"}}`)) as { a: { b: unknown } };
    expect(String(twice.a.b)).toBe(big('E'));
    const proto = read(Buffer.from(`{"__proto__":{"x":"${big()}"}}`)) as Record<string, { x: unknown }>;
    expect(Object.getPrototypeOf(proto)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(proto, '__proto__')?.value.x).toBeInstanceOf(RawJsonString);
  });

  it('ignores a leading byte order mark as before', () => {
    const bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify({ s: big() }))]);
    expect((read(bytes, { cuts: [1, 2] }) as { s: unknown }).s).toBeInstanceOf(RawJsonString);
  });

  it('fails on exactly the bodies JSON.parse fails on', () => {
    const s = big();
    const bodies = [
      `{"a":"${s}" "b":1}`,
      `{"a":"${s}",}`,
      `{"a":"${s}"`,
      `{"a":"${s}`,
      `["${s}"]]`,
      `]["${s}"]`,
      `{"${s}"}`,
      `{"a":"${s}\u0001"}`,
      `{"a":"${s}\t"}`,
      `{"a":"${s}\\x"}`,
      `{"a":"${s}"}x`,
      `{"a" "${s}"}`,
      `{"a":"${s}"}`,
      `["${s}",{"b":["${s}"]}]`,
      `"${s}"`,
      `\ufeff{"a":"${s}"}`,
    ];
    for (const body of bodies) {
      const bytes = Buffer.from(body);
      let threw = false;
      try {
        read(bytes);
      } catch (error) {
        expect(error).toBeInstanceOf(SyntaxError);
        threw = true;
      }
      expect([body.slice(0, 12), body.slice(-12), threw]).toEqual([
        body.slice(0, 12),
        body.slice(-12),
        jsonParseThrows(bytes),
      ]);
    }
  });

  it('finds the end of every string it skips, escapes cut anywhere', () => {
    const policy: RawStringPolicy = (path) => path[0] === 'b';
    for (const skipped of [String.raw`x\\\"y\\`, String.raw`\\`, String.raw`\"`, String.raw`a\\\"\"\\`, '']) {
      const bytes = Buffer.from(`{"a":"${skipped}","b":"${big('S', 64)}","c":["${skipped}"]}`);
      for (let cut = 0; cut <= 30; cut++) {
        const cuts = [cut, cut + 1, cut + 3].filter((c) => c <= bytes.length);
        const value = read(bytes, { policy, min: 64, cuts });
        expect(rawPaths(value)).toEqual([['b']]);
        expect(plain(value)).toEqual(JSON.parse(bytes.toString()));
      }
    }
  });

  it('reads any JSON value as JSON.parse does, cut anywhere, with strings raw (property)', () => {
    fc.assert(
      fc.property(
        fc.jsonValue(),
        fc.array(fc.nat(), { maxLength: 6 }),
        fc.boolean(),
        fc.constantFrom(...Object.keys(policies)),
        (value, cutsSeed, compact, policy) => {
          const text = compact ? JSON.stringify(value) : JSON.stringify(value, null, 1);
          const bytes = Buffer.from(text);
          const cuts = [...new Set(cutsSeed.map((n) => n % (bytes.length + 1)))].sort((a, b) => a - b);
          const read1 = read(bytes, { min: 1, cuts, policy: policies[policy] });
          expect(plain(read1)).toEqual(JSON.parse(text));
          // Written back, the bytes are those of JSON.stringify of the value.
          const body = chunkedJson(read1);
          expect(Buffer.concat([...body.chunks()]).toString()).toBe(JSON.stringify(JSON.parse(text)));
          expect(canonicalJson(read1)).toBe(canonicalJson(JSON.parse(text)));
        },
      ),
    );
  });

  it('fails exactly where JSON.parse fails, on text cut and mutated anywhere (property)', () => {
    fc.assert(
      fc.property(
        fc.jsonValue(),
        fc.nat(),
        fc.constantFrom('"', '\\', ',', ']', '}', '{', ':', 'x', ''),
        fc.constantFrom(...Object.keys(policies)),
        (value, seed, insert, policy) => {
          const text = JSON.stringify(value) ?? 'null';
          const at = seed % (text.length + 1);
          const mutated = Buffer.from(text.slice(0, at) + insert + text.slice(at + (seed % 2)));
          let threw = false;
          let result: unknown;
          try {
            result = read(mutated, { min: 1, policy: policies[policy] });
          } catch {
            threw = true;
          }
          expect(threw).toBe(jsonParseThrows(mutated));
          if (!threw) expect(plain(result)).toEqual(JSON.parse(mutated.toString()));
        },
      ),
    );
  });

  it('hashes a raw string into the cache key as the string it is', () => {
    const value = read(Buffer.from(JSON.stringify({ messages: [{ content: big('k') }] })));
    const material = (body: unknown) => ({
      route: 'messages',
      provider: 'p',
      model: 'm',
      body,
      headers: { version: '2023-06-01' },
      scope: { kind: 'shared' as const },
    });
    expect(rawPaths(value)).toHaveLength(1);
    expect(cacheKey(material(value))).toBe(cacheKey(material(plain(value))));
    expect(JSON.stringify(value)).toBe(JSON.stringify(plain(value)));
  });
});

describe('readJsonBody with raw strings', () => {
  const request = (bytes: Buffer, headers: Record<string, string>, cut = 1000) => {
    const req = Readable.from([bytes.subarray(0, cut), bytes.subarray(cut)]) as unknown as IncomingMessage;
    req.headers = { 'content-type': 'application/json', ...headers };
    return req;
  };

  it('reads a body of a known length, and of an unknown one, alike', async () => {
    const bytes = Buffer.from(JSON.stringify({ messages: [{ data: big('R', 200_000) }], n: 1 }));
    const policy: RawStringPolicy = (path) => path[0] === 'messages';
    const sent: Record<string, string>[] = [
      { 'content-length': String(bytes.length) },
      { 'transfer-encoding': 'chunked' },
    ];
    for (const headers of sent) {
      const value = (await readJsonBody(request(bytes, headers), 1024 * 1024, 128, policy)) as {
        messages: [{ data: unknown }];
      };
      expect(value.messages[0].data).toBeInstanceOf(RawJsonString);
      expect(plain(value)).toEqual(JSON.parse(bytes.toString()));
    }
  });

  it('answers invalid JSON and too deep JSON with the same errors as before', async () => {
    const invalid = Buffer.from(`{"messages":["${big()}" "x"]}`);
    await expect(
      readJsonBody(request(invalid, { 'content-length': String(invalid.length) }), 1024 * 1024, 128, anywhere),
    ).rejects.toMatchObject({ code: 'invalid_json', status: 400, message: 'The request body is not valid JSON.' });
    const deep = Buffer.from(`{"messages":[[[["${big()}"]]]]}`);
    await expect(
      readJsonBody(request(deep, { 'content-length': String(deep.length) }), 1024 * 1024, 3, anywhere),
    ).rejects.toMatchObject({ code: 'json_too_deep', status: 400 });
  });
});

import { filterJsonAnswer, type McpToolGate } from '../../src/gate/tool-gate';
import { JsonScanner, MAX_SCAN_DEPTH, MEMO_ARRAYS, MEMO_MAX_BYTES, MEMO_MIN_BYTES } from '../../src/gate/tool-scan';

const scanner = (text: string | Buffer) => new JsonScanner(typeof text === 'string' ? Buffer.from(text) : text);
const requests = (text: string) => scanner(text).requests();
const answers = (text: string) => scanner(text).answers();
const parses = (text: string) => {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
};

/** Allows the tools whose name starts with `ok`. */
const gate: McpToolGate = {
  namesOnly: true,
  listed: (tool) => (tool.name.startsWith('ok') ? 'allowed' : 'access_denied'),
  called: (name) => (name.startsWith('ok') ? 'allowed' : 'access_denied'),
};

describe('the JSON scanner delimits values as JSON.parse does', () => {
  const values = [
    // Numbers.
    ...['0', '-0', '1', '9', '10', '123', '-5', '1.5', '0.25', '-0.5', '1e5', '1E5', '1e+5', '1e-5', '1.5e-3', '2E+10'],
    ...['01', '-', '+1', '.5', '1.', '1.e5', '1e', '1e+', '1E-', '-x', '--1', '0x1', '1.5.5', '1e5.5', 'e5', '00'],
    // Literals, and each of their letters wrong.
    ...['true', 'false', 'null', 'tru', 'fals', 'nul', 'True', 'nulll'],
    ...['true', 'false', 'null'].flatMap((word) =>
      Array.from({ length: word.length - 1 }, (_, k) => `${word.slice(0, k + 1)}x${word.slice(k + 2)}`),
    ),
    // Strings, their escapes and the characters JSON refuses raw.
    ...['""', '"a"', '"é"', '"\\""', '"\\\\"', '"\\/"', '"\\b"', '"\\f"', '"\\n"', '"\\r"', '"\\t"'],
    ...['"\\u0041"', '"\\u09af"', '"\\uAFaf"', '"\\uFFFF"', '"\\u00e9x"', '"a\\u0041b"', '"\\u0041\\u0042"'],
    ...['"\\x"', '"\\a"', '"\\u00g0"', '"\\u00G0"', '"\\u/000"', '"\\u:000"', '"\\u@000"', '"\\u`000"'],
    ...['"\\u12"', '"\\u012"', '"\\u', '"\\', '"abc', '"\u0001"', '"\u001f"', '"\n"', '"\t"', '"\u007f"', '" "'],
    // Arrays, objects and whitespace.
    ...['[]', '[ ]', '[1]', '[1,2]', '[ 1 , 2 ]', '[1,]', '[,1]', '[1 2]', '[1', '[[]]', '[[1],[2,[3]]]', ']'],
    ...['{}', '{ }', '{"a":1}', '{"a":1,"b":[true,{"c":null}]}', '{"a":1,}', '{"a" 1}', '{a:1}', '{"a":1 "b":2}'],
    ...['{"a":}', '{"a"', '{"a":1', '{', '{,}', '{"a":1}}', '{"a":[}', '{"a":{"b":1}', '{"a":1}x', 'x'],
    ...[' \n\r\t[ \n\r\t1 \n\r\t] \n\r\t', '\f1', '1\f', '\v1', '\u00a01', '[1,\u00a02]', ''],
  ];

  it.each(values)('requests(%j)', (value) => {
    for (const text of [value, `[${value}]`, `{"id":1,"x":${value}}`, `{"params":{"x":${value}}}`]) {
      const scanned = requests(text);
      expect({ text, scanned: scanned !== undefined }).toEqual({ text, scanned: parses(text) });
    }
  });

  it.each(values)('answers(%j)', (value) => {
    for (const text of [
      value,
      `{"result":${value}}`,
      `{"result":{"x":${value}}}`,
      `{"result":{"tools":${value}}}`,
      `{"result":{"cacheScope":${value}}}`,
      `{"result":{"tools":[${value}]}}`,
      `{"result":{"tools":[{"name":${value}}]}}`,
      `{"result":{"tools":[{"x":${value}}]}}`,
    ]) {
      const scanned = answers(text);
      expect({ text, scanned: scanned !== undefined }).toEqual({ text, scanned: parses(text) });
    }
  });

  it.each([
    '{"result":{"tools":[{}]}}',
    '{"result":{"tools":[{ }]}}',
    '{"result":{"tools":[{"name":"a",}]}}',
    '{"result":{"tools":[{"name" "a"}]}}',
    '{"result":{"tools":[{name:"a"}]}}',
    '{"result":{"tools":[{"name":"a" "b":1}]}}',
    '{"result":{"tools":[{"name":"a"}}]}}',
    '{"result":{"tools":[{"name":"a"},]}}',
    '{"result":{"tools":[{"name":"a"} {"name":"b"}]}}',
    '{"result":{"tools":[{"name":"a\\x"}]}}',
    '{"result":{"tools":[{"name":"a}]}}',
    '{"result":{"tools":[{"na\\me":"a"}]}}',
    '{"result":{"tools":[{"x":1,"name":"a"}, {"name":"b","x":[1]}]}}',
    '{"result":{"tools":[ ]}}',
    '{"result":{"tools":[1,]}}',
    '{"result":{"tools":[1 2]}}',
    '{"result":{"tools":[1}}',
    '{"result":{"tools":[1],"cacheScope":1,}}',
    '{"result":{"tools":[1] "x":1}}',
    '{"result":{"tools":[1]} "x":1}',
    '{"result":{"tools":[1]},}',
  ])('answers(%j) follows the tools and their members', (text) => {
    expect(answers(text) !== undefined).toBe(parses(text));
  });

  it.each(['{"method":"a",}', '{"method" "a"}', '{"params":{"name":"a",}}', '{"params":{"name" "a"}}'])(
    'requests(%j) follows the params',
    (text) => {
      expect(requests(text) !== undefined).toBe(parses(text));
    },
  );

  it(`follows nesting ${MAX_SCAN_DEPTH} deep and gives up below`, () => {
    // A message is depth 1; each array or object in it one more.
    const arrays = (n: number) => `{"x":${'['.repeat(n)}${']'.repeat(n)}}`;
    const objects = (n: number) => `{"x":${'{"x":'.repeat(n - 1)}{}${'}'.repeat(n - 1)}}`;
    expect(requests(arrays(MAX_SCAN_DEPTH - 1))).toHaveLength(1);
    expect(requests(arrays(MAX_SCAN_DEPTH))).toBeUndefined();
    expect(requests(objects(MAX_SCAN_DEPTH - 1))).toHaveLength(1);
    expect(requests(objects(MAX_SCAN_DEPTH))).toBeUndefined();
    expect(answers(arrays(MAX_SCAN_DEPTH - 1))).toHaveLength(1);
    expect(answers(arrays(MAX_SCAN_DEPTH))).toBeUndefined();
    // A tool is depth 4, its members 5.
    const tool = (n: number) => `{"result":{"tools":[{"x":${'['.repeat(n)}${']'.repeat(n)}}]}}`;
    expect(answers(tool(MAX_SCAN_DEPTH - 4))).toHaveLength(1);
    expect(answers(tool(MAX_SCAN_DEPTH - 3))).toBeUndefined();
    const item = (n: number) => `{"result":{"tools":[${'['.repeat(n)}${']'.repeat(n)}]}}`;
    expect(answers(item(MAX_SCAN_DEPTH - 3))).toHaveLength(1);
    expect(answers(item(MAX_SCAN_DEPTH - 2))).toBeUndefined();
  });
});

describe('the JSON scanner on requests', () => {
  const one = { object: true, id: undefined, method: undefined, name: undefined, uri: undefined };

  it('reads id, method, params.name and params.uri, and nothing else', () => {
    const s = scanner(
      ' { "jsonrpc" : "2.0" , "id" : 7 , "method" : "tools/call" , "params" : { "uri" : "file:///a" , "name" : "t" , "x" : { "name" : "y" } } , "extra" : { "method" : "z" } } ',
    );
    expect(s.requests()).toEqual([{ object: true, id: 7, method: 'tools/call', name: 't', uri: 'file:///a' }]);
    expect({ batch: s.batch, duplicate: s.duplicate }).toEqual({ batch: false, duplicate: false });
  });

  it('reads a batch, with its elements that are not objects', () => {
    const s = scanner('[ 1 , {"id":"a","method":"m"} , null , [ {"id":2} ] , "x" ]');
    const notObject = { object: false, id: undefined, method: undefined, name: undefined, uri: undefined };
    expect(s.requests()).toEqual([notObject, { ...one, id: 'a', method: 'm' }, notObject, notObject, notObject]);
    expect(s.batch).toBe(true);
    const empty = scanner('[ ]');
    expect(empty.requests()).toEqual([]);
    expect(empty.batch).toBe(true);
    expect(scanner('[]').requests()).toEqual([]);
  });

  it.each([
    ['7', 7],
    ['0', 0],
    ['9', 9],
    ['-3', -3],
    ['1.5e2', 150],
    ['-0.25', -0.25],
    ['"s"', 's'],
    ['""', ''],
    ['"a\\"b"', 'a"b'],
    ['"\\u0041"', 'A'],
    ['true', null],
    ['false', null],
    ['null', null],
    ['{"id":1}', null],
    ['[1]', null],
  ])('reads the id %s', (text, id) => {
    expect(requests(`{"id":${text},"method":"m"}`)).toEqual([{ ...one, id, method: 'm' }]);
  });

  it('reads a method that is not a string as present but null, and string fields that are not strings as absent', () => {
    expect(requests('{"method":5}')).toEqual([{ ...one, method: null }]);
    expect(requests('{"method":{"a":"b"}}')).toEqual([{ ...one, method: null }]);
    expect(requests('{"method":"a\\/b\\u00e9"}')).toEqual([{ ...one, method: 'a/bé' }]);
    expect(requests('{"params":{"name":5,"uri":["u"]}}')).toEqual([one]);
    expect(requests('{"params":["name","uri"]}')).toEqual([one]);
    expect(requests('{"params":"x"}')).toEqual([one]);
    expect(requests('{"params":{"name":"\\u006eo","uri":"\\"u\\""}}')).toEqual([{ ...one, name: 'no', uri: '"u"' }]);
    expect(requests('{"params":{"name":"a\\u00","uri":"u"}}')).toBeUndefined();
    expect(requests('{"method":"a\\u00"}')).toBeUndefined();
    expect(requests('{"id":"a\\u00"}')).toBeUndefined();
    expect(requests('{"id":-}')).toBeUndefined();
  });

  it('reads keys written with escapes, and ignores long keys and other keys', () => {
    expect(requests('{"\\u0069d":1,"m\\u0065thod":"m","p\\u0061rams":{"n\\u0061me":"n","\\u0075ri":"u"}}')).toEqual([
      { object: true, id: 1, method: 'm', name: 'n', uri: 'u' },
    ]);
    expect(requests('{"idx":1,"methods":"m","param":{"name":"n"},"params_":{"name":"x"},"i":2}')).toEqual([one]);
    expect(requests('{"params":{"names":"n","ur":"u","urix":"v","Names":"w"}}')).toEqual([one]);
    expect(requests('{"a_long_key_here":{"id":5,"method":"z"}}')).toEqual([one]);
  });

  it.each([
    '{"id":1,"id":1}',
    '{"id":1,"ID":2}',
    '{"Id":1}',
    '{"method":"a","method":"a"}',
    '{"METHOD":"a"}',
    '{"params":{},"params":{}}',
    '{"Params":{}}',
    '{"params":{"name":"a","name":"a"}}',
    '{"params":{"Name":"a"}}',
    '{"params":{"uri":"a","uri":"b"}}',
    '{"params":{"URI":"a"}}',
    '{"params":{"n\\u0041me":"a"}}',
    '{"\\u0049D":1}',
    '{"params":{"name":5,"name":"a"}}',
    '[{"id":1},{"id":2,"Id":3}]',
  ])('refuses %s as a repeated key', (text) => {
    const s = scanner(text);
    expect(s.requests()).toBeUndefined();
    expect(s.duplicate).toBe(true);
  });

  it('reads the same key in different objects as no repeat', () => {
    const s = scanner('[{"id":1,"params":{"name":"a"}},{"id":2,"params":{"name":"b","x":{"name":"c"}}}]');
    expect(s.requests()).toEqual([
      { ...one, id: 1, name: 'a' },
      { ...one, id: 2, name: 'b' },
    ]);
    expect(s.duplicate).toBe(false);
    const invalid = scanner('{"id":1,"x":[}');
    expect(invalid.requests()).toBeUndefined();
    expect(invalid.duplicate).toBe(false);
  });
});

describe('the JSON scanner on answers', () => {
  it('finds each tool, its bytes and its name, and where the cacheScope is', () => {
    const text =
      '{"id":1,"result":{"cacheScope":"public","tools":[ {"name":"a","x":[1]} , 5 , {"x":{"name":"y"}} , {"n\\u0061me":"\\u0062"} , {"name":7} ],"name":"z"}}';
    const found = answers(text) ?? [];
    const at = (part: string) => text.indexOf(part);
    const toolsStart = at('[ {');
    expect(found).toEqual([
      {
        cacheScope: { start: at('"public"'), end: at('"public"') + 8 },
        tools: {
          start: toolsStart,
          end: text.indexOf('],"name"') + 1,
          items: [
            { start: at('{"name":"a"'), end: at(' , 5'), name: 'a' },
            { start: at('5 ,'), end: at('5 ,') + 1, name: undefined },
            { start: at('{"x":{"name"'), end: at('{"x":{"name"') + 18, name: undefined },
            { start: at('{"n\\u'), end: at(' , {"name":7}'), name: 'b' },
            { start: at('{"name":7}'), end: at('{"name":7}') + 10, name: undefined },
          ],
        },
      },
    ]);
  });

  it('reads each message of a batch, and a tools array only in result', () => {
    const s = scanner(
      '[5,{"tools":[{"name":"a"}]},{"result":{"x":{"tools":[{"name":"b"}]}}},{"result":[{"tools":[]}]},{"result":{"tools":{"name":"c"}}},{"result":{"tools":[]}}]',
    );
    const found = s.answers() ?? [];
    expect(s.batch).toBe(true);
    expect(found.slice(0, 5)).toEqual([{}, {}, {}, {}, {}]);
    expect(found[5]?.tools?.items).toEqual([]);
    expect(answers('{"result":{"tools":[]}}')?.[0]?.tools?.end).toBe('{"result":{"tools":[]'.length);
    expect(answers('{"result":{"tools":[ ]}}')?.[0]?.tools?.end).toBe('{"result":{"tools":[ ]'.length);
  });

  it.each([
    '{"result":{},"result":{}}',
    '{"result":5,"result":{}}',
    '{"result":{"tools":[],"tools":[]}}',
    '{"result":{"tools":5,"tools":[]}}',
    '{"result":{"cacheScope":"a","cacheScope":"b"}}',
    '{"result":{"tools":[{"name":"a","name":"b"}]}}',
    '{"result":{"tools":[{"name":5,"name":"b"}]}}',
    '{"result":{"tools":[{"name":"a","n\\u0061me":"b"}]}}',
    '{"result":{"tools":[]},"res\\u0075lt":{"tools":[]}}',
  ])('gives up on %s, a key it reads given twice (JSON.parse decides)', (text) => {
    expect(answers(text)).toBeUndefined();
  });

  it('reads keys by their exact spelling', () => {
    for (const text of [
      '{"Result":{"tools":[{"name":"a"}]}}',
      '{"results":{"tools":[{"name":"a"}]}}',
      '{"resul":{"tools":[{"name":"a"}]}}',
      '{"resulx":{"tools":[{"name":"a"}]}}',
      '{"result":{"Tools":[{"name":"a"}]}}',
      '{"result":{"tool":[{"name":"a"}],"cacheScopes":"x","cachescope":"y"}}',
    ])
      expect(answers(text)).toEqual([{}]);
    expect(
      answers('{"result":{"tools":[{"Name":"a"},{"names":"b"},{"nam":"c"},{"namx":"d"}]}}')?.[0]?.tools?.items,
    ).toEqual([
      expect.objectContaining({ name: undefined }),
      expect.objectContaining({ name: undefined }),
      expect.objectContaining({ name: undefined }),
      expect.objectContaining({ name: undefined }),
    ]);
  });
});

describe('a server whose tool list did not change', () => {
  /** A tool list of `count` tools, `ok_*` and `no_*` in turn, unique to this call. */
  let lists = 0;
  const toolList = (count: number, rename: (name: string) => string = (n) => n) => {
    const tag = `${process.pid}_${Date.now()}_${lists++}`;
    return Array.from({ length: count }, (_, i) => ({
      name: rename(`${i % 2 === 0 ? 'ok' : 'no'}_${String(i).padStart(3, '0')}`),
      description: `Tool ${i} of ${tag}: reads records of kind ${i} and returns their fields.`,
      inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
    }));
  };
  const answer = (id: number, tools: unknown, before = '', after = '') =>
    `{"jsonrpc":"2.0",${before}"id":${id},"result":{"tools":${JSON.stringify(tools)}${after}}}`;
  /** What the filter must answer, read the obvious way. */
  const reference = (text: string) => {
    const parsed = JSON.parse(text) as { result: { tools: { name: string }[] } };
    parsed.result.tools = parsed.result.tools.filter((t) => t.name.startsWith('ok'));
    return parsed;
  };
  /** An array of exactly `bytes` bytes holding one tool. */
  const sized = (bytes: number) => {
    const head = `[{"name":"ok_${process.pid}_${Date.now()}_${lists++}","d":"`;
    return `${head}${'x'.repeat(bytes - head.length - 3)}"}]`;
  };
  /** Whether scanning `text` scanned a tools array again (rather than recognise one it remembers). */
  const scans = (text: string | Buffer): number => {
    const spy = jest.spyOn(JsonScanner.prototype as unknown as { scanTools: () => number }, 'scanTools');
    try {
      scanner(text).answers();
      return spy.mock.calls.length;
    } finally {
      spy.mockRestore();
    }
  };
  const inAnswer = (array: string) => `{"result":{"tools":${array}}}`;

  it('is filtered the same when its unchanged list stands at another place in the answer', () => {
    const tools = toolList(40);
    for (const [id, before, after] of [
      [1, '', ''],
      [2, '"x":"a longer field before the id",', ''],
      [12345, '', ',"nextCursor":"c2"'],
      [3, '"pad":"' + 'p'.repeat(3000) + '",', ''],
    ] as const) {
      const text = answer(id, tools, before, after);
      expect(JSON.parse(filterJsonAnswer(text, gate))).toEqual(reference(text));
    }
  });

  it('gives the offsets of a remembered list where it stands now', () => {
    const tools = JSON.stringify(toolList(20));
    const first = scanner(inAnswer(tools)).answers()?.[0]?.tools;
    const moved = `{"a":"${'m'.repeat(100)}","result":{"tools":${tools}}}`;
    expect(scans(moved)).toBe(0);
    const second = scanner(moved).answers()?.[0]?.tools;
    const shift = moved.indexOf('[') - inAnswer(tools).indexOf('[');
    expect(second).toEqual({
      start: (first?.start ?? 0) + shift,
      end: (first?.end ?? 0) + shift,
      items: first?.items.map((t) => ({ start: t.start + shift, end: t.end + shift, name: t.name })),
    });
    expect(second?.items.map((t) => t.name)).toEqual(JSON.parse(tools).map((t: { name: string }) => t.name));
  });

  it(`remembers lists of ${MEMO_MIN_BYTES} to ${MEMO_MAX_BYTES} bytes`, () => {
    for (const [bytes, remembered] of [
      [MEMO_MIN_BYTES - 1, false],
      [MEMO_MIN_BYTES, true],
      [MEMO_MAX_BYTES, true],
      [MEMO_MAX_BYTES + 1, false],
    ] as const) {
      const array = sized(bytes);
      expect(Buffer.byteLength(array)).toBe(bytes);
      expect(scans(inAnswer(array))).toBe(1);
      expect({ bytes, scans: scans(inAnswer(array)) }).toEqual({ bytes, scans: remembered ? 0 : 1 });
    }
  });

  it(`remembers the ${MEMO_ARRAYS} lists used last`, () => {
    const arrays = Array.from({ length: MEMO_ARRAYS + 1 }, () => JSON.stringify(toolList(20)));
    for (const array of arrays.slice(0, MEMO_ARRAYS)) scans(inAnswer(array));
    // The oldest is still known; being used makes it the newest.
    expect(scans(inAnswer(arrays[0] as string))).toBe(0);
    scans(inAnswer(arrays[MEMO_ARRAYS] as string));
    // The one now least used was forgotten, the other ones kept.
    expect(scans(inAnswer(arrays[0] as string))).toBe(0);
    expect(scans(inAnswer(arrays[2] as string))).toBe(0);
    expect(scans(inAnswer(arrays[1] as string))).toBe(1);
  });

  it('sees a tool renamed, added or removed in a list it has filtered before', () => {
    const base = toolList(40);
    const first = answer(1, base);
    expect(JSON.parse(filterJsonAnswer(first, gate))).toEqual(reference(first));
    const changes = [
      base.map((t) => (t.name === 'no_039' ? { ...t, name: 'ok_039' } : t)), // the last tool, a byte before the end
      base.map((t) => (t.name === 'ok_000' ? { ...t, name: 'no_000' } : t)), // the first tool
      [...base, { name: 'ok_new' }], // one more
      base.slice(0, 39), // one fewer: a prefix of the list seen before
    ];
    for (const tools of changes) {
      const text = answer(1, tools);
      expect(scans(text)).toBe(1);
      expect(JSON.parse(filterJsonAnswer(text, gate))).toEqual(reference(text));
    }
  });

  it('refuses to follow a list cut short after the bytes of one it knows', () => {
    const whole = answer(1, toolList(40));
    filterJsonAnswer(whole, gate);
    // The same list, then garbage instead of the answer's end: not JSON, refused.
    const broken = `${whole.slice(0, -2)},}`;
    expect(() => filterJsonAnswer(broken, gate)).toThrow(/not valid JSON/);
    // The list's bytes at the very end of the text: recognised, and still not JSON.
    const cut = Buffer.from(whole.slice(0, -2));
    expect(scans(cut)).toBe(0);
    expect(scanner(cut).answers()).toBeUndefined();
  });

  it('stays right for more servers than it remembers', () => {
    const all = Array.from({ length: 20 }, (_, s) => toolList(30, (n) => `${n}_s${s}`));
    for (let round = 0; round < 2; round++)
      all.forEach((tools, s) => {
        const text = answer(s, tools);
        expect(JSON.parse(filterJsonAnswer(text, gate))).toEqual(reference(text));
      });
  });
});

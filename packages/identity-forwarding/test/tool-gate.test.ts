import fc from 'fast-check';
import {
  filterJsonAnswer,
  filterJsonBytes,
  inspectRequest,
  MAX_INSPECTED_EVENT_CHARS,
  SseToolFilter,
  type McpListedTool,
  type McpToolGate,
} from '../src';

/** Allows the tools whose name starts with `ok`. */
const gate = (namesOnly: boolean): McpToolGate & { seen: McpListedTool[] } => {
  const seen: McpListedTool[] = [];
  return {
    namesOnly,
    seen,
    listed: (tool) => {
      seen.push(tool);
      return tool.name.startsWith('ok') ? 'allowed' : 'access_denied';
    },
    called: (name) => (name.startsWith('ok') ? 'allowed' : 'access_denied'),
  };
};

type Message = { id?: unknown; result?: { tools?: unknown } | null };

/** Bodies at least this long were once read by a scanner of their own: both sizes are tried. */
const SCANNED_REQUEST_BYTES = 16 * 1024;

/** What the filter must answer, read the obvious way: parse, drop the tools not allowed, whatever the id. */
function reference(text: string): unknown {
  const parsed = JSON.parse(text) as Message | Message[];
  for (const m of Array.isArray(parsed) ? parsed : [parsed]) {
    if (typeof m !== 'object' || m === null) continue;
    const tools = typeof m.result === 'object' && m.result !== null ? m.result.tools : undefined;
    if (!Array.isArray(tools)) continue;
    (m.result as { tools: unknown[] }).tools = tools.filter(
      (t) =>
        typeof t === 'object' &&
        t !== null &&
        typeof (t as { name?: unknown }).name === 'string' &&
        (t as { name: string }).name.startsWith('ok'),
    );
  }
  return parsed;
}

/** JSON text of `value` with random whitespace, and keys or strings sometimes written with escapes. */
const jsonText = (value: unknown, spaces: boolean[], escapes: boolean[]): string => {
  let n = 0;
  const ws = () => (spaces[n++ % spaces.length] ? ' \n\t' : '');
  const str = (s: string) => {
    const plain = JSON.stringify(s);
    if (!escapes[n++ % escapes.length] || s === '') return plain;
    // The first character as a \u escape.
    return `"\\u${s.charCodeAt(0).toString(16).padStart(4, '0')}${JSON.stringify(s.slice(1)).slice(1)}`;
  };
  const write = (v: unknown): string => {
    if (Array.isArray(v)) return `[${ws()}${v.map((x) => `${write(x)}${ws()}`).join(`,${ws()}`)}]`;
    if (typeof v === 'object' && v !== null)
      return `{${ws()}${Object.entries(v)
        .map(([k, x]) => `${str(k)}${ws()}:${ws()}${write(x)}`)
        .join(`,${ws()}`)}${ws()}}`;
    if (typeof v === 'string') return str(v);
    return JSON.stringify(v);
  };
  return `${ws()}${write(value)}${ws()}`;
};

describe('the tool gate on tools/list answers', () => {
  it('keeps exactly the allowed tools, their bytes as received, for random answers (JSON text, escapes, batches)', () => {
    const name = fc.oneof(
      fc.constantFrom('ok_a', 'ok_é', 'no_b', 'no', 'ok"q', 'ok\\n', 'okö\u2028'),
      fc.string({ maxLength: 6 }),
    );
    const tool = fc.oneof(
      {
        weight: 6,
        arbitrary: fc.record(
          { name, description: fc.string(), inputSchema: fc.jsonValue({ maxDepth: 3 }) },
          { requiredKeys: ['name'] },
        ),
      },
      { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
      { weight: 1, arbitrary: fc.record({ name: fc.oneof(fc.integer(), fc.constant(null)), x: fc.string() }) },
    );
    const message = fc.record(
      {
        jsonrpc: fc.constant('2.0'),
        id: fc.oneof(fc.constantFrom(1, 2, 'a', 'b', 1.5, -0), fc.constant(null)),
        result: fc.oneof(
          fc.record({ tools: fc.array(tool, { maxLength: 6 }), nextCursor: fc.string() }, { requiredKeys: ['tools'] }),
          fc.record({ tools: fc.jsonValue({ maxDepth: 1 }) }),
          fc.jsonValue({ maxDepth: 2 }),
        ),
        method: fc.string({ maxLength: 3 }),
      },
      { requiredKeys: ['id'] },
    );
    const answer = fc.oneof(message, fc.array(message, { maxLength: 4 }), fc.jsonValue({ maxDepth: 2 }));
    fc.assert(
      fc.property(
        answer,
        fc.array(fc.boolean(), { minLength: 1, maxLength: 7 }),
        fc.array(fc.boolean(), { minLength: 1, maxLength: 5 }),
        fc.boolean(),
        (value, spaces, escapes, namesOnly) => {
          const text = jsonText(value, spaces, escapes);
          const expected = reference(text);
          const g = gate(namesOnly);
          const out = filterJsonAnswer(text, g);
          expect(JSON.parse(out)).toEqual(expected);
          const bytes = filterJsonBytes(Buffer.from(text), gate(namesOnly));
          expect(bytes.toString()).toBe(out);
          // The whole tool reaches a gate that reads more than the name.
          if (!namesOnly) for (const t of g.seen) expect(Object.keys(t).length).toBeGreaterThanOrEqual(1);
        },
      ),
      { numRuns: 1500 },
    );
  });

  it('keeps the text of an allowed tool byte for byte, and answers the very same buffer when nothing is removed', () => {
    const allowed = '{ "name" : "ok_1",  "description":"caf\u00e9 \\u00e9", "inputSchema":{"type":"object"} }';
    const text = `{"jsonrpc":"2.0","id":7,"result":{"tools":[${allowed},{"name":"no_1"}],"nextCursor":"x"}}`;
    const out = filterJsonAnswer(text, gate(true));
    expect(out).toBe(`{"jsonrpc":"2.0","id":7,"result":{"tools":[${allowed}],"nextCursor":"x"}}`);
    const same = Buffer.from(`{"jsonrpc":"2.0","id":7,"result":{"tools":[${allowed}]}}`);
    expect(filterJsonBytes(same, gate(true))).toBe(same);
    // Any id, or none: every result.tools is filtered.
    for (const id of ['"7"', 'null', '8', '"other"'])
      expect(filterJsonAnswer(text.replace('"id":7', `"id":${id}`), gate(true))).toBe(
        out.replace('"id":7', `"id":${id}`),
      );
    expect(filterJsonAnswer(text.replace('"id":7,', ''), gate(true))).toBe(out.replace('"id":7,', ''));
  });

  it('reads a repeated or escaped key the way JSON.parse does (the last one counts)', () => {
    const twice = '{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"ok_a","name":"no_b"},{"n\\u0061me":"no_c"}]}}';
    expect(JSON.parse(filterJsonAnswer(twice, gate(true)))).toEqual({
      jsonrpc: '2.0',
      id: 1,
      result: { tools: [] },
    });
    const tools =
      '{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"ok_a"}],"tools":[{"name":"no_b"},{"name":"ok_c"}]}}';
    expect(JSON.parse(filterJsonAnswer(tools, gate(true))).result.tools).toEqual([{ name: 'ok_c' }]);
    const deep = `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"no","x":${'['.repeat(400)}${']'.repeat(400)}},{"name":"ok"}]}}`;
    expect(JSON.parse(filterJsonAnswer(deep, gate(true))).result.tools).toEqual([{ name: 'ok' }]);
  });

  it('refuses text that is not strict JSON as upstream_invalid_response', () => {
    for (const text of ['', 'not json', '{"id":1,"result":{"tools":[{"name":"no"}]}', '{"id":1}x', '{"a":"\u0001"}'])
      expect(() => filterJsonAnswer(text, gate(true))).toThrow(
        expect.objectContaining({ code: 'upstream_invalid_response' }),
      );
  });
});

describe('the tool gate on requests', () => {
  const pad = (size: number, head: string, tail: string) =>
    head + 'x'.repeat(Math.max(0, size - head.length - tail.length)) + tail;

  it.each([0, SCANNED_REQUEST_BYTES])('refuses a tools/call of a refused tool (body of %i bytes or more)', (size) => {
    const call = (name: string, id = '7') =>
      pad(
        size,
        `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"arguments":{"pad":"`,
        `"},"name":${name}}}`,
      );
    const refused = inspectRequest(Buffer.from(call('"no_x"')), gate(true));
    expect(JSON.parse(refused.answer as string)).toMatchObject({
      id: 7,
      error: { code: -32602, data: { code: 'access_denied', tool: 'no_x' } },
    });
    expect(inspectRequest(Buffer.from(call('"ok_x"')), gate(true)).answer).toBeUndefined();
    // Written with an escape: read as the server reads it.
    expect(inspectRequest(Buffer.from(call('"n\\u006f_x"')), gate(true)).answer).toBeDefined();
    // Given twice, or also spelled in another case: servers differ on which one counts, so refused.
    const invalid = expect.objectContaining({ code: 'invalid_mcp_message', status: 400 });
    expect(() => inspectRequest(Buffer.from(call('"ok_x","name":"no_y"')), gate(true))).toThrow(invalid);
    expect(() => inspectRequest(Buffer.from(call('"no_y","name":"ok_x"')), gate(true))).toThrow(invalid);
    expect(() => inspectRequest(Buffer.from(call('"ok_x","Name":"no_y"')), gate(true))).toThrow(invalid);
    expect(() => inspectRequest(Buffer.from(call('"ok_x","n\\u0061me":"no_y"')), gate(true))).toThrow(invalid);
    expect(JSON.parse(inspectRequest(Buffer.from(call('"no_x"', '"s-1"')), gate(true)).answer as string).id).toBe(
      's-1',
    );
    // The method given twice: refused.
    const twice = pad(
      size,
      '{"jsonrpc":"2.0","id":8,"method":"ping","params":{"name":"no_x","pad":"',
      '"},"method":"tools/call"}',
    );
    expect(() => inspectRequest(Buffer.from(twice), gate(true))).toThrow(invalid);
  });

  it.each([0, SCANNED_REQUEST_BYTES])(
    'answers a batch holding a refused tools/call whole (%i bytes or more)',
    (size) => {
      const body = pad(
        size,
        '[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":"b","method":"tools/list","params":{"cursor":"',
        '"}},{"jsonrpc":"2.0","method":"notifications/initialized"}]',
      );
      expect(inspectRequest(Buffer.from(body), gate(true)).answer).toBeUndefined();
      const refused = inspectRequest(
        Buffer.from(
          body.replace(
            '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
            '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"no"}}',
          ),
        ),
        gate(true),
      );
      expect(JSON.parse(refused.answer as string)).toEqual([
        expect.objectContaining({ id: 1, error: expect.objectContaining({ code: -32602 }) }),
        expect.objectContaining({ id: 'b', error: expect.objectContaining({ code: -32600 }) }),
      ]);
    },
  );
});

describe('the event-stream filter', () => {
  const listEvent = (size: number) => {
    const head = 'data: {"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"ok"},{"name":"no","description":"';
    const tail = '"}]}}';
    return head + 'x'.repeat(size - head.length - tail.length) + tail;
  };

  it(`filters an event of ${MAX_INSPECTED_EVENT_CHARS} characters, and refuses one character more`, () => {
    const filter = new SseToolFilter(gate(true));
    const out = filter.push(Buffer.from(`${listEvent(MAX_INSPECTED_EVENT_CHARS)}\n\n`));
    expect(out).toBe('data: {"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"ok"}]}}\n\n');
    const over = new SseToolFilter(gate(true));
    expect(() => over.push(Buffer.from(`${listEvent(MAX_INSPECTED_EVENT_CHARS + 1)}\n\n`))).toThrow(
      /larger than the gateway inspects/,
    );
    // The same, arriving in pieces: the limit holds before the event is complete.
    const pieces = new SseToolFilter(gate(true));
    const big = listEvent(MAX_INSPECTED_EVENT_CHARS + 1);
    expect(() => {
      for (let at = 0; at < big.length; at += 1 << 20) pieces.push(Buffer.from(big.slice(at, at + (1 << 20))));
    }).toThrow(/larger than the gateway inspects/);
  });

  it('filters every answer holding a tool list, whatever its id', () => {
    const filter = new SseToolFilter(gate(true));
    const text =
      'event: message\nid: 9\ndata: {"jsonrpc":"2.0","id":41,"result":{"tools":[{"name":"no_x"},{"name":"ok_y"}]}}\n\n' +
      'data: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n\n';
    expect(filter.push(Buffer.from(text)) + filter.end()).toBe(
      'id: 9\nevent: message\ndata: {"jsonrpc":"2.0","id":41,"result":{"tools":[{"name":"ok_y"}]}}\n\n' +
        'data: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n\n',
    );
  });
});

describe('a server whose tool list did not change', () => {
  /** A tool list well over the memo's 1 KiB floor: `count` tools, `ok_*` and `no_*` in turn. */
  const toolList = (count: number, rename: (name: string) => string = (n) => n) =>
    Array.from({ length: count }, (_, i) => ({
      name: rename(`${i % 2 === 0 ? 'ok' : 'no'}_${String(i).padStart(3, '0')}`),
      description: `Tool ${i}: reads records of kind ${i} and returns their fields.`,
      inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
    }));
  const answer = (id: number, tools: unknown, before = '', after = '') =>
    `{"jsonrpc":"2.0",${before}"id":${id},"result":{"tools":${JSON.stringify(tools)}${after}}}`;

  it('is filtered the same when its unchanged list stands at another place in the answer', () => {
    const tools = toolList(40);
    for (const [id, before, after] of [
      [1, '', ''],
      [2, '"x":"a longer field before the id",', ''],
      [12345, '', ',"nextCursor":"c2"'],
      [3, '"pad":"' + 'p'.repeat(3000) + '",', ''],
    ] as const) {
      const text = answer(id, tools, before, after);
      expect(JSON.parse(filterJsonAnswer(text, gate(true)))).toEqual(reference(text));
    }
  });

  it('sees a tool renamed, added or removed in a list it has filtered before', () => {
    const first = answer(1, toolList(40));
    expect(JSON.parse(filterJsonAnswer(first, gate(true)))).toEqual(reference(first));
    const changes = [
      toolList(40, (n) => (n === 'no_039' ? 'ok_039' : n)), // the last tool, a byte before the end
      toolList(40, (n) => (n === 'ok_000' ? 'no_000' : n)), // the first tool
      toolList(41), // one more
      toolList(39), // one fewer: a prefix of the list seen before
    ];
    for (const tools of changes) {
      const text = answer(1, tools);
      expect(JSON.parse(filterJsonAnswer(text, gate(true)))).toEqual(reference(text));
    }
  });

  it('refuses to follow a list cut short after the bytes of one it knows', () => {
    const whole = answer(1, toolList(40));
    filterJsonAnswer(whole, gate(true));
    // The same list, then garbage instead of the answer's end: not JSON, refused.
    const broken = `${whole.slice(0, -2)},}`;
    expect(() => filterJsonAnswer(broken, gate(true))).toThrow(/not valid JSON/);
  });

  it('stays right for more servers than it remembers', () => {
    const lists = Array.from({ length: 20 }, (_, s) => toolList(30, (n) => `${n}_s${s}`));
    for (let round = 0; round < 2; round++)
      lists.forEach((tools, s) => {
        const text = answer(s, tools);
        expect(JSON.parse(filterJsonAnswer(text, gate(true)))).toEqual(reference(text));
      });
  });
});

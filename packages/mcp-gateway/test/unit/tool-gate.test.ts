import {
  decodeMcpName,
  filterJsonAnswer,
  filterJsonBytes,
  HEADER_MISMATCH_CODE,
  inspectRequest,
  isUtf8MediaType,
  parseMediaType,
  TOOL_REFUSED_CODE,
  type McpListedTool,
  type McpToolGate,
  type McpToolVerdict,
} from '../../src/gate/tool-gate';

/** Allows the tools whose name starts with `ok`; records what it was asked. */
function recordingGate(namesOnly: boolean): McpToolGate & { listedTools: McpListedTool[]; calledNames: string[] } {
  const listedTools: McpListedTool[] = [];
  const calledNames: string[] = [];
  return {
    namesOnly,
    listedTools,
    calledNames,
    listed: (tool) => {
      listedTools.push(tool);
      return typeof tool.name === 'string' && tool.name.startsWith('ok') ? 'allowed' : 'access_denied';
    },
    called: (name) => {
      calledNames.push(name);
      return name.startsWith('ok') ? 'allowed' : 'access_denied';
    },
  };
}

/** Allows the tools whose name starts with `ok`. */
const gate: McpToolGate = recordingGate(true);

const invalid = expect.objectContaining({ code: 'invalid_mcp_message', status: 400 });
const unreadable = expect.objectContaining({ code: 'upstream_invalid_response', status: 502 });
const call = (name: string) => `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"${name}"}}`;
const b64 = (s: string) => `=?base64?${Buffer.from(s).toString('base64')}?=`;
/** The message of the error `run` throws. */
const thrown = (run: () => unknown): string => {
  try {
    run();
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('nothing thrown');
};
const requestError = (reason: string) => `The MCP request body cannot be read as strict UTF-8 JSON: ${reason}.`;

describe('the content type of a gated request', () => {
  it.each([
    ['application/json', true],
    ['Application/JSON', true],
    ['application/json; charset=utf-8', true],
    ['application/json;charset="UTF-8"', true],
    ['application/json ; charset=Utf-8', true],
    ['application/json; charset=utf-16le', false],
    ['application/json; charset="utf-16"', false],
    ['application/json; charset=latin1', false],
    ['application/json; charset=utf-8; charset=utf-16le', false],
    ['x-application/json', false],
    ['application/jsonx', false],
    ['application/json-seq', false],
    ['text/plain; a=application/json', false],
    ['application/json, text/plain', false],
    ['application/json;', false],
    ['', false],
    [undefined, false],
  ])('%s → accepted %s', (header, accepted) => {
    expect(isUtf8MediaType(parseMediaType(header), 'application/json')).toBe(accepted);
  });

  it.each([
    ['application/json', { essence: 'application/json' }],
    ['  Application/JSON  ', { essence: 'application/json' }],
    ['application/json;charset=UTF-8', { essence: 'application/json', charset: 'utf-8' }],
    ['application/json \t;\t charset=utf-8 \t', { essence: 'application/json', charset: 'utf-8' }],
    ['application/json; Charset="utf\\-8"', { essence: 'application/json', charset: 'utf-8' }],
    ['application/json; charset="a\\"b;c"', { essence: 'application/json', charset: 'a"b;c' }],
    ['application/json; charset=""', { essence: 'application/json', charset: '' }],
    ['application/json; boundary=x; q=1', { essence: 'application/json' }],
    ['application/json; boundary="x y"; charset=utf-8', { essence: 'application/json', charset: 'utf-8' }],
    ['a/b', { essence: 'a/b' }],
    ["a!#$%&'*+.^_`|~9-/b", { essence: "a!#$%&'*+.^_`|~9-/b" }],
  ])('parses %j', (header, type) => {
    expect(parseMediaType(header)).toEqual(type);
  });

  it.each([
    ['json'],
    ['/json'],
    ['application/'],
    ['appli cation/json'],
    ['application/js on'],
    ['application/json; charset'],
    ['application/json; charset='],
    ['application/json; =utf-8'],
    ['application/json; charset=utf 8'],
    ['application/json; charset="utf-8'],
    ['application/json; char set=utf-8'],
    ['application/json; charset=utf-8 x'],
    ['application/json x; charset=utf-8'],
    ['application/json; a=1;; b=2'],
    ['application/json; a=1 b=2'],
    ['application/json; CHARSET=utf-8; charset=utf-8'],
    ['application/json; charset=(utf-8)'],
    // Parameters read from the start of what is left, never found further on.
    ['application/json; a=b xx; c=d  ; e=f'],
  ])('refuses %j', (header) => {
    expect(parseMediaType(header)).toBeUndefined();
  });

  it('reads a header given as a list as missing', () => {
    expect(parseMediaType(['application/json'])).toBeUndefined();
  });

  it('accepts the essence asked for with no charset or utf-8 only', () => {
    expect(isUtf8MediaType(undefined, 'application/json')).toBe(false);
    expect(isUtf8MediaType({ essence: 'text/event-stream' }, 'application/json')).toBe(false);
    expect(isUtf8MediaType({ essence: 'text/event-stream' }, 'text/event-stream')).toBe(true);
    expect(isUtf8MediaType({ essence: 'application/json', charset: 'utf-8' }, 'application/json')).toBe(true);
    expect(isUtf8MediaType({ essence: 'application/json', charset: 'utf8' }, 'application/json')).toBe(false);
    expect(isUtf8MediaType({ essence: 'application/json', charset: '' }, 'application/json')).toBe(false);
  });
});

describe('the body of a gated request', () => {
  it('refuses a byte-order mark, UTF-16, invalid UTF-8 and invalid JSON', () => {
    const bodies = [
      Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(call('no_x'))]),
      Buffer.from(`\ufeff${call('no_x')}`, 'utf16le'),
      Buffer.from(call('no_x'), 'utf16le'),
      Buffer.concat([Buffer.from(call('no_x').slice(0, 30)), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]),
      Buffer.from(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ok_\xff"}}`, 'latin1'),
      Buffer.from(`${call('no_x')}x`),
      Buffer.from(''),
    ];
    for (const body of bodies) expect(() => inspectRequest(body, gate)).toThrow(invalid);
  });

  it('names why it refuses a body', () => {
    const bom = Buffer.from([0xef, 0xbb, 0xbf]);
    expect(thrown(() => inspectRequest(Buffer.concat([bom, Buffer.from(call('ok'))]), gate))).toBe(
      requestError('it starts with a byte-order mark'),
    );
    // The mark alone (three bytes), then characters whose UTF-8 shares one or two of its bytes.
    expect(thrown(() => inspectRequest(bom, gate))).toBe(requestError('it starts with a byte-order mark'));
    for (const text of ['\uffff', '\ufec0', '\ueeff', 'x'])
      expect(thrown(() => inspectRequest(Buffer.from(text), gate))).toBe(requestError('it is not valid JSON'));
    expect(thrown(() => inspectRequest(Buffer.from([0x7b, 0xff, 0x7d]), gate))).toBe(
      requestError('it is not valid UTF-8'),
    );
    expect(thrown(() => inspectRequest(Buffer.from(call('ok').replace('"id":7,', '"id":7,"id":8,')), gate))).toBe(
      requestError('a key the gateway reads (id, method, params, name, uri) is repeated'),
    );
    // Deeper than the scanner follows, and not JSON: JSON.parse decides.
    expect(thrown(() => inspectRequest(Buffer.from(`${'['.repeat(400)}${']'.repeat(399)}`), gate))).toBe(
      requestError('it is not valid JSON'),
    );
  });

  it('reads escapes as the server does, and refuses a read key given twice or in another case', () => {
    const escaped = '{"jsonrpc":"2.0","id":7,"method":"tools/\\u0063all","params":{"na\\u006de":"\\u006eo_x"}}';
    expect(JSON.parse(inspectRequest(Buffer.from(escaped), gate).answer as string).error.data.tool).toBe('no_x');
    for (const body of [
      '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ok_a","name":"no_x"}}',
      '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ok_a","NAME":"no_x"}}',
      '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ok_a"},"params":{"name":"no_x"}}',
      '{"jsonrpc":"2.0","id":7,"method":"tools/list","Method":"tools/call","params":{"name":"no_x"}}',
      '{"jsonrpc":"2.0","id":7,"id":8,"method":"tools/call","params":{"name":"ok_a"}}',
    ])
      expect(() => inspectRequest(Buffer.from(body), gate)).toThrow(invalid);
    // Nesting deeper than the scanner follows: parsed, and decided as the server decides.
    const deep = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{"x":${'['.repeat(400)}${']'.repeat(400)}},"name":"no_x"}}`;
    expect(inspectRequest(Buffer.from(deep), gate).answer).toContain('no_x');
  });
});

describe('the tools/call of a gated request', () => {
  const pad = (size: number, head: string, tail: string) =>
    head + 'x'.repeat(Math.max(0, size - head.length - tail.length)) + tail;

  /** Bodies at least this long were once read by a scanner of their own: both sizes are tried. */
  it.each([0, 16 * 1024])('refuses a tools/call of a refused tool (body of %i bytes or more)', (size) => {
    const g = recordingGate(true);
    const body = (name: string, id = '7') =>
      pad(
        size,
        `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"arguments":{"pad":"`,
        `"},"name":${name}}}`,
      );
    const refused = inspectRequest(Buffer.from(body('"no_x"')), g);
    expect(refused.status).toBe(200);
    expect(JSON.parse(refused.answer as string)).toMatchObject({
      id: 7,
      error: { code: -32602, data: { code: 'access_denied', tool: 'no_x' } },
    });
    expect(inspectRequest(Buffer.from(body('"ok_x"')), g)).toEqual({});
    // Written with an escape: read as the server reads it.
    expect(inspectRequest(Buffer.from(body('"n\\u006f_x"')), g).answer).toBeDefined();
    // Given twice, or also spelled in another case: servers differ on which one counts, so refused.
    expect(() => inspectRequest(Buffer.from(body('"ok_x","name":"no_y"')), g)).toThrow(invalid);
    expect(() => inspectRequest(Buffer.from(body('"no_y","name":"ok_x"')), g)).toThrow(invalid);
    expect(() => inspectRequest(Buffer.from(body('"ok_x","Name":"no_y"')), g)).toThrow(invalid);
    expect(() => inspectRequest(Buffer.from(body('"ok_x","n\\u0061me":"no_y"')), g)).toThrow(invalid);
    expect(JSON.parse(inspectRequest(Buffer.from(body('"no_x"', '"s-1"')), g).answer as string).id).toBe('s-1');
    // The method given twice: refused.
    const twice = pad(
      size,
      '{"jsonrpc":"2.0","id":8,"method":"ping","params":{"name":"no_x","pad":"',
      '"},"method":"tools/call"}',
    );
    expect(() => inspectRequest(Buffer.from(twice), g)).toThrow(invalid);
    expect(g.calledNames).toEqual(['no_x', 'ok_x', 'no_x', 'no_x']);
  });

  it('answers a refused call with its JSON-RPC error, the verdict and the tool name cut at 128 characters', () => {
    const pending: McpToolGate = { listed: () => 'allowed', called: () => 'tool_pending_approval' };
    expect(JSON.parse(inspectRequest(Buffer.from(call('t')), pending).answer as string)).toEqual({
      jsonrpc: '2.0',
      id: 7,
      error: {
        code: TOOL_REFUSED_CODE,
        message: `The tool "t" is new or changed and waits for an administrator's approval.`,
        data: { code: 'tool_pending_approval', tool: 't' },
      },
    });
    const long = `no_${'x'.repeat(200)}`;
    expect(JSON.parse(inspectRequest(Buffer.from(call(long)), gate).answer as string)).toEqual({
      jsonrpc: '2.0',
      id: 7,
      error: {
        code: -32602,
        message: `The tool "${long.slice(0, 128)}" is not allowed for this caller.`,
        data: { code: 'access_denied', tool: long.slice(0, 128) },
      },
    });
  });

  it('asks the gate about a call without a string name as the tool ""', () => {
    for (const params of ['{"name":5}', '{}', '[]', 'null', '{"uri":"x"}']) {
      const g = recordingGate(true);
      const answer = inspectRequest(Buffer.from(`{"id":1,"method":"tools/call","params":${params}}`), g).answer;
      expect(JSON.parse(answer as string)).toMatchObject({ id: 1, error: { data: { tool: '' } } });
      expect(g.calledNames).toEqual(['']);
    }
    const g = recordingGate(true);
    expect(inspectRequest(Buffer.from('{"id":1,"method":"tools/call"}'), g).answer).toBeDefined();
    expect(g.calledNames).toEqual(['']);
    // The same, deeper than the scanner follows (parsed: no params object at all).
    const deep = recordingGate(true);
    const body = `{"id":1,"method":"tools/call","x":${'['.repeat(300)}${']'.repeat(300)}}`;
    expect(JSON.parse(inspectRequest(Buffer.from(body), deep).answer as string)).toMatchObject({
      id: 1,
      error: { data: { tool: '' } },
    });
    expect(deep.calledNames).toEqual(['']);
  });

  it('answers with the id of the call when it is a string or a number, else null', () => {
    const id = (text: string) =>
      (JSON.parse(inspectRequest(Buffer.from(call('no').replace('7', text)), gate).answer as string) as { id: unknown })
        .id;
    expect(id('"a"')).toBe('a');
    expect(id('0')).toBe(0);
    expect(id('-1.5e2')).toBe(-150);
    expect(id('9')).toBe(9);
    for (const other of ['true', 'null', '{"a":1}', '[1]']) expect(id(other)).toBeNull();
    // Without an id (a notification): answered all the same, with id null.
    const noId = '{"jsonrpc":"2.0","method":"tools/call","params":{"name":"no"}}';
    expect(JSON.parse(inspectRequest(Buffer.from(noId), gate).answer as string).id).toBeNull();
  });

  it('lets every other method, and what is not a message, through', () => {
    const g = recordingGate(true);
    for (const body of [
      '{"id":1,"method":"tools/list","params":{"name":"no"}}',
      '{"id":1,"method":"prompts/get","params":{"name":"no"}}',
      '{"id":1,"method":5,"params":{"name":"no"}}',
      '{"id":1,"result":{}}',
      '5',
      'null',
      '[]',
      '[1,null,"x"]',
      '[{"id":1,"method":"tools/call","params":{"name":"ok"}}]',
    ])
      expect(inspectRequest(Buffer.from(body), g)).toEqual({});
    expect(g.calledNames).toEqual(['ok']);
  });

  it.each([0, 16 * 1024])('answers a batch holding a refused tools/call whole (%i bytes or more)', (size) => {
    const body = pad(
      size,
      '[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":"b","method":"tools/list","params":{"cursor":"',
      '"}},{"jsonrpc":"2.0","method":"notifications/initialized"}]',
    );
    expect(inspectRequest(Buffer.from(body), gate).answer).toBeUndefined();
    const refused = inspectRequest(
      Buffer.from(
        body.replace(
          '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
          '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"no"}}',
        ),
      ),
      gate,
    );
    expect(JSON.parse(refused.answer as string)).toEqual([
      expect.objectContaining({ id: 1, error: expect.objectContaining({ code: -32602 }) }),
      expect.objectContaining({ id: 'b', error: expect.objectContaining({ code: -32600 }) }),
    ]);
  });

  it('answers each request of a refused batch, in order, and leaves out notifications, answers and non-objects', () => {
    const batch = [
      '5',
      '{"id":1,"method":"ping"}',
      '{"id":2,"method":"tools/call","params":{"name":"no_a"}}',
      'null',
      '{"method":"notifications/x"}',
      '{"id":3,"result":{}}',
      '{"id":true,"method":7}',
      '{"id":4,"method":"tools/call","params":{"name":"ok_b"}}',
      '{"id":"5","method":"tools/call","params":{"name":"no_c"}}',
    ];
    const notForwarded = (id: unknown) => ({
      jsonrpc: '2.0',
      id,
      error: { code: -32600, message: 'Not forwarded: the batch holds a refused tools/call.' },
    });
    const refusedCall = (id: unknown, tool: string) => ({
      jsonrpc: '2.0',
      id,
      error: {
        code: -32602,
        message: `The tool "${tool}" is not allowed for this caller.`,
        data: { code: 'access_denied', tool },
      },
    });
    const expected = [
      notForwarded(1),
      refusedCall(2, 'no_a'),
      notForwarded(null),
      notForwarded(4),
      refusedCall('5', 'no_c'),
    ];
    const text = `[${batch.join(',')}]`;
    expect(inspectRequest(Buffer.from(text), gate)).toEqual({ status: 200, answer: JSON.stringify(expected) });
    // The same batch nested deeper than the scanner follows: parsed, and answered alike.
    const deep = text.replace('{"id":3,"result":{}}', `{"id":3,"result":${'['.repeat(300)}${']'.repeat(300)}}`);
    expect(inspectRequest(Buffer.from(deep), gate)).toEqual({ status: 200, answer: JSON.stringify(expected) });
  });

  it('reads a message nested deeper than the scanner follows with JSON.parse, one message or a batch', () => {
    const deepArgs = `{"x":${'['.repeat(300)}${']'.repeat(300)}}`;
    const one = `{"id":9,"method":"tools/call","params":{"arguments":${deepArgs},"name":"no_d"}}`;
    expect(JSON.parse(inspectRequest(Buffer.from(one), gate).answer as string)).toMatchObject({
      id: 9,
      error: { data: { tool: 'no_d' } },
    });
    expect(JSON.parse(inspectRequest(Buffer.from(`[${one}]`), gate).answer as string)).toMatchObject([
      { id: 9, error: { data: { tool: 'no_d' } } },
    ]);
    expect(inspectRequest(Buffer.from(one.replace('no_d', 'ok_d')), gate)).toEqual({});
    expect(inspectRequest(Buffer.from(`[${one.replace('no_d', 'ok_d')}]`), gate)).toEqual({});
  });
});

describe('the Mcp-Method and Mcp-Name headers of a gated request', () => {
  const mismatch = (body: string, method?: string[], name?: string[]) => {
    const out = inspectRequest(Buffer.from(body), gate, { method, name });
    return out.status === 400
      ? (JSON.parse(out.answer as string) as { id: unknown; error: { code: number; message: string } })
      : out;
  };
  const message = (body: string, method?: string[], name?: string[]) =>
    (mismatch(body, method, name) as { error: { message: string } }).error.message;

  it('answers -32020 when they disagree with the body, in both directions', () => {
    expect(mismatch(call('no_x'), ['tools/call'], ['ok_a'])).toEqual({
      jsonrpc: '2.0',
      id: 7,
      error: { code: HEADER_MISMATCH_CODE, message: "Mcp-Name is not the body's params.name." },
    });
    expect(inspectRequest(Buffer.from(call('no_x')), gate, { name: ['ok_a'] }).status).toBe(400);
    expect(mismatch(call('ok_a'), ['tools/call'], ['no_x'])).toMatchObject({ error: { code: -32020 } });
    expect(mismatch(call('ok_a'), ['tools/list'])).toMatchObject({ error: { code: -32020 } });
    expect(mismatch(call('ok_a'), ['tools/call'], [b64('no_x')])).toMatchObject({ error: { code: -32020 } });
    expect(mismatch(call('ok_a'), ['tools/call'], ['=?base64?!!?='])).toMatchObject({ error: { code: -32020 } });
    // Repeated, with a batch, or naming what the method does not have.
    expect(mismatch(call('ok_a'), ['tools/call', 'tools/call'], ['ok_a'])).toMatchObject({ error: { code: -32020 } });
    expect(mismatch(`[${call('ok_a')}]`, ['tools/call'])).toMatchObject({ id: null, error: { code: -32020 } });
    expect(mismatch('{"jsonrpc":"2.0","id":1,"method":"tools/list"}', undefined, ['ok_a'])).toMatchObject({
      error: { code: -32020 },
    });
    const read = '{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///a","name":"x"}}';
    expect(mismatch(read, ['resources/read'], ['x'])).toMatchObject({ id: 2, error: { code: -32020 } });
  });

  it('names each disagreement', () => {
    const twice = 'Mcp-Method or Mcp-Name is given more than once.';
    expect(message(call('ok_a'), ['tools/call', 'tools/call'])).toBe(twice);
    expect(message(call('ok_a'), undefined, ['ok_a', 'ok_a'])).toBe(twice);
    expect(message(call('ok_a'), ['tools/call'], ['ok_a', 'ok_a'])).toBe(twice);
    const batch = 'Mcp-Method and Mcp-Name go with one message, not a batch.';
    expect(message(`[${call('ok_a')}]`, ['tools/call'], ['ok_a'])).toBe(batch);
    expect(message(`[${call('ok_a')}]`, undefined, ['ok_a'])).toBe(batch);
    expect(message('[]', ['tools/call'])).toBe(batch);
    for (const body of ['5', 'null', '"tools/call"']) {
      expect(mismatch(body, ['tools/call'])).toEqual({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32020, message: batch },
      });
      expect(message(body, undefined, ['x'])).toBe(batch);
    }
    expect(message(call('ok_a'), ['tools/list'])).toBe("Mcp-Method is not the body's method.");
    expect(message(call('ok_a'), [''])).toBe("Mcp-Method is not the body's method.");
    expect(message('{"id":1,"params":{"name":"a"}}', ['tools/call'])).toBe("Mcp-Method is not the body's method.");
    const noName = "Mcp-Name is given, but the body's method has no name.";
    expect(message('{"id":1,"method":"tools/list","params":{"name":"a"}}', undefined, ['a'])).toBe(noName);
    expect(message('{"id":1,"method":5,"params":{"name":"a"}}', undefined, ['a'])).toBe(noName);
    expect(message('{"id":1,"params":{"name":"a"}}', undefined, ['a'])).toBe(noName);
    expect(message('{"id":1,"method":"tools/call","params":{"name":5}}', ['tools/call'], ['5'])).toBe(
      "Mcp-Name is not the body's params.name.",
    );
    expect(message('{"id":1,"method":"tools/call"}', ['tools/call'], [''])).toBe(
      "Mcp-Name is not the body's params.name.",
    );
    // A name that does not decode never agrees, not even with a body without a name.
    expect(message('{"id":1,"method":"tools/call"}', ['tools/call'], ['=?base64?YQ?='])).toBe(
      "Mcp-Name is not the body's params.name.",
    );
    expect(message('{"id":1,"method":"tools/call","params":{}}', undefined, ['=?base64?/w==?='])).toBe(
      "Mcp-Name is not the body's params.name.",
    );
    const deep = `{"id":1,"method":"tools/call","x":${'['.repeat(300)}${']'.repeat(300)}}`;
    expect(message(deep, ['tools/call'], ['a'])).toBe("Mcp-Name is not the body's params.name.");
    expect(message('{"id":1,"method":"prompts/get","params":{"uri":"a"}}', undefined, ['a'])).toBe(
      "Mcp-Name is not the body's params.name.",
    );
    for (const method of ['resources/read', 'resources/subscribe', 'resources/unsubscribe'])
      expect(message(`{"id":1,"method":"${method}","params":{"name":"a"}}`, undefined, ['a'])).toBe(
        "Mcp-Name is not the body's params.uri.",
      );
  });

  it('answers with the id of a single message, as the server would', () => {
    for (const [id, shown] of [
      ['"a"', 'a'],
      ['3', 3],
      ['true', null],
      ['{"x":1}', null],
    ] as const)
      expect(mismatch(`{"id":${id},"method":"tools/list"}`, ['tools/call'])).toMatchObject({ id: shown });
    expect(mismatch('{"method":"tools/list"}', ['tools/call'])).toMatchObject({ id: null });
    const deep = `{"id":{"x":${'['.repeat(300)}${']'.repeat(300)}},"method":"tools/list"}`;
    expect(mismatch(deep, ['tools/call'])).toMatchObject({ id: null });
    const deepId = `{"id":4,"x":${'['.repeat(300)}${']'.repeat(300)},"method":"tools/list"}`;
    expect(mismatch(deepId, ['tools/call'])).toMatchObject({ id: 4, error: { code: -32020 } });
  });

  it('lets agreeing headers, Base64-wrapped names and absent headers through', () => {
    expect(mismatch(call('ok_a'), ['tools/call'], ['ok_a'])).toEqual({});
    expect(mismatch(call('ok_é'), ['tools/call'], [b64('ok_é')])).toEqual({});
    expect(mismatch(call('ok_a'))).toEqual({});
    expect(mismatch(call('ok_a'), ['tools/call'])).toEqual({});
    expect(mismatch(call('ok_a'), undefined, ['ok_a'])).toEqual({});
    expect(inspectRequest(Buffer.from(call('ok_a')), gate)).toEqual({});
    const read = '{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///a"}}';
    expect(mismatch(read, ['resources/read'], ['file:///a'])).toEqual({});
    for (const method of ['resources/subscribe', 'resources/unsubscribe'])
      expect(mismatch(read.replace('resources/read', method), [method], ['file:///a'])).toEqual({});
    const prompt = '{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"p"}}';
    expect(mismatch(prompt, ['prompts/get'], ['p'])).toEqual({});
    // A refused call with agreeing headers is refused as a call.
    expect(inspectRequest(Buffer.from(call('no_x')), gate, { method: ['tools/call'], name: ['no_x'] }).status).toBe(
      200,
    );
  });

  it('decodes an Mcp-Name wrapped in Base64 only when it is canonical Base64 of UTF-8', () => {
    expect(decodeMcpName('ok_a')).toBe('ok_a');
    expect(decodeMcpName(b64('ok_é'))).toBe('ok_é');
    expect(decodeMcpName(b64('ab'))).toBe('ab');
    expect(decodeMcpName(b64('abc'))).toBe('abc');
    expect(decodeMcpName('=?base64??=')).toBe('');
    expect(decodeMcpName(b64('=?base64?x?='))).toBe('=?base64?x?=');
    expect(decodeMcpName('=?base64?YQ?=')).toBeUndefined(); // "a" without its padding
    expect(decodeMcpName('=?base64?YR==?=')).toBeUndefined(); // "a", written with stray bits
    expect(decodeMcpName('=?base64?/w==?=')).toBeUndefined(); // the byte 0xff: not UTF-8
    expect(decodeMcpName('=?base64?!!?=')).toBe('=?base64?!!?='); // not the wrapping: taken as written
    expect(decodeMcpName('x=?base64?YQ==?=')).toBe('x=?base64?YQ==?=');
    expect(decodeMcpName('=?base64?YQ==?=x')).toBe('=?base64?YQ==?=x');
  });
});

describe('a gated JSON answer', () => {
  const list = (id: string, scope = '') =>
    `{"jsonrpc":"2.0","id":${id},"result":{"tools":[{"name":"ok_a"},{"name":"no_x"}]${scope}}}`;
  const read = (text: string) => JSON.parse(filterJsonBytes(Buffer.from(text), gate).toString());

  it('filters every result.tools, makes a present cacheScope private, and refuses what it cannot read', () => {
    for (const id of ['7', '"7"', 'null', '99']) expect(read(list(id)).result.tools).toEqual([{ name: 'ok_a' }]);
    expect(read(`[${list('1')},${list('2')}]`).map((m: { result: { tools: unknown } }) => m.result.tools)).toEqual([
      [{ name: 'ok_a' }],
      [{ name: 'ok_a' }],
    ]);
    expect(read(list('1', ',"ttlMs":60000,"cacheScope":"public"')).result).toEqual({
      tools: [{ name: 'ok_a' }],
      ttlMs: 60000,
      cacheScope: 'private',
    });
    expect(read(list('1', ',"cacheScope":"public","cacheScope":"x"')).result.cacheScope).toBe('private');
    expect(read(list('1')).result).not.toHaveProperty('cacheScope');
    // Every allowed tool kept: the scope alone changes.
    expect(read('{"id":1,"result":{"cacheScope":"public","tools":[{"name":"ok_a"}]}}').result.cacheScope).toBe(
      'private',
    );
    for (const bad of [
      Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(list('1'))]),
      Buffer.from(list('1'), 'utf16le'),
      Buffer.from(`${list('1')}}`),
    ])
      expect(() => filterJsonBytes(bad, gate)).toThrow(unreadable);
  });

  it('names why it cannot read an answer', () => {
    const bytes = (b: Buffer) => thrown(() => filterJsonBytes(b, gate));
    expect(bytes(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(list('1'))]))).toBe(
      "The MCP server's JSON answer cannot be read: it starts with a byte-order mark.",
    );
    expect(bytes(Buffer.from([0x7b, 0xc3, 0x7d]))).toBe(
      "The MCP server's JSON answer cannot be read: it is not valid UTF-8.",
    );
    expect(bytes(Buffer.from(`${list('1')}}`))).toBe('The MCP server answered with a body that is not valid JSON.');
  });

  it('keeps the text of an allowed tool byte for byte, and answers the very same buffer when nothing is removed', () => {
    const allowed = '{ "name" : "ok_1",  "description":"caf\u00e9 \\u00e9", "inputSchema":{"type":"object"} }';
    const text = `{"jsonrpc":"2.0","id":7,"result":{"tools":[${allowed},{"name":"no_1"}],"nextCursor":"x"}}`;
    const out = filterJsonAnswer(text, gate);
    expect(out).toBe(`{"jsonrpc":"2.0","id":7,"result":{"tools":[${allowed}],"nextCursor":"x"}}`);
    const same = Buffer.from(`{"jsonrpc":"2.0","id":7,"result":{"tools":[${allowed}]}}`);
    expect(filterJsonBytes(same, gate)).toBe(same);
    // Any id, or none: every result.tools is filtered.
    for (const id of ['"7"', 'null', '8', '"other"'])
      expect(filterJsonAnswer(text.replace('"id":7', `"id":${id}`), gate)).toBe(out.replace('"id":7', `"id":${id}`));
    expect(filterJsonAnswer(text.replace('"id":7,', ''), gate)).toBe(out.replace('"id":7,', ''));
  });

  it('writes exactly the allowed tools between the brackets, with the cacheScope before or after them', () => {
    const tools = ' [ {"name":"no_0"} , {"name":"ok_1"},{"name":"no_2"}, {"name":"ok_3"} ,{"name":"no_4"} ] ';
    expect(filterJsonAnswer(`{"result":{"tools":${tools}}}`, gate)).toBe(
      '{"result":{"tools": [{"name":"ok_1"},{"name":"ok_3"}] }}',
    );
    expect(filterJsonAnswer(`{"result":{"cacheScope" : "public" ,"tools":${tools}}}`, gate)).toBe(
      '{"result":{"cacheScope" : "private" ,"tools": [{"name":"ok_1"},{"name":"ok_3"}] }}',
    );
    expect(filterJsonAnswer(`{"result":{"tools":${tools},"cacheScope":{"a":1}},"id":1}`, gate)).toBe(
      '{"result":{"tools": [{"name":"ok_1"},{"name":"ok_3"}] ,"cacheScope":"private"},"id":1}',
    );
    expect(filterJsonAnswer('{"result":{"tools":[{"name":"no"}]}}', gate)).toBe('{"result":{"tools":[]}}');
    expect(filterJsonAnswer('{"result":{"tools":[{"name":"no"}],"cacheScope":"private"}}', gate)).toBe(
      '{"result":{"tools":[],"cacheScope":"private"}}',
    );
    // Already private, every tool allowed: the very same buffer.
    const privateAlready = Buffer.from('{"result":{"cacheScope":"private","tools":[{"name":"ok"}]}}');
    expect(filterJsonBytes(privateAlready, gate)).toBe(privateAlready);
    // A scope written with an escape is written again plainly.
    expect(filterJsonAnswer('{"result":{"tools":[],"cacheScope":"priv\\u0061te"}}', gate)).toBe(
      '{"result":{"tools":[],"cacheScope":"private"}}',
    );
    // A cacheScope beside no tools array is not the gate's: left as it is.
    for (const text of [
      '{"result":{"cacheScope":"public"}}',
      '{"result":{"cacheScope":"public","tools":{"name":"no"}}}',
      '{"result":{"tools":"no"},"cacheScope":"public"}',
    ])
      expect(filterJsonAnswer(text, gate)).toBe(text);
    // Messages after the filtered one keep their bytes.
    expect(
      filterJsonAnswer('[{"result":{"tools":[{"name":"no"}]}} , {"result":{"tools":[{"name":"ok"}]}}, 5 ]', gate),
    ).toBe('[{"result":{"tools":[]}} , {"result":{"tools":[{"name":"ok"}]}}, 5 ]');
    expect(filterJsonAnswer('[{"result":{"tools":[{"name":"ok"}]}},{"result":{"tools":[{"name":"no"}]}}]', gate)).toBe(
      '[{"result":{"tools":[{"name":"ok"}]}},{"result":{"tools":[]}}]',
    );
  });

  it('removes a listed tool that is not an object with a string name, even for a gate that allows all', () => {
    const all: McpToolGate = { listed: () => 'allowed', called: () => 'allowed' };
    const text = '{"result":{"tools":[5,{"x":1},{"name":7},null,"n",{"name":"a"},[{"name":"b"}]]}}';
    expect(filterJsonAnswer(text, all)).toBe('{"result":{"tools":[{"name":"a"}]}}');
    expect(filterJsonAnswer(text, { ...all, namesOnly: true })).toBe('{"result":{"tools":[{"name":"a"}]}}');
    // The same, deeper than the scanner follows: parsed and written again.
    const deep = text.replace('{"x":1}', `{"x":${'['.repeat(300)}${']'.repeat(300)}}`);
    expect(JSON.parse(filterJsonAnswer(deep, all))).toEqual({ result: { tools: [{ name: 'a' }] } });
  });

  it('gives the gate the name alone when it reads names only, else the whole tool', () => {
    const text =
      '{"result":{"tools":[{"name":"ok_a","description":"d","inputSchema":{"type":"object"}},{"name":"no"}]}}';
    const names = recordingGate(true);
    filterJsonAnswer(text, names);
    expect(names.listedTools).toEqual([{ name: 'ok_a' }, { name: 'no' }]);
    const whole = recordingGate(false);
    filterJsonAnswer(text, whole);
    expect(whole.listedTools).toEqual([
      { name: 'ok_a', description: 'd', inputSchema: { type: 'object' } },
      { name: 'no' },
    ]);
  });

  it('reads a repeated or escaped key the way JSON.parse does (the last one counts)', () => {
    const twice = '{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"ok_a","name":"no_b"},{"n\\u0061me":"no_c"}]}}';
    expect(JSON.parse(filterJsonAnswer(twice, gate))).toEqual({ jsonrpc: '2.0', id: 1, result: { tools: [] } });
    const tools =
      '{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"ok_a"}],"tools":[{"name":"no_b"},{"name":"ok_c"}]}}';
    expect(JSON.parse(filterJsonAnswer(tools, gate)).result.tools).toEqual([{ name: 'ok_c' }]);
    const deep = `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"no","x":${'['.repeat(400)}${']'.repeat(400)}},{"name":"ok"}]}}`;
    expect(JSON.parse(filterJsonAnswer(deep, gate)).result.tools).toEqual([{ name: 'ok' }]);
    const results = '{"id":1,"result":{"tools":[{"name":"no"}]},"result":{"tools":[{"name":"ok"},{"name":"no"}]}}';
    expect(JSON.parse(filterJsonAnswer(results, gate))).toEqual({ id: 1, result: { tools: [{ name: 'ok' }] } });
  });

  it('parses what the scanner does not follow, writes it again when it holds a tools array, and else keeps the bytes', () => {
    const nest = `${'['.repeat(300)}${']'.repeat(300)}`;
    // Every tool allowed: written again all the same (parsed whole).
    const allowed = `{ "id" : 1, "x":${nest}, "result" : { "tools" : [ {"name":"ok"} ] , "cacheScope":"public" } }`;
    expect(filterJsonAnswer(allowed, gate)).toBe(
      `{"id":1,"x":${nest},"result":{"tools":[{"name":"ok"}],"cacheScope":"private"}}`,
    );
    // No tools array anywhere: the very same bytes.
    for (const text of [
      `{ "id":1, "x":${nest} }`,
      `[ 1, null, {"result":null}, {"result":5}, {"result":{"tools":{}}}, ${nest} ]`,
      `{"result":{"cacheScope":"public","x":${nest}}}`,
    ]) {
      const body = Buffer.from(text);
      expect(filterJsonBytes(body, gate)).toBe(body);
    }
    // A batch: every message with a tools array filtered, whatever comes before or after it.
    const batch = `[{"result":{"tools":[{"name":"no"}]}}, 5, {"result":{"x":${nest}}}, {"result":{"tools":[{"name":"ok"}]}}]`;
    expect(JSON.parse(filterJsonAnswer(batch, gate))).toEqual([
      { result: { tools: [] } },
      5,
      { result: { x: JSON.parse(nest) } },
      { result: { tools: [{ name: 'ok' }] } },
    ]);
    expect(JSON.parse(filterJsonAnswer(`[{"x":${nest}},{"result":{"tools":[{"name":"no"}]}}]`, gate))).toEqual([
      { x: JSON.parse(nest) },
      { result: { tools: [] } },
    ]);
  });

  it('answers the text given when nothing changes, whatever the UTF-16 in it', () => {
    // A lone surrogate has no UTF-8: the text given is answered, not its UTF-8 reading.
    const text = '{"result":{"tools":[{"name":"ok_\ud800"}]},"x":"\udc00"}';
    expect(filterJsonAnswer(text, gate)).toBe(text);
    expect(filterJsonAnswer('{"result":{"tools":[{"name":"no"}]},"x":"é"}', gate)).toBe(
      '{"result":{"tools":[]},"x":"é"}',
    );
  });

  it('refuses text that is not strict JSON as upstream_invalid_response', () => {
    for (const text of ['', 'not json', '{"id":1,"result":{"tools":[{"name":"no"}]}', '{"id":1}x', '{"a":"\u0001"}'])
      expect(() => filterJsonAnswer(text, gate)).toThrow(unreadable);
  });
});

describe('verdicts', () => {
  it('refuses a listed tool for any verdict but allowed', () => {
    for (const verdict of ['access_denied', 'tool_pending_approval'] as McpToolVerdict[]) {
      const g: McpToolGate = { listed: () => verdict, called: () => verdict };
      expect(filterJsonAnswer('{"result":{"tools":[{"name":"a"}]}}', g)).toBe('{"result":{"tools":[]}}');
    }
  });
});

describe('the Mcp-Method and Mcp-Name headers a 2026-07-28 request must carry (SEP-2243)', () => {
  const META = 'io.modelcontextprotocol/protocolVersion';
  const withMeta = (body: string, version: unknown) => {
    const message = JSON.parse(body) as { params?: Record<string, unknown> };
    message.params = { ...message.params, _meta: { [META]: version } };
    return JSON.stringify(message);
  };
  const inspect = (body: string, headers: { method?: string[]; name?: string[]; version?: string[] }) => {
    const out = inspectRequest(Buffer.from(body), gate, headers);
    return out.status === 400 ? (JSON.parse(out.answer as string) as { id: unknown; error: unknown }) : out;
  };
  const missingMethod = 'Mcp-Method is required from protocol revision 2026-07-28 on.';
  const missingName = (method: string) => `Mcp-Name is required on ${method} from protocol revision 2026-07-28 on.`;
  const listCall = '{"jsonrpc":"2.0","id":3,"method":"tools/list"}';

  it('answers -32020 when Mcp-Method is missing, by the header or the body revision', () => {
    const answer = { jsonrpc: '2.0', id: 7, error: { code: HEADER_MISMATCH_CODE, message: missingMethod } };
    expect(inspect(call('ok_a'), { version: ['2026-07-28'] })).toEqual(answer);
    expect(inspect(call('ok_a'), { version: ['2026-07-28'], name: ['ok_a'] })).toEqual(answer);
    expect(inspect(call('ok_a'), { version: ['2025-11-25', '2026-07-28'] })).toEqual(answer);
    expect(inspect(withMeta(call('ok_a'), '2026-07-28'), {})).toEqual(answer);
    expect(inspect(withMeta(call('ok_a'), '2026-07-28'), { version: ['2025-11-25'] })).toEqual(answer);
    // A later revision keeps the rule; a batch of that revision has no one method to name.
    expect(inspect(listCall, { version: ['2027-01-01'] })).toMatchObject({ id: 3, error: { message: missingMethod } });
    expect(inspect(`[{"id":1,"method":"x"},${withMeta(listCall, '2026-07-28')}]`, {})).toMatchObject({
      id: null,
      error: { message: missingMethod },
    });
    expect(inspect(`[${withMeta(listCall, '2026-07-28')}]`, {})).toMatchObject({
      id: null,
      error: { message: missingMethod },
    });
  });

  it('answers -32020 when Mcp-Name is missing on a call that names its target', () => {
    const version = ['2026-07-28'];
    expect(inspect(call('ok_a'), { version, method: ['tools/call'] })).toEqual({
      jsonrpc: '2.0',
      id: 7,
      error: { code: HEADER_MISMATCH_CODE, message: missingName('tools/call') },
    });
    const prompt = '{"jsonrpc":"2.0","id":4,"method":"prompts/get","params":{"name":"p"}}';
    expect(inspect(prompt, { version, method: ['prompts/get'] })).toMatchObject({
      error: { message: missingName('prompts/get') },
    });
    const read = '{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"file:///a"}}';
    expect(inspect(read, { version, method: ['resources/read'] })).toMatchObject({
      error: { message: missingName('resources/read') },
    });
    // A body without a target name (the server's own error to give), or a method without one.
    expect(
      inspect('{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{}}', { version, method: ['tools/call'] }),
    ).toMatchObject({ status: 200 }); // the gate's own refusal of a call without a tool, not -32020
    expect(
      inspect('{"jsonrpc":"2.0","id":6,"method":"resources/read","params":{"name":"x"}}', {
        version,
        method: ['resources/read'],
      }),
    ).toEqual({});
    expect(inspect(listCall, { version, method: ['tools/list'] })).toEqual({});
    const subscribe = '{"jsonrpc":"2.0","id":6,"method":"resources/subscribe","params":{"uri":"file:///a"}}';
    expect(inspect(subscribe, { version, method: ['resources/subscribe'] })).toEqual({});
    expect(inspect(call('ok_a'), { version, method: ['tools/call'], name: ['ok_a'] })).toEqual({});
  });

  it('leaves requests of older revisions, or naming none, as they were', () => {
    for (const version of [
      undefined,
      ['2025-11-25'],
      ['2025-06-18'],
      ['2024-11-05'],
      ['v999.0.0'],
      ['2026-07-2'],
      ['2026-07-28x'],
      ['x2026-07-28'],
      [' 2026-07-28'],
    ])
      expect(inspect(call('ok_a'), { version })).toEqual({});
    expect(inspect(withMeta(call('ok_a'), '2025-11-25'), {})).toEqual({});
    expect(inspect(withMeta(call('ok_a'), 20260728), {})).toEqual({});
    expect(inspect(withMeta(call('ok_a'), ['2026-07-28']), {})).toEqual({});
    expect(inspect(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":"${META}"}}`, {})).toEqual({});
    expect(inspect(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":null,"x":"${META}"}}`, {})).toEqual(
      {},
    );
    expect(inspect(`[null,{"id":1,"method":"tools/list","params":{"x":"${META}"}}]`, {})).toEqual({});
  });
});

import { createRequire } from 'node:module';
import {
  decodeMcpName,
  filterJsonBytes,
  inspectRequest,
  isUtf8MediaType,
  parseMediaType,
  SseToolFilter,
  type McpToolGate,
} from '../src';

/** Allows the tools whose name starts with `ok`. */
const gate: McpToolGate = {
  namesOnly: true,
  listed: (tool) => (tool.name.startsWith('ok') ? 'allowed' : 'access_denied'),
  called: (name) => (name.startsWith('ok') ? 'allowed' : 'access_denied'),
};

const invalid = expect.objectContaining({ code: 'invalid_mcp_message', status: 400 });
const unreadable = expect.objectContaining({ code: 'upstream_invalid_response', status: 502 });
const call = (name: string) => `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"${name}"}}`;

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

describe('the Mcp-Method and Mcp-Name headers of a gated request', () => {
  const mismatch = (body: string, method?: string[], name?: string[]) => {
    const out = inspectRequest(Buffer.from(body), gate, { method, name });
    return out.status === 400 ? (JSON.parse(out.answer as string) as { id: unknown; error: { code: number } }) : out;
  };
  const b64 = (s: string) => `=?base64?${Buffer.from(s).toString('base64')}?=`;

  it('answers -32020 when they disagree with the body, in both directions', () => {
    expect(mismatch(call('no_x'), ['tools/call'], ['ok_a'])).toEqual({
      jsonrpc: '2.0',
      id: 7,
      error: { code: -32020, message: expect.any(String) },
    });
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

  it('lets agreeing headers, Base64-wrapped names and absent headers through', () => {
    expect(mismatch(call('ok_a'), ['tools/call'], ['ok_a'])).toEqual({});
    expect(mismatch(call('ok_é'), ['tools/call'], [b64('ok_é')])).toEqual({});
    expect(mismatch(call('ok_a'))).toEqual({});
    expect(mismatch(call('ok_a'), ['tools/call'])).toEqual({});
    const read = '{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///a"}}';
    expect(mismatch(read, ['resources/read'], ['file:///a'])).toEqual({});
    expect(decodeMcpName(b64('=?base64?x?='))).toBe('=?base64?x?=');
  });
});

describe('a gated JSON answer', () => {
  it('filters every result.tools, makes a present cacheScope private, and refuses what it cannot read', () => {
    const list = (id: string, scope = '') =>
      `{"jsonrpc":"2.0","id":${id},"result":{"tools":[{"name":"ok_a"},{"name":"no_x"}]${scope}}}`;
    const read = (text: string) => JSON.parse(filterJsonBytes(Buffer.from(text), gate).toString());
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
});

interface EventSourceMessage {
  event?: string;
  data: string;
}
/** The event parser of the MCP SDK client, from where the SDK finds it (it is the SDK's dependency). */
const { createParser } = createRequire(require.resolve('@modelcontextprotocol/sdk/client/streamableHttp.js'))(
  'eventsource-parser',
) as { createParser: (config: { onEvent: (e: EventSourceMessage) => void }) => { feed: (text: string) => void } };

/** The messages an MCP SDK client reads from `text`: its event parser, and its JSON.parse of each message event. */
function clientMessages(text: string): unknown[] {
  const out: unknown[] = [];
  const parser = createParser({
    onEvent: (event: EventSourceMessage) => {
      if (event.data && (!event.event || event.event === 'message')) out.push(JSON.parse(event.data));
    },
  });
  parser.feed(text);
  return out;
}

describe('a gated event stream', () => {
  const list = '{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"ok_a"},{"name":"no_x"}]}}';
  const filtered = { jsonrpc: '2.0', id: 1, result: { tools: [{ name: 'ok_a' }] } };
  const multiLine = list.replace('"result":', '\n"result":').replace('"tools":', '\r\n"tools":');
  const framings: [string, string][] = [
    ['data: with one space', `data: ${list}\n\n`],
    ['data: without a space', `data:${list}\n\n`],
    ['CRLF line ends', `data: ${list}\r\n\r\n`],
    ['lone CR line ends', `data: ${list}\r\r`],
    ['the JSON over several data: lines', `data: ${list.split(/(?=,")/).join('\ndata:')}\n\n`],
    [
      'comments, id:, event:, retry: in between',
      `: hi\nid: 3\ndata: ${list.split(/(?=,")/).join('\n:x\nevent: message\nretry: 10\nunknown: 1\ndata: ')}\n\n`,
    ],
    ['a byte-order mark at the start', `\ufeffdata: ${list}\n\n`],
    ['JSON with line breaks, each line a data: line', `data: ${multiLine.split(/\r\n|\n/).join('\ndata: ')}\n\n`],
    ['an event ended by CR then LF in another chunk', `data: ${list}\r\n\r`],
  ];

  it.each(framings)('filters a tools list framed with %s, whole or byte by byte', (_name, stream) => {
    const text = `${stream}${stream.endsWith('\r') ? '\n' : ''}`;
    for (const split of [text.length, 1, 7]) {
      const filter = new SseToolFilter(gate);
      const bytes = Buffer.from(text);
      let out = '';
      for (let at = 0; at < bytes.length; at += split) out += filter.push(bytes.subarray(at, at + split));
      out += filter.end();
      expect(clientMessages(out)).toEqual([filtered]);
      expect(out).not.toContain('no_x');
    }
  });

  it('reads an event the client ignores (another type, no data) without requiring JSON, and drops an unfinished one', () => {
    const filter = new SseToolFilter(gate);
    const out =
      filter.push(Buffer.from(`event: endpoint\ndata: /messages?s=1\n\nid: 5\ndata:\n\nid: 6\n\ndata: ${list}`)) +
      filter.end();
    expect(out).toBe('event: endpoint\ndata: /messages?s=1\n\nid: 5\ndata: \n\n');
  });

  it('ends the stream on a message event whose data is not JSON, or on bytes that are not UTF-8', () => {
    for (const bad of [
      `data: {"id":1,"result":{"tools":[{"name":"no_x"}]}\n\n`,
      `data: \ufeff${list}\n\n`,
      'data: x\n\n',
    ])
      expect(() => new SseToolFilter(gate).push(Buffer.from(bad))).toThrow(unreadable);
    // UTF-16 reads as UTF-8 lines of unknown fields: no event, for the gateway as for the client.
    const utf16 = new SseToolFilter(gate);
    expect(clientMessages(utf16.push(Buffer.from(`data: ${list}\n\n`, 'utf16le')) + utf16.end())).toEqual([]);
    const cut = new SseToolFilter(gate);
    cut.push(Buffer.from([0x3a, 0xc3]));
    expect(() => cut.end()).toThrow(unreadable);
  });
});

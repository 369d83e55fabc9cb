import { createRequire } from 'node:module';
import { MAX_INSPECTED_EVENT_CHARS, SseToolFilter } from '../../src/gate/sse-tool-filter';
import type { McpToolGate } from '../../src/gate/tool-gate';

/** Allows the tools whose name starts with `ok`. */
const gate: McpToolGate = {
  namesOnly: true,
  listed: (tool) => (tool.name.startsWith('ok') ? 'allowed' : 'access_denied'),
  called: (name) => (name.startsWith('ok') ? 'allowed' : 'access_denied'),
};

const unreadable = expect.objectContaining({ code: 'upstream_invalid_response', status: 502 });
const streamError = (reason: string) => `The MCP server's event stream cannot be read: ${reason}.`;

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

/** What the filter sends for `chunks` (strings as UTF-8), the end of the stream included. */
function run(...chunks: (string | Buffer)[]): string {
  const filter = new SseToolFilter(gate);
  let out = '';
  for (const chunk of chunks) out += filter.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return out + filter.end();
}

/** The message of the error `run` throws. */
const thrown = (action: () => unknown): string => {
  try {
    action();
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('nothing thrown');
};

describe('a gated event stream', () => {
  const list = '{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"ok_é"},{"name":"no_x"}]}}';
  const filtered = { jsonrpc: '2.0', id: 1, result: { tools: [{ name: 'ok_é' }] } };
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
    ['an empty event: type', `event:\ndata: ${list}\n\n`],
    ['mixed line ends', `: a\r\nid: 1\revent: message\ndata: ${list}\r\n\n`],
    ['a line ended by LF, then one by CR', `id: 1\nevent: message\rdata: ${list}\n\r`],
  ];

  it.each(framings)('filters a tools list framed with %s, whole or byte by byte', (_name, stream) => {
    const text = `${stream}${stream.endsWith('\r') ? '\n' : ''}`;
    for (const split of [text.length, 1, 2, 7]) {
      const filter = new SseToolFilter(gate);
      const bytes = Buffer.from(text);
      let out = '';
      for (let at = 0; at < bytes.length; at += split) out += filter.push(bytes.subarray(at, at + split));
      out += filter.end();
      expect(clientMessages(out)).toEqual([filtered]);
      // The client decodes the bytes first (a byte-order mark skipped), then parses.
      expect(clientMessages(new TextDecoder().decode(bytes))).toEqual([JSON.parse(list)]);
      expect(out).not.toContain('no_x');
    }
  });

  it('writes every event again in one plain form', () => {
    expect(run(`: hi\nretry: 10\nid: 3\nevent: message\ndata:${list}\n\n`)).toBe(
      `: hi\nretry: 10\nid: 3\nevent: message\ndata: ${JSON.stringify(filtered)}\n\n`,
    );
    expect(run(`data: ${multiLine.replace(/\r\n|\n/g, '\ndata: ')}\n\n`)).toBe(
      `data: ${multiLine
        .replace('{"name":"no_x"}', '')
        .replace(',]', ']')
        .replace(/\r\n|\n/g, '\ndata: ')}\n\n`,
    );
    expect(run('event: other\ndata\ndata:x\ndata:  two\n\n')).toBe('event: other\ndata: \ndata: x\ndata:  two\n\n');
    expect(run('event: other\rdata: a:b\r\r')).toBe('event: other\ndata: a:b\n\n');
    expect(run(':\n:  x\r\n')).toBe(':\n:  x\n');
  });

  it('sends retry: lines of digits alone', () => {
    expect(run('retry: 10\nretry:5\nretry: x\nretry: 1x\nretry: x1\nretry:\nretry: 1 \n')).toBe(
      'retry: 10\nretry: 5\n',
    );
  });

  it('keeps the last id without NUL, forgets it with the event, and ignores unknown fields', () => {
    expect(run('id: 1\nid: a\0b\nfoo: x\ndata\n\n')).toBe('id: 1\ndata: \n\n');
    expect(run('id: 1\ndata: 5\n\ndata: 6\n\n')).toBe('id: 1\ndata: 5\n\ndata: 6\n\n');
    expect(run('id:\ndata: 5\n\n')).toBe('id: \ndata: 5\n\n');
    expect(run('id\ndata: 5\n\n')).toBe('id: \ndata: 5\n\n');
    expect(run('event: a\nevent: b\ndata: x\n\ndata: 6\n\n')).toBe('event: b\ndata: x\n\ndata: 6\n\n');
    expect(run('event: e\ndata: 1\ndata: 2\n\ndata: 3\n\n')).toBe('event: e\ndata: 1\ndata: 2\n\ndata: 3\n\n');
    expect(run('Data: x\nDATA: y\nid : 1\n data: z\ndata: 4\n\n')).toBe('data: 4\n\n');
  });

  it('reads an event the client ignores (another type, no data) without requiring JSON, and drops an unfinished one', () => {
    const filter = new SseToolFilter(gate);
    const out =
      filter.push(Buffer.from(`event: endpoint\ndata: /messages?s=1\n\nid: 5\ndata:\n\nid: 6\n\ndata: ${list}`)) +
      filter.end();
    expect(out).toBe('event: endpoint\ndata: /messages?s=1\n\nid: 5\ndata: \n\n');
    expect(run('event: message\ndata:\n\n')).toBe('event: message\ndata: \n\n');
    expect(run('id: 1\nevent: x\n\ndata: 2\n\n')).toBe('data: 2\n\n');
  });

  it('reads a byte-order mark only at the very start of the stream, as the client reads the chunks it gets', () => {
    const bom = '\u00ef\u00bb\u00bf';
    expect(run(`${bom}data: 1\n\n`)).toBe('data: 1\n\n');
    expect(run(`\ufeff${bom}data: 1\n\n`)).toBe('data: 1\n\n');
    // A first chunk holding part of it: read as the client reads such a chunk, a field of another name.
    expect(run('\u00ef', `\u00bb\u00bfdata: 1\n\n`)).toBe('');
    expect(run('', `${bom}data: 1\n\n`)).toBe('data: 1\n\n');
    expect(run('\n', `${bom}data: 1\n\n`)).toBe('');
    expect(run(`${bom}${bom}data: 1\n\n`)).toBe('');
  });

  it('reads CR then LF as one line end across chunks, empty chunks between them included', () => {
    expect(run('event: e\ndata: 1\r', '', '\ndata: 2\n\n')).toBe('event: e\ndata: 1\ndata: 2\n\n');
    expect(run('event: e\r\ndata: 1\r\ndata: 2\r\n\r\n')).toBe('event: e\ndata: 1\ndata: 2\n\n');
    expect(run(':\r: x\ndata: 1\r: y\r\n\n')).toBe(':\n: x\n: y\ndata: 1\n\n');
    expect(run('\n\r\n:\n')).toBe(':\n');
    expect(run('event: e\ndata: 1\r', '\r\ndata: 2\n\n')).toBe('event: e\ndata: 1\n\ndata: 2\n\n');
    expect(run('event: e\ndata: 1\r', 'data: 2\n\n')).toBe('event: e\ndata: 1\ndata: 2\n\n');
    expect(run('data: 1\r\n\r', '\n')).toBe('data: 1\n\n');
    expect(run('event: e\ndata: 1\n', '\n')).toBe('event: e\ndata: 1\n\n');
  });

  it('joins a line that arrives in pieces', () => {
    expect(run('da', 'ta', ': 1', '2\n', '\n')).toBe('data: 12\n\n');
    expect(run('event: e\nda', 'ta: a\r', '\ndata: b', '\r\n\r\n')).toBe('event: e\ndata: a\ndata: b\n\n');
  });

  it('ends the stream on a message event whose data is not JSON, or on bytes that are not UTF-8', () => {
    for (const bad of [
      `data: {"id":1,"result":{"tools":[{"name":"no_x"}]}\n\n`,
      `data: \ufeff${list}\n\n`,
      'data: x\n\n',
      'event: message\ndata: x\n\n',
    ]) {
      expect(() => new SseToolFilter(gate).push(Buffer.from(bad))).toThrow(unreadable);
      expect(thrown(() => new SseToolFilter(gate).push(Buffer.from(bad)))).toBe(
        streamError('a message event holds data that is not JSON'),
      );
    }
    // UTF-16 reads as UTF-8 lines of unknown fields: no event, for the gateway as for the client.
    const utf16 = new SseToolFilter(gate);
    const ascii = '{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"ok_a"},{"name":"no_x"}]}}';
    expect(clientMessages(utf16.push(Buffer.from(`data: ${ascii}\n\n`, 'utf16le')) + utf16.end())).toEqual([]);
    expect(thrown(() => new SseToolFilter(gate).push(Buffer.from([0x64, 0xff, 0x0a])))).toBe(
      streamError('it is not valid UTF-8'),
    );
    const cut = new SseToolFilter(gate);
    cut.push(Buffer.from([0x3a, 0xc3]));
    expect(() => cut.end()).toThrow(unreadable);
    const cutAgain = new SseToolFilter(gate);
    cutAgain.push(Buffer.from([0x3a, 0xc3]));
    expect(thrown(() => cutAgain.end())).toBe(streamError('it ends inside a UTF-8 character'));
  });

  it('filters every answer holding a tool list, whatever its id', () => {
    const text =
      'event: message\nid: 9\ndata: {"jsonrpc":"2.0","id":41,"result":{"tools":[{"name":"no_x"},{"name":"ok_y"}]}}\n\n' +
      'data: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n\n';
    expect(run(text)).toBe(
      'id: 9\nevent: message\ndata: {"jsonrpc":"2.0","id":41,"result":{"tools":[{"name":"ok_y"}]}}\n\n' +
        'data: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n\n',
    );
  });
});

describe('the size of an inspected event', () => {
  const listEvent = (size: number) => {
    const head = 'data: {"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"ok"},{"name":"no","description":"';
    const tail = '"}]}}';
    return head + 'x'.repeat(size - head.length - tail.length) + tail;
  };
  const larger = streamError('an event is larger than the gateway inspects');
  const half = Math.floor(MAX_INSPECTED_EVENT_CHARS / 2);
  /** A line `field: xxx…` of `chars` characters. */
  const line = (field: string, chars: number) => `${field}: ${'x'.repeat(chars - field.length - 2)}`;

  it(`filters an event of ${MAX_INSPECTED_EVENT_CHARS} characters, and refuses one character more`, () => {
    const filter = new SseToolFilter(gate);
    const out = filter.push(Buffer.from(`${listEvent(MAX_INSPECTED_EVENT_CHARS)}\n\n`));
    expect(out).toBe('data: {"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"ok"}]}}\n\n');
    const over = new SseToolFilter(gate);
    expect(thrown(() => over.push(Buffer.from(`${listEvent(MAX_INSPECTED_EVENT_CHARS + 1)}\n\n`)))).toBe(larger);
    // The same, arriving in pieces: the limit holds before the event is complete.
    const pieces = new SseToolFilter(gate);
    const big = listEvent(MAX_INSPECTED_EVENT_CHARS + 1);
    expect(() => {
      for (let at = 0; at < big.length; at += 1 << 20) pieces.push(Buffer.from(big.slice(at, at + (1 << 20))));
    }).toThrow(/larger than the gateway inspects/);
  });

  it('counts every line of the event, the one arriving included, and nothing of the events before', () => {
    const head = `event: e\n${line('data', half)}\n`;
    // The lines of one event: refused when they pass the limit together.
    expect(() => run(`${head}${line('data', MAX_INSPECTED_EVENT_CHARS - half - 'event: e'.length)}\n\n`)).not.toThrow();
    expect(thrown(() => run(`${head}${line('data', MAX_INSPECTED_EVENT_CHARS - half)}\n\n`))).toBe(larger);
    expect(thrown(() => run(head, line('data', MAX_INSPECTED_EVENT_CHARS - half)))).toBe(larger);
    expect(thrown(() => run(head, 'data: x', line('', MAX_INSPECTED_EVENT_CHARS - half)))).toBe(larger);
    // A line cut by the end of a chunk counts what it holds so far, not what came before it in the chunk.
    const rest = MAX_INSPECTED_EVENT_CHARS - half - 'event: e'.length - 10;
    expect(() => run(`${head}${line('data', rest)}`, '\n\n')).not.toThrow();
    // Events one after the other, each under the limit, whole or in pieces.
    const event = `event: e\n${line('data', half + 1000)}\n\n`;
    expect(() => run(event, event, event)).not.toThrow();
    const cut = (text: string) => [text.slice(0, 1000), text.slice(1000)];
    expect(() => run(...cut(event), ...cut(event), ...cut(event))).not.toThrow();
    // Comments are sent at once, not kept.
    const comment = `${line('', half + 1000)}\n`;
    expect(() => run(comment, comment, comment)).not.toThrow();
  });
});

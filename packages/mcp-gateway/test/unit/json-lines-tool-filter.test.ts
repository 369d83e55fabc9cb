import { JsonLinesToolFilter } from '../../src/gate/json-lines-tool-filter';
import type { McpToolGate } from '../../src/gate/tool-gate';

const gate: McpToolGate = {
  namesOnly: true,
  listed: (tool) => (tool.name.startsWith('ok') ? 'allowed' : 'access_denied'),
  called: () => 'allowed',
};
const unreadable = expect.objectContaining({ code: 'upstream_invalid_response', status: 502 });
const text = (buffers: Buffer[]) => buffers.map((b) => b.toString()).join('');
const tools = '{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"ok_a"},{"name":"no_b"}]}}';

describe('JsonLinesToolFilter', () => {
  it('writes each message as it completes, filtered, one a line', () => {
    const filter = new JsonLinesToolFilter(gate, 1024);
    expect(text(filter.push(Buffer.from('{"a":1}\n{"b"')))).toBe('{"a":1}\n');
    expect(text(filter.push(Buffer.from(':2}\r\n\t ')))).toBe('{"b":2}\n');
    expect(text(filter.push(Buffer.from(`${tools}\n[{"c":"}{]\\"["}]`)))).toBe(
      '{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"ok_a"}]}}\n[{"c":"}{]\\"["}]\n',
    );
    expect(text(filter.push(Buffer.from('{"d":{"e":[1,{}]},"f":"\\\\"}')))).toBe('{"d":{"e":[1,{}]},"f":"\\\\"}\n');
    expect(() => filter.end()).not.toThrow();
    // Whitespace alone holds nothing; an empty key closes its string.
    expect(text(filter.push(Buffer.from('\n \n')))).toBe('');
    expect(text(filter.push(Buffer.from('{"":1}')))).toBe('{"":1}\n');
    expect(text(new JsonLinesToolFilter(gate, 1024).push(Buffer.from('{"":1}')))).toBe('{"":1}\n');
  });

  it('reads a message split in any place, byte by byte', () => {
    const filter = new JsonLinesToolFilter(gate, 1024);
    let out = '';
    for (const byte of Buffer.from(`${tools}\n{"x":"a\\"}"}`)) out += text(filter.push(Buffer.from([byte])));
    expect(out).toBe('{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"ok_a"}]}}\n{"x":"a\\"}"}\n');
  });

  it('names why it cannot read', () => {
    const message = (run: () => unknown) => {
      try {
        run();
      } catch (error) {
        return (error as Error).message;
      }
      return 'nothing thrown';
    };
    const why = (reason: string) => `The MCP server's streamed JSON answer cannot be read: ${reason}.`;
    expect(message(() => new JsonLinesToolFilter(gate, 1024).push(Buffer.from('x')))).toBe(
      why('something other than a JSON object or array stands between its messages'),
    );
    const open = new JsonLinesToolFilter(gate, 1024);
    open.push(Buffer.from('['));
    expect(message(() => open.end())).toBe(why('it ends inside a message'));
    expect(message(() => new JsonLinesToolFilter(gate, 2).push(Buffer.from('{"a"')))).toBe(
      why('a message is larger than the gateway inspects'),
    );
  });

  it('refuses what it cannot read', () => {
    expect(() => new JsonLinesToolFilter(gate, 1024).push(Buffer.from('5\n'))).toThrow(unreadable);
    expect(() => new JsonLinesToolFilter(gate, 1024).push(Buffer.from('{"a":1}x'))).toThrow(unreadable);
    expect(() => new JsonLinesToolFilter(gate, 1024).push(Buffer.from('{"a":1,}'))).toThrow(unreadable);
    expect(() => new JsonLinesToolFilter(gate, 1024).push(Buffer.from('\ufeff{"a":1}'))).toThrow(unreadable);
    const open = new JsonLinesToolFilter(gate, 1024);
    open.push(Buffer.from('{"a":'));
    expect(() => open.end()).toThrow(unreadable);
    const big = new JsonLinesToolFilter(gate, 10);
    expect(text(big.push(Buffer.from('{"a":"12"}')))).toBe('{"a":"12"}\n');
    expect(() => big.push(Buffer.from('{"a":"123"}'))).toThrow(unreadable);
    const growing = new JsonLinesToolFilter(gate, 10);
    growing.push(Buffer.from('{"a":"'));
    expect(() => growing.push(Buffer.from('12345'))).toThrow(unreadable);
  });
});

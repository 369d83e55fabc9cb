import { InvalidMcpMessageError } from '@gw/identity-forwarding/identity';
import { MAX_BATCH_MESSAGES, countToolCalls, inspectRequest, readMcpRequest, type McpToolGate } from '../../src';

const call = (id: number, name = 'ok') => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name } });
const bytes = (value: unknown) => Buffer.from(JSON.stringify(value));
const allowAll: McpToolGate = { listed: () => 'allowed', called: () => 'allowed' };

/** The one reading of an MCP request body that decides the gate, the header mirror and the limits' count. */
describe('readMcpRequest and countToolCalls', () => {
  it('count every tools/call of a batch, and nothing else', () => {
    const read = readMcpRequest(
      bytes([
        call(1),
        { jsonrpc: '2.0', id: 2, method: 'tools/list' },
        call(3),
        { jsonrpc: '2.0', method: 'notifications/initialized' },
        null,
        7,
        call(4),
      ]),
    );
    expect(read.batch).toBe(true);
    expect(countToolCalls(read)).toBe(3);
    expect(countToolCalls(readMcpRequest(bytes(call(1))))).toBe(1);
    expect(readMcpRequest(bytes(call(1))).batch).toBe(false);
    expect(countToolCalls(readMcpRequest(bytes({ jsonrpc: '2.0', id: 1, method: 'ping' })))).toBe(0);
    expect(countToolCalls(readMcpRequest(bytes([])))).toBe(0);
  });

  it('read a batch of the SDK servers’ largest size, and refuse one message more', () => {
    expect(MAX_BATCH_MESSAGES).toBe(100);
    const full = Array.from({ length: MAX_BATCH_MESSAGES }, (_, i) => call(i));
    expect(countToolCalls(readMcpRequest(bytes(full)))).toBe(MAX_BATCH_MESSAGES);
    expect(() => readMcpRequest(bytes([...full, call(100)]))).toThrow(InvalidMcpMessageError);
    expect(() => readMcpRequest(bytes([...full, call(100)]))).toThrow(/more than 100 messages/);
    // A single message is not a batch, whatever its size.
    expect(countToolCalls(readMcpRequest(bytes(call(1))))).toBe(1);
  });

  it('refuse what it cannot read strictly (a byte-order mark, invalid UTF-8, invalid JSON, a repeated key)', () => {
    const bom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), bytes(call(1))]);
    expect(() => readMcpRequest(bom)).toThrow(InvalidMcpMessageError);
    expect(() => readMcpRequest(Buffer.from([0x7b, 0xff, 0x7d]))).toThrow(InvalidMcpMessageError);
    expect(() => readMcpRequest(Buffer.from('{"method":"tools/call"'))).toThrow(InvalidMcpMessageError);
    expect(() => readMcpRequest(Buffer.from('{"method":"ping","method":"tools/call"}'))).toThrow(
      InvalidMcpMessageError,
    );
  });

  it('give the gate the same reading as the bytes would', () => {
    const body = bytes([call(1), call(2, 'denied')]);
    const gate: McpToolGate = {
      listed: () => 'allowed',
      called: (name) => (name === 'ok' ? 'allowed' : 'access_denied'),
    };
    expect(inspectRequest(readMcpRequest(body), gate)).toEqual(inspectRequest(body, gate));
    expect(inspectRequest(readMcpRequest(bytes(call(1))), allowAll)).toEqual({});
  });
});

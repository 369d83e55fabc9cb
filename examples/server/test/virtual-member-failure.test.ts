import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { endpointFailure } from '../src/mcp/virtual-fast-call';
import { memberFailure } from '../src/mcp/virtual-servers';

// What a member's failure becomes for the caller of a virtual MCP server (CONTRACT section 16): the
// same on the SDK path (memberFailure) as for a call handed in process (endpointFailure).

const fields = (error: { code: number; message: string; data?: unknown }) => ({
  code: error.code,
  message: error.message,
  data: error.data,
});

describe('a member’s failure, as the caller gets it', () => {
  it('names the gateway error of a member endpoint that refused (4xx), with its status', () => {
    const refused = new StreamableHTTPError(429, 'Error POSTing to endpoint: {"error":{"code":"rate_limited"}}');
    expect(fields(memberFailure('crm', refused))).toEqual({
      code: -32603,
      message: 'The MCP server "crm" refused the call (rate_limited).',
      data: { code: 'rate_limited', server: 'crm', status: 429 },
    });
    expect(fields(memberFailure('crm', refused))).toEqual(endpointFailure('crm', 429, 'rate_limited'));
    expect(memberFailure('crm', new StreamableHTTPError(403, 'Error POSTing to endpoint: forbidden')).data).toEqual({
      code: 'member_refused',
      server: 'crm',
      status: 403,
    });
  });

  it('is upstream_unavailable for a 5xx, a timeout, a closed connection or anything else', () => {
    const unavailable = {
      code: -32603,
      message: 'The MCP server "crm" is unavailable.',
      data: { code: 'upstream_unavailable', server: 'crm' },
    };
    for (const error of [
      new StreamableHTTPError(502, 'Error POSTing to endpoint: {"error":{"code":"upstream_error"}}'),
      new McpError(ErrorCode.RequestTimeout, 'Request timed out'),
      new McpError(ErrorCode.ConnectionClosed, 'Connection closed'),
      new TypeError('fetch failed'),
    ])
      expect(fields(memberFailure('crm', error))).toEqual(unavailable);
  });

  it('passes the member’s own JSON-RPC error on as it is', () => {
    const own = memberFailure('crm', new McpError(ErrorCode.InvalidParams, 'Unknown tool: nope', { tool: 'nope' }));
    expect(fields(own)).toEqual({ code: -32602, message: 'Unknown tool: nope', data: { tool: 'nope' } });
  });
});

import type { IncomingMessage } from 'node:http';
import { setDefinedAttributes, type Span } from '@gw/tracing';
import type { GatewayLocals } from '@gw/identity-forwarding/identity';
import { parseMediaType, type JsonRpcMessage } from '../gate/tool-gate';
import { MAX_METHOD_SCAN_BYTES } from './request-body';

const RPC_NAME = /^[A-Za-z0-9_./:-]{1,128}$/;
/** The MCP 2026-07-28 request whose answer is a stream that lasts while the server keeps it open. */
export const LISTEN_METHOD = 'subscriptions/listen';

/**
 * Reads the JSON-RPC `method` (and the tool of a `tools/call`) of an MCP request body as it streams
 * to the server, from the first 64 KiB, into the call's record and span. Only those names are
 * kept: never arguments or content.
 */
export function tapRpcMethod(req: IncomingMessage, record: GatewayLocals, span: Span, read?: Buffer): void {
  const type = String(req.headers['content-type'] ?? '');
  if (req.method !== 'POST') return;
  // The media type in any case and with parameters, as the server reads it.
  if (!type.startsWith('application/json') && parseMediaType(type)?.essence !== 'application/json') return;
  // Named already from the strict reading of a gate or a limit.
  if (record.mcpMethod !== undefined) return;
  if (read !== undefined) {
    // The body was read whole before it is sent: its bytes are the ones to name.
    if (read.length <= MAX_METHOD_SCAN_BYTES) recordRpcMethod(read, record, span);
    return;
  }
  let chunks: Buffer[] | undefined = [];
  let size = 0;
  req.on('data', (chunk: Buffer) => {
    if (chunks === undefined) return;
    size += chunk.length;
    if (size > MAX_METHOD_SCAN_BYTES) chunks = undefined;
    else chunks.push(chunk);
  });
  req.once('end', () => {
    if (chunks === undefined) return;
    const body = Buffer.concat(chunks);
    chunks = undefined;
    recordRpcMethod(body, record, span);
  });
}

/** Names the call's record and span after the JSON-RPC method (and tool) of `body`, when it has one. */
function recordRpcMethod(body: Buffer, record: GatewayLocals, span: Span): void {
  let message: unknown;
  try {
    message = JSON.parse(body.toString('utf8'));
  } catch {
    return;
  }
  // A batch is named after its first message.
  nameCall((Array.isArray(message) ? message[0] : message) as JsonRpcMessage | undefined, record, span);
}

/** Names the call's record and span after `first`, the (first) message of its body, when it has a method. */
export function nameCall(first: JsonRpcMessage | undefined, record: GatewayLocals, span: Span): void {
  const method = first?.method;
  if (typeof method !== 'string' || !RPC_NAME.test(method)) return;
  record.mcpMethod = method;
  const tool = method === 'tools/call' ? first?.params?.name : undefined;
  if (typeof tool === 'string' && RPC_NAME.test(tool)) record.mcpTool = tool;
  setDefinedAttributes(span, { 'mcp.method.name': method, 'gen_ai.tool.name': record.mcpTool });
  span.updateName(record.mcpTool ? `${method} ${record.mcpTool}` : method);
}

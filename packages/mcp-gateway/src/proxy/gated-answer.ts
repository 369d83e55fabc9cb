import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import { UpstreamInvalidResponseError } from '@gw/identity-forwarding/identity';
import { JsonLinesToolFilter } from '../gate/json-lines-tool-filter';
import { SseToolFilter } from '../gate/sse-tool-filter';
import { filterJsonBytes, isUtf8MediaType, parseMediaType, type McpToolGate } from '../gate/tool-gate';
import { MAX_WHOLE_HOLD_MS } from './answer-hold';
import { discard, type ProxyState, type UpstreamAnswer } from './proxy-state';
import { endToEndResponseHeaders } from './response-headers';

/** Refuses the answer being read: 502 when nothing was sent yet, else the client connection ends. */
function refuseAnswer(body: Readable, response: ServerResponse, state: ProxyState, message: string): void {
  discard(body);
  if (response.headersSent || response.destroyed) response.destroy();
  else state.next(new UpstreamInvalidResponseError(message));
}

/**
 * Writes an MCP server's answer through the tool gate, failing closed: a JSON answer is read
 * whole (at most `maxAnswerBytes`) and written with only allowed tools, unless it answers a
 * `subscriptions/listen` or has no length and has not ended {@link MAX_WHOLE_HOLD_MS} after its
 * headers (newline-delimited JSON that lasts): it is then
 * read message by message ({@link JsonLinesToolFilter}), each written as it completes, and one it
 * cannot read ends it; an event stream is read
 * event by event and written again as it arrives (an event it cannot read ends it); an answer
 * of any other content type passes only when it is empty. A compressed answer with a body is
 * refused (502).
 */
export function gateAnswer(answer: UpstreamAnswer, response: ServerResponse, state: ProxyState, listen: boolean): void {
  const gate = state.gate as McpToolGate;
  const proxyRes = answer.body;
  const type = parseMediaType(answer.headers['content-type']);
  const encoding = String(answer.headers['content-encoding'] ?? 'identity').toLowerCase();
  const headers = endToEndResponseHeaders(answer.headers);
  const status = answer.statusCode;
  const identity = encoding === 'identity';
  if (identity && isUtf8MediaType(type, 'text/event-stream')) {
    streamEvents(proxyRes, response, status, headers, gate);
    return;
  }
  const isJson = identity && isUtf8MediaType(type, 'application/json');
  const chunks: Buffer[] = [];
  let size = 0;
  // A JSON listen answer, or one without a length that has not ended in MAX_WHOLE_HOLD_MS
  // (newline-delimited JSON that lasts), is read and written message by message.
  let lines: JsonLinesToolFilter | undefined;
  const byMessage = () => {
    if (response.headersSent || response.destroyed || proxyRes.destroyed) return;
    lines = new JsonLinesToolFilter(gate, state.maxAnswerBytes as number);
    delete headers['content-length'];
    response.writeHead(status, headers);
    response.flushHeaders();
    for (const chunk of chunks.splice(0)) writeMessages(chunk);
  };
  const unended =
    isJson && !listen && answer.headers['content-length'] === undefined
      ? setTimeout(byMessage, MAX_WHOLE_HOLD_MS)
      : undefined;
  const writeMessages = (chunk: Buffer) => {
    let messages: Buffer[];
    try {
      messages = (lines as JsonLinesToolFilter).push(chunk);
    } catch {
      discard(proxyRes);
      response.destroy();
      return;
    }
    for (const message of messages) response.write(message);
  };
  if (isJson && listen) byMessage();
  proxyRes.once('close', () => clearTimeout(unended));
  proxyRes.on('data', (chunk: Buffer) => {
    if (chunk.length === 0 || response.destroyed) return;
    if (lines !== undefined) {
      writeMessages(chunk);
      return;
    }
    if (!isJson) {
      refuseAnswer(
        proxyRes,
        response,
        state,
        identity
          ? 'The MCP server answered with a content type other than application/json or text/event-stream (in UTF-8); the gateway cannot read it.'
          : 'The MCP server answered compressed; the gateway cannot read it.',
      );
      return;
    }
    size += chunk.length;
    if (size > (state.maxAnswerBytes as number)) {
      refuseAnswer(proxyRes, response, state, 'The MCP server answered with more than the gateway reads.');
      return;
    }
    chunks.push(chunk);
  });
  proxyRes.once('end', () => {
    clearTimeout(unended);
    if (lines !== undefined) {
      try {
        lines.end();
        response.end();
      } catch {
        response.destroy();
      }
      return;
    }
    if (response.headersSent || response.destroyed) return;
    let body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
    if (body.length > 0) {
      try {
        body = filterJsonBytes(body, gate);
      } catch (error) {
        state.next(error);
        return;
      }
    }
    delete headers['content-length'];
    if (body.length > 0 || answer.headers['content-length'] !== undefined) headers['content-length'] = body.length;
    response.writeHead(status, headers);
    response.end(body);
  });
}

/** An event stream, read and written again event by event through the gate; an event it cannot read ends it. */
function streamEvents(
  proxyRes: Readable,
  response: ServerResponse,
  status: number,
  headers: OutgoingHttpHeaders,
  gate: McpToolGate,
): void {
  delete headers['content-length'];
  response.writeHead(status, headers);
  // An event stream may stay quiet for long: its headers leave now, not with its first event.
  response.flushHeaders();
  const filter = new SseToolFilter(gate);
  const fail = () => {
    discard(proxyRes);
    response.destroy();
  };
  proxyRes.on('data', (chunk: Buffer) => {
    let text: string;
    try {
      text = filter.push(chunk);
    } catch {
      fail();
      return;
    }
    if (text !== '') response.write(text);
  });
  proxyRes.once('end', () => {
    try {
      response.end(filter.end());
    } catch {
      fail();
    }
  });
  response.once('close', () => {
    if (!upstreamComplete(proxyRes)) discard(proxyRes);
  });
}

/** Whether an upstream body was received whole (node:http's `complete`; undici's body once it ended). */
function upstreamComplete(body: Readable): boolean {
  const complete = (body as Partial<IncomingMessage>).complete;
  return complete ?? body.readableEnded;
}

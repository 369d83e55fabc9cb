import type { ServerResponse } from 'node:http';
import { MAX_WHOLE_ANSWER_BYTES, holdWhole } from '@gw/upstream';
import { StreamNeedsConnectionError } from '@gw/identity-forwarding/identity';
import { holdBriefly } from './answer-hold';
import { LISTEN_METHOD } from './call-naming';
import { gateAnswer } from './gated-answer';
import { discard, discarded, locals, type ProxyState, type UpstreamAnswer } from './proxy-state';
import { endToEndResponseHeaders } from './response-headers';

/**
 * Writes an MCP server's answer to the client: through the tool gate when one applies, else as it
 * streams, with end-to-end headers only. Silence between two body chunks longer than the idle
 * timeout ends both connections, except on a `subscriptions/listen` stream (MCP 2026-07-28),
 * which lasts while the server keeps it open: it ends when either side closes, and TCP keep-alive
 * on the upstream connection finds a server that went away. A listen answer is never held to be
 * sent whole, whatever its content type (some servers answer it with newline-delimited JSON).
 */
export function writeAnswer(
  answer: UpstreamAnswer,
  response: ServerResponse,
  state: ProxyState,
  idleTimeoutMs: number,
): void {
  const record = locals(response);
  const body = answer.body;
  const rejected = state.credential?.rejected;
  if (answer.statusCode === 401 && rejected !== undefined) {
    // A GET or DELETE the server refused its credential for: renewed for the next call (a refusal
    // of the renewal ends the connection, and the next POST says how to connect again).
    record.upstreamStatus = 401;
    discard(body);
    rejected(false).catch(() => undefined);
    state.next(new StreamNeedsConnectionError('The MCP server refused the credential; try again.'));
    return;
  }
  record.upstreamStatus = answer.statusCode;
  record.upstreamMs = performance.now() - state.started;
  // An error of the upstream body ends the client connection, unless the gateway ended it itself.
  body.on('error', () => {
    if (!discarded(body)) response.destroy();
  });
  if (response.headersSent || response.destroyed) {
    discard(body);
    return;
  }
  const idle =
    record.mcpMethod === LISTEN_METHOD
      ? undefined
      : setTimeout(function mcpStreamIdle() {
          record.streamIdleTimeout = true;
          discard(body);
          response.destroy();
        }, idleTimeoutMs);
  body.on('data', () => {
    record.firstByteAt ??= performance.now();
    idle?.refresh();
  });
  body.once('close', () => clearTimeout(idle));
  response.once('close', () => clearTimeout(idle));
  // A listen answer lasts whatever its content type (newline-delimited JSON too): never held.
  const listen = record.mcpMethod === LISTEN_METHOD;
  if (state.gate !== undefined) {
    gateAnswer(answer, response, state, listen);
    return;
  }
  const eventStream = String(answer.headers['content-type'] ?? '').startsWith('text/event-stream');
  if (!eventStream && !listen && Number(answer.headers['content-length'] ?? 0) <= MAX_WHOLE_ANSWER_BYTES) {
    sendWhole(answer, response);
    return;
  }
  response.writeHead(answer.statusCode, endToEndResponseHeaders(answer.headers));
  // An event stream may stay quiet for long: its headers leave now, not with its first event.
  if (eventStream || listen) response.flushHeaders();
  body.pipe(response);
}

/**
 * Sends an answer that is not an event stream (a JSON-RPC response, an error) whole once it has
 * arrived, with its length: headers and body leave in one write, where piping takes a write per
 * chunk and one more at the end (a JSON-RPC response is of no use to a client before its last
 * byte). One that grows past {@link MAX_WHOLE_ANSWER_BYTES} is written as it stands and piped
 * from there; so is one without a length that has not ended {@link MAX_WHOLE_HOLD_MS} after its
 * headers (newline-delimited JSON that lasts, see {@link holdBriefly}).
 */
function sendWhole(answer: UpstreamAnswer, response: ServerResponse): void {
  const whole = (bytes: Buffer) => {
    if (response.destroyed) return;
    const headers = endToEndResponseHeaders(answer.headers);
    // No length on an answer that may not have one (RFC 9110, 8.6).
    if (answer.statusCode !== 204 && answer.statusCode !== 304) headers['content-length'] = bytes.length;
    response.writeHead(answer.statusCode, headers).end(bytes);
  };
  const stream = (held: Buffer[]) => {
    if (response.destroyed) {
      discard(answer.body);
      return;
    }
    response.writeHead(answer.statusCode, endToEndResponseHeaders(answer.headers));
    if (held.length === 0) response.flushHeaders();
    for (const part of held) response.write(part);
    answer.body.pipe(response);
  };
  if (answer.headers['content-length'] !== undefined) holdWhole(answer.body, MAX_WHOLE_ANSWER_BYTES, whole, stream);
  else holdBriefly(answer.body, MAX_WHOLE_ANSWER_BYTES, whole, stream);
}

import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { RelayedRequests, type CallChannel, type RelayAnswerEvents } from '../src/mcp/virtual-relay';
import type { VirtualSession } from '../src/mcp/virtual-sessions';

// The relayed requests of an instance (virtual-relay.ts): bounded per session and in all, ended by
// the member's cancellation, and answers passed between instances only when sealed for that request.

const session = (id: string): VirtualSession => ({
  id,
  slug: 'desk',
  protocolVersion: '2025-06-18',
  clientCapabilities: { elicitation: {} },
  expiresAt: Date.now() + 60_000,
});

/** A call's channel that keeps what it is sent. */
function channel(): CallChannel & { sent: JSONRPCMessage[]; end: () => void } {
  const ending = new AbortController();
  const sent: JSONRPCMessage[] = [];
  return { sent, signal: ending.signal, end: () => ending.abort(), send: async (message) => void sent.push(message) };
}

/** A ServerResponse that keeps its status and body. */
function response(): ServerResponse & { status?: number; body?: string } {
  const res = {
    writeHead(status: number) {
      res.status = status;
      return res;
    },
    end(body?: string) {
      res.body = body;
      return res;
    },
  } as unknown as ServerResponse & { status?: number; body?: string };
  return res;
}

/** Relays one elicitation request of `of` through `relays` (the member client's handler does the same). */
function ask(relays: RelayedRequests, of: VirtualSession, on: CallChannel, member = new AbortController().signal) {
  return relays['relay'](of.id, { method: 'elicitation/create', params: { message: 'ok?' } }, on, member);
}

/** An in-memory NOTIFY: every subscriber hears every publish. */
function bus(): RelayAnswerEvents & { payloads: string[] } {
  const listeners = new Set<(id: string, sealed: string) => void>();
  const payloads: string[] = [];
  return {
    payloads,
    publish: async (id, sealed) => {
      payloads.push(sealed);
      for (const listener of listeners) listener(id, sealed);
    },
    subscribe: async (onAnswer) => {
      listeners.add(onAnswer);
      return async () => void listeners.delete(onAnswer);
    },
  };
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

/** How `promise` ended by the next turn of the event loop: its rejection's `data.code`, or `waiting`. */
const outcome = (promise: Promise<unknown>) =>
  Promise.race([
    promise.then(
      () => 'resolved',
      (error: { data?: { code?: string } }) => error.data?.code,
    ),
    flush().then(() => 'waiting'),
  ]);

describe('RelayedRequests', () => {
  it('refuses a request beyond the session’s bound and beyond the instance’s with relay_limit, and counts none left', async () => {
    const relays = new RelayedRequests({ key: randomBytes(32), perSession: 1, max: 2 });
    const [one, two, three] = [session('s1'), session('s2'), session('s3')];
    const call = channel();
    const first = ask(relays, one, call);
    expect(await outcome(ask(relays, one, call))).toBe('relay_limit');
    const second = ask(relays, two, call);
    expect(await outcome(ask(relays, three, call))).toBe('relay_limit');
    expect(relays.size).toBe(2);
    call.end();
    await expect(first).rejects.toMatchObject({ data: { code: 'relay_cancelled' } });
    await expect(second).rejects.toMatchObject({ data: { code: 'relay_cancelled' } });
    expect(relays.size).toBe(0);
  });

  it('tells the caller when the member cancels its request, and ends the wait', async () => {
    const relays = new RelayedRequests({ key: randomBytes(32) });
    const call = channel();
    const member = new AbortController();
    const waiting = ask(relays, session('s1'), call, member.signal);
    await flush();
    const id = (call.sent[0] as { id: string }).id;
    member.abort();
    await expect(waiting).rejects.toMatchObject({ data: { code: 'relay_cancelled' } });
    expect(call.sent[1]).toEqual({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id } });
    expect(relays.size).toBe(0);
  });

  it('passes an answer received on another instance, sealed; a payload altered or sealed for another request is dropped', async () => {
    const key = randomBytes(32);
    const events = bus();
    const a = new RelayedRequests({ key, events });
    const b = new RelayedRequests({ key, events });
    const own = session('s1');
    const call = channel();
    const waiting = ask(a, own, call);
    const other = ask(a, own, call);
    await flush();
    const [id, otherId] = call.sent.map((message) => (message as { id: string }).id);
    const answer = {
      jsonrpc: '2.0' as const,
      id: id as string,
      result: { action: 'accept', content: { ok: 'secret-ish' } },
    };
    // Heard by A, altered: dropped. Sealed for another request: dropped.
    const sealed = b['seal'](id as string, answer);
    a['heard'](id as string, `${sealed.slice(0, -2)}${sealed.endsWith('AA') ? 'BB' : 'AA'}`);
    a['heard'](otherId as string, sealed);
    expect(a.size).toBe(2);
    const res = response();
    await b.receive([answer], own, res);
    expect(res.status).toBe(202);
    await expect(waiting).resolves.toEqual({ action: 'accept', content: { ok: 'secret-ish' } });
    // What went through NOTIFY holds nothing of the answer in clear.
    expect(events.payloads.join(' ')).not.toContain('secret-ish');
    // B with no way to reach A: 404 relay_other_instance.
    const alone = new RelayedRequests({ key });
    const refused = response();
    await alone.receive([{ ...answer, id: otherId as string }], own, refused);
    expect(refused.status).toBe(404);
    expect(JSON.parse(refused.body as string).error.data.code).toBe('relay_other_instance');
    call.end();
    await expect(other).rejects.toMatchObject({ data: { code: 'relay_cancelled' } });
    await Promise.all([a.close(), b.close()]);
  });
});

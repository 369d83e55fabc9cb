import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import {
  ListChangedStreams,
  type VirtualStreamLimitError,
  type VirtualStreamLimits,
} from '../src/mcp/virtual-list-streams';
import {
  SESSION_CAPABILITIES_MAX_BYTES,
  VIRTUAL_SESSION_ENDED_CHANNEL,
  VIRTUAL_SESSION_ID_MAX_CHARS,
  VirtualSessionTokens,
  virtualSessionEvents,
  type VirtualSession,
} from '../src/mcp/virtual-sessions';

// The session ids of virtual MCP servers (tokens any instance checks) and the bounds of their GET
// streams, without a gateway around them.

const caller = { 'x-api-key': 'gw-caller-one' };
const key = randomBytes(32);

describe('VirtualSessionTokens', () => {
  it('checks a session id it issued, for the same virtual server and credential, until it expires', () => {
    let now = 1_000_000;
    const tokens = new VirtualSessionTokens({ key, ttlMs: 60_000, now: () => now });
    const { sessionId, session } = tokens.issue('bench', '2025-06-18', { roots: {} }, caller);
    expect(session).toMatchObject({ slug: 'bench', protocolVersion: '2025-06-18', expiresAt: 1_060_000 });
    expect(tokens.verify(sessionId, 'bench', caller)).toEqual(session);
    expect(tokens.verify(sessionId, 'bench', { authorization: 'Bearer gw-caller-one' })).toBeUndefined();
    expect(tokens.verify(sessionId, 'other', caller)).toBeUndefined();
    // Another deployment's key (or none shared): not a session here.
    expect(
      new VirtualSessionTokens({ key: randomBytes(32), now: () => now }).verify(sessionId, 'bench', caller),
    ).toBeUndefined();
    now = 1_059_999;
    expect(tokens.verify(sessionId, 'bench', caller)).toBeDefined();
    now = 1_060_000;
    expect(tokens.verify(sessionId, 'bench', caller)).toBeUndefined();
  });

  it('refuses ids of another form, too long, or whose payload is not a session', () => {
    const tokens = new VirtualSessionTokens({ key });
    const { sessionId } = tokens.issue('bench', '2025-06-18', {}, caller);
    expect(tokens.verify(`${sessionId}.x`, 'bench', caller)).toBeUndefined();
    expect(tokens.verify(sessionId.replace(/^v1/, 'v2'), 'bench', caller)).toBeUndefined();
    expect(tokens.verify(`${sessionId}${'a'.repeat(VIRTUAL_SESSION_ID_MAX_CHARS)}`, 'bench', caller)).toBeUndefined();
    // A well-formed MAC over a payload that is not a session's (signed with the same key by the test).
    const forged = new VirtualSessionTokens({ key }) as unknown as { mac(body: string): string };
    const body = Buffer.from(JSON.stringify({ i: 'x', s: 'bench' })).toString('base64url');
    expect(tokens.verify(`v1.${body}.${forged.mac(body)}`, 'bench', caller)).toBeUndefined();
    expect(() => new VirtualSessionTokens({ key: randomBytes(16) })).toThrow(TypeError);
  });

  it('leaves out capabilities over the bound, and holds no credential', () => {
    const tokens = new VirtualSessionTokens({ key });
    const big = { experimental: { blob: 'x'.repeat(SESSION_CAPABILITIES_MAX_BYTES) } };
    const { sessionId, session } = tokens.issue('bench', '2025-06-18', big, caller);
    expect(session.clientCapabilities).toEqual({});
    expect(Buffer.from(sessionId.split('.')[1] as string, 'base64url').toString()).not.toContain('gw-caller-one');
  });

  it('remembers ended sessions until they expire, at most maxRevoked (the nearest expiry forgotten first)', () => {
    let now = 0;
    const tokens = new VirtualSessionTokens({ key, maxRevoked: 2, ttlMs: 1_000, now: () => now });
    const first = tokens.issue('bench', '2025-06-18', {}, caller);
    now = 10;
    const second = tokens.issue('bench', '2025-06-18', {}, caller);
    now = 20;
    const third = tokens.issue('bench', '2025-06-18', {}, caller);
    for (const { session } of [second, first, third]) tokens.revoke(session.id, session.expiresAt);
    expect(tokens.revokedCount).toBe(2);
    expect(tokens.verify(first.sessionId, 'bench', caller)).toBeDefined();
    expect(tokens.verify(second.sessionId, 'bench', caller)).toBeUndefined();
    expect(tokens.verify(third.sessionId, 'bench', caller)).toBeUndefined();
    tokens.revoke('gone', 5); // expired already: not remembered
    expect(tokens.revokedCount).toBe(2);
    now = 1_015;
    tokens.sweep();
    expect(tokens.revokedCount).toBe(1);
  });

  it('tells and hears ended sessions over NOTIFY, ignoring a payload that is not one', async () => {
    const sent: unknown[][] = [];
    let heard: ((payload: string) => void) | undefined;
    const events = virtualSessionEvents({
      query: async (sql: string, params?: readonly unknown[]) => {
        sent.push([sql, ...(params ?? [])]);
        return [];
      },
      listen: async (channel: string, onNotify: (payload: string) => void) => {
        expect(channel).toBe(VIRTUAL_SESSION_ENDED_CHANNEL);
        heard = onNotify;
        return async () => undefined;
      },
    } as never);
    await events.publish('abc', 42);
    expect(sent).toEqual([['SELECT pg_notify($1, $2)', VIRTUAL_SESSION_ENDED_CHANNEL, 'abc 42']]);
    const ended: [string, number][] = [];
    await events.subscribe((id, expiresAt) => ended.push([id, expiresAt]));
    heard?.('abc 42');
    heard?.('abc not-a-number');
    heard?.(' 42');
    expect(ended).toEqual([['abc', 42]]);
  });
});

describe('ListChangedStreams bounds', () => {
  let server: Server;
  let url: string;
  let streams: ListChangedStreams;
  const session = (id: string): VirtualSession => ({
    id,
    slug: 'bench',
    protocolVersion: '2025-06-18',
    clientCapabilities: {},
    expiresAt: Date.now() + 60_000,
  });

  /** Members that cannot be reached (port 9 refuses): each still takes a member connection while its stream is open. */
  const unreachable = (n: number) =>
    Array.from({ length: n }, (_, i) => ({ server: `m${i}`, url: new URL('http://127.0.0.1:9/mcp'), headers: {} }));

  async function serve(limits: Partial<VirtualStreamLimits>, members = 0) {
    streams = new ListChangedStreams(pino({ level: 'silent' }), limits);
    server = createServer((req, res) => {
      const [, id, who] = (req.url ?? '').split('/');
      try {
        streams.start(session(id as string), who as string, res, unreachable(members));
      } catch (error) {
        const e = error as VirtualStreamLimitError;
        res.writeHead(e.status, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { code: e.code, message: e.message } }));
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  afterEach(async () => {
    streams.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('one stream a session (409), perCaller streams a caller and total in all (429 mcp_stream_limit)', async () => {
    await serve({ perCaller: 2, total: 3 });
    const abort = new AbortController();
    const open = (id: string, who: string) => fetch(`${url}/${id}/${who}`, { signal: abort.signal });
    expect((await open('s1', 'alice')).status).toBe(200);
    expect((await open('s1', 'alice')).status).toBe(409);
    expect((await open('s2', 'alice')).status).toBe(200);
    const third = await open('s3', 'alice');
    expect(third.status).toBe(429);
    expect(((await third.json()) as { error: { code: string } }).error.code).toBe('mcp_stream_limit');
    expect((await open('s4', 'bob')).status).toBe(200);
    expect((await open('s5', 'carol')).status).toBe(429);
    expect(streams.size).toBe(3);
    // Ending one frees its place.
    streams.end('s4');
    expect((await open('s5', 'carol')).status).toBe(200);
    abort.abort();
  });

  it('counts the member connections of every stream against memberConnections (429 beyond)', async () => {
    await serve({ memberConnections: 5 }, 2);
    const abort = new AbortController();
    const open = (id: string, who: string) => fetch(`${url}/${id}/${who}`, { signal: abort.signal });
    expect((await open('s1', 'alice')).status).toBe(200);
    expect((await open('s2', 'bob')).status).toBe(200);
    expect((await open('s3', 'carol')).status).toBe(429);
    streams.end('s1');
    expect((await open('s3', 'carol')).status).toBe(200);
    abort.abort();
  });

  it('ends a stream idle for idleMs', async () => {
    await serve({ idleMs: 100 });
    const started = Date.now();
    const idle = await fetch(`${url}/s1/alice`);
    expect(await idle.text()).toBe('');
    expect(Date.now() - started).toBeGreaterThanOrEqual(90);
    expect(streams.size).toBe(0);
  }, 5_000);

  it('ends every stream at close (shutdown)', async () => {
    await serve({});
    const open = await fetch(`${url}/s2/alice`);
    const ended = open.text();
    streams.close();
    expect(await ended).toBe('');
    expect(streams.size).toBe(0);
  }, 5_000);
});

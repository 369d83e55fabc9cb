import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { MemberClients } from '../src/mcp/virtual-member-clients';

// The member clients a virtual MCP server keeps per caller (CONTRACT section 16): keyed by a hash,
// bounded, short-lived, and a client whose initialize failed is not kept.

const caller = (key: string) => ({ 'x-api-key': key, host: 'gw.example' });
const open = () => new Client({ name: 'member-clients-test', version: '1.0.0' });
const initialized = () => Promise.resolve();
/** A client is ended after its session's `DELETE` settles: a turn of the event loop. */
const settled = () => new Promise((resolve) => setImmediate(resolve));
/** `watched` opens clients like `open`; `closed` holds each one ended since. */
function watchedClients() {
  const closed = new Set<Client>();
  const watched = () => {
    const client = open();
    client.close = async () => void closed.add(client);
    return client;
  };
  return { closed, watched };
}

describe('MemberClients', () => {
  it('keys a caller’s client by a hash that holds no credential, distinct per caller, member and virtual server', () => {
    const key = MemberClients.key('workbench', 'tracker', caller('gw-secret-key-1'));
    expect(key).not.toContain('gw-secret-key-1');
    expect(key).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(MemberClients.key('workbench', 'tracker', caller('gw-secret-key-1'))).toBe(key);
    for (const other of [
      MemberClients.key('workbench', 'tracker', caller('gw-secret-key-2')),
      MemberClients.key('workbench', 'crm', caller('gw-secret-key-1')),
      MemberClients.key('desk', 'tracker', caller('gw-secret-key-1')),
      MemberClients.key('workbench', 'tracker', { ...caller('gw-secret-key-1'), authorization: 'Bearer t' }),
      MemberClients.key('workbench', 'tracker', { ...caller('gw-secret-key-1'), host: 'other.example' }),
    ])
      expect(other).not.toBe(key);
  });

  it('initializes one client for concurrent requests, keeps it for its TTL, then opens a new one', async () => {
    let now = 0;
    const kept = new MemberClients(1_000, 10, () => now);
    let opened = 0;
    const counted = () => {
      opened++;
      return open();
    };
    const [a, b] = await Promise.all([kept.get('k', counted, initialized), kept.get('k', counted, initialized)]);
    expect(a).toBe(b);
    now = 999;
    expect(await kept.get('k', counted, initialized)).toBe(a);
    now = 1_000;
    expect(await kept.get('k', counted, initialized)).not.toBe(a);
    expect(opened).toBe(2);
    kept.close();
  });

  it('drops the least recently used client beyond its bound', async () => {
    const kept = new MemberClients(60_000, 2);
    const first = await kept.get('1', open, initialized);
    await kept.get('2', open, initialized);
    expect(await kept.get('1', open, initialized)).toBe(first); // 1 is now the most recent
    await kept.get('3', open, initialized);
    expect(kept.size).toBe(2);
    expect(await kept.get('1', open, initialized)).toBe(first);
    const second = await kept.get('2', open, initialized);
    expect(kept.size).toBe(2);
    expect(await kept.get('2', open, initialized)).toBe(second);
    kept.close();
    expect(kept.size).toBe(0);
  });

  it('never ends a client a request still uses, even expired or evicted: it ends with its last use', async () => {
    let now = 0;
    const kept = new MemberClients(1_000, 1, () => now);
    const { closed, watched } = watchedClients();
    // A long call holds the member session past the client's TTL.
    const call = await kept.lend('k', watched, initialized);
    const list = await kept.lend('k', watched, initialized);
    expect(list.client).toBe(call.client);
    now = 1_000;
    const next = await kept.lend('k', watched, initialized); // expired: a new one is kept
    expect(next.client).not.toBe(call.client);
    list.release();
    list.release(); // counted once
    await settled();
    expect(closed.has(call.client)).toBe(false);
    call.release();
    await settled();
    expect(closed.has(call.client)).toBe(true);
    // Evicted beyond the bound while lent: ended when released, not before.
    await kept.get('other', watched, initialized);
    await settled();
    expect(closed.has(next.client)).toBe(false);
    next.release();
    await settled();
    expect(closed.has(next.client)).toBe(true);
    // A client no one uses is ended as soon as it is dropped.
    const idle = await kept.get('idle', watched, initialized);
    await settled();
    expect(closed.has(idle)).toBe(false);
    now = 5_000;
    await kept.get('idle', watched, initialized);
    await settled();
    expect(closed.has(idle)).toBe(true);
    kept.close();
  });

  it('lends a kept client without waiting only once its initialize succeeded, and not once expired or forgotten', async () => {
    let now = 0;
    const kept = new MemberClients(1_000, 10, () => now);
    const { closed, watched } = watchedClients();
    expect(kept.lendReady('k')).toBeUndefined(); // none yet
    let done: () => void = () => undefined;
    const initializing = kept.lend('k', watched, () => new Promise<void>((resolve) => (done = resolve)));
    expect(kept.lendReady('k')).toBeUndefined(); // its initialize is under way
    done();
    const first = await initializing;
    const ready = kept.lendReady('k');
    expect(ready?.client).toBe(first.client);
    // Lent like lend(): an expired client in use ends with its last use, not before.
    now = 1_000;
    expect(kept.lendReady('k')).toBeUndefined();
    const next = await kept.lend('k', watched, initialized);
    expect(next.client).not.toBe(first.client);
    first.release();
    await settled();
    expect(closed.has(first.client)).toBe(false);
    ready?.release();
    ready?.release(); // counted once
    await settled();
    expect(closed.has(first.client)).toBe(true);
    expect(kept.lendReady('k')?.client).toBe(next.client);
    kept.forget('k', next.client);
    expect(kept.lendReady('k')).toBeUndefined();
    kept.close();
  });

  it('keeps no client whose initialize failed, and forgets one that failed later', async () => {
    const kept = new MemberClients();
    await expect(kept.get('k', open, () => Promise.reject(new Error('refused')))).rejects.toThrow('refused');
    expect(kept.size).toBe(0);
    const client = await kept.get('k', open, initialized);
    kept.forget('k', open()); // another client: not the kept one
    expect(kept.size).toBe(1);
    kept.forget('k', client);
    expect(kept.size).toBe(0);
    kept.close();
  });
});

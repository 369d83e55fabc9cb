import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { Redis } from 'ioredis';
import pino from 'pino';
import type { CachedAnswer } from '@gw/model-router';
import { DEFAULT_MAX_ENTRY_BYTES, RedisCacheStore, encodeEntry } from '../../src/cache/redis-store';
import { startRedis, type RunningRedis } from './cache-support';

jest.setTimeout(60_000);

const PREFIX = 'gw:cache:v2:';
const GZIP = 0x01;
const PLAIN = 0x00;

/** A logger writing nowhere (no stream left open). */
const silent = pino({ level: 'silent' }, { write: () => undefined });
let redis: RunningRedis;
let raw: Redis;
let store: RedisCacheStore;
const macKey = randomBytes(32);
const rejected: string[] = [];

const answer = (text: string): CachedAnswer => ({
  message: {
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    content: [{ type: 'text', text }],
    stop_reason: 'end_turn',
  },
  storedAt: 1,
});

beforeAll(async () => {
  redis = await startRedis();
  raw = new Redis(redis.url);
  store = new RedisCacheStore({
    url: redis.url,
    timeoutMs: 2_000,
    macKey,
    logger: silent,
    onRejected: (reason) => rejected.push(reason),
  });
  await store.ready();
});

afterAll(async () => {
  await store?.close();
  raw?.disconnect();
  await redis?.stop();
});

beforeEach(() => {
  rejected.length = 0;
});

describe('response cache entries in Redis', () => {
  it('are authenticated: a changed entry, or one moved under another key, is a MISS and counted', async () => {
    await store.set('small', answer('a short answer'), 60);
    await store.set('large', answer('x'.repeat(20_000)), 60);
    expect(await store.get('small')).toEqual(answer('a short answer'));
    expect(await store.get('large')).toEqual(answer('x'.repeat(20_000)));
    expect(rejected).toEqual([]);

    // One byte of the answer changed (the JSON stays valid).
    const small = (await raw.getBuffer(`${PREFIX}small`)) as Buffer;
    const changed = Buffer.from(small.toString('latin1').replace('a short answer', 'a forged answer'), 'latin1');
    await raw.set(`${PREFIX}small`, changed);
    expect(await store.get('small')).toBeUndefined();

    // A valid entry copied under another caller's key.
    const large = (await raw.getBuffer(`${PREFIX}large`)) as Buffer;
    await raw.set(`${PREFIX}other-caller`, large);
    expect(await store.get('other-caller')).toBeUndefined();

    // An entry written by someone without the key (plain JSON, a MAC under another key, the earlier form).
    const forged = Buffer.from(JSON.stringify(answer('forged')));
    await raw.set(`${PREFIX}forged`, encodeEntry(randomBytes(32), `${PREFIX}forged`, PLAIN, forged));
    expect(await store.get('forged')).toBeUndefined();
    await raw.set(`${PREFIX}legacy`, Buffer.concat([Buffer.of(0x00), forged]));
    expect(await store.get('legacy')).toBeUndefined();

    expect(rejected).toEqual(['mac', 'mac', 'mac', 'format']);
    // The entry as written is still served.
    expect(await store.get('large')).toEqual(answer('x'.repeat(20_000)));
  });

  it('are inflated at most to the entry limit: a gzip bomb (even with a valid MAC) is a MISS and memory stays bounded', async () => {
    // 64 MiB of zeros in about 64 KB: 8 gzip members of 8 MiB each (gunzip reads them all).
    const member = gzipSync(Buffer.alloc(8 * 1024 * 1024), { level: 9 });
    const bomb = Buffer.concat(Array.from({ length: 8 }, () => member));
    await raw.set(`${PREFIX}bomb`, encodeEntry(macKey, `${PREFIX}bomb`, GZIP, bomb));
    // Past the default limit (16 MiB): a MISS.
    expect(bomb.length).toBeLessThan(DEFAULT_MAX_ENTRY_BYTES);
    expect(await store.get('bomb')).toBeUndefined();
    expect(rejected).toEqual(['size']);

    // With a limit of 1 MiB, the same entry costs about 1 MiB, not the 64 MiB it holds.
    const small = new RedisCacheStore({
      url: redis.url,
      timeoutMs: 2_000,
      macKey,
      maxEntryBytes: 1024 * 1024,
      logger: silent,
      onRejected: (reason) => rejected.push(reason),
    });
    try {
      await small.ready();
      const before = process.memoryUsage();
      expect(await small.get('bomb')).toBeUndefined();
      const after = process.memoryUsage();
      expect(rejected).toEqual(['size', 'size']);
      expect(after.rss + after.arrayBuffers - (before.rss + before.arrayBuffers)).toBeLessThan(32 * 1024 * 1024);

      // An entry larger than the limit is neither stored nor read back.
      await small.set('too-big', answer('y'.repeat(2 * 1024 * 1024)), 60);
      expect(await raw.exists(`${PREFIX}too-big`)).toBe(0);
    } finally {
      await small.close();
    }
  });

  it('refuses a store without a MAC key of at least 32 bytes', () => {
    expect(() => new RedisCacheStore({ url: redis.url, macKey: Buffer.alloc(8), logger: silent })).toThrow(
      /macKey must be a Buffer of at least 32 bytes/,
    );
  });
});

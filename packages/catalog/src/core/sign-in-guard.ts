import { isIP } from 'node:net';
import type { IncomingMessage } from 'node:http';
import { rejectUnknownOptions } from '@gw/options';
import { CatalogError } from './errors';

/** Too many failed sign-ins came from the client's address: it waits `retryAfterSeconds` before the next try. */
export class TooManyAttemptsError extends CatalogError {
  readonly code = 'too_many_attempts';
  readonly status = 429;
  override readonly type = 'rate_limit_error';
  /** Whole seconds until the address may try again (the `retry-after` header). */
  readonly retryAfterSeconds: number;

  constructor(retryAfterMs: number) {
    const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
    super(`Too many failed sign-ins from this address: try again in ${seconds} s.`);
    this.retryAfterSeconds = seconds;
  }
}

/** Options of {@link SignInThrottle}. */
export interface SignInThrottleOptions {
  /** Failed sign-ins an address may make before it has to wait. Default 5. */
  freeAttempts?: number;
  /** The first wait, in ms; each further failure doubles it. Default 1000. */
  baseDelayMs?: number;
  /** The longest wait, in ms. Default 900000 (15 minutes). */
  maxDelayMs?: number;
  /** An address's failures are forgotten this long after its last one, in ms. Default 900000 (15 minutes). */
  forgetAfterMs?: number;
  /** Most addresses remembered at once; the least recently seen is forgotten first. Default 10000. */
  maxAddresses?: number;
  /** Millisecond clock. Default `Date.now`. */
  now?: () => number;
}

interface Attempts {
  /** Sign-ins counted since the last success (each attempt counts as failed until it succeeds). */
  count: number;
  /** Until when the address is refused, in ms since the epoch. */
  blockedUntil: number;
  /** The last attempt, in ms since the epoch. */
  lastAt: number;
}

/**
 * Slows down failed sign-ins per client address, in this process: an address's first
 * `freeAttempts` failures pass, then each further attempt makes it wait `baseDelayMs`, doubling up
 * to `maxDelayMs`. A success forgets the address. Every attempt counts as a failure from the moment
 * it starts (a success then clears it), so attempts made in parallel are counted too. At most
 * `maxAddresses` addresses are remembered (least recently seen forgotten first); IPv6 addresses
 * count per /64 network, the block one client usually holds.
 */
export class SignInThrottle {
  private readonly freeAttempts: number;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly forgetAfterMs: number;
  private readonly maxAddresses: number;
  private readonly now: () => number;
  private readonly addresses = new Map<string, Attempts>();

  constructor(options: SignInThrottleOptions = {}) {
    if (typeof options !== 'object' || options === null)
      throw new TypeError('SignInThrottle options must be an object such as { freeAttempts: 5 }.');
    rejectUnknownOptions(
      options,
      ['freeAttempts', 'baseDelayMs', 'maxDelayMs', 'forgetAfterMs', 'maxAddresses', 'now'],
      'SignInThrottle',
    );
    const whole = (name: keyof SignInThrottleOptions, fallback: number, min: number): number => {
      const value = options[name] ?? fallback;
      if (typeof value !== 'number' || !Number.isInteger(value) || value < min)
        throw new TypeError(
          `SignInThrottle ${name} must be a whole number of at least ${min}, for example ${fallback}.`,
        );
      return value;
    };
    this.freeAttempts = whole('freeAttempts', 5, 0);
    this.baseDelayMs = whole('baseDelayMs', 1_000, 1);
    this.maxDelayMs = whole('maxDelayMs', 15 * 60_000, this.baseDelayMs);
    this.forgetAfterMs = whole('forgetAfterMs', 15 * 60_000, 1);
    this.maxAddresses = whole('maxAddresses', 10_000, 1);
    if (options.now !== undefined && typeof options.now !== 'function')
      throw new TypeError('SignInThrottle now must be a function () => milliseconds since the epoch.');
    this.now = options.now ?? Date.now;
  }

  /** How many addresses are remembered now. */
  get size(): number {
    return this.addresses.size;
  }

  /**
   * Starts a sign-in from `address`: throws {@link TooManyAttemptsError} while the address has to
   * wait, otherwise counts the attempt as failed until {@link SignInThrottle.succeeded} clears it.
   */
  begin(address: string): void {
    const key = addressKey(address);
    const now = this.now();
    let entry = this.addresses.get(key);
    if (entry && now - entry.lastAt >= this.forgetAfterMs && now >= entry.blockedUntil) entry = undefined;
    if (entry && now < entry.blockedUntil) throw new TooManyAttemptsError(entry.blockedUntil - now);
    entry ??= { count: 0, blockedUntil: 0, lastAt: now };
    entry.count++;
    entry.lastAt = now;
    if (entry.count > this.freeAttempts) {
      const doublings = Math.min(entry.count - this.freeAttempts - 1, 30);
      entry.blockedUntil = now + Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** doublings);
    }
    // Least recently seen first: re-inserting moves the address to the end.
    this.addresses.delete(key);
    this.addresses.set(key, entry);
    while (this.addresses.size > this.maxAddresses) this.addresses.delete(this.addresses.keys().next().value as string);
  }

  /** A sign-in from `address` succeeded: its failures are forgotten. */
  succeeded(address: string): void {
    this.addresses.delete(addressKey(address));
  }
}

const IPV4_MAPPED = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i;

/** The throttle's key for an address: IPv4 as it is, IPv6 as its /64 network. */
function addressKey(address: string): string {
  if (isIP(address) !== 6) return address;
  const [head = '', tail = ''] = address.toLowerCase().split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === '' ? [] : tail.split(':');
  const groups = address.includes('::')
    ? [...left, ...Array(8 - left.length - right.length).fill('0'), ...right]
    : left;
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

/** Most `x-forwarded-for` entries looked at. */
const MAX_FORWARDED = 32;

/**
 * The client's address as sign-in throttling sees it: the socket's peer, or, when the peer is one
 * of `trustedProxies`, the right-most address of its `x-forwarded-for` that is not a trusted proxy
 * (the left part of that header is whatever the client wrote, so it is never believed).
 */
export function clientAddress(req: IncomingMessage, trustedProxies: ReadonlySet<string> = new Set()): string {
  const peerRaw = req.socket?.remoteAddress ?? '';
  const peer = IPV4_MAPPED.exec(peerRaw)?.[1] ?? peerRaw;
  if (!trustedProxies.has(peer)) return peer || 'unknown';
  const header = req.headers['x-forwarded-for'];
  const entries = (Array.isArray(header) ? header.join(',') : (header ?? '')).slice(-4096).split(',');
  let client = peer;
  for (const raw of entries.slice(-MAX_FORWARDED).reverse()) {
    const entry = raw.trim();
    const address = IPV4_MAPPED.exec(entry)?.[1] ?? entry;
    if (isIP(address) === 0) break;
    client = address;
    if (!trustedProxies.has(address)) break;
  }
  return client;
}

/** Normalises a list of trusted proxy addresses for {@link clientAddress}; throws a `TypeError` for one that is not an IP address. */
export function trustedProxySet(list: readonly string[] | undefined, option = 'trustedProxies'): ReadonlySet<string> {
  if (list === undefined) return new Set();
  if (!Array.isArray(list) || list.some((a) => typeof a !== 'string' || isIP(a) === 0))
    throw new TypeError(`${option} must be a list of IP addresses, for example ["10.0.0.5"].`);
  return new Set(list.map((a) => IPV4_MAPPED.exec(a)?.[1] ?? a));
}

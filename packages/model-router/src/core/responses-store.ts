import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { CallerIdResolver } from './caller';
import { callerScope, type CallerIdentityLike } from './cache/cache-key';

type Json = Record<string, unknown>;

/** A stored response: the answer as the client got it, and the items a later turn continues from. */
export interface StoredResponse {
  /** The response object (`GET /v1/responses/<id>` answers it). */
  response: Json;
  /**
   * The conversation so far: the items the response continued from, its input items and its output
   * items (reasoning items with their `encrypted_content`), which `previous_response_id` continues.
   */
  items: Json[];
}

/**
 * Where stored responses live (`store: true`), each under its owner: a digest of the caller
 * ({@link responseOwner}), so one caller never reads another's. The gateway's is the catalog
 * database's, encrypted at rest; the default a {@link MemoryResponsesStore}.
 */
export interface ResponsesStore {
  /** Stores `stored` under `owner` and `id` (a new id: never overwritten). */
  put(owner: string, id: string, stored: StoredResponse): Promise<void>;
  /** The stored response of `owner` with `id`, or undefined (unknown, another owner's, expired). */
  get(owner: string, id: string): Promise<StoredResponse | undefined>;
  /** Deletes it; false when `owner` has no such response. */
  delete(owner: string, id: string): Promise<boolean>;
}

/**
 * The owner of a caller's stored responses: a SHA-256 of the caller as the response cache scopes it
 * (an API key's user id, a token's issuer and subject, else the caller's id; `anonymous` when the
 * host authenticates no one).
 */
export function responseOwner(req: IncomingMessage, callerId: CallerIdResolver): string {
  const scope = callerScope((req as { callerIdentity?: CallerIdentityLike }).callerIdentity, callerId(req)) ?? {
    kind: 'anonymous',
  };
  return createHash('sha256').update(JSON.stringify(scope)).digest('hex');
}

/** Options of {@link MemoryResponsesStore}. */
export interface MemoryResponsesStoreOptions {
  /** Most responses kept; the oldest goes first. Default 1000. */
  maxEntries?: number;
  /** How long a response is kept, in days. Default 30. */
  retentionDays?: number;
  /** The clock, in ms since the epoch. Default `Date.now`. */
  now?: () => number;
}

/** Stored responses in this process's memory (bounded, lost at restart): the model router's default. */
export class MemoryResponsesStore implements ResponsesStore {
  private readonly entries = new Map<string, { owner: string; stored: StoredResponse; expiresAt: number }>();
  private readonly maxEntries: number;
  private readonly retentionMs: number;
  private readonly now: () => number;

  constructor(options: MemoryResponsesStoreOptions = {}) {
    const maxEntries = options.maxEntries ?? 1000;
    if (!Number.isInteger(maxEntries) || maxEntries < 1)
      throw new TypeError('MemoryResponsesStore maxEntries must be a whole number of at least 1, for example 1000.');
    const days = options.retentionDays ?? 30;
    if (!(typeof days === 'number' && days > 0 && days <= 3650))
      throw new TypeError(
        'MemoryResponsesStore retentionDays must be a number of days from 1 to 3650, for example 30.',
      );
    this.maxEntries = maxEntries;
    this.retentionMs = days * 86_400_000;
    this.now = options.now ?? Date.now;
  }

  put(owner: string, id: string, stored: StoredResponse): Promise<void> {
    while (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(id, { owner, stored, expiresAt: this.now() + this.retentionMs });
    return Promise.resolve();
  }

  get(owner: string, id: string): Promise<StoredResponse | undefined> {
    const entry = this.entries.get(id);
    if (entry && entry.expiresAt <= this.now()) this.entries.delete(id);
    return Promise.resolve(entry && entry.owner === owner && entry.expiresAt > this.now() ? entry.stored : undefined);
  }

  delete(owner: string, id: string): Promise<boolean> {
    const entry = this.entries.get(id);
    if (!entry || entry.owner !== owner) return Promise.resolve(false);
    this.entries.delete(id);
    return Promise.resolve(true);
  }
}

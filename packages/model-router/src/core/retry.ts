/** Cap of one wait between attempts, in ms. */
export const MAX_RETRY_DELAY_MS = 30_000;

/**
 * Milliseconds to wait before retry number `attempt` (1-based): the upstream's `retry-after`
 * when given (seconds or an HTTP date, capped), otherwise exponential backoff with full jitter.
 */
export function retryDelay(
  attempt: number,
  retryAfter: string | undefined,
  random: () => number = Math.random,
  now: () => number = Date.now,
): number {
  if (retryAfter !== undefined) {
    const seconds = Number(retryAfter);
    if (Number.isFinite(seconds) && seconds >= 0) return Math.min(seconds * 1000, MAX_RETRY_DELAY_MS);
    const date = Date.parse(retryAfter);
    if (!Number.isNaN(date)) return Math.min(Math.max(date - now(), 0), MAX_RETRY_DELAY_MS);
  }
  const ceiling = Math.min(250 * 2 ** (attempt - 1), MAX_RETRY_DELAY_MS);
  return Math.floor(random() * ceiling);
}

/**
 * Anthropic's list prices, as data: USD per million tokens of input, output, cache write (5-minute
 * cache) and cache read, per model id. Taken from https://www.anthropic.com/pricing (API) on
 * {@link ANTHROPIC_PRICES_TAKEN_ON}. A provider record's `pricing` overrides any of them; dated
 * model ids (`claude-sonnet-4-5-20250929`) and `-latest` aliases find the entry of their base id.
 */
export const ANTHROPIC_PRICES_TAKEN_ON = '2025-11-24';

/** USD per million tokens, per model id (see {@link ANTHROPIC_PRICES_TAKEN_ON}). */
export const ANTHROPIC_PRICES = Object.freeze({
  'claude-opus-4-5': { input: 5, output: 25, cacheWrite: 6.25, cacheRead: 0.5 },
  'claude-opus-4-1': { input: 15, output: 75, cacheWrite: 18.75, cacheRead: 1.5 },
  'claude-opus-4-0': { input: 15, output: 75, cacheWrite: 18.75, cacheRead: 1.5 },
  'claude-opus-4': { input: 15, output: 75, cacheWrite: 18.75, cacheRead: 1.5 },
  'claude-sonnet-4-5': { input: 3, output: 15, cacheWrite: 3.75, cacheRead: 0.3 },
  'claude-sonnet-4-0': { input: 3, output: 15, cacheWrite: 3.75, cacheRead: 0.3 },
  'claude-sonnet-4': { input: 3, output: 15, cacheWrite: 3.75, cacheRead: 0.3 },
  'claude-haiku-4-5': { input: 1, output: 5, cacheWrite: 1.25, cacheRead: 0.1 },
  'claude-3-7-sonnet': { input: 3, output: 15, cacheWrite: 3.75, cacheRead: 0.3 },
  'claude-3-5-sonnet': { input: 3, output: 15, cacheWrite: 3.75, cacheRead: 0.3 },
  'claude-3-5-haiku': { input: 0.8, output: 4, cacheWrite: 1, cacheRead: 0.08 },
  'claude-3-opus': { input: 15, output: 75, cacheWrite: 18.75, cacheRead: 1.5 },
  'claude-3-haiku': { input: 0.25, output: 1.25, cacheWrite: 0.3, cacheRead: 0.03 },
} as const);

import { ANTHROPIC_PRICES } from './anthropic-prices';

/** A model's price: USD per million tokens of each kind. */
export interface ModelPrice {
  /** Input tokens (not read from or written to the prompt cache). */
  input: number;
  /** Output tokens. */
  output: number;
  /** Input tokens written to the prompt cache. Default: `input`. */
  cacheWrite?: number;
  /** Input tokens read from the prompt cache. Default: `input`. */
  cacheRead?: number;
}

/** A provider record's `pricing`: a price per model id, overriding the bundled table. */
export type PricingTable = Readonly<Record<string, ModelPrice>>;

/** Tokens of one answer, as the provider reported them (a missing count is 0). */
export interface TokenUsage {
  inputTokens?: number | null;
  outputTokens?: number | null;
  cacheCreationTokens?: number | null;
  cacheReadTokens?: number | null;
}

/** Cost is counted in whole nano-dollars (1e-9 USD): exact sums, no floating-point drift. */
export const NANOS_PER_USD = 1_000_000_000;

/** The most expensive bundled price: what a model of unknown price is reserved at (fail closed). */
export const HIGHEST_BUNDLED_PRICE: ModelPrice = Object.values(ANTHROPIC_PRICES).reduce((a, b) =>
  b.output > a.output ? b : a,
);

/** A model id without its date (`-20250929`) or `-latest` suffix: the key of the bundled table. */
function baseModelId(model: string): string {
  return model.replace(/-(\d{8}|latest)$/, '');
}

/**
 * The price of `model`: the provider's `pricing` entry (exact id, then its base id), else the
 * bundled Anthropic table's; undefined when neither knows the model.
 */
export function priceOf(model: string, pricing?: PricingTable): ModelPrice | undefined {
  const base = baseModelId(model);
  if (pricing !== undefined) {
    const own = Object.hasOwn(pricing, model)
      ? pricing[model]
      : Object.hasOwn(pricing, base)
        ? pricing[base]
        : undefined;
    if (own !== undefined) return own;
  }
  const table = ANTHROPIC_PRICES as Readonly<Record<string, ModelPrice>>;
  return Object.hasOwn(table, base) ? table[base] : undefined;
}

const count = (value: number | null | undefined): number =>
  typeof value === 'number' && Number.isSafeInteger(value) && value > 0 ? value : 0;

/** `tokens` at `usdPerMillion`, in nano-dollars (1 token at $1/M is 1000 nano-dollars). */
function nanos(tokens: number, usdPerMillion: number): number {
  return Math.round(tokens * usdPerMillion * 1000);
}

/** The cost of `usage` at `price`, in whole nano-dollars. */
export function costNanos(usage: TokenUsage, price: ModelPrice): number {
  return (
    nanos(count(usage.inputTokens), price.input) +
    nanos(count(usage.outputTokens), price.output) +
    nanos(count(usage.cacheCreationTokens), price.cacheWrite ?? price.input) +
    nanos(count(usage.cacheReadTokens), price.cacheRead ?? price.input)
  );
}

/**
 * The `cost_usd` of a request record: its usage at the model's price, in USD; 0 without usage (a
 * cache hit, a refusal); null when the model's price is unknown.
 */
export function requestCostUsd(
  usage: TokenUsage | undefined,
  model: string | null,
  pricing?: PricingTable,
): number | null {
  const tokens =
    usage === undefined
      ? 0
      : count(usage.inputTokens) +
        count(usage.outputTokens) +
        count(usage.cacheCreationTokens) +
        count(usage.cacheReadTokens);
  if (tokens === 0) return 0;
  const price = model === null ? undefined : priceOf(model, pricing);
  return price === undefined ? null : costNanos(usage as TokenUsage, price) / NANOS_PER_USD;
}

/**
 * The largest cost a request may reach, in nano-dollars: `maxTokens` at the output price plus
 * `inputTokens` at the highest input price (cache write included). A model of unknown price is
 * reserved at {@link HIGHEST_BUNDLED_PRICE}.
 */
export function worstCaseNanos(inputTokens: number, maxTokens: number, price: ModelPrice | undefined): number {
  const p = price ?? HIGHEST_BUNDLED_PRICE;
  const input = Math.max(p.input, p.cacheWrite ?? p.input, p.cacheRead ?? p.input);
  return nanos(count(inputTokens), input) + nanos(count(maxTokens), p.output);
}

/**
 * An upper estimate of a request's input tokens from the bytes of its body: one token per 4 bytes
 * (JSON's quotes, keys and escapes make a body longer than its text), at most 1,000,000.
 */
export function estimateInputTokens(bodyBytes: number): number {
  return Math.min(1_000_000, Math.ceil(Math.max(0, bodyBytes) / 4));
}

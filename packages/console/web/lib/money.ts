/** Amounts of money as the console shows them (the gateway's costs are in US dollars). */

/**
 * An amount in US dollars with cents, such as "$1,234.50"; below a cent with six decimals
 * ("$0.000105"), so a small request's cost does not show as $0.00. "—" for a cost the gateway
 * does not know (null: a model without a price).
 */
export function dollars(n: unknown): string {
  if (n === null || n === undefined) return '—';
  const amount = Number(n);
  if (!Number.isFinite(amount)) return '—';
  const digits = amount !== 0 && Math.abs(amount) < 0.01 ? 6 : 2;
  return `$${amount.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })}`;
}

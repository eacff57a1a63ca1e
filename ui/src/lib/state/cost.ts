import type { UsageCost } from '../backend/types';

/** US dollars for people: cents for a cent or more, four decimals below that. */
export function formatCost(usd: number): string {
  if (usd === 0) return '$0.00';
  return usd < 0.01 ? `$${usd.toFixed(4)}` : `$${usd.toFixed(2)}`;
}

/**
 * The cost part of a usage line: `$0.0123`, `$0.0123 (some models unpriced)`, or `null` when no
 * model used has a price (local models) — then only tokens are shown.
 */
export function costText(u: UsageCost): string | null {
  if (u.cost_usd === null) return null;
  const partial = u.unpriced_models.length ? ` + unpriced ${u.unpriced_models.join(', ')}` : '';
  return `${formatCost(u.cost_usd)}${partial}`;
}

import { describe, expect, it } from 'vitest';
import { costText, formatCost } from './cost';

describe('cost', () => {
  it('shows cents, or four decimals under a cent', () => {
    expect(formatCost(0)).toBe('$0.00');
    expect(formatCost(0.000123)).toBe('$0.0001');
    expect(formatCost(0.0042)).toBe('$0.0042');
    expect(formatCost(1.234)).toBe('$1.23');
  });

  it('says nothing without a price and names unpriced models beside a partial cost', () => {
    const base = { prompt_tokens: 10, completion_tokens: 5, step_count: 1 };
    expect(costText({ ...base, cost_usd: null, unpriced_models: ['ollama/llama3.1'] })).toBeNull();
    expect(costText({ ...base, cost_usd: 0.5, unpriced_models: [] })).toBe('$0.50');
    expect(costText({ ...base, cost_usd: 0.5, unpriced_models: ['ollama/x'] })).toBe('$0.50 + unpriced ollama/x');
  });
});

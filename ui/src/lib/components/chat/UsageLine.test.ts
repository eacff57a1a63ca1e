import { describe, expect, it } from 'vitest';
import { render, screen } from '@testing-library/svelte';
import UsageLine from './UsageLine.svelte';
import { setBackend } from '../../backend';
import { useFakeBackend } from '../../../test/fakeBackend';

const usage = { prompt_tokens: 900, completion_tokens: 40, total_tokens: 940, step_count: 3 };

describe('UsageLine', () => {
  it('says why a run stopped when the model kept repeating itself', () => {
    render(UsageLine, { outcome: { usage, stopReason: 'no_progress' } });
    expect(screen.getByTestId('run-usage')).toHaveTextContent('3 steps');
    expect(screen.getByTestId('run-usage')).toHaveTextContent('stopped: the model kept repeating itself');
  });

  it('says nothing more for a turn that ended normally', () => {
    render(UsageLine, { outcome: { usage, stopReason: 'end_turn' } });
    expect(screen.getByTestId('run-usage').querySelector('.reason')).toBeNull();
  });
});

describe('UsageLine cost', () => {
  it('shows what the run cost, read from the engine for that run', async () => {
    const { calls } = useFakeBackend({
      usage_cost: () => ({ prompt_tokens: 900, completion_tokens: 40, step_count: 3, cost_usd: 0.000159, unpriced_models: [] }),
    });
    render(UsageLine, { outcome: { usage, stopReason: 'end_turn', agentId: 'agent-1', runId: 'run-7' } });
    expect(await screen.findByTestId('run-cost')).toHaveTextContent('$0.0002');
    expect(calls).toContainEqual(['usage_cost', { agent_id: 'agent-1', run_id: 'run-7' }]);
    setBackend(null);
  });

  it('shows only tokens when the model has no price', async () => {
    useFakeBackend({
      usage_cost: () => ({ prompt_tokens: 900, completion_tokens: 40, step_count: 3, cost_usd: null, unpriced_models: ['mock/mock-small'] }),
    });
    render(UsageLine, { outcome: { usage, stopReason: 'end_turn', agentId: 'agent-1', runId: 'run-8' } });
    await new Promise((r) => setTimeout(r, 0));
    expect(screen.queryByTestId('run-cost')).toBeNull();
    expect(screen.getByTestId('run-usage')).toHaveTextContent('940 tokens');
    setBackend(null);
  });
});

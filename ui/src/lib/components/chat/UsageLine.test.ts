import { describe, expect, it } from 'vitest';
import { render, screen } from '@testing-library/svelte';
import UsageLine from './UsageLine.svelte';

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

import { afterEach, describe, expect, it, vi } from 'vitest';
import { render, screen, within } from '@testing-library/svelte';
import userEvent from '@testing-library/user-event';
import AgentSettingsDialog from './AgentSettingsDialog.svelte';
import { setBackend } from '../../backend';
import { agent, useFakeBackend } from '../../../test/fakeBackend';

afterEach(() => setBackend(null));

describe('AgentSettingsDialog model picker', () => {
  it('lists chat models with their windows and saves model, window, temperature and max tokens', async () => {
    const { calls } = useFakeBackend({
      agent_endpoints: () => ({ llm_base_url: null, llm_effective_url: null, embedding_base_url: null, pending: [] }) as never,
      list_providers: () => [{ name: 'mock', kind: 'open_ai', base_url: 'http://x/v1', key_set: true, default_model: null }],
      chat_models: () => [
        { handle: 'mock/mock-small', context_window: 8192, stored: false },
        { handle: 'mock/mock-large', context_window: 32768, stored: false },
      ],
      update_agent: (a) => ({ ...agent(), llm: a.patch.llm! }),
      set_model_window: () => null,
    });
    const onsaved = vi.fn();
    render(AgentSettingsDialog, { agent: agent(), onsaved, oncancel: vi.fn() });
    const select = screen.getByTestId('agent-settings-model-select');
    await vi.waitFor(() => expect(within(select).getAllByRole('option')).toHaveLength(2));
    expect(within(select).getAllByRole('option')[1]).toHaveTextContent('mock/mock-large · 32,768 tokens');
    await userEvent.selectOptions(select, 'mock/mock-large');
    expect(screen.getByTestId('agent-settings-context-window')).toHaveValue(32768);
    await userEvent.type(screen.getByTestId('agent-settings-temperature'), '0.2');
    await userEvent.type(screen.getByTestId('agent-settings-max-tokens'), '256');
    await userEvent.click(screen.getByTestId('agent-settings-save'));
    await vi.waitFor(() => expect(onsaved).toHaveBeenCalled());
    const update = calls.find(([c]) => c === 'update_agent')![1] as { patch: { llm: object } };
    expect(update.patch.llm).toEqual({ model: 'mock/mock-large', context_window: 32768, temperature: 0.2, max_tokens: 256 });
    expect(calls.at(-1)).toEqual(['set_model_window', { handle: 'mock/mock-large', context_window: 32768 }]);
  });
});

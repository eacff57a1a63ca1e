import { describe, expect, it, vi } from 'vitest';
import { render, screen, within } from '@testing-library/svelte';
import userEvent from '@testing-library/user-event';
import AgentList from './AgentList.svelte';
import { agent } from '../../../test/fakeBackend';

function setup() {
  const handlers = {
    onselect: vi.fn(),
    onnew: vi.fn(),
    onrename: vi.fn(async () => {}),
    onclone: vi.fn(async () => {}),
    ondelete: vi.fn(async () => {}),
  };
  const agents = [agent({ id: 'agent-1', name: 'Sam' }), agent({ id: 'agent-2', name: 'Ada', llm: { model: 'anthropic/claude', context_window: 200000 } })];
  render(AgentList, { agents, selectedId: 'agent-1', ...handlers });
  return handlers;
}

describe('AgentList', () => {
  it('asks before deleting, and deletes only on confirmation', async () => {
    const h = setup();
    const ada = screen.getAllByTestId('agent-item')[1]!;
    await userEvent.click(within(ada).getByTestId('agent-delete'));
    const dialog = screen.getByTestId('confirm-dialog');
    expect(dialog).toHaveTextContent('Delete “Ada”');
    await userEvent.click(screen.getByTestId('confirm-cancel'));
    expect(h.ondelete).not.toHaveBeenCalled();
    expect(screen.queryByTestId('confirm-dialog')).toBeNull();

    await userEvent.click(within(ada).getByTestId('agent-delete'));
    await userEvent.click(screen.getByTestId('confirm-ok'));
    expect(h.ondelete).toHaveBeenCalledWith(expect.objectContaining({ id: 'agent-2' }));
  });

  it('filters by name or model', async () => {
    setup();
    await userEvent.type(screen.getByTestId('agent-search'), 'claude');
    const items = screen.getAllByTestId('agent-item');
    expect(items).toHaveLength(1);
    expect(items[0]).toHaveAttribute('data-agent-name', 'Ada');
  });

  it('renames through a dialog', async () => {
    const h = setup();
    await userEvent.click(within(screen.getAllByTestId('agent-item')[0]!).getByTestId('agent-rename'));
    const input = screen.getByTestId('rename-input');
    await userEvent.clear(input);
    await userEvent.type(input, 'Samantha{Enter}');
    expect(h.onrename).toHaveBeenCalledWith(expect.objectContaining({ id: 'agent-1' }), 'Samantha');
  });

  it('opens the first match on Enter, spends the key and clears the search', async () => {
    const h = setup();
    const search = screen.getByTestId('agent-search');
    await userEvent.type(search, 'ad');
    const enter = new KeyboardEvent('keydown', { key: 'Enter', bubbles: true, cancelable: true });
    search.dispatchEvent(enter);
    expect(h.onselect).toHaveBeenCalledWith('agent-2');
    // Not passed on: the message box that takes focus next would type it as a newline.
    expect(enter.defaultPrevented).toBe(true);
    await vi.waitFor(() => expect(search).toHaveValue(''));
    expect(screen.getAllByTestId('agent-item')).toHaveLength(2);
  });

  it('keeps long names whole: wrapped, with the full name as a tooltip', () => {
    const long = 'Travel planner for the long summer holiday 10';
    render(AgentList, {
      agents: [agent({ id: 'agent-9', name: long })],
      selectedId: null,
      onselect: vi.fn(),
      onnew: vi.fn(),
      onrename: vi.fn(async () => {}),
      onclone: vi.fn(async () => {}),
      ondelete: vi.fn(async () => {}),
    });
    const open = screen.getByTestId('agent-open');
    expect(open).toHaveAttribute('title', long);
    expect(open).toHaveTextContent(long);
  });
});

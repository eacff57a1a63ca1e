import { afterEach, describe, expect, it, vi } from 'vitest';
import { render, screen, within } from '@testing-library/svelte';
import userEvent from '@testing-library/user-event';
import BlockHistory from './BlockHistory.svelte';
import BlockSettings from './BlockSettings.svelte';
import BlockAdder from './BlockAdder.svelte';
import BlockCard from './BlockCard.svelte';
import CompiledContext from './CompiledContext.svelte';
import { setBackend } from '../../backend';
import type { BlockEdit, ContextView, SharedBlock } from '../../backend/types';
import { MemoryState } from '../../state/memory.svelte';
import { block, useFakeBackend } from '../../../test/fakeBackend';

afterEach(() => setBackend(null));

function edit(over: Partial<BlockEdit>): BlockEdit {
  return {
    id: 'edit-1',
    block_id: 'block-1',
    editor: { kind: 'user' },
    old_value: '',
    new_value: '',
    created_at: '2026-11-21T10:00:00Z',
    old_version: 1,
    new_version: 2,
    step_id: null,
    ...over,
  } as BlockEdit;
}

describe('BlockHistory undo', () => {
  it('undoes an older edit on its own when it applies, keeping later edits', async () => {
    const older = edit({ id: 'edit-old', old_value: 'Name: Bob', new_value: 'Name: Bob\nLikes tea' });
    const restored = block({ value: 'Name: Bob\nLives in Oslo', version: 5 });
    const { calls } = useFakeBackend({
      block_history: () => [edit({ id: 'edit-new' }), older],
      block_undo_plan: () => ({ edit_id: 'edit-old', block: block({ version: 4 }), later_edits: 1, reverted: restored.value, restored: 'Name: Bob' }),
      undo_block_edit: () => restored,
    });
    const onrestored = vi.fn();
    render(BlockHistory, { agentId: 'agent-1', label: 'human', version: 'v', blockVersion: 4, onrestored });
    const items = await screen.findAllByTestId('block-history-item');
    await userEvent.click(within(items[1]!).getByTestId('block-undo'));
    await vi.waitFor(() => expect(onrestored).toHaveBeenCalledWith(restored));
    expect(calls.map(([c]) => c)).toEqual(['block_history', 'block_undo_plan', 'undo_block_edit']);
    expect(calls.at(-1)![1]).toEqual({ edit_id: 'edit-old', version: 4 });
    expect(screen.queryByTestId('undo-confirm')).toBeNull();
  });

  it('says what a restore would lose and writes only after the person agrees', async () => {
    const current = block({ value: 'Name: Rob', version: 7 });
    const { calls } = useFakeBackend({
      block_history: () => [edit({ id: 'edit-new' }), edit({ id: 'edit-old', old_value: 'Name: Bob', new_value: 'Name: Robert' })],
      block_undo_plan: () => ({ edit_id: 'edit-old', block: current, later_edits: 1, reverted: null, restored: 'Name: Bob' }),
      restore_block_edit: () => block({ value: 'Name: Bob', version: 8 }),
    });
    const onrestored = vi.fn();
    render(BlockHistory, { agentId: 'agent-1', label: 'human', version: 'v', blockVersion: 7, onrestored });
    const items = await screen.findAllByTestId('block-history-item');
    await userEvent.click(within(items[1]!).getByTestId('block-undo'));
    const confirm = await screen.findByTestId('undo-confirm');
    expect(confirm).toHaveTextContent('1 later edit changed the same text');
    expect(calls.some(([c]) => c === 'undo_block_edit' || c === 'restore_block_edit')).toBe(false);
    await userEvent.click(within(confirm).getByTestId('undo-restore'));
    await vi.waitFor(() => expect(onrestored).toHaveBeenCalled());
    expect(calls.at(-1)).toEqual(['restore_block_edit', { edit_id: 'edit-old', version: 7 }]);
  });
});

describe('BlockSettings', () => {
  it('saves a rename, a new limit and read-only with the version it started from', async () => {
    const onsave = vi.fn(async () => {});
    const onclose = vi.fn();
    render(BlockSettings, { block: block({ label: 'notes', value: 'abc', limit: 100, version: 3 }), onsave, onclose });
    const label = screen.getByTestId('block-settings-label');
    await userEvent.clear(label);
    await userEvent.type(label, 'topics');
    const limit = screen.getByTestId('block-settings-limit');
    await userEvent.clear(limit);
    await userEvent.type(limit, '2');
    expect(screen.getByTestId('block-settings-save')).toBeDisabled();
    await userEvent.type(limit, '00');
    await userEvent.click(screen.getByTestId('block-settings-read-only'));
    await userEvent.click(screen.getByTestId('block-settings-save'));
    expect(onsave).toHaveBeenCalledWith('notes', { version: 3, label: 'topics', limit: 200, read_only: true });
    expect(onclose).toHaveBeenCalled();
  });

  it('a stale save says nothing was saved', async () => {
    const onsave = vi.fn(async () => {
      throw Object.assign(new Error('changed'), { code: 'stale_version', message: 'changed' });
    });
    render(BlockSettings, { block: block({ label: 'notes' }), onsave, onclose: vi.fn() });
    await userEvent.click(screen.getByTestId('block-settings-read-only'));
    await userEvent.click(screen.getByTestId('block-settings-save'));
    expect(await screen.findByRole('alert')).toHaveTextContent('nothing was saved');
  });
});

describe('BlockCard sharing and unsaved edits', () => {
  it('shows where a block is shared and reports an unsaved draft', async () => {
    const ondirty = vi.fn();
    render(BlockCard, {
      block: block({ value: 'a' }),
      agentId: 'agent-1',
      onsave: vi.fn(),
      onrestored: vi.fn(),
      sharedWith: [{ id: 'agent-2', name: 'Ada' }],
      ondirty,
    });
    expect(screen.getByTestId('block-shared')).toHaveTextContent('shared with Ada');
    await userEvent.click(screen.getByTestId('block-edit'));
    await userEvent.type(screen.getByTestId('block-editor'), 'b');
    expect(ondirty).toHaveBeenLastCalledWith(expect.objectContaining({ id: 'block-1' }), true);
  });
});

describe('BlockAdder', () => {
  const shared: SharedBlock[] = [
    { block: block({ id: 'block-1', label: 'human' }), agents: [{ id: 'agent-1', name: 'Sam' }] },
    { block: block({ id: 'block-9', label: 'team' }), agents: [{ id: 'agent-2', name: 'Ada' }] },
  ];

  it('adds a block and attaches an existing one, offering only blocks the agent lacks', async () => {
    const { calls } = useFakeBackend({
      list_blocks: () => [block()],
      shared_blocks: () => shared,
      create_agent_block: () => block({ id: 'block-5', label: 'notes' }),
      attach_block: () => ({ ...({} as object), blocks: [block()] }) as never,
      context_window: () => {
        throw new Error('later');
      },
    });
    const memory = new MemoryState('agent-1');
    await memory.load();
    render(BlockAdder, { memory });
    await userEvent.click(screen.getByTestId('block-add'));
    await userEvent.type(screen.getByTestId('block-add-label'), 'notes');
    await userEvent.type(screen.getByTestId('block-add-value'), 'likes tea');
    await userEvent.click(screen.getByTestId('block-add-save'));
    await vi.waitFor(() => expect(calls.some(([c]) => c === 'create_agent_block')).toBe(true));
    expect(calls.find(([c]) => c === 'create_agent_block')![1]).toEqual({
      agent_id: 'agent-1',
      new: { label: 'notes', value: 'likes tea', limit: 5000, read_only: false, description: undefined },
    });

    await userEvent.click(screen.getByTestId('block-attach'));
    const select = screen.getByTestId('block-attach-select');
    expect(within(select).getAllByRole('option').map((o) => o.textContent)).toEqual(['team — with Ada']);
    await userEvent.click(screen.getByTestId('block-attach-save'));
    await vi.waitFor(() => expect(calls.some(([c]) => c === 'attach_block')).toBe(true));
    expect(calls.find(([c]) => c === 'attach_block')![1]).toEqual({ agent_id: 'agent-1', block_id: 'block-9' });
  });
});

describe('CompiledContext', () => {
  it('shows every message and tool of the next call with its tokens', async () => {
    const view: ContextView = {
      model: 'mock-small',
      temperature: 0.3,
      max_tokens: null,
      messages: [
        { role: 'system', part: 'system', content: 'Be kind.\n<memory_blocks>…', tool_calls: [], tool_call_id: null, name: null, tokens: 40 },
        { role: 'user', part: 'message', content: 'hi', tool_calls: [], tool_call_id: null, name: null, tokens: 5 },
      ],
      tools: [{ name: 'core_memory_append', description: 'Adds a line.', parameters: { type: 'object' }, tokens: 30 }],
      breakdown: { system: 10, core_memory: 30, files: 0, summary: 0, messages: 5, tools: 30, total: 75, context_window: 8192, exact: true },
    };
    useFakeBackend({ context_view: () => view });
    render(CompiledContext, { agentId: 'agent-1' });
    const messages = await screen.findAllByTestId('context-message');
    expect(messages.map((m) => m.dataset.role)).toEqual(['system', 'user']);
    expect(messages[0]).toHaveTextContent('System: instructions and core memory');
    expect(messages[0]).toHaveTextContent('40 tokens');
    expect(screen.getByTestId('context-view-temperature')).toHaveTextContent('0.3');
    expect(screen.getByTestId('context-tool')).toHaveTextContent('core_memory_append');
    expect(screen.getByTestId('context-tool')).toHaveTextContent('30 tokens');
  });
});

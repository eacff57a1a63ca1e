import { afterEach, describe, expect, it, vi } from 'vitest';
import { render, screen } from '@testing-library/svelte';
import userEvent from '@testing-library/user-event';
import BlockCard from './BlockCard.svelte';
import { BackendError, setBackend } from '../../backend';
import { block } from '../../../test/fakeBackend';

afterEach(() => setBackend(null));

describe('BlockCard', () => {
  it('shows characters used against the limit', () => {
    render(BlockCard, { block: block({ value: 'x'.repeat(75), limit: 100 }), agentId: 'agent-1', onsave: vi.fn(), onrestored: vi.fn() });
    const bar = screen.getByTestId('block-limit-bar');
    expect(bar).toHaveAttribute('aria-valuenow', '75');
    expect(bar).toHaveAttribute('aria-valuemax', '100');
    expect(bar.firstElementChild).toHaveStyle({ width: '75%' });
    expect(screen.getByTestId('block-chars')).toHaveTextContent('75 / 100 chars');
  });

  it('saves a hand edit through onsave and refuses text over the limit', async () => {
    const onsave = vi.fn(async () => {});
    render(BlockCard, { block: block({ value: 'Name: Bob', limit: 20 }), agentId: 'agent-1', onsave, onrestored: vi.fn() });
    await userEvent.click(screen.getByTestId('block-edit'));
    const editor = screen.getByTestId('block-editor');
    expect(editor).toHaveValue('Name: Bob');

    await userEvent.type(editor, ', likes very long walks');
    expect(screen.getByTestId('block-chars')).toHaveTextContent('32 / 20 chars');
    expect(screen.getByTestId('block-save')).toBeDisabled();
    expect(screen.getByText(/Over the limit by 12 characters/)).toBeInTheDocument();

    await userEvent.clear(editor);
    await userEvent.type(editor, 'Name: Robert');
    await userEvent.click(screen.getByTestId('block-save'));
    expect(onsave).toHaveBeenCalledWith('human', { value: 'Name: Robert', version: 1 });
    expect(screen.queryByTestId('block-editor')).toBeNull();
  });

  it('keeps the editor open and shows the engine’s refusal', async () => {
    const onsave = vi.fn(async () => {
      throw Object.assign(new Error('The block is shared and was changed meanwhile'), { code: 'conflict' });
    });
    render(BlockCard, { block: block({ value: 'a' }), agentId: 'agent-1', onsave, onrestored: vi.fn() });
    await userEvent.click(screen.getByTestId('block-edit'));
    await userEvent.click(screen.getByTestId('block-save'));
    expect(await screen.findByRole('alert')).toHaveTextContent('changed meanwhile');
    expect(screen.getByTestId('block-editor')).toBeInTheDocument();
  });

  it('a save refused as stale offers overwrite, keep theirs, or editing the current value', async () => {
    const theirs = block({ value: 'Name: Bob\nLikes: kiwi', version: 3 });
    const stale = new BackendError('stale_version', 'the block changed', { based_on: 2, current: theirs });
    const onsave = vi.fn(async (_label: string, patch: { version?: number }) => {
      if (patch.version !== 3) throw stale;
    });
    render(BlockCard, { block: block({ value: 'Name: Bob', version: 2 }), agentId: 'agent-1', onsave, onrestored: vi.fn() });

    // Keep theirs: the edit is dropped.
    await userEvent.click(screen.getByTestId('block-edit'));
    await userEvent.type(screen.getByTestId('block-editor'), ', allergic to peanuts');
    await userEvent.click(screen.getByTestId('block-save'));
    expect(onsave).toHaveBeenLastCalledWith('human', { value: 'Name: Bob, allergic to peanuts', version: 2 });
    expect(await screen.findByTestId('block-conflict')).toHaveTextContent('now version 3');
    expect(screen.getByTestId('conflict-theirs')).toHaveTextContent('Likes: kiwi');
    expect(screen.getByTestId('conflict-mine')).toHaveTextContent('allergic to peanuts');
    await userEvent.click(screen.getByTestId('conflict-keep-theirs'));
    expect(screen.queryByTestId('block-editor')).toBeNull();

    // Edit the current value: the editor holds theirs and saves against their version.
    await userEvent.click(screen.getByTestId('block-edit'));
    await userEvent.click(screen.getByTestId('block-save'));
    await userEvent.click(await screen.findByTestId('conflict-merge'));
    const editor = screen.getByTestId('block-editor');
    expect(editor).toHaveValue('Name: Bob\nLikes: kiwi');
    await userEvent.type(editor, '\nAllergic to peanuts');
    await userEvent.click(screen.getByTestId('block-save'));
    expect(onsave).toHaveBeenLastCalledWith('human', { value: 'Name: Bob\nLikes: kiwi\nAllergic to peanuts', version: 3 });
    expect(screen.queryByTestId('block-editor')).toBeNull();

    // Overwrite with mine: my text, based on their version.
    await userEvent.click(screen.getByTestId('block-edit'));
    await userEvent.clear(screen.getByTestId('block-editor'));
    await userEvent.type(screen.getByTestId('block-editor'), 'Only mine');
    await userEvent.click(screen.getByTestId('block-save'));
    await userEvent.click(await screen.findByTestId('conflict-overwrite'));
    expect(onsave).toHaveBeenLastCalledWith('human', { value: 'Only mine', version: 3 });
    expect(screen.queryByTestId('block-conflict')).toBeNull();
  });

  it('marks a block the agent just edited', () => {
    render(BlockCard, { block: block(), agentId: 'agent-1', flashing: true, onsave: vi.fn(), onrestored: vi.fn() });
    expect(screen.getByTestId('block-human')).toHaveAttribute('data-flashing', 'true');
  });
});

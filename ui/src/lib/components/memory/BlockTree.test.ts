import { afterEach, describe, expect, it, vi } from 'vitest';
import { render, screen, within } from '@testing-library/svelte';
import userEvent from '@testing-library/user-event';
import BlockTree from './BlockTree.svelte';
import { labelTree, type TreeNode } from './labelTree';
import { setBackend } from '../../backend';
import { block } from '../../../test/fakeBackend';

afterEach(() => setBackend(null));

const blocks = [
  block({ id: 'block-1', label: 'system/persona', value: 'I am Ezra.' }),
  block({ id: 'block-2', label: 'human', value: 'Sarah' }),
  block({ id: 'block-3', label: 'system/human/family', value: 'Leo is 7.' }),
  block({ id: 'block-4', label: '/note_directory', value: '- faq' }),
];

describe('labelTree', () => {
  it('folds path labels into folders in context order and keeps labels whole', () => {
    const tree = labelTree(blocks);
    expect(tree.map((n) => (n.kind === 'folder' ? `${n.path}/` : n.block.label))).toEqual([
      'system/',
      'human',
      '/note_directory',
    ]);
    const system = tree[0] as Extract<TreeNode, { kind: 'folder' }>;
    expect(system.kind).toBe('folder');
    expect(system.children.map((n: TreeNode) => (n.kind === 'folder' ? n.path : n.block.label))).toEqual([
      'system/persona',
      'system/human',
    ]);
  });
});

describe('BlockTree', () => {
  it('shows path labels as collapsible folders', async () => {
    render(BlockTree, { blocks, agentId: 'agent-1', onsave: vi.fn(), onrestored: vi.fn() });
    const system = screen.getByTestId('block-folder-system');
    expect(system).toHaveAttribute('open');
    expect(within(system).getByText('2 blocks')).toBeInTheDocument();
    const family = within(system).getByTestId('block-system/human/family');
    expect(within(family).getByText('system/human/family')).toBeInTheDocument();
    expect(screen.getByTestId('block-human')).toBeInTheDocument();
    expect(screen.getByTestId('block-/note_directory')).toBeInTheDocument();

    await userEvent.click(system.querySelector('summary')!);
    expect(system).not.toHaveAttribute('open');
  });

  it('saves through the full label', async () => {
    const onsave = vi.fn(async () => {});
    render(BlockTree, { blocks, agentId: 'agent-1', onsave, onrestored: vi.fn() });
    const family = screen.getByTestId('block-system/human/family');
    await userEvent.click(within(family).getByTestId('block-edit'));
    const editor = within(family).getByTestId('block-editor');
    await userEvent.clear(editor);
    await userEvent.type(editor, 'Leo is 8.');
    await userEvent.click(within(family).getByTestId('block-save'));
    // The version the editor started from goes along, so a stale save is refused.
    expect(onsave).toHaveBeenCalledWith('system/human/family', { value: 'Leo is 8.', version: blocks[2]!.version });
  });
});

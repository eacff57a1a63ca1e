import { afterEach, describe, expect, it } from 'vitest';
import { render, screen, waitFor } from '@testing-library/svelte';
import userEvent from '@testing-library/user-event';
import ArchivalBrowser from './ArchivalBrowser.svelte';
import { setBackend } from '../../backend';
import type { Passage, PassageList } from '../../backend/types';
import { useFakeBackend } from '../../../test/fakeBackend';

afterEach(() => setBackend(null));

function passage(i: number, over: Partial<Passage> = {}): Passage {
  return {
    id: `passage-${i}`,
    agent_id: 'agent-1',
    text: `note ${i}`,
    tags: i % 2 === 0 ? ['even'] : [],
    created_at: new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString(),
    ...over,
  };
}

/** An archive of `n` passages answered as the engine would (newest first unless asked). */
function archive(n: number) {
  const all = Array.from({ length: n }, (_, i) => passage(i));
  const lists: PassageList[] = [];
  const fake = useFakeBackend({
    list_passages: ({ list }) => {
      lists.push(list);
      let rows = list.tags.length ? all.filter((p) => list.tags.some((t) => p.tags.includes(t))) : all;
      rows = list.ascending ? rows : [...rows].reverse();
      const offset = list.at ? 20 : list.offset;
      return { passages: rows.slice(offset, offset + list.limit), total: rows.length, offset };
    },
    search_archival: () => [
      { passage: all[3]!, score: 6, context: false },
      { passage: all[7]!, score: 3, context: false },
      { passage: all[8]!, score: 2, context: true },
    ],
    edit_passage: ({ passage_id, text, tags }) => {
      const p = all.find((x) => x.id === passage_id)!;
      Object.assign(p, { text: text ?? p.text, tags: tags ?? p.tags });
      return p;
    },
    delete_passage: ({ passage_id }) => {
      all.splice(
        all.findIndex((x) => x.id === passage_id),
        1,
      );
      return null;
    },
  });
  return { ...fake, all, lists };
}

const items = () => screen.getAllByTestId('archival-item').map((li) => li.querySelector('.text')!.textContent);

describe('ArchivalBrowser', () => {
  it('pages: first, next, last, a typed page, and a page size', async () => {
    const { lists } = archive(95);
    render(ArchivalBrowser, { agentId: 'agent-1' });
    await waitFor(() => expect(items()[0]).toBe('note 94'));
    expect(screen.getByTestId('archival-count')).toHaveTextContent('95 passages');
    expect(screen.getByTestId('archival-pages')).toHaveTextContent('10');
    await userEvent.click(screen.getByTestId('archival-last'));
    await waitFor(() => expect(items()).toEqual(['note 4', 'note 3', 'note 2', 'note 1', 'note 0']));
    expect(screen.getByTestId('archival-range')).toHaveTextContent('91–95 of 95');
    expect(screen.getByTestId('archival-next')).toBeDisabled();
    await userEvent.click(screen.getByTestId('archival-first'));
    await waitFor(() => expect(items()[0]).toBe('note 94'));
    const pageInput = screen.getByTestId('archival-page');
    await userEvent.clear(pageInput);
    await userEvent.type(pageInput, '3{Enter}');
    await waitFor(() => expect(items()[0]).toBe('note 74'));
    await userEvent.selectOptions(screen.getByTestId('archival-page-size'), '25');
    // The first passage on show stays in view: offset 20 lies on page 1 of 25.
    await waitFor(() => expect(items()).toHaveLength(25));
    expect(lists.at(-1)).toMatchObject({ offset: 0, limit: 25 });
  });

  it('jumps to a date through the engine and shows the page it answers', async () => {
    const { lists } = archive(95);
    render(ArchivalBrowser, { agentId: 'agent-1' });
    await waitFor(() => expect(items()).toHaveLength(10));
    await userEvent.type(screen.getByTestId('archival-jump-date'), '2026-01-01');
    await userEvent.click(screen.getByTestId('archival-jump'));
    await waitFor(() => expect(items()[0]).toBe('note 74'));
    expect(lists.some((l) => l.at !== undefined)).toBe(true);
    expect(screen.getByTestId('archival-page')).toHaveValue(3);
  });

  it('counts a search by its hits and shows relevance, not raw scores', async () => {
    archive(95);
    render(ArchivalBrowser, { agentId: 'agent-1' });
    await waitFor(() => expect(items()).toHaveLength(10));
    await userEvent.type(screen.getByTestId('archival-search'), 'note');
    await userEvent.click(screen.getByTestId('archival-search-submit'));
    await waitFor(() =>
      expect(screen.getByTestId('archival-count')).toHaveTextContent('2 matches for “note”, and 1 beside them'),
    );
    expect(screen.queryByTestId('archival-pager')).toBeNull();
    // A passage word search brought along beside a match is marked, not ranked as one.
    const bars = screen.getAllByRole('meter');
    expect(bars.map((b) => b.getAttribute('aria-valuenow'))).toEqual(['100', '50']);
    expect(screen.getAllByTestId('archival-context')).toHaveLength(1);
    expect(screen.getByText('best match')).toBeInTheDocument();
    expect(screen.queryByText(/score/)).toBeNull();
  });

  it('filters by tag, counting only what passes', async () => {
    const { lists } = archive(95);
    render(ArchivalBrowser, { agentId: 'agent-1' });
    await waitFor(() => expect(items()).toHaveLength(10));
    await userEvent.type(screen.getByTestId('archival-filter-tags'), 'even');
    await userEvent.click(screen.getByTestId('archival-filter-apply'));
    await waitFor(() => expect(screen.getByTestId('archival-count')).toHaveTextContent('48 passages match the filters'));
    expect(lists.at(-1)).toMatchObject({ tags: ['even'], offset: 0 });
    await userEvent.click(screen.getByTestId('archival-filter-clear'));
    await waitFor(() => expect(screen.getByTestId('archival-count')).toHaveTextContent('95 passages'));
  });

  it('edits a passage in place and deletes one after confirming', async () => {
    const { calls } = archive(3);
    render(ArchivalBrowser, { agentId: 'agent-1' });
    await waitFor(() => expect(items()).toEqual(['note 2', 'note 1', 'note 0']));
    await userEvent.click(screen.getAllByTestId('archival-edit')[0]!);
    const text = screen.getByTestId('archival-edit-text');
    await userEvent.clear(text);
    await userEvent.type(text, 'note two, edited');
    const tags = screen.getByTestId('archival-edit-tags');
    await userEvent.clear(tags);
    await userEvent.type(tags, 'edited, even');
    await userEvent.click(screen.getByTestId('archival-edit-save'));
    await waitFor(() => expect(items()[0]).toBe('note two, edited'));
    expect(calls).toContainEqual([
      'edit_passage',
      { agent_id: 'agent-1', passage_id: 'passage-2', text: 'note two, edited', tags: ['edited', 'even'] },
    ]);
    await userEvent.click(screen.getAllByTestId('archival-delete')[1]!);
    expect(calls.some(([c]) => c === 'delete_passage')).toBe(false);
    await userEvent.click(screen.getByRole('button', { name: 'Delete' }));
    await waitFor(() => expect(items()).toEqual(['note two, edited', 'note 0']));
  });
});

describe('ArchivalBrowser on another agent', () => {
  it('starts over: first page, no filters, no search', async () => {
    const { lists } = archive(95);
    const view = render(ArchivalBrowser, { agentId: 'agent-1' });
    await waitFor(() => expect(items()).toHaveLength(10));
    await userEvent.type(screen.getByTestId('archival-filter-tags'), 'even');
    await userEvent.click(screen.getByTestId('archival-filter-apply'));
    await userEvent.click(screen.getByTestId('archival-last'));
    await waitFor(() => expect(lists.at(-1)).toMatchObject({ tags: ['even'], offset: 40 }));
    await view.rerender({ agentId: 'agent-2' });
    await waitFor(() => expect(lists.at(-1)).toMatchObject({ tags: [], offset: 0 }));
    expect(screen.getByTestId('archival-filter-tags')).toHaveValue('');
  });
});

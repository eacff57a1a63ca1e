import { afterEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, render, screen, within } from '@testing-library/svelte';
import userEvent from '@testing-library/user-event';
import ChatView from './ChatView.svelte';
import MemoryPanel from '../memory/MemoryPanel.svelte';
import { ChatState } from '../../state/chat.svelte';
import { AppState } from '../../state/app.svelte';
import { Sessions } from '../../state/session.svelte';
import { setBackend } from '../../backend';
import { agent, message, nextFrame, useFakeBackend } from '../../../test/fakeBackend';
import type { ContextBreakdown, ContextView, Message, MessageWindow } from '../../backend/types';

afterEach(() => setBackend(null));

const win = (messages: Message[], over: Partial<MessageWindow> = {}): MessageWindow => ({
  messages,
  has_older: false,
  has_newer: false,
  anchor: null,
  compactions: [],
  ...over,
});
const page = (from: number, n: number, inContext = true) =>
  Array.from({ length: n }, (_, i) =>
    message({ id: `m-${from + i}`, seq: from + i, role: i % 2 ? 'assistant' : 'user', content: `m${from + i}`, run_id: null, in_context: inContext }),
  );
const breakdown = (messages: number): ContextBreakdown => ({
  system: 500,
  core_memory: 100,
  files: 0,
  summary: 0,
  messages,
  tools: 300,
  total: 900 + messages,
  context_window: 8192,
  exact: true,
});
const view = (messages: number): ContextView =>
  ({
    model: 'mock/mock-small',
    temperature: null,
    max_tokens: null,
    breakdown: breakdown(messages),
    messages: Array.from({ length: messages ? 2 : 0 }, () => ({ role: 'user', part: 'message', name: null, content: 'x', tool_calls: [], tokens: 1 })),
    tools: [],
  }) as unknown as ContextView;

describe('New conversation', () => {
  it('shows its divider at once and reads the context meter and the Context tab again', async () => {
    let reset = false;
    const { calls } = useFakeBackend({
      message_window: () => win(page(1, 4, !reset)),
      reset_messages: () => {
        reset = true;
        return null as never;
      },
      pending_approval: () => null,
      list_blocks: () => [],
      shared_blocks: () => [],
      context_window: () => breakdown(reset ? 0 : 240),
      context_view: () => view(reset ? 0 : 240),
    });
    const sessions = new Sessions(new AppState());
    const s = sessions.get('agent-1');
    await vi.waitFor(() => expect(s.chat.messages).toHaveLength(4));
    render(ChatView, { agent: agent(), chat: s.chat, onproviders: () => {} });
    render(MemoryPanel, { memory: s.memory });
    await userEvent.click(screen.getByTestId('memory-tab-context'));
    await vi.waitFor(() => expect(screen.getByTestId('context-total')).toHaveTextContent('1,140 / 8,192'));
    expect(await screen.findAllByTestId('context-message')).toHaveLength(2);
    expect(screen.queryByTestId('window-start')).toBeNull();

    await userEvent.click(screen.getByTestId('new-conversation'));
    await userEvent.click(screen.getByTestId('confirm-ok'));
    // The divider closes the list, under the messages that left the window.
    const divider = await screen.findByTestId('window-start');
    expect(divider).toHaveTextContent('New conversation');
    const rows = [...document.querySelectorAll('[data-row]')].map((r) => r.getAttribute('data-row'));
    expect(rows.at(-1)).toBe('window-start');
    // Both views of the context window were read again after the reset.
    const after = calls.slice(calls.findIndex(([c]) => c === 'reset_messages'));
    expect(after.map(([c]) => c)).toEqual(expect.arrayContaining(['context_window', 'context_view']));
    await vi.waitFor(() => expect(screen.getByTestId('context-total')).toHaveTextContent('900 / 8,192'));
    await vi.waitFor(() => expect(screen.queryAllByTestId('context-message')).toHaveLength(0));
  });

  it('moves the divider above the first message of the new conversation', async () => {
    useFakeBackend({ message_window: () => win([...page(1, 4, false), ...page(5, 2, true)]), pending_approval: () => null });
    const chat = new ChatState('agent-1');
    await chat.load();
    render(ChatView, { agent: agent(), chat, onproviders: () => {} });
    await screen.findByTestId('window-start');
    const rows = [...document.querySelectorAll('[data-row]')];
    const at = rows.findIndex((r) => r.getAttribute('data-row') === 'window-start');
    expect(rows[at + 1]!.querySelector('[data-message-id]')).toHaveAttribute('data-message-id', 'm-5');
    expect(screen.getAllByTestId('window-start')).toHaveLength(1);
  });
});

describe('Jumping to a hit', () => {
  it('scrolls to a message already loaded without reading the history again, and highlights it', async () => {
    const { calls } = useFakeBackend({ message_window: () => win(page(1, 40)), pending_approval: () => null });
    const chat = new ChatState('agent-1');
    await chat.load();
    const reads = calls.filter(([c]) => c === 'message_window').length;
    const jumps = chat.jumps;
    await chat.jumpTo({ kind: 'around', id: 'm-7' });
    expect(calls.filter(([c]) => c === 'message_window')).toHaveLength(reads);
    expect(chat.anchor).toBe('m-7');
    expect(chat.scrollTarget).toEqual({ kind: 'message', id: 'm-7' });
    expect(chat.jumps).toBe(jumps + 1);
    // Asking for it again plays the highlight again.
    await chat.jumpTo({ kind: 'around', id: 'm-7' });
    expect(chat.jumps).toBe(jumps + 2);
  });

  it('marks the hit in the list', async () => {
    useFakeBackend({ message_window: () => win(page(1, 40)), pending_approval: () => null });
    const chat = new ChatState('agent-1');
    await chat.load();
    render(ChatView, { agent: agent(), chat, onproviders: () => {} });
    await chat.jumpTo({ kind: 'around', id: 'm-7' });
    await vi.waitFor(() => expect(document.querySelector('[data-anchor]')).toHaveAttribute('data-message-id', 'm-7'));
  });

  it('marks the call for a tool result, which is folded under it', async () => {
    const call = { id: 'call-1', name: 'archival_memory_search', arguments: '{"query":"tulips"}' };
    useFakeBackend({
      message_window: () =>
        win([
          ...page(1, 10),
          message({ id: 'ask', seq: 20, tool_calls: [call], run_id: null }),
          message({ id: 'result', seq: 21, role: 'tool', tool_call_id: 'call-1', content: '{"status":"OK","message":"none"}', run_id: null }),
        ]),
      pending_approval: () => null,
    });
    const chat = new ChatState('agent-1');
    await chat.load();
    render(ChatView, { agent: agent(), chat, onproviders: () => {} });
    await chat.jumpTo({ kind: 'around', id: 'result' });
    await vi.waitFor(() => expect(document.querySelector('[data-anchor]')).toHaveAttribute('data-message-id', 'ask'));
  });
});

describe('Reopening an agent', () => {
  it('opens at the latest message, not where the last jump left it', async () => {
    const { calls } = useFakeBackend({
      message_window: (a) =>
        a.at.kind === 'around' ? win(page(100, 80), { has_older: true, has_newer: true, anchor: 'm-140' }) : win(page(960, 40), { has_older: true }),
      pending_approval: () => null,
    });
    const chat = new ChatState('agent-1');
    await chat.load();
    await chat.jumpTo({ kind: 'around', id: 'm-140' });
    expect(chat.hasNewer).toBe(true);
    // The agent is opened again (another agent was shown meanwhile).
    render(ChatView, { agent: agent(), chat, onproviders: () => {} });
    await vi.waitFor(() => expect(chat.hasNewer).toBe(false));
    expect(calls.filter(([c]) => c === 'message_window').at(-1)![1]).toMatchObject({ at: { kind: 'latest' } });
    expect(chat.messages.at(-1)!.id).toBe('m-999');
    expect(chat.anchor).toBeNull();
    expect(chat.scrollTarget).toEqual({ kind: 'bottom' });
  });
});

describe('Message actions', () => {
  async function open() {
    useFakeBackend({
      message_window: () =>
        win([
          message({ id: 'u1', seq: 1, role: 'user', content: 'hello', run_id: null }),
          message({ id: 'a1', seq: 2, content: 'Hi there', run_id: null }),
        ]),
      pending_approval: () => null,
    });
    const chat = new ChatState('agent-1');
    await chat.load();
    render(ChatView, { agent: agent(), chat, onproviders: () => {} });
    await screen.findAllByTestId('message-actions');
    const item = (id: string) => document.querySelector<HTMLElement>(`[data-message-id=${id}]`)!;
    return { item, actions: (id: string) => within(item(id)).getByTestId('message-actions') };
  }

  it('are icon buttons named for screen readers and tooltips, not text', async () => {
    const { actions } = await open();
    const reply = actions('a1');
    const names = within(reply)
      .getAllByRole('button', { hidden: true })
      .map((b) => [b.getAttribute('aria-label'), b.getAttribute('title'), b.textContent!.trim(), !!b.querySelector('svg')]);
    expect(names).toEqual([
      ['Copy', 'Copy', '', true],
      ['Regenerate', 'Regenerate', '', true],
      ['Delete', 'Delete', '', true],
    ]);
    const edit = within(actions('u1')).getByTestId('action-edit');
    expect([edit.getAttribute('aria-label'), edit.getAttribute('title')]).toEqual(['Edit and resend', 'Edit and resend']);
  });

  it('show while the pointer is over the message, and hide after', async () => {
    const { item, actions } = await open();
    expect(actions('a1')).not.toHaveAttribute('data-shown');
    await fireEvent.pointerEnter(item('a1'));
    expect(actions('a1')).toHaveAttribute('data-shown');
    expect(actions('u1')).not.toHaveAttribute('data-shown');
    await fireEvent.pointerLeave(item('a1'));
    expect(actions('a1')).not.toHaveAttribute('data-shown');
  });

  it('show when keyboard focus reaches them, and hide when focus leaves the message', async () => {
    const { actions } = await open();
    const buttons = (id: string) => [...actions(id).querySelectorAll('button')];
    // Plain buttons in the page's order: Tab reaches each of them.
    expect(buttons('u1').every((b) => b.tabIndex === 0 && !b.disabled)).toBe(true);
    const [copy, edit] = buttons('u1');
    copy!.focus();
    expect(document.activeElement).toBe(copy);
    await nextFrame();
    expect(actions('u1')).toHaveAttribute('data-shown');
    // Moving within the message keeps them shown; moving to the next message hands over.
    edit!.focus();
    await nextFrame();
    expect(actions('u1')).toHaveAttribute('data-shown');
    buttons('a1')[0]!.focus();
    await nextFrame();
    expect(actions('u1')).not.toHaveAttribute('data-shown');
    expect(actions('a1')).toHaveAttribute('data-shown');
    (document.activeElement as HTMLElement).blur();
    await nextFrame();
    expect(actions('a1')).not.toHaveAttribute('data-shown');
  });
});

import { afterEach, describe, expect, it, vi } from 'vitest';
import { render, screen } from '@testing-library/svelte';
import userEvent from '@testing-library/user-event';
import ChatView from './ChatView.svelte';
import { ChatState, MAX_LOADED, PAGE } from '../../state/chat.svelte';
import { MemoryState } from '../../state/memory.svelte';
import { setBackend } from '../../backend';
import { agent, block, message, nextFrame, useFakeBackend } from '../../../test/fakeBackend';
import type { Message, MessageWindow, RunEvent } from '../../backend/types';

afterEach(() => setBackend(null));

const emptyWindow = { messages: [], has_older: false, has_newer: false, anchor: null, compactions: [] };
/** A stored window holding `messages`, the whole conversation. */
const win = (messages: Message[]) => ({ ...emptyWindow, messages });

const usage = { prompt_tokens: 1200, completion_tokens: 30, total_tokens: 1230, step_count: 2 };

/** A send whose events the test releases one batch at a time. */
function scriptedSend() {
  let emit: (e: RunEvent) => void = () => {};
  let finish: () => void = () => {};
  const send = (_a: unknown, onEvent: (e: RunEvent) => void) =>
    new Promise<void>((resolve) => {
      emit = onEvent;
      finish = resolve;
    });
  return { send, emit: (...es: RunEvent[]) => es.forEach((e) => emit(e)), finish: () => finish() };
}

describe('ChatState', () => {
  it('lands text deltas once per animation frame', async () => {
    useFakeBackend({});
    const chat = new ChatState('agent-1');
    chat.handle({ type: 'text_delta', delta: 'Hel' });
    chat.handle({ type: 'text_delta', delta: 'lo' });
    expect(chat.live?.text ?? '').toBe('');
    await nextFrame();
    expect(chat.live?.text).toBe('Hello');
  });

  it('keeps the text that arrived when a run is stopped', async () => {
    const s = scriptedSend();
    const { calls } = useFakeBackend({ cancel_run: () => 1, message_window: () => emptyWindow }, s.send);
    const chat = new ChatState('agent-1');
    const sending = chat.send('tell me a story');
    s.emit({ type: 'run_started', run_id: 'run-1', agent_id: 'agent-1' }, { type: 'text_delta', delta: 'Once upon' });
    await chat.stop();
    expect(calls).toContainEqual(['cancel_run', { agent_id: 'agent-1' }]);
    s.emit({ type: 'done', run_id: 'run-1', stop_reason: 'cancelled', usage });
    s.finish();
    await sending;
    expect(chat.running).toBe(false);
    expect(chat.live?.text).toBe('Once upon');
    expect(chat.outcomes['run-1']?.stopReason).toBe('cancelled');
  });
});

describe('ChatView', () => {
  it('streams a reply with its tool call, memory diff and usage', async () => {
    const s = scriptedSend();
    useFakeBackend({ message_window: () => emptyWindow }, s.send);
    const memory = new MemoryState('agent-1');
    memory.blocks = [block({ value: 'Likes tea.' })];
    const chat = new ChatState('agent-1', { memoryChanged: (b) => memory.applyAgentEdit(b) });
    render(ChatView, { agent: agent(), chat, onproviders: () => {} });

    const input = screen.getByTestId('chat-input');
    await userEvent.type(input, 'my name is Bob{Enter}');
    expect(input).toHaveValue('');
    expect(screen.getByTestId('stop')).toBeInTheDocument();
    expect(document.querySelector('[data-role=user]')).toHaveTextContent('my name is Bob');

    const call = { id: 'call-1', name: 'core_memory_append', arguments: '{"label":"human","content":"Name: Bob"}' };
    s.emit(
      { type: 'run_started', run_id: 'run-1', agent_id: 'agent-1' },
      { type: 'message', message: message({ role: 'user', content: 'my name is Bob' }) },
      { type: 'tool_call', call },
      { type: 'tool_result', tool_call_id: 'call-1', name: call.name, status: 'OK', message: 'done' },
      { type: 'memory_changed', agent_id: 'agent-1', block: block({ value: 'Likes tea.\nName: Bob' }), tool_call_id: 'call-1' },
      { type: 'message', message: message({ tool_calls: [call] }) },
      { type: 'text_delta', delta: 'Nice to meet you, ' },
      { type: 'text_delta', delta: '**Bob**!' },
    );
    await nextFrame();
    await nextFrame();
    const live = document.querySelector('[data-live=true]')!;
    expect(live.querySelector('strong')).toHaveTextContent('Bob');
    expect(live).toHaveTextContent('Nice to meet you, Bob!');
    // The pending user bubble was replaced by the stored one, not duplicated.
    expect(document.querySelectorAll('[data-role=user]')).toHaveLength(1);

    const tool = document.querySelector('[data-tool=core_memory_append]')!;
    expect(tool).toHaveAttribute('data-state', 'ok');
    expect(tool.querySelector('[data-testid=diff] ins')).toHaveTextContent('Name: Bob');
    expect(memory.blocks[0]!.value).toBe('Likes tea.\nName: Bob');
    expect(memory.flashing.human).toBe(true);

    s.emit(
      { type: 'message', message: message({ content: 'Nice to meet you, **Bob**!' }) },
      { type: 'done', run_id: 'run-1', stop_reason: 'end_turn', usage },
    );
    s.finish();
    await screen.findByTestId('send');
    expect(screen.getByTestId('run-usage')).toHaveTextContent('1,230 tokens');
    expect(screen.getByTestId('run-usage')).toHaveTextContent('2 steps');
    expect(document.querySelector('[data-live=true]')).toBeNull();
  });

  it('shows a tool result as stored once committed, also when the commit refused the edit', async () => {
    const s = scriptedSend();
    useFakeBackend({ message_window: () => emptyWindow }, s.send);
    const chat = new ChatState('agent-1');
    render(ChatView, { agent: agent(), chat, onproviders: () => {} });
    await userEvent.type(screen.getByTestId('chat-input'), 'I like mango{Enter}');
    const call = { id: 'call-9', name: 'memory_replace', arguments: '{"label":"human","old_str":"kiwi","new_str":"mango"}' };
    const refused = JSON.stringify({ status: 'Failed', message: "The text 'kiwi' was not found", time: 'now' });
    s.emit(
      { type: 'run_started', run_id: 'run-9', agent_id: 'agent-1' },
      { type: 'tool_call', call },
      { type: 'tool_result', tool_call_id: 'call-9', name: call.name, status: 'OK', message: 'preview' },
    );
    await nextFrame();
    expect(document.querySelector('[data-tool=memory_replace]')).toHaveAttribute('data-state', 'ok');
    s.emit(
      { type: 'message', message: message({ tool_calls: [call] }) },
      { type: 'message', message: message({ role: 'tool', tool_call_id: 'call-9', tool_name: call.name, content: refused }) },
    );
    await nextFrame();
    expect(document.querySelector('[data-tool=memory_replace]')).toHaveAttribute('data-state', 'failed');
    s.emit({ type: 'done', run_id: 'run-9', stop_reason: 'end_turn', usage });
    s.finish();
  });

  it('shows what to do when no provider is set up, and keeps the typed text', async () => {
    useFakeBackend({ message_window: () => emptyWindow }, async () => {
      throw Object.assign(new Error('no provider for openai/gpt-4o-mini'), { code: 'provider_not_configured' });
    });
    let opened = false;
    const chat = new ChatState('agent-1');
    render(ChatView, { agent: agent(), chat, onproviders: () => (opened = true) });
    await userEvent.type(screen.getByTestId('chat-input'), 'hello{Enter}');
    const err = await screen.findByTestId('chat-error');
    expect(err).toHaveTextContent('No model provider is set up');
    expect(screen.getByTestId('chat-input')).toHaveValue('hello');
    expect(document.querySelector('[data-role=user]')).toBeNull();
    await userEvent.click(screen.getByTestId('open-providers'));
    expect(opened).toBe(true);
  });

  it('sends on Enter but not on Shift+Enter', async () => {
    const { backend } = useFakeBackend({ message_window: () => emptyWindow });
    render(ChatView, { agent: agent(), chat: new ChatState('agent-1'), onproviders: () => {} });
    const input = screen.getByTestId('chat-input');
    await userEvent.type(input, 'line one{Shift>}{Enter}{/Shift}line two');
    expect(input).toHaveValue('line one\nline two');
    expect(backend.sendMessage).not.toHaveBeenCalled();
  });
});

describe('ChatState history', () => {
  const win = (messages: ReturnType<typeof message>[], over: Partial<MessageWindow> = {}): MessageWindow => ({
    messages,
    has_older: false,
    has_newer: false,
    anchor: null,
    compactions: [],
    ...over,
  });
  const page = (from: number, n: number) =>
    Array.from({ length: n }, (_, i) => message({ id: `m-${from + i}`, seq: from + i, role: 'user', content: `m${from + i}` }));

  it('pages back with `before` the oldest message, until the start', async () => {
    const { calls } = useFakeBackend({
      message_window: (a) =>
        a.at.kind === 'before' ? win(page(0, 3)) : win(page(10, 40), { has_older: true }),
    });
    const chat = new ChatState('agent-1');
    await chat.load();
    expect(chat.hasOlder).toBe(true);
    expect(await chat.loadOlder()).toBe(true);
    expect(calls.filter(([c]) => c === 'message_window').at(-1)).toEqual(['message_window', { agent_id: 'agent-1', at: { kind: 'before', id: 'm-10' }, limit: 40 }]);
    expect(chat.messages.map((m) => m.content).slice(0, 4)).toEqual(['m0', 'm1', 'm2', 'm10']);
    expect(chat.hasOlder).toBe(false);
    expect(await chat.loadOlder()).toBe(false);
  });

  it('keeps at most MAX_LOADED messages, dropping the far end, and reads it again on the way back', async () => {
    // 2,000 stored messages, seq 0..1999; pages of 40.
    const all = page(0, 2000);
    const before = (id: string) => {
      const i = all.findIndex((m) => m.id === id);
      return win(all.slice(Math.max(0, i - PAGE), i), { has_older: i - PAGE > 0, has_newer: true });
    };
    const after = (id: string) => {
      const i = all.findIndex((m) => m.id === id);
      return win(all.slice(i + 1, i + 1 + PAGE), { has_older: true, has_newer: i + 1 + PAGE < all.length });
    };
    useFakeBackend({
      message_window: (a) =>
        a.at.kind === 'before' ? before(a.at.id) : a.at.kind === 'after' ? after(a.at.id) : win(all.slice(-PAGE), { has_older: true }),
    });
    const chat = new ChatState('agent-1');
    await chat.load();
    for (let i = 0; i < 20; i++) await chat.loadOlder();
    expect(chat.messages.length).toBe(MAX_LOADED);
    expect(chat.messages[0]!.seq).toBe(2000 - 21 * PAGE);
    expect(chat.hasNewer).toBe(true);
    // Contiguous: no gap was left by the trims.
    expect(chat.messages.every((m, i) => i === 0 || m.seq === chat.messages[i - 1]!.seq + 1)).toBe(true);
    for (let i = 0; i < 30 && chat.hasNewer; i++) await chat.loadNewer();
    expect(chat.hasNewer).toBe(false);
    expect(chat.messages.at(-1)!.seq).toBe(1999);
    expect(chat.messages.length).toBe(MAX_LOADED);
  });

  it('jumps to a message: the window around it replaces what is loaded, and it is the anchor', async () => {
    const { calls } = useFakeBackend({
      message_window: (a) =>
        a.at.kind === 'around'
          ? win(page(500, 80), { has_older: true, has_newer: true, anchor: 'm-540' })
          : win(page(1000, 40), { has_older: true }),
    });
    const chat = new ChatState('agent-1');
    await chat.load();
    await chat.jumpTo({ kind: 'around', id: 'm-540' });
    expect(calls.filter(([c]) => c === 'message_window').at(-1)).toEqual(['message_window', { agent_id: 'agent-1', at: { kind: 'around', id: 'm-540' }, limit: 80 }]);
    expect(chat.messages[0]!.seq).toBe(500);
    expect(chat.anchor).toBe('m-540');
    expect(chat.scrollTarget).toEqual({ kind: 'message', id: 'm-540' });
    expect(chat.hasNewer).toBe(true);
    // New messages elsewhere do not glue onto this run; "jump to latest" reads the end again.
    await chat.refresh();
    expect(chat.messages.at(-1)!.seq).toBe(579);
    await chat.jumpToLatest();
    expect(chat.messages.at(-1)!.seq).toBe(1039);
    expect(chat.hasNewer).toBe(false);
    expect(chat.anchor).toBeNull();
  });

  it('re-attaches to a run in flight after a reload: busy, then the reply, then idle', async () => {
    let emit: (e: RunEvent) => void = () => {};
    let finish: (v: boolean) => void = () => {};
    const { calls } = useFakeBackend(
      { message_window: () => win(page(0, 2)), cancel_run: () => 1 },
      undefined,
      (_a, onEvent) =>
        new Promise<boolean>((resolve) => {
          emit = onEvent;
          finish = resolve;
        }),
    );
    const chat = new ChatState('agent-1');
    await chat.load();
    expect(chat.running).toBe(false);
    emit({ type: 'run_started', run_id: 'run-7', agent_id: 'agent-1' });
    emit({ type: 'text_delta', delta: 'still thinking' });
    expect(chat.running).toBe(true);
    await nextFrame();
    expect(chat.live?.text).toBe('still thinking');
    await chat.stop();
    expect(calls).toContainEqual(['cancel_run', { agent_id: 'agent-1' }]);
    emit({ type: 'done', run_id: 'run-7', stop_reason: 'cancelled', usage });
    finish(true);
    await vi.waitFor(() => expect(chat.running).toBe(false));
    expect(chat.outcomes['run-7']?.stopReason).toBe('cancelled');
  });
});

describe('Message actions', () => {
  const appendCall = { id: 'call-1', name: 'core_memory_append', arguments: '{"label":"human","content":"Ann"}' };
  const secondCall = { id: 'call-2', name: 'core_memory_append', arguments: '{"label":"human","content":"tea"}' };
  const stored = () => [
    message({ id: 'u1', seq: 1, role: 'user', content: 'I am Ann, I like tea', run_id: 'run-1' }),
    message({ id: 'a1', seq: 2, tool_calls: [appendCall, secondCall], run_id: 'run-1' }),
    message({ id: 't1', seq: 3, role: 'tool', tool_call_id: 'call-1', content: '{"status":"OK","message":"ok"}', run_id: 'run-1' }),
    message({ id: 't2', seq: 4, role: 'tool', tool_call_id: 'call-2', content: '{"status":"OK","message":"ok"}', run_id: 'run-1' }),
    message({ id: 'a2', seq: 5, content: 'Hi Ann', run_id: 'run-1' }),
  ];
  const edit = (call: string, before: string, after: string) => ({
    label: 'human',
    edit: {
      id: `edit-${call}`,
      block_id: 'block-1',
      editor: { kind: 'agent' as const, agent_id: 'agent-1', tool_call_id: call },
      old_value: before,
      new_value: after,
      old_version: 1,
      new_version: 2,
      step_id: 'step-1',
      created_at: '2026-11-21T10:00:00Z',
    },
  });

  it('shows stored diffs under the tool call that made each edit, and the stored usage line', async () => {
    useFakeBackend({
      message_window: () => win(stored()),
      run_records: () => [
        {
          id: 'run-1',
          agent_id: 'agent-1',
          stop_reason: 'cancelled',
          error: null,
          usage,
          ended_at: '2026-11-21T10:00:00Z',
        },
      ],
      run_edits: () => [edit('call-1', '', 'Ann'), edit('call-2', 'Ann', 'Ann\ntea')],
    });
    const chat = new ChatState('agent-1');
    await chat.load();
    render(ChatView, { agent: agent(), chat, onproviders: () => {} });
    const calls = await screen.findAllByTestId('tool-call');
    expect(calls).toHaveLength(2);
    // Each call has its own diff: the first inserted "Ann", the second only "tea".
    expect(calls[0]!.querySelector('ins')?.textContent).toBe('Ann');
    expect(calls[1]!.querySelectorAll('ins')).toHaveLength(1);
    expect(calls[1]!.querySelector('ins')?.textContent).toContain('tea');
    expect(calls[1]!.querySelector('ins')?.textContent).not.toContain('Ann');
    expect(screen.getByTestId('run-usage')).toHaveTextContent('1,230 tokens');
    expect(screen.getByTestId('run-usage')).toHaveTextContent('stopped');
  });

  it('regenerate shows what will be undone, then replaces the turn', async () => {
    let regenerated = false;
    const asked = message({ id: 'u2', seq: 1, role: 'user', content: 'I am Ann, I like tea', run_id: 'run-2' });
    const { calls } = useFakeBackend(
      {
        // After the rollback the engine holds only the question asked again.
        message_window: () => win((regenerated ? [asked] : stored())),
        run_records: () => [],
        run_edits: () => [],
        regenerate_preview: () => ({
          agent_id: 'agent-1',
          from_message: 'u1',
          messages: ['u1', 'a1', 't1', 't2', 'a2'],
          runs: ['run-1'],
          usage,
          blocks: [
            {
              block_id: 'block-1',
              label: 'human',
              current_value: 'Ann\ntea',
              restored_value: '',
              version: 3,
              edits: 2,
              changed_later: false,
            },
          ],
          passages: [{ id: 'passage-1', agent_id: 'agent-1', text: 'Ann likes tea', tags: [], created_at: '2026-11-21T10:00:00Z' }],
        }),
      },
      undefined,
      undefined,
      async (_c, _a, onEvent) => {
        regenerated = true;
        onEvent({ type: 'run_started', run_id: 'run-2', agent_id: 'agent-1' });
        onEvent({ type: 'message', message: asked });
      },
    );
    const chat = new ChatState('agent-1');
    await chat.load();
    render(ChatView, { agent: agent(), chat, onproviders: () => {} });
    await userEvent.click(await screen.findByTestId('action-regenerate'));
    const dialog = await screen.findByTestId('rollback-dialog');
    expect(dialog).toHaveTextContent('5 messages');
    expect(dialog.querySelector('[data-testid=rollback-block]')).toHaveAttribute('data-label', 'human');
    expect(dialog).toHaveTextContent('Ann likes tea');
    expect(calls.some(([c]) => c === 'regenerate')).toBe(false);
    await userEvent.click(screen.getByTestId('rollback-confirm'));
    expect(calls).toContainEqual(['regenerate', { agent_id: 'agent-1' }]);
    // Once the run started, the replaced turn is gone; the same question is asked again.
    expect(chat.messages.map((m) => m.id)).toEqual(['u2']);
  });

  it('a conflicting block blocks the rollback in the preview', async () => {
    useFakeBackend({
      message_window: () => win(stored()),
      run_records: () => [],
      run_edits: () => [],
      regenerate_preview: () => ({
        agent_id: 'agent-1',
        from_message: 'u1',
        messages: ['u1'],
        runs: ['run-1'],
        usage,
        blocks: [
          {
            block_id: 'block-1',
            label: 'human',
            current_value: 'by hand',
            restored_value: '',
            version: 4,
            edits: 1,
            changed_later: true,
          },
        ],
        passages: [],
      }),
    });
    const chat = new ChatState('agent-1');
    await chat.load();
    render(ChatView, { agent: agent(), chat, onproviders: () => {} });
    await userEvent.click(await screen.findByTestId('action-regenerate'));
    expect(await screen.findByTestId('rollback-conflict')).toHaveTextContent('human');
    expect(screen.getByTestId('rollback-confirm')).toBeDisabled();
  });
});

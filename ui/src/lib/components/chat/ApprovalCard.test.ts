import { afterEach, describe, expect, it } from 'vitest';
import { render, screen } from '@testing-library/svelte';
import userEvent from '@testing-library/user-event';
import ApprovalCard from './ApprovalCard.svelte';
import { ChatState } from '../../state/chat.svelte';
import { setBackend } from '../../backend';
import { useFakeBackend } from '../../../test/fakeBackend';
import type { PendingApproval, RunEvent } from '../../backend/types';

afterEach(() => setBackend(null));

const waiting: PendingApproval = {
  agent_id: 'agent-1',
  run_id: 'run-1',
  step_id: 'step-1',
  message_id: 'message-1',
  tool_call: { id: 'call_1', name: 'core_memory_append', arguments: '{"label":"human","content":"<b>Bob</b>"}' },
  requested_at: '2026-11-21T10:00:00Z',
};

describe('ApprovalCard', () => {
  it('shows the call as text and answers approve, or deny with a reason', async () => {
    const decided: [boolean, string | undefined][] = [];
    render(ApprovalCard, { approval: waiting, ondecide: (ok: boolean, why?: string) => decided.push([ok, why]) });
    // Model-made arguments are text, never markup.
    expect(screen.getByTestId('approval-arguments').textContent).toContain('<b>Bob</b>');
    await userEvent.click(screen.getByTestId('approval-approve'));
    await userEvent.click(screen.getByTestId('approval-deny'));
    await userEvent.type(screen.getByTestId('approval-reason'), 'not now');
    await userEvent.click(screen.getByTestId('approval-deny-confirm'));
    expect(decided).toEqual([
      [true, undefined],
      [false, 'not now'],
    ]);
    expect(screen.queryByTestId('approval-server')).toBeNull();
  });

  it('names the MCP server a call would go to', () => {
    const call = { id: 'call_2', name: 'files__read_file', arguments: '{"path":"notes.md"}' };
    render(ApprovalCard, { approval: { ...waiting, tool_call: call, server: 'files' }, ondecide: () => {} });
    expect(screen.getByTestId('approval-server')).toHaveTextContent('files');
  });
});

describe('ChatState approvals', () => {
  it('reads the waiting call from the engine and decides it by id', async () => {
    let stored: PendingApproval | null = waiting;
    const { backend } = useFakeBackend({ message_window: () => ({ messages: [], has_older: false, has_newer: false, anchor: null, compactions: [] }), pending_approval: () => stored });
    const chat = new ChatState('agent-1');
    await chat.load();
    expect(chat.approval?.tool_call.id).toBe('call_1');
    let sent: unknown = null;
    backend.resolveApproval = async (args, onEvent: (e: RunEvent) => void) => {
      sent = args;
      stored = null;
      onEvent({ type: 'run_started', run_id: 'run-1', agent_id: 'agent-1' });
      const usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, step_count: 1 };
      onEvent({ type: 'done', run_id: 'run-1', stop_reason: 'end_turn', usage });
    };
    await chat.decide(false, '  too personal ');
    expect(sent).toEqual({
      agent_id: 'agent-1',
      decision: { tool_call_id: 'call_1', approve: false, reason: 'too personal' },
    });
    expect(chat.approval).toBeNull();
    expect(chat.outcomes['run-1']?.stopReason).toBe('end_turn');
  });
});

import { describe, expect, it } from 'vitest';
import { render, screen } from '@testing-library/svelte';
import userEvent from '@testing-library/user-event';
import ClientWriteCard from './ClientWriteCard.svelte';
import type { PendingClientWrite } from '../../backend/types';

const write: PendingClientWrite = {
  id: 'client_write-1',
  client: 'claude-code',
  agent_id: 'agent-1',
  agent_name: 'Sam',
  tool: 'memory',
  action: 'str_replace',
  path: '/memories/human.md',
  label: 'human',
  summary: 'replace "Bob" with "<b>Robert</b>"',
  before: 'Name: Bob',
  after: 'Name: <b>Robert</b>',
  requested_at: '2026-11-27T10:00:00Z',
  expires_at: '2026-11-27T10:05:00Z',
};

describe('ClientWriteCard', () => {
  it('shows who wants to change which file, as text, and answers approve, or deny with a reason', async () => {
    const decided: [boolean, string | undefined][] = [];
    render(ClientWriteCard, { write, ondecide: (ok: boolean, why?: string) => decided.push([ok, why]) });
    expect(screen.getByTestId('client-write-client')).toHaveTextContent('claude-code');
    expect(screen.getByTestId('client-write-path')).toHaveTextContent('/memories/human.md');
    expect(screen.getByTestId('client-write-before')).toHaveTextContent('Name: Bob');
    // The tool's text is text, never markup.
    expect(screen.getByTestId('client-write-after').textContent).toBe('Name: <b>Robert</b>');
    await userEvent.click(screen.getByTestId('client-write-approve'));
    await userEvent.click(screen.getByTestId('client-write-deny'));
    await userEvent.type(screen.getByTestId('client-write-reason'), 'not that file');
    await userEvent.click(screen.getByTestId('client-write-deny-confirm'));
    expect(decided).toEqual([
      [true, undefined],
      [false, 'not that file'],
    ]);
  });

  it('shows a new note without a "now" text', () => {
    const note = { ...write, tool: 'add_memory', action: 'add_memory', path: 'archival memory', label: undefined, before: undefined, after: 'A note.' };
    render(ClientWriteCard, { write: note, ondecide: () => {} });
    expect(screen.queryByTestId('client-write-before')).toBeNull();
    expect(screen.getByTestId('client-write-after')).toHaveTextContent('A note.');
  });
});

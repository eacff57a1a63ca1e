import { afterEach, describe, expect, it } from 'vitest';
import { render, screen, within } from '@testing-library/svelte';
import userEvent from '@testing-library/user-event';
import McpMemorySettings from './McpMemorySettings.svelte';
import { setBackend } from '../../backend';
import { useFakeBackend } from '../../../test/fakeBackend';
import type {
  Agent,
  Block,
  ClientEdit,
  ClientWriteOutcome,
  ConfiguredClient,
  McpMemoryClients,
  PendingClientWrite,
} from '../../backend/types';

afterEach(() => setBackend(null));

const sam = { id: 'agent-1', name: 'Sam' } as Agent;

const edit: ClientEdit = {
  client: 'claude-code',
  edit_id: 'edit-1',
  label: 'human',
  agent_ids: ['agent-1'],
  old_value: 'Name: Bob',
  new_value: 'Name: Robert',
  created_at: '2026-11-27T10:00:00Z',
  undone: false,
};

describe('McpMemorySettings', () => {
  it('shows the block to paste for the chosen client, the clients and their writes, and undoes one', async () => {
    let clients: McpMemoryClients = {
      configured: [{ name: 'cursor', read_only: true, read_only_agents: [], approve_writes: false, approve_agents: [] }],
      seen: [{ name: 'codex', transport: 'stdio', last_seen: '2026-11-27T09:00:00Z' }],
      recent_edits: [edit],
    };
    const { calls } = useFakeBackend({
      mcp_memory_clients: () => clients,
      mcp_memory_config: (a) => `config for ${(a as { client: string }).client}`,
      undo_block_edit: () => {
        clients = { ...clients, recent_edits: [{ ...edit, undone: true }] };
        return {} as Block;
      },
    });
    render(McpMemorySettings, { agents: [sam] });
    expect(await screen.findByText('config for claude')).toBeInTheDocument();
    await userEvent.selectOptions(screen.getByTestId('memory-server-format'), 'codex');
    expect(await screen.findByText('config for codex')).toBeInTheDocument();
    expect(calls).toContainEqual(['mcp_memory_config', { agent_id: 'agent-1', client: 'codex' }]);

    const rows = await screen.findAllByTestId('memory-client');
    expect(rows.map((r) => r.dataset.client)).toEqual(['cursor', 'codex', 'claude-code']);
    expect(within(rows[1]!).getByTestId('memory-client-seen')).toHaveTextContent('over stdio');
    expect(rows[0]).toHaveTextContent('read-only');
    expect(within(rows[2]!).getByTestId('memory-client-last')).toHaveTextContent('human');

    await userEvent.click(screen.getByTestId('memory-client-undo'));
    expect(calls).toContainEqual(['undo_block_edit', { edit_id: 'edit-1' }]);
    expect(await screen.findByTestId('memory-client-undone')).toBeInTheDocument();
  });

  it("sets a client's writes to wait for approval, and approves a waiting write", async () => {
    let clients: McpMemoryClients = {
      configured: [{ name: 'cursor', read_only: false, read_only_agents: [], approve_writes: false, approve_agents: [] }],
      seen: [],
      recent_edits: [],
    };
    const write: PendingClientWrite = {
      id: 'client_write-1',
      client: 'cursor',
      agent_id: 'agent-1',
      agent_name: 'Sam',
      tool: 'memory',
      action: 'str_replace',
      path: '/memories/human.md',
      label: 'human',
      summary: 'replace "Bob" with "Robert"',
      before: 'Name: Bob',
      after: 'Name: Robert',
      requested_at: '2026-11-27T10:00:00Z',
      expires_at: '2026-11-27T10:05:00Z',
    };
    let waiting = [write];
    const { calls } = useFakeBackend({
      mcp_memory_clients: () => clients,
      mcp_memory_config: () => 'config',
      set_memory_client_access: (a) => {
        const { name: _name, ...access } = a as Partial<ConfiguredClient>;
        clients = { ...clients, configured: [{ ...clients.configured[0]!, ...access }] };
        return clients.configured[0]!;
      },
      pending_client_writes: () => waiting,
      decide_client_write: (): ClientWriteOutcome => {
        waiting = [];
        return { status: 'applied', message: 'Edited /memories/human.md; it is now version 2.' };
      },
    });
    render(McpMemorySettings, { agents: [sam] });
    await userEvent.selectOptions(await screen.findByTestId('memory-client-mode'), 'approve');
    expect(calls).toContainEqual(['set_memory_client_access', { name: 'cursor', read_only: false, approve_writes: true }]);
    expect(await screen.findByText(/writes wait for your approval/)).toBeInTheDocument();

    await userEvent.selectOptions(await screen.findByTestId('memory-client-agent-mode'), 'read-only');
    expect(calls).toContainEqual([
      'set_memory_client_access',
      { name: 'cursor', read_only: false, approve_writes: true, read_only_agents: ['agent-1'], approve_agents: [] },
    ]);

    await userEvent.click(screen.getByTestId('memory-server-approve-writes'));
    expect(calls).toContainEqual(['mcp_memory_config', { agent_id: 'agent-1', client: 'claude', approve_writes: true }]);

    const card = await screen.findByTestId('client-write-card');
    expect(within(card).getByTestId('client-write-client')).toHaveTextContent('cursor');
    expect(within(card).getByTestId('client-write-after')).toHaveTextContent('Name: Robert');
    await userEvent.click(within(card).getByTestId('client-write-approve'));
    expect(calls).toContainEqual(['decide_client_write', { id: 'client_write-1', approve: true }]);
    expect(await screen.findByTestId('client-write-outcome')).toHaveTextContent('applied');
    expect(screen.queryByTestId('client-write-card')).not.toBeInTheDocument();
  });
});

import { afterEach, describe, expect, it, vi } from 'vitest';
import { render, screen, within } from '@testing-library/svelte';
import userEvent from '@testing-library/user-event';
import ToolsView from './ToolsView.svelte';
import { setBackend } from '../../backend';
import { agent, useFakeBackend } from '../../../test/fakeBackend';
import type { Tool } from '../../backend/types';

afterEach(() => setBackend(null));

function tool(over: Partial<Tool>): Tool {
  return {
    id: 'tool-1',
    name: 'core_memory_append',
    description: 'Append to a block.',
    json_schema: {},
    source_code: null,
    language: 'builtin',
    return_char_limit: 6000,
    network: false,
    allow_unsandboxed: false,
    available: true,
    unavailable_reason: null,
    tags: [],
    origin: { kind: 'user' },
    trusted_hash: null,
    source_hash: null,
    trusted: true,
    mcp: null,
    created_at: '2026-11-21T10:00:00Z',
    updated_at: '2026-11-21T10:00:00Z',
    ...over,
  };
}

const dice = tool({
  id: 'tool-2',
  name: 'roll_dice',
  description: 'Roll a die.',
  language: 'python',
  source_code: 'def roll_dice(sides: int = 6) -> str: ...',
  json_schema: { name: 'roll_dice', parameters: { type: 'object', properties: { sides: { type: 'integer', default: 6 } } } },
});

describe('ToolsView', () => {
  it('marks a tool from an agent file untrusted and trusts it after review of its code', async () => {
    const hash = 'ab'.repeat(32);
    const fromFile = tool({
      id: 'tool-9',
      name: 'analyze_data',
      language: 'python',
      source_code: 'def analyze_data(x: str) -> str:\n    return x\n',
      source_hash: hash,
      trusted: false,
      origin: { kind: 'agent_file', file: 'helper.af', agent: 'Helper' },
    });
    const { calls } = useFakeBackend({
      list_tools: () => [fromFile],
      agent_tools: () => [],
      trust_tool: () => ({ ...fromFile, trusted: true, trusted_hash: hash }),
    });
    render(ToolsView, { agent: agent() });
    const item = await screen.findByTestId('tool-item');
    expect(within(item).getByTestId('tool-untrusted')).toHaveTextContent('untrusted');
    await userEvent.click(within(item).getByTestId('tool-review'));
    expect(screen.getByTestId('review-source')).toHaveTextContent('def analyze_data');
    expect(screen.getByTestId('review-origin')).toHaveTextContent('agent file helper.af (agent Helper)');
    expect(screen.getByTestId('review-hash')).toHaveTextContent(hash);
    await userEvent.click(screen.getByTestId('review-trust'));
    expect(calls).toContainEqual(['trust_tool', { tool: 'analyze_data', expected_hash: hash }]);
    expect(screen.queryByTestId('review-tool-dialog')).toBeNull();
    expect(within(screen.getByTestId('tool-item')).queryByTestId('tool-untrusted')).toBeNull();
  });

  it('lists tools with unavailable ones explained, and attaches to the agent', async () => {
    const broken = tool({ id: 'tool-3', name: 'fetch_page', language: 'python', available: false, unavailable_reason: 'python3 was not found' });
    const { calls } = useFakeBackend({
      list_tools: () => [tool({}), dice, broken],
      agent_tools: () => [tool({})],
      attach_tool: () => [tool({}), dice],
    });
    render(ToolsView, { agent: agent() });
    const items = await screen.findAllByTestId('tool-item');
    expect(items).toHaveLength(3);
    expect(within(items[2]!).getByTestId('tool-unavailable')).toHaveTextContent('python3 was not found');
    expect(within(items[0]!).getByTestId('tool-attach')).toBeChecked();
    await userEvent.click(within(items[1]!).getByTestId('tool-attach'));
    expect(calls).toContainEqual(['attach_tool', { agent_id: 'agent-1', tool_id: 'tool-2' }]);
    expect(within(items[1]!).getByTestId('tool-attach')).toBeChecked();
  });

  it('saves Python source and shows the generated schema', async () => {
    const { calls } = useFakeBackend({ list_tools: () => [], agent_tools: () => [], upsert_tool: () => dice });
    render(ToolsView, { agent: agent() });
    await userEvent.click(await screen.findByTestId('tool-new'));
    await userEvent.click(screen.getByTestId('tool-save'));
    expect(calls.find(([c]) => c === 'upsert_tool')?.[1]).toEqual({ new: { source_code: expect.stringContaining('def roll_dice') } });
    expect(screen.getByTestId('tool-schema')).toHaveTextContent('"sides"');
  });

  it('tries a tool with JSON args and shows result and block changes', async () => {
    const { calls } = useFakeBackend({
      list_tools: () => [dice],
      agent_tools: () => [],
      try_tool: () => ({ status: 'OK', message: '4', block_changes: [{ label: 'human', value: 'Rolled 4' }] }),
    });
    render(ToolsView, { agent: agent() });
    await userEvent.click(await screen.findByTestId('tool-try-open'));
    const args = screen.getByTestId('tool-try-args');
    // The parameter's default, not 0.
    expect(args).toHaveValue('{\n  "sides": 6\n}');
    await userEvent.clear(args);
    await userEvent.type(args, '{{"sides": 20}');
    await userEvent.click(screen.getByTestId('tool-try-run'));
    const result = await screen.findByTestId('tool-try-result');
    expect(result).toHaveTextContent('4');
    expect(result).toHaveTextContent('Rolled 4');
    expect(calls).toContainEqual(['try_tool', { tool_id: 'tool-2', agent_id: 'agent-1', args: { sides: 20 } }]);
  });

  it('attaches to the agent picked on the screen, not whichever was last open', async () => {
    const { calls } = useFakeBackend({
      list_tools: () => [dice],
      agent_tools: ({ agent_id }) => (agent_id === 'agent-2' ? [dice] : []),
      attach_tool: () => [dice],
      detach_tool: () => [],
    });
    const sam = agent();
    const kim = agent({ id: 'agent-2', name: 'Kim' });
    render(ToolsView, { agent: sam, agents: [sam, kim] });
    expect(await screen.findByTestId('tools-agent')).toHaveDisplayValue('Sam');
    await userEvent.selectOptions(screen.getByTestId('tools-agent'), 'agent-2');
    expect(await screen.findByText('Kim', { selector: 'strong' })).toBeInTheDocument();
    const box = await screen.findByTestId('tool-attach');
    await vi.waitFor(() => expect(box).toBeChecked());
    await userEvent.click(box);
    expect(calls).toContainEqual(['detach_tool', { agent_id: 'agent-2', tool_id: 'tool-2' }]);
  });

  it('shows which MCP server a tool comes from, and offers no "Try it" for it', async () => {
    const echo = tool({
      id: 'tool-5',
      name: 'files__echo',
      language: 'mcp',
      mcp: { server_id: 'mcp_server-1', server_name: 'files', tool_name: 'echo' },
    });
    useFakeBackend({ list_tools: () => [echo], agent_tools: () => [] });
    render(ToolsView, { agent: agent() });
    const item = await screen.findByTestId('tool-item');
    expect(within(item).getByTestId('tool-kind')).toHaveTextContent('MCP: files');
    expect(within(item).queryByTestId('tool-try-open')).toBeNull();
    expect(within(item).queryByTestId('tool-review')).toBeNull();
  });
  it('says the agent\'s tool rules in plain words, and offers "Try it" only for Python tools', async () => {
    useFakeBackend({
      list_tools: () => [tool({}), dice],
      agent_tools: () => [tool({}), dice],
      get_agent: () => ({
        blocks: [],
        ...agent({
          tool_rules: [
            { type: 'exit_loop', tool_name: 'core_memory_append' },
            { type: 'run_first', tool_name: 'roll_dice' },
            { type: 'max_count_per_step', tool_name: 'roll_dice', max_count_limit: 2 },
            { type: 'requires_approval', tool_name: 'roll_dice' },
          ],
        }),
      }),
    });
    render(ToolsView, { agent: agent() });
    const [builtin, python] = await screen.findAllByTestId('tool-item');
    await vi.waitFor(() => expect(within(builtin!).getByTestId('tool-rules')).toHaveTextContent('For Sam, this tool ends the turn.'));
    expect(within(python!).getByTestId('tool-rules')).toHaveTextContent('For Sam, this tool must run first, runs at most 2 times per message.');
    // Approval is the switch beside it, not a sentence.
    expect(within(python!).getByTestId('tool-rules')).not.toHaveTextContent('approval');
    expect(within(python!).getByTestId('tool-ask-first')).toBeChecked();
    expect(screen.getByTestId('tool-list')).not.toHaveTextContent('{');
    // A built-in tool only runs inside an agent's turn: no "Try it" that would always fail.
    expect(within(builtin!).queryByTestId('tool-try-open')).toBeNull();
    expect(within(python!).getByTestId('tool-try-open')).toBeInTheDocument();
  });
});

import { afterEach, describe, expect, it } from 'vitest';
import { AppState } from './app.svelte';
import { Sessions } from './session.svelte';
import { setBackend } from '../backend';
import { agent, block, useFakeBackend } from '../../test/fakeBackend';

afterEach(() => setBackend(null));

const settle = () => new Promise((r) => setTimeout(r, 0));

describe('Sessions.onNotice', () => {
  it('re-reads the open agent’s blocks when another transport changed its memory', async () => {
    let value = 'before';
    const { calls } = useFakeBackend({
      list_blocks: () => [block({ value })],
      shared_blocks: () => [],
      context_window: () => ({ system: 1, core_memory: 1, files: 0, summary: 0, messages: 0, tools: 1, total: 3, context_window: 100, exact: true }),
      list_messages: () => [],
    });
    const sessions = new Sessions(new AppState());
    const s = sessions.get('agent-1');
    await settle();
    expect(s.memory.blocks[0]!.value).toBe('before');

    value = 'after';
    sessions.onNotice({ type: 'memory_changed', agent_id: 'agent-1' });
    await settle();
    expect(s.memory.blocks[0]!.value).toBe('after');

    // Notices about agents that are not open re-read only where blocks are shared (a block of
    // this agent may have been attached there or detached).
    const n = calls.length;
    sessions.onNotice({ type: 'memory_changed', agent_id: 'agent-2' });
    await settle();
    expect(calls.slice(n).map(([c]) => c)).toEqual(['shared_blocks']);
  });

  it('reloads the agent list and bumps archival views', async () => {
    let agents = [agent()];
    useFakeBackend({
      list_agents: () => agents,
      list_blocks: () => [],
      context_window: () => {
        throw new Error('not measured');
      },
      list_messages: () => [],
    });
    const app = new AppState();
    const sessions = new Sessions(app);
    const s = sessions.get('agent-1');
    agents = [agent(), agent({ id: 'agent-2', name: 'Imported' })];
    sessions.onNotice({ type: 'agents_changed' });
    sessions.onNotice({ type: 'archival_changed', agent_id: 'agent-1' });
    await settle();
    expect(app.agents.map((a) => a.name)).toEqual(['Sam', 'Imported']);
    expect(s.archivalVersion).toBeGreaterThanOrEqual(2);
  });
});
